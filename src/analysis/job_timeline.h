// A job's step timeline: each rank's steady-state step (its device streams and host
// operators), kept from its trace before the trace is let go, then put side by side on the
// clock the stragglers' alignment found — one timeline in timeline.h's shape, lanes named
// for their rank, so the analysis page draws a job as it draws a trace.
#ifndef TIERSCOPE_ANALYSIS_JOB_TIMELINE_H_
#define TIERSCOPE_ANALYSIS_JOB_TIMELINE_H_

#include <cstdint>

#include <nlohmann/json.hpp>

#include "analysis/reports.h"

namespace tierscope {

struct JobAnalysis;   // job.h
struct RankAnalysis;  // job.h

// A rank's timeline (options.timeline): its chosen step only, without Python frames, in at
// most options.timeline_events events; null when the trace has no step or not `options.step`.
nlohmann::json RankTimeline(const TraceIndex& index, const AnalysisOptions& options);

// Of a rank's windows, the timeline whose step launched the most kernels stays in `into`;
// `shift`: the window's clock less the first window's.
void KeepBusierTimeline(RankAnalysis& into, RankAnalysis& window, int64_t shift);

// The ranks' timelines as one, on the aligned clock (job.stragglers' offsets); null when no
// rank kept one.
nlohmann::json JobTimeline(const JobAnalysis& job);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_JOB_TIMELINE_H_
