// `analyze --overlay OUT.json`: the trace as it was read, every event and field kept, with
// what the analysis found added on a process of its own — the chosen step's critical path
// (copies of its events, each with its cause and time on the path, on one track per track
// they come from, flows joining them in time order) and each finding of the trace, on a
// track of its own over the chosen step — so Perfetto UI and chrome://tracing show them
// beside the trace.
#ifndef TIERSCOPE_ANALYSIS_OVERLAY_H_
#define TIERSCOPE_ANALYSIS_OVERLAY_H_

#include <string>
#include <vector>

#include "analysis/reports.h"
#include "analysis/rules.h"
#include "trace/trace.h"
#include "tierscope/status.h"

namespace tierscope {

// OK when `trace` was read from Chrome trace JSON (Kineto's); else FailedPrecondition,
// saying why (check before the analysis, which can take long).
Status CanOverlay(const Trace& trace);

// `trace_path`: the Kineto / Chrome JSON trace `index` was read from (.json or .json.gz);
// `out_path`: .json, or .json.gz to compress. `step`: as --step ("" = the steady-state
// step). FailedPrecondition for a trace that is not Chrome JSON (an nsys or rocprof export).
Status WriteOverlay(const std::string& trace_path, const TraceIndex& index, const std::vector<Finding>& findings,
                    const std::string& step, const std::string& out_path);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_OVERLAY_H_
