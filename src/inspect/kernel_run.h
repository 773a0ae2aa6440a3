// Tier 3 around a bench workload — what `tierscope kernel` and the lab's tier-3 step run,
// like `ncu -k NAME -c COUNT --section ...` — and on other tools' data (an ncu CSV, a
// tier-2 trace): one JSON report per run and a text view.
#ifndef TIERSCOPE_INSPECT_KERNEL_RUN_H_
#define TIERSCOPE_INSPECT_KERNEL_RUN_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "inspect/calibration.h"
#include "inspect/kernel_inspector.h"
#include "inspect/sections.h"
#include "workload/bench.h"

namespace tierscope {

struct KernelCommandOptions {
  BenchOptions bench;           // the workload (same flags as `tierscope bench`)
  InspectorOptions inspector;   // -k, --launch-skip, --launch-count, passes, cache control
  std::string sections;         // "LaunchStats,SpeedOfLight"; empty: all
  bool recalibrate = false;
  const PeakMeter* meter = nullptr;  // how CPU peaks are measured (null: the real kernels)
  std::string ncu_csv;          // instead of a workload: an Nsight Compute CSV
  std::string trace;            // instead of a workload: a tier-2 trace
};

struct KernelCommandResult {
  std::vector<KernelReport> reports;
  MachinePeaks peaks;   // the peaks the reports were judged against
  BenchResult workload;  // the run whose launches were replayed
  nlohmann::json json;  // the report file's content
  std::string text;
};

StatusOr<KernelCommandResult> RunKernelCommand(const KernelCommandOptions& options);


}  // namespace tierscope

#endif  // TIERSCOPE_INSPECT_KERNEL_RUN_H_
