// The vendor profilers' command lines, as the study runs them, each written in one place:
// the system profiler (Nsight Systems `nsys`, Moore Threads `msys`) around a bench run
// with a pre-delay, exported to SQLite; the kernel profiler (Nsight Compute `ncu`, `mcu`)
// on the one hot kernel, as CSV. Every profiler runs with stdin from /dev/null (the
// study's second pitfall: msys reads stdin and stops the run).
#ifndef TIERSCOPE_ANALYSIS_PROFILERS_H_
#define TIERSCOPE_ANALYSIS_PROFILERS_H_

#include <string>
#include <vector>

#include "tierscope/status.h"

namespace tierscope {

// The profilers for a device: cuda -> nsys / ncu, musa -> msys / mcu, others none ("").
std::string SystemProfilerFor(const std::string& device);
std::string KernelProfilerFor(const std::string& device);

// `tool profile -t cuda|musa --delay D --force-overwrite true -o REPORT COMMAND...`:
// REPORT without its extension (nsys adds .nsys-rep, msys .msys-rep).
std::vector<std::string> SystemProfileArgs(const std::string& tool, double delay_s, const std::string& report,
                                           const std::vector<std::string>& command);
// The report file `profile` writes for REPORT.
std::string SystemReportFile(const std::string& tool, const std::string& report);
// `tool export --type sqlite --force-overwrite true -o OUT.sqlite REPORT_FILE`.
std::vector<std::string> SystemExportArgs(const std::string& tool, const std::string& report_file,
                                          const std::string& sqlite);
// `tool --kernel-name-base demangled -k NAME -c 1 --section SpeedOfLight --section LaunchStats --section
// MemoryWorkloadAnalysis --target-processes all --csv --page details --log-file CSV COMMAND...`.
std::vector<std::string> KernelProfileArgs(const std::string& tool, const std::string& kernel, const std::string& csv,
                                           const std::vector<std::string>& command);

// argv as one shell-quoted line, for summary.json's commands.
std::string CommandLineText(const std::vector<std::string>& argv);

// A profiler's name without its directory ("/opt/nvidia/nsys/bin/nsys" -> "nsys").
std::string ToolName(const std::string& tool);

// Whether `tool` is an executable on PATH.
bool OnPath(const std::string& tool);

// Runs argv (looked up on PATH) with stdin from /dev/null and stdout and stderr into `log`;
// its exit status, or an error when it could not start, was killed, or ran past `timeout_s`
// seconds (0: no limit; then it and what it started are stopped).
StatusOr<int> RunTool(const std::vector<std::string>& argv, const std::string& log, double timeout_s);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_PROFILERS_H_
