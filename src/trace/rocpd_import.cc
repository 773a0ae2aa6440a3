// The rocpd SQLite database read into a Trace: see rocpd_import.h.
#include "trace/rocpd_import.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trace/rocm_devices.h"
#include "trace/sqlite_db.h"

namespace tierscope {
namespace {

using sqlite::Db;
using sqlite::Stmt;

// The tables every process's set has (a kernel or an API call), by base name.
constexpr const char* kDispatch = "rocpd_kernel_dispatch";
constexpr const char* kRegion = "rocpd_region";

std::string Quoted(const std::string& name) {
  std::string q = "\"";
  for (char c : name) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

bool IsNull(sqlite3_stmt* s, int c) { return sqlite3_column_type(s, c) == SQLITE_NULL; }
int64_t Int(sqlite3_stmt* s, int c) { return sqlite3_column_int64(s, c); }
std::string_view Text(sqlite3_stmt* s, int c) {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, c));
  return p == nullptr ? std::string_view() : std::string_view(p, static_cast<size_t>(sqlite3_column_bytes(s, c)));
}

using rocm::Gpu;

class Importer {
 public:
  Importer(sqlite3* db, const std::string& source, Trace& t) : db_(db), source_(source), t_(t) {}

  Status Run() {
    TS_RETURN_IF_ERROR(LoadSchema());
    std::set<std::string> suffixes;
    for (const std::string& name : tables_) {
      for (const std::string base : {kDispatch, kRegion}) {
        if (name == base || (name.size() > base.size() + 1 && name.starts_with(base + "_") &&
                             name[base.size() + 1] != '_')) {
          suffixes.insert(name.substr(base.size()));
        }
      }
    }
    // The unsuffixed names are views over the suffixed tables: read those when present.
    if (suffixes.size() > 1) suffixes.erase("");
    // Each process numbers its correlation ids from 1: the sets' ids are kept apart.
    if (suffixes.empty()) {
      return InvalidArgument(source_ + ": not a rocpd database (no rocpd_kernel_dispatch or rocpd_region table)");
    }
    for (const std::string& name : tables_) {
      if (name.starts_with("rocpd_timestamp")) {
        return InvalidArgument(source_ + ": a rocpd database with a timestamp table (" + name +
                               "), a schema after version 3 that tierscope does not read yet");
      }
    }
    for (const std::string& s : suffixes) {
      TS_RETURN_IF_ERROR(ReadSet(s));
      correlation_base_ += int64_t{1} << 40;
    }
    Finish();
    return OkStatus();
  }

 private:
  template <typename Fn>
  Status Query(const std::string& sql, const std::string& what, Fn fn) {
    TS_ASSIGN_OR_RETURN(Stmt stmt, sqlite::Prepare(db_, sql, source_, what, StatusCode::kInvalidArgument));
    return sqlite::Step(db_, stmt.get(), source_, what, StatusCode::kInvalidArgument, fn);
  }

  // Tables only: the unsuffixed names are views over them, and a view (a recursive one in a
  // hostile file) is never read.
  Status LoadSchema() {
    return Query("SELECT name FROM sqlite_master WHERE type = 'table'", "reading the schema",
                 [&](sqlite3_stmt* s) { tables_.insert(std::string(Text(s, 0))); });
  }
  bool Has(const std::string& table) const { return tables_.count(table) != 0; }

  void Malformed(const char* reason) {
    ++t_.stats.malformed;
    ++t_.stats.malformed_reasons[reason];
  }

  // Times of a row; false (counted) when absent or absurd.
  bool Times(sqlite3_stmt* s, int start, int end, Event* e) {
    ++t_.stats.events_read;
    if (IsNull(s, start) || IsNull(s, end)) {
      Malformed("no start / end");
      return false;
    }
    const int64_t a = Int(s, start), b = Int(s, end);
    // Both in range before their difference is taken (it cannot overflow then).
    if (a < kMinTraceNs || b >= kMaxTraceNs || b < a || !TimeInRange(a, b - a)) {
      Malformed("time out of range");
      return false;
    }
    e->ts_ns = a;
    e->dur_ns = b - a;
    return true;
  }

  // A row's stack id as a correlation, in this set's range (0: none).
  int64_t Correlation(sqlite3_stmt* s, int c) const {
    const int64_t id = Int(s, c);
    return id > 0 && id < (int64_t{1} << 40) ? correlation_base_ + id : 0;
  }

  void Keep(const Event& e) {
    t_.events.push_back(e);
    ++t_.stats.events_kept;
  }

  Status ReadSet(const std::string& suffix) {
    const auto table = [&](const char* base) { return std::string(base) + suffix; };
    std::unordered_map<int64_t, std::string> strings;
    if (Has(table("rocpd_string"))) {
      TS_RETURN_IF_ERROR(Query("SELECT id, string FROM " + Quoted(table("rocpd_string")), "reading rocpd_string",
                               [&](sqlite3_stmt* s) { strings[Int(s, 0)] = std::string(Text(s, 1)); }));
    }
    const auto str = [&](sqlite3_stmt* s, int c) -> std::string_view {
      if (IsNull(s, c)) return {};
      const auto it = strings.find(Int(s, c));
      return it == strings.end() ? std::string_view() : std::string_view(it->second);
    };
    std::map<int64_t, std::shared_ptr<Gpu>> gpus;  // agent id -> GPU
    if (Has(table("rocpd_info_agent"))) {
      TS_RETURN_IF_ERROR(Query(
          "SELECT id, type_index, product_name, name, CASE WHEN json_valid(extdata) THEN "
          "json_extract(extdata, '$.cu_count') END FROM " + Quoted(table("rocpd_info_agent")) +
              " WHERE type = 'GPU' ORDER BY type_index, id",
          "reading rocpd_info_agent", [&](sqlite3_stmt* s) {
            auto g = std::make_shared<Gpu>();
            g->index = static_cast<int32_t>(IsNull(s, 1) ? gpus.size() : std::clamp<int64_t>(Int(s, 1), 0, INT32_MAX));
            g->name = std::string(Text(s, 2));
            if (g->name.empty()) g->name = std::string(Text(s, 3));
            g->cu_count = IsNull(s, 4) ? 0 : std::max<int64_t>(0, Int(s, 4));
            gpus[Int(s, 0)] = g;
          }));
    }
    std::unordered_map<int64_t, int32_t> kernel_names;  // kernel id -> interned name
    if (Has(table("rocpd_info_kernel_symbol"))) {
      TS_RETURN_IF_ERROR(Query("SELECT id, display_name, kernel_name FROM " + Quoted(table("rocpd_info_kernel_symbol")),
                               "reading rocpd_info_kernel_symbol", [&](sqlite3_stmt* s) {
                                 std::string_view n = Text(s, 1);
                                 if (n.empty()) n = Text(s, 2);
                                 kernel_names[Int(s, 0)] = t_.strings.Intern(n);
                               }));
    }
    const bool events = Has(table("rocpd_event"));
    const std::string join = events ? " LEFT JOIN " + Quoted(table("rocpd_event")) + " e ON e.id = x.event_id" : "";
    const std::string stack = events ? "e.stack_id" : "NULL";
    if (Has(table(kDispatch))) {
      TS_RETURN_IF_ERROR(Query(
          "SELECT x.agent_id, x.kernel_id, x.queue_id, x.stream_id, x.start, x.end, x.workgroup_size_x, "
          "x.workgroup_size_y, x.workgroup_size_z, x.grid_size_x, x.grid_size_y, x.grid_size_z, " + stack +
              " FROM " + Quoted(table(kDispatch)) + " x" + join,
          "reading rocpd_kernel_dispatch", [&](sqlite3_stmt* s) {
            Event e;
            if (!Times(s, 4, 5, &e)) return;
            const auto gpu = gpus.find(Int(s, 0));
            const auto name = kernel_names.find(Int(s, 1));
            if (gpu == gpus.end()) return Malformed("unknown agent_id");
            if (name == kernel_names.end()) return Malformed("unknown kernel_id");
            e.kind = EventKind::kKernel;
            e.name = name->second;
            e.pid = gpu->second->index;
            const int64_t stream = Int(s, 3);
            e.tid = static_cast<int32_t>(std::clamp<int64_t>(stream > 0 ? stream : Int(s, 2), 0, INT32_MAX));
            e.correlation = Correlation(s, 12);
            ++gpu->second->kernels;
            const int64_t items[3] = {Int(s, 9), Int(s, 10), Int(s, 11)};
            const int64_t workgroup[3] = {Int(s, 6), Int(s, 7), Int(s, 8)};
            e.args = t_.strings.Append(rocm::GridArgs(items, workgroup));
            Keep(e);
          }));
    }
    if (Has(table(kRegion))) {
      const std::string category = events ? "e.category_id" : "NULL";
      const std::string message =
          events ? "CASE WHEN json_valid(e.extdata) THEN json_extract(e.extdata, '$.message') END" : "NULL";
      TS_RETURN_IF_ERROR(Query("SELECT x.pid, x.tid, x.start, x.end, x.name_id, " + stack + ", " + category + ", " +
                                   message + " FROM " + Quoted(table(kRegion)) + " x" + join,
                               "reading rocpd_region", [&](sqlite3_stmt* s) {
                                 Event e;
                                 if (!Times(s, 2, 3, &e)) return;
                                 const std::string_view name = str(s, 4);
                                 if (name.empty()) return Malformed("unknown name_id");
                                 const bool marker = str(s, 6).find("MARKER") != std::string_view::npos;
                                 const std::string_view msg = marker ? Text(s, 7) : std::string_view();
                                 e.kind = marker ? EventKind::kAnnotation : EventKind::kRuntime;
                                 e.name = t_.strings.Intern(msg.empty() ? name : msg);
                                 e.pid = static_cast<int32_t>(std::clamp<int64_t>(Int(s, 0), 0, INT32_MAX));
                                 e.tid = static_cast<int32_t>(std::clamp<int64_t>(Int(s, 1), 0, INT32_MAX));
                                 e.correlation = Correlation(s, 5);
                                 if (t_.host_pid == 0 && e.pid > 0) t_.host_pid = e.pid;
                                 Keep(e);
                               }));
    }
    if (Has(table("rocpd_memory_copy"))) {
      TS_RETURN_IF_ERROR(Query("SELECT x.start, x.end, x.name_id, x.dst_agent_id, x.src_agent_id, x.size, x.stream_id, " +
                                   stack + " FROM " + Quoted(table("rocpd_memory_copy")) + " x" + join,
                               "reading rocpd_memory_copy", [&](sqlite3_stmt* s) {
                                 Event e;
                                 if (!Times(s, 0, 1, &e)) return;
                                 auto gpu = gpus.find(Int(s, 3));
                                 if (gpu == gpus.end()) gpu = gpus.find(Int(s, 4));
                                 if (gpu == gpus.end()) return Malformed("memory copy with no GPU agent");
                                 const std::string_view name = str(s, 2);
                                 e.kind = EventKind::kMemcpy;
                                 e.name = t_.strings.Intern(name.empty() ? "MEMORY_COPY" : name);
                                 e.pid = gpu->second->index;
                                 e.tid = static_cast<int32_t>(std::clamp<int64_t>(Int(s, 6), 0, INT32_MAX));
                                 e.correlation = Correlation(s, 7);
                                 e.args = t_.strings.Append("\"bytes\": " + std::to_string(std::max<int64_t>(0, Int(s, 5))));
                                 Keep(e);
                               }));
    }
    for (const auto& [id, gpu] : gpus) gpus_.push_back(gpu);
    return OkStatus();
  }

  void Finish() {
    std::vector<const Gpu*> gpus;
    for (const auto& g : gpus_) gpus.push_back(g.get());
    rocm::FinishTrace(t_, gpus);
  }

  sqlite3* db_;
  const std::string& source_;
  Trace& t_;
  std::set<std::string> tables_;
  std::vector<std::shared_ptr<Gpu>> gpus_;
  int64_t correlation_base_ = 0;
};

}  // namespace

bool IsRocpdDb(sqlite3* db) {
  sqlite3_stmt* raw = nullptr;
  const char* sql =
      "SELECT 1 FROM sqlite_master WHERE name = 'rocpd_kernel_dispatch' OR name = 'rocpd_region' OR "
      "name LIKE 'rocpd\\_kernel\\_dispatch\\_%' ESCAPE '\\' OR name LIKE 'rocpd\\_region\\_%' ESCAPE '\\' LIMIT 1";
  if (sqlite3_prepare_v2(db, sql, -1, &raw, nullptr) != SQLITE_OK) {
    sqlite3_finalize(raw);
    return false;
  }
  Stmt stmt(raw);
  return sqlite3_step(raw) == SQLITE_ROW;
}

StatusOr<Trace> ImportRocpdDb(sqlite3* db, const std::string& source) {
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  Trace t;
  t.source = source;
  t.format = "rocpd";
  t.runtime = "hip";
  Importer importer(db, source, t);
  TS_RETURN_IF_ERROR(importer.Run());
  return t;
}


bool IsRocpdFile(const std::string& path) {
  StatusOr<Db> db = sqlite::OpenReadOnly(path);
  return db.ok() && IsRocpdDb(db->get());
}

StatusOr<Trace> ImportRocpdFile(const std::string& path) {
  TS_ASSIGN_OR_RETURN(Db db, sqlite::OpenReadOnly(path));
  TS_ASSIGN_OR_RETURN(Trace t, ImportRocpdDb(db.get(), path));
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  t.stats.bytes = ec ? 0 : static_cast<int64_t>(size);
  return t;
}

}  // namespace tierscope
