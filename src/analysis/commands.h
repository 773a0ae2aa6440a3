// The analyzer's commands: `analyze` (every report plus the diagnosis), `stats` (reports
// by name) and `diff` (baseline vs new), on any supported trace, as text, JSON or CSV.
#ifndef TIERSCOPE_ANALYSIS_COMMANDS_H_
#define TIERSCOPE_ANALYSIS_COMMANDS_H_

#include <string>
#include <vector>

#include "analysis/reports.h"
#include "analysis/table.h"
#include "tierscope/status.h"
#include "trace/trace.h"

namespace tierscope {

// Loads a Kineto trace (.json, .json.gz, either object or bare-list form) or an Nsight
// Systems SQLite export, deciding by content.
StatusOr<Trace> LoadTrace(const std::string& path);

// True when `path` holds Nsight Compute CSV (`ncu --csv`) rather than a timeline.
bool IsNcuCsv(const std::string& path);
// The per-kernel metrics table of an Nsight Compute CSV (the metrics present; "(not in
// this CSV)" for the others), as text, JSON or CSV.
StatusOr<std::string> AnalyzeNcuCsv(const std::string& path, OutputFormat format);

// The import-stats section.
Table ImportStatsTable(const Trace& trace);

std::string AnalyzeTrace(const Trace& trace, const AnalysisOptions& options, OutputFormat format);
StatusOr<std::string> TraceStats(const Trace& trace, const std::vector<std::string>& reports,
                                 const AnalysisOptions& options, OutputFormat format);
std::string DiffTraceReport(const Trace& base, const Trace& next, const AnalysisOptions& options,
                            OutputFormat format);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_COMMANDS_H_
