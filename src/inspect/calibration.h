// Machine calibration for tier 3: the peaks a kernel's speed of light is measured
// against — on a CPU, FP32 FMA and BF16 dot-product FLOP/s (one thread and all threads)
// and memory bandwidth (a STREAM-like triad); on a GPU, an FP32 FMA kernel, FP16 and BF16
// tensor-core GEMMs and a triad kernel, measured by the backend — measured as benchmarks
// are (warm-up, best of several trials, spread kept) and cached per machine, thread count
// and build, re-measured when the cache is stale, rather than taken from a datasheet.
#ifndef TIERSCOPE_INSPECT_CALIBRATION_H_
#define TIERSCOPE_INSPECT_CALIBRATION_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/cpu_info.h"
#include "tierscope/status.h"

namespace tierscope {

class Backend;

// One measured rate: the best trial (the peak) and how far the trials spread.
struct RateSample {
  double best = 0;        // per second, the fastest trial
  double median = 0;      // per second
  double spread_pct = 0;  // 100 x (best - slowest) / best over the trials
  int trials = 0;         // timed trials, after an untimed warm-up
};

struct MachinePeaks {
  std::string kind = "cpu";  // "cpu", or the GPU backend's kind ("cuda", "musa")
  std::string cpu;  // CPU model name (CPU)
  std::string device;  // the GPU's name (GPU)
  std::string isa;  // CPU: the vector ISA the FMA test used ("avx512f", "avx2+fma",
                    // "scalar"); GPU: its architecture ("sm_90")
  int threads = 1;  // CPU: threads measured; GPU: SMs
  std::string build;  // TIERSCOPE_BUILD_ID of the binary that measured (part of the key)
  double fp16_tensor_flops = 0, bf16_tensor_flops = 0;  // GPU tensor-core GEMMs
  double fp32_flops_1t = 0, fp32_flops = 0;  // FLOP/s, FMA counted as 2
  bool bf16_dot = false;                     // the CPU has a BF16 dot instruction
  double bf16_flops_1t = 0, bf16_flops = 0;  // FLOP/s; 0 without bf16_dot
  // The INT8 dot instruction the INT8 GEMM uses here ("avx512vnni", "avxvnni", "avx2";
  // "" without one) and its multiply-adds per second, counted 2 each as FLOPs.
  std::string int8_dot;
  double int8_ops_1t = 0, int8_ops = 0;
  double mem_bw_1t = 0, mem_bw = 0;          // bytes/s, triad (2 reads + 1 write per element)
  // CPU: the size of each triad array (PlanTriad), and why the triad may have measured
  // cache rather than memory bandwidth ("" when its arrays are well beyond the caches).
  int64_t triad_array_bytes = 0;
  std::string mem_note;
  // CPU: the spread of the all-thread trials behind fp32_flops and mem_bw, and their
  // count; a wide spread means other work shared the cores while they ran.
  double fp32_spread_pct = 0, mem_spread_pct = 0;
  int trials = 0;
  std::string measured_at;                   // UTC, ISO 8601
  std::string cache_path;                    // where it is cached ("" if not)
  bool from_cache = false;
  std::string remeasured_because;            // why a cached entry was measured again

  // All-thread peak FLOP/s of an arithmetic pipe ("fp32_fma", "bf16_dot", "int8_dot",
  // "tensor_f16", "tensor_bf16"); the FP32 peak when the device lacks the pipe (BF16 then
  // runs as FP32).
  double PeakFlops(std::string_view pipe) const;
  nlohmann::json ToJson() const;
  static StatusOr<MachinePeaks> FromJson(const nlohmann::json& j);
};

// The calibration method; a cache written by another method is measured again.
inline constexpr int kCalibrationMethod = 6;  // 5: AVX2 INT8 peak on int16 operands; 6: on vpmaddubsw, as its GEMM
// A trial spread above this means the machine was busy while the peaks were measured.
inline constexpr double kNoisySpreadPct = 15;
// Cached peaks older than this are measured again.
inline constexpr int64_t kPeaksMaxAgeS = 30 * 24 * 3600;
// A quick probe faster than the cached FP32 peak by this factor makes the cache stale:
// the cached figure was measured while other work held the cores.
inline constexpr double kProbeStaleFactor = 1.05;

// The CPU triad's arrays for a machine with last-level cache `llc` and
// `available_bytes` of memory (-1: unknown): each at least 4x the whole last-level cache
// (all sockets' or CCXs' instances together) and 64 MiB, 256 MiB when the cache's size is
// unknown, and the three together at most half the memory available (1 GiB each when
// that is unknown). The one-thread run streams a prefix of 4x one instance (a core uses
// only its own). `note` says why the figure may be cache bandwidth: the cache's size is
// unknown, or memory kept the arrays under 4x the cache.
struct TriadPlan {
  int64_t array_bytes = 0;
  int64_t one_thread_bytes = 0;
  std::string note;
};
TriadPlan PlanTriad(const LastLevelCache& llc, int64_t available_bytes);

// Keeps in `p`, field by field, the larger of its peaks and `other`'s: FP32, BF16 and
// INT8 (one thread and all), the tensor-core GEMMs and memory. Peaks are maxima; a
// measurement taken while other work shared the cores must not lower one. Returns whether
// any of `other`'s was kept.
bool KeepBestPeaks(const MachinePeaks& other, MachinePeaks* p);

// How CPU peaks are measured. The default runs the FMA and triad kernels; tests give
// their own to play a busy or a recovered machine.
struct PeakMeter {
  // The full measurement with `threads` threads (a few seconds).
  std::function<StatusOr<MachinePeaks>(int threads)> measure;
  // A quick all-thread FP32 FLOP/s probe (tens of milliseconds), checked against a cache.
  std::function<double(int threads)> probe;
};
const PeakMeter& DefaultPeakMeter();

// `peak` as a multiple of the FP32 FMA peak, the one wording every report gives it in
// ("0.95x the FP32 FMA peak": at most that much faster than FP32 can work at `peak` run);
// "" when either peak is unknown.
std::string TimesFp32Peak(double peak, double fp32_peak);

// Measures the peaks with `threads` threads (0: all hardware threads): an untimed
// warm-up, then the best of several trials, with their spread; measured again (up to
// twice) while the spread says other work shared the cores. Takes a few seconds.
StatusOr<MachinePeaks> MeasurePeaks(int threads);

// The cached peaks for this machine, thread count and build, measured (and cached) when
// there are none, `recalibrate` is set, or the cache is stale: another calibration
// method, older than kPeaksMaxAgeS, or slower than a quick probe finds the machine now.
// The cache is <cache dir>/device/<key>.json, keyed by CPU model, ISA, threads and build.
StatusOr<MachinePeaks> LoadOrMeasurePeaks(int threads, bool recalibrate,
                                          const PeakMeter& meter = DefaultPeakMeter());

// The cached peaks for this machine and thread count, as they are: never measured, probed
// or stale-checked (an analysis reads them; `tierscope device` measures them); nullopt
// when there are none for this build.
std::optional<MachinePeaks> CachedPeaks(int threads);

// Measures `backend`'s peaks again (a kernel ran above `previous`) and keeps, field by
// field, the larger of the two: peaks are maxima, and a second measurement taken while
// the machine is busy must not lower a good one. The result is cached.
StatusOr<MachinePeaks> RemeasurePeaks(Backend& backend, const MachinePeaks& previous,
                                      const PeakMeter& meter = DefaultPeakMeter());

// The peaks of `backend`'s device: a CPU's as above (its workers' count of threads); a
// GPU's measured by the backend's own kernels and cached under <cache dir>/device/, keyed
// by kind, name, architecture and build.
StatusOr<MachinePeaks> LoadOrMeasureDevicePeaks(Backend& backend, bool recalibrate,
                                                const PeakMeter& meter = DefaultPeakMeter());

}  // namespace tierscope

#endif  // TIERSCOPE_INSPECT_CALIBRATION_H_
