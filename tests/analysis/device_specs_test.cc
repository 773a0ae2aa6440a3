// The device table: found by name or by compute units and memory, peaks per dtype, and
// --device-spec files with clear errors.
#include "analysis/device_specs.h"

#include <gtest/gtest.h>

#include <string>

namespace tierscope {
namespace {

TEST(DeviceSpecs, FindsTheCorpusDevicesByNameOrFingerprint) {
  EXPECT_EQ(FindDeviceSpec("NVIDIA H100 80GB HBM3", 132, 85018279936)->name, "NVIDIA H100 SXM5 80GB");
  EXPECT_EQ(FindDeviceSpec("NVIDIA B200", 148, 191503138816)->name, "NVIDIA B200");
  EXPECT_EQ(FindDeviceSpec("AMD Instinct MI300X", 304, 206141652992)->name, "AMD Instinct MI300X");
  EXPECT_EQ(FindDeviceSpec("NVIDIA A100-PG509-200", 108, 42297524224)->name, "NVIDIA A100 SXM4 40GB");
  EXPECT_EQ(FindDeviceSpec("Tesla T4", 40, 15843721216)->name, "NVIDIA T4");
  EXPECT_FALSE(FindDeviceSpec("NVIDIA RTX T400", 6, 2 << 30));  // "T4" inside another name
  // vLLM's ROCm traces leave the name empty: 304 CUs and 192 GiB are an MI300X.
  const auto mi300 = FindDeviceSpec("", 304, 206141652992);
  ASSERT_TRUE(mi300);
  EXPECT_EQ(mi300->name, "AMD Instinct MI300X");
  EXPECT_NE(mi300->matched_by.find("304 compute units"), std::string::npos);
  EXPECT_FALSE(FindDeviceSpec("", 77, 1 << 30));
  // A generic name: 104 CUs and 64 GiB could be an MI210 or one MI250 GCD — no roof.
  EXPECT_FALSE(FindDeviceSpec("AMD Radeon Graphics", 104, int64_t{64} << 30));
  EXPECT_EQ(FindDeviceSpec("AMD Radeon Graphics", 110, int64_t{64} << 30)->name, "AMD Instinct MI250X (one GCD)");
  EXPECT_EQ(FindDeviceSpec("AMD Instinct MI250X", 110, 0)->bf16, 191.5);  // one GCD, as PyTorch sees it
  // Names that contain a table entry's but are other parts: no roof rather than a wrong one.
  EXPECT_FALSE(FindDeviceSpec("NVIDIA GH200 480GB", 132, 0));
  EXPECT_FALSE(FindDeviceSpec("NVIDIA GB200", 152, 0));
  EXPECT_FALSE(FindDeviceSpec("NVIDIA H100 NVL", 132, 0));
  EXPECT_EQ(FindDeviceSpec("NVIDIA A100-PCIE-40GB", 108, int64_t{40} << 30)->memory_tbps, 1.555);
  EXPECT_FALSE(FindDeviceSpec("Ascend910B", 0, 0));  // which 910B: cores and clock differ
  EXPECT_EQ(FindDeviceSpec("Ascend910B3", 0, 0)->name, "Huawei Ascend 910B3");
  EXPECT_EQ(FindDeviceSpec("GAUDI2", 0, 0)->name, "Intel Gaudi 2");
  EXPECT_EQ(FindDeviceSpec("HL-325L", 0, 0)->name, "Intel Gaudi 3");
  EXPECT_EQ(FindDeviceSpec("MTT S4000", 0, 0)->name, "Moore Threads MTT S4000");
}

TEST(DeviceSpecs, DerivedOrUnpublishedFiguresSaySo) {
  // Ascend's peaks are derived, not Huawei's: the source must say it, for every report.
  EXPECT_NE(FindDeviceSpec("Ascend910B2", 0, 0)->source.find("derived"), std::string::npos);
  // The S5000's matrix peaks are unpublished: no matrix roof, only the memory one.
  const DeviceSpec s5000 = *FindDeviceSpec("MTT S5000", 0, 0);
  EXPECT_EQ(s5000.MatrixPeak("c10::BFloat16"), 0);
  EXPECT_GT(s5000.memory_tbps, 0);
}

TEST(DeviceSpecs, MatrixPeakFollowsTheDtype) {
  const DeviceSpec h100 = *FindDeviceSpec("NVIDIA H100 80GB HBM3", 132, 0);
  EXPECT_EQ(h100.MatrixPeak("c10::BFloat16"), h100.bf16);
  EXPECT_EQ(h100.MatrixPeak("c10::Half"), h100.fp16);
  EXPECT_EQ(h100.MatrixPeak("float"), h100.fp32);  // PyTorch's default: no TF32 for matmuls
  EXPECT_EQ(h100.MatrixPeak("c10::Float8_e4m3fn"), h100.fp8);
  EXPECT_EQ(h100.MatrixPeak("bool"), 0);
  EXPECT_EQ(h100.MatrixPeak("tf32"), h100.tf32);  // a kernel named for TF32
  for (const DeviceSpec& d : KnownDevices()) {
    EXPECT_GT(d.memory_tbps, 0) << d.name;
    EXPECT_FALSE(d.source.empty()) << d.name;
    // Lower precisions never have a lower published peak than higher ones.
    if (d.bf16 > 0 && d.tf32 > 0) EXPECT_GE(d.bf16, d.tf32) << d.name;
    if (d.fp8 > 0) EXPECT_GE(d.fp8, d.bf16) << d.name;
  }
}

TEST(DeviceSpecs, ASpecFileIsCheckedFieldByField) {
  auto ok = ParseDeviceSpec(R"({"name": "Ascend 910B", "fp16": 280, "memory_tbps": 1.6, "source": "vendor"})", "s.json");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->MatrixPeak("c10::Half"), 280);
  EXPECT_EQ(ok->matched_by, "--device-spec s.json");
  for (const char* bad : {R"({"fp16": 1, "memory_tbps": 1})", R"({"name": "x", "fp16": -1, "memory_tbps": 1})",
                          R"({"name": "x", "fp16": 1})", R"({"name": "x", "memory_tbps": 1})",
                          R"({"name": "x", "fp16": "big", "memory_tbps": 1})", "[]", "{"}) {
    EXPECT_FALSE(ParseDeviceSpec(bad, "s.json").ok()) << bad;
  }
  EXPECT_FALSE(LoadDeviceSpec("/nonexistent.json").ok());
  // Each says what is wrong: a number past a double once read as "not a JSON object", and a
  // value nested deep is quoted short.
  EXPECT_EQ(ParseDeviceSpec(R"({"name": "x", "fp32": 1, "memory_tbps": 1e400})", "s.json").status().message(),
            "s.json: not valid JSON (a syntax error, or a number beyond a double's range)");
  EXPECT_EQ(ParseDeviceSpec("[]", "s.json").status().message(), "s.json: not a JSON object");
  const std::string deep = R"({"name": "x", "memory_tbps": 1, "fp32": )" + std::string(100000, '[') +
                           std::string(100000, ']') + "}";
  EXPECT_EQ(ParseDeviceSpec(deep, "s.json").status().message(),
            "s.json: 'fp32' must be a number from 0 to 1e6 (TFLOP/s, TB/s or GB/s), got [[[[...]]]]");
}

}  // namespace
}  // namespace tierscope
