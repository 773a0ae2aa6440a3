// Trace -> nsys SQLite schema (see nsys_export.h).
#include "trace/nsys_export.h"

#include <sqlite3.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trace/args.h"

namespace tierscope {
namespace {

constexpr char kSchema[] = R"sql(
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE ENUM_NSYS_EVENT_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT, description TEXT);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT,
  totalMemory INTEGER, smCount INTEGER, computeMajor INTEGER, computeMinor INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,
  streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER,
  launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL,
  gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
  blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
  staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL,
  localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
  eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,
  returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL,
  srcKind INTEGER, dstKind INTEGER, tierscopeName TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL, bytes INTEGER NOT NULL,
  memKind INTEGER, tierscopeName TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER, syncType INTEGER NOT NULL, eventId INTEGER NOT NULL);
CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PROGRAM', 'tierscope export');
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
  rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,
  endGlobalTid INTEGER, textId INTEGER, domainId INTEGER);
INSERT INTO ENUM_NSYS_EVENT_TYPE VALUES (59, 'NvtxPushPopRange', 'NVTX push/pop range'),
  (60, 'NvtxStartEndRange', 'NVTX start/end range');
CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (0, 'CUDA_MEMCPY_OPER_UNKNOWN', 'Unknown'),
  (1, 'CUDA_MEMCPY_OPER_HTOD', 'Host-to-Device'), (2, 'CUDA_MEMCPY_OPER_DTOH', 'Device-to-Host'),
  (3, 'CUDA_MEMCPY_OPER_HTOA', 'Host-to-Array'), (4, 'CUDA_MEMCPY_OPER_ATOH', 'Array-to-Host'),
  (5, 'CUDA_MEMCPY_OPER_ATOA', 'Array-to-Array'), (6, 'CUDA_MEMCPY_OPER_ATOD', 'Array-to-Device'),
  (7, 'CUDA_MEMCPY_OPER_DTOA', 'Device-to-Array'), (8, 'CUDA_MEMCPY_OPER_DTOD', 'Device-to-Device'),
  (9, 'CUDA_MEMCPY_OPER_HTOH', 'Host-to-Host'), (10, 'CUDA_MEMCPY_OPER_PTOP', 'Peer-to-Peer');
CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (0, 'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE', 'Pageable'),
  (1, 'CUDA_MEMOPR_MEMORY_KIND_PINNED', 'Pinned'), (2, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE', 'Device'),
  (3, 'CUDA_MEMOPR_MEMORY_KIND_ARRAY', 'Array'), (4, 'CUDA_MEMOPR_MEMORY_KIND_MANAGED', 'Managed'),
  (5, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC', 'Device Static'),
  (6, 'CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC', 'Managed Static'), (7, 'CUDA_MEMOPR_MEMORY_KIND_UNKNOWN', 'Unknown');
)sql";

constexpr char kIndexes[] = R"sql(
CREATE INDEX kernel_correlation ON CUPTI_ACTIVITY_KIND_KERNEL (correlationId);
CREATE INDEX kernel_start ON CUPTI_ACTIVITY_KIND_KERNEL (start);
CREATE INDEX runtime_correlation ON CUPTI_ACTIVITY_KIND_RUNTIME (correlationId);
CREATE INDEX runtime_thread ON CUPTI_ACTIVITY_KIND_RUNTIME (globalTid, start);
CREATE INDEX memcpy_correlation ON CUPTI_ACTIVITY_KIND_MEMCPY (correlationId);
CREATE INDEX memset_correlation ON CUPTI_ACTIVITY_KIND_MEMSET (correlationId);
CREATE INDEX nvtx_thread ON NVTX_EVENTS (globalTid, start);
)sql";

int64_t GlobalId(int32_t pid, int32_t tid) {
  return (static_cast<int64_t>(pid & 0xFFFFFF) << 24) | static_cast<int64_t>(tid & 0xFFFFFF);
}

// The launch size from the args ("[30,4,1]", missing sizes 1); 0 x 0 x 0 when the trace
// does not record it (the columns are NOT NULL; 1 x 1 x 1 would claim a one-block launch).
std::array<int64_t, 3> Dims(std::string_view args, std::string_view key) {
  const std::vector<int64_t> v = ArgDims(args, key);
  if (v.empty()) return {0, 0, 0};
  std::array<int64_t, 3> d = {1, 1, 1};
  for (size_t i = 0; i < v.size(); ++i) d[i] = v[i];
  return d;
}

int64_t ArgInt(std::string_view args, std::string_view key, int64_t otherwise) {
  const std::optional<double> x = ArgNumber(args, key);
  return x ? static_cast<int64_t>(*x) : otherwise;
}

// nsys's shortName: the function's own name, without return type, scope, template
// arguments or parameters ("void at::native::foo<4, bar>(int)" -> "foo").
std::string_view ShortName(std::string_view name) {
  if (name.substr(0, 5) == "void ") name.remove_prefix(5);
  int depth = 0;
  size_t end = name.size();
  constexpr std::string_view kAnonymous = "(anonymous namespace)";
  for (size_t i = 0; i < name.size(); ++i) {
    if (name.substr(i, kAnonymous.size()) == kAnonymous) {  // a scope, not the parameter list
      i += kAnonymous.size() - 1;
      continue;
    }
    const char c = name[i];
    if ((c == '<' || c == '(') && depth == 0) {
      end = i;
      break;
    }
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
  }
  std::string_view head = name.substr(0, end);
  const size_t scope = head.rfind("::");
  if (scope != std::string_view::npos) head.remove_prefix(scope + 2);
  return head.empty() ? name : head;
}

int64_t CopyKind(std::string_view name) {
  static constexpr const char* kNames[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                           "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
  if (name.substr(0, 7) != "Memcpy ") return 0;
  const std::string_view word = name.substr(7, 4);
  for (int64_t k = 0; k < 11; ++k) {
    if (word == kNames[k]) return k;
  }
  return 0;
}

int64_t MemKind(std::string_view text) {
  static constexpr const char* kNames[] = {"Pageable", "Pinned",        "Device",         "Array",
                                           "Managed",  "Device Static", "Managed Static", "Unknown"};
  for (int64_t k = 0; k < 8; ++k) {
    if (text == kNames[k]) return k;
  }
  return -1;
}

// "(Pageable -> Device)" at the end of a Kineto memcpy name, or "Memset (Device)".
std::pair<int64_t, int64_t> Kinds(std::string_view name) {
  const size_t open = name.rfind('('), close = name.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return {-1, -1};
  const std::string_view inside = name.substr(open + 1, close - open - 1);
  const size_t arrow = inside.find(" -> ");
  if (arrow == std::string_view::npos) return {MemKind(inside), -1};
  return {MemKind(inside.substr(0, arrow)), MemKind(inside.substr(arrow + 4))};
}

int64_t SyncType(std::string_view name) {
  if (name == "Event Sync" || name == "Event Synchronize") return 1;
  if (name == "Stream Wait Event") return 2;
  if (name == "Stream Sync" || name == "Stream Synchronize") return 3;
  if (name == "Context Sync" || name == "Context Synchronize") return 4;
  return 0;
}

struct Db {
  sqlite3* db = nullptr;
  ~Db() {
    if (db != nullptr) sqlite3_close(db);
  }
  Status Exec(const char* sql, const std::string& what) {
    char* err = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      const std::string m = err ? err : sqlite3_errmsg(db);
      sqlite3_free(err);
      return DataLoss(what + ": " + m);
    }
    return OkStatus();
  }
};

struct Stmt {
  sqlite3_stmt* s = nullptr;
  ~Stmt() { sqlite3_finalize(s); }
};

class Writer {
 public:
  Writer(const Trace& t, Db& db) : t_(t), db_(db) {}

  Status Prepare(Stmt& st, const char* sql) {
    if (sqlite3_prepare_v2(db_.db, sql, -1, &st.s, nullptr) != SQLITE_OK) {
      return Internal(std::string("preparing an insert: ") + sqlite3_errmsg(db_.db));
    }
    return OkStatus();
  }

  // Binds `values` (int64 or NULL as INT64_MIN), then `text` after them when given, and steps.
  Status Row(Stmt& st, std::initializer_list<int64_t> values, std::string_view text = {}, bool with_text = false) {
    int i = 1;
    for (int64_t v : values) {
      if (v == INT64_MIN) {
        sqlite3_bind_null(st.s, i++);
      } else {
        sqlite3_bind_int64(st.s, i++, v);
      }
    }
    if (with_text) sqlite3_bind_text(st.s, i, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
    if (sqlite3_step(st.s) != SQLITE_DONE) return DataLoss(std::string("writing a row: ") + sqlite3_errmsg(db_.db));
    sqlite3_reset(st.s);
    return OkStatus();
  }

  int64_t StringId(std::string_view s) {
    auto [it, fresh] = ids_.try_emplace(std::string(s), static_cast<int64_t>(ids_.size()));
    return it->second;
  }

  Status WriteStrings() {
    Stmt st;
    TS_RETURN_IF_ERROR(Prepare(st, "INSERT INTO StringIds VALUES (?1, ?2)"));
    for (const auto& [s, id] : ids_) {
      sqlite3_bind_int64(st.s, 1, id);
      sqlite3_bind_text(st.s, 2, s.data(), static_cast<int>(s.size()), SQLITE_STATIC);
      if (sqlite3_step(st.s) != SQLITE_DONE) return DataLoss(std::string("writing StringIds: ") + sqlite3_errmsg(db_.db));
      sqlite3_reset(st.s);
    }
    return OkStatus();
  }

  StatusOr<NsysExportStats> Write() {
    Stmt kernel, runtime, memcpy, memset, sync, nvtx;
    TS_RETURN_IF_ERROR(Prepare(kernel, "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
                                       "?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25)"));
    TS_RETURN_IF_ERROR(Prepare(runtime, "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"));
    TS_RETURN_IF_ERROR(Prepare(memcpy, "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
                                       "?9, ?10, ?11, ?12)"));
    TS_RETURN_IF_ERROR(Prepare(memset, "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
                                       "?9, ?10, ?11)"));
    TS_RETURN_IF_ERROR(Prepare(sync, "INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
                                     "?7, ?8, ?9)"));
    TS_RETURN_IF_ERROR(Prepare(nvtx, "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) "
                                     "VALUES (?1, ?2, 59, ?3, ?4)"));
    // The host process of each correlation: a device event's globalPid.
    std::unordered_map<int64_t, int32_t> process;
    for (const Event& e : t_.events) {
      if (e.kind == EventKind::kRuntime && e.correlation != 0) process.emplace(e.correlation, e.pid);
    }
    const auto pid_of = [&](const Event& e) -> int64_t {
      auto it = process.find(e.correlation);
      return GlobalId(it != process.end() ? it->second : t_.host_pid, 0);
    };
    const int64_t null = INT64_MIN;
    NsysExportStats n;
    for (const Event& e : t_.events) {
      if (e.tid >= 0 && e.tid < (1 << 24)) small_tids_.insert({e.pid, e.tid});
    }
    for (const Event& e : t_.events) {
      const std::string_view name = e.name >= 0 ? t_.strings.Get(e.name) : std::string_view();
      const std::string_view args = e.args >= 0 ? t_.strings.Get(e.args) : std::string_view();
      const int64_t end = e.ts_ns + e.dur_ns;
      const int64_t corr = e.correlation != 0 ? e.correlation : null;
      switch (e.kind) {
        case EventKind::kKernel: {
          const auto grid = Dims(args, "grid"), block = Dims(args, "block");
          const int64_t id = StringId(name), short_id = StringId(ShortName(name));
          const int64_t smem = ArgInt(args, "shared memory", 0);
          devices_.insert(e.pid);
          TS_RETURN_IF_ERROR(Row(kernel, {e.ts_ns, end, e.pid, 0, null, e.tid, corr, pid_of(e), id, short_id, null, null, null,
                                          ArgInt(args, "registers per thread", 0), grid[0], grid[1], grid[2], block[0],
                                          block[1], block[2], ArgInt(args, "static shared memory", smem),
                                          ArgInt(args, "dynamic shared memory", 0), 0, 0, 0}));
          ++n.kernels;
          break;
        }
        case EventKind::kRuntime:
          TS_RETURN_IF_ERROR(Row(runtime, {e.ts_ns, end, 0, Thread(e.pid, e.tid, &n), corr, StringId(name), 0, null}));
          ++n.runtime;
          break;
        case EventKind::kMemcpy: {
          auto [src, dst] = Kinds(name);
          if (src < 0) src = MemKind(ArgText(args, "src kind"));
          if (dst < 0) dst = MemKind(ArgText(args, "dst kind"));
          TS_RETURN_IF_ERROR(Row(memcpy, {e.ts_ns, end, e.pid, 0, e.tid, corr, pid_of(e),
                                          ArgInt(args, "bytes", static_cast<int64_t>(e.v0)),
                                          CopyKind(name), src < 0 ? null : src, dst < 0 ? null : dst},
                                 name, true));
          ++n.memcpys;
          break;
        }
        case EventKind::kMemset: {
          const int64_t kind = Kinds(name).first;
          TS_RETURN_IF_ERROR(Row(memset, {e.ts_ns, end, e.pid, 0, e.tid, corr, pid_of(e), ArgInt(args, "value", 0),
                                          ArgInt(args, "bytes", static_cast<int64_t>(e.v0)), kind < 0 ? null : kind},
                                 name, true));
          ++n.memsets;
          break;
        }
        case EventKind::kSync:
          TS_RETURN_IF_ERROR(Row(sync, {e.ts_ns, end, e.pid, 0, e.tid, corr, pid_of(e), SyncType(name), 0}));
          ++n.syncs;
          break;
        case EventKind::kAnnotation:
          sqlite3_bind_int64(nvtx.s, 1, e.ts_ns);
          sqlite3_bind_int64(nvtx.s, 2, end);
          sqlite3_bind_text(nvtx.s, 3, name.data(), static_cast<int>(name.size()), SQLITE_STATIC);
          sqlite3_bind_int64(nvtx.s, 4, Thread(e.pid, e.tid, &n));
          if (sqlite3_step(nvtx.s) != SQLITE_DONE) return DataLoss(std::string("writing NVTX_EVENTS: ") + sqlite3_errmsg(db_.db));
          sqlite3_reset(nvtx.s);
          ++n.ranges;
          break;
        default:
          ++n.left_out;
      }
    }
    TS_RETURN_IF_ERROR(WriteStrings());
    {
      Stmt meta;
      TS_RETURN_IF_ERROR(Prepare(meta, "INSERT INTO META_DATA_EXPORT VALUES (?1, ?2)"));
      const std::vector<std::pair<std::string, std::string>> rows = {
          {"TIERSCOPE_RANK", std::to_string(t_.rank)},
          {"TIERSCOPE_WORLD_SIZE", std::to_string(t_.world_size)},
          {"TIERSCOPE_BACKEND", t_.collective_backend},
          {"TIERSCOPE_RUNTIME", t_.runtime},
          {"TIERSCOPE_SOURCE", t_.source}};
      for (const auto& [k, v] : rows) {
        sqlite3_bind_text(meta.s, 1, k.data(), static_cast<int>(k.size()), SQLITE_STATIC);
        sqlite3_bind_text(meta.s, 2, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
        if (sqlite3_step(meta.s) != SQLITE_DONE) return DataLoss(std::string("writing META_DATA_EXPORT: ") + sqlite3_errmsg(db_.db));
        sqlite3_reset(meta.s);
      }
    }
    if (!t_.device_name.empty()) {  // one row per device the kernels ran on (the trace names one)
      Stmt gpu;
      TS_RETURN_IF_ERROR(Prepare(gpu, "INSERT INTO TARGET_INFO_GPU (vmId, id, name, totalMemory, smCount) "
                                      "VALUES (0, ?1, ?2, ?3, ?4)"));
      if (devices_.empty()) devices_.insert(0);
      for (int32_t d : devices_) {
        sqlite3_bind_int64(gpu.s, 1, d);
        sqlite3_bind_text(gpu.s, 2, t_.device_name.data(), static_cast<int>(t_.device_name.size()), SQLITE_STATIC);
        sqlite3_bind_int64(gpu.s, 3, t_.device_memory);
        sqlite3_bind_int64(gpu.s, 4, t_.device_units);
        if (sqlite3_step(gpu.s) != SQLITE_DONE) return DataLoss(std::string("writing TARGET_INFO_GPU: ") + sqlite3_errmsg(db_.db));
        sqlite3_reset(gpu.s);
      }
    }
    return n;
  }

 private:
  // A host thread's id in globalTid's 24 bits: its own when it fits, else a free one (Kineto
  // writes pthread ids, often negative or above 2^24); distinct threads stay distinct.
  int64_t Thread(int32_t pid, int32_t tid, NsysExportStats* n) {
    if (tid >= 0 && tid < (1 << 24)) return GlobalId(pid, tid);
    auto [it, fresh] = remapped_.try_emplace({pid, tid}, 0);
    if (fresh) {
      while (small_tids_.count({pid, next_tid_}) != 0) --next_tid_;
      it->second = next_tid_--;
      ++n->threads_renumbered;
    }
    return GlobalId(pid, it->second);
  }

  const Trace& t_;
  Db& db_;
  std::unordered_map<std::string, int64_t> ids_;
  std::set<int32_t> devices_;
  std::map<std::pair<int32_t, int32_t>, int32_t> remapped_;
  std::set<std::pair<int32_t, int32_t>> small_tids_;
  int32_t next_tid_ = (1 << 24) - 1;
};

}  // namespace

StatusOr<NsysExportStats> ExportNsysSqlite(const Trace& trace, const std::string& out) {
  const std::string tmp = out + ".tmp";
  std::error_code ec;
  std::filesystem::remove(tmp, ec);
  Db db;
  if (sqlite3_open_v2(tmp.c_str(), &db.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
    return FailedPrecondition(out + ": cannot create: " + (db.db ? sqlite3_errmsg(db.db) : "out of memory"));
  }
  const auto fail = [&](const Status& s) {
    sqlite3_close(db.db);
    db.db = nullptr;
    std::filesystem::remove(tmp, ec);
    return Status(s.code(), out + ": " + s.message());
  };
  Status s = db.Exec("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; BEGIN;", "starting");
  if (s.ok()) s = db.Exec(kSchema, "creating the schema");
  StatusOr<NsysExportStats> n = s.ok() ? Writer(trace, db).Write() : StatusOr<NsysExportStats>(s);
  if (!n.ok()) return fail(n.status());
  s = db.Exec(kIndexes, "creating the indexes");
  if (s.ok()) s = db.Exec("COMMIT;", "committing");
  if (!s.ok()) return fail(s);
  sqlite3_close(db.db);
  db.db = nullptr;
  std::filesystem::rename(tmp, out, ec);
  if (ec) {
    const std::string why = ec.message();
    std::filesystem::remove(tmp, ec);
    return FailedPrecondition(out + ": cannot write: " + why);
  }
  return n;
}

}  // namespace tierscope
