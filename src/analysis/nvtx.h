// NVTX and annotation ranges, as Nsight Systems reports them: nvtx_sum (the ranges) and
// nvtx_kern_sum (each kernel projected onto every range that launched it). Ranges come
// from nsys NVTX_EVENTS and Kineto user_annotation (host: a kernel belongs to the ranges
// open on its launching thread when it was launched) and gpu_user_annotation (device: the
// ranges on its stream when it started). The join is a sweep per thread / stream, so it
// stays O((ranges + kernels) log ranges) at millions of ranges.
#ifndef TIERSCOPE_ANALYSIS_NVTX_H_
#define TIERSCOPE_ANALYSIS_NVTX_H_

#include "analysis/reports.h"
#include "analysis/table.h"

namespace tierscope {

Table NvtxSum(const TraceIndex& index);
Table NvtxKernSum(const TraceIndex& index);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_NVTX_H_
