// MachinePeaks -> DeviceSpec.
#include "inspect/calibrated_spec.h"

namespace tierscope {

DeviceSpec CalibratedDeviceSpec(const MachinePeaks& p) {
  DeviceSpec d;
  const bool cpu = p.kind == "cpu";
  d.name = cpu ? p.cpu + " (" + std::to_string(p.threads) + " threads, " + p.isa + ")" : p.device;
  d.fp32 = p.fp32_flops / 1e12;
  d.fp32_vector = d.fp32;
  d.bf16 = (cpu ? p.PeakFlops("bf16_dot") : p.PeakFlops("tensor_bf16")) / 1e12;
  d.fp16 = cpu ? 0 : p.PeakFlops("tensor_f16") / 1e12;
  d.int8 = p.int8_ops / 1e12;
  d.memory_tbps = p.mem_bw / 1e12;
  d.source = "tierscope's calibration of this machine (measured " + p.measured_at + "; FMA, dot-product and triad "
             "kernels, best of " + std::to_string(p.trials) + " trials)";
  d.matched_by = "the engine's own trace, measured against this machine's calibrated peaks";
  return d;
}

}  // namespace tierscope
