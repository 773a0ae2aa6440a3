// Imports the rocpd SQLite database rocprofv3 writes in ROCm 7 (`--output-format rocpd`,
// <host>/<pid>_results.db; schema 3) into the Trace the rocprofv3 JSON and CSV imports give
// (rocprof_import.h): kernels (rocpd_kernel_dispatch, named by rocpd_info_kernel_symbol's
// display name) on their GPU's index among the GPUs (pid) and HIP stream (tid; the queue
// when the stream is 0) with grid in workgroups; copies (rocpd_memory_copy, named by their
// direction, with their bytes); API calls (rocpd_region: HIP, HSA, RCCL as runtime calls,
// roctx ranges as annotations named by their message) on their process and thread. Device
// work joins its call by the events' stack_id (the call's internal correlation id). Each
// process's tables carry a UUID suffix; every set in the file is read. The GPU is named
// by rocpd_info_agent (product_name, extdata's cu_count). A row with a missing or absurd
// field is counted in stats.malformed and skipped.
#ifndef TIERSCOPE_TRACE_ROCPD_IMPORT_H_
#define TIERSCOPE_TRACE_ROCPD_IMPORT_H_

#include <sqlite3.h>

#include <string>

#include "tierscope/status.h"
#include "trace/trace.h"

namespace tierscope {

// Whether the open database has rocpd's tables (rocpd_kernel_dispatch or rocpd_region,
// suffixed or not).
bool IsRocpdDb(sqlite3* db);

// InvalidArgument when the database is not rocpd's.
StatusOr<Trace> ImportRocpdDb(sqlite3* db, const std::string& source);

// The same for a file: whether it opens read-only as SQLite with rocpd's tables, and its
// import.
bool IsRocpdFile(const std::string& path);
StatusOr<Trace> ImportRocpdFile(const std::string& path);

}  // namespace tierscope

#endif  // TIERSCOPE_TRACE_ROCPD_IMPORT_H_
