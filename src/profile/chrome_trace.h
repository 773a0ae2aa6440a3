// Writes a Trace as Chrome trace JSON in the shape PyTorch's Kineto profiler writes
// (traceEvents with cpu_op / user_annotation / cuda_runtime / kernel / [memory] events,
// ac2g flows, process and thread names, deviceProperties), streamed event by event to
// a file, gzip-compressed when the path ends in ".gz".
#ifndef TIERSCOPE_PROFILE_CHROME_TRACE_H_
#define TIERSCOPE_PROFILE_CHROME_TRACE_H_

#include <string>
#include <string_view>

#include "tierscope/status.h"
#include "trace/trace.h"

namespace tierscope {

Status WriteChromeTrace(const Trace& trace, const std::string& path);

// Appends `s` as a JSON string literal (quoted, escaped; invalid UTF-8 becomes U+FFFD).
void AppendJsonString(std::string& out, std::string_view s);

}  // namespace tierscope

#endif  // TIERSCOPE_PROFILE_CHROME_TRACE_H_
