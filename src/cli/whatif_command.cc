// `tierscope whatif TRACE|DIR --change C [--change C ...]`: a trace's steps re-timed after
// the changes (analysis/whatif.h), predicted step time and critical path beside today's; a
// job's (several traces, or a directory) joined across its ranks (analysis/job_path.h).
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "analysis/commands.h"
#include "analysis/job.h"
#include "analysis/trace_quality.h"
#include "analysis/whatif.h"
#include "cli/command.h"
#include "inspect/calibrated_spec.h"
#include "inspect/calibration.h"

namespace tierscope::cli {
namespace {

struct WhatIfFlags {
  std::string format = "text", unit, device_spec, html;
  std::vector<std::string> traces, changes;
  bool wide = false;
  int threads = 0;
};

// Every file the command reads, which its --html must not replace.
std::vector<std::string> InputsOf(const WhatIfFlags& f) {
  std::vector<std::string> in = FilesRead(f.traces);
  in.push_back(f.device_spec);
  return in;
}

// The peaks a trace's kernels are held to: those given, else tierscope's own CPU trace from
// this machine against its cached calibration (`tierscope device` measures it; an analysis
// never does), else none (the trace's device from the built-in table).
std::optional<DeviceSpec> SpecForTrace(const Trace& trace, const std::optional<DeviceSpec>& given) {
  if (given) return given;
  if (trace.runtime == "cpu" && trace.device_name.rfind("cpu: ", 0) == 0 && trace.device_units > 0) {
    const std::optional<MachinePeaks> peaks = CachedPeaks(trace.device_units);
    if (peaks && !peaks->cpu.empty() && trace.device_name.find(peaks->cpu) != std::string::npos) {
      return CalibratedDeviceSpec(*peaks);
    }
  }
  return std::nullopt;
}

// A job: each rank's step graphs kept as it is read, then the steps joined across ranks
// and re-timed as one.
// A prediction re-times the measured graph: from a trace that failed a check it inherits
// the wrong numbers, and says so.
std::string MarkedNote(const std::string& failed) {
  return "MARKED: trace quality checks failed (" + failed + "): the measured steps, and so the predictions, may "
         "rest on wrong numbers; conclude nothing from them until trace_quality (tierscope analyze) says why";
}

int RunJob(const WhatIfFlags& flags, const WhatIfOptions& o, const AnalysisOptions& ao, const RenderOptions& f) {
  const std::vector<std::vector<WhatIfChange>> scenarios = {o.changes};
  const RankHook hook = [&](const TraceIndex& x, RankAnalysis& r) -> Status {
    std::vector<ChangeNotes> notes;
    StatusOr<std::vector<RankStepGraph>> g =
        WhatIfStepGraphs(x, &r.collectives, scenarios, SpecForTrace(*x.trace, o.device_spec), &notes);
    if (!g.ok()) return g.status();
    r.step_graphs = std::move(*g);
    r.whatif_notes = std::move(notes.front());
    return OkStatus();
  };
  StatusOr<JobAnalysis> job = AnalyzeJob(flags.traces, ao, flags.threads, nullptr, hook);
  if (!job.ok()) return Fail(job.status());
  StepSimulator sim(1);
  const std::vector<int64_t> offsets = ClockOffsets(job->stragglers, job->ranks.size());
  for (const std::vector<const RankStepGraph*>& step : JobSteps(JobStepGraphs(*job))) {
    sim.Add(step, offsets, job->stragglers.joined);
  }
  std::vector<WhatIfResult> results = sim.Finish();
  WhatIfResult& result = results.front();
  if (Status s = CheckSomethingRetimed(result, "the job of " + std::to_string(job->ranks.size()) + " rank(s)"); !s.ok()) {
    return Fail(s);
  }
  ChangeNotes notes = job->ranks.front().whatif_notes;
  for (size_t r = 1; r < job->ranks.size(); ++r) notes.Merge(job->ranks[r].whatif_notes);
  for (std::string& n : ChangeNoteLines(notes, o.changes, /*job=*/true)) result.notes.push_back(std::move(n));
  result.notes.push_back(std::to_string(job->ranks.size()) + " ranks, each step joined across them through " +
                         std::to_string(job->stragglers.matched) + " matched collective(s) and " +
                         std::to_string(job->stragglers.p2p_paired / 2) + " send/recv pair(s); " + job->stragglers.alignment);
  Table t = WhatIfTable(result, o);
  t.title += " (a job of " + std::to_string(job->ranks.size()) + " ranks)";
  std::string failed;  // the ranks whose traces failed a check, with the checks
  for (size_t r = 0; r < job->ranks.size(); ++r) {
    const std::string& q = job->ranks[r].quality_failed;
    if (!q.empty()) {
      failed += (failed.empty() ? "" : "; ") + std::string("rank ") + std::to_string(job->ranks[r].rank) + ": " + q;
    }
  }
  if (!failed.empty()) t.notes.push_back(MarkedNote(failed));
  if (!flags.html.empty()) return WriteAnalysisPage(flags.html, RenderTable(t, OutputFormat::kJson));
  std::cout << RenderTable(t, f);
  return 0;
}

int Run(const WhatIfFlags& flags) {
  OutputFormat format;
  if (!ParseOutputFormat(flags.format, &format)) {
    return Fail(InvalidArgument("--format must be text, json or csv, got '" + flags.format + "'"));
  }
  WhatIfOptions o;
  for (const std::string& text : flags.changes) {
    StatusOr<WhatIfChange> c = ParseWhatIfChange(text);
    if (!c.ok()) return Fail(c.status());
    o.changes.push_back(std::move(*c));
  }
  if (!flags.device_spec.empty()) {
    StatusOr<DeviceSpec> spec = LoadDeviceSpec(flags.device_spec);
    if (!spec.ok()) return Fail(spec.status().WithContext("--device-spec"));
    o.device_spec = std::move(*spec);
  }
  if (!flags.html.empty()) {  // before any work; the inputs listed only then
    if (Status s = CheckOutputs({{"--html", flags.html}}, InputsOf(flags)); !s.ok()) return Fail(s);
  }
  AnalysisOptions ao;
  ao.unit = flags.unit;
  const RenderOptions render(format, flags.wide);
  std::error_code ec;
  if (flags.traces.size() > 1 || std::filesystem::is_directory(flags.traces.front(), ec)) {
    return RunJob(flags, o, ao, render);
  }
  auto trace = LoadTrace(flags.traces.front());
  if (!trace.ok()) return Fail(trace.status());
  if (Status s = CheckUnitFound(*trace, ao.unit); !s.ok()) return Fail(s);
  NoteSkipped(*trace);
  o.device_spec = SpecForTrace(*trace, o.device_spec);
  const TraceAnalysis a = Analyze(*trace, ao);
  StatusOr<WhatIfResult> r = WhatIf(a.index, o);
  if (!r.ok()) return Fail(r.status());
  Table t = WhatIfTable(*r, o);
  if (const std::string failed = FailedChecks(a.quality); !failed.empty()) t.notes.push_back(MarkedNote(failed));
  if (!flags.html.empty()) return WriteAnalysisPage(flags.html, RenderTable(t, OutputFormat::kJson));
  std::cout << RenderTable(t, render);
  return 0;
}

}  // namespace

void RegisterWhatIf(CLI::App& app, std::vector<Command>* out) {
  auto flags = std::make_shared<WhatIfFlags>();
  auto* c = app.add_subcommand("whatif", "Predict a change before making it: each step of a trace re-timed "
                                         "through its dependency graph after the changes");
  c->add_option("traces", flags->traces,
                "Kineto trace (.json/.json.gz) or nsys SQLite export; several traces, or a directory of them, are a "
                "job (one trace per rank), re-timed as one through the collectives that join its ranks")
      ->required();
  c->add_option("--threads", flags->threads, "a job's ranks read at once, at most (0: the hardware threads)")
      ->check(CLI::Range(0, 4096));
  c->add_option("--change", flags->changes,
                "a change, repeatable: SELECTOR=F (kernels whose category or name matches, time x F: gemm=0.5, "
                "kernel:sgemm=0.5, communication=0.5), launch=US (launch delay and call at most US µs: CUDA "
                "graphs), sync=off, comm=overlap, cpu=F (host ops x F), batch=K (K samples per launch), units=N "
                "(compute units), precision=fp32|tf32|bf16|fp16|fp8|int8")
      ->required();
  c->add_option("--format", flags->format, "text | json | csv")->capture_default_str();
  AddMemoryBudgetOption(c);
  c->add_option("--unit", flags->unit, "work-unit annotation (default: ProfilerStep#N, else the whole trace)");
  c->add_option("--device-spec", flags->device_spec, "JSON of the device's peaks (see analyze --device-spec)");
  c->add_flag("--wide", flags->wide, "text: long names whole");
  c->add_option("--html", flags->html,
                "write the prediction's page to this file: each step predicted against today's, drawn from the "
                "JSON --format json prints (self-contained, no network)");
  out->push_back({c, [flags] { return Run(*flags); }});
}

}  // namespace tierscope::cli
