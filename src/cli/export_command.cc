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
#include "workload/torch_bench.h"

extern char** environ;

namespace tierscope::cli {
namespace {

struct ExportFlags {
  std::string input, out, format = "sqlite";
  bool force = false;
};

// An OUT that exists is kept unless --force (as nsys export --force-overwrite); never the input.
Status CheckOut(const ExportFlags& f, bool directory) {
  std::error_code ec;
  if (std::filesystem::exists(f.out, ec) && std::filesystem::equivalent(f.input, f.out, ec)) {
    return InvalidArgument(f.out + ": is the input; export somewhere else");
  }
  if (!std::filesystem::exists(f.out, ec)) return OkStatus();
  if (directory != std::filesystem::is_directory(f.out, ec)) {
    return InvalidArgument(f.out + (directory ? ": exists and is not a directory" : ": is a directory"));
  }
  const bool empty = !directory || std::filesystem::is_empty(f.out, ec);
  if (!f.force && !(directory && empty)) {
    return InvalidArgument(f.out + ": exists (pass --force to replace" + std::string(directory ? " its report_*.sqlite" : "") + ")");
  }
  return OkStatus();
}

std::string Counts(const NsysExportStats& n) {
  return std::to_string(n.kernels) + " kernels, " + std::to_string(n.runtime) + " runtime calls, " +
         std::to_string(n.memcpys) + " memcpys, " + std::to_string(n.memsets) + " memsets, " + std::to_string(n.syncs) +
         " syncs, " + std::to_string(n.ranges) + " NVTX ranges (" + std::to_string(n.left_out) +
         " events with no nsys table left out" +
         (n.threads_renumbered > 0 ? "; " + std::to_string(n.threads_renumbered) +
                                         " thread ids beyond 24 bits renumbered" : "") + ")";
}

int ExportSqlite(const ExportFlags& f) {
  std::error_code ec;
  if (!std::filesystem::is_directory(f.input, ec)) {
    if (Status s = CheckOut(f, false); !s.ok()) return Fail(s);
    auto t = LoadTrace(f.input);
    if (!t.ok()) return Fail(t.status());
    // No timeline event would export as empty tables that pass for a quiet run.
    if (Status s = CheckComparable(*t, "export"); !s.ok()) return Fail(s);
    NoteSkipped(*t);
    auto n = ExportNsysSqlite(*t, f.out);
    if (!n.ok()) return Fail(n.status());
    std::cout << "export: " << f.out << ": " << Counts(*n) << "\n";
    return 0;
  }
  // A job: OUT is a directory of report_<rank>.sqlite, as nsys -o report_%q{RANK} names them.
  // One rank in memory at a time: each is written under a temporary name, renamed once
  // every rank's number is known.
  if (Status s = CheckOut(f, true); !s.ok()) return Fail(s);
  auto files = JobFiles({f.input});
  if (!files.ok()) return Fail(files.status());
  std::filesystem::create_directories(f.out, ec);
  if (ec) return Fail(FailedPrecondition(f.out + ": cannot create: " + ec.message()));
  std::vector<TraceWindow> windows;
  std::vector<std::string> staged, summary;
  struct Unstage {  // a failure leaves no half-written export behind
    std::vector<std::string>* files;
    ~Unstage() {
      std::error_code e;
      for (const std::string& s : *files) std::filesystem::remove(s, e);
    }
  } unstage{&staged};
  for (size_t i = 0; i < files->size(); ++i) {
    auto t = LoadTrace((*files)[i]);
    if (!t.ok()) return Fail(t.status());
    if (Status s = CheckComparable(*t, "export"); !s.ok()) return Fail(s);
    NoteSkipped(*t);
    windows.push_back(WindowOf(*t));
    staged.push_back((std::filesystem::path(f.out) / (".staged-" + std::to_string(i) + ".sqlite")).string());
    auto n = ExportNsysSqlite(*t, staged.back());
    if (!n.ok()) return Fail(n.status());
    summary.push_back(Counts(*n));
  }
  // A rank profiled in several windows (one file per profiler cycle, as users' rank_N/
  // folders hold them) is several reports, numbered in time order as nsys numbers the
  // reports of a repeated capture range: report_<rank>.<n>.sqlite.
  // The window suffix is the job's (as the Parquet export's): every rank's reports are named
  // alike. Each report records its assigned rank, so it reads back as that rank.
  auto a = AssignRankWindows(*files, windows);
  if (!a.ok()) return Fail(a.status());
  for (size_t i = 0; i < staged.size(); ++i) {  // each report records its rank before any old one goes
    if (Status s = SetExportedRank(staged[i], a->rank[i]); !s.ok()) return Fail(s);
  }
  // --force: the old export's reports go only now, once every rank of the new one is written.
  for (const auto& entry : std::filesystem::directory_iterator(f.out, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("report_", 0) == 0 && name.ends_with(".sqlite") && entry.is_regular_file(ec)) {
      std::filesystem::remove(entry.path(), ec);
    }
  }
  bool windowed = false;
  for (const std::vector<size_t>& group : a->windows) windowed = windowed || group.size() > 1;
  for (const std::vector<size_t>& group : a->windows) {
    for (size_t w = 0; w < group.size(); ++w) {
      const size_t i = group[w];
      const std::string name = "report_" + std::to_string(a->rank[i]) +
                               (windowed ? "." + std::to_string(w + 1) : std::string()) + ".sqlite";
      const std::string out = (std::filesystem::path(f.out) / name).string();
      std::filesystem::rename(staged[i], out, ec);
      if (ec) return Fail(FailedPrecondition(out + ": cannot write: " + ec.message()));
      std::cout << "export: rank " << a->rank[i]
                << (group.size() > 1 ? ", window " + std::to_string(w + 1) + " of " + std::to_string(group.size())
                                     : std::string())
                << " (" << (*files)[i] << ") -> " << out << ": " << summary[i] << "\n";
    }
  }
  return 0;
}

// Parquet comes from the Python package (pyarrow): run `python3 -m tierscope export`.
int ExportParquet(const ExportFlags& f) {
  const std::string python = TorchPython("");  // TIERSCOPE_PYTHON, else the test venv's, else python3
  std::vector<std::string> args = {python, "-m", "tierscope", "export", f.input, f.out, "--format", "parquet"};
  if (f.force) args.push_back("--force");
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
  AddMemoryBudgetOption(c);
  c->add_flag("--force", f->force, "replace an existing OUT (a job's: its report_*.sqlite or Parquet tables)");
  out->push_back({c, [f] {
                    if (f->format == "sqlite") return ExportSqlite(*f);
                    if (f->format == "parquet") return ExportParquet(*f);
                    return Fail(InvalidArgument("--format must be sqlite or parquet, got '" + f->format + "'"));
                  }});
}

}  // namespace tierscope::cli
