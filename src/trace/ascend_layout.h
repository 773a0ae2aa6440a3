// Huawei Ascend NPU traces (torch_npu's profiler: ASCEND_PROFILER_OUTPUT/trace_view.json) read
// into the common event kinds. The file is Chrome trace JSON, but its device work has no
// category: it is known by the process it is on.
//
// Mapping (processes by their process_name):
//   "Ascend Hardware"  a stream per thread; each task by its args' "Task Type" and name:
//                      PLACE_HOLDER* (the profiler's own markers) -> kOther; EVENT_RECORD* /
//                      EVENT_WAIT* -> kSync; MEMCPY_ASYNC -> kMemcpy; HCCL's tasks -> left
//                      out when they name their collective by connection_id, or (known HCCL
//                      task types: Notify Wait, Write Value, SDMA, ...) start inside a
//                      collective on their stream — the collective stands for them; an HCCL
//                      task outside any -> kKernel "hcom <name>"; any other task (AI_CORE,
//                      AI_VECTOR_CORE, MIX_AIC/AIV, KERNEL_*, AI_CPU, DSA_SQE, ...) -> kKernel
//   "CANN"             AscendCL / Node@launch / Hccl API calls -> kRuntime, but a call that
//                      made other calls on its thread and launched no device task itself
//                      (AscendCL@aclnnMm around its Node@launch) -> kOther, so API time is
//                      not counted twice
//   "HCCL"             a collective (hcom_allReduce_..., no "task type") -> kKernel on the
//                      stream its tasks ran on; its per-link "Plane" tasks -> left out
//                      (the same tasks as on the hardware streams)
//   "Overlap Analysis" the profiler's own summary ranges -> left out
// Device tasks join their API call by args.connection_id (read as the correlation), and
// operators their tasks by torch_npu's "async_npu" flows (an operator gets an External id
// when it has none). What was read as what is counted in ImportStats::layout.
#ifndef TIERSCOPE_TRACE_ASCEND_LAYOUT_H_
#define TIERSCOPE_TRACE_ASCEND_LAYOUT_H_

#include <cstdint>
#include <vector>

#include "trace/trace.h"

namespace tierscope::ascend {

// One end of a flow (ph s or f) as the Kineto reader saw it.
struct FlowEnd {
  int64_t id = 0;
  int64_t ts_ns = 0;
  int32_t pid = 0, tid = 0;
  bool start = false;
  bool pid_local = false, tid_local = false;  // a reader's own ids until its merge
};

// Whether `t` has torch_npu's device process ("Ascend Hardware").
bool IsAscendLayout(const Trace& t);

// Reads the Ascend processes' events into the common kinds (see the file comment); the
// trace's runtime becomes "cann".
void ApplyAscendLayout(Trace& t, std::vector<FlowEnd> flows);

}  // namespace tierscope::ascend

#endif  // TIERSCOPE_TRACE_ASCEND_LAYOUT_H_
