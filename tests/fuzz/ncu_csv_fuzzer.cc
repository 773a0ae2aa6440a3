// libFuzzer target: an Nsight Compute CSV (`ncu --csv --page details`). It parses, or
// fails with a Status; every kernel of a parsed report goes through tier 3's sections.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "inspect/evidence.h"
#include "inspect/sections.h"
#include "trace/ncu_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto report = tierscope::ParseNcuCsv(text, "fuzz.csv");
  if (!report.ok()) return 0;
  for (const tierscope::NcuKernel& k : report->kernels) {
    const auto r = tierscope::BuildKernelReport(tierscope::EvidenceFromNcu(k, "fuzz.csv"),
                                                *tierscope::ParseSections(""));
    (void)tierscope::RenderKernelReports({r});
  }
  return 0;
}
