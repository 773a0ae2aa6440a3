// How much of a measured change each difference between two traces explains: the
// baseline's steps re-timed (whatif.h) with one difference at a time — a kernel's time per
// call as the new trace has it, a kernel the new trace no longer runs, the host's operators
// at the new trace's speed — and with all of them, against the measured change.
#ifndef TIERSCOPE_ANALYSIS_DIFF_EXPLAINED_H_
#define TIERSCOPE_ANALYSIS_DIFF_EXPLAINED_H_

#include "analysis/reports.h"
#include "analysis/table.h"

namespace tierscope {

// The diff_explained table: one row per difference (the largest first), then all of them
// together, the measured change and what is left unexplained. When the two traces launch
// different kernels per step (batching, fusion), a per-kernel explanation does not apply:
// the table says so and has no rows.
Table DiffExplainedTable(const TraceIndex& base, const TraceIndex& next);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_DIFF_EXPLAINED_H_
