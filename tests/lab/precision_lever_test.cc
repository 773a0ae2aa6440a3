// The precision step's verdict: the device's candidate is the lever only where it passed
// validation and ran at least kMinLeverGain x batch-fp32; else another lower precision that
// did, or none, saying what each candidate ran.
#include "lab/precision_lever.h"

#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <set>

namespace tierscope {
namespace {

struct Host {
  std::map<std::string, double> sps = {{"batch-fp32", 500}};
  std::set<std::string> failed;  // modes outside their tolerance of FP32
};

LeverInputs Inputs(const nlohmann::json& peaks, const Host& h, const std::string& device = "cpu",
                   const std::string& engine = "native", bool bf16_arithmetic = false) {
  LeverInputs in;
  in.engine = engine;
  in.device = device;
  in.peaks = peaks;
  in.bf16_arithmetic = bf16_arithmetic;
  in.modes = {"serial-fp32", "batch-fp32", "batch-fp16", "batch-bf16", "batch-int8"};
  in.valid = [h](const std::string& m) { return !h.failed.count(m); };
  in.pooled = [h](const std::string& m) {
    auto it = h.sps.find(m);
    return it == h.sps.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
  };
  return in;
}

const nlohmann::json kZen1 = {{"fp32_gflops", 92.8}, {"int8_dot", "avx2"}, {"int8_gops", 86.0}};
const nlohmann::json kSapphire = {{"fp32_gflops", 420.0}, {"int8_dot", "amx"},       {"int8_gops", 3200.0},
                                  {"bf16_dot", true},     {"bf16_gflops", 1600.0}};

TEST(PrecisionLever, IntEightIsTheLeverWhereItsDotPays) {
  Host h;
  h.sps = {{"batch-fp32", 500}, {"batch-fp16", 495}, {"batch-bf16", 497}, {"batch-int8", 1200}};
  const PrecisionLever l = ChoosePrecisionLever(Inputs(kZen1, h));
  EXPECT_EQ(l.mode, "batch-int8");
  EXPECT_NE(l.why.find("INT8 runs on avx2"), std::string::npos) << l.why;
  EXPECT_EQ(l.why.find("measured"), std::string::npos) << l.why;  // one candidate: the diagnosis's ratio
  EXPECT_EQ(l.diagnosis.rfind("Precision: the lever for this device is batch-int8, because it is a CPU", 0), 0u)
      << l.diagnosis;
}

TEST(PrecisionLever, NoLeverWhereTheCandidateRanSlowerThanFp32) {
  Host h;  // a Zen 1: its AVX2 INT8 dot is 0.93x the FP32 FMA peak
  h.sps = {{"batch-fp32", 524}, {"batch-fp16", 518}, {"batch-bf16", 519}, {"batch-int8", 500}};
  const PrecisionLever l = ChoosePrecisionLever(Inputs(kZen1, h));
  EXPECT_EQ(l.mode, "batch-fp32");
  EXPECT_EQ(l.why.rfind("none pays: ", 0), 0u) << l.why;
  // Every lower precision measured, then the rule, then why INT8 was the candidate.
  EXPECT_EQ(l.why.rfind("none pays: batch-int8 ran 0.954x batch-fp32, batch-fp16 ran 0.989x batch-fp32, "
                        "batch-bf16 ran 0.990x batch-fp32; a lever must pass validation and run at least 1.02x "
                        "batch-fp32; it was the candidate because this is a CPU: ", 0),
            0u) << l.why;
  EXPECT_EQ(l.diagnosis, "Precision: no lower precision pays here (" + l.why.substr(11) + ")");
  EXPECT_EQ(l.diagnosis.find("(("), std::string::npos);
}

TEST(PrecisionLever, AGainWithinNoiseIsNoLever) {
  Host h;
  h.sps = {{"batch-fp32", 500}, {"batch-fp16", 500}, {"batch-bf16", 500}, {"batch-int8", 505}};
  EXPECT_EQ(ChoosePrecisionLever(Inputs(kZen1, h)).mode, "batch-fp32");  // 1.01x
  h.sps["batch-int8"] = 510;  // 1.02x
  EXPECT_EQ(ChoosePrecisionLever(Inputs(kZen1, h)).mode, "batch-int8");
}

TEST(PrecisionLever, AFailedCandidateGivesWayToAnotherPrecisionThatPays) {
  Host h;
  h.sps = {{"batch-fp32", 500}, {"batch-fp16", 600}, {"batch-bf16", 550}, {"batch-int8", 1200}};
  h.failed = {"batch-int8"};
  const PrecisionLever l = ChoosePrecisionLever(Inputs(kZen1, h));
  EXPECT_EQ(l.mode, "batch-fp16");
  EXPECT_EQ(l.why.rfind("the fastest other lower precision to pass validation and run at least 1.02x batch-fp32 "
                        "(batch-fp16 ran 1.200x batch-fp32), where the device's candidate did not: batch-int8 "
                        "failed validation; it was the candidate because this is a CPU: ", 0),
            0u) << l.why;
  h.sps["batch-fp16"] = 490;
  h.sps["batch-bf16"] = 495;
  const PrecisionLever none = ChoosePrecisionLever(Inputs(kZen1, h));
  EXPECT_EQ(none.mode, "batch-fp32");
  EXPECT_NE(none.why.find("batch-int8 failed validation"), std::string::npos) << none.why;
}

TEST(PrecisionLever, WithBf16ArithmeticTheFasterOfIntEightAndBf16Wins) {
  Host h;
  h.sps = {{"batch-fp32", 2000}, {"batch-fp16", 1500}, {"batch-bf16", 3600}, {"batch-int8", 3300}};
  PrecisionLever l = ChoosePrecisionLever(Inputs(kSapphire, h, "cpu", "native", true));
  EXPECT_EQ(l.mode, "batch-bf16");
  EXPECT_NE(l.why.find("BF16 arithmetic (AVX512_BF16, 1600 GFLOP/s, 3.81x the FP32 FMA peak): the faster of the two "
                       "that pays (measured: batch-int8 ran 1.650x batch-fp32, batch-bf16 ran 1.800x batch-fp32)"),
            std::string::npos) << l.why;
  h.failed = {"batch-bf16"};
  EXPECT_EQ(ChoosePrecisionLever(Inputs(kSapphire, h, "cpu", "native", true)).mode, "batch-int8");
  // BF16 forced onto the FP32 kernels: INT8 is the only candidate.
  h.failed.clear();
  l = ChoosePrecisionLever(Inputs(kSapphire, h, "cpu", "native", false));
  EXPECT_EQ(l.mode, "batch-int8");
}

TEST(PrecisionLever, AMissingOrZeroMeasurementNeverPays) {
  Host h;
  h.sps = {{"batch-fp32", 500}};  // the lower precisions unmeasured (NaN)
  PrecisionLever l = ChoosePrecisionLever(Inputs(kZen1, h));
  EXPECT_EQ(l.mode, "batch-fp32");
  EXPECT_NE(l.why.find("batch-int8 was not measured"), std::string::npos) << l.why;
  h.sps = {{"batch-fp32", 0}, {"batch-int8", 100}};  // an FP32 figure of 0: every ratio infinite
  l = ChoosePrecisionLever(Inputs(kZen1, h));
  EXPECT_EQ(l.mode, "batch-fp32");
}

TEST(PrecisionLever, AGpuWeighsFp16OnItsTensorCores) {
  Host h;
  h.sps = {{"batch-fp32", 1000}, {"batch-fp16", 3000}, {"batch-bf16", 2900}};
  const nlohmann::json h100 = {{"fp32_gflops", 51000.0}, {"fp16_tensor_gflops", 600000.0}};
  PrecisionLever l = ChoosePrecisionLever(Inputs(h100, h, "cuda"));
  EXPECT_EQ(l.mode, "batch-fp16");
  EXPECT_NE(l.why.find("a GPU: FP16 runs on the tensor cores, calibrated at 600000 GFLOP/s, 11.76x the FP32 FMA peak"),
            std::string::npos) << l.why;
  h.failed = {"batch-fp16"};
  l = ChoosePrecisionLever(Inputs(h100, h, "cuda"));
  EXPECT_EQ(l.mode, "batch-bf16");  // the candidate failed; BF16 paid
}

TEST(PrecisionLever, ThroughPytorchTheFastestPayingPrecisionOrNone) {
  Host h;
  h.sps = {{"batch-fp32", 100}, {"batch-fp16", 40}, {"batch-bf16", 180}, {"batch-int8", 150}};
  PrecisionLever l = ChoosePrecisionLever(Inputs(kSapphire, h, "cpu", "torch"));
  EXPECT_EQ(l.mode, "batch-bf16");
  EXPECT_EQ(l.why.rfind("PyTorch's fastest lower precision that passed validation on this CPU (measured: "
                        "batch-fp16 ran 0.400x batch-fp32, batch-bf16 ran 1.800x", 0), 0u) << l.why;
  h.sps = {{"batch-fp32", 100}, {"batch-fp16", 40}, {"batch-bf16", 90}, {"batch-int8", 101}};
  l = ChoosePrecisionLever(Inputs(kSapphire, h, "cpu", "torch"));
  EXPECT_EQ(l.mode, "batch-fp32");
  EXPECT_EQ(l.why.rfind("none pays: ", 0), 0u) << l.why;
  EXPECT_EQ(l.why, "none pays: batch-fp16 ran 0.400x batch-fp32, batch-bf16 ran 0.900x batch-fp32, batch-int8 ran "
                   "1.010x batch-fp32; a lever must pass validation and run at least 1.02x batch-fp32");
}

}  // namespace
}  // namespace tierscope
