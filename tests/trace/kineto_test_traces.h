// Shared by the Kineto reader tests: the corpus's path, a comparison of everything an
// import produces, and a trace whose later half holds what a merge can get wrong.
#ifndef TIERSCOPE_TESTS_TRACE_KINETO_TEST_TRACES_H_
#define TIERSCOPE_TESTS_TRACE_KINETO_TEST_TRACES_H_

#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "trace/trace.h"

namespace tierscope {

inline std::string CorpusPath(const std::string& name) {
  return std::string(TIERSCOPE_SOURCE_DIR) + "/../shared/corpus/traces/" + name;
}

// Everything an import produces, with string ids resolved.
inline void ExpectSameTrace(const Trace& a, const Trace& b) {
  ASSERT_EQ(a.events.size(), b.events.size());
  const auto str = [](const Trace& t, int32_t id) {
    return id < 0 ? std::string("<none>") : std::string(t.strings.Get(id));
  };
  for (size_t i = 0; i < a.events.size(); ++i) {
    const Event& x = a.events[i];
    const Event& y = b.events[i];
    ASSERT_EQ(std::tie(x.ts_ns, x.dur_ns, x.correlation, x.external_id, x.v0, x.v1, x.pid, x.tid,
                       x.kind, x.arg_keys),
              std::tie(y.ts_ns, y.dur_ns, y.correlation, y.external_id, y.v0, y.v1, y.pid, y.tid,
                       y.kind, y.arg_keys))
        << "event " << i;
    ASSERT_EQ(str(a, x.name), str(b, y.name)) << "event " << i;
    ASSERT_EQ(str(a, x.cat), str(b, y.cat)) << "event " << i;
    ASSERT_EQ(str(a, x.args), str(b, y.args)) << "event " << i;
  }
  EXPECT_EQ(a.thread_names, b.thread_names);
  EXPECT_EQ(a.process_names, b.process_names);
  EXPECT_EQ(a.stats.layout, b.stats.layout);
  EXPECT_EQ(a.host_pid, b.host_pid);
  EXPECT_EQ(a.runtime, b.runtime);
  EXPECT_EQ(a.device_name, b.device_name);
  EXPECT_EQ(a.device_units, b.device_units);
  EXPECT_EQ(a.device_memory, b.device_memory);
  EXPECT_EQ(a.rank, b.rank);
  EXPECT_EQ(a.world_size, b.world_size);
  EXPECT_EQ(a.collective_backend, b.collective_backend);
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
inline std::string TrickyTrace() {
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

}  // namespace tierscope

#endif  // TIERSCOPE_TESTS_TRACE_KINETO_TEST_TRACES_H_
