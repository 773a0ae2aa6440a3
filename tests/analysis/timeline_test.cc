// The step timeline: which step it shows and why, the events of that step in lanes with
// their nesting, launches joined to kernels, the critical path marked, and its budget.
#include "analysis/timeline.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "analysis/critical_path.h"
#include "trace_builder.h"

namespace tierscope {
namespace {

std::vector<WorkUnit> Steps(const std::vector<std::pair<int64_t, int64_t>>& spans) {
  std::vector<WorkUnit> w;
  for (size_t i = 0; i < spans.size(); ++i) w.push_back({"ProfilerStep#" + std::to_string(i), spans[i].first, spans[i].second});
  return w;
}

TEST(ChooseTimelineStep, TheMedianLengthStepAfterTheWarmUp) {
  // Lengths after the first: 30, 10, 20 -> the median is 20 (step 3).
  const auto w = Steps({{0, 500}, {500, 530}, {530, 540}, {540, 560}});
  std::string why;
  EXPECT_EQ(*ChooseTimelineStep(w, {5, 5, 5, 5}, "", &why), 3u);
  EXPECT_NE(why.find("median-length step of the 3 steps after the first"), std::string::npos) << why;
  // Steps that launched nothing are passed over: of steps 1 and 2, the shorter (ties and
  // even counts take the lower median).
  EXPECT_EQ(*ChooseTimelineStep(w, {5, 5, 5, 0}, "", &why), 2u);
  EXPECT_NE(why.find("that launched kernels"), std::string::npos) << why;
  // Only the first launched anything: the first.
  EXPECT_EQ(*ChooseTimelineStep(w, {5, 0, 0, 0}, "", &why), 0u);
  // Two steps: the second, unless it launched nothing.
  const auto two = Steps({{0, 10}, {10, 11}});
  EXPECT_EQ(*ChooseTimelineStep(two, {3, 2}, "", &why), 1u);
  EXPECT_EQ(*ChooseTimelineStep(two, {3, 0}, "", &why), 0u);
  EXPECT_EQ(*ChooseTimelineStep(Steps({{0, 10}}), {}, "", &why), 0u);
}

TEST(ChooseTimelineStep, ByNameOrAnErrorNamingTheStepsThereAre) {
  const auto w = Steps({{0, 10}, {10, 20}, {20, 30}, {30, 40}, {40, 50}, {50, 60}});
  std::string why;
  EXPECT_EQ(*ChooseTimelineStep(w, {}, "ProfilerStep#4", &why), 4u);
  EXPECT_EQ(why, "the step asked for (--step)");
  const StatusOr<size_t> missing = ChooseTimelineStep(w, {}, "ProfilerStep#9", &why);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("--step 'ProfilerStep#9' names no step of this trace; its steps: "
                                            "ProfilerStep#0, ProfilerStep#1"),
            std::string::npos);
  EXPECT_NE(missing.status().message().find("(6 in all)"), std::string::npos);
  EXPECT_FALSE(ChooseTimelineStep({}, {}, "", &why).ok());
}

// Three steps; each: an op holding a launch, its kernel after the step's host window.
Trace ThreeSteps() {
  Builder b;
  for (int s = 0; s < 3; ++s) {
    const int64_t t = s * 1000;
    b.Unit("ProfilerStep#" + std::to_string(s), t, 400 + s * 100);
    b.Op("aten::linear", t + 10, 300, s + 1);
    b.Launch("cudaLaunchKernel", "gemm", t + 20, 30, t + 350, 200, s + 1);
    b.Launch("cudaLaunchKernel", "elementwise", t + 60, 30, t + 560, 50, s + 1);
  }
  Event& py = b.trace().Add(EventKind::kOther, "python: forward", 1005, 390);  // step 1's Python frame
  py.pid = 1;
  py.tid = 1;
  return std::move(b.trace());
}

TEST(BuildTimeline, EveryStepWhenTheyFitWithLanesNestingAndLaunches) {
  const Trace t = ThreeSteps();
  const TraceIndex x = BuildIndex(t, AnalysisOptions{});
  const nlohmann::json j = *BuildTimeline(x, "", std::nullopt, {});
  EXPECT_EQ(j["step"], "ProfilerStep#1");  // lengths 500 and 600 after the first: the lower median
  EXPECT_TRUE(j["every_step"].get<bool>());
  ASSERT_EQ(j["steps"].size(), 3u);
  for (const auto& s : j["steps"]) EXPECT_EQ(s["kernels"], 2) << s;
  // Lanes: the thread's ops, its Python frames apart, then the stream.
  ASSERT_EQ(j["lanes"].size(), 3u);
  EXPECT_EQ(j["lanes"][0]["name"], "thread 1");
  EXPECT_EQ(j["lanes"][1]["name"], "thread 1 python");
  EXPECT_EQ(j["lanes"][2]["name"], "stream 7");
  const auto& e = j["events"];
  const size_t n = e["lane"].size();
  EXPECT_EQ(n, 3u * 6 + 1);  // per step: annotation, op, 2 launches, 2 kernels; and the Python frame
  for (const char* column : {"start_ns", "dur_ns", "name", "kind", "depth", "type", "launch"}) {
    EXPECT_EQ(e[column].size(), n) << column;
  }
  int kernels = 0;
  for (size_t i = 0; i < n; ++i) {
    const std::string name = j["names"][e["name"][i].get<size_t>()];
    const std::string kind = j["kinds"][e["kind"][i].get<size_t>()];
    if (name == "aten::linear") EXPECT_EQ(e["depth"][i], 1) << "inside its step's annotation";
    if (name == "cudaLaunchKernel") EXPECT_EQ(e["depth"][i], 2) << "inside the op";
    if (kind == "kernel") {
      ++kernels;
      EXPECT_EQ(j["types"][e["type"][i].get<size_t>()], "computation");
      const int64_t launch = e["launch"][i];
      ASSERT_GE(launch, 0);
      EXPECT_EQ(j["names"][e["name"][static_cast<size_t>(launch)].get<size_t>()], "cudaLaunchKernel");
      EXPECT_LT(e["start_ns"][static_cast<size_t>(launch)].get<int64_t>(), e["start_ns"][i].get<int64_t>());
    } else {
      EXPECT_EQ(e["type"][i], -1);
      EXPECT_EQ(e["launch"][i], -1);
    }
  }
  EXPECT_EQ(kernels, 6);
  // The chosen step's critical path: its rows are events of that step, with their time on it.
  const auto& path = j["critical_path"];
  EXPECT_EQ(path["step"], j["step"]);
  EXPECT_GT(path["length_ns"].get<int64_t>(), 0);
  ASSERT_FALSE(path["rows"].empty());
  int64_t on_path = 0;
  for (const auto& row : path["rows"]) {
    const size_t r = row[0].get<size_t>();
    ASSERT_LT(r, n);
    on_path += row[1].get<int64_t>();
    const int64_t at = e["start_ns"][r].get<int64_t>() + j["origin_ns"].get<int64_t>();
    EXPECT_TRUE(at >= 1000 && at < 2000) << "an event of step 1, or its kernels: " << at;
  }
  EXPECT_EQ(on_path, path["length_ns"].get<int64_t>());
  // The overview spans the whole trace.
  EXPECT_EQ(j["overview"]["device_ns"].size(), static_cast<size_t>(kTimelineOverviewBins));
  double device = 0;
  for (const auto& v : j["overview"]["device_ns"]) device += v.get<double>();
  EXPECT_DOUBLE_EQ(device, 3 * (200 + 50));
}

// One step of host ops of lengths 10, 20, ..., 100 on a thread, nothing launched.
Trace TenOps() {
  Builder b;
  b.Unit("ProfilerStep#0", 0, 100'000);
  int64_t t = 10;
  for (int k = 1; k <= 10; ++k) {
    b.Op("aten::op", t, 10 * k, k);
    t += 10 * k + 5;
  }
  return std::move(b.trace());
}

TEST(BuildTimeline, AHostStepOverTheBudgetKeepsItsCriticalPathThenItsLongestEvents) {
  const Trace t = TenOps();
  const TraceIndex x = BuildIndex(t, AnalysisOptions{});
  const CriticalPath path = AnalyzeCriticalPath(x, 0, 100'000, "ProfilerStep#0");
  std::set<std::string> on_path_names;
  for (const auto& p : PathEventsOnce(path)) on_path_names.insert(std::to_string(t.events[p.event].dur_ns));
  for (size_t budget : {1, 4, 7}) {
    const nlohmann::json j = *BuildTimeline(x, "", std::nullopt, {.max_events = budget});
    const auto& e = j["events"];
    const size_t path_events = j["critical_path"]["events"];
    ASSERT_GT(path_events, 0u);
    EXPECT_EQ(e["lane"].size(), budget);  // exactly the budget (the lengths are all different)
    EXPECT_EQ(j["omitted"]["events"].get<size_t>(), 11 - e["lane"].size()) << budget;
    // What stays off the path is the longest of what is off it.
    std::vector<int64_t> kept, dropped;
    std::set<int64_t> kept_set;
    for (const auto& d : e["dur_ns"]) kept_set.insert(d.get<int64_t>());
    for (const Event& ev : t.events) {
      const bool on = on_path_names.count(std::to_string(ev.dur_ns)) > 0;
      if (on) continue;
      (kept_set.count(ev.dur_ns) ? kept : dropped).push_back(ev.dur_ns);
    }
    if (!kept.empty() && !dropped.empty()) {
      EXPECT_GT(*std::min_element(kept.begin(), kept.end()), *std::max_element(dropped.begin(), dropped.end()));
      EXPECT_EQ(j["omitted"]["shorter_than_ns"].get<int64_t>(), *std::max_element(dropped.begin(), dropped.end()) + 1);
    }
  }
}

TEST(BuildTimeline, DeviceWorkStaysBeforeHostEventsAndEachKeepsItsStep) {
  // Ten long host ops, then three short launches whose kernels run after the step's end.
  Trace t = TenOps();
  Builder b;
  for (int k = 0; k < 3; ++k) b.Launch("cudaLaunchKernel", "gemm", 50'000 + 100 * k, 5, 200'000 + 100 * k, 3, 20 + k);
  for (int k = 0; k < 6; ++k) b.Op("aten::side", 60'000 + 1000 * k, 500, 40 + k, /*tid=*/2);  // off the path
  for (const Event& e : b.trace().events) {
    Event& copy = t.Add(e.kind, b.trace().strings.Get(e.name), e.ts_ns, e.dur_ns);
    copy.pid = e.pid, copy.tid = e.tid, copy.correlation = e.correlation, copy.external_id = e.external_id;
  }
  const TraceIndex x = BuildIndex(t, AnalysisOptions{});
  const nlohmann::json full = *BuildTimeline(x, "", std::nullopt, {});
  const size_t path_events = full["critical_path"]["events"];
  const size_t budget = path_events + 3;  // the path, then room for the three kernels only
  const nlohmann::json j = *BuildTimeline(x, "", std::nullopt, {.max_events = budget});
  EXPECT_EQ(j["steps"][0]["kernels"], 3);
  EXPECT_EQ(j["omitted"]["device_events"], 0);
  EXPECT_GT(j["omitted"]["host_events"].get<int>(), 0);
  // Kernels whose launch was left out still say when they were launched (their step).
  const auto& e = j["events"];
  size_t kernels = 0, launched_apart = 0;
  for (size_t i = 0; i < e["lane"].size(); ++i) kernels += j["kinds"][e["kind"][i].get<size_t>()] == "kernel";
  for (const auto& l : j["launched_ns"]) {
    const int64_t at = l[1].get<int64_t>() + j["origin_ns"].get<int64_t>();
    EXPECT_TRUE(at >= 50'000 && at <= 50'200) << at;
    ++launched_apart;
  }
  EXPECT_EQ(kernels, 3u);
  for (const auto& launch : e["launch"]) launched_apart += launch.get<int64_t>() >= 0;
  EXPECT_EQ(launched_apart, 3u);  // each kernel: its launch a row, or its launch time given apart
}

TEST(PathEventsOnce, AnEventThePathCrossesTwiceIsOneEntryWithBothTimes) {
  CriticalPath p;
  p.events = {{7, 300, PathCause::kGpuCompute}, {3, 200, PathCause::kCpu}, {7, 100, PathCause::kLaunchOverhead}};
  const auto once = PathEventsOnce(p);
  ASSERT_EQ(once.size(), 2u);
  EXPECT_EQ(once[0].event, 7u);
  EXPECT_EQ(once[0].ns, 400);
  EXPECT_EQ(once[0].cause, PathCause::kGpuCompute);  // the cause of its larger share
  EXPECT_EQ(once[1].event, 3u);
}

TEST(BuildTimeline, ATraceWithoutStepsIsOneWholeTraceWindow) {
  Builder b;
  b.Launch("cudaLaunchKernel", "gemm", 0, 10, 20, 100, 1);
  const Trace& t = b.trace();
  const TraceIndex x = BuildIndex(t, AnalysisOptions{});
  const nlohmann::json j = *BuildTimeline(x, "", std::nullopt, {});
  EXPECT_EQ(j["step"], "whole trace");
  EXPECT_EQ(j["steps"][0]["kernels"], 1);
  EXPECT_TRUE(j["device"].is_null());
}

}  // namespace
}  // namespace tierscope
