// ImportNsysSqlite on SQLite files built here with the `nsys export --type sqlite`
// schema: kernels joined to their launches, names through StringIds, memcpy/memset/sync
// placement on device streams, NVTX ranges, optional tables, NULL rows and bad files.
#include "trace/nsys_import.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "test_util.h"
#include "trace/nsys_schema.h"

namespace tierscope {
namespace {

using ::tierscope::testing::Contains;
using ::tierscope::testing::ReadBytes;
using ::tierscope::testing::TempDir;
using ::tierscope::testing::WriteBytes;
using ::tierscope::testing::kNsysSchema;

// Host process 4242, thread 4243, with a non-zero high byte as nsys writes it.
constexpr int64_t kGlobalPid = (int64_t{1} << 56) | (int64_t{4242} << 24);
constexpr int64_t kGlobalTid = kGlobalPid | 4243;

void MakeDb(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  const std::string msg = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << msg;
}

// kNsysSchema: column subsets of the documented tables (tests/trace/nsys_schema.h).

std::string FullExportSql() {
  const std::string tid = std::to_string(kGlobalTid), pid = std::to_string(kGlobalPid);
  return std::string(kNsysSchema) + R"sql(
INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'),
  (2, 'void gemm<float, 128>(const float *, float *, int)'), (3, 'gemm'),
  (4, 'cudaMemcpyAsync_v3020'), (5, 'cudaStreamSynchronize_v3020'),
  (6, 'relu_kernel(float *, int)'), (7, 'relu_kernel'), (8, 'train step'), (9, 'cuMemAlloc_v2'),
  (10, 'cudaMemsetAsync_v3020');
INSERT INTO TARGET_INFO_GPU VALUES (0, 0, 'NVIDIA H200', '0000:1b:00.0', 150754820096, 132, 9, 0);
INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (0, 0, 4242, 'GPU-1234', 132);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
  (1000, 1500, 1, )sql" +
         tid + R"sql(, 10, 1, 0, NULL),
  (2000, 2400, 1, )sql" +
         tid + R"sql(, 11, 1, 0, NULL),
  (3000, 3200, 1, )sql" +
         tid + R"sql(, 12, 4, 0, NULL),
  (3250, 3290, 1, )sql" +
         tid + R"sql(, 15, 10, 0, NULL),
  (5000, 9000, 1, )sql" +
         tid + R"sql(, 13, 5, 0, NULL),
  (9100, 9200, 2, )sql" +
         tid + R"sql(, 14, 9, 2, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
  (1600, 2600, 0, 1, NULL, 7, 10, )sql" +
         pid + R"sql(, 2, 3, NULL, 1, 0, 64, 128, 1, 1, 256, 1, 1,
   1024, 2048, 0, 0, 1),
  (2700, 2900, 0, 1, NULL, 7, 11, )sql" +
         pid + R"sql(, 6, 7, NULL, 1, 0, 16, 1024, 2, 1, 128, 1, 1,
   0, 0, 0, 0, 2);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES
  (3300, 4300, 0, 1, 7, 12, )sql" +
         pid + R"sql(, 1048576, 1, 0, 2);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES
  (4400, 4500, 0, 1, 7, 15, )sql" +
         pid + R"sql(, 0, 4096, 2);
INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES
  (5100, 8900, 0, 1, 7, 13, )sql" +
         pid + R"sql(, 3, 0);
INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, textId) VALUES
  (500, 9500, 59, 'forward', )sql" +
         tid + R"sql(, NULL),
  (900, 4000, 60, NULL, )sql" +
         tid + R"sql(, 8),
  (950, NULL, 34, 'a mark', )sql" +
         tid + R"sql(, NULL);
)sql";
}

std::string Name(const Trace& t, const Event& e) { return std::string(t.strings.Get(e.name)); }
std::string Args(const Trace& t, const Event& e) {
  return e.args >= 0 ? std::string(t.strings.Get(e.args)) : std::string();
}

std::vector<const Event*> OfKind(const Trace& t, EventKind kind) {
  std::vector<const Event*> out;
  for (const Event& e : t.events) {
    if (e.kind == kind) out.push_back(&e);
  }
  return out;
}

TEST(NsysImportTest, ImportsAFullExport) {
  TempDir dir;
  const std::string path = dir.file("report.sqlite");
  MakeDb(path, FullExportSql());
  auto trace = ImportNsysSqlite(path);
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  const Trace& t = *trace;

  EXPECT_EQ(t.source, path);
  EXPECT_EQ(t.format, "nsys-sqlite");
  EXPECT_EQ(t.runtime, "cuda");
  EXPECT_EQ(t.host_pid, 4242);
  EXPECT_EQ(t.device_name, "NVIDIA H200");
  EXPECT_EQ(t.device_units, 132);
  EXPECT_EQ(t.device_memory, 150754820096);
  EXPECT_NE(
      std::find(t.thread_names.begin(), t.thread_names.end(), std::pair<int32_t, std::string>(7, "stream 7")),
      t.thread_names.end());
  EXPECT_TRUE(std::is_sorted(t.events.begin(), t.events.end(),
                             [](const Event& a, const Event& b) { return a.ts_ns < b.ts_ns; }));

  // 6 runtime + 2 kernels + memcpy + memset + sync + 2 NVTX ranges; the mark is metadata.
  EXPECT_EQ(t.events.size(), 13u);
  EXPECT_EQ(t.stats.events_read, 14);
  EXPECT_EQ(t.stats.events_kept, 13);
  EXPECT_EQ(t.stats.metadata, 1);
  EXPECT_EQ(t.stats.malformed, 0);
  EXPECT_GT(t.stats.bytes, 0);
  EXPECT_EQ(t.stats.by_category.at("CUPTI_ACTIVITY_KIND_KERNEL"), 2);
  EXPECT_EQ(t.stats.by_category.at("CUPTI_ACTIVITY_KIND_RUNTIME"), 6);
  EXPECT_EQ(t.stats.by_category.at("NVTX_EVENTS"), 3);

  const auto kernels = OfKind(t, EventKind::kKernel);
  ASSERT_EQ(kernels.size(), 2u);
  const Event& gemm = *kernels[0];
  EXPECT_EQ(Name(t, gemm), "void gemm<float, 128>(const float *, float *, int)");
  EXPECT_EQ(gemm.ts_ns, 1600);
  EXPECT_EQ(gemm.dur_ns, 1000);
  EXPECT_EQ(gemm.pid, 0);  // deviceId
  EXPECT_EQ(gemm.tid, 7);  // streamId
  EXPECT_EQ(gemm.correlation, 10);
  EXPECT_EQ(t.strings.Get(gemm.cat), "CUPTI_ACTIVITY_KIND_KERNEL");
  const std::string args = Args(t, gemm);
  EXPECT_TRUE(Contains(args, "\"grid\": [128, 1, 1]")) << args;
  EXPECT_TRUE(Contains(args, "\"block\": [256, 1, 1]")) << args;
  EXPECT_TRUE(Contains(args, "\"registers per thread\": 64")) << args;
  EXPECT_TRUE(Contains(args, "\"shared memory\": 3072")) << args;
  EXPECT_TRUE(Contains(args, "\"stream\": 7")) << args;
  EXPECT_TRUE(Contains(args, "\"device\": 0")) << args;
  EXPECT_TRUE(Contains(args, "\"pid\": 4242")) << args;
  EXPECT_EQ(Name(t, *kernels[1]), "relu_kernel(float *, int)");
  EXPECT_TRUE(Contains(Args(t, *kernels[1]), "\"grid\": [1024, 2, 1]"));

  // Every device event finds the runtime call that issued it.
  std::map<int64_t, const Event*> runtime_by_corr;
  for (const Event* e : OfKind(t, EventKind::kRuntime)) runtime_by_corr[e->correlation] = e;
  const std::map<int64_t, std::string> expected_api = {{10, "cudaLaunchKernel"},
                                                       {11, "cudaLaunchKernel"},
                                                       {12, "cudaMemcpyAsync"},
                                                       {13, "cudaStreamSynchronize"},
                                                       {15, "cudaMemsetAsync"}};
  int device_events = 0;
  for (const Event& e : t.events) {
    if (e.kind != EventKind::kKernel && e.kind != EventKind::kMemcpy && e.kind != EventKind::kMemset &&
        e.kind != EventKind::kSync) {
      continue;
    }
    ++device_events;
    ASSERT_TRUE(runtime_by_corr.count(e.correlation)) << Name(t, e);
    EXPECT_EQ(Name(t, *runtime_by_corr[e.correlation]), expected_api.at(e.correlation));
    EXPECT_LT(runtime_by_corr[e.correlation]->ts_ns, e.ts_ns);
    EXPECT_EQ(e.pid, 0);
    EXPECT_EQ(e.tid, 7);
  }
  EXPECT_EQ(device_events, 5);

  const Event& launch = *runtime_by_corr[10];
  EXPECT_EQ(launch.pid, 4242);
  EXPECT_EQ(launch.tid, 4243);
  EXPECT_EQ(launch.dur_ns, 500);
  EXPECT_TRUE(Contains(Args(t, launch), "\"api\": \"cudaLaunchKernel_v7000\""));
  // Short "_v2" suffixes are part of driver symbols and stay; errors are kept in args.
  EXPECT_EQ(Name(t, *runtime_by_corr[14]), "cuMemAlloc_v2");
  EXPECT_TRUE(Contains(Args(t, *runtime_by_corr[14]), "\"return value\": 2"));

  const auto memcpys = OfKind(t, EventKind::kMemcpy);
  ASSERT_EQ(memcpys.size(), 1u);
  EXPECT_EQ(Name(t, *memcpys[0]), "Memcpy HtoD (Pageable -> Device)");  // as Kineto names it
  EXPECT_EQ(memcpys[0]->v0, 1048576.0);
  EXPECT_EQ(memcpys[0]->dur_ns, 1000);
  EXPECT_TRUE(Contains(Args(t, *memcpys[0]), "\"src kind\": \"Pageable\", \"dst kind\": \"Device\""));

  const auto memsets = OfKind(t, EventKind::kMemset);
  ASSERT_EQ(memsets.size(), 1u);
  EXPECT_EQ(Name(t, *memsets[0]), "Memset (Device)");
  EXPECT_EQ(memsets[0]->v0, 4096.0);

  const auto syncs = OfKind(t, EventKind::kSync);
  ASSERT_EQ(syncs.size(), 1u);
  EXPECT_EQ(Name(t, *syncs[0]), "Stream Sync");
  EXPECT_EQ(syncs[0]->dur_ns, 3800);

  const auto ranges = OfKind(t, EventKind::kAnnotation);
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(Name(t, *ranges[0]), "forward");
  EXPECT_EQ(ranges[0]->ts_ns, 500);
  EXPECT_EQ(ranges[0]->dur_ns, 9000);
  EXPECT_EQ(ranges[0]->pid, 4242);
  EXPECT_EQ(ranges[0]->tid, 4243);
  EXPECT_EQ(Name(t, *ranges[1]), "train step");  // textId through StringIds
}

TEST(NsysImportTest, OptionalTablesAndColumnsMayBeMissing) {
  TempDir dir;
  // Kernels only, from an older schema without register or shared-memory columns, and
  // no StringIds row for the demangled name: the short name stands in.
  const std::string kernels_only = dir.file("kernels.sqlite");
  MakeDb(kernels_only, R"sql(
    CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
      deviceId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER,
      demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL,
      gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ INTEGER);
    INSERT INTO StringIds VALUES (3, 'softmax');
    INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (100, 300, 1, 13, 5, 99, 3, 4, 1, 1, 32, 1, 1);
  )sql");
  auto t = ImportNsysSqlite(kernels_only);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->events.size(), 1u);
  const Event& k = t->events[0];
  EXPECT_EQ(k.kind, EventKind::kKernel);
  EXPECT_EQ(Name(*t, k), "softmax");
  EXPECT_EQ(k.pid, 1);
  EXPECT_EQ(k.tid, 13);
  EXPECT_EQ(k.correlation, 5);
  EXPECT_TRUE(Contains(Args(*t, k), "\"grid\": [4, 1, 1], \"block\": [32, 1, 1]")) << Args(*t, k);
  EXPECT_FALSE(Contains(Args(*t, k), "registers"));
  EXPECT_EQ(t->device_name, "CUDA device 1");
  EXPECT_EQ(t->stats.malformed, 0);

  // Runtime only (e.g. a capture where no kernel ran).
  const std::string runtime_only = dir.file("runtime.sqlite");
  MakeDb(runtime_only, R"sql(
    CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
      eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,
      returnValue INTEGER NOT NULL, callchainId INTEGER);
    INSERT INTO StringIds VALUES (1, 'cudaGetDeviceCount_v3020');
    INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (10, 20, 1, 4294967297, 1, 1, 0, NULL);
  )sql");
  t = ImportNsysSqlite(runtime_only);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->events.size(), 1u);
  EXPECT_EQ(Name(*t, t->events[0]), "cudaGetDeviceCount");
  EXPECT_EQ(t->events[0].pid, 256);  // 4294967297 = 256 << 24 | 1
  EXPECT_EQ(t->events[0].tid, 1);
  EXPECT_EQ(t->host_pid, 256);
}

TEST(NsysImportTest, CorrelationsStayWithinTheirProcess) {
  // Two processes (pids 100 and 200) whose CUPTI correlation ids both start at 1.
  TempDir dir;
  const std::string path = dir.file("two.sqlite");
  MakeDb(path, R"sql(
    CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
    INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'kernel_a'), (3, 'kernel_b');
    CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, globalTid INTEGER,
      correlationId INTEGER, nameId INTEGER);
    INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (10, 20, 1677721701, 1, 1), (30, 40, 3355443401, 1, 1);
    CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER,
      streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER);
    INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (25, 50, 0, 7, 1, 1677721600, 2),
      (45, 60, 1, 13, 1, 3355443200, 3);
  )sql");  // 1677721600 = 100 << 24, 3355443200 = 200 << 24
  auto t = ImportNsysSqlite(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->events.size(), 4u);
  std::map<int64_t, int32_t> launch_pid;
  for (const Event* e : OfKind(*t, EventKind::kRuntime)) launch_pid[e->correlation] = e->pid;
  ASSERT_EQ(launch_pid.size(), 2u);
  for (const Event* k : OfKind(*t, EventKind::kKernel)) {
    ASSERT_TRUE(launch_pid.count(k->correlation)) << Name(*t, *k);
    EXPECT_EQ(launch_pid[k->correlation], Name(*t, *k) == "kernel_a" ? 100 : 200);
    EXPECT_EQ(k->correlation & 0xFFFFFFFF, 1);
  }
}

TEST(NsysImportTest, NvtxRangeIdsComeFromTheEnumTable) {
  TempDir dir;
  const std::string path = dir.file("nvtx.sqlite");
  MakeDb(path, R"sql(
    CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, globalTid INTEGER,
      correlationId INTEGER, nameId INTEGER);
    CREATE TABLE ENUM_NSYS_EVENT_TYPE (id INTEGER PRIMARY KEY, name TEXT, label TEXT);
    INSERT INTO ENUM_NSYS_EVENT_TYPE VALUES (34, 'NvtxMark', 'NvtxMark'),
      (159, 'NvtxPushPopRange', 'NvtxPushPopRange');
    CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
      text TEXT, globalTid INTEGER, textId INTEGER);
    INSERT INTO NVTX_EVENTS VALUES (0, 100, 159, 'outer', 0, NULL), (10, 20, 34, 'mark', 0, NULL);
  )sql");
  auto t = ImportNsysSqlite(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->events.size(), 1u);
  EXPECT_EQ(Name(*t, t->events[0]), "outer");
  EXPECT_EQ(t->events[0].kind, EventKind::kAnnotation);
  EXPECT_EQ(t->stats.metadata, 1);
}

TEST(NsysImportTest, NullRowsAreCountedAsMalformed) {
  TempDir dir;
  const std::string path = dir.file("nulls.sqlite");
  // No NOT NULL constraints here, so the rows can carry what nsys promises they won't.
  MakeDb(path, R"sql(
    CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
    INSERT INTO StringIds VALUES (1, 'k'), (2, 'cudaLaunchKernel_v7000');
    CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId, correlationId,
      demangledName, shortName);
    INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
      (100, 200, 0, 7, 1, 1, 1),
      (NULL, 200, 0, 7, 2, 1, 1),
      (100, 200, NULL, 7, 3, 1, 1),
      (300, 250, 0, 7, 4, 1, 1),
      ('soon', 400, 0, 7, 5, 1, 1),
      (500, 600, 0, 7, 6, NULL, NULL);
    CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start, end, globalTid, correlationId, nameId);
    INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (50, 90, 0, 1, 2), (60, 70, 0, 2, NULL);
    CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, streamId, bytes, copyKind);
    INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (700, 800, 0, 7, NULL, 1);
    CREATE TABLE NVTX_EVENTS (start, end, eventType, text, globalTid);
    INSERT INTO NVTX_EVENTS VALUES (0, NULL, 59, 'never popped', 0), (0, 10, NULL, 'x', 0);
  )sql");
  auto t = ImportNsysSqlite(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->events.size(), 2u);  // the good kernel and the good launch
  EXPECT_EQ(t->stats.events_read, 11);
  EXPECT_EQ(t->stats.malformed, 9);
  const auto& reasons = t->stats.malformed_reasons;
  EXPECT_EQ(reasons.at("kernel: NULL start"), 1);
  EXPECT_EQ(reasons.at("kernel: NULL deviceId"), 1);
  EXPECT_EQ(reasons.at("kernel: end before start"), 1);
  EXPECT_EQ(reasons.at("kernel: non-integer start"), 1);
  EXPECT_EQ(reasons.at("kernel: no kernel name (demangledName/shortName NULL)"), 1);
  EXPECT_EQ(reasons.at("runtime: NULL nameId"), 1);
  EXPECT_EQ(reasons.at("memcpy: NULL bytes"), 1);
  EXPECT_EQ(reasons.at("nvtx: NULL end (unterminated range)"), 1);
  EXPECT_EQ(reasons.at("nvtx: NULL eventType"), 1);
}

TEST(NsysImportTest, RejectsFilesThatAreNotNsysExports) {
  TempDir dir;
  const std::string text = dir.file("notes.sqlite");
  WriteBytes(text, std::string("this is a text file, not a database\n") + std::string(600, 'x'));
  auto t = ImportNsysSqlite(text);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(t.status().message(), text)) << t.status().message();
  EXPECT_TRUE(Contains(t.status().message(), "not an SQLite database")) << t.status().message();

  const std::string empty = dir.file("empty.sqlite");
  WriteBytes(empty, "");
  t = ImportNsysSqlite(empty);
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(Contains(t.status().message(), empty)) << t.status().message();
  EXPECT_TRUE(Contains(t.status().message(), "CUPTI_ACTIVITY_KIND_KERNEL")) << t.status().message();

  const std::string other = dir.file("other.sqlite");
  MakeDb(other, "CREATE TABLE OSRT_API (start INTEGER, end INTEGER); INSERT INTO OSRT_API VALUES (1, 2);");
  t = ImportNsysSqlite(other);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(t.status().message(), "not an Nsight Systems CUDA export")) << t.status().message();

  t = ImportNsysSqlite(dir.file("missing.sqlite"));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(t.status().message(), dir.file("missing.sqlite")));

  t = ImportNsysSqlite(dir.path());
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(Contains(t.status().message(), "not a regular file"));
}

TEST(NsysImportTest, LeavesTheFileUntouched) {
  TempDir dir;
  const std::string path = dir.file("report.sqlite");
  MakeDb(path, FullExportSql());
  const std::string before = ReadBytes(path);
  ASSERT_TRUE(ImportNsysSqlite(path).ok());
  EXPECT_EQ(ReadBytes(path), before);
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(entry.path().filename(), "report.sqlite");  // no journal or WAL left behind
  }
}

}  // namespace
}  // namespace tierscope
