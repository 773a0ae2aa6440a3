// `tierscope analyze`, `stats` and `diff`: the analyzer on any supported trace (Kineto
// .json/.json.gz, nsys SQLite; analyze also takes an Nsight Compute CSV).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "analysis/commands.h"
#include "analysis/job.h"
#include "analysis/job_files.h"
#include "analysis/overlay.h"
#include "analysis/timeline.h"
#include "core/paths.h"
#include "cli/command.h"
#include "core/text.h"

namespace tierscope::cli {
namespace {

struct AnalyzeFlags {
  std::string format = "text", unit, base_path, new_path, trace_path, reports, device_spec, html, step, overlay;
  std::vector<std::string> inputs;  // analyze: one trace, or a job's traces / directories
  double short_us = 10;
  bool wide = false, list = false, critical_path = false, timings = false, timeline = false;
  int threads = 0;
};

// Every file the command reads, which its --html must not replace.
std::vector<std::string> InputsOf(const AnalyzeFlags& f) {
  std::vector<std::string> in = f.inputs;
  in.insert(in.end(), {f.base_path, f.new_path, f.trace_path});
  in = FilesRead(in);
  in.push_back(f.device_spec);
  return in;
}

bool IsDirectory(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec);
}

// On a terminal, one updating line per trace read (a rank's, or one of its windows);
// nothing otherwise.
JobProgress Progress() {
  if (isatty(2) == 0) return nullptr;
  return [](size_t done, size_t total, const std::string& path, double seconds) {
    std::fprintf(stderr, "\r[traces %zu/%zu] %.1f s, read %s\033[K", done, total, seconds, path.c_str());
    if (done == total) std::fprintf(stderr, "\n");
  };
}

// --step names one of the trace's steps (its work units, or "whole trace" without any).
Status CheckStep(const Trace& trace, const AnalysisOptions& o) {
  if (o.step.empty()) return OkStatus();
  std::string name;
  std::vector<WorkUnit> windows = FindWorkUnits(trace, o.unit, &name);
  if (windows.empty()) windows.push_back(WorkUnit{"whole trace", 0, 0});
  std::string why;
  return ChooseTimelineStep(windows, {}, o.step, &why).status();
}

int RunJob(const std::vector<std::string>& inputs, const AnalysisOptions& o, const AnalyzeFlags& flags,
           const RenderOptions& f) {
  auto job = AnalyzeJobReports(inputs, o, flags.threads, Progress());
  if (!job.ok()) return Fail(job.status());
  RenderOptions render = f;
  render.timings = flags.timings;
  if (!flags.html.empty()) {
    render.format = OutputFormat::kJson;
    return WriteAnalysisPage(flags.html, RenderJob(*job, render));
  }
  std::cout << RenderJob(*job, render);
  return 0;
}

void AddCommon(CLI::App* c, AnalyzeFlags& f) {
  c->add_option("--format", f.format, "text | json | csv")->capture_default_str();
  AddMemoryBudgetOption(c);
  c->add_option("--unit", f.unit,
                "work-unit annotation (default: ProfilerStep#N, serial_bert_forward or "
                "batched_bert_forward, whichever the trace has)");
  c->add_option("--short-kernel-us", f.short_us, "kernels shorter than this are short")
      ->check(InRange(0.001, 1e9, " us"))
      ->capture_default_str();
  c->add_flag("--wide", f.wide, "text: long names and shapes whole (else shortened in the middle)");
  c->add_option("--device-spec", f.device_spec,
                "JSON of the device's peaks for the roofline (name, fp32, bf16, fp16, fp8, int8, fp32_vector, "
                "memory_tbps, link_gbps, source); default: the trace's device from the built-in table");
}

enum class Which { kAnalyze, kStats, kDiff };

int Run(const AnalyzeFlags& flags, Which which) {
  OutputFormat format;
  if (!ParseOutputFormat(flags.format, &format)) {
    return Fail(InvalidArgument("--format must be text, json or csv, got '" + flags.format + "'"));
  }
  const RenderOptions f(format, flags.wide);
  if (!flags.step.empty() && !flags.timeline && flags.html.empty() && flags.overlay.empty()) {
    return Fail(InvalidArgument("--step chooses the step that --timeline, --html and --overlay show: give one of them"));
  }
  if (!flags.html.empty() || !flags.overlay.empty()) {  // before any work; the inputs listed only then
    if (Status s = CheckOutputs({{"--html", flags.html}, {"--overlay", flags.overlay}}, InputsOf(flags)); !s.ok()) {
      return Fail(s);
    }
  }
  AnalysisOptions o;
  o.unit = flags.unit;
  o.short_kernel_ns = flags.short_us * 1000.0;
  o.critical_path = flags.critical_path;
  // The page draws the timeline and the critical path: --html asks for both.
  o.timeline = flags.timeline || !flags.html.empty();
  o.critical_path = o.critical_path || !flags.html.empty();
  o.step = flags.step;
  if (!flags.device_spec.empty()) {
    StatusOr<DeviceSpec> spec = LoadDeviceSpec(flags.device_spec);
    if (!spec.ok()) return Fail(spec.status().WithContext("--device-spec"));
    o.device_spec = std::move(*spec);
  }
  if (which == Which::kDiff && (IsDirectory(flags.base_path) || IsDirectory(flags.new_path))) {
    auto base = AnalyzeJob({flags.base_path}, o, flags.threads, Progress());
    if (!base.ok()) return Fail(base.status());
    auto next = AnalyzeJob({flags.new_path}, o, flags.threads, Progress());
    if (!next.ok()) return Fail(next.status());
    if (!flags.html.empty()) {
      return WriteAnalysisPage(flags.html, RenderJobDiff(*base, *next, OutputFormat::kJson));
    }
    std::cout << RenderJobDiff(*base, *next, f);
    return 0;
  }
  std::vector<std::string> traces, execution_traces;  // analyze TRACE ET.json: one run, its shapes
  for (const std::string& in : flags.inputs) {
    (!IsDirectory(in) && IsExecutionTraceFile(in) ? execution_traces : traces).push_back(in);
  }
  if (which == Which::kAnalyze) {
    if (traces.empty()) {
      return Fail(InvalidArgument(execution_traces.front() + ": a PyTorch execution trace (operators, not a timeline): "
                                  "give the Kineto trace of the same run with it"));
    }
    if (traces.size() > 1 || IsDirectory(traces.front())) {
      if (!flags.overlay.empty()) {
        return Fail(InvalidArgument("--overlay adds the analysis to one trace; give it one rank's trace"));
      }
      return RunJob(flags.inputs, o, flags, f);
    }
  }
  if (which == Which::kStats && flags.list) {
    Table t{"reports", "Reports stats can run", {"Report", "Title"}, {}, {"musa_*, hip_* and cann_* are aliases of cuda_*."}};
    for (const auto& [name, title] : ReportCatalog()) t.AddRow({name, title});
    std::cout << RenderTable(t, RenderOptions(f.format, /*wide=*/true));
    return 0;
  }
  if (which == Which::kStats && (flags.trace_path.empty() || flags.reports.empty())) {
    return Fail(InvalidArgument("stats needs a trace and --report NAMES (tierscope stats --list shows the names)"));
  }
  const std::string trace_path = which == Which::kAnalyze ? traces.front() : flags.trace_path;
  if (which == Which::kDiff) {
    auto base = LoadTrace(flags.base_path);
    if (!base.ok()) return Fail(base.status());
    auto next = LoadTrace(flags.new_path);
    if (!next.ok()) return Fail(next.status());
    for (const Trace* t : {&*base, &*next}) {
      if (Status s = CheckComparable(*t); !s.ok()) return Fail(s);
      if (Status s = CheckUnitFound(*t, o.unit); !s.ok()) return Fail(s);
    }
    NoteSkipped(*base);  // a count that changed because entries were skipped is no change
    NoteSkipped(*next);
    if (!flags.html.empty()) {
      return WriteAnalysisPage(flags.html, DiffTraceReport(*base, *next, o, OutputFormat::kJson));
    }
    std::cout << DiffTraceReport(*base, *next, o, f);
    return 0;
  }
  if (IsNcuCsv(trace_path)) {  // kernel metrics, not a timeline
    auto out = AnalyzeNcuCsv(trace_path, f);
    if (!out.ok()) {
      return Fail(Status(out.status().code(), out.status().message() +
                                                 "; nor is it one of rocprofv3's CSV traces (<pid>_kernel_trace.csv, "
                                                 "_hip_api_trace.csv, ...)"));
    }
    std::cout << *out;
    return 0;
  }
  auto trace = LoadTrace(trace_path, execution_traces);
  if (!trace.ok()) return Fail(trace.status());
  if (Status s = CheckUnitFound(*trace, o.unit); !s.ok()) return Fail(s);
  if (which == Which::kAnalyze) {
    if (Status s = CheckStep(*trace, o); !s.ok()) return Fail(s);
    if (!flags.overlay.empty()) {
      if (Status s = CanOverlay(*trace); !s.ok()) return Fail(s);
    }
    if (!flags.html.empty() || !flags.overlay.empty()) {
      // One analysis for the page, the overlay and (without a page) the report.
      const TraceAnalysis a = Analyze(*trace, o);
      if (!flags.overlay.empty()) {
        if (Status s = WriteOverlay(trace_path, a.index, a.findings, o.step, flags.overlay); !s.ok()) return Fail(s);
        std::fprintf(stderr, "overlay trace: %s (open it in Perfetto UI or chrome://tracing)\n", flags.overlay.c_str());
      }
      if (!flags.html.empty()) {
        return WriteAnalysisPage(flags.html, RenderAnalysis(a, RenderOptions(OutputFormat::kJson)));
      }
      std::cout << RenderAnalysis(a, f);
      return std::cout.flush() ? 0 : Fail(DataLoss("the report could not be written to standard output"));
    }
    // Each report is written as it is made: a failure part way leaves what was written
    // before it, and the exit status and the error line say so.
    WriteAnalysis(std::cout, *trace, o, f);
    if (!std::cout.flush()) return Fail(DataLoss("the report could not be written to standard output"));
    return 0;
  }
  const std::vector<std::string> reports = SplitList(flags.reports);
  if (reports.empty()) return Fail(InvalidArgument("--report '" + flags.reports + "' names no report"));
  // import_stats carries the notes, but not as CSV (a table's notes are not rows).
  const bool carried = format != OutputFormat::kCsv &&
                       std::find(reports.begin(), reports.end(), "import_stats") != reports.end();
  NoteSkipped(*trace, !carried);
  auto out = TraceStats(*trace, reports, o, f);
  if (!out.ok()) return Fail(out.status());
  std::cout << *out;
  return 0;
}

}  // namespace

void RegisterAnalyze(CLI::App& app, std::vector<Command>* out) {
  auto flags = std::make_shared<AnalyzeFlags>();
  auto* an = app.add_subcommand("analyze", "Every report of a trace, or of a job's traces (one per rank), "
                                           "plus the diagnosis");
  an->add_option("traces", flags->inputs,
                 "Kineto trace (.json/.json.gz), nsys SQLite export or Nsight Compute CSV; several traces, or "
                 "a directory of them, are a job (one trace per rank); a PyTorch execution trace given with a "
                 "trace (or beside it) is joined to its operators")
      ->required();
  AddCommon(an, *flags);
  an->add_option("--threads", flags->threads, "ranks read at once, at most (0: one per hardware thread, "
                                              "fewer when memory is short)")
      ->check(CLI::Range(0, 4096));
  an->add_option("--html", flags->html,
                 "write the analysis page to this file: one self-contained HTML page (no network) drawn from the "
                 "JSON --format json --timeline prints: the verdict, the findings, the step timeline with its "
                 "critical path, the breakdowns, the stragglers, the roofline and every report");
  an->add_option("--overlay", flags->overlay,
                 "also write the trace (Kineto / Chrome JSON) with the step's critical path and the findings added "
                 "as events and flows of a 'tierscope analysis' process, for Perfetto UI and chrome://tracing "
                 "(.json, or .json.gz)");
  an->add_flag("--timeline", flags->timeline,
               "JSON: also the step timeline (events of the step, lanes, launches, critical path, the whole trace's "
               "overview) and the device's peaks, which the page draws");
  an->add_option("--step", flags->step,
                 "the step the timeline shows, by name (ProfilerStep#7; default: the median-length step after the "
                 "first)");
  an->add_flag("--timings", flags->timings, "a job's JSON: each step's wall seconds (\"seconds\"), for bench/job");
  an->add_flag("--critical-path", flags->critical_path,
               "also the critical path of each step (each --unit annotation, else the whole trace) and the events on "
               "the longest one; on a job, across its ranks through the collectives and sends that join them");
  auto* st = app.add_subcommand("stats", "Reports of a trace by name");
  st->add_option("trace", flags->trace_path, "Kineto trace (.json/.json.gz) or nsys SQLite export");
  st->add_option("--report", flags->reports, "report names, comma-separated (see --list)");
  st->add_flag("--list", flags->list, "print every report's name and title, then exit");
  AddCommon(st, *flags);
  auto* df = app.add_subcommand("diff", "Compare a baseline trace with a new one");
  df->add_option("base", flags->base_path, "baseline trace, or a directory of a job's traces")->required();
  df->add_option("new", flags->new_path, "new trace, or a directory of a job's traces")->required();
  AddCommon(df, *flags);
  df->add_option("--html", flags->html,
                 "write the diff's page to this file: both runs side by side and the differences ranked by the "
                 "time they explain, drawn from the JSON --format json prints (self-contained, no network)");
  df->add_option("--threads", flags->threads, "ranks read at once, at most (0: the hardware threads)")
      ->check(CLI::Range(0, 4096));
  out->push_back({an, [flags] { return Run(*flags, Which::kAnalyze); }});
  out->push_back({st, [flags] { return Run(*flags, Which::kStats); }});
  out->push_back({df, [flags] { return Run(*flags, Which::kDiff); }});
}

}  // namespace tierscope::cli
