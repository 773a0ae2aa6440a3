// The step timeline: which step, which events, their lanes and nesting, launches joined to
// kernels, the critical path marked, and the whole trace's density overview.
#include "analysis/timeline.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "analysis/critical_path.h"
#include "analysis/gpu_time.h"

namespace tierscope {
namespace {

// Where an event is drawn: host lanes (a thread's operators, annotations and runtime
// calls) first, then the threads' Python frames (their own lanes: a deep Python stack
// would bury the operators), then device lanes (streams, or a CPU engine's workers).
enum class Side : int { kHost = 0, kPython = 1, kDevice = 2 };
inline constexpr const char* kSideNames[] = {"host", "python", "device"};

bool Drawn(EventKind k, bool python = true) {
  switch (k) {
    case EventKind::kOther:
      return python;
    case EventKind::kMemory:         // an instant: no span
    case EventKind::kGpuAnnotation:  // a scope over kernels already drawn
      return false;
    default:
      return true;
  }
}

Side SideOf(EventKind k) {
  switch (k) {
    case EventKind::kKernel:
    case EventKind::kTask:
    case EventKind::kMemcpy:
    case EventKind::kMemset:
      return Side::kDevice;
    case EventKind::kOther:  // python_function, overhead, ...
      return Side::kPython;
    default:
      return Side::kHost;
  }
}

bool IsDeviceWork(EventKind k) {
  return k == EventKind::kKernel || k == EventKind::kMemcpy || k == EventKind::kMemset;
}

std::string LaneName(Side side, EventKind kind, int32_t pid, int32_t tid, bool several_pids) {
  std::string name;
  if (side != Side::kDevice) {
    name = "thread " + std::to_string(tid) + (side == Side::kPython ? " python" : "");
    if (several_pids) name = "process " + std::to_string(pid) + " " + name;
  } else {
    name = (kind == EventKind::kTask ? "worker " : "stream ") + std::to_string(tid);
    if (several_pids) name = "device " + std::to_string(pid) + " " + name;
  }
  return name;
}

using LaneKey = std::tuple<int, int32_t, int32_t>;  // side, pid, tid

}  // namespace

StatusOr<size_t> ChooseTimelineStep(const std::vector<WorkUnit>& windows, const std::vector<int64_t>& kernels,
                                    const std::string& requested, std::string* why) {
  if (windows.empty()) return NotFound("the trace has no event with a duration: no step to draw");
  if (!requested.empty()) {
    for (size_t i = 0; i < windows.size(); ++i) {
      if (windows[i].name == requested) {
        *why = "the step asked for (--step)";
        return i;
      }
    }
    std::string names;
    for (size_t i = 0; i < windows.size() && i < 5; ++i) names += (i ? ", " : "") + windows[i].name;
    if (windows.size() > 5) names += ", ... (" + std::to_string(windows.size()) + " in all)";
    return NotFound("--step '" + requested + "' names no step of this trace; its steps: " + names);
  }
  if (windows.size() == 1) {
    *why = windows[0].name == "whole trace" ? "the trace has no steps: the whole trace" : "the trace's only step";
    return size_t{0};
  }
  const auto launched = [&](size_t i) { return i < kernels.size() && kernels[i] > 0; };
  std::vector<size_t> candidates;
  for (size_t i = 1; i < windows.size(); ++i) {
    if (launched(i)) candidates.push_back(i);
  }
  std::string of = "of the " + std::to_string(windows.size() - 1) + " steps after the first (a warm-up)";
  if (candidates.empty() && launched(0)) {
    *why = "the first step: the only one that launched kernels";
    return size_t{0};
  }
  if (candidates.empty()) {
    for (size_t i = 1; i < windows.size(); ++i) candidates.push_back(i);
  } else if (candidates.size() < windows.size() - 1) {
    of = "of the " + std::to_string(candidates.size()) + " steps after the first (a warm-up) that launched kernels";
  }
  // The median length; ties go to the earlier step.
  const auto length = [&](size_t i) { return windows[i].end_ns - windows[i].begin_ns; };
  std::stable_sort(candidates.begin(), candidates.end(), [&](size_t a, size_t b) { return length(a) < length(b); });
  *why = (candidates.size() == 1 ? "the only step " : "the median-length step ") + of + ": the steady state";
  return candidates[(candidates.size() - 1) / 2];
}

StatusOr<nlohmann::json> BuildTimeline(const TraceIndex& index, const std::string& requested,
                                       const std::optional<DeviceSpec>& device, const TimelineLimits& limits) {
  const size_t max_events = std::max<size_t>(limits.max_events, 1);
  const Trace& trace = *index.trace;
  const std::vector<WorkUnit> windows = PathWindows(index);
  const auto in = [](int64_t t, int64_t b, int64_t e) { return t >= b && t <= e; };
  // The kernels launched in each step.
  std::vector<int64_t> step_kernels(windows.size(), 0);
  for (size_t i : index.kernels) {
    const int64_t t = index.LaunchTime(i);
    const auto w = std::upper_bound(windows.begin(), windows.end(), t,
                                    [](int64_t v, const WorkUnit& u) { return v < u.begin_ns; });
    if (w == windows.begin()) continue;
    const size_t at = static_cast<size_t>(w - windows.begin()) - 1;
    if (in(t, windows[at].begin_ns, windows[at].end_ns)) ++step_kernels[at];
  }
  std::string why;
  TS_ASSIGN_OR_RETURN(const size_t chosen, ChooseTimelineStep(windows, step_kernels, requested, &why));
  const WorkUnit& step = windows[chosen];

  // Every step's events when they all fit; else the chosen step's.
  const auto host_time = [&](size_t i) {
    return IsDeviceWork(trace.events[i].kind) ? index.LaunchTime(i) : trace.events[i].ts_ns;
  };
  int64_t all_begin = windows.front().begin_ns, all_end = windows.front().end_ns;
  for (const WorkUnit& w : windows) {
    all_begin = std::min(all_begin, w.begin_ns);
    all_end = std::max(all_end, w.end_ns);
  }
  size_t in_all = 0;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    if (Drawn(trace.events[i].kind, limits.python) && in(host_time(i), all_begin, all_end)) ++in_all;
  }
  const bool every_step = limits.every_step && in_all <= max_events && windows.size() <= 2000;
  const int64_t begin = every_step ? all_begin : step.begin_ns, end = every_step ? all_end : step.end_ns;

  // The window's events: host events that start in it, device work launched in it.
  std::vector<std::pair<size_t, LaneKey>> picked;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const Event& e = trace.events[i];
    if (!Drawn(e.kind, limits.python) || !in(host_time(i), begin, end)) continue;
    picked.emplace_back(i, LaneKey(static_cast<int>(SideOf(e.kind)), e.pid, e.tid));
  }

  // The chosen step's critical path: each event's time on it and its cause.
  const CriticalPath path = AnalyzeCriticalPath(index, step.begin_ns, step.end_ns, step.name);
  std::unordered_map<size_t, const CriticalPath::OnPath*> on_path;
  for (const CriticalPath::OnPath& p : path.events) on_path.emplace(p.event, &p);

  // Too many: the critical path's events stay (the longest of them, when they alone are
  // too many), then the longest others in the room left.
  int64_t cutoff_ns = 0;
  size_t omitted = 0;
  if (picked.size() > max_events) {
    std::vector<int64_t> path_durs, other_durs;
    for (const auto& p : picked) (on_path.count(p.first) ? path_durs : other_durs).push_back(trace.events[p.first].dur_ns);
    // The least length of which at most `room` of `durs` are longer or as long.
    const auto cut = [](std::vector<int64_t>& durs, size_t room) -> int64_t {
      if (durs.size() <= room) return 0;
      if (room == 0) return INT64_MAX;
      std::nth_element(durs.begin(), durs.begin() + static_cast<std::ptrdiff_t>(room - 1), durs.end(), std::greater<>());
      return durs[room - 1] + 1;
    };
    const int64_t path_cut = cut(path_durs, max_events);
    const size_t room = max_events - std::min(max_events, path_durs.size());
    const int64_t longest_other = other_durs.empty() ? 0 : *std::max_element(other_durs.begin(), other_durs.end());
    const int64_t other_cut = cut(other_durs, room);
    cutoff_ns = std::min(other_cut, longest_other + 1);
    std::vector<std::pair<size_t, LaneKey>> kept;
    for (auto& p : picked) {
      const int64_t d = trace.events[p.first].dur_ns;
      if (d >= (on_path.count(p.first) ? path_cut : other_cut)) kept.push_back(p);
    }
    omitted = picked.size() - kept.size();
    picked = std::move(kept);
  }

  // Lanes in key order (host threads, then device streams), named by their first event.
  std::map<LaneKey, std::pair<int, EventKind>> lane_of;
  for (const auto& [i, key] : picked) lane_of.emplace(key, std::make_pair(0, trace.events[i].kind));
  std::map<int32_t, int> pids[3];  // each side's processes (a name says which only when there are several)
  for (const auto& [key, lane] : lane_of) pids[std::get<0>(key)].emplace(std::get<1>(key), 0);
  nlohmann::json lanes = nlohmann::json::array();
  for (auto& [key, lane] : lane_of) {
    lane.first = static_cast<int>(lanes.size());
    const auto& [side, pid, tid] = key;
    lanes.push_back({{"side", kSideNames[side]}, {"pid", pid}, {"tid", tid},
                     {"name", LaneName(static_cast<Side>(side), lane.second, pid, tid, pids[side].size() > 1)}});
  }
  // Rows in each lane by start (longer first at a tie, so an enclosing op precedes what it holds).
  struct Row {
    size_t event;
    int lane;
  };
  std::vector<Row> rows;
  rows.reserve(picked.size());
  for (const auto& [i, key] : picked) rows.push_back({i, lane_of[key].first});
  picked = {};
  std::sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    const Event& x = trace.events[a.event];
    const Event& y = trace.events[b.event];
    return std::make_tuple(a.lane, x.ts_ns, -x.dur_ns, a.event) < std::make_tuple(b.lane, y.ts_ns, -y.dur_ns, b.event);
  });

  std::unordered_map<size_t, int64_t> position;  // trace event -> its row here
  for (size_t r = 0; r < rows.size(); ++r) position.emplace(rows[r].event, static_cast<int64_t>(r));
  std::unordered_map<int32_t, int64_t> name_of;  // the trace's name id -> names[]
  nlohmann::json names = nlohmann::json::array();
  std::vector<int64_t> col_lane, col_start, col_dur, col_name, col_kind, col_depth, col_type, col_launch;
  nlohmann::json on_path_rows = nlohmann::json::array();  // [row, ns on the path, cause]
  std::vector<int64_t> stack;  // ends of the open events in the lane
  int last_lane = -1;
  for (const Row& row : rows) {
    const size_t i = row.event;
    const Event& e = trace.events[i];
    const int lane = row.lane;
    if (lane != last_lane) stack.clear(), last_lane = lane;
    while (!stack.empty() && stack.back() <= e.ts_ns) stack.pop_back();
    col_depth.push_back(static_cast<int64_t>(stack.size()));
    stack.push_back(e.ts_ns + e.dur_ns);
    col_lane.push_back(lane);
    col_start.push_back(e.ts_ns - begin);
    col_dur.push_back(e.dur_ns);
    auto [it, fresh] = name_of.emplace(e.name, static_cast<int64_t>(names.size()));
    if (fresh) names.push_back(std::string(trace.strings.Get(e.name)));
    col_name.push_back(it->second);
    col_kind.push_back(static_cast<int64_t>(e.kind));
    col_type.push_back(IsDeviceWork(e.kind) ? static_cast<int64_t>(ClassifyDeviceEvent(e.kind, trace.strings.Get(e.name)))
                                            : -1);
    int64_t launch = -1;
    if (IsDeviceWork(e.kind) && e.correlation != 0) {
      if (auto c = index.runtime_by_corr.find(e.correlation); c != index.runtime_by_corr.end()) {
        if (auto p = position.find(c->second); p != position.end()) launch = p->second;
      }
    }
    col_launch.push_back(launch);
    if (const auto p = on_path.find(i); p != on_path.end()) {
      on_path_rows.push_back({static_cast<int64_t>(col_lane.size()) - 1, p->second->ns, static_cast<int>(p->second->cause)});
    }
  }

  // The steps, each with the kernels launched in it (what its timeline holds).
  nlohmann::json steps = nlohmann::json::array();
  for (size_t s = 0; s < windows.size(); ++s) {
    const bool shown = every_step || s == chosen;
    if (windows.size() > 2000 && !shown && s % (windows.size() / 1000 + 1) != 0) continue;
    steps.push_back({{"name", windows[s].name}, {"begin_ns", windows[s].begin_ns - begin},
                     {"end_ns", windows[s].end_ns - begin}, {"kernels", step_kernels[s]}, {"in_timeline", shown},
                     {"chosen", s == chosen}});
  }

  // The overview: device time and launches of the whole trace in equal bins.
  int64_t t0 = INT64_MAX, t1 = INT64_MIN;
  for (const Event& e : trace.events) {
    if (!Drawn(e.kind) || e.dur_ns <= 0) continue;
    t0 = std::min(t0, e.ts_ns);
    t1 = std::max(t1, e.ts_ns + e.dur_ns);
  }
  std::vector<double> device_ns(kTimelineOverviewBins, 0), host_ns(kTimelineOverviewBins, 0);
  const double width = t1 > t0 ? static_cast<double>(t1 - t0) / kTimelineOverviewBins : 1;
  for (const Event& e : trace.events) {
    const bool device_work = IsDeviceWork(e.kind) || e.kind == EventKind::kTask;
    if (!(device_work || e.kind == EventKind::kRuntime) || e.dur_ns <= 0 || t1 <= t0) continue;
    std::vector<double>& bins = device_work ? device_ns : host_ns;
    const double a = static_cast<double>(e.ts_ns - t0), b = a + static_cast<double>(e.dur_ns);
    for (int k = std::max(0, static_cast<int>(a / width)); k < kTimelineOverviewBins && k * width < b; ++k) {
      bins[static_cast<size_t>(k)] += std::min(b, (k + 1) * width) - std::max(a, k * width);
    }
  }

  nlohmann::json causes = nlohmann::json::array(), kinds = nlohmann::json::array(),
                 types = nlohmann::json::array();
  for (int c = 0; c < kPathCauses; ++c) causes.push_back(PathCauseName(static_cast<PathCause>(c)));
  for (int k = 0; k <= static_cast<int>(EventKind::kOther); ++k) kinds.push_back(EventKindName(static_cast<EventKind>(k)));
  for (int k = 0; k < kKernelTypes; ++k) types.push_back(KernelTypeName(static_cast<KernelType>(k)));
  nlohmann::json by_cause = nlohmann::json::object();
  for (int c = 0; c < kPathCauses; ++c) by_cause[PathCauseName(static_cast<PathCause>(c))] = path.by_cause[c];

  nlohmann::json j;
  j["origin_ns"] = begin;
  j["end_ns"] = end - begin;
  j["step"] = step.name;
  j["why"] = why;
  j["every_step"] = every_step;
  j["steps"] = std::move(steps);
  j["lanes"] = std::move(lanes);
  j["names"] = std::move(names);
  j["kinds"] = std::move(kinds);
  j["types"] = std::move(types);
  j["causes"] = std::move(causes);
  j["events"] = {{"lane", col_lane}, {"start_ns", col_start}, {"dur_ns", col_dur}, {"name", col_name},
                 {"kind", col_kind}, {"depth", col_depth}, {"type", col_type},       {"launch", col_launch}};
  j["omitted"] = {{"events", omitted}, {"shorter_than_ns", cutoff_ns}};
  j["critical_path"] = {{"step", path.window},         {"length_ns", path.length_ns}, {"span_ns", path.span_ns},
                        {"events", path.events.size()}, {"by_cause", by_cause},        {"cyclic_nodes", path.cyclic_nodes},
                        {"rows", std::move(on_path_rows)}};
  j["overview"] = {{"begin_ns", t1 > t0 ? t0 - begin : 0}, {"end_ns", t1 > t0 ? t1 - begin : 0},
                   {"device_ns", device_ns}, {"host_runtime_ns", host_ns}};
  j["device"] = device ? DeviceSpecJson(*device) : nlohmann::json();
  return j;
}

}  // namespace tierscope
