// The Kineto importer on two cores: a trace read by two readers (the later half merged
// into the first) is the same as one reader's, string pids/tids, thread names, the host
// pid and malformed events included, and the first error in file order is the one
// reported, at the same byte offset.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>
#include <tuple>
#include <vector>

#include "trace/kineto_import.h"
#include "test_util.h"

namespace tierscope {
namespace {

std::string CorpusPath(const std::string& name) {
  return std::string(TIERSCOPE_SOURCE_DIR) + "/../shared/corpus/traces/" + name;
}

// Everything an import produces, with string ids resolved.
void ExpectSameTrace(const Trace& a, const Trace& b) {
  ASSERT_EQ(a.events.size(), b.events.size());
  const auto str = [](const Trace& t, int32_t id) {
    return id < 0 ? std::string("<none>") : std::string(t.strings.Get(id));
  };
  for (size_t i = 0; i < a.events.size(); ++i) {
    const Event& x = a.events[i];
    const Event& y = b.events[i];
    ASSERT_EQ(std::tie(x.ts_ns, x.dur_ns, x.correlation, x.external_id, x.v0, x.v1, x.pid, x.tid,
                       x.kind),
              std::tie(y.ts_ns, y.dur_ns, y.correlation, y.external_id, y.v0, y.v1, y.pid, y.tid,
                       y.kind))
        << "event " << i;
    ASSERT_EQ(str(a, x.name), str(b, y.name)) << "event " << i;
    ASSERT_EQ(str(a, x.cat), str(b, y.cat)) << "event " << i;
    ASSERT_EQ(str(a, x.args), str(b, y.args)) << "event " << i;
  }
  EXPECT_EQ(a.thread_names, b.thread_names);
  EXPECT_EQ(a.host_pid, b.host_pid);
  EXPECT_EQ(a.runtime, b.runtime);
  EXPECT_EQ(a.device_name, b.device_name);
  EXPECT_EQ(a.base_time_ns, b.base_time_ns);
  EXPECT_EQ(a.stats.bytes, b.stats.bytes);
  EXPECT_EQ(a.stats.events_read, b.stats.events_read);
  EXPECT_EQ(a.stats.events_kept, b.stats.events_kept);
  EXPECT_EQ(a.stats.metadata, b.stats.metadata);
  EXPECT_EQ(a.stats.malformed, b.stats.malformed);
  EXPECT_EQ(a.stats.malformed_reasons, b.stats.malformed_reasons);
  EXPECT_EQ(a.stats.by_category, b.stats.by_category);
}

// ~6 MB of events whose second half brings what only a merge can get wrong: string
// pids and tids seen first there (with and without trailing numbers), thread-name
// metadata for them, the first process_labels, new categories and names, malformed
// entries, and HIP runtime calls that outnumber CUDA ones overall.
std::string TrickyTrace() {
  std::string j = R"({"traceName": "t", "traceEvents": [)";
  const int n = 40000;
  for (int i = 0; i < n; ++i) {
    const bool late = i >= n / 2;
    const std::string ts = std::to_string(1000 + i) + "." + std::to_string(i % 1000);
    std::string pid = late && i % 7 == 0 ? R"("python worker")" : "1";
    std::string tid = std::to_string(i % 3);
    if (i % 11 == 0) tid = late ? R"("stream )" + std::to_string(i % 5) + "\"" : R"("main")";
    if (late && i % 13 == 0) tid = R"("late thread )" + std::string(1, char('a' + i % 4)) + "\"";
    if (j.back() != '[') j += ",\n";
    j += R"({"ph": "X", "cat": ")" + std::string(late && i % 5 == 0 ? "hip_runtime" : "cpu_op") +
         R"(", "name": ")" + (late && i % 5 == 0 ? "hipLaunchKernel" : "op_" + std::to_string(i % (late ? 97 : 31))) +
         R"(", "pid": )" + pid + R"(, "tid": )" + tid + R"(, "ts": )" + ts +
         R"(, "dur": 2.5, "args": {"External id": )" + std::to_string(i) +
         R"(, "correlation": )" + std::to_string(i * 2) + R"(, "Input Dims": [[64, 128]]}})";
    if (i % 500 == 0) j += R"(, {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 5, "dur": 1})";
    if (i % 1000 == 1) j += R"(, {"ph": "X", "name": "no ts", "pid": 1, "tid": 1, "dur": 1})";
    if (late && i % 1000 == 7) {  // a repeated pid key: the last value wins, as in json.load
      j += R"(, {"ph": "X", "cat": "cpu_op", "name": "dup", "pid": "name first", "pid": 5, "tid": 1, "ts": 3, "dur": 1})";
    }
    if (late && i % 1000 == 3) {
      j += R"(, {"ph": "M", "name": "thread_name", "pid": 1, "tid": "late thread b", "args": {"name": "worker b"}})";
      j += R"(, {"ph": "M", "name": "process_labels", "pid": "python worker", "args": {"labels": "CPU"}})";
      j += R"(, {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": "python worker", "tid": "x", "ts": 9, "args": {"Bytes": 64, "Total Allocated": 128, "Addr": 42}})";
    }
  }
  return j + "]}";
}

TEST(KinetoReaders, TwoReadersGiveTheSameTraceAsOne) {
  const std::string json = TrickyTrace();
  auto one = ImportKinetoJson(json, "t.json", 1);
  auto two = ImportKinetoJson(json, "t.json", 2);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  ExpectSameTrace(*one, *two);
  // The things the merge must translate are really there.
  EXPECT_GT(one->stats.malformed, 0);
  EXPECT_EQ(one->runtime, "hip");
  EXPECT_LT(one->host_pid, -1);  // "python worker": a string id, first seen late
  bool named_late = false;
  for (const auto& [tid, name] : one->thread_names) named_late |= name == "worker b";
  EXPECT_TRUE(named_late);
}

TEST(KinetoReaders, TheFirstErrorInFileOrderIsReportedAtTheSameOffset) {
  std::string json = TrickyTrace();
  const size_t late = json.size() * 9 / 10, early = json.size() / 10;
  std::string late_only = json;
  late_only.insert(late_only.find("\"ph\"", late), "tru ");
  std::string both = late_only;
  both.insert(both.find("\"ph\"", early), "nul ");
  for (const std::string& bad : {late_only, both}) {
    auto one = ImportKinetoJson(bad, "bad.json", 1);
    auto two = ImportKinetoJson(bad, "bad.json", 2);
    ASSERT_FALSE(one.ok());
    ASSERT_FALSE(two.ok());
    EXPECT_EQ(one.status().ToString(), two.status().ToString());
    EXPECT_NE(one.status().ToString().find("bad.json: invalid JSON at byte"), std::string::npos);
  }
}

TEST(KinetoReaders, CorpusTracesReadTheSameOnOneOrTwoReaders) {
  struct stat st;
  TS_SKIP_UNLESS(::stat(CorpusPath("").c_str(), &st) == 0, "the trace corpus at " << CorpusPath(""));
  for (const char* f : {"df_index_resolver.json.gz", "control.json.gz", "test.json.gz",
                        "worker0.1623143089861.pt.trace.json.gz"}) {
    SCOPED_TRACE(f);
    auto one = ImportKinetoTrace(CorpusPath(f), 1);
    auto two = ImportKinetoTrace(CorpusPath(f), 2);
    ASSERT_TRUE(one.ok()) << one.status().ToString();
    ASSERT_TRUE(two.ok()) << two.status().ToString();
    ExpectSameTrace(*one, *two);
  }
}

}  // namespace
}  // namespace tierscope
