// The critical path of a step: a dependency graph of one rank's host operators (program
// order per thread, nesting), launches -> kernels, stream order, the host's waits
// (stream / device / event synchronisation -> the kernels they wait for) and cross-stream
// event waits, with the longest path through it and its time by cause — HTA's
// critical_path_analysis, its graph and its bound_by, plus the kernels a CUDA/HIP graph
// replays (HTA #290 leaves them out). Weights are time: an op's own span, a launch's delay
// to its kernel when the stream was idle, the gap between kernels on a stream; waiting in a
// blocking call and dependency edges weigh nothing.
#ifndef TIERSCOPE_ANALYSIS_CRITICAL_PATH_H_
#define TIERSCOPE_ANALYSIS_CRITICAL_PATH_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/reports.h"
#include "analysis/table.h"

namespace tierscope {

// HTA's bound_by classes.
enum class PathCause : uint8_t {
  kCpu,               // cpu_bound: host operators and runtime calls
  kGpuCompute,        // gpu_compute_bound: kernels, copies, sets
  kGpuCommunication,  // gpu_communication_bound: collective kernels
  kLaunchOverhead,    // gpu_kernel_launch_overhead: launch -> kernel on an idle stream
  kKernelGap,         // gpu_kernel_kernel_overhead: gaps between kernels on a stream
};
inline constexpr int kPathCauses = 5;
const char* PathCauseName(PathCause c);  // HTA's names: "cpu_bound", ...

struct CriticalPath {
  std::string window;  // the step's name, or "whole trace"
  int64_t begin_ns = 0, end_ns = 0;
  int64_t span_ns = 0;    // first node to last: the window's work, device work launched in it included
  int64_t length_ns = 0;  // the path's weight, at most the span
  std::array<int64_t, kPathCauses> by_cause{};
  struct OnPath {
    size_t event;
    int64_t ns;  // the path's time attributed to the event
    PathCause cause;
  };
  std::vector<OnPath> events;  // by time on the path, largest first
  int64_t nodes = 0, edges = 0;
  int64_t negative_edges = 0;  // edges whose end precedes their start (a clock), weighed 0
  int64_t cyclic_nodes = 0;    // nodes a cycle kept out of order: no path then
  int64_t graph_kernels = 0;   // kernels a graph replayed, in the graph
  bool device_only = false;    // the trace launches none of its device work (PathContext)
};

// The windows a trace's steps are: its work units (ProfilerStep#N, or --unit), else one
// "whole trace" window from the first event with a duration to the last end; none when
// nothing has a duration.
std::vector<WorkUnit> PathWindows(const TraceIndex& index);

// One path per window (PathWindows).
std::vector<CriticalPath> AnalyzeCriticalPaths(const TraceIndex& index);
// The path of the window [begin_ns, end_ns] (host events starting in it, device events
// launched in it), named `window`.
CriticalPath AnalyzeCriticalPath(const TraceIndex& index, int64_t begin_ns, int64_t end_ns, std::string window);

Table CriticalPathTable(const std::vector<CriticalPath>& paths);
// The events on the longest step's path, by time on it.
Table CriticalPathEventsTable(const TraceIndex& index, const std::vector<CriticalPath>& paths, size_t top = 30);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_CRITICAL_PATH_H_
