// libFuzzer target: an nsys SQLite export, held in memory. Two kinds of input:
// - bytes starting "SQLite format 3": a whole database file, deserialized as it is;
// - anything else: rows for the export's tables (the documented schema), with values the
//   fuzzer picks — NULLs, negative or huge times and ids, missing strings — which is
//   where an importer's assumptions break, far more often than in mutated pages.
// Either way the import ends in a Trace (bad rows counted) or a Status, and an imported
// trace goes through every report as `tierscope analyze` would.
#include <fuzzer/FuzzedDataProvider.h>
#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "analysis/commands.h"
#include "trace/nsys_import.h"
#include "trace/nsys_schema.h"
#include "sqlite_rows.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tierscope::fuzz::Db db;
  if (sqlite3_open(":memory:", &db.db) != SQLITE_OK) return 0;
  if (tierscope::fuzz::IsDatabaseFile(data, size)) {
    if (!tierscope::fuzz::Deserialize(db.db, data, size)) return 0;
  } else {
    FuzzedDataProvider in(data, size);
    tierscope::fuzz::FillFromRows(db.db, in, tierscope::testing::kNsysSchema);
  }
  auto trace = tierscope::ImportNsysDb(db.db, "fuzz.sqlite");
  if (!trace.ok()) return 0;
  tierscope::AnalysisOptions o;
  (void)tierscope::AnalyzeTrace(*trace, o, tierscope::OutputFormat::kText);
  (void)tierscope::AnalyzeTrace(*trace, o, tierscope::OutputFormat::kCsv);
  return 0;
}
