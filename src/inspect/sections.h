// Tier-3 sections — LaunchStats, SpeedOfLight, MemoryWorkloadAnalysis, named as Nsight
// Compute names them — computed from the evidence about one kernel launch, whatever its
// source (tierscope's replay, an ncu CSV, a tier-2 trace), plus the study's rule for
// when kernel-level work is worth it. Absent metrics say why they are absent.
#ifndef TIERSCOPE_INSPECT_SECTIONS_H_
#define TIERSCOPE_INSPECT_SECTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "tierscope/status.h"

namespace tierscope {

// What is known about one kernel launch. Unset optionals are unknown.
struct KernelEvidence {
  std::string source;                // "tierscope replay", "ncu CSV x.csv", "trace t.json"
  std::string missing = "(not measured)";  // how an absent metric reads
  std::string kernel, device;
  int64_t id = -1;                   // launch id in its source
  std::optional<Dim3> grid, block;   // CPU: tasks and the work of one task
  std::optional<double> units;       // workers / SMs
  std::string unit_name = "workers"; // "workers" or "SMs"
  std::optional<double> duration_ns, duration_min_ns, duration_max_ns;  // median, min, max
  std::optional<double> duration_cv;  // stddev / mean over passes or launches
  int passes = 0;                     // replay passes (0: not replayed)
  int64_t samples = 0;                // durations behind duration_ns
  std::optional<double> hot_share;    // of all kernel time in the workload
  std::optional<int> hot_rank;        // 1 = the hottest kernel
  std::optional<double> flops, bytes_read, bytes_written;
  std::optional<double> bytes_moved;  // read + written, when only the sum is known
  std::string pipe = "fp32_fma";
  std::optional<double> peak_flops, peak_bw;  // FLOP/s and bytes/s of the machine
  std::optional<double> busy_pct;             // worker busy time / (workers x duration)
  std::vector<int64_t> worker_tasks;          // tasks each worker ran
  // Measured by another tool, in percent of its peaks.
  std::optional<double> compute_pct, memory_pct, dram_pct;
  std::optional<double> waves, registers, achieved_occupancy, theoretical_occupancy;
  // GPUs: the kernel the device ran for this launch (a library call names its own), how
  // many it ran, shared memory per block, resident blocks per SM and what limits them.
  std::string device_kernel;
  int device_kernels = 0;
  std::optional<double> shared_bytes, blocks_per_unit;
  std::string occupancy_limiter;
  // How the peaks were checked: "" or, e.g., "re-measured once because ...".
  std::string peaks_note;
  // Whether the caches were flushed before each timed pass (unknown: another tool's
  // data). Unflushed, a kernel may read faster than the memory (triad) peak from cache.
  std::optional<bool> caches_flushed;
};

struct SectionMetric {
  std::string name, unit;
  std::optional<double> value;
  std::string text;  // for a non-numeric value, or why it is absent
};

struct Section {
  std::string id, title;
  std::vector<SectionMetric> metrics;
  std::vector<std::string> notes;
};

// The study's rule: kernel-level work only when the grid fills the device, the kernel is
// a stable hot spot, and it is far from the bound the sections show.
struct RuleCheck {
  std::string name;        // "fills the device", "stable hot spot", "far from its bound"
  std::optional<bool> ok;  // unknown when the evidence lacks it
  std::string evidence;
};

struct Recommendation {
  bool kernel_level = false;
  // False when a measured throughput is above 100% of its peak: no conclusion is drawn.
  bool trustworthy = true;
  std::string verdict;
  std::vector<RuleCheck> checks;
};

struct KernelReport {
  KernelEvidence evidence;
  std::vector<Section> sections;
  Recommendation recommendation;
};

struct SectionInfo {
  const char* id;
  const char* title;
  const char* description;
};
// The sections this tool knows, in report order.
const std::vector<SectionInfo>& KnownSections();
// "LaunchStats,SpeedOfLight" -> ids, checked; empty: all. The error lists the valid ones.
StatusOr<std::vector<std::string>> ParseSections(const std::string& list);
// `tierscope kernel --list-sections`.
std::string ListSectionsText();

// Thresholds of the rule.
inline constexpr double kHotShare = 0.10;   // of all kernel time
inline constexpr double kStableCv = 0.15;   // duration spread between passes
inline constexpr double kFarFromBound = 60;  // % of the bounding peak

// Achieved throughput as % of the peaks, as SpeedOfLight shows it (another tool's own
// percentages when it gave them).
struct ThroughputPct {
  std::optional<double> compute, memory;
};
ThroughputPct Throughput(const KernelEvidence& evidence);
// True when a throughput is above 100% of its peak: physically impossible, so the
// peaks (or the measurement) cannot be trusted and no verdict may rest on them. Memory
// above the DRAM peak is possible, and not counted, when the caches were not flushed.
bool AbovePeak(const KernelEvidence& evidence);

KernelReport BuildKernelReport(const KernelEvidence& evidence,
                               const std::vector<std::string>& sections);
Recommendation Recommend(const KernelEvidence& evidence);

std::string RenderKernelReports(const std::vector<KernelReport>& reports);
nlohmann::json KernelReportsToJson(const std::vector<KernelReport>& reports);

}  // namespace tierscope

#endif  // TIERSCOPE_INSPECT_SECTIONS_H_
