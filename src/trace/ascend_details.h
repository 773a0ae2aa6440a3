// What torch_npu's profiler writes beside trace_view.json that the trace lacks:
// ASCEND_PROFILER_OUTPUT/kernel_details.csv (per device task: the operator type, the core
// it ran on, its Block Dim, input and output shapes, types and formats, and the AI Core /
// AI Vector pipes' times and ratios) and ../profiler_info_N.json (the rank). The CSV's rows
// join the trace's kernels by name and start (the nearest within 1 µs: the two are rounded
// apart); each joined kernel's args gain
// every column the trace lacks, and "grid": [Block Dim] so granularity can be judged.
#ifndef TIERSCOPE_TRACE_ASCEND_DETAILS_H_
#define TIERSCOPE_TRACE_ASCEND_DETAILS_H_

#include <string>
#include <string_view>

#include "tierscope/status.h"
#include "trace/trace.h"

namespace tierscope::ascend {

// Joins kernel_details.csv text (`source` names it in counts and notes) to `t`'s kernels.
// Rows that name no kernel of the trace, and malformed rows, are counted in
// t.stats.layout; InvalidArgument when the text has no kernel_details header.
Status JoinKernelDetails(Trace& t, std::string_view csv, const std::string& source);

// For a torch_npu trace_view.json(.gz) (`t` read from `trace_path` with the Ascend
// layout): joins kernel_details.csv beside it and takes the rank from profiler_info_*.json
// in the folder above, when the trace names none. A file that cannot be read or joined
// leaves a note in t.import_notes; the trace itself is kept.
void AttachAscendOutputs(Trace& t, const std::string& trace_path);

}  // namespace tierscope::ascend

#endif  // TIERSCOPE_TRACE_ASCEND_DETAILS_H_
