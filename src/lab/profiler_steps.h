// The lab's vendor-profiler steps: the system profiler (nsys / msys) around one bench
// run, its SQLite export imported and its kernels checked against the Kineto trace's;
// the kernel profiler (ncu / mcu) on the hot kernel, its CSV read as tier 3. A profiler
// that is missing or fails is reported in the step, never an abort.
#ifndef TIERSCOPE_LAB_PROFILER_STEPS_H_
#define TIERSCOPE_LAB_PROFILER_STEPS_H_

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/commands.h"
#include "inspect/kernel_run.h"

namespace tierscope {

struct ProfilerRun {
  std::string tool;                  // nsys, msys, ncu, mcu
  std::string out_dir;               // the lab's results directory
  std::string name;                  // the run: "serial", "batch"
  std::vector<std::string> command;  // the bench command the profiler runs
  double pre_delay_s = 0;            // the bench's --pre-delay (in `command`); the profiler's delay is below it
  double timeout_s = 0;              // each tool's run is stopped past this (0: no limit)
  int64_t units = 0;                 // work units `command` runs (warm-up and timed): the capture's
};

// `--system-profiler` / `--kernel-profiler`: "auto" picks the device's profiler when it is
// on PATH and the engine is PyTorch ("" otherwise: the native engine has CUPTI and its own
// replay), "none" none, a name that one.
std::string ResolveProfiler(const std::string& choice, const std::string& device, const std::string& engine,
                            bool system);

// Two runs' hottest kernels compared: the profiler's export (`theirs`, its top
// `their_top`) and the Kineto trace (`ours`, `our_top`), each kernel's total time by name
// ("" for a run with no kernels). The two runs' timings drift by up to kRunToRunDrift:
// they agree when both put the same kernel on top, or when each times the other's top
// within that of its own (a tie the two runs may break either way).
inline constexpr double kRunToRunDrift = 0.2;
struct TopComparison {
  double in_ours = 0;    // the Kineto trace's time for the export's top / its own top's
  double in_theirs = 0;  // the export's time for the Kineto trace's top / its own top's
  bool agree = false;
};
TopComparison CompareTops(const std::string& their_top, const std::map<std::string, double>& theirs,
                          const std::string& our_top, const std::map<std::string, double>& ours);

// Runs the system profiler and its export, imports the SQLite and compares its kernels
// with the Kineto trace's: a JSON record of what ran and what it found ("status": ok,
// failed, or disagrees).
nlohmann::json SystemProfilerStep(const ProfilerRun& run, const TraceAnalysis& kineto);

// Runs the kernel profiler on `kernel` and reads its CSV as tier 3 (`result`); the JSON
// record says what ran; status "ok" only when `result` holds a report.
nlohmann::json KernelProfilerStep(const ProfilerRun& run, const std::string& kernel, KernelCommandResult* result);

}  // namespace tierscope

#endif  // TIERSCOPE_LAB_PROFILER_STEPS_H_
