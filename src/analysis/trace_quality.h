// A verdict for every trace: checks of what the tools that write traces are known to get
// wrong — kernels overlapping on one stream (PDL, a broken clock) or overrunning the next,
// kernels with no launch and launches with no kernel, CUDA/HIP graph launches whose kernels
// were not recorded (a busy device that looks idle), copies recorded as kernels (ROCm 7.1),
// kernels on a stream out of their launch order, a trace cut short (launches after the last kernel,
// flows and ranges left open), device and host clocks that disagree, duplicated events,
// fields the reports need that the trace lacks, and the import's own skipped entries — each with its
// count, what it does to which reports, and which rules it stops from concluding.
#ifndef TIERSCOPE_ANALYSIS_TRACE_QUALITY_H_
#define TIERSCOPE_ANALYSIS_TRACE_QUALITY_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "analysis/reports.h"
#include "analysis/rules.h"
#include "analysis/table.h"

namespace tierscope {

enum class CheckStatus { kPass, kWarn, kFail };

struct QualityCheck {
  std::string name;         // "stream_overlap"
  CheckStatus status = CheckStatus::kPass;
  int64_t count = 0;        // events (or pairs) that failed it
  int64_t of = 0;           // out of how many checked
  std::string detail;       // the first example, or what was checked
  std::string affects;      // the reports whose numbers it changes, and how
  std::vector<std::string> reports;  // those reports' names, for marking them
  std::vector<std::string> rules;    // the rules that may not conclude when it fails
  std::vector<size_t> events;        // the events that failed it (checks that can fail), for marking rows
};

struct TraceQuality {
  std::vector<QualityCheck> checks;
  // The rules no finding may come from, and the reports to mark, given the failed checks.
  std::set<std::string> blocked_rules, marked_reports;
  // The rows whose numbers rest on events that failed a check, by the name a table shows
  // them under (the kernel, the op that launched it and the ops around that, the launch
  // call), each with the failed checks' names.
  std::map<std::string, std::set<std::string>> marked_names;
  // The trace's timeline events: with none, no check has anything to pass.
  size_t events = 0;
  // One line: "trace quality: 9 checks passed, 1 failed (graph launches without kernels: 36)",
  // or that the trace holds no timeline event (no check then passes).
  std::string Line() const;
};

TraceQuality CheckTraceQuality(const TraceIndex& index);

// Removes the findings whose rule rests on a failed check, and (when any went) puts first a
// "trace_quality" finding naming them and why.
void WithholdFindings(const TraceQuality& q, std::vector<Finding>* findings);

// Marks the rows of `table` (a report a failed check affects) whose Name is in
// q.marked_names: a "Failed check" column before Name. Returns the rows marked.
int64_t MarkRows(const TraceQuality& q, Table* table);

// The failed checks' names, comma-separated ("" when none failed).
std::string FailedChecks(const TraceQuality& q);
Table TraceQualityTable(const TraceQuality& q);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_TRACE_QUALITY_H_
