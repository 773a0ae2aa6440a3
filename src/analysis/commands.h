// The analyzer's commands: `analyze` (every report plus the diagnosis), `stats` (reports
// by name) and `diff` (baseline vs new), on any supported trace, as text, JSON or CSV.
#ifndef TIERSCOPE_ANALYSIS_COMMANDS_H_
#define TIERSCOPE_ANALYSIS_COMMANDS_H_

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/diff.h"
#include "analysis/gpu_time.h"
#include "analysis/reports.h"
#include "analysis/rules.h"
#include "analysis/table.h"
#include "analysis/trace_quality.h"
#include "tierscope/status.h"
#include "trace/trace.h"

namespace tierscope {

// Loads a Kineto trace (.json, .json.gz, either object or bare-list form) or an Nsight
// Systems SQLite export, deciding by content. A trace that yields no timeline event while
// entries were skipped as malformed is InvalidArgument, the message naming the reasons.
// `execution_traces`: PyTorch execution traces to join to its operators (default: those
// beside it; the first of the same run joins). Named ones none of which joins are
// InvalidArgument, saying why each did not; those found beside it leave a note.
StatusOr<Trace> LoadTrace(const std::string& path, const std::vector<std::string>& execution_traces = {});

// InvalidArgument when `unit` (--unit) is given and no annotation of `t` has that name: the
// analysis would otherwise fall back to the whole trace without a word.
Status CheckUnitFound(const Trace& t, const std::string& unit);

// InvalidArgument when `t` holds no timeline event ("...: nothing to <nothing_to>"): a
// diff against it would read as every count falling to zero, which is no change the run
// made, and an export as empty tables that pass for a quiet run.
Status CheckComparable(const Trace& t, std::string_view nothing_to = "compare");

// "" when every entry of `t` was read; else "<source>: N of its M entries were malformed
// and skipped (reasons)": what a command that is not `analyze` (whose import_stats shows
// it) says beside its result, so a total is never read as the whole trace's.
std::string SkippedEntries(const Trace& t);

// True when `path` holds Nsight Compute CSV (`ncu --csv`) rather than a timeline; reads
// at most the first 16 KiB.
bool IsNcuCsv(const std::string& path);
// The per-kernel metrics table of an Nsight Compute CSV (the metrics present; "(not in
// this CSV)" for the others), as text, JSON or CSV.
StatusOr<std::string> AnalyzeNcuCsv(const std::string& path, const RenderOptions& render);

// The import-stats section.
Table ImportStatsTable(const Trace& trace);

// Everything `analyze` computes for one trace, computed once: the index (with the
// per-unit counts), every report, device in-use, the hottest kernel and the findings.
// Text, JSON and CSV are views of it; the lab reads its typed fields. It points into
// `trace`, which must outlive it.
struct TraceAnalysis {
  TraceIndex index;                  // index.counts: per-unit counts (trace/units.h)
  std::vector<Table> reports;        // import stats, then ReportNames() in order
  InUse in_use;
  std::string hottest_kernel;        // by total device time; "" without kernels
  std::vector<Finding> findings;     // ranked by the time they explain
  GpuTime gpu;                       // where the device's time went (HTA's analyses)
  TraceQuality quality;              // the trace's verdict (trace_quality.h)
  nlohmann::json timeline;           // with AnalysisOptions::timeline (timeline.h); else null
  // The report named `name` (canonical), or null.
  const Table* Report(const std::string& name) const;
};
TraceAnalysis Analyze(const Trace& trace, const AnalysisOptions& options);
std::string RenderAnalysis(const TraceAnalysis& analysis, const RenderOptions& render);

// Analyze then render: each report written to `out` as it is made and then dropped (a
// large trace's reports are never all in memory), the same bytes as RenderAnalysis.
void WriteAnalysis(std::ostream& out, const Trace& trace, const AnalysisOptions& options, const RenderOptions& render);
// WriteAnalysis into a string.
std::string AnalyzeTrace(const Trace& trace, const AnalysisOptions& options, const RenderOptions& render);
// A failed check's mark on a report it affects (trace_quality.h): a note with the verdict,
// and a Failed check column on the rows that rest on the events that failed. What analyze,
// stats and the Python package's report() print alike.
void MarkReport(const TraceQuality& q, Table* table);

StatusOr<std::string> TraceStats(const Trace& trace, const std::vector<std::string>& reports,
                                 const AnalysisOptions& options, const RenderOptions& render);
std::string DiffTraceReport(const Trace& base, const Trace& next, const AnalysisOptions& options,
                            const RenderOptions& render);
// The typed diff of two traces, and its text / JSON / CSV view (DiffTraceReport is both).
TraceDiff DiffTraceAnalysis(const Trace& base, const Trace& next, const AnalysisOptions& options);
std::string RenderDiff(const TraceDiff& diff, const Trace& base, const Trace& next,
                       const RenderOptions& render);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_COMMANDS_H_
