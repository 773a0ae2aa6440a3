// libFuzzer target: a Kineto (PyTorch profiler) Chrome trace. It imports (bad events
// counted, never fatal) or fails with a Status; an imported trace goes through every
// report (the critical path's included), rule and the diagnosis, as `tierscope analyze` would,
// and what-if's re-timing under every kind of change. The same bytes are also streamed
// (kineto_stream.h) through a small window on one or two readers: the two paths must agree
// on whether the input is a trace and on what it holds.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "analysis/commands.h"
#include "analysis/whatif.h"
#include "trace/kineto_import.h"
#include "trace/kineto_stream.h"
#include "trace/rocprof_import.h"

namespace {

// The streaming path reads files: the input through a memory file.
void CheckStreamAgrees(std::string_view json, const tierscope::StatusOr<tierscope::Trace>& whole) {
  // rocprofv3's JSON and gzip bytes take other paths in one of the two.
  if (tierscope::LooksLikeRocprofJson(json.substr(0, 256))) return;
  if (json.size() >= 2 && json[0] == '\x1f' && json[1] == '\x8b') return;
  const int fd = memfd_create("fuzz", 0);
  if (fd < 0) return;
  if (write(fd, json.data(), json.size()) != static_cast<ssize_t>(json.size())) {
    close(fd);
    return;
  }
  // Windows from 64 bytes to 16 KiB, by the input's size and last byte.
  const size_t window = 64 + ((json.size() * 31 + (json.empty() ? 0 : static_cast<unsigned char>(json.back()))) % 1024) * 16;
  auto streamed = tierscope::ImportKinetoStream("/proc/self/fd/" + std::to_string(fd), window,
                                                json.size() % 2 == 0 ? 2 : 1);
  close(fd);
  // A corrupt input may be named at another byte or for another reason, and the paths
  // check the top-level members they skip differently (so one may read what the other
  // refuses); on valid JSON they must agree, and a trace must be the same trace.
  if (streamed.ok() != whole.ok()) {
    simdjson::dom::parser parser;
    if (!parser.parse(json.data(), json.size()).error()) __builtin_trap();
    return;
  }
  if (whole.ok() && (streamed->events.size() != whole->events.size() ||
                     streamed->stats.events_read != whole->stats.events_read ||
                     streamed->stats.malformed != whole->stats.malformed || streamed->rank != whole->rank)) {
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  auto trace = tierscope::ImportKinetoJson(json, "fuzz.json", /*threads=*/1);
  CheckStreamAgrees(json, trace);
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
