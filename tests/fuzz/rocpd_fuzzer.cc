// libFuzzer target: a rocpd SQLite database (rocprofv3, ROCm 7), held in memory: either a
// whole database file from the fuzzer's bytes, or schema 3's tables filled with rows whose
// values the fuzzer picks (sqlite_rows.h). The import ends in a Trace (bad rows counted) or
// a Status, and an imported trace goes through every report as `tierscope analyze` would.
#include <fuzzer/FuzzedDataProvider.h>
#include <sqlite3.h>

#include <cstddef>
#include <cstdint>

#include "analysis/commands.h"
#include "sqlite_rows.h"
#include "trace/rocpd_import.h"
#include "trace/rocpd_schema.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tierscope::fuzz::Db db;
  if (sqlite3_open(":memory:", &db.db) != SQLITE_OK) return 0;
  if (tierscope::fuzz::IsDatabaseFile(data, size)) {
    if (!tierscope::fuzz::Deserialize(db.db, data, size)) return 0;
  } else {
    FuzzedDataProvider in(data, size);
    tierscope::fuzz::FillFromRows(db.db, in, tierscope::testing::kRocpdSchema);
  }
  auto trace = tierscope::ImportRocpdDb(db.db, "fuzz_results.db");
  if (!trace.ok()) return 0;
  tierscope::AnalysisOptions o;
  (void)tierscope::AnalyzeTrace(*trace, o, tierscope::OutputFormat::kText);
  (void)tierscope::AnalyzeTrace(*trace, o, tierscope::OutputFormat::kCsv);
  return 0;
}
