// whatif_facts.h: what a window's graph says whatever the changes, found once per window.
#include "analysis/whatif_facts.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <tuple>
#include <unordered_set>
#include <utility>

#include "analysis/gpu_time.h"
#include "core/stats.h"

namespace tierscope {

// Whether edge `e` is a blocking call's own span, ending at its end node, with no recorded
// sync to end it.
bool UnsyncedBlockingSpan(const TraceIndex& x, const PathGraph& g, const std::vector<bool>& waited,
                          const PathGraph::Edge& e) {
  return e.type == PathEdgeType::kSpan && e.event >= 0 && x.E(static_cast<size_t>(e.event)).kind == EventKind::kRuntime &&
         !waited[e.to] && g.node_event[e.to] == static_cast<size_t>(e.event) && !g.node_is_start[e.to] &&
         IsBlockingCall(x.Name(static_cast<size_t>(e.event)));
}

namespace {

// What a blocking call with no recorded sync is taken to wait for: of the device events its
// process launched before it and that ended while it ran, every one (a device sync), the
// last (a stream or event sync, a synchronous copy: the work ahead of it, then its copy),
// only its own copy (an async copy, which blocks only for pageable memory), or none (an
// event query never waits).
enum class WaitsFor { kNothing, kOwnCopy, kLast, kEvery };
WaitsFor WaitsForOf(std::string_view name) {
  for (std::string_view p : {"cuda", "hip", "musa"}) {
    if (!name.starts_with(p)) continue;
    const std::string_view rest = name.substr(p.size());
    if (rest == "DeviceSynchronize") return WaitsFor::kEvery;
    if (rest == "StreamSynchronize" || rest == "EventSynchronize" || rest == "Memcpy") return WaitsFor::kLast;
    if (rest == "MemcpyAsync") return WaitsFor::kOwnCopy;
  }
  if (name.starts_with(kAscendRuntime)) {  // CANN's, with or without a timeout
    std::string_view rest = name.substr(kAscendRuntime.size());
    if (rest.ends_with("WithTimeout")) rest.remove_suffix(std::string_view("WithTimeout").size());
    if (rest == "SynchronizeDevice") return WaitsFor::kEvery;
    if (rest == "SynchronizeStream" || rest == "SynchronizeEvent" || rest == "Memcpy") return WaitsFor::kLast;
    if (rest == "MemcpyAsync") return WaitsFor::kOwnCopy;
  }
  return WaitsFor::kNothing;
}

// A device event's end, with what the inferences ask of it.
struct DeviceEnd {
  int64_t ts;
  uint32_t end, start;
  uint32_t launch;  // its launch call's start node, or PathContext::kNone (launched before the window)
  int32_t device, stream;
};

// The window's device events by end time (then node), from their spans.
std::vector<DeviceEnd> DeviceEnds(const TraceIndex& x, const PathGraph& g) {
  std::vector<DeviceEnd> out;
  for (const PathGraph::Edge& e : g.edges) {
    if (e.type != PathEdgeType::kSpan || e.event < 0 || !g.node_is_start[e.from]) continue;
    const Event& d = x.E(static_cast<size_t>(e.event));
    if (!IsDeviceWork(d.kind)) continue;
    const auto call = g.launch_call.find(e.from);
    out.push_back({g.node_ts[e.to], e.to, e.from, call == g.launch_call.end() ? PathContext::kNone : call->second,
                   d.pid, d.tid});
  }
  std::sort(out.begin(), out.end(),
            [](const DeviceEnd& a, const DeviceEnd& b) { return std::tie(a.ts, a.end) < std::tie(b.ts, b.end); });
  return out;
}

// The first of `ends` (by time) ending after `ts`.
std::vector<DeviceEnd>::const_iterator EndAfter(const std::vector<DeviceEnd>& ends, int64_t ts) {
  return std::upper_bound(ends.begin(), ends.end(), ts, [](int64_t t, const DeviceEnd& e) { return t < e.ts; });
}

// FactsOf's `awaited`, where a device event ended while the call ran (else the call waited
// for nothing the trace shows, and keeps its time).
void InferWaits(const TraceIndex& x, const PathGraph& g, const std::vector<DeviceEnd>& device, WindowFacts& f) {
  constexpr int kMaxLook = 4096;  // device events looked at a call
  for (const PathGraph::Edge& e : g.edges) {
    if (!UnsyncedBlockingSpan(x, g, f.waited, e)) continue;
    const size_t blocking = static_cast<size_t>(e.event);
    const WaitsFor what = WaitsForOf(x.Name(blocking));
    if (what == WaitsFor::kNothing) continue;
    const Event& call = x.E(blocking);
    const int64_t start = call.ts_ns, end = g.node_ts[e.to];
    auto it = EndAfter(device, end);
    std::vector<uint32_t> ends;
    for (int looked = 0; it != device.begin() && looked < kMaxLook; ++looked) {
      --it;
      if (it->ts < start) break;
      if (it->launch == PathContext::kNone) continue;  // launched before the window, not by it
      const size_t launch = g.node_event[it->launch];
      const bool ours = what == WaitsFor::kOwnCopy ? launch == blocking
                                                   : g.node_ts[it->launch] <= start && x.E(launch).pid == call.pid;
      if (!ours) continue;
      ends.push_back(it->end);
      if (what != WaitsFor::kEvery) break;
    }
    if (!ends.empty()) f.awaited[e.to] = std::move(ends);
  }
}

// Whether `name` makes a stream wait for an event another stream records (CUDA's, HIP's,
// MUSA's cudaStreamWaitEvent, CANN's aclrtStreamWaitEvent).
bool IsStreamWaitCall(std::string_view name) { return name.ends_with("StreamWaitEvent"); }

// The kernels a stream-wait call of their launching thread precedes (since the launch of
// the work before them on their stream), with that call's time, and the end node of the
// work before each on its stream. Kernels a recorded wait holds are left out: the graph has
// their wait.
struct AfterWaitCalls {
  std::unordered_map<uint32_t, int64_t> waited_at;  // start node -> the wait call's time
  std::unordered_map<uint32_t, uint32_t> before;    // start node -> the end node before it on its stream
};
AfterWaitCalls KernelsAfterWaitCalls(const TraceIndex& x, const PathGraph& g) {
  AfterWaitCalls out;
  using Thread = std::pair<int32_t, int32_t>;
  std::map<Thread, std::vector<int64_t>> wait_calls;  // a thread's stream-wait calls' starts, sorted
  for (size_t v = 0; v < g.node_ts.size(); ++v) {
    const Event& e = x.E(g.node_event[v]);
    if (g.node_is_start[v] && e.kind == EventKind::kRuntime && IsStreamWaitCall(x.Name(g.node_event[v]))) {
      wait_calls[{e.pid, e.tid}].push_back(e.ts_ns);
    }
  }
  if (wait_calls.empty()) return out;
  for (auto& [thread, calls] : wait_calls) std::sort(calls.begin(), calls.end());
  std::unordered_set<uint32_t> synced;  // device start nodes a recorded wait holds
  for (const PathGraph::Edge& e : g.edges) {
    if (e.type == PathEdgeType::kKernelKernel) out.before[e.to] = e.from;
    if (e.type == PathEdgeType::kSync) synced.insert(e.to);
  }
  for (const auto& [start, call] : g.launch_call) {
    if (synced.count(start) != 0) continue;
    const Event& c = x.E(g.node_event[call]);
    int64_t since = INT64_MIN;
    if (const auto prev = out.before.find(start); prev != out.before.end()) {
      // AddNodes makes an event's end node right after its start node.
      const auto prev_call = g.launch_call.find(static_cast<uint32_t>(prev->second - 1));
      if (prev_call != g.launch_call.end()) since = g.node_ts[prev_call->second];
    }
    const auto calls = wait_calls.find({c.pid, c.tid});
    if (calls == wait_calls.end()) continue;
    const auto wait = std::lower_bound(calls->second.begin(), calls->second.end(), g.node_ts[call]);
    if (wait != calls->second.begin() && *std::prev(wait) > since) out.waited_at[start] = *std::prev(wait);
  }
  return out;
}

// The typical launch delay: the median of the launch edges' delays, else the least
// launch-to-start time; the kernels in `left_out` (launched after a wait call: their delay
// may hold the wait) left out, unless nothing else is left.
double TypicalLaunchDelay(const PathGraph& g, const std::unordered_map<uint32_t, int64_t>& left_out) {
  std::vector<double> delays, least;
  for (const PathGraph::Edge& e : g.edges) {
    if (e.type == PathEdgeType::kLaunch && left_out.count(e.to) == 0) {
      delays.push_back(static_cast<double>(std::max<int64_t>(0, g.node_ts[e.to] - g.node_ts[e.from])));
    }
  }
  if (!delays.empty()) return Median(delays);
  for (const auto& [start, call] : g.launch_call) {
    if (left_out.count(start) == 0) least.push_back(static_cast<double>(std::max<int64_t>(0, g.node_ts[start] - g.node_ts[call])));
  }
  if (!least.empty()) return *std::min_element(least.begin(), least.end());
  return left_out.empty() ? 0 : TypicalLaunchDelay(g, {});
}

// FactsOf's `stream_waits`: a kernel launched after a wait call (KernelsAfterWaitCalls) that
// started later than both its launch and the work before it on its stream explain, and that
// another stream's work (O, same device, launched before the wait call) ended just before —
// within the slack an event takes to reach a stream — is taken to have waited for O.
void InferStreamWaits(const TraceIndex& x, const PathGraph& g, const AfterWaitCalls& candidates,
                      const std::vector<DeviceEnd>& ends, WindowFacts& f) {
  // An event reaches a waiting stream within a few of the device's queued gaps.
  const double slack = 20'000 + 4 * f.device_gap;
  constexpr int kMaxLook = 64;  // ends looked at for another stream's
  for (const auto& [start, waited_at] : candidates.waited_at) {
    const Event& d = x.E(g.node_event[start]);
    const int64_t ts = g.node_ts[start];
    const auto prev = candidates.before.find(start);
    // Late: past what its launch and the work before it explain by more than the slack.
    const double ready =
        std::max(static_cast<double>(g.node_ts[g.launch_call.at(start)]) + f.launch_delay,
                 prev != candidates.before.end() ? static_cast<double>(g.node_ts[prev->second]) + f.device_gap : 0.0);
    if (static_cast<double>(ts) - ready <= slack) continue;
    auto it = EndAfter(ends, ts);
    for (int looked = 0; it != ends.begin() && looked < kMaxLook; ++looked) {
      --it;
      if (static_cast<double>(ts - it->ts) > slack) break;
      if (it->device != d.pid || it->stream == d.tid) continue;
      // An event records only work launched before the wait call (work launched before the
      // window was).
      if (it->launch != PathContext::kNone && g.node_ts[it->launch] > waited_at) continue;
      f.stream_waits[start] = it->end;
      break;
    }
  }
}

}  // namespace

WindowFacts FactsOf(const TraceIndex& x, const PathGraph& g) {
  WindowFacts f;
  f.waited.assign(g.node_ts.size(), false);
  f.causes.reserve(g.edges.size());
  std::vector<double> queued_gaps;
  for (const PathGraph::Edge& e : g.edges) {
    f.causes.push_back(EdgeCause(x, e));
    if (e.type == PathEdgeType::kSync && !IsDeviceWork(x.E(g.node_event[e.to]).kind)) f.waited[e.to] = true;
    if (e.type == PathEdgeType::kKernelKernel) {
      const auto call = g.launch_call.find(e.to);
      if (call != g.launch_call.end() && g.node_ts[call->second] < g.node_ts[e.from]) {
        queued_gaps.push_back(static_cast<double>(std::max<int64_t>(0, g.node_ts[e.to] - g.node_ts[e.from])));
      }
    }
  }
  const AfterWaitCalls after_wait = KernelsAfterWaitCalls(x, g);
  f.launch_delay = TypicalLaunchDelay(g, after_wait.waited_at);
  f.device_gap = queued_gaps.empty() ? 0 : Median(queued_gaps);
  const std::vector<DeviceEnd> ends = DeviceEnds(x, g);
  InferWaits(x, g, ends, f);
  InferStreamWaits(x, g, after_wait, ends, f);
  return f;
}

}  // namespace tierscope
