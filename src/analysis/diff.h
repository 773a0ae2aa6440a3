// Diff of a baseline trace against an optimised one: operators, launches, kernels and
// memory operations side by side (per work unit when both have units), device time,
// in-use, and which kernel became the hottest.
#ifndef TIERSCOPE_ANALYSIS_DIFF_H_
#define TIERSCOPE_ANALYSIS_DIFF_H_

#include <string>
#include <vector>

#include "analysis/reports.h"
#include "analysis/table.h"

namespace tierscope {

struct TraceDiff {
  bool per_unit = false;  // counts are per work unit (else totals)
  std::vector<std::string> headline;  // "aten::linear 832 -> 13", ...
  Table summary;   // launches, kernels, memory ops, device time, in-use, hottest kernel
  Table operators; // operator calls base -> new
  Table kernels;   // kernel time and count base -> new
  Table explained; // how much of the measured change each difference explains (diff_explained.h)
  // Each trace's verdict (trace_quality.h's one line), and whether a check failed on either:
  // then the headline says first that its changes rest on numbers not to be concluded from.
  std::string base_quality, new_quality;
  bool quality_failed = false;
};

TraceDiff DiffTraces(const TraceIndex& base, const TraceIndex& next);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_DIFF_H_
