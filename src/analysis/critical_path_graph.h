// The critical path's dependency graph (critical_path.h): a start and an end node for each
// host operator, runtime call and device event of a window, and the edges HTA's
// CPGraph draws between them. Internal to the critical-path reports.
#ifndef TIERSCOPE_ANALYSIS_CRITICAL_PATH_GRAPH_H_
#define TIERSCOPE_ANALYSIS_CRITICAL_PATH_GRAPH_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "analysis/critical_path.h"
#include "analysis/reports.h"

namespace tierscope {

enum class PathEdgeType : uint8_t {
  kSpan,          // within an op or a kernel, or between nested ops on a thread: its time
  kDependency,    // one top-level op after another on a thread: no weight
  kLaunch,        // a launch call's start -> its kernel's, the stream idle: the delay
  kKernelKernel,  // the previous kernel's end -> the next's on a stream: the gap
  kSync,          // a kernel's end -> the wait that ended with it (host or stream): no weight
};

// What every window of a trace shares, computed once: its host and device events in time
// order, HTA's queue lengths, launches by stream, event records, and the event -> node maps
// (reset after each window).
struct PathContext {
  static constexpr uint32_t kNone = UINT32_MAX;
  std::vector<size_t> host;         // operators and runtime calls with a duration, by start
  std::vector<size_t> nesting;      // annotations and other host frames with a duration, by start
  std::vector<std::pair<int64_t, size_t>> device;  // (launch call's start, device event), by it
  // No device event has a launch call in the trace (a device-only trace: rocprofv3 without
  // API tracing, a GPU-only Kineto capture): `device` holds each by its own start, and each
  // stream's events follow one another with the gaps they had.
  bool device_only = false;
  std::vector<int32_t> queue_at_launch, queue_at_start;  // by event
  // A launch onto a stream: its call, and the first and last device events it made there (a
  // graph launch's replay; one event otherwise).
  struct Launch {
    int64_t ts;
    size_t first, last, call;
    bool operator<(const Launch& o) const { return ts < o.ts || (ts == o.ts && first < o.first); }
  };
  std::map<std::pair<int32_t, int32_t>, std::vector<Launch>> launches;  // (gpu, stream) -> by time
  // The same by the launching host thread too: (gpu, stream, host pid, host tid) -> by time.
  std::map<std::tuple<int32_t, int32_t, int32_t, int32_t>, std::vector<Launch>> launches_by_thread;
  std::unordered_map<int64_t, size_t> recorded;  // an event record's correlation -> the work it follows
  std::vector<uint32_t> start_of, end_of;        // event -> node in the current window, or kNone
};
PathContext BuildPathContext(const TraceIndex& index);
// What a device-only trace's path and re-timing rest on, in a report's notes.
inline constexpr const char* kDeviceOnlyNote =
    "no device event has its launch call in the trace (a device-only capture): each stream's work follows the "
    "work before it on its stream with the gap it had, and the host behind those gaps is not known";

struct PathGraph {
  std::vector<int64_t> node_ts;
  std::vector<size_t> node_event;
  std::vector<bool> node_is_start;
  struct Edge {
    uint32_t from, to;
    int64_t weight;
    PathEdgeType type;
    int64_t event;  // the event the edge's time is attributed to (spans and gaps), else -1
  };
  std::vector<Edge> edges;
  // A device event's start node -> its launch call's start node (every launch in the window,
  // with a kLaunch edge or not: what a re-timing needs, whatif.h).
  std::unordered_map<uint32_t, uint32_t> launch_call;
  int64_t negative = 0;       // edges with a negative time, weighed 0
  int64_t graph_kernels = 0;  // device events a graph launch replayed
};

// Calls that block the host until the device catches up: their wait is not host work
// (HTA's BLOCKING_SYNC_CALLS, and HIP's, MUSA's and CANN's: AscendCL@aclrt...).
inline constexpr std::string_view kAscendRuntime = "AscendCL@aclrt";
bool IsBlockingCall(std::string_view name);

// What an edge's time is spent on: a kernel-kernel gap, a launch's delay, a device event's
// span (communication or compute), else the host.
PathCause EdgeCause(const TraceIndex& index, const PathGraph::Edge& edge);

// Longest distances over a DAG in Kahn's order: on entry `dist` holds each node's release
// (the earliest it may be reached); each node then gets the largest of its predecessors'
// dist + the edge's weight (its first predecessor's when none is larger), and `via` the
// edge that set it (-1: its release). Edges need `from`, `to` and `weight`. Returns how
// many nodes were ordered: fewer than n when a cycle holds the rest.
template <typename Edge, typename Distance>
size_t LongestDistances(size_t n, const std::vector<Edge>& edges, std::vector<Distance>& dist,
                        std::vector<int64_t>& via) {
  std::vector<std::vector<uint32_t>> out(n);
  std::vector<int64_t> indegree(n, 0);
  for (size_t e = 0; e < edges.size(); ++e) {
    out[edges[e].from].push_back(static_cast<uint32_t>(e));
    ++indegree[edges[e].to];
  }
  via.assign(n, -1);
  std::vector<uint32_t> ready;
  for (uint32_t v = 0; v < n; ++v) {
    if (indegree[v] == 0) ready.push_back(v);
  }
  size_t ordered = 0;
  while (!ready.empty()) {
    const uint32_t u = ready.back();
    ready.pop_back();
    ++ordered;
    for (uint32_t e : out[u]) {
      const Edge& edge = edges[e];
      if (via[edge.to] < 0 || dist[u] + edge.weight > dist[edge.to]) {
        dist[edge.to] = dist[u] + edge.weight;
        via[edge.to] = e;
      }
      if (--indegree[edge.to] == 0) ready.push_back(edge.to);
    }
  }
  return ordered;
}

// After LongestDistances: the edges of the path to the node furthest in `dist`, in order
// (none when `dist` is empty).
template <typename Edge, typename Distance>
std::vector<size_t> PathToFurthest(const std::vector<Edge>& edges, const std::vector<Distance>& dist,
                                   const std::vector<int64_t>& via) {
  std::vector<size_t> path;
  if (dist.empty()) return path;
  for (auto v = static_cast<size_t>(std::max_element(dist.begin(), dist.end()) - dist.begin()); via[v] >= 0;) {
    path.push_back(static_cast<size_t>(via[v]));
    v = edges[static_cast<size_t>(via[v])].from;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

// The graph of the host events that start in [begin_ns, end_ns] with a duration, and the
// device events whose launch call does.
PathGraph BuildPathGraph(const TraceIndex& index, PathContext& context, int64_t begin_ns, int64_t end_ns);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_CRITICAL_PATH_GRAPH_H_
