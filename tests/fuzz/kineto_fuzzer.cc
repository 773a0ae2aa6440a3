// libFuzzer target: a Kineto (PyTorch profiler) Chrome trace. It imports (bad events
// counted, never fatal) or fails with a Status; an imported trace goes through every
// report (the critical path's included), rule and the diagnosis, as `tierscope analyze` would,
// and what-if's re-timing under every kind of change.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "analysis/commands.h"
#include "analysis/whatif.h"
#include "trace/kineto_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  auto trace = tierscope::ImportKinetoJson(json, "fuzz.json", /*threads=*/1);
  if (!trace.ok()) return 0;
  tierscope::AnalysisOptions o;
  (void)tierscope::AnalyzeTrace(*trace, o, tierscope::OutputFormat::kText);
  o.critical_path = true;  // the on-demand critical-path graph too
  (void)tierscope::AnalyzeTrace(*trace, o, tierscope::OutputFormat::kJson);
  const tierscope::TraceAnalysis a = tierscope::Analyze(*trace, tierscope::AnalysisOptions{});
  tierscope::WhatIfOptions w;
  tierscope::DeviceSpec d;
  d.name = "fuzz";
  d.fp32 = d.fp32_vector = d.bf16 = 1;
  d.memory_tbps = 1;
  w.device_spec = d;
  for (const char* c : {"gemm=0.5", "launch=0", "sync=off", "comm=overlap", "cpu=0.5", "batch=4", "units=1",
                        "precision=bf16"}) {
    w.changes.push_back(*tierscope::ParseWhatIfChange(c));
  }
  if (auto r = tierscope::WhatIf(a.index, w); r.ok()) (void)tierscope::WhatIfTable(*r, w);
  return 0;
}
