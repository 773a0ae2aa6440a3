// The lab's precision step: the lower precision that pays on the device in use, and why.
// The device's peaks name the candidates (FP16 on a GPU's tensor cores; INT8 on a CPU with
// an INT8 dot; INT8 and BF16 where the engine also computes BF16 in BF16; through PyTorch,
// each of its lower precisions); the measured runs decide: a candidate is the lever only
// where it passed validation against FP32 and ran at least kMinLeverGain x batch-fp32.
#ifndef TIERSCOPE_LAB_PRECISION_LEVER_H_
#define TIERSCOPE_LAB_PRECISION_LEVER_H_

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tierscope {

// The least speed-up over batch-fp32 (pooled medians of one run) that counts as paying: a
// lower precision within run-to-run noise of FP32 is no lever.
inline constexpr double kMinLeverGain = 1.02;

// How a `why` opens where no lower precision pays (the lever is batch-fp32).
inline constexpr char kNoLeverPrefix[] = "none pays: ";

struct LeverInputs {
  std::string engine = "native";  // "native" or "torch"
  std::string device = "cpu";
  nlohmann::json peaks;           // `tierscope device`'s calibrated peaks
  bool bf16_arithmetic = false;   // the engine computes BF16 in BF16 here (AVX512_BF16 in force)
  std::vector<std::string> modes;  // the modes the lab measured (LabModes)
  std::function<bool(const std::string&)> valid;      // passed validation against FP32
  std::function<double(const std::string&)> pooled;   // samples/s, pooled median
};

struct PrecisionLever {
  std::string mode;       // "batch-fp32" where no lower precision pays
  std::string why;        // a lever: read after "because it is "; none: opens with kNoLeverPrefix
  std::string diagnosis;  // the diagnosis line's opening ("Precision: ...")
};

// The lever and why, from the peaks (the candidates) and the measured runs (the verdict):
// the fastest candidate that pays; where none does, the fastest other measured lower
// precision that pays (through PyTorch all are candidates); else batch-fp32, saying what
// each lower precision ran.
PrecisionLever ChoosePrecisionLever(const LeverInputs& in);

}  // namespace tierscope

#endif  // TIERSCOPE_LAB_PRECISION_LEVER_H_
