// Building the critical path's graph: host call stacks, then the device side (queues,
// event records, waits), the way HTA's CPGraph does.
#include "analysis/critical_path_graph.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_set>

#include "analysis/gpu_time.h"
#include "core/text.h"
#include "trace/args.h"

namespace tierscope {

bool IsBlockingCall(std::string_view n) {
  for (std::string_view p : {"cuda", "hip", "musa"}) {
    if (!n.starts_with(p)) continue;
    const std::string_view rest = n.substr(p.size());
    return OneOf(rest, {"DeviceSynchronize", "StreamSynchronize", "EventQuery", "EventSynchronize", "Memcpy",
                        "MemcpyAsync"});
  }
  if (n.starts_with(kAscendRuntime)) {  // CANN's: aclrtSynchronizeStream and its kin
    const std::string_view rest = n.substr(kAscendRuntime.size());
    return OneOf(rest, {"SynchronizeDevice", "SynchronizeDeviceWithTimeout", "SynchronizeStream",
                        "SynchronizeStreamWithTimeout", "SynchronizeEvent", "SynchronizeEventWithTimeout",
                        "QueryEventStatus", "Memcpy", "MemcpyAsync"});
  }
  return false;
}

namespace {

// HTA's launch calls (get_runtime_launch_events_query), and MUSA's.
bool IsLaunchCall(std::string_view n) {
  return OneOf(n, {"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaMemcpyAsync",
                   "cudaMemsetAsync", "hipLaunchKernel", "hipExtModuleLaunchKernel", "hipMemcpyAsync",
                   "hipMemsetAsync", "hipMemcpyWithStream", "musaLaunchKernel", "musaLaunchKernelExC",
                   "musaMemcpyAsync", "musaMemsetAsync", "runFunction - job_prep_and_submit_for_execution"});
}
bool IsEventRecord(std::string_view n) { return n == "cudaEventRecord" || n == "hipEventRecord" || n == "musaEventRecord"; }

// An integer member of an event's args (a correlation id, a stream), or nullopt.
std::optional<int64_t> IntArg(std::string_view args, std::string_view key) {
  const std::optional<double> v = ArgNumber(args, key);
  if (!v || *v != std::floor(*v) || std::fabs(*v) > 9e15) return std::nullopt;
  return static_cast<int64_t>(*v);
}

using Stream = std::pair<int32_t, int32_t>;  // (device pid, stream)
using Launch = PathContext::Launch;

bool HasDuration(const Event& e) { return e.dur_ns > 0; }

void SortByStart(const TraceIndex& x, std::vector<size_t>& v) {
  std::sort(v.begin(), v.end(), [&](size_t a, size_t b) { return std::make_pair(x.E(a).ts_ns, a) < std::make_pair(x.E(b).ts_ns, b); });
}

// Queue length per stream (HTA's): +1 when a launch call enqueues, -1 when its device event
// starts; the value after the launch and after the start, for each device event. Graph
// launches are not counted (their kernels are handled apart), but are launches.
void Queues(const TraceIndex& x, PathContext& c) {
  std::map<Stream, std::vector<std::tuple<int64_t, int, size_t>>> steps;  // ts, -1 launch / +1 start, event
  std::map<std::pair<size_t, Stream>, std::pair<size_t, size_t>> replays;  // (graph call, stream) -> first, last
  for (const std::vector<size_t>* list : {&x.kernels, &x.memops}) {
    for (size_t i : *list) {
      const Event& d = x.E(i);
      const auto r = d.correlation != 0 ? x.runtime_by_corr.find(d.correlation) : x.runtime_by_corr.end();
      if (r == x.runtime_by_corr.end()) continue;
      if (IsGraphLaunch(x.Name(r->second))) {
        auto [it, fresh] = replays.try_emplace({r->second, {d.pid, d.tid}}, i, i);
        if (!fresh && d.ts_ns < x.E(it->second.first).ts_ns) it->second.first = i;
        if (!fresh && d.ts_ns >= x.E(it->second.second).ts_ns) it->second.second = i;
        continue;
      }
      if (!IsLaunchCall(x.Name(r->second))) continue;
      auto& s = steps[{d.pid, d.tid}];
      s.emplace_back(x.E(r->second).ts_ns, -1, i);
      s.emplace_back(d.ts_ns, +1, i);
      c.launches[{d.pid, d.tid}].push_back({x.E(r->second).ts_ns, i, i, r->second});
    }
  }
  for (const auto& [key, ends] : replays) {
    c.launches[key.second].push_back({x.E(key.first).ts_ns, ends.first, ends.second, key.first});
  }
  for (auto& [stream, s] : steps) {
    std::sort(s.begin(), s.end());
    int32_t q = 0;
    for (const auto& [ts, kind, event] : s) {
      q += kind < 0 ? 1 : -1;
      (kind < 0 ? c.queue_at_launch : c.queue_at_start)[event] = q;
    }
  }
  for (auto& [stream, l] : c.launches) {
    std::sort(l.begin(), l.end());
    for (const Launch& launch : l) {
      const Event& call = x.E(launch.call);
      c.launches_by_thread[{stream.first, stream.second, call.pid, call.tid}].push_back(launch);
    }
  }
}

// cudaEventRecord -> the last launch on the event's stream before it: the device event a
// later wait on that record waits for. The record's stream comes from the waits.
void EventRecords(const TraceIndex& x, PathContext& c) {
  std::map<int64_t, Stream> record_stream;  // record call's correlation -> (gpu, stream)
  for (size_t i : x.syncs) {
    const Event& s = x.E(i);
    if (s.args < 0) continue;
    const std::string_view args = x.trace->strings.Get(s.args);
    const auto corr = IntArg(args, "wait_on_cuda_event_record_corr_id");
    const auto stream = IntArg(args, "wait_on_stream");
    if (corr && stream && *stream >= 0) record_stream[*corr] = {s.pid, static_cast<int32_t>(*stream)};
  }
  for (size_t r : x.runtime) {
    if (!IsEventRecord(x.Name(r))) continue;
    const auto it = record_stream.find(x.E(r).correlation);
    if (it == record_stream.end()) continue;
    const auto l = c.launches.find(it->second);
    if (l == c.launches.end()) continue;
    const auto after =
        std::upper_bound(l->second.begin(), l->second.end(), Launch{x.E(r).ts_ns, SIZE_MAX, SIZE_MAX, SIZE_MAX});
    if (after != l->second.begin()) c.recorded[x.E(r).correlation] = std::prev(after)->last;
  }
}

// tierscope's CPU engine: the operator that launched a kernel returns after the kernel has
// run (the backend joins its workers), so its ops wait for their kernels.
bool SynchronousLaunches(const Trace& t) { return t.runtime == "cpu" && t.device_name.rfind("cpu", 0) == 0; }

class Builder {
 public:
  Builder(const TraceIndex& x, PathContext& c, int64_t begin, int64_t end)
      : x_(x), c_(c), begin_(begin), end_(end), synchronous_(SynchronousLaunches(*x.trace)) {}

  PathGraph Build() {
    SelectEvents();
    HostEdges();
    DeviceEdges();
    for (size_t i : g_.node_event) c_.start_of[i] = c_.end_of[i] = PathContext::kNone;  // for the next window
    return std::move(g_);
  }

 private:
  // The events of `sorted` (by start) that start in the window.
  std::pair<std::vector<size_t>::const_iterator, std::vector<size_t>::const_iterator> InWindow(
      const std::vector<size_t>& sorted) const {
    const auto by_ts = [&](size_t i, int64_t ts) { return x_.E(i).ts_ns < ts; };
    const auto first = std::lower_bound(sorted.begin(), sorted.end(), begin_, by_ts);
    const auto last = std::lower_bound(first, sorted.end(), end_ + 1, by_ts);
    return {first, last};
  }

  void AddNodes(size_t i) {
    const Event& e = x_.E(i);
    for (bool start : {true, false}) {
      (start ? c_.start_of : c_.end_of)[i] = static_cast<uint32_t>(g_.node_ts.size());
      g_.node_ts.push_back(start ? e.ts_ns : e.ts_ns + e.dur_ns);
      g_.node_event.push_back(i);
      g_.node_is_start.push_back(start);
    }
  }

  // An edge's time is its nodes' difference, but for dependencies, waits and a blocking
  // call's wait; the time is attributed as HTA does (a span to the op it lies in, a gap to
  // the kernel before it, the time between two nested ops to their parent).
  void AddEdge(uint32_t from, uint32_t to, PathEdgeType type, bool zero = false, int64_t parent = -1,
               std::optional<int64_t> weight = std::nullopt) {
    int64_t w = 0;
    if (weight) {
      w = std::max<int64_t>(0, *weight);
    } else if (!zero && type != PathEdgeType::kDependency && type != PathEdgeType::kSync) {
      w = g_.node_ts[to] - g_.node_ts[from];
      if (w < 0) ++g_.negative, w = 0;
    }
    int64_t event = -1;
    if (type == PathEdgeType::kKernelKernel) event = static_cast<int64_t>(g_.node_event[from]);
    else if (type == PathEdgeType::kSpan && g_.node_is_start[from]) event = static_cast<int64_t>(g_.node_event[from]);
    else if (type == PathEdgeType::kSpan && !g_.node_is_start[to]) event = static_cast<int64_t>(g_.node_event[to]);
    else if (type == PathEdgeType::kSpan) event = parent;
    g_.edges.push_back({from, to, w, type, event});
  }

  // Host events with a duration that start in the window (operators and runtime calls get
  // nodes; annotations and Python frames only nest them), and the device events their
  // launches made.
  void SelectEvents() {
    std::unordered_set<int32_t> host_pids;
    for (auto [it, last] = InWindow(c_.host); it != last; ++it) {
      AddNodes(*it);
      host_pids.insert(x_.E(*it).pid);
      threads_[{x_.E(*it).pid, x_.E(*it).tid}].push_back({*it, true});
    }
    for (auto [it, last] = InWindow(c_.nesting); it != last; ++it) {
      if (host_pids.count(x_.E(*it).pid) != 0) threads_[{x_.E(*it).pid, x_.E(*it).tid}].push_back({*it, false});
    }
    const auto first = std::lower_bound(c_.device.begin(), c_.device.end(), std::make_pair(begin_, size_t{0}));
    for (auto it = first; it != c_.device.end() && it->first <= end_; ++it) {
      const Event& d = x_.E(it->second);
      if (c_.device_only) {  // no launch to wait for
        device_.push_back(it->second);
        AddNodes(it->second);
        continue;
      }
      if (c_.end_of[x_.runtime_by_corr.at(d.correlation)] == PathContext::kNone) continue;  // no duration
      device_.push_back(it->second);
      if (d.kind != EventKind::kSync) AddNodes(it->second);
      if (synchronous_ && d.kind != EventKind::kSync) {
        kernel_end_of_call_[x_.runtime_by_corr.at(d.correlation)] = c_.end_of[it->second];
      }
    }
  }

  // Each thread's call stack, depth first: an op's start after the previous node, its end
  // after its last child's; top-level ops one after another by a dependency edge.
  void HostEdges() {
    for (auto& [thread, events] : threads_) {
      std::sort(events.begin(), events.end(), [&](const HostEvent& a, const HostEvent& b) {
        const Event &p = x_.E(a.event), &q = x_.E(b.event);
        return std::tie(p.ts_ns, q.dur_ns, a.node, a.event) < std::tie(q.ts_ns, p.dur_ns, b.node, b.event);
      });
      std::vector<HostEvent> stack;
      int64_t last = -1, last_top = -1;  // nodes; -1: none
      int depth = 0;
      int64_t last_parent = -1;
      const auto parent = [&]() { return stack.empty() ? int64_t{-1} : static_cast<int64_t>(stack.back().event); };
      const auto exit = [&]() {
        const HostEvent top = stack.back();
        stack.pop_back();
        if (!top.node) return;
        const uint32_t end = c_.end_of[top.event];
        --depth;
        const auto waited = waits_for_.find(top.event);
        if (waited != waits_for_.end()) {
          // The op returned after its kernel: the wait weighs nothing, the op's own time
          // after it (from its last child or the kernel's end, the later) is the op's.
          const int64_t after = g_.node_ts[end] - std::max(last >= 0 ? g_.node_ts[static_cast<size_t>(last)] : 0,
                                                           g_.node_ts[waited->second]);
          AddEdge(waited->second, end, PathEdgeType::kSpan, false, -1, after);
          if (last >= 0) AddEdge(static_cast<uint32_t>(last), end, PathEdgeType::kSpan, false, last_parent, after);
        } else if (last >= 0) {
          AddEdge(static_cast<uint32_t>(last), end, PathEdgeType::kSpan, IsBlockingCall(x_.Name(top.event)), last_parent);
        }
        if (depth == 0) {
          last = -1;
          last_top = end;
        } else {
          last = end;
          last_parent = parent();
        }
      };
      for (const HostEvent& h : events) {
        const Event& e = x_.E(h.event);
        while (!stack.empty() && x_.E(stack.back().event).ts_ns + x_.E(stack.back().event).dur_ns <= e.ts_ns) exit();
        const int64_t my_parent = parent();
        if (const auto k = kernel_end_of_call_.find(h.event); k != kernel_end_of_call_.end()) {
          // A synchronous launch: the innermost operator around it waits for the kernel.
          for (auto op = stack.rbegin(); op != stack.rend(); ++op) {
            if (!op->node || x_.E(op->event).kind != EventKind::kOp) continue;
            auto [w, fresh] = waits_for_.try_emplace(op->event, k->second);
            if (!fresh && g_.node_ts[k->second] > g_.node_ts[w->second]) w->second = k->second;
            break;
          }
        }
        stack.push_back(h);
        if (!h.node) continue;
        const uint32_t start = c_.start_of[h.event];
        if (depth == 0 && last_top >= 0) AddEdge(static_cast<uint32_t>(last_top), start, PathEdgeType::kDependency);
        ++depth;
        if (last >= 0) AddEdge(static_cast<uint32_t>(last), start, PathEdgeType::kSpan, false, last_parent);
        last = start;
        last_parent = my_parent;
      }
      while (!stack.empty()) exit();
    }
  }

  // The device event a stream wait makes wait: the next launch onto the waiting stream
  // from the thread that called cudaStreamWaitEvent.
  std::optional<size_t> NextLaunch(size_t wait_call, const Stream& stream) const {
    const Event& w = x_.E(wait_call);
    const auto l = c_.launches_by_thread.find({stream.first, stream.second, w.pid, w.tid});
    if (l == c_.launches_by_thread.end()) return std::nullopt;
    const auto it = std::lower_bound(l->second.begin(), l->second.end(), Launch{w.ts_ns, 0, 0, 0});
    if (it == l->second.end()) return std::nullopt;
    return it->first;
  }

  void Sync(size_t s, std::map<Stream, uint32_t>& last, std::unordered_map<size_t, size_t>& waits) {
    const Event& e = x_.E(s);
    const std::string_view name = x_.Name(s);
    const size_t call = x_.runtime_by_corr.at(e.correlation);
    const uint32_t call_end = c_.end_of[call];
    if (name == "Stream Wait Event" || name == "Event Sync") {
      const auto corr = e.args >= 0 ? IntArg(x_.trace->strings.Get(e.args), "wait_on_cuda_event_record_corr_id")
                                    : std::nullopt;
      const auto src = corr ? c_.recorded.find(*corr) : c_.recorded.end();
      if (src == c_.recorded.end()) return;
      if (name == "Event Sync") {
        if (const uint32_t end = c_.end_of[src->second]; end != PathContext::kNone) {
          AddEdge(end, call_end, PathEdgeType::kSync);
        }
      } else if (const std::optional<size_t> dest = NextLaunch(call, {e.pid, e.tid})) {
        waits[*dest] = src->second;
      }
      return;
    }
    if (name == "Context Sync") {  // every stream of its device
      for (auto it = last.lower_bound({e.pid, INT32_MIN}); it != last.end() && it->first.first == e.pid; ++it) {
        AddEdge(it->second, call_end, PathEdgeType::kSync);
      }
    } else if (name == "Stream Sync") {
      if (auto it = last.find({e.pid, e.tid}); it != last.end()) AddEdge(it->second, call_end, PathEdgeType::kSync);
    }
    // Anything else (an Ascend stream's EVENT_RECORD or EVENT_WAIT task, an unknown sync) is
    // the device's, not a wait of the host's: a stream's wait stays in its order's gaps.
  }

  // Device events in start order (waits at their end): each its span; after the kernel
  // it waits for (an event wait); after its launch when the stream was idle, else after
  // the previous kernel on its stream (the gap).
  void DeviceEdges() {
    std::sort(device_.begin(), device_.end(), [&](size_t a, size_t b) {
      const auto key = [&](size_t i) {
        const Event& e = x_.E(i);
        return e.kind == EventKind::kSync ? e.ts_ns + e.dur_ns : e.ts_ns;
      };
      return std::make_pair(key(a), a) < std::make_pair(key(b), b);
    });
    std::map<Stream, uint32_t> last;
    std::unordered_map<size_t, size_t> waits;       // device event -> the one it waits for
    std::set<std::pair<int64_t, Stream>> replayed;  // (graph launch's correlation, stream) begun
    for (size_t i : device_) {
      const Event& d = x_.E(i);
      if (d.kind == EventKind::kSync) {
        Sync(i, last, waits);
        continue;
      }
      const Stream stream{d.pid, d.tid};
      if (c_.device_only) {  // after the one before it on its stream, the gap as it was
        AddEdge(c_.start_of[i], c_.end_of[i], PathEdgeType::kSpan);
        if (const auto prev = last.find(stream); prev != last.end()) {
          AddEdge(prev->second, c_.start_of[i], PathEdgeType::kKernelKernel);
        }
        last[stream] = c_.end_of[i];
        continue;
      }
      const size_t call = x_.runtime_by_corr.at(d.correlation);
      const int64_t call_ts = x_.E(call).ts_ns;
      const uint32_t start = c_.start_of[i], end = c_.end_of[i];
      AddEdge(start, end, PathEdgeType::kSpan);
      if (c_.start_of[call] != PathContext::kNone) g_.launch_call[start] = c_.start_of[call];
      std::optional<uint32_t> wait_end;
      if (auto w = waits.find(i); w != waits.end()) {
        if (const uint32_t n = c_.end_of[w->second]; n != PathContext::kNone) {
          wait_end = n;
          AddEdge(n, start, PathEdgeType::kSync);
        }
      }
      const auto prev = last.find(stream);
      const bool idle_at_launch = prev == last.end() || g_.node_ts[prev->second] < call_ts;
      const bool wait_done = !wait_end || g_.node_ts[*wait_end] < call_ts;
      bool launch_edge = false;
      if (IsGraphLaunch(x_.Name(call))) {
        ++g_.graph_kernels;
        launch_edge = replayed.insert({d.correlation, stream}).second && idle_at_launch && wait_done;
      } else {
        launch_edge = c_.queue_at_launch[i] == 1 && c_.queue_at_start[i] == 0 && idle_at_launch && wait_done;
      }
      if (launch_edge) {
        AddEdge(c_.start_of[call], start, PathEdgeType::kLaunch);
      } else if (prev != last.end() && (!wait_end || g_.node_ts[*wait_end] < g_.node_ts[prev->second])) {
        AddEdge(prev->second, start, PathEdgeType::kKernelKernel);
      }
      last[stream] = end;
    }
  }

  struct HostEvent {
    size_t event;
    bool node;  // an operator or runtime call (else it only nests them)
  };

  const TraceIndex& x_;
  PathContext& c_;
  const int64_t begin_, end_;
  PathGraph g_;
  const bool synchronous_;
  std::map<std::pair<int32_t, int32_t>, std::vector<HostEvent>> threads_;
  std::vector<size_t> device_;
  std::unordered_map<size_t, uint32_t> kernel_end_of_call_;  // synchronous: launch call -> its kernel's end node
  std::unordered_map<size_t, uint32_t> waits_for_;           // op -> the last kernel end it waits for
};

}  // namespace

PathContext BuildPathContext(const TraceIndex& x) {
  PathContext c;
  const size_t n = x.trace->events.size();
  c.start_of.assign(n, PathContext::kNone);
  c.end_of.assign(n, PathContext::kNone);
  c.queue_at_launch.assign(n, 0);
  c.queue_at_start.assign(n, 0);
  for (const std::vector<size_t>* list : {&x.ops, &x.runtime}) {
    for (size_t i : *list) {
      if (HasDuration(x.E(i))) c.host.push_back(i);
    }
  }
  SortByStart(x, c.host);
  std::unordered_set<int32_t> host_pids;
  for (size_t i : c.host) host_pids.insert(x.E(i).pid);
  for (size_t i = 0; i < n; ++i) {
    const Event& e = x.E(i);
    if ((e.kind == EventKind::kAnnotation || e.kind == EventKind::kOther) && HasDuration(e) && host_pids.count(e.pid)) {
      c.nesting.push_back(i);
    }
  }
  SortByStart(x, c.nesting);
  for (const std::vector<size_t>* list : {&x.kernels, &x.memops, &x.syncs}) {
    for (size_t i : *list) {
      const Event& d = x.E(i);
      const auto r = d.correlation != 0 ? x.runtime_by_corr.find(d.correlation) : x.runtime_by_corr.end();
      if (r != x.runtime_by_corr.end()) c.device.emplace_back(x.E(r->second).ts_ns, i);
    }
  }
  if (c.device.empty()) {  // device-only, if any device work has a duration
    for (const std::vector<size_t>* list : {&x.kernels, &x.memops}) {
      for (size_t i : *list) {
        if (HasDuration(x.E(i))) c.device.emplace_back(x.E(i).ts_ns, i);
      }
    }
    c.device_only = !c.device.empty();
  }
  std::sort(c.device.begin(), c.device.end());
  Queues(x, c);
  EventRecords(x, c);
  return c;
}

PathGraph BuildPathGraph(const TraceIndex& x, PathContext& c, int64_t begin_ns, int64_t end_ns) {
  return Builder(x, c, begin_ns, end_ns).Build();
}

}  // namespace tierscope
