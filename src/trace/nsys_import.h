// Imports an Nsight Systems SQLite export (`nsys export --type sqlite`) into a Trace:
// CUDA kernels, runtime/driver API calls, memcpys, memsets, synchronisations and NVTX
// ranges, with names resolved through StringIds and device info from TARGET_INFO_*.
#ifndef TIERSCOPE_TRACE_NSYS_IMPORT_H_
#define TIERSCOPE_TRACE_NSYS_IMPORT_H_

#include <string>

#include "tierscope/status.h"
#include "trace/trace.h"

struct sqlite3;

namespace tierscope {

// Reads the export at `path` (opened read-only; never modified).
//
// Mapping (times are the export's ns, unchanged):
//   CUPTI_ACTIVITY_KIND_KERNEL          -> kKernel   pid = deviceId, tid = streamId
//   CUPTI_ACTIVITY_KIND_RUNTIME         -> kRuntime  pid/tid from globalTid
//   CUPTI_ACTIVITY_KIND_MEMCPY          -> kMemcpy   "Memcpy HtoD (Pageable -> Device)", v0 = bytes
//   CUPTI_ACTIVITY_KIND_MEMSET          -> kMemset   "Memset (Device)", v0 = bytes
//   CUPTI_ACTIVITY_KIND_SYNCHRONIZATION -> kSync     "Stream Sync", "Event Sync", ...
//   NVTX_EVENTS push/pop, start/end     -> kAnnotation pid/tid from globalTid
// Device events share `correlation` with the runtime call that issued them (when the
// export holds several processes, correlation = pid << 32 | correlationId, since CUPTI
// numbers them per process). Runtime
// names drop nsys's "_v7000"-style version suffix (the raw name is kept as args "api").
// Event.cat is the source table's name; stats.by_category counts rows per table.
//
// Errors: a missing/unreadable file, a file that is not SQLite, or one with neither a
// kernel nor a runtime table. Rows with NULL (or non-numeric) required values, or an
// end before their start, are skipped and counted in stats.malformed(_reasons).
StatusOr<Trace> ImportNsysSqlite(const std::string& path);

// The same import from an export already open as `db` (a file, or bytes deserialized
// into memory); `source` names it in errors. The connection is only read.
StatusOr<Trace> ImportNsysDb(sqlite3* db, const std::string& source);

}  // namespace tierscope

#endif  // TIERSCOPE_TRACE_NSYS_IMPORT_H_
