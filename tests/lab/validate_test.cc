// Output comparison in double, the per-precision tolerances, and a real FP16/BF16 run.
#include "lab/validate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <limits>

#include "backend/cpu/micro_kernel_int8.h"
#include "test_util.h"

namespace tierscope {
namespace {

TEST(Validate, IdenticalOutputsAreCosineOneWithoutError) {
  const std::vector<float> a = {1, -2, 3, 0.5f};
  const OutputDiff d = CompareOutputs(a, a);
  EXPECT_DOUBLE_EQ(d.cosine, 1.0);
  EXPECT_EQ(d.max_abs, 0);
  EXPECT_EQ(d.mean_abs, 0);
}

TEST(Validate, ErrorsAndCosineMatchHandComputedValues) {
  const OutputDiff d = CompareOutputs({1, 0, 0, 0}, {1, 1, 0, 0});
  EXPECT_NEAR(d.cosine, 1 / std::sqrt(2.0), 1e-15);
  EXPECT_DOUBLE_EQ(d.max_abs, 1);
  EXPECT_DOUBLE_EQ(d.mean_abs, 0.25);
}

TEST(Validate, ANonFiniteValueFailsWhereverItIsAndIsCounted) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (size_t at = 0; at < 9; ++at) {  // every lane of an 8-wide vector and the tail
    std::vector<float> ref(9, 1.0f), out(9, 1.0f);
    out[at] = nan;
    const OutputDiff d = CompareOutputs(ref, out);
    EXPECT_EQ(d.nonfinite_other, 1) << at;
    EXPECT_EQ(d.nonfinite_reference, 0) << at;
    EXPECT_FALSE(CheckPrecision("bf16", d).pass) << at;
  }
  std::vector<float> ref(4, 1.0f), out(4, 1.0f);
  ref[2] = inf;  // a broken reference fails too
  const OutputDiff d = CompareOutputs(ref, out);
  EXPECT_EQ(d.nonfinite_reference, 1);
  EXPECT_FALSE(CheckPrecision("fp16", d).pass);
}

TEST(Validate, BrokenPrecisionsFailTheirTolerance) {
  OutputDiff good{0.9999998, 0.0005, 0.008};
  EXPECT_TRUE(CheckPrecision("fp16", good).pass);
  OutputDiff drift{0.9995, 0.01, 0.05};
  EXPECT_FALSE(CheckPrecision("fp16", drift).pass);
  EXPECT_TRUE(CheckPrecision("bf16", drift).pass);
  OutputDiff spike{0.99999, 0.001, 2.0};
  EXPECT_FALSE(CheckPrecision("bf16", spike).pass);
  // INT8: the cosine bar (0.999) and a max abs error of 0.5.
  EXPECT_TRUE(CheckPrecision("int8", drift).pass);
  EXPECT_FALSE(CheckPrecision("int8", OutputDiff{0.998, 0.01, 0.05}).pass);
  EXPECT_FALSE(CheckPrecision("int8", spike).pass);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(CheckPrecision("fp16", CompareOutputs({1, 2}, {1, nan})).pass);
}

class ValidateRunTest : public testing::FreshCacheTest {};

TEST_F(ValidateRunTest, ReducedPrecisionsStayWithinTolerance) {
  ValidateOptions o;
  o.batch_size = 4;
  o.seq_len = 32;
  o.threads = 2;
  auto r = RunValidation(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->checks.size(), 3u);  // fp16, bf16 and, on the CPU, int8
  EXPECT_TRUE(r->pass) << r->text;
  EXPECT_GT(r->checks[0].diff.cosine, r->checks[1].diff.cosine);  // FP16 keeps more bits
  EXPECT_GT(r->checks[1].diff.max_abs, 0);
  EXPECT_EQ(r->checks[2].dtype, "int8");
  EXPECT_GT(r->checks[2].diff.max_abs, 0);  // quantized: not FP32 again
  EXPECT_GE(r->checks[2].diff.cosine, 0.999);
  EXPECT_EQ(r->json["seed"], 2026);
  EXPECT_EQ(r->json["fp16"]["pass"], true);
  EXPECT_EQ(r->json["int8"]["pass"], true);
}

// `tierscope validate`'s INT8 check passes on every INT8 micro-kernel variant this CPU
// runs, each forced in turn (an AVX-512 host checks its AVX2 path too).
TEST_F(ValidateRunTest, Int8PassesOnEveryMicroKernelVariant) {
  ValidateOptions o;
  o.batch_size = 4;
  o.seq_len = 32;
  o.threads = 2;
  for (const Int8MicroKernels& v : AvailableInt8MicroKernels()) {
    ScopedInt8MicroKernels forced(v);
    auto r = RunValidation(o);
    ASSERT_TRUE(r.ok()) << v.isa << ": " << r.status().ToString();
    ASSERT_EQ(r->checks.size(), 3u);
    EXPECT_TRUE(r->checks[2].pass) << v.isa << ": " << r->text;
    EXPECT_GE(r->checks[2].diff.cosine, 0.999) << v.isa;
    std::cout << "validate int8 " << v.isa << ": cosine " << r->checks[2].diff.cosine << ", max abs "
              << r->checks[2].diff.max_abs << "\n";
  }
}

}  // namespace
}  // namespace tierscope
