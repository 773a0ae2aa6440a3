// Tier 3 on tierscope's engine: a LaunchHook that picks kernel launches by name (exact
// or regex), skips the first N matches, and replays each selected launch for several
// passes on the same inputs — saving the buffers it writes before the first run and
// restoring them before every pass and after the last, so the workload's result is the
// one a single run gives — like Nsight Compute's kernel replay. Buffers are read and
// written through the launching backend's copies, so device memory works too. Every launch's duration
// is tallied too, so a kernel's share of the workload's kernel time is known.
#ifndef TIERSCOPE_INSPECT_KERNEL_INSPECTOR_H_
#define TIERSCOPE_INSPECT_KERNEL_INSPECTOR_H_

#include <cstdint>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "tierscope/status.h"

namespace tierscope {

// A kernel name as -k gives it: exact, or "regex:PATTERN" (searched, as ncu does); an
// empty spec matches every kernel.
class KernelNameMatcher {
 public:
  KernelNameMatcher() = default;
  // InvalidArgument naming the spec when the pattern is not a valid regular expression.
  static StatusOr<KernelNameMatcher> Create(const std::string& spec);
  bool Matches(std::string_view kernel) const;

 private:
  std::string spec_;
  bool is_regex_ = false;
  std::regex regex_;
};

struct KernelFilter {
  std::string name;    // exact kernel name, or "regex:PATTERN" (searched, as ncu does)
  int64_t skip = 0;    // matching launches to let run unprofiled first
  int64_t count = 1;   // launches to profile
};

struct InspectorOptions {
  KernelFilter filter;
  int passes = 10;          // replay passes per profiled launch
  bool flush_caches = true; // write over a buffer larger than the caches before each pass
};

// One profiled launch.
struct ProfiledLaunch {
  int64_t id = 0;          // the launch's index in the workload (all kernels, from 0)
  int64_t invocation = 0;  // its index among launches of this kernel
  std::string kernel;
  Dim3 grid, block;
  double flops = 0, bytes_read = 0, bytes_written = 0;
  std::string pipe;
  int64_t shared_bytes = 0;  // the descriptor's (GPUs)
  int workers = 0;
  std::vector<int64_t> pass_ns;      // duration of each replay pass
  std::vector<double> pass_busy;     // sum of task time / (workers x duration), per pass
                                     // (CPU; empty on a GPU)
  std::vector<int64_t> worker_tasks; // tasks each worker ran, in the median pass
  // GPUs: what the device reported it ran (CUPTI), and whether every pass was timed by
  // the device's own records (else by CUDA events, which include the launch latency).
  std::optional<DeviceKernelInfo> device;
  bool device_timed = false;
};

// Every launch of one kernel name in the workload (the first, unreplayed runs).
struct KernelTally {
  std::string kernel;
  int64_t launches = 0;
  int64_t total_ns = 0;
};

class KernelInspector : public LaunchHook {
 public:
  // Checks the filter (regex syntax, count >= 1, skip >= 0, passes >= 1).
  static StatusOr<std::unique_ptr<KernelInspector>> Create(const InspectorOptions& options);

  Status OnLaunch(Backend& backend, const LaunchDesc& desc,
                  FunctionRef<StatusOr<KernelRun>()> run) override;

  const std::vector<ProfiledLaunch>& profiled() const { return profiled_; }
  // By total time, largest first.
  std::vector<KernelTally> Tallies() const;
  int64_t total_kernel_ns() const { return total_ns_; }
  int64_t launches() const { return next_id_; }
  // Distinct kernel names launched, in order of first launch.
  const std::vector<std::string>& kernel_names() const { return names_; }
  bool Matches(std::string_view kernel) const;
  const InspectorOptions& options() const { return options_; }

 private:
  explicit KernelInspector(const InspectorOptions& o) : options_(o) {}

  InspectorOptions options_;
  KernelNameMatcher matcher_;
  int64_t next_id_ = 0, matched_ = 0, total_ns_ = 0;
  std::vector<ProfiledLaunch> profiled_;
  std::map<std::string, KernelTally, std::less<>> tallies_;
  std::vector<std::string> names_;
  std::vector<std::vector<std::byte>> before_, after_;
};

}  // namespace tierscope

#endif  // TIERSCOPE_INSPECT_KERNEL_INSPECTOR_H_
