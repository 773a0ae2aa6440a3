// The lab's benchmark runs: the modes it measures on a device, the median of repeated
// runs of one mode, and step 4 — every mode again and the method's recommendation,
// with the final configuration chosen among the modes whose precision passed validation.
#ifndef TIERSCOPE_LAB_LAB_RUNS_H_
#define TIERSCOPE_LAB_LAB_RUNS_H_

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lab/lab.h"
#include "lab/sweep.h"
#include "tierscope/status.h"
#include "workload/bench.h"

namespace tierscope {

// The modes the lab measures on `device`: INT8 where the backend has an INT8 GEMM (the
// CPU), the study's four everywhere.
std::vector<std::string> LabModes(const std::string& device);

// The median of `repeats` runs of one mode, and each run's throughput; `output` (when
// given) receives the last run's output.
StatusOr<nlohmann::json> BenchMedian(const BenchOptions& base, const std::string& mode, int repeats,
                                     LabProgress& progress, std::vector<float>* output = nullptr);

// The median of a mode's runs in steps 0 and 4 together.
double PooledMedian(const nlohmann::json& baseline, const nlohmann::json& final_modes, const char* mode);

// Step 4 (see lab_runs.cc); `valid` says whether a mode's precision passed validation.
StatusOr<nlohmann::json> FinalStep(const BenchOptions& base, const LabOptions& o, int repeats,
                                   const nlohmann::json& baseline, const std::string& best_mode,
                                   const SweepResult& sweep, const std::function<bool(const std::string&)>& valid,
                                   LabProgress& progress, nlohmann::json* commands);

}  // namespace tierscope

#endif  // TIERSCOPE_LAB_LAB_RUNS_H_
