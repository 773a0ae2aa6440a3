// libFuzzer target: an nsys SQLite export, held in memory. Two kinds of input:
// - bytes starting "SQLite format 3": a whole database file, deserialized as it is;
// - anything else: rows for the export's tables (the documented schema), with values the
//   fuzzer picks — NULLs, negative or huge times and ids, missing strings — which is
//   where an importer's assumptions break, far more often than in mutated pages.
// Either way the import ends in a Trace (bad rows counted) or a Status, and an imported
// trace goes through every report as `tierscope analyze` would (sqlite_rows.h).
#include <sqlite3.h>

#include <cstddef>
#include <cstdint>

#include "sqlite_rows.h"
#include "trace/nsys_import.h"
#include "trace/nsys_schema.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tierscope::fuzz::FuzzSqliteImport(data, size, tierscope::testing::kNsysSchema, [](sqlite3* db) {
    return tierscope::ImportNsysDb(db, "fuzz.sqlite");
  });
}
