// Analysis rules in the manner of `nsys analyze` (each with its threshold and the
// events that triggered it) and the diagnosis that ranks findings by the time they
// explain and says the next step the study's method prescribes.
#ifndef TIERSCOPE_ANALYSIS_RULES_H_
#define TIERSCOPE_ANALYSIS_RULES_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/reports.h"

namespace tierscope {

struct RuleOptions {
  double large_gap_ns = 100'000;    // gaps_large: idle stretches at least this long
  double low_util_percent = 50;     // gpu_util_low: device in use below this
  double short_share_percent = 50;  // launch_bound: share of short kernels at least this
  double api_to_kernel = 0.5;       // launch_bound: launch API time >= this x kernel time
  double hot_share_percent = 20;    // hot_kernel: a kernel name with this share of device time
};

struct Finding {
  std::string rule;                   // "launch_bound"
  std::string title;                  // one line
  std::vector<std::string> evidence;  // the numbers behind it
  std::string threshold;              // the rule's threshold, printed
  std::vector<std::string> examples;  // events that triggered it
  std::string next_step;
  double explained_ns = 0;            // time the finding explains (for ranking)
};

// The nsys-analyze-style rules: synchronous memcpy / memset, synchronisation calls,
// large gaps, low device utilisation, launch-bound execution. Only rules that fire.
std::vector<Finding> RunRules(const TraceIndex& index, const AnalysisOptions& options,
                              const RuleOptions& rules = {});

// The rules plus the hot-kernel judgement (granularity vs a kernel worth a tier-3
// look), ranked by explained time. Empty means no problem found.
std::vector<Finding> Diagnose(const TraceIndex& index, const AnalysisOptions& options,
                              const RuleOptions& rules = {});

std::string RenderFindings(const std::vector<Finding>& findings);
nlohmann::json FindingsToJson(const std::vector<Finding>& findings);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_RULES_H_
