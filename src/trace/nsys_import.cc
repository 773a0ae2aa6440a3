// Nsight Systems SQLite export -> Trace. Reads only the documented CUPTI_ACTIVITY_KIND_*,
// NVTX_EVENTS, StringIds and TARGET_INFO_* tables; columns are looked up by name, so
// exports from other nsys versions (extra or missing optional columns) still import.
#include "trace/nsys_import.h"

#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/text.h"
#include "trace/args.h"
#include "trace/nsys_export.h"
#include "trace/sqlite_db.h"

namespace tierscope {
namespace {

constexpr const char* kKernelTable = "CUPTI_ACTIVITY_KIND_KERNEL";
constexpr const char* kRuntimeTable = "CUPTI_ACTIVITY_KIND_RUNTIME";
constexpr const char* kMemcpyTable = "CUPTI_ACTIVITY_KIND_MEMCPY";
constexpr const char* kMemsetTable = "CUPTI_ACTIVITY_KIND_MEMSET";
constexpr const char* kSyncTable = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";
constexpr const char* kNvtxTable = "NVTX_EVENTS";

// ENUM_NSYS_EVENT_TYPE ids of NVTX ranges, used when the export lacks that table.
constexpr int64_t kNvtxPushPopRange = 59;
constexpr int64_t kNvtxStartEndRange = 60;

using sqlite::Db;
using sqlite::Stmt;

void AppendJsonString(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
}

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel" (the CUPTI cbid suffix nsys keeps).
// Short suffixes such as cuMemAlloc_v2 are part of the real symbol and stay.
std::string_view StripVersionSuffix(std::string_view name) {
  const size_t p = name.rfind("_v");
  if (p == std::string_view::npos || p == 0) return name;
  const std::string_view digits = name.substr(p + 2);
  if (digits.size() < 4) return name;
  for (char c : digits) {
    if (c < '0' || c > '9') return name;
  }
  return name.substr(0, p);
}

std::string MemcpyName(int64_t copy_kind) {
  // CUpti_ActivityMemcpyKind / ENUM_CUDA_MEMCPY_OPER.
  static constexpr const char* kNames[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                           "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
  if (copy_kind >= 0 && copy_kind <= 10) return std::string("Memcpy ") + kNames[copy_kind];
  if (copy_kind == 11) return "Memcpy HtoD (unified)";
  if (copy_kind == 12) return "Memcpy DtoH (unified)";
  if (copy_kind == 13) return "Memcpy DtoD (unified)";
  return "Memcpy kind " + std::to_string(copy_kind);
}

const char* MemKindName(int64_t kind) {
  // ENUM_CUDA_MEM_KIND.
  static constexpr const char* kNames[] = {"Pageable", "Pinned",        "Device",         "Array",
                                           "Managed",  "Device Static", "Managed Static", "Unknown"};
  if (kind >= 0 && kind <= 7) return kNames[kind];
  return nullptr;
}

const char* SyncName(int64_t sync_type) {
  // ENUM_CUPTI_SYNC_TYPE, named as Kineto names its cuda_sync events.
  switch (sync_type) {
    case 1:
      return "Event Sync";
    case 2:
      return "Stream Wait Event";
    case 3:
      return "Stream Sync";
    case 4:
      return "Context Sync";
    default:
      return "Unknown Sync";
  }
}

// globalTid / globalPid as nsys serialises them: pid in bits 24..47, tid in bits 0..23.
int32_t PidOf(int64_t global_id) { return static_cast<int32_t>((global_id >> 24) & 0xFFFFFF); }
int32_t TidOf(int64_t global_id) { return static_cast<int32_t>(global_id & 0xFFFFFF); }

enum class Got { kOk, kNull, kBad };

// Reads an integer column: INTEGER as is, REAL rounded, TEXT only when it is a whole
// number. Anything else is kBad.
Got ColumnInt(sqlite3_stmt* s, int i, int64_t* out) {
  switch (sqlite3_column_type(s, i)) {
    case SQLITE_NULL:
      return Got::kNull;
    case SQLITE_INTEGER:
      *out = sqlite3_column_int64(s, i);
      return Got::kOk;
    case SQLITE_FLOAT: {
      const double d = sqlite3_column_double(s, i);
      if (!std::isfinite(d) || std::fabs(d) > 9.0e18) return Got::kBad;
      *out = static_cast<int64_t>(std::llround(d));
      return Got::kOk;
    }
    case SQLITE_TEXT: {
      const char* p = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
      const int n = sqlite3_column_bytes(s, i);
      if (p == nullptr || n == 0) return Got::kBad;
      const auto [end, ec] = std::from_chars(p, p + n, *out);
      return (ec == std::errc() && end == p + n) ? Got::kOk : Got::kBad;
    }
    default:
      return Got::kBad;
  }
}

// Column accessors for one row; the first problem with a required column becomes the
// row's malformed reason.
class RowReader {
 public:
  RowReader(sqlite3_stmt* s, const std::vector<const char*>& cols) : s_(s), cols_(cols) {}

  int64_t Required(int i) {
    int64_t v = 0;
    const Got g = ColumnInt(s_, i, &v);
    if (g != Got::kOk && error_.empty()) {
      error_ = std::string(g == Got::kNull ? "NULL " : "non-integer ") + cols_[static_cast<size_t>(i)];
    }
    return v;
  }
  std::optional<int64_t> Optional(int i) const {
    int64_t v = 0;
    if (ColumnInt(s_, i, &v) != Got::kOk) return std::nullopt;
    return v;
  }
  int64_t OptionalOr(int i, int64_t fallback) const { return Optional(i).value_or(fallback); }
  bool IsNull(int i) const { return sqlite3_column_type(s_, i) == SQLITE_NULL; }
  bool IsText(int i) const { return sqlite3_column_type(s_, i) == SQLITE_TEXT; }
  std::string_view Text(int i) const {
    const char* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, i));
    return p ? std::string_view(p, static_cast<size_t>(sqlite3_column_bytes(s_, i))) : std::string_view();
  }
  void Fail(std::string reason) {
    if (error_.empty()) error_ = std::move(reason);
  }
  const std::string& error() const { return error_; }

 private:
  sqlite3_stmt* s_;
  const std::vector<const char*>& cols_;
  std::string error_;
};

class Importer {
 public:
  Importer(sqlite3* db, const std::string& path, Trace* trace) : db_(db), path_(path), t_(*trace) {}

  Status Run() {
    TS_RETURN_IF_ERROR(LoadSchema());
    if (!HasTable(kKernelTable) && !HasTable(kRuntimeTable)) {
      return InvalidArgument(path_ + ": not an Nsight Systems CUDA export: it has no " + kKernelTable +
                             " or " + kRuntimeTable +
                             " table (capture with nsys profile --trace=cuda and convert with "
                             "nsys export --type sqlite)");
    }
    TS_RETURN_IF_ERROR(ImportKernels());
    TS_RETURN_IF_ERROR(ImportRuntime());
    TS_RETURN_IF_ERROR(ImportMemcpys());
    TS_RETURN_IF_ERROR(ImportMemsets());
    TS_RETURN_IF_ERROR(ImportSyncs());
    TS_RETURN_IF_ERROR(ImportNvtx());
    // A name that could not be read is a damaged export, not an unnamed event.
    TS_RETURN_IF_ERROR(string_error_);
    if (names_without_table_ > 0) {
      return InvalidArgument(path_ + ": " + std::to_string(names_without_table_) +
                             " names are StringIds references, but the export has no StringIds table "
                             "(a damaged or partial export)");
    }
    QualifyCorrelations();
    FillMetadata();
    TS_RETURN_IF_ERROR(LoadDeviceInfo());
    TS_RETURN_IF_ERROR(LoadRank());
    std::stable_sort(t_.events.begin(), t_.events.end(),
                     [](const Event& a, const Event& b) { return a.ts_ns < b.ts_ns; });
    t_.stats.events_kept = static_cast<int64_t>(t_.events.size());
    return OkStatus();
  }

 private:
  // What a tierscope export recorded of the trace it came from (name / value rows
  // TIERSCOPE_RANK, _WORLD_SIZE, _BACKEND, _RUNTIME; nsys itself writes none of them), in
  // EXPORT_META_DATA (nsys 2022's name, which tierscope writes) or META_DATA_EXPORT (nsys
  // 2024's, which older tierscope exports used as a table; now a view, not read twice).
  Status LoadRank() {
    for (const char* table : {"META_DATA_EXPORT", "EXPORT_META_DATA"}) {
      if (!HasTable(table) || !HasColumn(table, "name") || !HasColumn(table, "value")) continue;
      const std::string what = std::string("reading ") + table;
      TS_ASSIGN_OR_RETURN(
          Stmt s, Prepare(std::string("SELECT name, value FROM ") + table + " WHERE name LIKE 'TIERSCOPE_%'", what));
      TS_RETURN_IF_ERROR(Step(s.get(), what, [&](sqlite3_stmt* st) {
        const char* name = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
        const char* value = reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
        if (name == nullptr || value == nullptr) return;
        const std::string n(name), v(value);
        char* end = nullptr;
        const long long x = std::strtoll(v.c_str(), &end, 10);
        const bool number = end != v.c_str() && *end == '\0' && x >= -1 && x < (1LL << 24);
        if (n == "TIERSCOPE_RANK" && number) t_.rank = static_cast<int32_t>(x);
        if (n == "TIERSCOPE_WORLD_SIZE" && number) t_.world_size = static_cast<int32_t>(x);
        if (n == "TIERSCOPE_BACKEND") t_.collective_backend = v;
        if (n == "TIERSCOPE_RUNTIME" && (v == "cuda" || v == "hip" || v == "musa")) t_.runtime = v;
      }));
    }
    return OkStatus();
  }

  Status SqlError(const std::string& what) const { return sqlite::Error(db_, path_, what, StatusCode::kInternal); }

  StatusOr<Stmt> Prepare(const std::string& sql, const std::string& what) {
    return sqlite::Prepare(db_, sql, path_, what, StatusCode::kInternal);
  }

  // Runs `stmt` to completion, calling fn(stmt) for every row.
  template <typename Fn>
  Status Step(sqlite3_stmt* stmt, const std::string& what, Fn fn) {
    return sqlite::Step(db_, stmt, path_, what, StatusCode::kInternal, fn);
  }

  Status LoadSchema() {
    TS_ASSIGN_OR_RETURN(Stmt tables,
                        Prepare("SELECT name FROM sqlite_master WHERE type = 'table'", "reading the schema"));
    std::vector<std::string> names;
    TS_RETURN_IF_ERROR(Step(tables.get(), "reading the schema", [&](sqlite3_stmt* s) {
      const char* p = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
      if (p != nullptr) names.emplace_back(p);
    }));
    TS_ASSIGN_OR_RETURN(Stmt cols, Prepare("SELECT name FROM pragma_table_info(?1)", "reading the schema"));
    for (const std::string& name : names) {
      std::set<std::string>& columns = tables_[Lower(name)];
      sqlite3_reset(cols.get());
      sqlite3_bind_text(cols.get(), 1, name.c_str(), static_cast<int>(name.size()), SQLITE_TRANSIENT);
      TS_RETURN_IF_ERROR(Step(cols.get(), "reading columns of " + name, [&](sqlite3_stmt* s) {
        const char* p = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
        if (p != nullptr) columns.insert(Lower(p));
      }));
    }
    return OkStatus();
  }

  bool HasTable(std::string_view table) const { return tables_.count(Lower(table)) > 0; }
  bool HasColumn(std::string_view table, std::string_view col) const {
    auto it = tables_.find(Lower(table));
    return it != tables_.end() && it->second.count(Lower(col)) > 0;
  }

  // SELECT of `cols` from `table`, with NULL standing in for columns the table lacks.
  std::string SelectSql(const char* table, const std::vector<const char*>& cols) const {
    std::string sql = "SELECT ";
    for (size_t i = 0; i < cols.size(); ++i) {
      if (i > 0) sql += ", ";
      if (HasColumn(table, cols[i])) {
        sql += '"';
        sql += cols[i];
        sql += '"';
      } else {
        sql += "NULL";
      }
    }
    sql += " FROM \"";
    sql += table;
    sql += '"';
    return sql;
  }

  // Calls fn(RowReader&) for each row of `table` (absent tables are skipped); a row
  // whose reader reports an error is counted as malformed under `kind`.
  template <typename Fn>
  Status ForEachRow(const char* table, const char* kind, const std::vector<const char*>& cols, Fn fn) {
    if (!HasTable(table)) return OkStatus();
    TS_ASSIGN_OR_RETURN(Stmt stmt, Prepare(SelectSql(table, cols), std::string("reading ") + table));
    int64_t& category = t_.stats.by_category[table];
    return Step(stmt.get(), std::string("reading ") + table, [&](sqlite3_stmt* s) {
      ++t_.stats.events_read;
      ++category;
      RowReader r(s, cols);
      fn(r);
      if (!r.error().empty()) Malformed(std::string(kind) + ": " + r.error());
    });
  }

  void Malformed(const std::string& reason) {
    ++t_.stats.malformed;
    ++t_.stats.malformed_reasons[reason];
  }

  // A StringIds value; nullptr when the id (or the table) is missing.
  const std::string* LookupString(int64_t id) {
    auto it = string_cache_.find(id);
    if (it != string_cache_.end()) return it->second ? &*it->second : nullptr;
    std::optional<std::string> value;
    if (!HasTable("StringIds")) ++names_without_table_;
    if (HasTable("StringIds") && string_error_.ok()) {
      if (!string_stmt_) {
        sqlite3_stmt* raw = nullptr;
        if (sqlite3_prepare_v2(db_, "SELECT value FROM StringIds WHERE id = ?1", -1, &raw, nullptr) ==
            SQLITE_OK) {
          string_stmt_.reset(raw);
        } else {
          string_error_ = SqlError("reading StringIds");
          sqlite3_finalize(raw);
        }
      }
      if (string_stmt_) {
        sqlite3_stmt* s = string_stmt_.get();
        sqlite3_reset(s);
        sqlite3_bind_int64(s, 1, id);
        const int rc = sqlite3_step(s);
        if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL) {
          const char* p = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
          value.emplace(p ? p : "", static_cast<size_t>(sqlite3_column_bytes(s, 0)));
        } else if (rc != SQLITE_ROW && rc != SQLITE_DONE) {  // a corrupt page: said, never "unknown"
          string_error_ = SqlError("reading StringIds");
        }
        sqlite3_reset(s);
      }
    }
    auto [pos, _] = string_cache_.emplace(id, std::move(value));
    return pos->second ? &*pos->second : nullptr;
  }

  // A name column: a StringIds reference (or, tolerated, inline text). Empty when NULL
  // or not an id; "<unknown string N>", with *unresolved set, when StringIds lacks it.
  std::string NameAt(RowReader& r, int i, bool* unresolved) {
    *unresolved = false;
    if (r.IsNull(i)) return std::string();
    if (r.IsText(i)) return std::string(r.Text(i));
    const std::optional<int64_t> id = r.Optional(i);
    if (!id) return std::string();
    const std::string* s = LookupString(*id);
    if (s == nullptr) {
      *unresolved = true;
      return "<unknown string " + std::to_string(*id) + ">";
    }
    return *s;
  }

  // Adds an event; `process` (-1 if unknown) is the host pid whose correlation ids it uses.
  Event& AddEvent(EventKind kind, std::string_view name, int64_t start, int64_t end, int32_t process) {
    process_.push_back(process);
    return t_.Add(kind, name, start, end - start);
  }

  static int32_t ProcessOf(const RowReader& r, int global_pid_col) {
    const std::optional<int64_t> g = r.Optional(global_pid_col);
    return g ? PidOf(*g) : -1;
  }

  Event& AddDeviceEvent(EventKind kind, std::string_view name, int64_t start, int64_t end, int64_t device,
                        int64_t stream, int64_t correlation, int32_t process, const char* table) {
    Event& e = AddEvent(kind, name, start, end, process);
    e.pid = static_cast<int32_t>(device);
    e.tid = static_cast<int32_t>(stream);
    e.correlation = correlation;
    e.cat = t_.strings.Intern(table);
    streams_.insert(e.tid);
    return e;
  }

  static bool CheckSpan(RowReader& r, int64_t start, int64_t end) {
    int64_t dur = 0;
    if (r.error().empty() && end < start) r.Fail("end before start");
    if (r.error().empty() && (__builtin_sub_overflow(end, start, &dur) || !TimeInRange(start, dur))) {
      r.Fail("time out of range");
    }
    return r.error().empty();
  }

  // A tierscope export's tierscopeArgs (a collective's name, sizes, group and peer): taken
  // when it is a JSON object's members, and of those only the keys the export writes with
  // a string or number each, never a key already in `args` (a file is data, not a way to
  // set a kernel's correlation).
  static void AppendExportedArgs(std::string_view text, std::string& args) {
    if (text.empty() || text.size() > (1 << 20)) return;
    const nlohmann::json j = nlohmann::json::parse("{" + std::string(text) + "}", nullptr, false);
    if (!j.is_object()) return;
    for (std::string_view key : kCollectiveArgKeys) {
      const auto it = j.find(std::string(key));
      if (it == j.end() || !(it->is_string() || it->is_number()) || !ArgValue(args, key).empty()) continue;
      args += ", \"" + std::string(key) + "\": " + it->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
  }

  Status ImportKernels() {
    // clang-format off
    const std::vector<const char*> cols = {
        "start", "end", "deviceId", "streamId", "contextId", "correlationId", "globalPid",
        "demangledName", "shortName", "mangledName", "gridX", "gridY", "gridZ", "blockX", "blockY",
        "blockZ", "registersPerThread", "staticSharedMemory", "dynamicSharedMemory", "tierscopeArgs"};
    // clang-format on
    return ForEachRow(kKernelTable, "kernel", cols, [&](RowReader& r) {
      const int64_t start = r.Required(0), end = r.Required(1);
      const int64_t device = r.Required(2), stream = r.Required(3);
      if (!CheckSpan(r, start, end)) return;
      std::string name, fallback;
      for (int i : {7, 8, 9}) {  // demangled, else short, else mangled
        bool unresolved = false;
        std::string n = NameAt(r, i, &unresolved);
        if (n.empty()) continue;
        if (!unresolved) {
          name = std::move(n);
          break;
        }
        if (fallback.empty()) fallback = std::move(n);
      }
      if (name.empty()) name = std::move(fallback);
      if (name.empty()) return r.Fail("no kernel name (demangledName/shortName NULL)");
      Event& e = AddDeviceEvent(EventKind::kKernel, name, start, end, device, stream, r.OptionalOr(5, 0),
                                ProcessOf(r, 6), kKernelTable);
      std::string args = "\"device\": " + std::to_string(device);
      if (auto ctx = r.Optional(4)) args += ", \"context\": " + std::to_string(*ctx);
      args += ", \"stream\": " + std::to_string(stream);
      // A launch size is three positive dimensions, or not known: a column the export lacks
      // or NULL, or 0 x 0 x 0 (a tierscope export of a trace without it), is never a 0 in it.
      auto dims = [&](int first) -> std::optional<std::string> {
        const std::optional<int64_t> x = r.Optional(first), y = r.Optional(first + 1), z = r.Optional(first + 2);
        if (!x || !y || !z || *x < 1 || *y < 1 || *z < 1) return std::nullopt;
        return "[" + std::to_string(*x) + ", " + std::to_string(*y) + ", " + std::to_string(*z) + "]";
      };
      if (const auto grid = dims(10), block = dims(13); grid && block) {
        args += ", \"grid\": " + *grid + ", \"block\": " + *block;
      }
      if (auto regs = r.Optional(16)) args += ", \"registers per thread\": " + std::to_string(*regs);
      const std::optional<int64_t> smem_static = r.Optional(17), smem_dynamic = r.Optional(18);
      if (smem_static || smem_dynamic) {
        int64_t total = 0;  // a corrupt export's sizes may not add up in 64 bits: then no total
        if (!__builtin_add_overflow(smem_static.value_or(0), smem_dynamic.value_or(0), &total)) {
          args += ", \"shared memory\": " + std::to_string(total);
        }
        args += ", \"static shared memory\": " + std::to_string(smem_static.value_or(0));
        args += ", \"dynamic shared memory\": " + std::to_string(smem_dynamic.value_or(0));
      }
      if (auto gpid = r.Optional(6)) args += ", \"pid\": " + std::to_string(PidOf(*gpid));
      if (r.IsText(19)) AppendExportedArgs(r.Text(19), args);
      e.args = t_.strings.Intern(args);
      if (auto gpid = r.Optional(6)) ++kernel_pids_[PidOf(*gpid)];
    });
  }

  Status ImportRuntime() {
    const std::vector<const char*> cols = {"start",     "end",           "nameId",
                                           "globalTid", "correlationId", "returnValue"};
    return ForEachRow(kRuntimeTable, "runtime", cols, [&](RowReader& r) {
      const int64_t start = r.Required(0), end = r.Required(1);
      if (r.IsNull(2)) r.Fail("NULL nameId");
      if (!CheckSpan(r, start, end)) return;
      bool unresolved = false;
      const std::string raw = NameAt(r, 2, &unresolved);
      if (raw.empty()) return r.Fail("empty API name");
      const std::string_view name = StripVersionSuffix(raw);
      const std::optional<int64_t> global_tid = r.Optional(3);
      Event& e = AddEvent(EventKind::kRuntime, name, start, end, global_tid ? PidOf(*global_tid) : -1);
      const int64_t gtid = global_tid.value_or(0);
      e.pid = PidOf(gtid);
      e.tid = TidOf(gtid);
      e.correlation = r.OptionalOr(4, 0);
      e.cat = t_.strings.Intern(kRuntimeTable);
      std::string args;
      if (name.size() != raw.size()) {
        args = "\"api\": ";
        AppendJsonString(args, raw);
      }
      if (auto rv = r.Optional(5); rv && *rv != 0) {
        if (!args.empty()) args += ", ";
        args += "\"return value\": " + std::to_string(*rv);
      }
      if (!args.empty()) e.args = t_.strings.Intern(args);
      ++runtime_pids_[e.pid];
    });
  }

  Status ImportMemcpys() {
    const std::vector<const char*> cols = {"start",   "end",      "deviceId",      "streamId",
                                           "bytes",   "copyKind", "correlationId", "contextId",
                                           "srcKind", "dstKind",  "globalPid", "tierscopeName"};
    return ForEachRow(kMemcpyTable, "memcpy", cols, [&](RowReader& r) {
      const int64_t start = r.Required(0), end = r.Required(1);
      const int64_t device = r.Required(2), stream = r.Required(3), bytes = r.Required(4);
      if (!CheckSpan(r, start, end)) return;
      const std::optional<int64_t> kind = r.Optional(5);
      const char* src = r.Optional(8) ? MemKindName(*r.Optional(8)) : nullptr;
      const char* dst = r.Optional(9) ? MemKindName(*r.Optional(9)) : nullptr;
      // Named as Kineto names it: "Memcpy HtoD (Pageable -> Device)".
      std::string name = kind ? MemcpyName(*kind) : "Memcpy";
      if (src != nullptr && dst != nullptr) name += std::string(" (") + src + " -> " + dst + ")";
      if (r.IsText(11) && !r.Text(11).empty()) name = std::string(r.Text(11));  // a tierscope export's
      Event& e = AddDeviceEvent(EventKind::kMemcpy, name, start, end, device, stream, r.OptionalOr(6, 0),
                                ProcessOf(r, 10), kMemcpyTable);
      e.v0 = static_cast<double>(bytes);
      std::string args = "\"device\": " + std::to_string(device);
      if (auto ctx = r.Optional(7)) args += ", \"context\": " + std::to_string(*ctx);
      args += ", \"stream\": " + std::to_string(stream);
      if (src != nullptr) args += std::string(", \"src kind\": \"") + src + "\"";
      if (dst != nullptr) args += std::string(", \"dst kind\": \"") + dst + "\"";
      e.args = t_.strings.Intern(args);
    });
  }

  Status ImportMemsets() {
    const std::vector<const char*> cols = {"start",         "end",       "deviceId", "streamId", "bytes",
                                           "correlationId", "contextId", "value",    "memKind",  "globalPid",
                                           "tierscopeName"};
    return ForEachRow(kMemsetTable, "memset", cols, [&](RowReader& r) {
      const int64_t start = r.Required(0), end = r.Required(1);
      const int64_t device = r.Required(2), stream = r.Required(3), bytes = r.Required(4);
      if (!CheckSpan(r, start, end)) return;
      const char* mem = r.Optional(8) ? MemKindName(*r.Optional(8)) : nullptr;
      std::string name = mem ? std::string("Memset (") + mem + ")" : "Memset";
      if (r.IsText(10) && !r.Text(10).empty()) name = std::string(r.Text(10));  // a tierscope export's
      Event& e = AddDeviceEvent(EventKind::kMemset, name, start, end, device, stream, r.OptionalOr(5, 0),
                                ProcessOf(r, 9), kMemsetTable);
      e.v0 = static_cast<double>(bytes);
      std::string args = "\"device\": " + std::to_string(device);
      if (auto ctx = r.Optional(6)) args += ", \"context\": " + std::to_string(*ctx);
      args += ", \"stream\": " + std::to_string(stream);
      if (auto value = r.Optional(7)) args += ", \"value\": " + std::to_string(*value);
      e.args = t_.strings.Intern(args);
    });
  }

  Status ImportSyncs() {
    // Newer exports keep the old column as deprecatedSyncType next to syncType.
    const std::vector<const char*> cols = {
        "start",         "end",       "deviceId", "streamId",           "syncType",
        "correlationId", "contextId", "eventId",  "deprecatedSyncType", "globalPid"};
    return ForEachRow(kSyncTable, "sync", cols, [&](RowReader& r) {
      const int64_t start = r.Required(0), end = r.Required(1);
      const int64_t device = r.Required(2), stream = r.Required(3);
      if (!CheckSpan(r, start, end)) return;
      const int64_t type = r.Optional(4).value_or(r.OptionalOr(8, 0));
      Event& e = AddDeviceEvent(EventKind::kSync, SyncName(type), start, end, device, stream,
                                r.OptionalOr(5, 0), ProcessOf(r, 9), kSyncTable);
      std::string args = "\"device\": " + std::to_string(device);
      if (auto ctx = r.Optional(6)) args += ", \"context\": " + std::to_string(*ctx);
      args += ", \"stream\": " + std::to_string(stream);
      if (auto ev = r.Optional(7)) args += ", \"event\": " + std::to_string(*ev);
      e.args = t_.strings.Intern(args);
    });
  }

  Status NvtxRangeTypes(std::set<int64_t>* types) {
    if (HasTable("ENUM_NSYS_EVENT_TYPE") && HasColumn("ENUM_NSYS_EVENT_TYPE", "id") &&
        HasColumn("ENUM_NSYS_EVENT_TYPE", "name")) {
      TS_ASSIGN_OR_RETURN(Stmt s, Prepare("SELECT id FROM ENUM_NSYS_EVENT_TYPE WHERE name IN "
                                          "('NvtxPushPopRange', 'NvtxStartEndRange') AND id IS NOT NULL",
                                          "reading ENUM_NSYS_EVENT_TYPE"));
      TS_RETURN_IF_ERROR(Step(s.get(), "reading ENUM_NSYS_EVENT_TYPE",
                              [&](sqlite3_stmt* st) { types->insert(sqlite3_column_int64(st, 0)); }));
    }
    if (types->empty()) *types = {kNvtxPushPopRange, kNvtxStartEndRange};
    return OkStatus();
  }

  Status ImportNvtx() {
    if (!HasTable(kNvtxTable)) return OkStatus();
    std::set<int64_t> range_types;
    TS_RETURN_IF_ERROR(NvtxRangeTypes(&range_types));
    const std::vector<const char*> cols = {"start", "end", "eventType", "text", "textId", "globalTid"};
    return ForEachRow(kNvtxTable, "nvtx", cols, [&](RowReader& r) {
      const int64_t type = r.Required(2);
      if (!r.error().empty()) return;
      if (range_types.count(type) == 0) {  // marks, domain/category/thread names, ...
        ++t_.stats.metadata;
        return;
      }
      const int64_t start = r.Required(0);
      if (r.IsNull(1)) return r.Fail("NULL end (unterminated range)");
      const int64_t end = r.Required(1);
      if (!CheckSpan(r, start, end)) return;
      std::string name;
      if (!r.IsNull(3)) name = std::string(r.Text(3));
      if (name.empty() && !r.IsNull(4)) {
        bool unresolved = false;
        name = NameAt(r, 4, &unresolved);
      }
      if (name.empty()) name = "(unnamed NVTX range)";
      Event& e = AddEvent(EventKind::kAnnotation, name, start, end, -1);
      const int64_t gtid = r.OptionalOr(5, 0);
      e.pid = PidOf(gtid);
      e.tid = TidOf(gtid);
      e.cat = t_.strings.Intern(kNvtxTable);
    });
  }

  // CUPTI correlation ids are per process. When several processes were captured, each
  // becomes (pid << 32 | id), so a launch in one never pairs with a kernel of another.
  void QualifyCorrelations() {
    std::set<int32_t> processes;
    for (size_t i = 0; i < t_.events.size(); ++i) {
      if (t_.events[i].correlation != 0 && process_[i] >= 0) processes.insert(process_[i]);
    }
    if (processes.size() < 2) return;
    for (size_t i = 0; i < t_.events.size(); ++i) {
      Event& e = t_.events[i];
      if (e.correlation == 0 || process_[i] < 0) continue;
      e.correlation = (static_cast<int64_t>(process_[i]) << 32) | (e.correlation & 0xFFFFFFFF);
    }
  }

  static int32_t MostCommon(const std::map<int32_t, int64_t>& counts) {
    int32_t best = 0;
    int64_t n = -1;
    for (const auto& [k, c] : counts) {
      if (c > n) best = k, n = c;
    }
    return best;
  }

  void FillMetadata() {
    t_.host_pid = !runtime_pids_.empty() ? MostCommon(runtime_pids_) : MostCommon(kernel_pids_);
    for (int32_t stream : streams_) t_.thread_names.emplace_back(stream, "stream " + std::to_string(stream));
  }

  // device_name / device_units / device_memory of the device most kernels ran on.
  Status LoadDeviceInfo() {
    std::map<int32_t, int64_t> device_counts;
    for (const Event& e : t_.events) {
      if (e.kind == EventKind::kKernel) ++device_counts[e.pid];
    }
    const int32_t cuda_id = MostCommon(device_counts);
    int64_t gpu_id = cuda_id;
    int64_t cuda_sms = 0;
    if (HasTable("TARGET_INFO_CUDA_DEVICE") && HasColumn("TARGET_INFO_CUDA_DEVICE", "cudaId")) {
      const std::vector<const char*> cols = {"cudaId", "gpuId", "pid", "numMultiprocessors"};
      TS_ASSIGN_OR_RETURN(
          Stmt s, Prepare(SelectSql("TARGET_INFO_CUDA_DEVICE", cols), "reading TARGET_INFO_CUDA_DEVICE"));
      int best = -1;  // 1: the cuda id matches; 2: and so does the host pid
      TS_RETURN_IF_ERROR(Step(s.get(), "reading TARGET_INFO_CUDA_DEVICE", [&](sqlite3_stmt* st) {
        RowReader r(st, cols);
        if (r.OptionalOr(0, -1) != cuda_id) return;
        const int score = r.OptionalOr(2, -1) == t_.host_pid ? 2 : 1;
        if (score <= best) return;
        best = score;
        gpu_id = r.OptionalOr(1, gpu_id);
        cuda_sms = r.OptionalOr(3, 0);
      }));
    }
    struct Gpu {
      int64_t id = 0, sms = 0, memory = 0;
      std::string name;
    };
    std::vector<Gpu> gpus;
    if (HasTable("TARGET_INFO_GPU")) {
      const std::vector<const char*> cols = {"id", "name", "smCount", "totalMemory"};
      TS_ASSIGN_OR_RETURN(Stmt s, Prepare(SelectSql("TARGET_INFO_GPU", cols), "reading TARGET_INFO_GPU"));
      TS_RETURN_IF_ERROR(Step(s.get(), "reading TARGET_INFO_GPU", [&](sqlite3_stmt* st) {
        RowReader r(st, cols);
        Gpu g;
        g.id = r.OptionalOr(0, -1);
        if (r.IsText(1)) g.name = std::string(r.Text(1));
        g.sms = r.OptionalOr(2, 0);
        g.memory = r.OptionalOr(3, 0);
        gpus.push_back(std::move(g));
      }));
    }
    const Gpu* gpu = nullptr;
    for (const Gpu& g : gpus) {
      if (g.id == gpu_id) gpu = &g;
    }
    if (gpu == nullptr && gpus.size() == 1) gpu = &gpus[0];
    if (gpu != nullptr) {
      t_.device_name = gpu->name.empty() ? "CUDA device " + std::to_string(cuda_id) : gpu->name;
      t_.device_units = static_cast<int32_t>(gpu->sms > 0 ? gpu->sms : cuda_sms);
      t_.device_memory = gpu->memory;
    } else {
      t_.device_name = "CUDA device " + std::to_string(cuda_id);
      t_.device_units = static_cast<int32_t>(cuda_sms);
    }
    return OkStatus();
  }

  sqlite3* db_;
  const std::string& path_;
  Trace& t_;
  std::map<std::string, std::set<std::string>> tables_;  // lower-case table -> columns
  std::unordered_map<int64_t, std::optional<std::string>> string_cache_;
  Stmt string_stmt_;
  Status string_error_;              // the first failure reading StringIds
  int64_t names_without_table_ = 0;  // StringIds references read with no StringIds table
  std::set<int32_t> streams_;
  std::vector<int32_t> process_;  // per event: host pid owning its correlation id, or -1
  std::map<int32_t, int64_t> runtime_pids_, kernel_pids_;
};

}  // namespace

StatusOr<Trace> ImportNsysSqlite(const std::string& path) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) return NotFound(path + ": no such file");
  if (!std::filesystem::is_regular_file(st)) return InvalidArgument(path + ": not a regular file");
  const auto size = std::filesystem::file_size(path, ec);

  TS_ASSIGN_OR_RETURN(Db db, sqlite::OpenReadOnly(path));
  TS_ASSIGN_OR_RETURN(Trace trace, ImportNsysDb(db.get(), path));
  trace.stats.bytes = ec ? 0 : static_cast<int64_t>(size);
  return trace;
}

StatusOr<Trace> ImportNsysDb(sqlite3* db, const std::string& source) {
  // The file is untrusted input: no schema-defined functions or writes to internals.
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  Trace trace;
  trace.source = source;
  trace.format = "nsys-sqlite";
  trace.runtime = "cuda";
  Importer importer(db, source, &trace);
  TS_RETURN_IF_ERROR(importer.Run());
  return trace;
}

}  // namespace tierscope
