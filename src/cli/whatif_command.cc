// `tierscope whatif TRACE --change C [--change C ...]`: a trace's steps re-timed after the
// changes (analysis/whatif.h), predicted step time and critical path beside today's.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "analysis/commands.h"
#include "analysis/whatif.h"
#include "cli/command.h"
#include "inspect/calibrated_spec.h"
#include "inspect/calibration.h"

namespace tierscope::cli {
namespace {

struct WhatIfFlags {
  std::string trace, format = "text", unit, device_spec;
  std::vector<std::string> changes;
  bool wide = false;
};

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
  auto trace = LoadTrace(flags.trace);
  if (!trace.ok()) return Fail(trace.status());
  // tierscope's own CPU trace from this machine: its kernels against this machine's cached
  // calibration (`tierscope device` measures it; an analysis never does).
  if (!o.device_spec && trace->runtime == "cpu" && trace->device_name.rfind("cpu: ", 0) == 0 && trace->device_units > 0) {
    const std::optional<MachinePeaks> peaks = CachedPeaks(trace->device_units);
    if (peaks && !peaks->cpu.empty() && trace->device_name.find(peaks->cpu) != std::string::npos) {
      o.device_spec = CalibratedDeviceSpec(*peaks);
    }
  }
  AnalysisOptions ao;
  ao.unit = flags.unit;
  const TraceAnalysis a = Analyze(*trace, ao);
  StatusOr<WhatIfResult> r = WhatIf(a.index, o);
  if (!r.ok()) return Fail(r.status());
  std::cout << RenderTable(WhatIfTable(*r, o), RenderOptions(format, flags.wide));
  return 0;
}

}  // namespace

void RegisterWhatIf(CLI::App& app, std::vector<Command>* out) {
  auto flags = std::make_shared<WhatIfFlags>();
  auto* c = app.add_subcommand("whatif", "Predict a change before making it: each step of a trace re-timed "
                                         "through its dependency graph after the changes");
  c->add_option("trace", flags->trace, "Kineto trace (.json/.json.gz) or nsys SQLite export")->required();
  c->add_option("--change", flags->changes,
                "a change, repeatable: SELECTOR=F (kernels whose category or name matches, time x F: gemm=0.5, "
                "kernel:sgemm=0.5, communication=0.5), launch=US (launch delay and call at most US µs: CUDA "
                "graphs), sync=off, comm=overlap, cpu=F (host ops x F), batch=K (K samples per launch), units=N "
                "(compute units), precision=fp32|tf32|bf16|fp16|fp8|int8")
      ->required();
  c->add_option("--format", flags->format, "text | json | csv")->capture_default_str();
  c->add_option("--unit", flags->unit, "work-unit annotation (default: ProfilerStep#N, else the whole trace)");
  c->add_option("--device-spec", flags->device_spec, "JSON of the device's peaks (see analyze --device-spec)");
  c->add_flag("--wide", flags->wide, "text: long names whole");
  out->push_back({c, [flags] { return Run(*flags); }});
}

}  // namespace tierscope::cli
