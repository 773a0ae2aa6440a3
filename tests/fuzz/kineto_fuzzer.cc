// libFuzzer target: a Kineto (PyTorch profiler) Chrome trace. It imports (bad events
// counted, never fatal) or fails with a Status; an imported trace goes through every
// report (the critical path's included), rule and the diagnosis, as `tierscope analyze` would.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "analysis/commands.h"
#include "trace/kineto_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  auto trace = tierscope::ImportKinetoJson(json, "fuzz.json", /*threads=*/1);
  if (!trace.ok()) return 0;
  tierscope::AnalysisOptions o;
  (void)tierscope::AnalyzeTrace(*trace, o, tierscope::OutputFormat::kText);
  o.critical_path = true;  // the on-demand critical-path graph too
  (void)tierscope::AnalyzeTrace(*trace, o, tierscope::OutputFormat::kJson);
  return 0;
}
