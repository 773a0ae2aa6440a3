// Datasheet peaks of the accelerators traces come from (NVIDIA H100/H200/B200/A100/L40S/T4/
// V100, AMD MI300X/MI250X/MI250 (one GCD each)/MI210, Intel Gaudi 2/3, Huawei Ascend 910B2/B3/B4
// (derived: no datasheet), Moore Threads MTT S4000/S5000), each with its source: dense matrix
// peaks per precision, the FP32 vector peak, memory bandwidth and the per-direction link
// bandwidth. A trace's device is found from its deviceProperties name, or, when the name is
// empty (vLLM's ROCm traces), from its compute-unit count and memory; `--device-spec FILE`
// names one the table lacks, or replaces a derived entry with the user's own figures.
#ifndef TIERSCOPE_ANALYSIS_DEVICE_SPECS_H_
#define TIERSCOPE_ANALYSIS_DEVICE_SPECS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tierscope/status.h"

namespace tierscope {

struct DeviceSpec {
  std::string name;  // "NVIDIA H100 SXM5 80GB"
  // Dense peaks in TFLOP/s (TOP/s for INT8); 0: no such unit, or no published figure (no roof).
  double fp64 = 0, fp32 = 0, tf32 = 0, bf16 = 0, fp16 = 0, fp8 = 0, int8 = 0;
  double fp32_vector = 0;  // FP32 without matrix units (the roof of elementwise work)
  double memory_tbps = 0;  // HBM / GDDR bandwidth, TB/s
  double link_gbps = 0;    // per direction, GB/s (NVLink / Infinity Fabric / PCIe); 0: not stated
  std::string source;      // where the figures come from
  std::string matched_by;  // how the trace's device was matched to this entry

  // The matrix peak (TFLOP/s) for a Kineto dtype name ("c10::BFloat16", "float", ...);
  // 0 when the dtype is unknown or the device has no unit for it.
  double MatrixPeak(std::string_view dtype) const;
};

// The built-in table.
const std::vector<DeviceSpec>& KnownDevices();

// The entry for a trace's device: by its name (case-insensitive), else by its compute units
// and memory bytes when the name is empty; nullopt when neither identifies one.
std::optional<DeviceSpec> FindDeviceSpec(std::string_view device_name, int32_t units, int64_t memory_bytes);

// A device spec from JSON text: {"name": ..., "bf16": 989.4, ..., "memory_tbps": 3.35,
// "source": ...}; every number finite and >= 0, memory_tbps and one compute peak > 0.
StatusOr<DeviceSpec> ParseDeviceSpec(const std::string& json_text, const std::string& source);
StatusOr<DeviceSpec> LoadDeviceSpec(const std::string& path);
// The spec as --device-spec reads it back.
std::string DeviceSpecJsonText(const DeviceSpec& spec);
// The same as a JSON value.
nlohmann::json DeviceSpecJson(const DeviceSpec& spec);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_DEVICE_SPECS_H_
