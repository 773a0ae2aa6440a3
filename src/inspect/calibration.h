// Machine calibration for tier 3: the peaks a kernel's speed of light is measured
// against — on a CPU, FP32 FMA and BF16 dot-product FLOP/s (one thread and all threads)
// and memory bandwidth (a STREAM-like triad); on a GPU, an FP32 FMA kernel, FP16 and BF16
// tensor-core GEMMs and a triad kernel, measured by the backend — measured once and
// cached per machine (or GPU model), rather than taken from a datasheet.
#ifndef TIERSCOPE_INSPECT_CALIBRATION_H_
#define TIERSCOPE_INSPECT_CALIBRATION_H_

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tierscope/status.h"

namespace tierscope {

class Backend;

struct MachinePeaks {
  std::string kind = "cpu";  // "cpu", or the GPU backend's kind ("cuda", "musa")
  std::string cpu;  // /proc/cpuinfo model name (CPU)
  std::string device;  // the GPU's name (GPU)
  std::string isa;  // CPU: the vector ISA the FMA test used ("avx512f", "avx2+fma",
                    // "scalar"); GPU: its architecture ("sm_90")
  int threads = 1;  // CPU: threads measured; GPU: SMs
  double fp16_tensor_flops = 0, bf16_tensor_flops = 0;  // GPU tensor-core GEMMs
  double fp32_flops_1t = 0, fp32_flops = 0;  // FLOP/s, FMA counted as 2
  bool bf16_dot = false;                     // the CPU has a BF16 dot instruction
  double bf16_flops_1t = 0, bf16_flops = 0;  // FLOP/s; 0 without bf16_dot
  double mem_bw_1t = 0, mem_bw = 0;          // bytes/s, triad (2 reads + 1 write per element)
  std::string measured_at;                   // UTC, ISO 8601
  std::string cache_path;                    // where it is cached ("" if not)
  bool from_cache = false;

  // All-thread peak FLOP/s of an arithmetic pipe ("fp32_fma", "bf16_dot", "tensor_f16",
  // "tensor_bf16"); the FP32 peak when the device lacks the pipe (BF16 then runs as FP32).
  double PeakFlops(std::string_view pipe) const;
  nlohmann::json ToJson() const;
  static StatusOr<MachinePeaks> FromJson(const nlohmann::json& j);
};

// Measures the peaks with `threads` threads (0: all hardware threads). Takes ~1-2 s.
StatusOr<MachinePeaks> MeasurePeaks(int threads);

// The cached peaks for this machine and thread count, measured (and cached) when there
// are none or `recalibrate` is set. The cache is <cache dir>/device/<key>.json, keyed by
// CPU model, ISA and threads.
StatusOr<MachinePeaks> LoadOrMeasurePeaks(int threads, bool recalibrate);

// The peaks of `backend`'s device: a CPU's as above (its workers' count of threads); a
// GPU's measured by the backend's own kernels and cached under <cache dir>/device/, keyed
// by kind, name and architecture.
StatusOr<MachinePeaks> LoadOrMeasureDevicePeaks(Backend& backend, bool recalibrate);

}  // namespace tierscope

#endif  // TIERSCOPE_INSPECT_CALIBRATION_H_
