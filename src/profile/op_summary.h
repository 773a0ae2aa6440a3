// Tier-1 summaries computed from a Trace: PyTorch's key_averages table (optionally
// grouped by input shape, device time attributed to operators through their launches'
// External id) and per-work-unit counts of operators, launches, kernels, allocations.
#ifndef TIERSCOPE_PROFILE_OP_SUMMARY_H_
#define TIERSCOPE_PROFILE_OP_SUMMARY_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trace/trace.h"
#include "trace/units.h"

namespace tierscope {

struct OpStat {
  std::string name;
  std::string input_dims;  // "[[64, 128, 128], [384, 128], [384]]" when grouped by shape
  int64_t calls = 0;
  int64_t self_cpu_ns = 0, cpu_total_ns = 0;
  int64_t self_device_ns = 0, device_total_ns = 0;
};

// Operators (and user annotations) aggregated by name, or by name and input shapes;
// sorted by self device time, then self CPU time, descending.
std::vector<OpStat> KeyAverages(const Trace& trace, bool group_by_input_shape);

// The table in key_averages().table()'s layout, at most `row_limit` rows.
std::string FormatKeyAveragesTable(const std::vector<OpStat>& stats, int row_limit);

// "Per work unit (...)": launches, kernels, allocations, frees, wall and kernel busy time,
// and operator calls per unit, as counted by CountPerUnit (trace/units.h).
std::string FormatUnitSummary(const UnitCounts& counts);

// The JSON array after "Input Dims": in an args fragment, a view of it ("" when absent).
std::string_view InputDimsOf(std::string_view args);

}  // namespace tierscope

#endif  // TIERSCOPE_PROFILE_OP_SUMMARY_H_
