// libFuzzer target: a rocpd SQLite database (rocprofv3, ROCm 7), held in memory: either a
// whole database file from the fuzzer's bytes, or schema 3's tables filled with rows whose
// values the fuzzer picks (sqlite_rows.h). The import ends in a Trace (bad rows counted) or
// a Status, and an imported trace goes through every report as `tierscope analyze` would.
#include <sqlite3.h>

#include <cstddef>
#include <cstdint>

#include "sqlite_rows.h"
#include "trace/rocpd_import.h"
#include "trace/rocpd_schema.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tierscope::fuzz::FuzzSqliteImport(data, size, tierscope::testing::kRocpdSchema, [](sqlite3* db) {
    return tierscope::ImportRocpdDb(db, "fuzz_results.db");
  });
}
