// Trace -> nsys SQLite schema (see nsys_export.h).
#include "trace/nsys_export.h"

#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/paths.h"
#include "trace/args.h"

namespace tierscope {
namespace {

// The tables and columns of `nsys export --type sqlite` (names, declared types, NOT NULL and
// order as nsys 2022.2's schema 2.9.1 writes them; greenContextId as nsys 2024 adds it),
// plus tierscopeName. Columns a Kineto trace does not record are NULL, as nsys leaves them
// when CUPTI does not report them.
constexpr char kSchema[] = R"sql(
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE ENUM_NSYS_EVENT_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT, description TEXT);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT,
  isDiscrete INTEGER, l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER, clockRate INTEGER,
  smCount INTEGER, pwGpuId INTEGER, uuid TEXT, luid INTEGER, chipName TEXT, cuDevice INTEGER,
  ctxswDevPath TEXT, ctrlDevPath TEXT, revision INTEGER, nodeMask INTEGER, constantMemory INTEGER,
  maxIPC INTEGER, maxRegistersPerBlock INTEGER, maxShmemPerBlock INTEGER, maxShmemPerBlockOptin INTEGER,
  maxShmemPerSm INTEGER, maxRegistersPerSm INTEGER, threadsPerWarp INTEGER, asyncEngines INTEGER,
  maxWarpsPerSm INTEGER, maxBlocksPerSm INTEGER, maxThreadsPerBlock INTEGER, maxBlockDimX INTEGER,
  maxBlockDimY INTEGER, maxBlockDimZ INTEGER, maxGridDimX INTEGER, maxGridDimY INTEGER, maxGridDimZ INTEGER,
  computeMajor INTEGER, computeMinor INTEGER, smMajor INTEGER, smMinor INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,
  streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER,
  launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL,
  gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
  blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
  staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL,
  localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL,
  sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER, tierscopeArgs TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
  eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,
  returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL,
  deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER, srcContextId INTEGER,
  dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER, graphNodeId INTEGER,
  virtualAddress INTEGER, tierscopeName TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL, bytes INTEGER NOT NULL,
  graphNodeId INTEGER, memKind INTEGER, tierscopeName TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER, syncType INTEGER NOT NULL, eventId INTEGER NOT NULL);
CREATE TABLE EXPORT_META_DATA (name TEXT NOT NULL, value TEXT);
INSERT INTO EXPORT_META_DATA VALUES ('EXPORT_PROGRAM', 'tierscope export');
CREATE VIEW META_DATA_EXPORT AS SELECT name, value FROM EXPORT_META_DATA;
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
  rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,
  endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER, int64Value INTEGER,
  doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, floatValue REAL, jsonTextId INTEGER,
  jsonText TEXT);
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

// "INSERT INTO table (a, b) VALUES (?1, ?2)": the columns not named are NULL.
std::string InsertSql(std::string_view table, std::initializer_list<std::string_view> cols) {
  std::string sql = "INSERT INTO " + std::string(table) + " (";
  std::string values;
  int i = 0;
  for (std::string_view c : cols) {
    if (i > 0) {
      sql += ", ";
      values += ", ";
    }
    sql += c;
    values += "?" + std::to_string(++i);
  }
  return sql + ") VALUES (" + values + ")";
}

// The host side of a correlation id: the process that made the API call, and when.
struct Launch {
  int32_t pid = 0;
  int64_t ts_ns = 0;
};

class Writer {
 public:
  Writer(const Trace& t, Db& db) : t_(t), db_(db) {}

  Status Prepare(Stmt& st, const std::string& sql) {
    if (sqlite3_prepare_v2(db_.db, sql.c_str(), -1, &st.s, nullptr) != SQLITE_OK) {
      return Internal(std::string("preparing an insert: ") + sqlite3_errmsg(db_.db));
    }
    return OkStatus();
  }

  // Binds `values` (int64 or NULL as INT64_MIN), then `text` after them when given, and steps.
  Status Row(Stmt& st, std::initializer_list<int64_t> values, std::string_view text = {}, bool with_text = false) {
    int i = 1;
    for (int64_t v : values) {
      if (v == kNull) {
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
    TS_RETURN_IF_ERROR(Prepare(kernel, InsertSql("CUPTI_ACTIVITY_KIND_KERNEL",
                                                 {"start", "end", "deviceId", "contextId", "streamId", "correlationId",
                                                  "globalPid", "demangledName", "shortName", "registersPerThread",
                                                  "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ",
                                                  "staticSharedMemory", "dynamicSharedMemory", "localMemoryPerThread",
                                                  "localMemoryTotal", "gridId", "graphNodeId", "tierscopeArgs"})));
    TS_RETURN_IF_ERROR(Prepare(runtime, InsertSql("CUPTI_ACTIVITY_KIND_RUNTIME",
                                                  {"start", "end", "eventClass", "globalTid", "correlationId",
                                                   "nameId", "returnValue"})));
    TS_RETURN_IF_ERROR(Prepare(memcpy, InsertSql("CUPTI_ACTIVITY_KIND_MEMCPY",
                                                 {"start", "end", "deviceId", "contextId", "streamId", "correlationId",
                                                  "globalPid", "bytes", "copyKind", "srcKind", "dstKind",
                                                  "srcDeviceId", "srcContextId", "dstDeviceId", "dstContextId",
                                                  "graphNodeId", "tierscopeName"})));
    TS_RETURN_IF_ERROR(Prepare(memset, InsertSql("CUPTI_ACTIVITY_KIND_MEMSET",
                                                 {"start", "end", "deviceId", "contextId", "streamId", "correlationId",
                                                  "globalPid", "value", "bytes", "graphNodeId", "memKind",
                                                  "tierscopeName"})));
    TS_RETURN_IF_ERROR(Prepare(sync, InsertSql("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
                                               {"start", "end", "deviceId", "contextId", "streamId", "correlationId",
                                                "globalPid", "syncType", "eventId"})));
    TS_RETURN_IF_ERROR(Prepare(nvtx, "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) "
                                     "VALUES (?1, ?2, 59, ?3, ?4)"));
    // The host side of each correlation: a device event's globalPid, a kernel's launch time.
    std::unordered_map<int64_t, Launch> launches;
    for (const Event& e : t_.events) {
      if (e.kind == EventKind::kRuntime && e.correlation != 0) launches.emplace(e.correlation, Launch{e.pid, e.ts_ns});
    }
    const auto pid_of = [&](const Event& e) -> int64_t {
      auto it = launches.find(e.correlation);
      return GlobalId(it != launches.end() ? it->second.pid : t_.host_pid, 0);
    };
    const std::vector<int64_t> grid_ids = GridIds(launches);
    NsysExportStats n;
    for (const Event& e : t_.events) {
      if (e.tid >= 0 && e.tid < (1 << 24)) small_tids_.insert({e.pid, e.tid});
    }
    for (const Event& e : t_.events) {
      const std::string_view name = e.name >= 0 ? t_.strings.Get(e.name) : std::string_view();
      const std::string_view args = e.args >= 0 ? t_.strings.Get(e.args) : std::string_view();
      const int64_t end = e.ts_ns + e.dur_ns;
      const int64_t corr = e.correlation != 0 ? e.correlation : kNull;
      switch (e.kind) {
        case EventKind::kKernel: {
          const auto grid = Dims(args, "grid"), block = Dims(args, "block");
          const int64_t id = StringId(name), short_id = StringId(ShortName(name));
          const int64_t smem = ArgInt(args, "shared memory", 0);
          devices_.insert(e.pid);
          TS_RETURN_IF_ERROR(Row(kernel, {e.ts_ns, end, e.pid, ContextId(args), e.tid, corr, pid_of(e), id, short_id,
                                          ArgInt(args, "registers per thread", 0), grid[0], grid[1], grid[2], block[0],
                                          block[1], block[2], ArgInt(args, "static shared memory", smem),
                                          ArgInt(args, "dynamic shared memory", 0), 0, 0,
                                          grid_ids[static_cast<size_t>(n.kernels)], GraphNodeId(args)},
                                 CollectiveArgs(args), true));
          ++n.kernels;
          break;
        }
        case EventKind::kRuntime:
          TS_RETURN_IF_ERROR(Row(runtime, {e.ts_ns, end, 0, Thread(e.pid, e.tid, &n), corr, StringId(name), 0}));
          ++n.runtime;
          break;
        case EventKind::kMemcpy: {
          auto [src, dst] = Kinds(name);
          if (src < 0) src = MemKind(ArgText(args, "src kind"));
          if (dst < 0) dst = MemKind(ArgText(args, "dst kind"));
          // Peer-to-peer copies name both ends (Kineto's fromDevice / toDevice); nsys leaves them
          // NULL for the others, which CUPTI reports without.
          TS_RETURN_IF_ERROR(Row(memcpy, {e.ts_ns, end, e.pid, ContextId(args), e.tid, corr, pid_of(e),
                                          ArgInt(args, "bytes", static_cast<int64_t>(e.v0)), CopyKind(name),
                                          src < 0 ? kNull : src, dst < 0 ? kNull : dst, ArgId(args, "fromDevice"),
                                          ArgId(args, "fromContext"), ArgId(args, "toDevice"),
                                          ArgId(args, "toContext"), GraphNodeId(args)},
                                 name, true));
          ++n.memcpys;
          break;
        }
        case EventKind::kMemset: {
          const int64_t kind = Kinds(name).first;
          TS_RETURN_IF_ERROR(Row(memset, {e.ts_ns, end, e.pid, ContextId(args), e.tid, corr, pid_of(e),
                                          ArgInt(args, "value", 0), ArgInt(args, "bytes", static_cast<int64_t>(e.v0)),
                                          GraphNodeId(args), kind < 0 ? kNull : kind},
                                 name, true));
          ++n.memsets;
          break;
        }
        case EventKind::kSync: {
          const int64_t event = ArgId(args, "wait_on_cuda_event_id");  // event syncs only
          TS_RETURN_IF_ERROR(Row(sync, {e.ts_ns, end, e.pid, ContextId(args), e.tid, corr, pid_of(e), SyncType(name),
                                        event == kNull ? 0 : event}));
          ++n.syncs;
          break;
        }
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
    TS_RETURN_IF_ERROR(WriteMetaData());
    TS_RETURN_IF_ERROR(WriteGpus());
    return n;
  }

 private:
  static constexpr int64_t kNull = INT64_MIN;

  // Member `key` as an exact integer (ids are never rounded through a double), or kNull when
  // absent or not an integer.
  static int64_t ArgId(std::string_view args, std::string_view key) {
    const std::string_view v = ArgText(args, key);
    int64_t x = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    return !v.empty() && ec == std::errc() && end == v.data() + v.size() ? x : kNull;
  }
  // Kineto's "context" ("inContext" for a peer-to-peer copy); 0 when the trace has neither.
  static int64_t ContextId(std::string_view args) {
    int64_t c = ArgId(args, "context");
    if (c == kNull) c = ArgId(args, "inContext");
    return c == kNull ? 0 : c;
  }
  // Kineto's "graph node id" (CUDA 12 builds); 0 there, like no member, is no graph launch:
  // NULL, as nsys writes it.
  static int64_t GraphNodeId(std::string_view args) {
    const int64_t id = ArgId(args, "graph node id");
    return id == 0 ? kNull : id;
  }
  // What PyTorch records on a collective's kernel and nsys has no column for (its name,
  // sizes, group and, for a send or recv, the peer), as the args it came in; "" for other
  // kernels. tierscope reads it back (tierscopeArgs), so a job's ranks match as before.
  static std::string CollectiveArgs(std::string_view args) {
    if (ArgValue(args, "Collective name").empty()) return {};
    std::string out;
    for (std::string_view key : kCollectiveArgKeys) {
      const std::string_view v = ArgValue(args, key);
      if (v.empty()) continue;
      if (!out.empty()) out += ", ";
      out += "\"" + std::string(key) + "\": " + std::string(v);
    }
    return out;
  }

  // nsys's gridId, per kernel in event order: each launch its own, numbered from 1 in launch
  // order (the launching call's start, else the kernel's; then the kernel's start), the
  // order in which CUPTI hands grid ids out.
  std::vector<int64_t> GridIds(const std::unordered_map<int64_t, Launch>& launches) const {
    struct Key {
      int64_t launch_ns, start_ns;
      size_t ordinal;
    };
    std::vector<Key> keys;
    for (const Event& e : t_.events) {
      if (e.kind != EventKind::kKernel) continue;
      const auto it = e.correlation != 0 ? launches.find(e.correlation) : launches.end();
      keys.push_back({it != launches.end() ? it->second.ts_ns : e.ts_ns, e.ts_ns, keys.size()});
    }
    std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
      return std::tie(a.launch_ns, a.start_ns, a.ordinal) < std::tie(b.launch_ns, b.start_ns, b.ordinal);
    });
    std::vector<int64_t> ids(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) ids[keys[i].ordinal] = static_cast<int64_t>(i) + 1;
    return ids;
  }

  // EXPORT_META_DATA, nsys's name / value rows (nsys 2022's table name; META_DATA_EXPORT,
  // nsys 2024's, is a view of it): what the importer reads back of the trace.
  Status WriteMetaData() {
    Stmt meta;
    TS_RETURN_IF_ERROR(Prepare(meta, "INSERT INTO EXPORT_META_DATA VALUES (?1, ?2)"));
    const std::vector<std::pair<std::string, std::string>> rows = {
        {"TIERSCOPE_RANK", std::to_string(t_.rank)},
        {"TIERSCOPE_WORLD_SIZE", std::to_string(t_.world_size)},
        {"TIERSCOPE_BACKEND", t_.collective_backend},
        {"TIERSCOPE_RUNTIME", t_.runtime},
        {"TIERSCOPE_SOURCE", t_.source}};
    for (const auto& [k, v] : rows) {
      sqlite3_bind_text(meta.s, 1, k.data(), static_cast<int>(k.size()), SQLITE_STATIC);
      sqlite3_bind_text(meta.s, 2, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
      if (sqlite3_step(meta.s) != SQLITE_DONE) return DataLoss(std::string("writing EXPORT_META_DATA: ") + sqlite3_errmsg(db_.db));
      sqlite3_reset(meta.s);
    }
    return OkStatus();
  }

  // One TARGET_INFO_GPU row per device the kernels ran on, when the trace names its device:
  // the name, memory and SM count the trace has; the device's other properties are NULL.
  Status WriteGpus() {
    if (t_.device_name.empty()) return OkStatus();
    Stmt gpu;
    TS_RETURN_IF_ERROR(Prepare(gpu, "INSERT INTO TARGET_INFO_GPU (vmId, id, name, totalMemory, smCount, cuDevice) "
                                    "VALUES (0, ?1, ?2, ?3, ?4, ?1)"));
    if (devices_.empty()) devices_.insert(0);
    for (int32_t d : devices_) {
      sqlite3_bind_int64(gpu.s, 1, d);
      sqlite3_bind_text(gpu.s, 2, t_.device_name.data(), static_cast<int>(t_.device_name.size()), SQLITE_STATIC);
      sqlite3_bind_int64(gpu.s, 3, t_.device_memory);
      sqlite3_bind_int64(gpu.s, 4, t_.device_units);
      if (sqlite3_step(gpu.s) != SQLITE_DONE) return DataLoss(std::string("writing TARGET_INFO_GPU: ") + sqlite3_errmsg(db_.db));
      sqlite3_reset(gpu.s);
    }
    return OkStatus();
  }

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
  TS_RETURN_IF_ERROR(CheckReplaceable(out));
  TS_RETURN_IF_ERROR(RefuseInputAsOutput(out, {trace.source}));
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

Status SetExportedRank(const std::string& path, int rank) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr);
  const std::unique_ptr<sqlite3, int (*)(sqlite3*)> db(raw, sqlite3_close);
  if (rc != SQLITE_OK) return FailedPrecondition(path + ": cannot open: " + (raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  const std::string sql =
      "UPDATE EXPORT_META_DATA SET value = '" + std::to_string(rank) + "' WHERE name = 'TIERSCOPE_RANK'";
  char* err = nullptr;
  if (sqlite3_exec(db.get(), sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string why = err != nullptr ? err : "unknown error";
    sqlite3_free(err);
    return DataLoss(path + ": writing its rank: " + why);
  }
  return OkStatus();
}

}  // namespace tierscope
