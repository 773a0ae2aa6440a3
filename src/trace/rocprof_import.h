// Imports AMD rocprofv3's JSON output (rocprofiler-sdk's `--output-format json`: one object
// with a "rocprofiler-sdk-tool" array of per-process results) into a Trace, so the analyzer
// reads ROCm runs profiled without PyTorch's profiler.
//
// Mapping (buffer_records; operation names from strings.buffer_records[kind].operations):
//   kernel_dispatch   -> kKernel: name from kernel_symbols (formatted_kernel_name), on the
//                        GPU agent's index among the GPUs (pid) and its HIP stream (tid;
//                        the HSA queue when no stream is recorded); args carry grid (in
//                        workgroups) and block, as Kineto writes them
//   memory_copy       -> kMemcpy, named by its operation (MEMORY_COPY_HOST_TO_DEVICE, ...),
//                        with its bytes; on the destination agent's GPU
//   hip_api / hsa_api / rccl_api -> kRuntime on the calling thread, named by operation
//   marker_api        -> kAnnotation (roctx ranges), named by the message when recorded
// Device events join their API call by correlation_id.internal. Times are ns as
// recorded (the monotonic clock). The device is the GPU agent with the most kernels
// (product_name, cu_count). A record missing a field, or with an unknown kind, operation,
// kernel or agent, is counted in stats.malformed with its reason and skipped.
#ifndef TIERSCOPE_TRACE_ROCPROF_IMPORT_H_
#define TIERSCOPE_TRACE_ROCPROF_IMPORT_H_

#include <string>
#include <string_view>

#include "tierscope/status.h"
#include "trace/trace.h"

namespace tierscope {

// Whether `head` (a file's first bytes) starts a rocprofv3 JSON result.
bool LooksLikeRocprofJson(std::string_view head);

// `json`: the whole document, followed by simdjson's padding. InvalidArgument when it is
// valid JSON but not a rocprofv3 result; DataLoss for invalid JSON.
StatusOr<Trace> ImportRocprofJson(std::string_view json, const std::string& source);

}  // namespace tierscope

#endif  // TIERSCOPE_TRACE_ROCPROF_IMPORT_H_
