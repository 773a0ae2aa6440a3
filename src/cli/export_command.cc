// `tierscope export`: a trace, or a job's traces, in a format other engines read: an
// Nsight Systems SQLite export (one file per rank for a job), or Parquet tables
// partitioned by rank (written by the Python package's pyarrow: python3 -m tierscope).
#include <spawn.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "analysis/commands.h"
#include "analysis/job_files.h"
#include "cli/command.h"
#include "trace/nsys_export.h"

extern char** environ;

namespace tierscope::cli {
namespace {

struct ExportFlags {
  std::string input, out, format = "sqlite";
};

std::string Counts(const NsysExportStats& n) {
  return std::to_string(n.kernels) + " kernels, " + std::to_string(n.runtime) + " runtime calls, " +
         std::to_string(n.memcpys) + " memcpys, " + std::to_string(n.memsets) + " memsets, " + std::to_string(n.syncs) +
         " syncs, " + std::to_string(n.ranges) + " NVTX ranges (" + std::to_string(n.left_out) +
         " events with no nsys table left out)";
}

int ExportSqlite(const ExportFlags& f) {
  std::error_code ec;
  if (!std::filesystem::is_directory(f.input, ec)) {
    auto t = LoadTrace(f.input);
    if (!t.ok()) return Fail(t.status());
    auto n = ExportNsysSqlite(*t, f.out);
    if (!n.ok()) return Fail(n.status());
    std::cout << "export: " << f.out << ": " << Counts(*n) << "\n";
    return 0;
  }
  // A job: OUT is a directory of report_<rank>.sqlite, as nsys -o report_%q{RANK} names them.
  auto files = JobFiles({f.input});
  if (!files.ok()) return Fail(files.status());
  std::filesystem::create_directories(f.out, ec);
  if (ec) return Fail(FailedPrecondition(f.out + ": cannot create: " + ec.message()));
  std::vector<Trace> traces;
  std::vector<int> trace_ranks;
  for (const std::string& file : *files) {
    auto t = LoadTrace(file);
    if (!t.ok()) return Fail(t.status());
    trace_ranks.push_back(t->rank);
    traces.push_back(std::move(*t));
  }
  auto a = AssignRanks(*files, trace_ranks);
  if (!a.ok()) return Fail(a.status());
  for (size_t i = 0; i < traces.size(); ++i) {
    const std::string out = (std::filesystem::path(f.out) / ("report_" + std::to_string(a->rank[i]) + ".sqlite")).string();
    auto n = ExportNsysSqlite(traces[i], out);
    if (!n.ok()) return Fail(n.status());
    std::cout << "export: rank " << a->rank[i] << " (" << (*files)[i] << ") -> " << out << ": " << Counts(*n) << "\n";
  }
  return 0;
}

// Parquet comes from the Python package (pyarrow): run `python3 -m tierscope export`.
int ExportParquet(const ExportFlags& f) {
  const char* py = std::getenv("TIERSCOPE_PYTHON");
  const std::string python = py != nullptr && *py != '\0' ? py : "python3";
  std::vector<std::string> args = {python, "-m", "tierscope", "export", f.input, f.out, "--format", "parquet"};
  std::vector<char*> argv;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawnp(&pid, python.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
    return Fail(FailedPrecondition("--format parquet runs the tierscope Python package; cannot start " + python +
                                   " (set TIERSCOPE_PYTHON to a python with `pip install .` done)"));
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status)) return Fail(Internal(python + " -m tierscope export died"));
  return WEXITSTATUS(status);
}

}  // namespace

void RegisterExport(CLI::App& app, std::vector<Command>* out) {
  auto f = std::make_shared<ExportFlags>();
  auto* c = app.add_subcommand("export", "A trace (or a job's directory) as an nsys SQLite export or Parquet tables");
  c->add_option("input", f->input, "Kineto trace (.json/.json.gz), nsys SQLite export, or a directory of a job's traces")
      ->required();
  c->add_option("out", f->out, "sqlite: OUT.sqlite (a job: a directory of report_<rank>.sqlite); parquet: a directory")
      ->required();
  c->add_option("--format", f->format, "sqlite | parquet")->capture_default_str();
  out->push_back({c, [f] {
                    if (f->format == "sqlite") return ExportSqlite(*f);
                    if (f->format == "parquet") return ExportParquet(*f);
                    return Fail(InvalidArgument("--format must be sqlite or parquet, got '" + f->format + "'"));
                  }});
}

}  // namespace tierscope::cli
