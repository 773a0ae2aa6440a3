// What-if's per-kernel models (whatif.h): which kernels a selector names, a kernel's dtype,
// and each device event's time factor under the kernel, batch, units and precision
// changes. Internal to whatif.cc.
#ifndef TIERSCOPE_ANALYSIS_WHATIF_CHANGES_H_
#define TIERSCOPE_ANALYSIS_WHATIF_CHANGES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/device_specs.h"
#include "analysis/reports.h"
#include "analysis/whatif.h"

namespace tierscope {

// A kernel's dtype as Kineto names it ("float", "c10::BFloat16", ...), from its vendor name
// or the engine's (cpu_bgemm_nt_bf16_...); "" when the name does not say.
std::string KernelDtype(std::string_view name);
// A matrix product (GEMM, GEMV, convolution, attention by its vendor name, or "gemm" in it).
bool IsMatrixKernel(std::string_view name);
// The selector: communication / memcpy / memset, a vendor category's start (gemm, conv,
// attention), else a case-insensitive substring of the kernel's name.
bool KernelMatches(const TraceIndex& index, size_t event, const std::string& selector);

// By event: the factor on each device event's time (1 for everything else).
StatusOr<std::vector<double>> DeviceFactors(const TraceIndex& index, const std::vector<WhatIfChange>& changes,
                                            const std::optional<DeviceSpec>& spec, ChangeNotes* notes);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_WHATIF_CHANGES_H_
