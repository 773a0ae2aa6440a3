// The command line's shape: one file per subcommand, each registering its options with
// the CLI11 app and returning how to run it; main only parses and dispatches. Shared
// here: the exit status of a failure and the workload flags bench, kernel and sweep take.
#ifndef TIERSCOPE_CLI_COMMAND_H_
#define TIERSCOPE_CLI_COMMAND_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "tierscope/status.h"
#include "trace/trace.h"
#include "workload/bench.h"

namespace tierscope::cli {

struct Command {
  CLI::App* app = nullptr;    // the subcommand, to ask whether it was parsed
  std::function<int()> run;   // runs it; returns the exit status
};

// Each adds its subcommand(s) to `app` and appends them to `out`.
void RegisterBench(CLI::App& app, std::vector<Command>* out);
void RegisterRun(CLI::App& app, std::vector<Command>* out);
void RegisterAnalyze(CLI::App& app, std::vector<Command>* out);  // analyze, stats, diff
void RegisterWhatIf(CLI::App& app, std::vector<Command>* out);
void RegisterExport(CLI::App& app, std::vector<Command>* out);
void RegisterKernel(CLI::App& app, std::vector<Command>* out);
void RegisterDevice(CLI::App& app, std::vector<Command>* out);
void RegisterSweep(CLI::App& app, std::vector<Command>* out);
void RegisterValidate(CLI::App& app, std::vector<Command>* out);
void RegisterLab(CLI::App& app, std::vector<Command>* out);
void RegisterTokenize(CLI::App& app, std::vector<Command>* out);
void RegisterServe(CLI::App& app, std::vector<Command>* out);
void RegisterLoad(CLI::App& app, std::vector<Command>* out);

// Prints "tierscope: error: <message>" and returns the exit status: 2 for a bad flag
// value or a missing thing the user named (usage), 1 for any other failure.
int Fail(const Status& s);

// Writes the analysis page of `json` (analyze's, diff's or whatif's JSON document;
// analysis/analysis_html.h) to `path` and its size to stderr; the exit status.
// Writes the analysis page; its path was checked before any work (CheckOutputs).
int WriteAnalysisPage(const std::string& path, const std::string& json);
// The files a command given `paths` reads: a directory's job files (traces and execution
// traces), a file and the execution traces beside it. What its outputs must not replace.
std::vector<std::string> FilesRead(const std::vector<std::string>& paths);
// Outputs (--html, --overlay: "" when not asked for) checked before any work: none may be
// an input (FilesRead), and no two may be one file.
Status CheckOutputs(const std::vector<std::pair<std::string, std::string>>& outputs,
                    const std::vector<std::string>& inputs);

// The command line as invoked (main records it; the lab writes it into summary.json).
void SetCommandLine(int argc, char** argv);
const std::string& CommandLine();

// A CLI11 check: a finite number in [lo, hi] (`unit` after the range), else the parse
// fails with "--flag: must be in [lo, hi], got X" (status 2).
CLI::Validator InRange(double lo, double hi, const std::string& unit = "");
// Says on stderr what `t`'s import skipped ("tierscope: note: ..."), when it skipped any,
// and with `import_notes` what else its import noted (for a command whose output does not
// carry them, as import_stats does).
void NoteSkipped(const Trace& t, bool import_notes = true);

// A seed: a whole number from 0 to 2^64 - 1, written in digits (no sign: -1 does not wrap).
CLI::Validator Seed();

// The workload flags `bench`, `kernel` and `sweep` share.
void AddWorkloadOptions(CLI::App* c, BenchOptions& bench);

// --memory-budget SIZE ("12G", "512MiB", "4000000000"): the memory a trace-reading
// command may use (SetMemoryBudget); a trace whose whole-file read would pass it is
// streamed, and a job reads no more ranks at once than it holds; and --spill-dir, where a
// streamed trace's args go (SetSpillDirectory).
void AddMemoryBudgetOption(CLI::App* c);

// "12G", "1.5GiB", "512M", "4096" (bytes) -> bytes; binary units (K = 1024).
StatusOr<int64_t> ParseByteSize(const std::string& text);

}  // namespace tierscope::cli

#endif  // TIERSCOPE_CLI_COMMAND_H_
