// Collective bandwidth (nccl_sum): each collective and message size of a trace's NCCL / RCCL
// kernels (PyTorch records "Collective name", "In/Out msg nelems", "Group size" and "dtype"
// on them) with its algorithm bandwidth (bytes / time) and bus bandwidth by nccl-tests'
// formulas (all-reduce x 2(n-1)/n; all-gather, reduce-scatter, all-to-all x (n-1)/n;
// broadcast, reduce, send and recv x 1), against the device's per-direction link peak.
#ifndef TIERSCOPE_ANALYSIS_COLLECTIVE_BANDWIDTH_H_
#define TIERSCOPE_ANALYSIS_COLLECTIVE_BANDWIDTH_H_

#include <optional>
#include <string_view>

#include "analysis/device_specs.h"
#include "analysis/reports.h"
#include "analysis/table.h"

namespace tierscope {

// nccl-tests' bus-bandwidth factor for a collective over n ranks (0: a name it does not
// define).
double BusBandwidthFactor(std::string_view collective, int64_t ranks);

Table NcclSumTable(const TraceIndex& index, const std::optional<DeviceSpec>& spec);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_COLLECTIVE_BANDWIDTH_H_
