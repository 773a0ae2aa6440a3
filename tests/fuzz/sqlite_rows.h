// Helpers of the SQLite importers' fuzz targets: a database held in memory, either a whole
// database file from the fuzzer's bytes or a schema filled with rows whose values the
// fuzzer picks (NULLs, negative or huge numbers, short strings) — where an importer's
// assumptions break far more often than in mutated pages — and the body every such target
// shares (FuzzSqliteImport).
#ifndef TIERSCOPE_TESTS_FUZZ_SQLITE_ROWS_H_
#define TIERSCOPE_TESTS_FUZZ_SQLITE_ROWS_H_

#include <fuzzer/FuzzedDataProvider.h>
#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "analysis/commands.h"

namespace tierscope::fuzz {

struct Db {
  sqlite3* db = nullptr;
  ~Db() { sqlite3_close(db); }
};

inline std::vector<std::string> Tables(sqlite3* db) {
  std::vector<std::string> out;
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name", -1, &st, nullptr);
  while (sqlite3_step(st) == SQLITE_ROW) out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
  sqlite3_finalize(st);
  return out;
}

inline int ColumnCount(sqlite3* db, const std::string& table) {
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, ("PRAGMA table_info(" + table + ")").c_str(), -1, &st, nullptr);
  int n = 0;
  while (sqlite3_step(st) == SQLITE_ROW) ++n;
  sqlite3_finalize(st);
  return n;
}

// Creates `schema` and fills its tables with rows the fuzzer describes.
inline void FillFromRows(sqlite3* db, FuzzedDataProvider& in, const char* schema) {
  sqlite3_exec(db, schema, nullptr, nullptr, nullptr);
  const std::vector<std::string> tables = Tables(db);
  for (int row = 0; row < 64 && in.remaining_bytes() > 0; ++row) {
    const std::string& table = tables[in.ConsumeIntegralInRange<size_t>(0, tables.size() - 1)];
    const int columns = ColumnCount(db, table);
    std::string sql = "INSERT INTO " + table + " VALUES (";
    for (int c = 0; c < columns; ++c) sql += c ? ",?" : "?";
    sql += ")";
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) continue;
    for (int c = 1; c <= columns; ++c) {
      switch (in.ConsumeIntegralInRange<int>(0, 5)) {
        case 0: sqlite3_bind_null(st, c); break;
        case 1: sqlite3_bind_int64(st, c, in.ConsumeIntegral<int64_t>()); break;
        case 2: {
          const std::string text = in.ConsumeRandomLengthString(64);
          sqlite3_bind_text(st, c, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
          break;
        }
        case 3: sqlite3_bind_double(st, c, in.ConsumeFloatingPoint<double>()); break;
        default: sqlite3_bind_int64(st, c, in.ConsumeIntegralInRange<int64_t>(-4, 64)); break;
      }
    }
    sqlite3_step(st);  // a row that breaks a constraint is simply not there
    sqlite3_finalize(st);
  }
}

// Whether the bytes are a database file ("SQLite format 3").
inline bool IsDatabaseFile(const uint8_t* data, size_t size) {
  static const char kMagic[] = "SQLite format 3";
  return size >= sizeof(kMagic) && std::memcmp(data, kMagic, sizeof(kMagic)) == 0;
}

// Opens the bytes as `db`'s main database, read-only; false when SQLite refuses them.
inline bool Deserialize(sqlite3* db, const uint8_t* data, size_t size) {
  auto* copy = static_cast<unsigned char*>(sqlite3_malloc64(size));
  if (copy == nullptr) return false;
  std::memcpy(copy, data, size);
  return sqlite3_deserialize(db, "main", copy, static_cast<sqlite3_int64>(size), static_cast<sqlite3_int64>(size),
                             SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_READONLY) == SQLITE_OK;
}

// The SQLite importers' fuzz target body: a database from the fuzzer's bytes (a whole file,
// or `schema` filled with rows), imported by import(db) into a StatusOr<Trace>; an imported
// trace goes through every report as `tierscope analyze` would.
template <typename Import>
int FuzzSqliteImport(const uint8_t* data, size_t size, const char* schema, Import&& import) {
  Db db;
  if (sqlite3_open(":memory:", &db.db) != SQLITE_OK) return 0;
  if (IsDatabaseFile(data, size)) {
    if (!Deserialize(db.db, data, size)) return 0;
  } else {
    FuzzedDataProvider in(data, size);
    FillFromRows(db.db, in, schema);
  }
  auto trace = import(db.db);
  if (!trace.ok()) return 0;
  AnalysisOptions o;
  (void)AnalyzeTrace(*trace, o, OutputFormat::kText);
  (void)AnalyzeTrace(*trace, o, OutputFormat::kCsv);
  return 0;
}

}  // namespace tierscope::fuzz

#endif  // TIERSCOPE_TESTS_FUZZ_SQLITE_ROWS_H_
