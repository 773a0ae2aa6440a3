// Imports Chrome trace JSON written by PyTorch's profiler (Kineto, 2021 to now, the
// pre-Kineto legacy bare-list form, AMD/ROCm and torch_musa variants, and tierscope's own
// writer) into a Trace. One pass over traceEvents with simdjson On-Demand (on two cores
// for traces of a few MiB and more); a bad event is counted in Trace::stats and skipped,
// never fatal.
//
// Mapping, in short (categories are matched case-insensitively and kept as written in
// Event::cat; every event object's category is counted in stats.by_category, kept or
// not, under "" when it has none):
//   ph X  cpu_op | Operator                  -> kOp
//         user_annotation                    -> kAnnotation
//         gpu_user_annotation                -> kGpuAnnotation
//         cuda_runtime | cuda_driver | hip_runtime | privateuse1_runtime | Runtime |
//         any other "*_runtime" / "*_driver" -> kRuntime
//         kernel | Kernel                    -> kKernel
//         gpu_memcpy | Memcpy                -> kMemcpy
//         gpu_memset | Memset                -> kMemset
//         cuda_sync                          -> kSync
//         kernel_task                        -> kTask
//         no category, pid "CPU functions"   -> kOp      (legacy autograd profiler)
//         no category, pid "CUDA functions"  -> kKernel  (legacy autograd profiler)
//         anything else                      -> kOther
//   ph i/I named "[memory]"                  -> kMemory (v0 = Bytes, v1 = Total Allocated,
//                                               external_id = Addr); other instants,
//                                               ph M, flows (s/f/t), B/E and unknown
//                                               phases are counted in stats.metadata.
// Timestamps and durations (µs, integer or decimal; also as a string of those digits, as
// torch_npu writes "ts": "1736408883688177.930") become ns exactly (decimal digits,
// rounded to the nearest ns); they are not rebased. String pids/tids map to their trailing number
// ("stream 7" -> 7, "25738" -> 25738) or else to ids -2, -3, ... in order of first
// appearance; such names and all thread_name metadata land in Trace::thread_names.
// Ill-formed UTF-8 (in names, say) is read as U+FFFD, one per maximal subpart, and
// counted in stats.invalid_utf8, as Perfetto and Python's errors="replace" do; clean
// input pays nothing for it. Other invalid JSON anywhere in traceEvents fails the whole
// file, as json.load would; bad events inside valid JSON are counted in stats.malformed
// (with a reason in malformed_reasons) and skipped.
// args: "External id" / "external id" -> external_id, "correlation" (kTask: "kernel
// correlation") -> correlation; kKernel: v0 = flops, v1 = bytes when present. For kOp,
// kKernel, kMemcpy, kMemset, kSync and kTask the args object's members (raw JSON text
// without the braces) are stored in Event::args; runtime calls' args are not kept.
#ifndef TIERSCOPE_TRACE_KINETO_IMPORT_H_
#define TIERSCOPE_TRACE_KINETO_IMPORT_H_

#include <string>
#include <string_view>

#include "tierscope/status.h"
#include "trace/trace.h"

namespace tierscope {

// Reads a .json or .json.gz (gzip detected by magic bytes, not the name) Kineto trace.
// Errors: NotFound for a missing file; DataLoss for invalid JSON or a corrupt/truncated
// gzip stream (the message names the file and the byte offset); InvalidArgument for
// valid JSON that is not a trace (no traceEvents array).
// `threads`: readers to use (0: as many as this process may run on, at most two); the
// Trace is the same for any count.
StatusOr<Trace> ImportKinetoTrace(const std::string& path, int threads = 0);

// Same from bytes already in memory (uncompressed JSON); `source` names it in errors and
// becomes Trace::source.
StatusOr<Trace> ImportKinetoJson(std::string_view json, const std::string& source,
                                 int threads = 0);

}  // namespace tierscope

#endif  // TIERSCOPE_TRACE_KINETO_IMPORT_H_
