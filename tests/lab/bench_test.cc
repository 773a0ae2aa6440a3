// Bench option validation and the input generator.
#include "lab/bench.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace tierscope {
namespace {

using testing::Contains;

TEST(BenchTest, ModesMapToSerialOrBatchAndDtype) {
  EXPECT_TRUE(ParseBenchMode("serial-fp32")->serial);
  EXPECT_FALSE(ParseBenchMode("batch-fp32")->serial);
  EXPECT_EQ(ParseBenchMode("batch-fp16")->dtype, DType::kF16);
  EXPECT_EQ(ParseBenchMode("batch-bf16")->dtype, DType::kBF16);
  auto bad = ParseBenchMode("batch-int8");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(Contains(bad.status().message(), "serial-fp32, batch-fp32, batch-fp16, batch-bf16"));
}

TEST(BenchTest, BadOptionValuesAreInvalidArguments) {
  BenchOptions o;
  o.batch_size = 0;
  EXPECT_TRUE(Contains(ValidateBenchOptions(o).message(), "--batch-size"));
  o = BenchOptions();
  o.iterations = 0;
  EXPECT_TRUE(Contains(ValidateBenchOptions(o).message(), "--iterations"));
  o = BenchOptions();
  o.model_dir = "/nonexistent/model";
  EXPECT_EQ(ValidateBenchOptions(o).code(), StatusCode::kInvalidArgument);
  o = BenchOptions();
  o.pre_delay_s = -1;
  EXPECT_FALSE(ValidateBenchOptions(o).ok());
  EXPECT_TRUE(ValidateBenchOptions(BenchOptions()).ok());
}

TEST(BenchTest, InputIdsAreSeededAndInVocabularyRange) {
  auto a = BenchInputIds(2026, 4, 128, 30522);
  auto b = BenchInputIds(2026, 4, 128, 30522);
  auto c = BenchInputIds(2027, 4, 128, 30522);
  ASSERT_EQ(a.size(), 512u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  int64_t lo = a[0], hi = a[0];
  for (int64_t id : a) {
    lo = std::min(lo, id);
    hi = std::max(hi, id);
  }
  EXPECT_GE(lo, 100);
  EXPECT_LT(hi, 30522);
  EXPECT_GT(hi - lo, 20000);  // spread over the range, not stuck
}

TEST(BenchTest, ResultLineHasSortedKeys) {
  nlohmann::json r;
  r["zeta"] = 1;
  r["alpha"] = 2;
  EXPECT_EQ(FormatResultLine(r), "RESULT_JSON={\"alpha\":2,\"zeta\":1}");
}

}  // namespace
}  // namespace tierscope
