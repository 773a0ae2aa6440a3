// The Kineto importer: golden counts on the real trace corpus (checked independently in
// Python), the schema variants seen in the wild, malformed events counted but not fatal,
// and files that are not traces failing with the file name and byte offset.
#include "trace/kineto_import.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "profile/chrome_trace.h"
#include "test_util.h"

namespace tierscope {
namespace {

using ::tierscope::testing::Contains;
using ::tierscope::testing::TempDir;
using ::tierscope::testing::WriteBytes;

std::string CorpusPath(const std::string& name) {
  return std::string(TIERSCOPE_SOURCE_DIR) + "/../shared/corpus/traces/" + name;
}

bool CorpusPresent() {
  struct stat st;
  return ::stat(CorpusPath("").c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void WriteGzip(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb6");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  gzclose(f);
}

Trace MustImport(std::string_view json) {
  auto r = ImportKinetoJson(json, "test.json");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : Trace();
}

std::map<EventKind, int64_t> CountKinds(const Trace& t) {
  std::map<EventKind, int64_t> n;
  for (const Event& e : t.events) ++n[e.kind];
  return n;
}

std::string Name(const Trace& t, const Event& e) { return std::string(t.strings.Get(e.name)); }

// ---------------------------------------------------------------------------------------
// Golden counts on the corpus. Produced, independently of this importer, by (in
// /work/shared/corpus/traces):
//   python3 -c 'import json,gzip,sys,collections as C,decimal as D
//   for f in sys.argv[1:]:
//    r=gzip.open(f).read();d=json.loads(r);ev=d["traceEvents"] if isinstance(d,dict) else d
//    X=[e for e in ev if e.get("ph")=="X"]
//    M=[e for e in ev if e.get("ph") in ("i","I") and e.get("name")=="[memory]"]
//    print(f,len(r),len(ev),len(ev)-len(X)-len(M),dict(C.Counter(e.get("cat","") for e in X)),
//     len(M),sum(abs(e["args"].get("Bytes",0)) for e in M),
//     sum(int(D.Decimal(str(e["dur"]))*1000) for e in X if e.get("cat","").lower()=="kernel"),
//     len({e["args"]["correlation"] for e in X if e.get("args",{}).get("correlation")}))'
//   *.json.gz
// The per-category counts of ph X events map to kinds as the importer documents (cpu_op
// and Operator -> op, cuda_runtime and Runtime -> runtime, Trace -> other, ...); every
// entry that is not an X event or a [memory] instant is metadata.
struct Golden {
  const char* file;
  int64_t bytes, events, metadata;
  int64_t op, annotation, gpu_annotation, runtime, kernel, memcpy, memset, sync, memory, other;
  int64_t memory_abs_bytes, kernel_ns, correlations;
  const char* runtime_family;
  const char* device;
  int32_t device_units;
};

void PrintTo(const Golden& g, std::ostream* os) { *os << g.file; }

const Golden kGolden[] = {
    {"benchmark_result_2869224_1695835535_trace.json.gz", 319512, 1408, 540,  //
     359, 8, 0, 361, 79, 16, 3, 41, 0, 1,                                     //
     0, 10692000, 361, "cuda", "NVIDIA A100-PG509-200", 108},
    {"control.json.gz", 34825284, 109123, 34186,  //
     40506, 288, 0, 24692, 8568, 228, 654, 0, 0, 1,  //
     0, 446813000, 24692, "cuda", "NVIDIA A100-PG509-200", 108},
    {"df_index_resolver.json.gz", 53733385, 216092, 64703,  //
     56680, 2035, 0, 42373, 19370, 2040, 880, 0, 28010, 1,   //
     104938249920, 977859000, 42373, "cuda", "Tesla V100-SXM2-32GB", 80},
    {"mi250_minitoy_train_ROCm6_2_kineto.json.gz", 66897, 220, 107,  //
     70, 3, 2, 21, 14, 2, 0, 0, 0, 1,                                 //
     0, 110881, 21, "hip", "AMD Radeon Graphics", 104},
    {"test.json.gz", 32792007, 105167, 36843,       //
     31236, 288, 0, 21167, 9876, 4856, 900, 0, 0, 1,  //
     0, 801858000, 21781, "cuda", "Tesla V100-SXM2-16GB", 80},
    {"worker0.1623143089861.pt.trace.json.gz", 35154637, 75718, 18214,  //
     23646, 0, 0, 11923, 8772, 12, 312, 0, 12838, 1,                     //
     128111221088, 591532000, 11923, "cuda", "Tesla V100-DGXS-32GB", 80},
};

class KinetoCorpusTest : public ::testing::TestWithParam<Golden> {};

TEST_P(KinetoCorpusTest, CountsMatchPythonGolden) {
  TS_SKIP_UNLESS(CorpusPresent(), "the trace corpus at " << CorpusPath(""));
  const Golden& g = GetParam();
  auto r = ImportKinetoTrace(CorpusPath(g.file));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Trace& t = *r;
  const ImportStats& s = t.stats;
  EXPECT_EQ(s.bytes, g.bytes);
  EXPECT_EQ(s.events_read, g.events);
  EXPECT_EQ(s.metadata, g.metadata);
  EXPECT_EQ(s.malformed, 0);
  EXPECT_EQ(s.events_kept, g.events - g.metadata);
  EXPECT_EQ(s.events_read, s.events_kept + s.metadata + s.malformed);
  EXPECT_EQ(static_cast<int64_t>(t.events.size()), s.events_kept);

  auto kinds = CountKinds(t);
  EXPECT_EQ(kinds[EventKind::kOp], g.op);
  EXPECT_EQ(kinds[EventKind::kAnnotation], g.annotation);
  EXPECT_EQ(kinds[EventKind::kGpuAnnotation], g.gpu_annotation);
  EXPECT_EQ(kinds[EventKind::kRuntime], g.runtime);
  EXPECT_EQ(kinds[EventKind::kKernel], g.kernel);
  EXPECT_EQ(kinds[EventKind::kMemcpy], g.memcpy);
  EXPECT_EQ(kinds[EventKind::kMemset], g.memset);
  EXPECT_EQ(kinds[EventKind::kSync], g.sync);
  EXPECT_EQ(kinds[EventKind::kMemory], g.memory);
  EXPECT_EQ(kinds[EventKind::kOther], g.other);
  EXPECT_EQ(kinds[EventKind::kTask], 0);

  double memory_abs = 0, kernel_ns = 0;
  std::set<int64_t> correlations;
  for (const Event& e : t.events) {
    if (e.kind == EventKind::kMemory) memory_abs += std::abs(e.v0);
    if (e.kind == EventKind::kKernel) kernel_ns += static_cast<double>(e.dur_ns);
    if (e.correlation != 0) correlations.insert(e.correlation);
  }
  EXPECT_NEAR(memory_abs, static_cast<double>(g.memory_abs_bytes), 1.0);
  EXPECT_NEAR(kernel_ns, static_cast<double>(g.kernel_ns), 1e-9 * g.kernel_ns + 1);
  EXPECT_EQ(static_cast<int64_t>(correlations.size()), g.correlations);

  int64_t by_category = 0;
  for (const auto& [cat, n] : s.by_category) by_category += n;
  EXPECT_EQ(by_category, g.events);  // every entry, "" when it has no category
  EXPECT_EQ(t.runtime, g.runtime_family);
  EXPECT_EQ(t.device_name, g.device);
  EXPECT_EQ(t.device_units, g.device_units);
  EXPECT_GT(t.device_memory, 0);
  EXPECT_EQ(t.format, "kineto");
  EXPECT_EQ(t.source, CorpusPath(g.file));
}

INSTANTIATE_TEST_SUITE_P(Corpus, KinetoCorpusTest, ::testing::ValuesIn(kGolden),
                         [](const ::testing::TestParamInfo<Golden>& info) {
                           std::string name = info.param.file;
                           name = name.substr(0, name.find('.'));
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

TEST(KinetoCorpus, KernelArgsKeepGridBlockAndStreamAsJsonMembers) {
  TS_SKIP_UNLESS(CorpusPresent(), "the trace corpus at " << CorpusPath(""));
  auto r = ImportKinetoTrace(CorpusPath("worker0.1623143089861.pt.trace.json.gz"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  int checked = 0;
  for (const Event& e : r->events) {
    if (e.kind != EventKind::kKernel) continue;
    ASSERT_GE(e.args, 0);
    auto args = nlohmann::json::parse("{" + std::string(r->strings.Get(e.args)) + "}");
    EXPECT_TRUE(args.contains("grid"));
    EXPECT_TRUE(args.contains("block"));
    EXPECT_EQ(args["stream"].get<int>(), e.tid);  // "stream 7" -> tid 7
    EXPECT_EQ(args["correlation"].get<int64_t>(), e.correlation);
    EXPECT_EQ(args["external id"].get<int64_t>(), e.external_id);
    if (++checked == 200) break;
  }
  EXPECT_EQ(checked, 200);
}

TEST(KinetoCorpus, LegacyTraceUsesStreamTidsAndNamesThem) {
  TS_SKIP_UNLESS(CorpusPresent(), "the trace corpus at " << CorpusPath(""));
  auto r = ImportKinetoTrace(CorpusPath("worker0.1623143089861.pt.trace.json.gz"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::set<std::pair<int32_t, std::string>> names(r->thread_names.begin(), r->thread_names.end());
  EXPECT_TRUE(names.count({7, "stream 7"}));
  EXPECT_TRUE(names.count({25772, "thread 25772 (python)"}));
  EXPECT_EQ(r->host_pid, 25738);
  EXPECT_EQ(r->stats.by_category.at("Operator"), 23646);
  EXPECT_EQ(r->stats.by_category.at(""), 12860);  // [memory] and metadata: no category
}

TEST(KinetoCorpus, FloatMicrosecondsKeepNanosecondsAndBaseTime) {
  TS_SKIP_UNLESS(CorpusPresent(), "the trace corpus at " << CorpusPath(""));
  auto r = ImportKinetoTrace(CorpusPath("mi250_minitoy_train_ROCm6_2_kineto.json.gz"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // The first event: "ts": 4203669604595.407, "dur": 340.024 (not rebased).
  EXPECT_EQ(r->events[0].ts_ns, 4203669604595407);
  EXPECT_EQ(r->events[0].dur_ns, 340024);
  EXPECT_EQ(r->base_time_ns, 1735632360000000000);
}

TEST(KinetoCorpus, TruncatedAndBitFlippedFilesNeverCrash) {
  TS_SKIP_UNLESS(CorpusPresent(), "the trace corpus at " << CorpusPath(""));
  std::mt19937 rng(12345);
  for (const char* name : {"mi250_minitoy_train_ROCm6_2_kineto.json.gz",
                           "benchmark_result_2869224_1695835535_trace.json.gz"}) {
    gzFile f = gzopen(CorpusPath(name).c_str(), "rb");
    ASSERT_NE(f, nullptr);
    std::string json;
    char buf[65536];
    int n;
    while ((n = gzread(f, buf, sizeof(buf))) > 0) json.append(buf, static_cast<size_t>(n));
    gzclose(f);
    for (int i = 0; i < 40; ++i) {
      const std::string cut = json.substr(0, rng() % json.size());
      auto r = ImportKinetoJson(cut, "cut.json");
      if (!r.ok()) {
        EXPECT_TRUE(Contains(r.status().message(), "cut.json: ")) << r.status().ToString();
      }
      std::string flipped = json;
      for (int k = 0; k < 8; ++k) flipped[rng() % flipped.size()] = static_cast<char>(rng());
      auto r2 = ImportKinetoJson(flipped, "flipped.json");
      if (r2.ok()) {
        const ImportStats& s = r2->stats;
        EXPECT_EQ(s.events_read, s.events_kept + s.metadata + s.malformed);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// Schema variants.

TEST(KinetoImport, BareListLegacyFormWithCpuFunctionsPid) {
  Trace t = MustImport(R"([
    {"name": "aten::add", "ph": "X", "ts": 10.5, "dur": 2.25, "tid": 1, "pid": "CPU functions", "args": {}},
    {"name": "aten::add", "ph": "s", "ts": 10.6, "tid": 1, "pid": "CPU functions", "id": 1, "cat": "cpu_to_cuda", "args": {}},
    {"name": "add_kernel", "ph": "X", "ts": 12, "dur": 3, "tid": 0, "pid": "CUDA functions", "args": {}},
    {"name": "add_kernel", "ph": "f", "ts": 12, "tid": 0, "pid": "CUDA functions", "id": 1, "cat": "cpu_to_cuda", "args": {}}
  ])");
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[0].kind, EventKind::kOp);
  EXPECT_EQ(t.events[0].ts_ns, 10500);
  EXPECT_EQ(t.events[0].dur_ns, 2250);
  EXPECT_EQ(t.events[0].args, -1);  // empty args
  EXPECT_EQ(t.events[1].kind, EventKind::kKernel);
  EXPECT_NE(t.events[0].pid, t.events[1].pid);
  EXPECT_LT(t.events[0].pid, 0);  // a string pid without a number gets a table id
  EXPECT_EQ(t.stats.metadata, 2);
  std::set<std::pair<int32_t, std::string>> names(t.thread_names.begin(), t.thread_names.end());
  EXPECT_TRUE(names.count({t.events[0].pid, "CPU functions"}));
  EXPECT_TRUE(names.count({t.events[1].pid, "CUDA functions"}));
}

TEST(KinetoImport, StringTidsMapToTheirTrailingNumberOrAStableId) {
  Trace t = MustImport(R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": "stream 7", "ts": 1, "dur": 1},
    {"ph": "X", "cat": "Operator", "name": "op", "pid": 5, "tid": "25738", "ts": 1, "dur": 1},
    {"ph": "X", "cat": "Operator", "name": "op", "pid": 5, "tid": "main thread", "ts": 1, "dur": 1},
    {"ph": "X", "cat": "Operator", "name": "op", "pid": 5, "tid": "main thread", "ts": 2, "dur": 1},
    {"ph": "X", "cat": "Operator", "name": "op", "pid": 5, "tid": "worker", "ts": 2, "dur": 1}
  ]})");
  ASSERT_EQ(t.events.size(), 5u);
  EXPECT_EQ(t.events[0].tid, 7);
  EXPECT_EQ(t.events[1].tid, 25738);
  EXPECT_EQ(t.events[2].tid, t.events[3].tid);
  EXPECT_NE(t.events[2].tid, t.events[4].tid);
  std::set<std::pair<int32_t, std::string>> names(t.thread_names.begin(), t.thread_names.end());
  EXPECT_TRUE(names.count({7, "stream 7"}));
  EXPECT_TRUE(names.count({t.events[2].tid, "main thread"}));
  EXPECT_FALSE(names.count({25738, "25738"}));  // a bare number names nothing
}

TEST(KinetoImport, LowercaseExternalIdAndCorrelationAreRead) {
  Trace t = MustImport(R"({"traceEvents": [
    {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": "1", "ts": 5, "dur": 2,
     "args": {"cbid": 211, "correlation": 34417, "external id": 537}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 4, "dur": 9,
     "args": {"External id": 538, "Input Dims": [[2, 3], [3, 4]]}}
  ]})");
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[0].kind, EventKind::kRuntime);
  EXPECT_EQ(t.events[0].external_id, 537);
  EXPECT_EQ(t.events[0].correlation, 34417);
  EXPECT_EQ(t.events[1].external_id, 538);
  ASSERT_GE(t.events[1].args, 0);
  // Args are kept compact, whatever whitespace the trace had (trace/args.h).
  EXPECT_EQ(t.strings.Get(t.events[1].args), R"("External id":538,"Input Dims":[[2,3],[3,4]])");
  EXPECT_EQ(t.runtime, "cuda");
}

TEST(KinetoImport, IntegerAndFloatTimestampsBecomeNanosecondsRoundedToNearest) {
  Trace t = MustImport(R"({"traceEvents": [
    {"ph": "X", "name": "a", "ts": 1669783687464181, "dur": 45},
    {"ph": "X", "name": "b", "ts": 4203669604595.407, "dur": 340.024},
    {"ph": "X", "name": "c", "ts": 1.0005, "dur": 2.0004},
    {"ph": "X", "name": "d", "ts": -1.5, "dur": 0},
    {"ph": "X", "name": "e", "ts": 1e3, "dur": 2.5E-1},
    {"ph": "X", "name": "f", "ts": 7.1, "dur": 0.000999}
  ]})");
  ASSERT_EQ(t.events.size(), 6u);
  EXPECT_EQ(t.events[0].ts_ns, 1669783687464181000);
  EXPECT_EQ(t.events[0].dur_ns, 45000);
  EXPECT_EQ(t.events[1].ts_ns, 4203669604595407);
  EXPECT_EQ(t.events[1].dur_ns, 340024);
  EXPECT_EQ(t.events[2].ts_ns, 1001);
  EXPECT_EQ(t.events[2].dur_ns, 2000);
  EXPECT_EQ(t.events[3].ts_ns, -1500);
  EXPECT_EQ(t.events[4].ts_ns, 1000000);
  EXPECT_EQ(t.events[4].dur_ns, 250);
  EXPECT_EQ(t.events[5].ts_ns, 7100);
  EXPECT_EQ(t.events[5].dur_ns, 1);
  EXPECT_EQ(t.events[0].kind, EventKind::kOther);  // no category
}

TEST(KinetoImport, HipRuntimeNamesUnderCudaRuntimeCategoryMeanHip) {
  Trace t = MustImport(R"({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": {"correlation": 5}},
    {"ph": "X", "cat": "cuda_runtime", "name": "hipMemcpyWithStream", "pid": 1, "tid": 1, "ts": 2, "dur": 1},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 2, "tid": 0, "ts": 3, "dur": 1, "args": {"correlation": 5}}
  ]})");
  EXPECT_EQ(t.runtime, "hip");
  EXPECT_EQ(CountKinds(t)[EventKind::kRuntime], 2);
}

TEST(KinetoImport, PrivateUse1RuntimeFromTorchMusaIsMusa) {
  Trace t = MustImport(R"({"deviceProperties": [{"id": 0, "name": "MTT S4000", "totalGlobalMem": 51539607552, "numSms": 128}],
    "traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 9, "tid": 9, "ts": 1, "dur": 10, "args": {"External id": 3}},
    {"ph": "X", "cat": "privateuse1_runtime", "name": "musaLaunchKernel", "pid": 9, "tid": 9, "ts": 2, "dur": 3,
     "args": {"External id": 3, "correlation": 77}},
    {"ph": "X", "cat": "kernel", "name": "musa_asm_sgemm_nt", "pid": 0, "tid": 7, "ts": 6, "dur": 4,
     "args": {"External id": 3, "correlation": 77, "grid": [8, 1, 1], "block": [256, 1, 1]}}
  ]})");
  ASSERT_EQ(t.events.size(), 3u);
  EXPECT_EQ(t.events[1].kind, EventKind::kRuntime);
  EXPECT_EQ(t.events[1].correlation, t.events[2].correlation);
  EXPECT_EQ(t.runtime, "musa");
  EXPECT_EQ(t.device_name, "MTT S4000");
  EXPECT_EQ(t.device_units, 128);
  EXPECT_EQ(t.device_memory, 51539607552);
  EXPECT_EQ(t.host_pid, 9);
  EXPECT_EQ(t.stats.by_category.at("privateuse1_runtime"), 1);
}

TEST(KinetoImport, CategoriesMatchCaseInsensitivelyAndKeepTheirSpelling) {
  Trace t = MustImport(R"({"traceEvents": [
    {"ph": "X", "cat": "CPU_OP", "name": "a", "ts": 1, "dur": 1},
    {"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "ts": 1, "dur": 1},
    {"ph": "X", "cat": "gpu_user_annotation", "name": "step", "ts": 1, "dur": 1},
    {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "ts": 1, "dur": 1},
    {"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD", "ts": 1, "dur": 1, "args": {"bytes": 64}},
    {"ph": "X", "cat": "python_function", "name": "f", "ts": 1, "dur": 1},
    {"ph": "X", "cat": "kernel_task", "name": "k", "ts": 1, "dur": 1,
     "args": {"kernel correlation": 12, "tasks": 3, "busy ns": 900}}
  ]})");
  ASSERT_EQ(t.events.size(), 7u);
  const EventKind want[] = {EventKind::kOp,     EventKind::kRuntime, EventKind::kGpuAnnotation,
                            EventKind::kSync,   EventKind::kMemcpy,  EventKind::kOther,
                            EventKind::kTask};
  for (size_t i = 0; i < 7; ++i) EXPECT_EQ(t.events[i].kind, want[i]) << i;
  EXPECT_EQ(t.strings.Get(t.events[0].cat), "CPU_OP");
  EXPECT_EQ(t.stats.by_category.at("CPU_OP"), 1);
  EXPECT_EQ(t.events[6].correlation, 12);
  EXPECT_EQ(t.events[6].v0, 3);
  EXPECT_EQ(t.events[6].v1, 900);
}

TEST(KinetoImport, MemoryInstantsCarryBytesTotalAndAddress) {
  Trace t = MustImport(R"({"traceEvents": [
    {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 2, "ts": 10,
     "args": {"Addr": 139926520725504, "Bytes": 5242880, "Total Allocated": 5435638784}},
    {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 2, "ts": 11, "args": {"Bytes": -4}},
    {"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g", "pid": "Traces", "tid": "x", "ts": 1}
  ]})");
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[0].kind, EventKind::kMemory);
  EXPECT_EQ(t.events[0].v0, 5242880);
  EXPECT_EQ(t.events[0].v1, 5435638784);
  EXPECT_EQ(t.events[0].external_id, 139926520725504);
  EXPECT_EQ(t.events[1].kind, EventKind::kMemory);
  EXPECT_EQ(t.events[1].v0, -4);
  EXPECT_EQ(t.events[1].dur_ns, 0);
  EXPECT_EQ(t.stats.metadata, 1);  // the other instant
}

TEST(KinetoImport, KernelArgsNoteWhetherTheyHaveAGridKey) {
  Trace t = MustImport(R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 7, "ts": 1, "dur": 1,
     "args": {"correlation": 1, "grid": [4, 1, 1], "block": [128, 1, 1]}},
    {"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "tid": 7, "ts": 2, "dur": 1,
     "args": {"correlation": 2, "note": "grid", "nested": {"grid": [1, 1, 1]}}},
    {"ph": "X", "cat": "kernel", "name": "c", "pid": 0, "tid": 7, "ts": 3, "dur": 1}
  ]})");
  ASSERT_EQ(t.events.size(), 3u);
  EXPECT_EQ(t.events[0].arg_keys, kArgKeysKnown | kArgHasGrid);
  EXPECT_EQ(t.events[1].arg_keys, kArgKeysKnown);  // "grid" as a value or a nested key only
  EXPECT_EQ(t.events[2].arg_keys, 0);               // no args: nothing noted
}

TEST(KinetoImport, KeysAreReadWhateverTheSpacingAndEscapedKeysMatchNothing) {
  Trace t = MustImport("{\"traceEvents\": [\n"
                       "{\"ph\" \n : \"X\", \"cat\":\"kernel\", \"name\" :\"a\", \"pid\":0, \"tid\":7, \"ts\":1, \"dur\":1,"
                       " \"args\": {\"gr\\u0069d\": [1, 1, 1], \"\" : 0, \"correlation\"\t:\t5}},\n"
                       "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"b\",\"pid\":0,\"tid\":7,\"ts\":2,\"dur\":1,"
                       "\"args\":{\"grid\"\t: [2, 1, 1]}}]}");
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[0].correlation, 5);
  EXPECT_EQ(t.events[0].arg_keys, kArgKeysKnown);  // "gr\u0069d" is not read as "grid"
  EXPECT_EQ(t.events[1].arg_keys, kArgKeysKnown | kArgHasGrid);
  EXPECT_EQ(t.strings.Get(t.events[1].name), "b");
}

TEST(KinetoImport, ARepeatedArgsKeyKeepsItsNoteWithItsText) {
  Trace t = MustImport(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
    "ts": 1, "dur": 1, "args": {"grid": [1, 1, 1]}, "args": {"correlation": 3}}]})");
  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.strings.Get(t.events[0].args), "\"correlation\":3");  // the last, as in json.load
  EXPECT_EQ(t.events[0].arg_keys, kArgKeysKnown);
}

TEST(KinetoImport, MetadataNamesThreadsAndFindsTheHostPid) {
  Trace t = MustImport(R"({"traceEvents": [
    {"name": "process_name", "ph": "M", "ts": 1, "pid": 42, "tid": 0, "args": {"name": "python3"}},
    {"name": "process_labels", "ph": "M", "ts": 1, "pid": 42, "tid": 0, "args": {"labels": "CPU"}},
    {"name": "thread_name", "ph": "M", "ts": 1, "pid": 1, "tid": 7, "args": {"name": "stream 7 "}},
    {"name": "thread_name", "ph": "M", "ts": 1, "pid": 1, "tid": 7, "args": {"name": "stream 7 "}},
    {"ph": "B", "name": "x", "pid": 1, "tid": 1, "ts": 1}, {"ph": "E", "pid": 1, "tid": 1, "ts": 2},
    {"ph": "s", "id": 1, "pid": 1, "tid": 1, "ts": 1, "cat": "ac2g", "name": "ac2g"},
    {"ph": "C", "name": "counter", "pid": 1, "ts": 1, "args": {"v": 1}}
  ]})");
  EXPECT_TRUE(t.events.empty());
  EXPECT_EQ(t.stats.metadata, 8);
  EXPECT_EQ(t.host_pid, 42);
  ASSERT_EQ(t.thread_names.size(), 1u);
  EXPECT_EQ(t.thread_names[0], std::make_pair(7, std::string("stream 7 ")));
}

TEST(KinetoImport, EscapedStringsAndBracketsInsideStringsAreHandled) {
  Trace t = MustImport(R"({"traceName": "a \"quoted\" name", "traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "say \"hi\" [{,}] \\ caf\u00e9", "ts": 1, "dur": 1,
     "args": {"Concrete Inputs": ["\"]}", "\\"], "External id": 9}},
    {"ph": "X", "cat": "cpu_op", "name": "plain", "ts": 2, "dur": 1, "args": {"k\u0065y": 1, "External id": 10}}
  ]})");
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(Name(t, t.events[0]), "say \"hi\" [{,}] \\ caf\xc3\xa9");
  EXPECT_EQ(t.events[0].external_id, 9);
  EXPECT_EQ(t.events[1].external_id, 10);
  auto args = nlohmann::json::parse("{" + std::string(t.strings.Get(t.events[0].args)) + "}");
  EXPECT_EQ(args["Concrete Inputs"][0], "\"]}");
}

TEST(KinetoImport, EventsAcrossManyChunksAreAllRead) {
  std::string json = R"({"schemaVersion": 1, "traceEvents": [)";
  const int n = 30000;  // ~4 MB: several parse chunks
  for (int i = 0; i < n; ++i) {
    if (i > 0) json += ",\n";
    json += R"({"ph": "X", "cat": "kernel", "name": "kernel_)" + std::to_string(i % 50) +
            R"(", "pid": 0, "tid": 7, "ts": )" + std::to_string(1000 + i) +
            R"(, "dur": 1.5, "args": {"correlation": )" + std::to_string(i + 1) +
            R"(, "grid": [1, 1, 1], "note": "padding padding padding padding padding padding padding"}})";
  }
  json += R"(], "baseTimeNanoseconds": 17})";
  Trace t = MustImport(json);
  ASSERT_EQ(t.events.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(t.events[static_cast<size_t>(i)].correlation, i + 1);
    ASSERT_EQ(t.events[static_cast<size_t>(i)].ts_ns, (1000 + i) * 1000);
  }
  EXPECT_EQ(t.base_time_ns, 17);
  EXPECT_EQ(t.stats.events_read, n);
}

TEST(KinetoImport, EmptyTraceEventsIsAnEmptyTrace) {
  Trace t = MustImport(R"({"traceEvents": [ ]})");
  EXPECT_TRUE(t.events.empty());
  EXPECT_EQ(t.stats.events_read, 0);
  Trace u = MustImport("[]");
  EXPECT_TRUE(u.events.empty());
}

// ---------------------------------------------------------------------------------------
// Bad input.

TEST(KinetoImport, MalformedEventsAreCountedNotFatal) {
  Trace t = MustImport(R"({"traceEvents": [
    42, "str", null, [1, 2],
    {"cat": "cpu_op", "name": "no ph", "ts": 1, "dur": 1},
    {"ph": 7, "name": "ph not a string", "ts": 1, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "ts": 1, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": 5, "ts": 1, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "no ts", "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "ts not numeric", "ts": "12 us", "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "no dur", "ts": 1},
    {"ph": "X", "cat": "cpu_op", "name": "negative dur", "ts": 1, "dur": -3},
    {"ph": "X", "cat": "cpu_op", "name": "dur bool", "ts": 1, "dur": true},
    {"ph": "X", "cat": "cpu_op", "name": "pid object", "pid": {}, "ts": 1, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "huge ts", "ts": 99999999999999999999, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "good", "ts": 1, "dur": 1, "args": "not an object"}
  ]})");
  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_EQ(Name(t, t.events[0]), "good");
  EXPECT_EQ(t.stats.malformed, 15);
  EXPECT_EQ(t.stats.events_read, 16);
  const auto& why = t.stats.malformed_reasons;
  EXPECT_EQ(why.at("not an object"), 4);
  EXPECT_EQ(why.at("missing ph"), 1);
  EXPECT_EQ(why.at("ph not a string"), 1);
  EXPECT_EQ(why.at("missing name"), 1);
  EXPECT_EQ(why.at("name not a string"), 1);
  EXPECT_EQ(why.at("missing ts"), 1);
  EXPECT_EQ(why.at("ts not a number"), 1);  // "12 us"
  EXPECT_EQ(why.at("time out of range"), 1);  // 1e20 µs: a number, past int64 ns
  EXPECT_EQ(why.at("missing dur"), 1);
  EXPECT_EQ(why.at("negative dur"), 1);
  EXPECT_EQ(why.at("dur not a number"), 1);
  EXPECT_EQ(why.at("pid not a number or string"), 1);
}

// Names with ill-formed UTF-8 (a real H100 trace has five) are read with U+FFFD, as
// Perfetto and Python's errors="replace" do, and counted; the rest of the trace is kept.
TEST(KinetoImport, InvalidUtf8IsReplacedAndCounted) {
  Trace t = MustImport("{\"traceEvents\": [\n"
                       "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\xff\", \"ts\": 1, \"dur\": 1},\n"
                       "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"\xe2\x82\", \"ts\": 2, \"dur\": 1},\n"
                       "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"\xed\xa0\x80\xe2\x82\xac\", \"ts\": 3, \"dur\": 1},\n"
                       "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"clean \xc3\xa9\", \"ts\": 4, \"dur\": 1}]}");
  ASSERT_EQ(t.events.size(), 4u);
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(Name(t, t.events[0]), "a" + r);
  EXPECT_EQ(Name(t, t.events[1]), r);
  EXPECT_EQ(Name(t, t.events[2]), r + r + r + "\xe2\x82\xac");
  EXPECT_EQ(Name(t, t.events[3]), "clean \xc3\xa9");
  EXPECT_EQ(t.stats.invalid_utf8, 5);
  EXPECT_EQ(t.stats.malformed, 0);
  EXPECT_EQ(t.events[3].ts_ns, 4000);
}

// Across many parse runs and both readers, each run repaired on its own, the counts add up.
TEST(KinetoImport, InvalidUtf8IsCountedTheSameOnOneOrTwoReaders) {
  std::string json = "{\"traceEvents\": [";
  const int n = 40000;  // ~5 MB: runs for both readers
  for (int i = 0; i < n; ++i) {
    if (i > 0) json += ",\n";
    json += "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op" + std::to_string(i) +
            (i % 997 == 0 ? "\xc0" : "") + "\", \"ts\": " + std::to_string(i) +
            ", \"dur\": 1, \"args\": {\"note\": \"padding padding padding padding padding padding\"}}";
  }
  json += "]}";
  for (int threads : {1, 2}) {
    auto r = ImportKinetoJson(json, "bad.json", threads);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->events.size(), static_cast<size_t>(n));
    EXPECT_EQ(r->stats.invalid_utf8, (n - 1) / 997 + 1) << threads;
    EXPECT_EQ(Name(*r, r->events[997 * 30]), "op29910\xEF\xBF\xBD");
    EXPECT_EQ(Name(*r, r->events[998 * 30]), "op29940");
    EXPECT_EQ(r->events[n - 1].ts_ns, int64_t{n - 1} * 1000);
  }
}

// torch_npu writes "ts" as a string of µs with ns digits: read as the number it spells,
// exactly (through a double the last digits of 1.7e18 ns would be lost).
TEST(KinetoImport, NumericStringTimestampsAreExactNanoseconds) {
  Trace t = MustImport(R"([
    {"ph": "X", "name": "aten::empty", "pid": 1, "tid": 1, "ts": "1736408883688177.930", "dur": 145.57, "cat": "cpu_op"},
    {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": "-2.0004", "dur": "0.0005"},
    {"ph": "X", "name": "c", "pid": 1, "tid": 1, "ts": "not a time", "dur": 1},
    {"ph": "X", "name": "d", "pid": 1, "tid": 1, "ts": 1, "dur": ""}])");
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[0].ts_ns, 1736408883688177930);
  EXPECT_EQ(t.events[0].dur_ns, 145570);
  EXPECT_EQ(t.events[1].ts_ns, -2000);
  EXPECT_EQ(t.events[1].dur_ns, 1);
  EXPECT_EQ(t.stats.malformed_reasons.at("ts not a number"), 1);
  EXPECT_EQ(t.stats.malformed_reasons.at("dur not a number"), 1);
}

// The real 2-rank Ascend job (torch_npu, HCCL): a bare list whose every ts is a string.
// Counts and exact sums from Python (json with Decimal, halves rounded up) of the events
// kept: every X event but the profiler's Overlap Analysis ranges and HCCL's tasks, which
// their collectives stand for (ascend_layout.h).
TEST(KinetoCorpus, AscendTraceViewWithStringTimestampsImportsEveryEvent) {
  struct Rank {
    int64_t entries, events, min_ts_ns, dur_sum_ns;
  };
  const Rank ranks[] = {{10112, 3410, 1736408883674584732, 3100884402},
                        {9969, 3411, 1736408883676317851, 3048558257}};
  for (int rank = 0; rank < 2; ++rank) {
    const std::string path = CorpusPath("vendors/ascend_2rank/rank" + std::to_string(rank) + "_ascend_pt/" +
                                        "ASCEND_PROFILER_OUTPUT/trace_view.json.gz");
    struct stat st;
    TS_SKIP_UNLESS(::stat(path.c_str(), &st) == 0, "the Ascend corpus trace " << path);
    auto r = ImportKinetoTrace(path);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const Rank& want = ranks[rank];
    EXPECT_EQ(r->stats.events_read, want.entries);
    EXPECT_EQ(r->stats.malformed, 0);
    ASSERT_EQ(static_cast<int64_t>(r->events.size()), want.events);
    int64_t min_ts = INT64_MAX, dur_sum = 0;
    for (const Event& e : r->events) {
      min_ts = std::min(min_ts, e.ts_ns);
      dur_sum += e.dur_ns;
    }
    EXPECT_EQ(min_ts, want.min_ts_ns);
    EXPECT_EQ(dur_sum, want.dur_sum_ns);
    EXPECT_EQ(Name(*r, r->events[0]), "aten::empty");
    EXPECT_EQ(CountKinds(*r)[EventKind::kOp], 860);
  }
}

TEST(KinetoImport, TruncatedJsonNamesTheFileAndTheByteOffset) {
  const std::string json =
      R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 1}, {"ph": "X", "name": "b", "ts": 2, "dur": 1}]})";
  for (size_t len : {json.size() - 1, json.size() - 2, size_t{60}, size_t{30}, size_t{1}}) {
    auto r = ImportKinetoJson(json.substr(0, len), "trace.json");
    ASSERT_FALSE(r.ok()) << len;
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
    EXPECT_TRUE(Contains(r.status().message(), "trace.json: invalid JSON at byte "))
        << r.status().message();
    EXPECT_TRUE(Contains(r.status().message(), "truncated?")) << r.status().message();
  }
}

TEST(KinetoImport, NonJsonNamesTheByteOffset) {
  auto r = ImportKinetoJson("hello world", "notes.txt");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_TRUE(Contains(r.status().message(), "notes.txt: invalid JSON at byte 0"))
      << r.status().message();

  auto garbage = ImportKinetoJson(R"({"traceEvents": [{"ph": "X"} {"ph": "X"}]})", "t.json");
  ASSERT_FALSE(garbage.ok());
  EXPECT_TRUE(Contains(garbage.status().message(), "t.json: invalid JSON at byte "))
      << garbage.status().message();

  auto trailing = ImportKinetoJson(R"({"traceEvents": []} extra)", "t.json");
  ASSERT_FALSE(trailing.ok());
  EXPECT_TRUE(Contains(trailing.status().message(), "at byte 20")) << trailing.status().message();

  auto empty = ImportKinetoJson("", "empty.json");
  ASSERT_FALSE(empty.ok());
  EXPECT_TRUE(Contains(empty.status().message(), "empty.json: invalid JSON at byte 0"))
      << empty.status().message();
}

TEST(KinetoImport, JsonWithoutTraceEventsIsInvalidArgument) {
  for (const char* json : {R"({"schemaVersion": 1})", R"({"traceEvents": 5})", "42", "{}"}) {
    auto r = ImportKinetoJson(json, "x.json");
    ASSERT_FALSE(r.ok()) << json;
    EXPECT_EQ(r.status().code(), json == std::string("42") ? StatusCode::kDataLoss
                                                            : StatusCode::kInvalidArgument)
        << json << ": " << r.status().ToString();
    EXPECT_TRUE(Contains(r.status().message(), "x.json")) << r.status().message();
  }
}

TEST(KinetoImport, MissingFileIsNotFound) {
  auto r = ImportKinetoTrace("/nonexistent/dir/trace.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(r.status().message(), "/nonexistent/dir/trace.json"));
}

const char kSmallTrace[] = R"({"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5, "args": {"External id": 1}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 12, "dur": 2, "args": {"correlation": 3}}
]})";

TEST(KinetoImport, GzipIsDetectedByMagicBytesNotTheName) {
  TempDir dir;
  WriteGzip(dir.file("really_gzip.json"), kSmallTrace);
  WriteBytes(dir.file("plain.json.gz"), kSmallTrace);
  for (const char* name : {"really_gzip.json", "plain.json.gz"}) {
    auto r = ImportKinetoTrace(dir.file(name));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->events.size(), 2u);
    EXPECT_EQ(r->stats.bytes, static_cast<int64_t>(sizeof(kSmallTrace) - 1));
  }
}

TEST(KinetoImport, TruncatedOrCorruptGzipIsDataLossNamingTheFile) {
  TempDir dir;
  WriteGzip(dir.file("t.json.gz"), kSmallTrace);
  const std::string gz = testing::ReadBytes(dir.file("t.json.gz"));
  for (size_t cut : {gz.size() - 4, gz.size() - 12, gz.size() / 2, size_t{12}}) {
    WriteBytes(dir.file("cut.json.gz"), gz.substr(0, cut));
    auto r = ImportKinetoTrace(dir.file("cut.json.gz"));
    ASSERT_FALSE(r.ok()) << cut;
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
    EXPECT_TRUE(Contains(r.status().message(), dir.file("cut.json.gz") + ": "))
        << r.status().message();
  }
  std::string corrupt = gz;
  for (size_t i = 12; i < corrupt.size() - 8; i += 3) {
    corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
  }
  WriteBytes(dir.file("bad.json.gz"), corrupt);
  auto r = ImportKinetoTrace(dir.file("bad.json.gz"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_TRUE(Contains(r.status().message(), "bad.json.gz")) << r.status().message();
}

// ---------------------------------------------------------------------------------------
// Tierscope's own writer.

TEST(KinetoImport, TraceWrittenByTierscopeReadsBackTheSame) {
  Trace src;
  src.device_name = "cpu: \"test\" (2 threads)";
  src.device_units = 2;
  src.device_memory = 1 << 30;
  src.base_time_ns = 1700000000000000000;
  src.host_pid = 4242;
  src.thread_names = {{7, "stream 7"}, {100, "worker 0"}};
  Event& a = src.Add(EventKind::kAnnotation, "unit \"one\"", 1000, 90000);
  a.pid = a.tid = 4242;
  Event& op = src.Add(EventKind::kOp, "aten::linear", 2000, 50000);
  op.pid = op.tid = 4242;
  op.external_id = 1;
  op.args = src.strings.Intern("\"Input Dims\": [[2, 3], [4, 3], [4]]");
  Event& l = src.Add(EventKind::kRuntime, "cudaLaunchKernel", 3000, 1500);
  l.pid = l.tid = 4242;
  l.external_id = 1;
  l.correlation = 1;
  Event& k = src.Add(EventKind::kKernel, "cpu_sgemm_nt_64x128", 4500, 30001);
  k.pid = 0;
  k.tid = 7;
  k.external_id = 1;
  k.correlation = 1;
  k.v0 = 4096;
  k.v1 = 512;
  Event& task = src.Add(EventKind::kTask, "cpu_sgemm_nt_64x128", 4600, 29000);
  task.pid = 0;
  task.tid = 100;
  task.correlation = 1;
  task.v0 = 3;
  task.v1 = 28000;
  Event& m = src.Add(EventKind::kMemory, "[memory]", 5000, 0);
  m.pid = m.tid = 4242;
  m.v0 = -256;
  m.v1 = 1024;
  m.external_id = 0x7f0012345678;

  TempDir dir;
  for (const char* name : {"own.json", "own.json.gz"}) {
    ASSERT_TRUE(WriteChromeTrace(src, dir.file(name)).ok());
    auto r = ImportKinetoTrace(dir.file(name));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const Trace& t = *r;
    EXPECT_EQ(t.stats.malformed, 0);
    ASSERT_EQ(t.events.size(), src.events.size());
    EXPECT_EQ(CountKinds(t), CountKinds(src));
    for (size_t i = 0; i < src.events.size(); ++i) {
      const Event& want = src.events[i];
      const Event& got = t.events[i];
      EXPECT_EQ(got.kind, want.kind) << i;
      EXPECT_EQ(Name(t, got), Name(src, want)) << i;
      EXPECT_EQ(got.ts_ns, want.ts_ns) << i;
      EXPECT_EQ(got.dur_ns, want.dur_ns) << i;
      EXPECT_EQ(got.pid, want.pid) << i;
      EXPECT_EQ(got.tid, want.tid) << i;
      EXPECT_EQ(got.correlation, want.correlation) << i;
      EXPECT_EQ(got.external_id, want.external_id) << i;
      EXPECT_EQ(got.v0, want.v0) << i;
      EXPECT_EQ(got.v1, want.v1) << i;
    }
    EXPECT_TRUE(Contains(std::string(t.strings.Get(t.events[1].args)), "\"Input Dims\":[[2,3],[4,3],[4]]"));
    EXPECT_EQ(t.runtime, "cpu");
    EXPECT_EQ(t.device_name, src.device_name);
    EXPECT_EQ(t.device_units, 2);
    EXPECT_EQ(t.device_memory, 1 << 30);
    EXPECT_EQ(t.base_time_ns, src.base_time_ns);
    EXPECT_EQ(t.host_pid, 4242);
    std::set<std::pair<int32_t, std::string>> names(t.thread_names.begin(), t.thread_names.end());
    EXPECT_TRUE(names.count({7, "stream 7"}));
    EXPECT_TRUE(names.count({100, "worker 0"}));
    EXPECT_EQ(t.stats.by_category.at("ac2g"), 2);  // the launch -> kernel flow
  }
}

}  // namespace
}  // namespace tierscope
