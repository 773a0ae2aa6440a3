// Building the critical path's graph: host call stacks, then the device side (queues,
// event records, waits), the way HTA's CPGraph does.
#include "analysis/critical_path_graph.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_set>

#include "trace/args.h"

namespace tierscope {
namespace {

bool OneOf(std::string_view n, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), n) != names.end();
}

// HTA's launch calls (get_runtime_launch_events_query), and MUSA's.
bool IsLaunchCall(std::string_view n) {
  return OneOf(n, {"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaMemcpyAsync",
                   "cudaMemsetAsync", "hipLaunchKernel", "hipExtModuleLaunchKernel", "hipMemcpyAsync",
                   "hipMemsetAsync", "hipMemcpyWithStream", "musaLaunchKernel", "musaLaunchKernelExC",
                   "musaMemcpyAsync", "musaMemsetAsync", "runFunction - job_prep_and_submit_for_execution"});
}
bool IsGraphLaunch(std::string_view n) { return n.find("GraphLaunch") != std::string_view::npos; }
// Calls that block the host until the device catches up: their wait is not host work
// (HTA's BLOCKING_SYNC_CALLS, and HIP's and MUSA's).
bool IsBlocking(std::string_view n) {
  for (std::string_view p : {"cuda", "hip", "musa"}) {
    if (!n.starts_with(p)) continue;
    const std::string_view rest = n.substr(p.size());
    return OneOf(rest, {"DeviceSynchronize", "StreamSynchronize", "EventQuery", "EventSynchronize", "Memcpy",
                        "MemcpyAsync"});
  }
  return false;
}
bool IsEventRecord(std::string_view n) { return n == "cudaEventRecord" || n == "hipEventRecord" || n == "musaEventRecord"; }

std::optional<int64_t> IntArg(std::string_view args, std::string_view key) {
  const std::string_view v = ArgValue(args, key);
  int64_t out = 0;
  if (v.empty() || std::from_chars(v.data(), v.data() + v.size(), out).ec != std::errc()) return std::nullopt;
  return out;
}

using Stream = std::pair<int32_t, int32_t>;  // (device pid, stream)

class Builder {
 public:
  Builder(const TraceIndex& x, int64_t begin, int64_t end) : x_(x), begin_(begin), end_(end) {}

  PathGraph Build() {
    SelectEvents();
    HostEdges();
    DeviceQueues();
    EventRecords();
    DeviceEdges();
    return std::move(g_);
  }

 private:
  bool InWindow(const Event& e) const { return e.ts_ns >= begin_ && e.ts_ns <= end_ && e.dur_ns > 0; }

  void AddNodes(size_t i) {
    const Event& e = x_.E(i);
    for (bool start : {true, false}) {
      (start ? g_.start_of : g_.end_of)[i] = static_cast<uint32_t>(g_.node_ts.size());
      g_.node_ts.push_back(start ? e.ts_ns : e.ts_ns + e.dur_ns);
      g_.node_event.push_back(i);
      g_.node_is_start.push_back(start);
    }
  }

  // An edge's time is its nodes' difference, but for dependencies, waits and a blocking
  // call's wait; the time is attributed as HTA does (a span to the op it lies in, a gap to
  // the kernel before it, the time between two nested ops to their parent).
  void AddEdge(uint32_t from, uint32_t to, PathEdgeType type, bool zero = false, int64_t parent = -1) {
    int64_t w = 0;
    if (!zero && type != PathEdgeType::kDependency && type != PathEdgeType::kSync) {
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
    for (const std::vector<size_t>* list : {&x_.ops, &x_.runtime}) {
      for (size_t i : *list) {
        if (!InWindow(x_.E(i))) continue;
        AddNodes(i);
        host_pids.insert(x_.E(i).pid);
        threads_[{x_.E(i).pid, x_.E(i).tid}].push_back({i, true});
      }
    }
    for (size_t i = 0; i < x_.trace->events.size(); ++i) {
      const Event& e = x_.E(i);
      if ((e.kind == EventKind::kAnnotation || e.kind == EventKind::kOther) && host_pids.count(e.pid) != 0 &&
          InWindow(e)) {
        threads_[{e.pid, e.tid}].push_back({i, false});
      }
    }
    for (const std::vector<size_t>* list : {&x_.kernels, &x_.memops, &x_.syncs}) {
      for (size_t i : *list) {
        const Event& d = x_.E(i);
        const auto r = d.correlation != 0 ? x_.runtime_by_corr.find(d.correlation) : x_.runtime_by_corr.end();
        if (r == x_.runtime_by_corr.end() || g_.end_of.count(r->second) == 0) continue;
        device_.push_back(i);
        if (d.kind != EventKind::kSync) AddNodes(i);
      }
    }
  }

  // Each thread's call stack, depth first: an op's start after the previous node, its end
  // after its last child's; top-level ops one after another by a dependency edge.
  void HostEdges() {
    for (auto& [thread, events] : threads_) {
      std::sort(events.begin(), events.end(), [&](const HostEvent& a, const HostEvent& b) {
        const Event &p = x_.E(a.event), &q = x_.E(b.event);
        return std::tie(p.ts_ns, q.dur_ns, a.node) < std::tie(q.ts_ns, p.dur_ns, b.node);  // outer first
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
        const uint32_t end = g_.end_of.at(top.event);
        --depth;
        if (last >= 0) AddEdge(static_cast<uint32_t>(last), end, PathEdgeType::kSpan, IsBlocking(x_.Name(top.event)),
                               last_parent);
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
        stack.push_back(h);
        if (!h.node) continue;
        const uint32_t start = g_.start_of.at(h.event);
        if (depth == 0 && last_top >= 0) AddEdge(static_cast<uint32_t>(last_top), start, PathEdgeType::kDependency);
        ++depth;
        if (last >= 0) AddEdge(static_cast<uint32_t>(last), start, PathEdgeType::kSpan, false, last_parent);
        last = start;
        last_parent = my_parent;
      }
      while (!stack.empty()) exit();
    }
  }

  // Queue length per stream (HTA's): +1 when a launch call enqueues, -1 when its device
  // event starts; the value after the launch and after the start, for each device event.
  // Graph launches are not counted (their kernels are handled apart).
  void DeviceQueues() {
    std::map<Stream, std::vector<std::tuple<int64_t, int, size_t>>> steps;  // ts, -1 launch / +1 start, event
    for (const std::vector<size_t>* list : {&x_.kernels, &x_.memops}) {
      for (size_t i : *list) {
        const Event& d = x_.E(i);
        const auto r = d.correlation != 0 ? x_.runtime_by_corr.find(d.correlation) : x_.runtime_by_corr.end();
        if (r == x_.runtime_by_corr.end() || !IsLaunchCall(x_.Name(r->second))) continue;
        auto& s = steps[{d.pid, d.tid}];
        s.emplace_back(x_.E(r->second).ts_ns, -1, i);
        s.emplace_back(d.ts_ns, +1, i);
        launches_[{d.pid, d.tid}].push_back({x_.E(r->second).ts_ns, i, r->second});
      }
    }
    for (auto& [stream, s] : steps) {
      std::sort(s.begin(), s.end());
      int64_t q = 0;
      for (const auto& [ts, kind, event] : s) {
        q += kind < 0 ? 1 : -1;
        (kind < 0 ? queue_at_launch_ : queue_at_start_)[event] = q;
      }
    }
    for (auto& [stream, l] : launches_) std::sort(l.begin(), l.end());
  }

  // cudaEventRecord -> the last launch on the event's stream before it: the device event a
  // later wait on that record waits for. The record's stream comes from the waits.
  void EventRecords() {
    std::map<int64_t, Stream> record_stream;  // record call's correlation -> (gpu, stream)
    for (size_t i : x_.syncs) {
      const Event& s = x_.E(i);
      if (s.args < 0) continue;
      const std::string_view args = x_.trace->strings.Get(s.args);
      const auto corr = IntArg(args, "wait_on_cuda_event_record_corr_id");
      const auto stream = IntArg(args, "wait_on_stream");
      if (corr && stream && *stream >= 0) record_stream[*corr] = {s.pid, static_cast<int32_t>(*stream)};
    }
    for (size_t r : x_.runtime) {
      if (!IsEventRecord(x_.Name(r))) continue;
      const auto it = record_stream.find(x_.E(r).correlation);
      if (it == record_stream.end()) continue;
      const auto l = launches_.find(it->second);
      if (l == launches_.end()) continue;
      const auto after = std::upper_bound(l->second.begin(), l->second.end(), Launch{x_.E(r).ts_ns, SIZE_MAX, SIZE_MAX});
      if (after != l->second.begin()) recorded_[x_.E(r).correlation] = std::prev(after)->device;
    }
  }

  // The device event a stream wait makes wait: the next launch onto the waiting stream
  // from the thread that called cudaStreamWaitEvent.
  std::optional<size_t> NextLaunch(size_t wait_call, const Stream& stream) const {
    const auto l = launches_.find(stream);
    if (l == launches_.end()) return std::nullopt;
    const Event& w = x_.E(wait_call);
    for (auto it = std::lower_bound(l->second.begin(), l->second.end(), Launch{w.ts_ns, 0, 0}); it != l->second.end();
         ++it) {
      const Event& call = x_.E(it->call);
      if (call.pid == w.pid && call.tid == w.tid) return it->device;
    }
    return std::nullopt;
  }

  void Sync(size_t s, std::map<Stream, uint32_t>& last, std::unordered_map<size_t, size_t>& waits) {
    const Event& e = x_.E(s);
    const std::string_view name = x_.Name(s);
    const size_t call = x_.runtime_by_corr.at(e.correlation);
    const uint32_t call_end = g_.end_of.at(call);
    if (name == "Stream Wait Event" || name == "Event Sync") {
      const auto corr = e.args >= 0 ? IntArg(x_.trace->strings.Get(e.args), "wait_on_cuda_event_record_corr_id")
                                    : std::nullopt;
      const auto src = corr ? recorded_.find(*corr) : recorded_.end();
      if (src == recorded_.end()) return;
      if (name == "Event Sync") {
        if (auto end = g_.end_of.find(src->second); end != g_.end_of.end()) {
          AddEdge(end->second, call_end, PathEdgeType::kSync);
        }
      } else if (const std::optional<size_t> dest = NextLaunch(call, {e.pid, e.tid})) {
        waits[*dest] = src->second;
      }
      return;
    }
    if (name == "Context Sync") {
      for (const auto& [stream, node] : last) AddEdge(node, call_end, PathEdgeType::kSync);
    } else if (auto it = last.find({e.pid, e.tid}); it != last.end()) {
      AddEdge(it->second, call_end, PathEdgeType::kSync);
    }
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
      const size_t call = x_.runtime_by_corr.at(d.correlation);
      const int64_t call_ts = x_.E(call).ts_ns;
      const uint32_t start = g_.start_of.at(i), end = g_.end_of.at(i);
      AddEdge(start, end, PathEdgeType::kSpan);
      std::optional<uint32_t> wait_end;
      if (auto w = waits.find(i); w != waits.end()) {
        if (auto n = g_.end_of.find(w->second); n != g_.end_of.end()) {
          wait_end = n->second;
          AddEdge(n->second, start, PathEdgeType::kSync);
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
        launch_edge = queue_at_launch_[i] == 1 && queue_at_start_[i] == 0 && idle_at_launch && wait_done;
      }
      if (launch_edge) {
        AddEdge(g_.start_of.at(call), start, PathEdgeType::kLaunch);
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
  struct Launch {
    int64_t ts;
    size_t device, call;
    bool operator<(const Launch& o) const { return std::tie(ts, device) < std::tie(o.ts, o.device); }
  };

  const TraceIndex& x_;
  const int64_t begin_, end_;
  PathGraph g_;
  std::map<std::pair<int32_t, int32_t>, std::vector<HostEvent>> threads_;
  std::vector<size_t> device_;
  std::unordered_map<size_t, int64_t> queue_at_launch_, queue_at_start_;
  std::map<Stream, std::vector<Launch>> launches_;  // by launch time
  std::unordered_map<int64_t, size_t> recorded_;     // record call's correlation -> device event
};

}  // namespace

PathGraph BuildPathGraph(const TraceIndex& x, int64_t begin_ns, int64_t end_ns) {
  return Builder(x, begin_ns, end_ns).Build();
}

}  // namespace tierscope
