// System (tier 2) and operator (tier 1) reports computed from any Trace — tierscope's
// own or an imported Kineto / Nsight Systems one — named as Nsight Systems names them
// (cuda_gpu_kern_sum, ...), with the MUSA (musa_*) and HIP (hip_*) names as aliases.
#ifndef TIERSCOPE_ANALYSIS_REPORTS_H_
#define TIERSCOPE_ANALYSIS_REPORTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/device_specs.h"
#include "analysis/table.h"
#include "core/int_map.h"
#include "tierscope/status.h"
#include "trace/trace.h"
#include "trace/units.h"

namespace tierscope {

struct AnalysisOptions {
  std::string unit;                  // work-unit annotation; "" = auto (ProfilerStep#N,
                                     // serial_bert_forward, batched_bert_forward)
  double short_kernel_ns = 10'000;   // "short" kernels are below this
  int hot_kernels = 10;
  // op_roofline / roofline_sum: the device's peaks (--device-spec); nullopt: found from
  // the trace's device (device_specs.h).
  std::optional<DeviceSpec> device_spec;
  bool critical_path = false;  // analyze: the on-demand critical-path reports too
  // analyze's JSON: also the step timeline and the device's peaks an analysis page draws
  // (timeline.h), of `step` ("" = the steady-state step), of at most `timeline_events`
  // events (a job's ranks share them).
  bool timeline = false;
  std::string step;
  size_t timeline_events = 60'000;
};

// Indexes of a Trace that every report shares.
struct TraceIndex {
  const Trace* trace = nullptr;
  std::vector<size_t> ops, annotations, runtime, kernels, memops, syncs, memory;
  IntMap<size_t> runtime_by_corr;  // correlation -> runtime call
  // Runtime calls that launched a device event, in `runtime`'s order (LaunchChecks walks
  // it beside `runtime` with one cursor).
  std::vector<size_t> launches;
  int64_t device_begin_ns = 0, device_end_ns = 0;  // first device start .. last end
  std::vector<WorkUnit> units;      // sorted by begin (trace/units.h)
  std::string unit_name;            // the annotation that delimits units ("" if none)
  UnitCounts counts;                // per-unit counts (totals when there are no units)
  std::string prefix = "cuda";      // report-name prefix for the trace's runtime

  std::string_view Name(size_t i) const { return trace->strings.Get(trace->events[i].name); }
  const Event& E(size_t i) const { return trace->events[i]; }
  // Index of the unit containing host time `ts`, or -1.
  int UnitAt(int64_t ts) const;
  // Host time at which device event i was launched (its own ts without a launch).
  int64_t LaunchTime(size_t i) const;
};

// Each op's parent (the op enclosing it on its thread), or -1; indexed by event.
std::vector<int64_t> OpParents(const TraceIndex& index);

TraceIndex BuildIndex(const Trace& trace, const AnalysisOptions& options);

// nsys's summary shape over events `idx` grouped by name: "Time (%), Total Time (ns),
// Instances, Avg, Med, Min, Max, StdDev (ns), Name", largest total first.
Table SumTable(const TraceIndex& index, const std::string& name, const std::string& title,
               const std::vector<size_t>& idx);

// Kernel names by total device time over the whole trace, largest first (ties: the name
// that sorts last first) — the order of the hot_kernels report.
std::vector<std::pair<double, std::string>> KernelsByTime(const TraceIndex& index);

// Every report name `stats` accepts (canonical names).
std::vector<std::string> ReportNames();
// Reports `stats` runs when asked, and `analyze` with a flag (--critical-path): their cost
// is not every analysis's.
std::vector<std::string> OnDemandReportNames();
// Every report `stats` accepts with its one-line title, in ReportNames() order then the
// GPU-time reports.
std::vector<std::pair<std::string, std::string>> ReportCatalog();
// Runs one report by name or alias ("musa_gpu_kern_sum" = "cuda_gpu_kern_sum").
StatusOr<Table> RunReport(const TraceIndex& index, const std::string& name,
                          const AnalysisOptions& options);

// Device in-use: the union of kernel and memory-operation intervals over the device
// window, per device pid; returns busy ns and window ns summed over devices.
struct InUse {
  // Sums over devices, in double: a trace's devices may each span most of int64's range.
  double busy_ns = 0, window_ns = 0;
  double percent() const { return window_ns > 0 ? 100.0 * busy_ns / window_ns : 0.0; }
};
InUse DeviceInUse(const TraceIndex& index);

// Gaps between consecutive device events (idle stretches of the device union).
std::vector<int64_t> DeviceGaps(const TraceIndex& index);


}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_REPORTS_H_
