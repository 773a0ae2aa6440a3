// `tierscope validate`: FP32 vs FP16 and FP32 vs BF16 on the same weights and inputs
// (the study's seed 2026, 64 x 128): cosine similarity in double, mean and max absolute
// error, and a tolerance check per precision that fails loudly when one is broken.
#ifndef TIERSCOPE_LAB_VALIDATE_H_
#define TIERSCOPE_LAB_VALIDATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tierscope/status.h"

namespace tierscope {

struct ValidateOptions {
  std::string engine = "native";  // native | torch (each precision through PyTorch, as bench --engine torch)
  std::string python;             // torch: the Python to run
  double timeout_s = 1800;        // torch: a run with no reply in this long stops its worker (0: no limit)
  std::string model_dir;  // empty: the built-in model
  int64_t batch_size = 64;
  int64_t seq_len = 128;
  uint64_t seed = 2026;
  int threads = 0;
  std::string device = "cpu";  // cpu | cuda[:N]
};

struct OutputDiff {
  double cosine = 0;    // over the flattened outputs, in double
  double mean_abs = 0;
  double max_abs = 0;
  // NaN or infinite values: one fails the check, wherever it is.
  int64_t nonfinite_reference = 0, nonfinite_other = 0;
};

OutputDiff CompareOutputs(const std::vector<float>& reference, const std::vector<float>& other);

struct PrecisionCheck {
  std::string dtype;  // "fp16", "bf16"
  OutputDiff diff;
  double min_cosine = 0, max_abs_limit = 0;  // the tolerance
  bool pass = false;
};

// The tolerances: what correct FP32-accumulating kernels stay within on BERT outputs
// (FP16 keeps 11 significant bits, BF16 8). Any non-finite value fails.
PrecisionCheck CheckPrecision(const std::string& dtype, const OutputDiff& diff);

struct ValidationResult {
  std::vector<PrecisionCheck> checks;
  bool pass = false;
  nlohmann::json json;  // validation.json
  std::string text;
};

StatusOr<ValidationResult> RunValidation(const ValidateOptions& options);

}  // namespace tierscope

#endif  // TIERSCOPE_LAB_VALIDATE_H_
