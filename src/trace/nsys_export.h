// Writes a Trace as an Nsight Systems SQLite export (`nsys export --type sqlite`'s
// schema: every column of these tables, with nsys's names, declared types and order), so
// queries written for nsys run on PyTorch (Kineto) traces; read back by ImportNsysSqlite.
//
//   kKernel      -> CUPTI_ACTIVITY_KIND_KERNEL   deviceId = pid, streamId = tid, contextId,
//                                                grid / block / registers / shared memory and
//                                                graphNodeId from the args; gridId one per
//                                                launch, from 1 in launch order
//   kRuntime     -> CUPTI_ACTIVITY_KIND_RUNTIME  globalTid = pid << 24 | tid (a tid beyond 24
//                                                bits, as Kineto's pthread ids often are, is
//                                                given a free one: threads stay distinct)
//   kMemcpy      -> CUPTI_ACTIVITY_KIND_MEMCPY   copyKind / srcKind / dstKind from the name
//                                                ("Memcpy HtoD (Pageable -> Device)"), bytes,
//                                                src / dst device and context of a P2P copy
//   kMemset      -> CUPTI_ACTIVITY_KIND_MEMSET   memKind from "Memset (Device)", bytes
//                (both with one column nsys lacks, tierscopeName: the name as the trace
//                has it, which the importer prefers; kinds like "Host" have no nsys enum)
//   kSync        -> CUPTI_ACTIVITY_KIND_SYNCHRONIZATION  eventId of an event sync
//   kAnnotation  -> NVTX_EVENTS (push/pop ranges, eventType 59)
// Columns the trace does not record are NULL (0 where nsys declares them NOT NULL).
// With StringIds (shortName: the bare function name, demangledName: the whole one),
// ENUM_NSYS_EVENT_TYPE, ENUM_CUDA_MEMCPY_OPER, ENUM_CUDA_MEM_KIND, TARGET_INFO_GPU (one row
// per device, when the trace names it), EXPORT_META_DATA (nsys's name / value table; the
// trace's rank, world size, backend and runtime family, which the importer reads back;
// META_DATA_EXPORT, nsys 2024's name, is a view of it) and indexes on the columns those
// queries join on (correlationId; globalTid and start; start). Operators (cpu_op),
// device-side annotations (gpu_user_annotation), CPU task spans and allocations have no
// place in the schema and are left out (counted).
#ifndef TIERSCOPE_TRACE_NSYS_EXPORT_H_
#define TIERSCOPE_TRACE_NSYS_EXPORT_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "tierscope/status.h"
#include "trace/trace.h"

namespace tierscope {

// The args PyTorch records on a collective's kernel that the export keeps in the kernel
// table's tierscopeArgs column (nsys has none for them), and the importer reads back.
inline constexpr std::string_view kCollectiveArgKeys[] = {
    "Collective name",    "In msg nelems",       "Out msg nelems",      "Group size", "dtype",
    "In split size",      "Out split size",      "Process Group Name",  "Process Group Description",
    "Process Group Ranks", "Src Rank",           "Dst Rank",            "Seq"};

struct NsysExportStats {
  int64_t kernels = 0, runtime = 0, memcpys = 0, memsets = 0, syncs = 0, ranges = 0;
  int64_t left_out = 0;  // events with no table in the schema
  int64_t threads_renumbered = 0;  // host thread ids beyond globalTid's 24 bits, given free ones
};

// Writes `out` whole or not at all: into `out`.tmp first, renamed over `out` when done.
StatusOr<NsysExportStats> ExportNsysSqlite(const Trace& trace, const std::string& out);

// Records `rank` as the export's rank (EXPORT_META_DATA's TIERSCOPE_RANK): a job's rank as
// assigned from its folders or names, which the trace itself did not carry, so the export
// reads back as the same rank whatever its file is called.
Status SetExportedRank(const std::string& path, int rank);

}  // namespace tierscope

#endif  // TIERSCOPE_TRACE_NSYS_EXPORT_H_
