// Where a GPU's time goes, per rank, under the names Holistic Trace Analysis users know:
// temporal breakdown (idle / compute / non-compute), kernel breakdown by type and by kernel,
// communication-computation overlap, idle time per stream (host wait, kernel wait, other),
// kernel launch statistics and queue length per stream. One pass over a trace's index gives
// a GpuTime; the tables take any number of ranks, so one trace and a whole job render alike.
// Where the definitions differ from HTA's, README ("Jobs") says how and why.
#ifndef TIERSCOPE_ANALYSIS_GPU_TIME_H_
#define TIERSCOPE_ANALYSIS_GPU_TIME_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/reports.h"
#include "analysis/table.h"
#include "core/stats.h"

namespace tierscope {

enum class KernelType : uint8_t { kComputation = 0, kCommunication = 1, kMemory = 2, kOther = 3 };
inline constexpr int kKernelTypes = 4;
const char* KernelTypeName(KernelType t);  // "computation", "communication", ...

// A device event's type: memory copies and sets are memory; a kernel is communication when
// its name is a collective's (nccl*Kernel*, rccl*, *all_reduce*, *all_gather*,
// *reduce_scatter*, *all_to_all*, cross_device_reduce*, any case), memory when it starts
// with Memcpy, Memset, dma or ROCm 7.1's __amd_rocclr_copyBuffer / __amd_rocclr_fillBuffer, other when it names Memcpy, Memset or Sync elsewhere, else
// computation (HTA's rules, plus the collectives of NCCL >= 2.19, RCCL and vLLM / symm_mem).
KernelType ClassifyDeviceEvent(EventKind kind, std::string_view name);

// A runtime call that replays a CUDA/HIP/MUSA graph (cudaGraphLaunch, hipGraphLaunch, ...):
// one launch for many kernels, none with an operator of its own.
inline bool IsGraphLaunch(std::string_view call) { return call.find("GraphLaunch") != std::string_view::npos; }

// ClassifyDeviceEvent memoised by interned name: classifying a long kernel name costs, and a
// trace repeats a few hundred names over its kernels.
class DeviceEventTypes {
 public:
  explicit DeviceEventTypes(const TraceIndex& index) : index_(index) {}
  KernelType Of(size_t event);

 private:
  const TraceIndex& index_;
  std::unordered_map<int64_t, KernelType> by_name_;  // (kind, name id) -> type
};

struct TemporalBreakdown {
  int64_t span_ns = 0;     // first device event's start .. last one's end
  int64_t busy_ns = 0;     // union of every kernel, copy and set, all streams together
  int64_t compute_ns = 0;  // union of the computation kernels
  int64_t idle_ns() const { return span_ns - busy_ns; }
  int64_t non_compute_ns() const { return busy_ns - compute_ns; }
};

struct KernelTotals {  // one kernel name's instances (mergeable across ranks)
  KernelType type = KernelType::kComputation;
  int64_t count = 0, total_ns = 0, min_ns = 0, max_ns = 0;
  void Add(int64_t ns);
  void Merge(const KernelTotals& o);
  double mean() const { return count ? static_cast<double>(total_ns) / static_cast<double>(count) : 0; }
  double stddev() const;  // sample (n - 1)
  // Welford's state, to save a summary and restore it elsewhere (rank_summary.h).
  double running_mean() const { return mean_; }
  double m2() const { return m2_; }
  void RestoreMoments(double mean, double m2) {
    mean_ = mean;
    m2_ = m2;
  }

 private:
  double mean_ = 0, m2_ = 0;  // Welford's running mean and sum of squared deviations
};

struct StreamIdle {  // a device stream's gaps, by what the stream waited for
  int32_t device = 0, stream = 0;
  int64_t events = 0;
  int64_t host_wait_ns = 0;    // the launch call began after the stream had gone idle
  int64_t kernel_wait_ns = 0;  // a short gap (< the kernel-wait threshold) between events
  int64_t other_ns = 0;
};

struct LaunchStats {
  int64_t launches = 0;     // device events joined to the call that launched them
  Summary cpu_ns, gpu_ns;   // the call's and the device event's durations
  Summary delay_ns;         // device start - call end (0 when it started earlier)
  int64_t shorter_than_launch = 0;  // device events shorter than their launch call
  int64_t long_delay = 0;           // delay above the cutoff
};

struct StreamQueue {  // launches issued but not started on a stream
  int32_t device = 0, stream = 0;
  int64_t launches = 0, max_depth = 0;
  double mean_depth = 0;  // time-weighted, first launch .. last start
};

struct GpuTime {
  bool has_device_events = false;
  TemporalBreakdown temporal;
  // Exclusive time per combination of types busy at once: bit i is KernelType i.
  std::array<int64_t, 1 << kKernelTypes> by_mask{};
  int64_t communication_ns = 0;  // union of communication kernels
  int64_t overlap_ns = 0;        // communication and computation at once
  std::map<std::string, KernelTotals> kernels;
  std::vector<StreamIdle> idle;
  LaunchStats launch;
  std::vector<StreamQueue> queues;
  // Share of communication time hidden under computation, %; NaN without communication.
  double CommCompOverlapPct() const;
};

struct GpuTimeOptions {
  int64_t kernel_wait_ns = 30'000;          // gaps shorter than this are kernel waits
  int64_t launch_delay_cutoff_ns = 100'000;  // launch delays above this are long
};

GpuTime AnalyzeGpuTime(const TraceIndex& index, const GpuTimeOptions& options = {});

// The tables, one row per rank (or per rank and stream / type / kernel).
struct RankGpuTime {
  int rank = 0;
  const GpuTime* gpu = nullptr;
};
Table TemporalBreakdownTable(const std::vector<RankGpuTime>& ranks);
Table KernelTypeTable(const std::vector<RankGpuTime>& ranks);
// Per kernel name over every rank: total, instances, per-rank mean, min and max rank;
// the `top` largest names, the rest as one "(others)" row per type.
Table KernelBreakdownTable(const std::vector<RankGpuTime>& ranks, int top = 20);
Table CommCompOverlapTable(const std::vector<RankGpuTime>& ranks);
Table IdleTimeTable(const std::vector<RankGpuTime>& ranks);
Table LaunchStatsTable(const std::vector<RankGpuTime>& ranks);
Table QueueLengthTable(const std::vector<RankGpuTime>& ranks);
// All seven, in that order.
std::vector<Table> GpuTimeTables(const std::vector<RankGpuTime>& ranks);
// Their report names, in that order.
const std::vector<std::string>& GpuTimeReportNames();

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_GPU_TIME_H_
