// Imports AMD rocprofv3's CSV output (`--output-format csv`: <prefix>_kernel_trace.csv,
// _hip_api_trace.csv, _hsa_api_trace.csv, _rccl_api_trace.csv, _marker_api_trace.csv,
// _memory_copy_trace.csv and _agent_info.csv beside each other; rocpd's converter writes
// the same with a leading "Guid" column and its API calls in _regions_trace.csv) into the
// Trace the JSON import gives (rocprof_import.h): kernels on their GPU's index (pid) and
// HIP stream (tid; the queue when no stream is recorded), grid in workgroups as Kineto
// writes it; copies named by their direction (the CSV has no byte counts); API calls
// (HIP, HSA, RCCL) as runtime calls and roctx ranges as annotations, on their process
// and thread; device work joined to its call by Correlation_Id. Times are ns as recorded.
// Columns are found by name (any case), so ROCm 6.2's to 7.x's layouts all read.
// agent_info names the GPU (Product_Name, Cu_Count); "Agent N" is its Logical_Node_Id,
// "GPU k" its index among GPUs, a bare number its Node_Id. Allocation, scratch and
// counter files are not a timeline: counted, not read. A row with a missing or bad field
// is counted in stats.malformed with its reason and skipped.
#ifndef TIERSCOPE_TRACE_ROCPROF_CSV_H_
#define TIERSCOPE_TRACE_ROCPROF_CSV_H_

#include <map>
#include <string>

#include "tierscope/status.h"
#include "trace/trace.h"

namespace tierscope {

// Whether `path` is one of rocprofv3's CSV traces: its name ends in a known suffix
// (_kernel_trace.csv, _hip_api_trace.csv, ...) and its first line is that file's header.
bool IsRocprofCsv(const std::string& path);

// Reads the run `path` (any of its CSV files) belongs to: every known file beside it with
// the same prefix. NotFound / InvalidArgument when no file of the run can be read.
StatusOr<Trace> ImportRocprofCsv(const std::string& path);

// The same from the files' texts, by their suffix ("kernel_trace", "hip_api_trace",
// "agent_info", ...); `source` names the run.
StatusOr<Trace> ImportRocprofCsvTexts(const std::map<std::string, std::string>& files, const std::string& source);

}  // namespace tierscope

#endif  // TIERSCOPE_TRACE_ROCPROF_CSV_H_
