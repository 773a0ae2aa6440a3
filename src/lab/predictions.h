// The lab's predictions: each lever (batching from the serial trace, each precision from
// the batched trace) predicted by what-if (analysis/whatif.h) from the profiled traces
// before step 4's final runs, then set beside those runs' speedup with the error.
#ifndef TIERSCOPE_LAB_PREDICTIONS_H_
#define TIERSCOPE_LAB_PREDICTIONS_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/commands.h"
#include "analysis/device_specs.h"
#include "workload/bench.h"

namespace tierscope {

// [{"lever", "change", "trace", "predicted_speedup", "notes"}...]: batching (batch=B on the
// serial trace, its B samples in one launch per op) and each precision the lab runs
// (precision=P on the batched trace); a lever that cannot be predicted carries "error".
// Tier 3 for the precision lever: the first GEMM launch of a batched run replayed in FP32
// and in each precision; by precision, its time over FP32's.
struct MatrixFactors {
  std::map<std::string, double> factors;          // precision -> factor
  std::map<std::string, std::string> failures;    // mode -> why its replay gave no time
  std::vector<std::string> replayed;              // modes replayed
};
MatrixFactors ReplayMatrixFactors(const BenchOptions& base, int passes, const std::vector<std::string>& precisions,
                                  const std::function<void(const std::string&)>& progress);

// The threads lever (native engine, more than one worker): the batched run on one worker,
// predicted by units=1 on the batched trace.
inline constexpr char kOneThreadLever[] = "batch-fp32-1-thread";

// `spec_file`: where `spec` was written, for the recorded command ("" if not). A precision
// with a tier-3 factor has its GEMMs take it (gemm=F) instead of the roofline's; without
// one (another engine, a failed replay) it is predicted by the roofline alone, and says why.
nlohmann::json PredictLevers(const TraceAnalysis& serial, const TraceAnalysis& batch, int64_t batch_size,
                             const std::optional<DeviceSpec>& spec, const std::string& spec_file,
                             const std::vector<std::string>& precisions, const MatrixFactors& matrix,
                             const std::string& engine);

// Each prediction's measured speedup (`measured(lever)`: the final runs' ratio, 0 when not
// measured) and its error in percent of the measured.
void AddMeasured(nlohmann::json& predictions, const std::function<double(const std::string&)>& measured);

}  // namespace tierscope

#endif  // TIERSCOPE_LAB_PREDICTIONS_H_
