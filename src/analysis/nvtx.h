// NVTX and annotation ranges, as Nsight Systems reports them: nvtx_sum (the ranges) and
// nvtx_kern_sum (each kernel projected onto every range that launched it). Ranges come
// from nsys NVTX_EVENTS and Kineto user_annotation (host: a kernel belongs to the ranges
// open on its launching thread when it was launched) and gpu_user_annotation (device: the
// ranges on its stream when it started). The join is a sweep per thread / stream, so it
// stays O((ranges + kernels) log ranges) at millions of ranges.
#ifndef TIERSCOPE_ANALYSIS_NVTX_H_
#define TIERSCOPE_ANALYSIS_NVTX_H_

#include <map>
#include <string>
#include <tuple>

#include "analysis/gpu_time.h"
#include "analysis/reports.h"
#include "analysis/table.h"

namespace tierscope {

Table NvtxSum(const TraceIndex& index);
Table NvtxKernSum(const TraceIndex& index);

// nvtx_kern_sum's figures in a mergeable form (a job adds its ranks'): per (range, side,
// kernel name), the kernels' durations and the range instances that launched them.
struct RangeKernels {
  int64_t range_instances = 0;
  KernelTotals kernels;
};
std::map<std::tuple<std::string, std::string, std::string>, RangeKernels> NvtxKernTotals(const TraceIndex& index);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_NVTX_H_
