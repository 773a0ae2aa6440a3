// `tierscope analyze`, `stats` and `diff`: the analyzer on any supported trace (Kineto
// .json/.json.gz, nsys SQLite; analyze also takes an Nsight Compute CSV).
#include <iostream>
#include <memory>
#include <string>

#include "analysis/commands.h"
#include "cli/command.h"
#include "core/text.h"

namespace tierscope::cli {
namespace {

struct AnalyzeFlags {
  std::string format = "text", unit, base_path, new_path, trace_path, reports;
  double short_us = 10;
  bool wide = false;
};

void AddCommon(CLI::App* c, AnalyzeFlags& f) {
  c->add_option("--format", f.format, "text | json | csv")->capture_default_str();
  c->add_option("--unit", f.unit,
                "work-unit annotation (default: ProfilerStep#N, serial_bert_forward or "
                "batched_bert_forward, whichever the trace has)");
  c->add_option("--short-kernel-us", f.short_us, "kernels shorter than this are short")
      ->capture_default_str();
  c->add_flag("--wide", f.wide, "text: long names and shapes whole (else shortened in the middle)");
}

enum class Which { kAnalyze, kStats, kDiff };

int Run(const AnalyzeFlags& flags, Which which) {
  OutputFormat format;
  if (!ParseOutputFormat(flags.format, &format)) {
    return Fail(InvalidArgument("--format must be text, json or csv, got '" + flags.format + "'"));
  }
  const RenderOptions f(format, flags.wide);
  if (!(flags.short_us > 0)) return Fail(InvalidArgument("--short-kernel-us must be > 0"));
  AnalysisOptions o;
  o.unit = flags.unit;
  o.short_kernel_ns = flags.short_us * 1000.0;
  if (which == Which::kDiff) {
    auto base = LoadTrace(flags.base_path);
    if (!base.ok()) return Fail(base.status());
    auto next = LoadTrace(flags.new_path);
    if (!next.ok()) return Fail(next.status());
    std::cout << DiffTraceReport(*base, *next, o, f);
    return 0;
  }
  if (IsNcuCsv(flags.trace_path)) {  // kernel metrics, not a timeline
    auto out = AnalyzeNcuCsv(flags.trace_path, f);
    if (!out.ok()) return Fail(out.status());
    std::cout << *out;
    return 0;
  }
  auto trace = LoadTrace(flags.trace_path);
  if (!trace.ok()) return Fail(trace.status());
  if (which == Which::kAnalyze) {
    std::cout << AnalyzeTrace(*trace, o, f);
    return 0;
  }
  auto out = TraceStats(*trace, SplitList(flags.reports), o, f);
  if (!out.ok()) return Fail(out.status());
  std::cout << *out;
  return 0;
}

}  // namespace

void RegisterAnalyze(CLI::App& app, std::vector<Command>* out) {
  auto flags = std::make_shared<AnalyzeFlags>();
  auto* an = app.add_subcommand("analyze", "Every report of a trace plus the diagnosis");
  an->add_option("trace", flags->trace_path, "Kineto trace (.json/.json.gz) or nsys SQLite export")->required();
  AddCommon(an, *flags);
  auto* st = app.add_subcommand("stats", "Reports of a trace by name");
  st->add_option("trace", flags->trace_path, "Kineto trace (.json/.json.gz) or nsys SQLite export")->required();
  st->add_option("--report", flags->reports, "report names, comma-separated (see --list)")->required();
  AddCommon(st, *flags);
  auto* df = app.add_subcommand("diff", "Compare a baseline trace with a new one");
  df->add_option("base", flags->base_path, "baseline trace")->required();
  df->add_option("new", flags->new_path, "new trace")->required();
  AddCommon(df, *flags);
  out->push_back({an, [flags] { return Run(*flags, Which::kAnalyze); }});
  out->push_back({st, [flags] { return Run(*flags, Which::kStats); }});
  out->push_back({df, [flags] { return Run(*flags, Which::kDiff); }});
}

}  // namespace tierscope::cli
