// `tierscope kernel`: tier 3 around a bench workload — like `ncu -k NAME -c COUNT
// --section ...` — and on other tools' data (an ncu CSV, a tier-2 trace). Writes one
// JSON report per run and returns a text view.
#ifndef TIERSCOPE_LAB_KERNEL_H_
#define TIERSCOPE_LAB_KERNEL_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "inspect/calibration.h"
#include "inspect/kernel_inspector.h"
#include "inspect/sections.h"
#include "lab/bench.h"

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
  nlohmann::json json;  // the report file's content
  std::string text;
};

StatusOr<KernelCommandResult> RunKernelCommand(const KernelCommandOptions& options);

// `tierscope device`: the backend's properties (like torch.cuda.get_device_properties)
// with the machine's measured peaks, as text or JSON.
StatusOr<std::string> DeviceReport(const std::string& device, int threads, bool recalibrate,
                                   bool json);

}  // namespace tierscope

#endif  // TIERSCOPE_LAB_KERNEL_H_
