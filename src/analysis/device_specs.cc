// The datasheet table and the lookup of a trace's device in it.
#include "analysis/device_specs.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "core/paths.h"
#include "core/text.h"

namespace tierscope {
namespace {

DeviceSpec Spec(const char* name, double fp64, double fp32, double tf32, double bf16, double fp16, double fp8,
                double int8, double fp32_vector, double memory_tbps, double link_gbps, const char* source) {
  return DeviceSpec{name, fp64, fp32, tf32, bf16, fp16, fp8, int8, fp32_vector, memory_tbps, link_gbps, source, ""};
}

// Datasheet figures; NVIDIA's "with sparsity" tensor figures halved to dense. Links are
// per direction (NVIDIA and AMD quote both directions together).
std::vector<DeviceSpec> Table() {
  constexpr const char* kH100 = "NVIDIA H100 Tensor Core GPU datasheet (SXM5 column; sparsity figures halved)";
  return {
      //   name                       fp64   fp32   tf32    bf16    fp16    fp8     int8   fp32v  TB/s   link
      Spec("NVIDIA H100 SXM5 80GB", 67, 67, 494.5, 989.5, 989.5, 1979, 1979, 67, 3.35, 450, kH100),
      Spec("NVIDIA H100 PCIe 80GB", 51, 51, 378, 756.5, 756.5, 1513, 1513, 51, 2.0, 64,
           "NVIDIA H100 Tensor Core GPU datasheet (PCIe column; sparsity figures halved; link: PCIe Gen5 x16)"),
      Spec("NVIDIA H200 SXM 141GB", 67, 67, 494.5, 989.5, 989.5, 1979, 1979, 67, 4.8, 450,
           "NVIDIA H200 Tensor Core GPU datasheet (SXM column; sparsity figures halved)"),
      Spec("NVIDIA B200", 37, 75, 1125, 2250, 2250, 4500, 4500, 75, 8.0, 900,
           "NVIDIA HGX B200 datasheet (8-GPU totals divided by 8; sparsity figures halved)"),
      Spec("NVIDIA A100 SXM4 80GB", 19.5, 19.5, 156, 312, 312, 0, 624, 19.5, 2.039, 300,
           "NVIDIA A100 Tensor Core GPU datasheet (80GB SXM column, dense figures)"),
      Spec("NVIDIA A100 SXM4 40GB", 19.5, 19.5, 156, 312, 312, 0, 624, 19.5, 1.555, 300,
           "NVIDIA A100 Tensor Core GPU datasheet (40GB SXM column, dense figures)"),
      Spec("NVIDIA A100 PCIe 80GB", 19.5, 19.5, 156, 312, 312, 0, 624, 19.5, 1.935, 32,
           "NVIDIA A100 Tensor Core GPU datasheet (80GB PCIe column, dense figures; link: PCIe Gen4 x16)"),
      Spec("NVIDIA A100 PCIe 40GB", 19.5, 19.5, 156, 312, 312, 0, 624, 19.5, 1.555, 32,
           "NVIDIA A100 Tensor Core GPU datasheet (40GB PCIe column, dense figures; link: PCIe Gen4 x16)"),
      Spec("NVIDIA L40S", 0, 91.6, 183, 362.05, 362.05, 733, 733, 91.6, 0.864, 32,
           "NVIDIA L40S datasheet (sparsity figures halved; link: PCIe Gen4 x16)"),
      Spec("NVIDIA T4", 0, 8.1, 0, 0, 65, 0, 130, 8.1, 0.32, 16,
           "NVIDIA T4 Tensor Core GPU datasheet (FP16 mixed precision; link: PCIe Gen3 x16)"),
      Spec("NVIDIA V100 SXM2", 7.8, 15.7, 0, 0, 125, 0, 0, 15.7, 0.9, 150,
           "NVIDIA Tesla V100 datasheet (SXM2 column)"),
      Spec("NVIDIA V100 PCIe", 7, 14, 0, 0, 112, 0, 0, 14, 0.9, 16,
           "NVIDIA Tesla V100 datasheet (PCIe column; link: PCIe Gen3 x16)"),
      Spec("AMD Instinct MI300X", 163.4, 163.4, 653.7, 1307.4, 1307.4, 2614.9, 2614.9, 163.4, 5.3, 448,
           "AMD Instinct MI300X data sheet (dense matrix peaks; 7 Infinity Fabric links of 64 GB/s a direction)"),
      // An MI250(X) is two GCDs, and PyTorch sees each as a device: half the package's figures.
      Spec("AMD Instinct MI250X (one GCD)", 47.85, 47.85, 0, 191.5, 191.5, 0, 191.5, 23.95, 1.6384, 0,
           "AMD Instinct MI250X data sheet (matrix peaks), halved: one of its two GCDs"),
      Spec("AMD Instinct MI250 (one GCD)", 45.25, 45.25, 0, 181.05, 181.05, 0, 181.05, 22.65, 1.6384, 0,
           "AMD Instinct MI250 data sheet (matrix peaks), halved: one of its two GCDs"),
      Spec("AMD Instinct MI210", 45.3, 45.3, 0, 181, 181, 0, 181, 22.6, 1.6384, 150,
           "AMD Instinct MI210 data sheet (matrix peaks; 3 Infinity Fabric links of 50 GB/s a direction)"),
      // Intel's Hot Chips 2024 figures (BF16 and FP8 matrix, HBM); FP16, FP32 and vector
      // peaks unpublished (0: no roof for them). Link: 21 of 24 Ethernet ports scale up.
      Spec("Intel Gaudi 2", 0, 0, 0, 432, 0, 865, 0, 0, 2.46, 262.5,
           "Intel, Hot Chips 2024 (BF16 432 TFLOP/s, HBM 2.46 TB/s); FP8 dense 865 from arXiv 2503.09975 "
           "(Intel co-authors); 21 x 100 GbE a direction"),
      Spec("Intel Gaudi 3", 0, 0, 0, 1835, 0, 1835, 0, 0, 3.67, 525,
           "Intel, Hot Chips 2024 (BF16 and FP8 matrix 1835 TFLOP/s, HBM 3.67 TB/s); 21 x 200 GbE a direction"),
      // Huawei publishes no per-chip datasheet: FP16/BF16 are derived as AI cores x 16x16x16
      // MACs x 2 x 1.8 GHz (CANN's Ascend910B*.ini cube size and clock, npu-smi's core count),
      // INT8 twice that; HBM bandwidth is third parties' figure. FP32 and vector: unpublished.
      Spec("Huawei Ascend 910B2", 0, 0, 0, 353.9, 353.9, 0, 707.8, 0, 1.6, 196,
           "derived, not a datasheet: 24 AI cores x 4096 FP16 MACs x 2 x 1.8 GHz (CANN Ascend910B2.ini); HBM "
           "1.6 TB/s and HCCS 196 GB/s a direction from third-party listings"),
      Spec("Huawei Ascend 910B3", 0, 0, 0, 294.9, 294.9, 0, 589.8, 0, 1.6, 196,
           "derived, not a datasheet: 20 AI cores x 4096 FP16 MACs x 2 x 1.8 GHz (CANN Ascend910B3.ini); HBM "
           "1.6 TB/s and HCCS 196 GB/s a direction from third-party listings"),
      Spec("Huawei Ascend 910B4", 0, 0, 0, 245.7, 245.7, 0, 491.5, 0, 0.8, 196,
           "derived, not a datasheet: 20 AI cores at a lower clock (HAMi device config, third-party 245.7 "
           "TFLOP/s); HBM 0.8 TB/s from third-party listings"),
      Spec("Moore Threads MTT S4000", 0, 25, 50, 100, 100, 0, 200, 25, 0.768, 240,
           "Moore Threads launch figures (FP32 25, TF32 50, FP16/BF16 100 TFLOP/s, INT8 200 TOP/s, GDDR6 "
           "768 GB/s, MTLink 240 GB/s)"),
      // Only an FP8 headline (dense or sparse unstated) is published for the S5000: no
      // matrix roof rather than a guessed one; the memory roof is its 640-bit GDDR at 20 Gb/s.
      Spec("Moore Threads MTT S5000", 0, 0, 0, 0, 0, 0, 0, 0, 1.6, 0,
           "Moore Threads launch figures (80 GB at 1.6 TB/s; matrix peaks unpublished, only an FP8 headline "
           "of unstated sparsity)"),
  };
}

const DeviceSpec* Named(const std::string& name) {
  for (const DeviceSpec& d : KnownDevices()) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

// The table entry a deviceProperties name denotes ("NVIDIA H100 80GB HBM3", "Tesla T4").
const DeviceSpec* ByName(std::string_view device_name, int64_t memory_bytes) {
  const std::string n = Lower(device_name);
  const auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
  const double gib = static_cast<double>(memory_bytes) / (1024.0 * 1024 * 1024);
  // Parts the table does not hold, whose names contain ones it does: no roof rather than
  // another part's (GH200 and GB200 superchips, H100 NVL).
  if (has("gh200") || has("gb200") || has("h100 nvl")) return nullptr;
  if (has("h200")) return Named("NVIDIA H200 SXM 141GB");
  if (has("h100")) return Named(has("pcie") ? "NVIDIA H100 PCIe 80GB" : "NVIDIA H100 SXM5 80GB");
  if (has("b200")) return Named("NVIDIA B200");
  if (has("a100")) {
    const bool small = memory_bytes > 0 && gib < 48;
    if (has("pcie")) return Named(small ? "NVIDIA A100 PCIe 40GB" : "NVIDIA A100 PCIe 80GB");
    return Named(small ? "NVIDIA A100 SXM4 40GB" : "NVIDIA A100 SXM4 80GB");
  }
  if (has("l40s")) return Named("NVIDIA L40S");
  if (has("v100")) return Named(has("pcie") ? "NVIDIA V100 PCIe" : "NVIDIA V100 SXM2");
  if (has("mi300x")) return Named("AMD Instinct MI300X");
  if (has("mi250x")) return Named("AMD Instinct MI250X (one GCD)");
  if (has("mi250")) return Named("AMD Instinct MI250 (one GCD)");
  if (has("mi210")) return Named("AMD Instinct MI210");
  // torch_npu's names ("Ascend910B2"), Habana's ("GAUDI2", hl-smi's "HL-225"), MUSA's.
  if (has("910b2")) return Named("Huawei Ascend 910B2");
  if (has("910b3")) return Named("Huawei Ascend 910B3");
  if (has("910b4")) return Named("Huawei Ascend 910B4");
  if (has("gaudi2") || has("gaudi 2") || has("hl-225")) return Named("Intel Gaudi 2");
  if (has("gaudi3") || has("gaudi 3") || has("hl-325") || has("hl-338")) return Named("Intel Gaudi 3");
  if (has("mtt s4000")) return Named("Moore Threads MTT S4000");
  if (has("mtt s5000")) return Named("Moore Threads MTT S5000");
  // "Tesla T4" / "NVIDIA T4": the word T4, not a part of another name.
  for (size_t p = n.find("t4"); p != std::string::npos; p = n.find("t4", p + 1)) {
    const bool start = p == 0 || !std::isalnum(static_cast<unsigned char>(n[p - 1]));
    const bool end = p + 2 == n.size() || !std::isalnum(static_cast<unsigned char>(n[p + 2]));
    if (start && end) return Named("NVIDIA T4");
  }
  return nullptr;
}

}  // namespace

double DeviceSpec::MatrixPeak(std::string_view dtype) const {
  const std::string t = Lower(dtype);
  if (t.find("bfloat16") != std::string::npos) return bf16;
  if (t.find("float8") != std::string::npos) return fp8;
  if (t.find("half") != std::string::npos || t == "float16") return fp16;
  if (t == "double" || t == "float64") return fp64;
  if (t == "float" || t == "float32") return fp32;
  if (t == "tf32") return tf32;  // FP32 data on TF32 units (the kernel's name says so)
  if (t == "signed char" || t == "int8" || t == "c10::qint8" || t == "char") return int8;
  return 0;
}

const std::vector<DeviceSpec>& KnownDevices() {
  static const std::vector<DeviceSpec> table = Table();
  return table;
}

std::optional<DeviceSpec> FindDeviceSpec(std::string_view device_name, int32_t units, int64_t memory_bytes) {
  if (const DeviceSpec* d = ByName(device_name, memory_bytes); d != nullptr) {
    DeviceSpec out = *d;
    out.matched_by = "the trace's device name '" + std::string(device_name) + "'";
    return out;
  }
  // No name (vLLM's ROCm traces) or a generic one ("AMD Radeon Graphics"): the compute units
  // and memory, where only one entry fits (104 CUs and 64 GiB are an MI210 or one MI250 GCD:
  // no roof).
  const std::string lower = Lower(device_name);
  if (!device_name.empty() && lower.find("radeon graphics") == std::string::npos) return std::nullopt;
  const double gib = static_cast<double>(memory_bytes) / (1024.0 * 1024 * 1024);
  struct Print {
    int32_t units;
    double min_gib, max_gib;
    const char* name;
  };
  static const Print kPrints[] = {{304, 180, 200, "AMD Instinct MI300X"}, {132, 75, 82, "NVIDIA H100 SXM5 80GB"},
                                  {132, 130, 145, "NVIDIA H200 SXM 141GB"}, {148, 170, 200, "NVIDIA B200"},
                                  {110, 60, 66, "AMD Instinct MI250X (one GCD)"}};
  for (const Print& p : kPrints) {
    if (units == p.units && gib >= p.min_gib && gib <= p.max_gib) {
      DeviceSpec out = *Named(p.name);
      char buf[160];
      std::snprintf(buf, sizeof(buf), "the trace's %d compute units and %.0f GiB (its device name is %s)", units,
                    gib, device_name.empty() ? "empty" : "generic");
      out.matched_by = buf;
      return out;
    }
  }
  return std::nullopt;
}

StatusOr<DeviceSpec> ParseDeviceSpec(const std::string& json_text, const std::string& source) {
  const nlohmann::json j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return InvalidArgument(source + ": not valid JSON (a syntax error, or a number beyond a double's range)");
  }
  if (!j.is_object()) return InvalidArgument(source + ": not a JSON object");
  DeviceSpec d;
  const auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get<std::string>().empty()) {
    return InvalidArgument(source + ": 'name' must be a non-empty string");
  }
  d.name = name->get<std::string>();
  const std::pair<const char*, double*> numbers[] = {
      {"fp64", &d.fp64}, {"fp32", &d.fp32},           {"tf32", &d.tf32},
      {"bf16", &d.bf16}, {"fp16", &d.fp16},           {"fp8", &d.fp8},
      {"int8", &d.int8}, {"fp32_vector", &d.fp32_vector}, {"memory_tbps", &d.memory_tbps},
      {"link_gbps", &d.link_gbps}};
  for (const auto& [key, out] : numbers) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) continue;
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0 ||
        it->get<double>() > 1e6) {
      return InvalidArgument(source + ": '" + key + "' must be a number from 0 to 1e6 (TFLOP/s, TB/s or GB/s), got " +
                             JsonExcerpt(*it));
    }
    *out = it->get<double>();
  }
  if (!(d.memory_tbps > 0)) return InvalidArgument(source + ": 'memory_tbps' (TB/s) must be above 0");
  if (d.fp32_vector == 0) d.fp32_vector = d.fp32;
  if (d.fp64 + d.fp32 + d.tf32 + d.bf16 + d.fp16 + d.fp8 + d.int8 <= 0) {
    return InvalidArgument(source + ": no compute peak (fp32, bf16, fp16, ...) above 0");
  }
  const auto src = j.find("source");
  d.source = src != j.end() && src->is_string() ? src->get<std::string>() : source;
  d.matched_by = "--device-spec " + source;
  return d;
}

nlohmann::json DeviceSpecJson(const DeviceSpec& d) {
  return {{"name", d.name},       {"fp64", d.fp64},   {"fp32", d.fp32},
          {"tf32", d.tf32},       {"bf16", d.bf16},   {"fp16", d.fp16},
          {"fp8", d.fp8},         {"int8", d.int8},   {"fp32_vector", d.fp32_vector},
          {"memory_tbps", d.memory_tbps}, {"link_gbps", d.link_gbps}, {"source", d.source}};
}

std::string DeviceSpecJsonText(const DeviceSpec& d) { return DeviceSpecJson(d).dump(2) + "\n"; }

StatusOr<DeviceSpec> LoadDeviceSpec(const std::string& path) {
  TS_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseDeviceSpec(text, path);
}

}  // namespace tierscope
