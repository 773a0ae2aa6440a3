// libFuzzer target: the vendors' CSV files. The input's first byte picks the reader, the
// rest is split into files at form feeds:
// - rocprofv3's CSV run (kernel, HIP API, marker, copy, agent files, in that order);
// - torch_npu's kernel_details.csv joined to a small Ascend trace.
// Each ends in a Trace (bad rows counted) or a Status; a trace goes through every report.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/commands.h"
#include "trace/ascend_details.h"
#include "trace/kineto_import.h"
#include "trace/rocprof_csv.h"

namespace {

// An Ascend trace with a kernel, a copy and a collective for the rows to join.
const char kAscend[] = R"([
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":"100.000","dur":50},
{"ph":"X","name":"Node@launch","pid":8,"tid":2,"ts":"130.000","dur":5,"args":{"connection_id":42}},
{"ph":"X","name":"k","pid":3170820512,"tid":2,"ts":"140.000","dur":20,"args":{"Task Type":"AI_CORE","connection_id":42}},
{"ph":"X","name":"MEMCPY_ASYNC","pid":3170820512,"tid":3,"ts":"162.000","dur":4,"args":{"Task Type":"PCIE_DMA_SQE"}},
{"ph":"X","name":"hcom_allReduce__1_0_1","pid":7,"tid":0,"ts":"200.000","dur":30,"args":{"connection_id":43}},
{"ph":"M","name":"process_name","pid":3170820512,"tid":0,"args":{"name":"Ascend Hardware"}},
{"ph":"M","name":"process_name","pid":8,"tid":0,"args":{"name":"CANN"}},
{"ph":"M","name":"process_name","pid":7,"tid":0,"args":{"name":"HCCL"}}
])";

std::vector<std::string> Split(std::string_view s) {
  std::vector<std::string> parts;
  size_t from = 0;
  while (true) {
    const size_t ff = s.find('\f', from);
    parts.emplace_back(s.substr(from, ff == std::string_view::npos ? std::string_view::npos : ff - from));
    if (ff == std::string_view::npos) return parts;
    from = ff + 1;
  }
}

void Analyze(const tierscope::Trace& t) {
  tierscope::AnalysisOptions o;
  (void)tierscope::AnalyzeTrace(t, o, tierscope::OutputFormat::kText);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    static const char* const kFiles[] = {"kernel_trace", "hip_api_trace", "marker_api_trace", "memory_copy_trace",
                                         "agent_info"};
    std::map<std::string, std::string> files;
    const std::vector<std::string> parts = Split(text);
    for (size_t i = 0; i < parts.size() && i < 5; ++i) files[kFiles[i]] = parts[i];
    auto t = tierscope::ImportRocprofCsvTexts(files, "fuzz_kernel_trace.csv");
    if (t.ok()) Analyze(*t);
    return 0;
  }
  auto t = tierscope::ImportKinetoJson(kAscend, "trace_view.json");
  if (!t.ok()) __builtin_trap();  // the fixed trace always reads
  if (tierscope::ascend::JoinKernelDetails(*t, text, "kernel_details.csv").ok()) Analyze(*t);
  return 0;
}
