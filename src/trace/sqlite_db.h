// The SQLite plumbing the database importers share (nsys exports, rocpd): handles that
// close and finalize themselves, a failed call as a Status naming the file, and a statement
// prepared and run row by row.
#ifndef TIERSCOPE_TRACE_SQLITE_DB_H_
#define TIERSCOPE_TRACE_SQLITE_DB_H_

#include <sqlite3.h>

#include <memory>
#include <string>

#include "tierscope/status.h"

namespace tierscope::sqlite {

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
struct StmtFinalizer {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using Db = std::unique_ptr<sqlite3, DbCloser>;
using Stmt = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

// `path` opened read-only; InvalidArgument naming it when SQLite cannot open it.
inline StatusOr<Db> OpenReadOnly(const std::string& path) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
  Db db(raw);
  if (rc != SQLITE_OK) {
    return InvalidArgument(path + ": cannot open as SQLite: " + (raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  }
  return db;
}

// `what` failed on `db`, read from `source`: InvalidArgument when the file is not a
// database, DataLoss when it is corrupt, else `other`.
inline Status Error(sqlite3* db, const std::string& source, const std::string& what, StatusCode other) {
  const int code = sqlite3_errcode(db);
  const std::string msg = source + ": " + what + ": " + sqlite3_errmsg(db);
  if (code == SQLITE_NOTADB) return InvalidArgument(source + ": not an SQLite database (" + sqlite3_errmsg(db) + ")");
  if (code == SQLITE_CORRUPT) return DataLoss(msg);
  return Status(other, msg);
}

inline StatusOr<Stmt> Prepare(sqlite3* db, const std::string& sql, const std::string& source, const std::string& what,
                              StatusCode other) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), static_cast<int>(sql.size()), &raw, nullptr) != SQLITE_OK) {
    sqlite3_finalize(raw);
    return Error(db, source, what, other);
  }
  return Stmt(raw);
}

// Runs `stmt` to completion, calling fn(stmt) for every row.
template <typename Fn>
Status Step(sqlite3* db, sqlite3_stmt* stmt, const std::string& source, const std::string& what, StatusCode other,
            Fn fn) {
  while (true) {
    const int rc = sqlite3_step(stmt);
    if (rc == SQLITE_DONE) return OkStatus();
    if (rc != SQLITE_ROW) return Error(db, source, what, other);
    fn(stmt);
  }
}

}  // namespace tierscope::sqlite

#endif  // TIERSCOPE_TRACE_SQLITE_DB_H_
