// Calibrated peaks as the roofline's device spec: each pipe in its place, TFLOP/s and TB/s.
#include "inspect/calibrated_spec.h"

#include <gtest/gtest.h>

namespace tierscope {
namespace {

TEST(CalibratedSpec, EachMeasuredPeakBecomesItsDtypesRoof) {
  MachinePeaks p;
  p.kind = "cpu";
  p.cpu = "Test CPU";
  p.isa = "avx512f";
  p.threads = 2;
  p.fp32_flops = 200e9;
  p.bf16_dot = true;
  p.bf16_flops = 400e9;
  p.int8_ops = 800e9;
  p.mem_bw = 30e9;
  const DeviceSpec d = CalibratedDeviceSpec(p);
  EXPECT_EQ(d.MatrixPeak("float"), 0.2);
  EXPECT_EQ(d.MatrixPeak("c10::BFloat16"), 0.4);
  EXPECT_EQ(d.MatrixPeak("signed char"), 0.8);
  EXPECT_EQ(d.fp32_vector, 0.2);
  EXPECT_EQ(d.memory_tbps, 0.03);
  EXPECT_NE(d.source.find("calibration"), std::string::npos);
  // No BF16 dot instruction: BF16 runs as FP32, and its roof is the FP32 one.
  p.bf16_dot = false;
  EXPECT_EQ(CalibratedDeviceSpec(p).MatrixPeak("c10::BFloat16"), 0.2);
}

}  // namespace
}  // namespace tierscope
