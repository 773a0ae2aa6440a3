// `tierscope lab`: the whole study in one command on tierscope's engine or PyTorch — no-profiler
// baselines, tier 1 operator profiles and their diff, tier 2 timelines with the system
// reports and rules, tier 3 on the hottest kernel of the serial and batched runs, the
// batch sweep and FP16/BF16 validation, and the final benchmark — written to a results
// directory with summary.json (every number), the traces, the kernel reports and
// report.html.
#ifndef TIERSCOPE_LAB_LAB_H_
#define TIERSCOPE_LAB_LAB_H_

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "tierscope/status.h"

namespace tierscope {

struct LabOptions {
  // native: tierscope's engine; torch: the same steps on the model through PyTorch
  // (bench --engine torch), its own profiler's trace read by tierscope's analyzer.
  std::string engine = "native";
  std::string python;           // torch: the Python to run (empty: TIERSCOPE_PYTHON, the test venv's, python3)
  double timeout_s = 1800;      // torch: each run, and each profiler run, is stopped past this (0: no limit)
  // The vendor profilers (lab/profilers.h): "auto" runs the device's (nsys / ncu on CUDA,
  // msys / mcu on MUSA) when it is on PATH, "none" none, a name that one.
  std::string system_profiler = "auto";
  std::string kernel_profiler = "auto";
  std::string model_dir;        // empty: the built-in model
  std::string out_dir = "results";
  bool quick = false;           // about a minute: fewer repeats, iterations and sweep points
  int threads = 0;
  std::string device = "cpu";  // cpu | cuda[:N]
  int64_t batch_size = 64;
  int64_t seq_len = 128;
  uint64_t seed = 2026;
  int repeats = 0;              // baseline repeats per mode (0: 3, quick 1)
  std::string command_line;     // as invoked, for summary.json
};

// Progress: on a terminal one updating line, otherwise plain log lines.
class LabProgress {
 public:
  explicit LabProgress(bool tty);
  void Step(int index, const std::string& title);  // index 0..6
  void Detail(const std::string& text);
  // A line that stays on screen: something the user asked for did not happen.
  void Warn(const std::string& text);
  void Done(const std::string& text);

 private:
  bool tty_;
  int step_ = 0;
  std::string title_;
};

// Runs the lab; returns summary.json's content (also written to out_dir).
StatusOr<nlohmann::json> RunLab(const LabOptions& options, LabProgress& progress);

}  // namespace tierscope

#endif  // TIERSCOPE_LAB_LAB_H_
