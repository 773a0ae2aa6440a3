// What rocprofv3's three importers (JSON results, CSV files, the rocpd database) share: a
// GPU agent as they count it, a dispatch's grid in Kineto's terms, and the trace's device.
#ifndef TIERSCOPE_TRACE_ROCM_DEVICES_H_
#define TIERSCOPE_TRACE_ROCM_DEVICES_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "trace/trace.h"

namespace tierscope::rocm {

struct Gpu {
  int32_t index = 0;  // among the GPUs: the events' pid
  std::string name;   // product name, else the ISA
  int64_t cu_count = 0;
  int64_t kernels = 0;  // dispatches read on it
};

// Kineto's "grid" (in workgroups) and "block" args of a dispatch whose grid counts
// work-items (rocprofiler's grid_size); sizes below 1 count as 1, no overflow.
inline std::string GridArgs(const int64_t items[3], const int64_t workgroup[3]) {
  std::string grid, block;
  for (int i = 0; i < 3; ++i) {
    const int64_t w = std::max<int64_t>(1, workgroup[i]);
    const int64_t n = std::max<int64_t>(0, items[i]);
    grid += (i ? ", " : "") + std::to_string(n / w + (n % w != 0));
    block += (i ? ", " : "") + std::to_string(w);
  }
  return "\"grid\": [" + grid + "], \"block\": [" + block + "]";
}

// The trace's device is the GPU that ran the most kernels (none: unknown); the host pid
// 1 when no call named one; events in start order.
inline void FinishTrace(Trace& t, const std::vector<const Gpu*>& gpus) {
  const Gpu* best = nullptr;
  for (const Gpu* g : gpus) {
    if (best == nullptr || g->kernels > best->kernels) best = g;
  }
  if (best != nullptr && best->kernels > 0) {
    t.device_name = best->name;
    t.device_units = static_cast<int32_t>(std::clamp<int64_t>(best->cu_count, 0, INT32_MAX));
  }
  if (t.host_pid == 0) t.host_pid = 1;
  std::stable_sort(t.events.begin(), t.events.end(), [](const Event& a, const Event& b) { return a.ts_ns < b.ts_ns; });
}

}  // namespace tierscope::rocm

#endif  // TIERSCOPE_TRACE_ROCM_DEVICES_H_
