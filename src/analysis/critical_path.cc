// The longest path through a step's dependency graph (critical_path_graph.h), its time by
// cause, and the reports.
#include "analysis/critical_path.h"

#include <algorithm>
#include <unordered_map>

#include "analysis/critical_path_graph.h"
#include "analysis/gpu_time.h"

namespace tierscope {

PathCause EdgeCause(const TraceIndex& x, const PathGraph::Edge& e) {
  if (e.type == PathEdgeType::kKernelKernel) return PathCause::kKernelGap;
  if (e.type == PathEdgeType::kLaunch) return PathCause::kLaunchOverhead;
  if (e.event < 0) return PathCause::kCpu;  // the host's (dependencies, waits' returns)
  const Event& ev = x.E(static_cast<size_t>(e.event));
  if (ev.kind == EventKind::kKernel || ev.kind == EventKind::kMemcpy || ev.kind == EventKind::kMemset) {
    return ClassifyDeviceEvent(ev.kind, x.Name(static_cast<size_t>(e.event))) == KernelType::kCommunication
               ? PathCause::kGpuCommunication
               : PathCause::kGpuCompute;
  }
  return PathCause::kCpu;
}

namespace {

// The heaviest path of a DAG (every node a possible start): each node reached by its
// heaviest predecessor. Returns the path's edges in order, and in `cyclic` the nodes a
// cycle kept from being ordered (0 for a DAG; else no path).
std::vector<size_t> LongestPath(const PathGraph& g, int64_t* cyclic) {
  const size_t n = g.node_ts.size();
  std::vector<int64_t> dist(n, 0);
  std::vector<int64_t> via;
  *cyclic = static_cast<int64_t>(n - LongestDistances(n, g.edges, dist, via));
  if (*cyclic > 0) return {};  // a cycle: no longest path to claim
  return PathToFurthest(g.edges, dist, via);
}

double Percent(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

}  // namespace

const char* PathCauseName(PathCause c) {
  switch (c) {
    case PathCause::kCpu: return "cpu_bound";
    case PathCause::kGpuCompute: return "gpu_compute_bound";
    case PathCause::kGpuCommunication: return "gpu_communication_bound";
    case PathCause::kLaunchOverhead: return "gpu_kernel_launch_overhead";
    case PathCause::kKernelGap: return "gpu_kernel_kernel_overhead";
  }
  return "?";
}

namespace {

CriticalPath PathOf(const TraceIndex& x, PathContext& context, int64_t begin_ns, int64_t end_ns, std::string window) {
  CriticalPath p;
  p.window = std::move(window);
  p.begin_ns = begin_ns;
  p.end_ns = end_ns;
  const PathGraph g = BuildPathGraph(x, context, begin_ns, end_ns);
  p.nodes = static_cast<int64_t>(g.node_ts.size());
  p.edges = static_cast<int64_t>(g.edges.size());
  p.negative_edges = g.negative;
  p.graph_kernels = g.graph_kernels;
  p.device_only = context.device_only;
  if (!g.node_ts.empty()) {
    p.span_ns = *std::max_element(g.node_ts.begin(), g.node_ts.end()) -
                *std::min_element(g.node_ts.begin(), g.node_ts.end());
  }
  std::unordered_map<size_t, size_t> at;  // (event, cause) -> index in p.events
  for (size_t e : LongestPath(g, &p.cyclic_nodes)) {
    const PathGraph::Edge& edge = g.edges[e];
    p.length_ns += edge.weight;
    if (edge.weight == 0 || (edge.event < 0 && edge.type != PathEdgeType::kLaunch)) continue;
    const PathCause cause = EdgeCause(x, edge);
    p.by_cause[static_cast<size_t>(cause)] += edge.weight;
    // A launch's delay is the launched kernel's; every other edge its attributed event's.
    const size_t event = edge.type == PathEdgeType::kLaunch ? g.node_event[edge.to] : static_cast<size_t>(edge.event);
    auto [it, fresh] = at.try_emplace(event * kPathCauses + static_cast<size_t>(cause), p.events.size());
    if (fresh) p.events.push_back({event, 0, cause});
    p.events[it->second].ns += edge.weight;
  }
  std::stable_sort(p.events.begin(), p.events.end(),
                   [](const CriticalPath::OnPath& a, const CriticalPath::OnPath& b) { return a.ns > b.ns; });
  return p;
}

}  // namespace

CriticalPath AnalyzeCriticalPath(const TraceIndex& x, int64_t begin_ns, int64_t end_ns, std::string window) {
  PathContext context = BuildPathContext(x);
  return PathOf(x, context, begin_ns, end_ns, std::move(window));
}

std::vector<WorkUnit> PathWindows(const TraceIndex& x) {
  if (!x.units.empty()) return x.units;
  int64_t begin = INT64_MAX, end = INT64_MIN;
  for (const Event& e : x.trace->events) {
    if (e.dur_ns <= 0) continue;
    begin = std::min(begin, e.ts_ns);
    end = std::max(end, e.ts_ns + e.dur_ns);
  }
  if (begin > end) return {};
  return {WorkUnit{"whole trace", begin, end}};
}

std::vector<CriticalPath> AnalyzeCriticalPaths(const TraceIndex& x) {
  std::vector<CriticalPath> paths;
  PathContext context = BuildPathContext(x);
  for (const WorkUnit& w : PathWindows(x)) paths.push_back(PathOf(x, context, w.begin_ns, w.end_ns, w.name));
  return paths;
}

Table CriticalPathTable(const std::vector<CriticalPath>& paths) {
  Table t;
  t.name = "critical_path";
  t.title = "Critical path of each step: its length and its time by cause (HTA's bound_by)";
  t.columns = {"Length (ns)", "Span (ns)", "Window (ns)", "CPU (%)", "GPU compute (%)", "GPU comm (%)", "Launch overhead (%)",
               "Kernel gaps (%)", "Nodes", "Edges", "Step"};
  int64_t negative = 0, graph = 0, empty = 0, cyclic = 0;
  bool device_only = false;
  for (const CriticalPath& p : paths) {
    const auto share = [&](PathCause c) { return Cell(Percent(p.by_cause[static_cast<size_t>(c)], p.length_ns)); };
    t.AddRow({p.length_ns, p.span_ns, p.end_ns - p.begin_ns, share(PathCause::kCpu), share(PathCause::kGpuCompute),
              share(PathCause::kGpuCommunication), share(PathCause::kLaunchOverhead), share(PathCause::kKernelGap),
              p.nodes, p.edges, p.window});
    negative += p.negative_edges;
    graph += p.graph_kernels;
    empty += p.nodes == 0 ? 1 : 0;
    cyclic += p.cyclic_nodes > 0 ? 1 : 0;
    device_only = device_only || p.device_only;
  }
  t.notes.push_back("the longest path through host ops in program order and nesting, launches to kernels, stream "
                    "order and the host's and streams' waits; time waiting in a blocking call and dependency edges "
                    "weigh nothing, so the length is at most the span (from the step's first host event to the end "
                    "of the last work it launched, which can run past the step's window) unless edges backwards in "
                    "time were weighed 0 (below)");
  if (device_only) t.notes.push_back(kDeviceOnlyNote);
  t.NoteCount(cyclic,
              "step(s) have a cycle in their graph (device clocks that disagree "
              "across GPUs, or a malformed trace): no path is claimed for them (length 0)");
  t.NoteCount(empty,
              "step(s) have no host op, runtime call or device work starting in "
              "their window: no path");
  t.NoteCount(graph,
              "kernel(s) a graph replayed are in the graph (after their launch when the stream was idle, "
              "else after the kernel before them; HTA leaves them out)");
  t.NoteCount(negative,
              "edge(s) end before they start (clocks that disagree): weighed 0, "
              "and the path's causes near them are not to be concluded from");
  return t;
}

Table CriticalPathEventsTable(const TraceIndex& x, const std::vector<CriticalPath>& paths, size_t top) {
  Table t;
  t.name = "critical_path_events";
  t.title = "The events on the longest step's critical path, by time on it";
  t.columns = {"On path (ns)", "Of path (%)", "Cause", "Name"};
  const auto longest = std::max_element(paths.begin(), paths.end(), [](const CriticalPath& a, const CriticalPath& b) {
    return a.length_ns < b.length_ns;
  });
  if (longest == paths.end()) return t;
  for (size_t i = 0; i < longest->events.size() && i < top; ++i) {
    const CriticalPath::OnPath& e = longest->events[i];
    t.AddRow({e.ns, Percent(e.ns, longest->length_ns), PathCauseName(e.cause), std::string(x.Name(e.event))});
  }
  t.notes.push_back("step: " + longest->window + " (" + std::to_string(longest->events.size()) + " events on its path)");
  return t;
}

}  // namespace tierscope
