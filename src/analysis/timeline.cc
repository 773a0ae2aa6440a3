// The step timeline: which step, which events, their lanes and nesting, launches joined to
// kernels, the critical path marked, and the whole trace's density overview.
#include "analysis/timeline.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

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

// What a timeline's events are picked from: the window, and each picked event's lane.
struct Picked {
  int64_t begin = 0, end = 0;
  bool every_step = false;
  std::vector<std::pair<size_t, LaneKey>> events;  // trace event, its lane's key
  TimelineOmitted omitted;  // by Trim
};

int64_t HostTime(const TraceIndex& x, size_t i) {
  return IsDeviceWork(x.E(i).kind) ? x.LaunchTime(i) : x.E(i).ts_ns;
}

// Every step's events when they all fit in the limits, else the chosen step's: host events
// that start in the window, device work launched in it.
Picked PickEvents(const TraceIndex& x, const StepChoice& c, const TimelineLimits& limits) {
  const Trace& trace = *x.trace;
  Picked p;
  int64_t all_begin = c.windows.front().begin_ns, all_end = c.windows.front().end_ns;
  for (const WorkUnit& w : c.windows) {
    all_begin = std::min(all_begin, w.begin_ns);
    all_end = std::max(all_end, w.end_ns);
  }
  const auto in = [](int64_t t, int64_t b, int64_t e) { return t >= b && t <= e; };
  size_t in_all = 0;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    if (Drawn(trace.events[i].kind, limits.python) && in(HostTime(x, i), all_begin, all_end)) ++in_all;
  }
  p.every_step = limits.every_step && in_all <= limits.max_events && c.windows.size() <= 2000;
  p.begin = p.every_step ? all_begin : c.step().begin_ns;
  p.end = p.every_step ? all_end : c.step().end_ns;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const Event& e = trace.events[i];
    if (!Drawn(e.kind, limits.python) || !in(HostTime(x, i), p.begin, p.end)) continue;
    p.events.emplace_back(i, LaneKey(static_cast<int>(SideOf(e.kind)), e.pid, e.tid));
  }
  return p;
}

// The length of which exactly `room` of `durs` are longer (or all, when there are no
// more than `room`): events this long or longer stay. Ties at the cut go too.
int64_t Cut(std::vector<int64_t>& durs, size_t room) {
  if (durs.size() <= room) return 0;
  std::nth_element(durs.begin(), durs.begin() + static_cast<std::ptrdiff_t>(room), durs.end(), std::greater<>());
  return durs[room] + 1;
}

// Too many: the device's work stays (kernels, copies, sets, workers' tasks: the step in
// full on the device), then the host's events on the critical path, then the other host
// events — each tier the longest of it when it alone is too many for the room the tiers
// before it left.
void Trim(const Trace& trace, const std::unordered_map<size_t, const CriticalPath::OnPath*>& on_path,
          size_t max_events, Picked* p) {
  if (p->events.size() <= max_events) return;
  const auto tier = [&](size_t i) -> size_t {
    const EventKind k = trace.events[i].kind;
    if (IsDeviceWork(k) || k == EventKind::kTask) return 0;
    return on_path.count(i) ? 1 : 2;
  };
  std::array<std::vector<int64_t>, 3> durs;
  for (const auto& e : p->events) durs[tier(e.first)].push_back(trace.events[e.first].dur_ns);
  std::array<int64_t, 3> cut{};
  std::array<size_t, 3> count{}, kept_of{};
  size_t room = max_events;
  for (size_t t = 0; t < 3; ++t) {
    count[t] = durs[t].size();
    cut[t] = room == 0 ? INT64_MAX : Cut(durs[t], room);
    room -= std::min(room, count[t]);
  }
  std::vector<std::pair<size_t, LaneKey>> kept;
  std::array<int64_t, 3> longest_dropped{-1, -1, -1};
  for (auto& e : p->events) {
    const size_t t = tier(e.first);
    const int64_t d = trace.events[e.first].dur_ns;
    if (d >= cut[t]) {
      kept.push_back(e);
      ++kept_of[t];
    } else {
      longest_dropped[t] = std::max(longest_dropped[t], d);
    }
  }
  TimelineOmitted& o = p->omitted;
  o.events = static_cast<int64_t>(p->events.size() - kept.size());
  o.device_events = static_cast<int64_t>(count[0] - kept_of[0]);
  o.critical_path_events = static_cast<int64_t>(count[1] - kept_of[1]);
  o.host_events = static_cast<int64_t>(count[2] - kept_of[2]);
  // The tier cut part way: of it, the events shorter than this are left out.
  for (size_t t = 0; t < 3; ++t) {
    if (kept_of[t] > 0 && kept_of[t] < count[t]) o.shorter_than_ns = longest_dropped[t] + 1;
  }
  p->events = std::move(kept);
}

// The columns of the picked events: lanes in key order (host threads, their Python frames,
// device streams), rows by lane then start (longer first at a tie, so an enclosing op
// precedes what it holds), each row's nesting depth in its lane, launches joined.
struct Columns {
  nlohmann::json lanes = nlohmann::json::array(), names = nlohmann::json::array();
  TimelineEvents events;
  std::unordered_map<size_t, int64_t> row_of;  // trace event -> row
  nlohmann::json launched = nlohmann::json::array();  // [row, its launch's start] where the launch is not a row
};
Columns BuildColumns(const TraceIndex& x, const Picked& p) {
  const Trace& trace = *x.trace;
  Columns c;
  std::map<LaneKey, std::pair<int, EventKind>> lane_of;
  for (const auto& [i, key] : p.events) lane_of.emplace(key, std::make_pair(0, trace.events[i].kind));
  std::map<int32_t, int> pids[3];  // each side's processes (a name says which only when there are several)
  for (const auto& [key, lane] : lane_of) pids[std::get<0>(key)].emplace(std::get<1>(key), 0);
  for (auto& [key, lane] : lane_of) {
    lane.first = static_cast<int>(c.lanes.size());
    const auto& [side, pid, tid] = key;
    c.lanes.push_back({{"side", kSideNames[side]}, {"pid", pid}, {"tid", tid},
                       {"name", LaneName(static_cast<Side>(side), lane.second, pid, tid, pids[side].size() > 1)}});
  }
  struct Row {
    size_t event;
    int lane;
  };
  std::vector<Row> rows;
  rows.reserve(p.events.size());
  for (const auto& [i, key] : p.events) rows.push_back({i, lane_of[key].first});
  std::sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    const Event& u = trace.events[a.event];
    const Event& v = trace.events[b.event];
    return std::make_tuple(a.lane, u.ts_ns, -u.dur_ns, a.event) < std::make_tuple(b.lane, v.ts_ns, -v.dur_ns, b.event);
  });
  for (size_t r = 0; r < rows.size(); ++r) c.row_of.emplace(rows[r].event, static_cast<int64_t>(r));
  std::unordered_map<int32_t, int64_t> name_of;  // the trace's name id -> names[]
  std::vector<int64_t> open;                     // ends of the events open in the lane
  int last_lane = -1;
  TimelineEvents& t = c.events;
  for (const Row& row : rows) {
    const Event& e = trace.events[row.event];
    if (row.lane != last_lane) {
      open.clear();
      last_lane = row.lane;
    }
    while (!open.empty() && open.back() <= e.ts_ns) open.pop_back();
    t.depth.push_back(static_cast<int64_t>(open.size()));
    open.push_back(e.ts_ns + e.dur_ns);
    t.lane.push_back(row.lane);
    t.start_ns.push_back(e.ts_ns - p.begin);
    t.dur_ns.push_back(e.dur_ns);
    auto [it, fresh] = name_of.emplace(e.name, static_cast<int64_t>(c.names.size()));
    if (fresh) c.names.push_back(std::string(trace.strings.Get(e.name)));
    t.name.push_back(it->second);
    t.kind.push_back(static_cast<int64_t>(e.kind));
    const bool device = IsDeviceWork(e.kind);
    t.type.push_back(device ? static_cast<int64_t>(ClassifyDeviceEvent(e.kind, trace.strings.Get(e.name))) : -1);
    int64_t launch = -1;
    if (device && e.correlation != 0) {
      if (auto k = x.runtime_by_corr.find(e.correlation); k != x.runtime_by_corr.end()) {
        if (auto r = c.row_of.find(k->second); r != c.row_of.end()) {
          launch = r->second;
        } else {  // the launch was left out: its time still says which step the work is
          c.launched.push_back({static_cast<int64_t>(t.lane.size()) - 1, trace.events[k->second].ts_ns - p.begin});
        }
      }
    }
    t.launch.push_back(launch);
  }
  return c;
}

// Device work and runtime calls of the whole trace in equal bins.
nlohmann::json Overview(const Trace& trace, int64_t origin) {
  int64_t t0 = INT64_MAX, t1 = INT64_MIN;
  for (const Event& e : trace.events) {
    if (!Drawn(e.kind) || e.dur_ns <= 0) continue;
    t0 = std::min(t0, e.ts_ns);
    t1 = std::max(t1, e.ts_ns + e.dur_ns);
  }
  std::vector<double> device_ns(kTimelineOverviewBins, 0), host_ns(kTimelineOverviewBins, 0);
  const double width = t1 > t0 ? static_cast<double>(t1 - t0) / kTimelineOverviewBins : 1;
  for (const Event& e : trace.events) {
    const bool device = IsDeviceWork(e.kind) || e.kind == EventKind::kTask;
    if (!(device || e.kind == EventKind::kRuntime) || e.dur_ns <= 0 || t1 <= t0) continue;
    std::vector<double>& bins = device ? device_ns : host_ns;
    const double a = static_cast<double>(e.ts_ns - t0), b = a + static_cast<double>(e.dur_ns);
    for (int k = std::max(0, static_cast<int>(a / width)); k < kTimelineOverviewBins && k * width < b; ++k) {
      bins[static_cast<size_t>(k)] += std::min(b, (k + 1) * width) - std::max(a, k * width);
    }
  }
  return {{"begin_ns", t1 > t0 ? t0 - origin : 0}, {"end_ns", t1 > t0 ? t1 - origin : 0},
          {"device_ns", device_ns}, {"host_runtime_ns", host_ns}};
}

nlohmann::json Legends() {
  nlohmann::json causes = nlohmann::json::array(), kinds = nlohmann::json::array(), types = nlohmann::json::array();
  for (int c = 0; c < kPathCauses; ++c) causes.push_back(PathCauseName(static_cast<PathCause>(c)));
  for (int k = 0; k <= static_cast<int>(EventKind::kOther); ++k) kinds.push_back(EventKindName(static_cast<EventKind>(k)));
  for (int k = 0; k < kKernelTypes; ++k) types.push_back(KernelTypeName(static_cast<KernelType>(k)));
  return {{"causes", causes}, {"kinds", kinds}, {"types", types}};
}

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

StatusOr<StepChoice> ChooseStep(const TraceIndex& index, const std::string& requested) {
  StepChoice c;
  c.windows = PathWindows(index);
  c.kernels.assign(c.windows.size(), 0);
  for (size_t i : index.kernels) {
    if (const int at = UnitAt(c.windows, index.LaunchTime(i)); at >= 0) ++c.kernels[static_cast<size_t>(at)];
  }
  TS_ASSIGN_OR_RETURN(c.chosen, ChooseTimelineStep(c.windows, c.kernels, requested, &c.why));
  return c;
}

std::vector<CriticalPath::OnPath> PathEventsOnce(const CriticalPath& path) {
  std::unordered_map<size_t, size_t> at;  // event -> its entry
  std::vector<CriticalPath::OnPath> once;
  std::vector<int64_t> cause_ns;  // the entry's cause's own time
  for (const CriticalPath::OnPath& p : path.events) {
    auto [it, fresh] = at.emplace(p.event, once.size());
    if (fresh) {
      once.push_back(p);
      cause_ns.push_back(p.ns);
      continue;
    }
    CriticalPath::OnPath& o = once[it->second];
    o.ns += p.ns;
    if (p.ns > cause_ns[it->second]) {
      o.cause = p.cause;
      cause_ns[it->second] = p.ns;
    }
  }
  std::stable_sort(once.begin(), once.end(), [](const auto& a, const auto& b) { return a.ns > b.ns; });
  return once;
}

nlohmann::json TimelineOmitted::ToJson() const {
  return {{"events", events},
          {"shorter_than_ns", shorter_than_ns},
          {"critical_path_events", critical_path_events},
          {"device_events", device_events},
          {"host_events", host_events}};
}

void TimelineOmitted::Add(const nlohmann::json& other) {
  events += other["events"].get<int64_t>();
  shorter_than_ns = std::max(shorter_than_ns, other["shorter_than_ns"].get<int64_t>());
  critical_path_events += other["critical_path_events"].get<int64_t>();
  device_events += other["device_events"].get<int64_t>();
  host_events += other["host_events"].get<int64_t>();
}

nlohmann::json TimelineEvents::ToJson() const {
  return {{"lane", lane}, {"start_ns", start_ns}, {"dur_ns", dur_ns}, {"name", name},
          {"kind", kind}, {"depth", depth},       {"type", type},     {"launch", launch}};
}

StatusOr<nlohmann::json> BuildTimeline(const TraceIndex& index, const std::string& requested,
                                       const std::optional<DeviceSpec>& device, const TimelineLimits& limits) {
  TS_ASSIGN_OR_RETURN(const StepChoice choice, ChooseStep(index, requested));
  const WorkUnit& step = choice.step();
  Picked picked = PickEvents(index, choice, limits);
  // The chosen step's critical path: each event's time on it and its cause.
  const CriticalPath path = AnalyzeCriticalPath(index, step.begin_ns, step.end_ns, step.name);
  const std::vector<CriticalPath::OnPath> on = PathEventsOnce(path);
  std::unordered_map<size_t, const CriticalPath::OnPath*> on_path;
  for (const CriticalPath::OnPath& p : on) on_path.emplace(p.event, &p);
  Trim(*index.trace, on_path, std::max<size_t>(limits.max_events, 1), &picked);
  Columns columns = BuildColumns(index, picked);

  nlohmann::json path_rows = nlohmann::json::array();  // [row, ns on the path, cause]
  for (const CriticalPath::OnPath& p : on) {
    if (auto r = columns.row_of.find(p.event); r != columns.row_of.end()) {
      path_rows.push_back({r->second, p.ns, static_cast<int>(p.cause)});
    }
  }
  nlohmann::json steps = nlohmann::json::array();
  const size_t n = choice.windows.size();
  for (size_t s = 0; s < n; ++s) {
    const bool shown = picked.every_step || s == choice.chosen;
    if (n > 2000 && !shown && s % (n / 1000 + 1) != 0) continue;  // a sample of a long list
    const WorkUnit& w = choice.windows[s];
    steps.push_back({{"name", w.name}, {"begin_ns", w.begin_ns - picked.begin}, {"end_ns", w.end_ns - picked.begin},
                     {"kernels", choice.kernels[s]}, {"in_timeline", shown}, {"chosen", s == choice.chosen}});
  }
  nlohmann::json by_cause = nlohmann::json::object();
  for (int c = 0; c < kPathCauses; ++c) by_cause[PathCauseName(static_cast<PathCause>(c))] = path.by_cause[c];

  nlohmann::json j = Legends();
  j["origin_ns"] = picked.begin;
  j["end_ns"] = picked.end - picked.begin;
  j["step"] = step.name;
  j["why"] = choice.why;
  j["every_step"] = picked.every_step;
  j["steps"] = std::move(steps);
  j["lanes"] = std::move(columns.lanes);
  j["names"] = std::move(columns.names);
  j["events"] = columns.events.ToJson();
  j["launched_ns"] = std::move(columns.launched);
  j["omitted"] = picked.omitted.ToJson();
  j["critical_path"] = {{"step", path.window},   {"length_ns", path.length_ns}, {"span_ns", path.span_ns},
                        {"events", on.size()},    {"by_cause", by_cause},        {"cyclic_nodes", path.cyclic_nodes},
                        {"rows", std::move(path_rows)}};
  j["overview"] = Overview(*index.trace, picked.begin);
  j["device"] = device ? DeviceSpecJson(*device) : nlohmann::json();
  return j;
}

}  // namespace tierscope
