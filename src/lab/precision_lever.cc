// The lab's precision step: candidates from the device's peaks, the verdict from the runs.
#include "lab/precision_lever.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "core/text.h"
#include "inspect/calibration.h"

namespace tierscope {
namespace {

// The candidates the device's peaks name, in order of preference on a tie, and why; through
// PyTorch, whose kernels are its own, every lower precision the lab measured (`lower`).
std::vector<std::string> Candidates(const LeverInputs& in, const std::vector<std::string>& lower,
                                    std::string* reason) {
  const double fp32_peak = in.peaks.value("fp32_gflops", 0.0);
  const auto times_fp32 = [&](double peak) {
    const std::string times = TimesFp32Peak(peak, fp32_peak);
    return times.empty() ? times : ", " + times;
  };
  const std::string int8_dot = in.peaks.value("int8_dot", std::string());
  if (in.engine == "torch") {
    *reason = "PyTorch's fastest lower precision that passed validation on this " +
              std::string(in.device == "cpu" ? "CPU" : "device");
    return lower;
  }
  if (in.device != "cpu") {
    const double f16 = in.peaks.value("fp16_tensor_gflops", 0.0);
    *reason = f16 > 0 ? "a GPU: FP16 runs on the tensor cores, calibrated at " + Fixed(f16, 0) + " GFLOP/s" +
                            times_fp32(f16)
                      : "a GPU: FP16 runs on the tensor cores, whose peak was not calibrated here";
    return {"batch-fp16"};
  }
  const double i8 = in.peaks.value("int8_gops", 0.0);
  if (!int8_dot.empty() && in.peaks.value("bf16_dot", false) && in.bf16_arithmetic) {
    const double b16 = in.peaks.value("bf16_gflops", 0.0);
    *reason = "a CPU with an INT8 dot (" + int8_dot + ", calibrated at " + Fixed(i8, 0) + " GOP/s" + times_fp32(i8) +
              ") and BF16 arithmetic (AVX512_BF16, " + Fixed(b16, 0) + " GFLOP/s" + times_fp32(b16) +
              "): the faster of the two that pays";
    return {"batch-int8", "batch-bf16"};
  }
  if (!int8_dot.empty()) {
    *reason = "a CPU: the engine's FP16 and BF16 GEMMs convert to FP32 before every FMA here (storage formats "
              "that save bytes, not arithmetic: no BF16 arithmetic in force), while INT8 runs on " + int8_dot +
              ", calibrated at " + Fixed(i8, 0) + " GOP/s" + times_fp32(i8);
    return {"batch-int8"};
  }
  *reason = "a CPU without an INT8 dot instruction: FP16 only halves the bytes moved";
  return {"batch-fp16"};
}

}  // namespace

PrecisionLever ChoosePrecisionLever(const LeverInputs& in) {
  const double fp32_sps = in.pooled("batch-fp32");
  const auto ratio = [&](const std::string& m) { return in.pooled(m) / fp32_sps; };
  const auto pays = [&](const std::string& m) {
    const double r = ratio(m);
    return in.valid(m) && std::isfinite(r) && r >= kMinLeverGain;
  };
  const auto measured = [&](const std::vector<std::string>& modes) {
    std::string text;
    for (const std::string& m : modes) {
      const double r = ratio(m);
      text += (text.empty() ? "" : ", ") + m +
              (!in.valid(m)          ? " failed validation"
               : std::isfinite(r) ? " ran " + Fixed(r, 3) + "x batch-fp32"
                                  : " was not measured");
    }
    return text;
  };
  const auto fastest_paying = [&](const std::vector<std::string>& modes) {
    std::string best;
    for (const std::string& m : modes) {
      if (pays(m) && (best.empty() || in.pooled(m) > in.pooled(best))) best = m;
    }
    return best;
  };
  std::vector<std::string> lower;  // every lower precision the lab measured
  for (const std::string& m : in.modes) {
    if (m.rfind("batch-", 0) == 0 && m != "batch-fp32") lower.push_back(m);
  }
  std::string reason;
  const std::vector<std::string> candidates = Candidates(in, lower, &reason);
  std::vector<std::string> others;  // the lower precisions that are not candidates (none through PyTorch)
  for (const std::string& m : lower) {
    if (std::find(candidates.begin(), candidates.end(), m) == candidates.end()) others.push_back(m);
  }
  const std::string gain = "pass validation and run at least " + Fixed(kMinLeverGain, 2) + "x batch-fp32";
  const std::string because = candidates.size() > 1 ? "they were the candidates because this is "
                                                     : "it was the candidate because this is ";

  PrecisionLever lever;
  lever.mode = fastest_paying(candidates);
  if (!lever.mode.empty()) {
    // One candidate: its ratio is the diagnosis's "Measured"; several: each one's.
    lever.why = reason + (candidates.size() > 1 ? " (measured: " + measured(candidates) + ")" : "");
  } else if (!(lever.mode = fastest_paying(others)).empty()) {
    lever.why = "the fastest other lower precision to " + gain + " (" + measured({lever.mode}) +
                "), where the device's " + (candidates.size() > 1 ? "candidates" : "candidate") +
                " did not: " + measured(candidates) + "; " + because + reason;
  }
  if (lever.mode.empty()) {
    lever.mode = "batch-fp32";
    std::vector<std::string> all = candidates;
    all.insert(all.end(), others.begin(), others.end());
    lever.why = std::string(kNoLeverPrefix) + measured(all) + "; a lever must " + gain +
                (in.engine == "torch" ? "" : "; " + because + reason);
    lever.diagnosis = "Precision: no lower precision pays here (" +
                      lever.why.substr(std::string_view(kNoLeverPrefix).size()) + ")";
  } else {
    lever.diagnosis = "Precision: the lever for this device is " + lever.mode + ", because it is " + lever.why;
  }
  return lever;
}

}  // namespace tierscope
