// A roofline for every operator of a trace: each modelled op and distinct shape (TraceLens's
// ops_unique_args) with its calls, FLOPs, bytes, intensity, device time, achieved TFLOP/s
// and TB/s and % of the roofline at its intensity on the trace's device (device_specs.h);
// op categories summed (roofline_sum); and the ops whose fix could save the most time.
// Device time is the kernels' an op launched directly (the leaf op, by External id),
// counted under the nearest op at or above it that has a model (aten::layer_norm for the
// kernels of aten::native_layer_norm), so no kernel counts twice.
#ifndef TIERSCOPE_ANALYSIS_OP_ROOFLINE_H_
#define TIERSCOPE_ANALYSIS_OP_ROOFLINE_H_

#include <optional>
#include <string>
#include <vector>

#include "analysis/device_specs.h"
#include "analysis/reports.h"
#include "analysis/rules.h"
#include "analysis/table.h"
#include "tierscope/status.h"

namespace tierscope {

struct OpRooflineRow {
  std::string name, category, input_dims, input_type, params;
  std::string top_kernel;  // the kernel with the most time under the row
  int64_t calls = 0;       // calls that launched kernels
  double kernel_ns = 0;
  double flops = 0, bytes = 0;  // per call; 0 with modelled = false
  bool modelled = false;
  // Against the device's roof (0 when there is no device spec):
  double roof_flops = 0;      // FLOP/s (or B/s for a bytes-only op) the roof allows at its intensity
  double percent_of_roof = 0;
  double saving_ns = 0;       // its time less its time at 80% of the roof (0 when faster)
  bool impossible = false;    // above 100% of its roof: a wrong peak or a wrong shape
};

struct OpRoofline {
  std::optional<DeviceSpec> device;  // nullopt: no peaks, no % of roof
  std::string device_note;           // how the device was found, or why not
  std::vector<OpRooflineRow> rows;   // by kernel time, largest first
  double kernel_ns = 0;              // all kernels' time in the trace
  double attributed_ns = 0;          // of it, under an op (modelled or not)
};

// `spec`: the device to measure against (--device-spec); nullopt: found from the trace.
OpRoofline AnalyzeOpRoofline(const TraceIndex& index, const std::optional<DeviceSpec>& spec);

Table OpRooflineTable(const OpRoofline& r);
Table RooflineSumTable(const OpRoofline& r);
// The ops whose fix would save the most (at 80% of roof), with the ncu command that
// inspects their top kernel; and the ops already at their roof: no kernel work. One
// finding ("roofline"), ranked by the time the top ops could save; nullopt when none can.
std::optional<Finding> RooflineFinding(const OpRoofline& r, size_t top = 5);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_OP_ROOFLINE_H_
