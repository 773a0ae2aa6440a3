// Bench option validation, the input generator, serial and batched outputs compared
// element by element, the order-sensitive checksum, workloads too large for memory, and
// a profiled run that fails midway.
#include "workload/bench.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <sys/resource.h>

#include "core/allocator.h"
#include "core/checksum.h"
#include "test_util.h"
#include "workload_util.h"

namespace tierscope {
namespace {

using testing::Contains;

TEST(BenchTest, ModesMapToSerialOrBatchAndDtype) {
  EXPECT_TRUE(ParseBenchMode("serial-fp32")->serial);
  EXPECT_FALSE(ParseBenchMode("batch-fp32")->serial);
  EXPECT_EQ(ParseBenchMode("batch-fp16")->dtype, DType::kF16);
  EXPECT_EQ(ParseBenchMode("batch-bf16")->dtype, DType::kBF16);
  EXPECT_EQ(ParseBenchMode("batch-int8")->dtype, DType::kI8);  // the run's precision
  EXPECT_FALSE(ParseBenchMode("batch-int8")->serial);
  auto bad = ParseBenchMode("batch-int4");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(Contains(bad.status().message(), "serial-fp32, batch-fp32, batch-fp16, batch-bf16, batch-int8"));
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

namespace tierscope {
namespace {

class BenchRunTest : public testing::FreshCacheTest {};

BenchOptions Small(const std::string& mode) {
  BenchOptions o = testing::SmallWorkload(mode, 3, 16);
  o.keep_output = true;
  return o;
}

TEST_F(BenchRunTest, SerialAndBatchedOutputsAgreeElementByElement) {
  auto serial = RunBench(Small("serial-fp32"));
  auto batched = RunBench(Small("batch-fp32"));
  ASSERT_TRUE(serial.ok()) << serial.status().ToString();
  ASSERT_TRUE(batched.ok()) << batched.status().ToString();
  ASSERT_EQ(serial->output.size(), 3u * 16 * 128);
  ASSERT_EQ(serial->output.size(), batched->output.size());
  for (size_t i = 0; i < serial->output.size(); ++i) {
    ASSERT_NEAR(serial->output[i], batched->output[i], 1e-5) << "element " << i << " (sample "
                                                             << i / (16 * 128) << ")";
  }
  EXPECT_NEAR(serial->result.checksum, batched->result.checksum, 1e-6);
}

TEST_F(BenchRunTest, TheChecksumSeesSamplesInAnotherOrder) {
  auto r = RunBench(Small("batch-fp32"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<float> out = r->output;
  const size_t sample = 16 * 128;
  EXPECT_DOUBLE_EQ(OrderSensitiveChecksum(out.data(), out.size()), r->result.checksum);
  std::swap_ranges(out.begin(), out.begin() + sample, out.begin() + 2 * sample);  // samples 0 and 2
  EXPECT_GT(std::fabs(OrderSensitiveChecksum(out.data(), out.size()) - r->result.checksum), 1e-6);
}

TEST_F(BenchRunTest, AWorkloadLargerThanMemoryIsRefusedBeforeAnythingIsAllocated) {
  BenchOptions o = Small("batch-fp32");
  o.batch_size = 100000000;
  o.seq_len = 128;
  auto r = RunBench(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(Contains(r.status().message(), "--batch-size 100000000 x --seq-len 128")) << r.status().message();
  EXPECT_TRUE(Contains(r.status().message(), "needs about")) << r.status().message();
  EXPECT_TRUE(Contains(r.status().message(), "available")) << r.status().message();
  o.mode = "serial-fp32";  // one sample at a time, but every input and the output are held
  EXPECT_EQ(RunBench(o).status().code(), StatusCode::kResourceExhausted);
  o.batch_size = int64_t{1} << 60;  // no size to speak of
  EXPECT_EQ(RunBench(o).status().code(), StatusCode::kInvalidArgument);
  o = Small("batch-fp32");
  o.threads = 1000000;
  EXPECT_TRUE(Contains(RunBench(o).status().message(), "--threads 1000000 is more than"));
}

// The warmup holds each unit's output while the next runs, as the timed loop does, so
// the timed units take every buffer from the allocator's cache: no page of theirs is
// faulted in on the clock (before the fix, the second timed unit's output was fresh
// memory: 4 MiB here, zeroed by the kernel while timed). Under ASan nothing is cached.
TEST_F(BenchRunTest, TimedUnitsFaultInNoFreshMemoryAfterTheWarmup) {
  if (kSanitizedAllocator) GTEST_SKIP() << "under a sanitizer the CPU backend caches nothing: every buffer is fresh";
  BenchOptions o = Small("batch-fp32");
  o.batch_size = 64;
  o.seq_len = 128;  // a 4 MiB output: large blocks, mapped afresh when not cached
  o.warmup = 2;
  o.iterations = 4;
  o.keep_output = false;
  long faults_at_first = -1, faults_at_last = -1;
  o.before_unit = [&](int64_t unit) {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    if (unit == 0) faults_at_first = u.ru_minflt + u.ru_majflt;
    if (unit == 3) faults_at_last = u.ru_minflt + u.ru_majflt;
    return OkStatus();
  };
  auto r = RunBench(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_GE(faults_at_first, 0);
  EXPECT_EQ(faults_at_last - faults_at_first, 0) << "page faults during timed units 0-2";
}

TEST_F(BenchRunTest, AProfiledRunThatFailsMidwayLetsGoOfItsProfiler) {
  // The run stops at its second unit with the profiler recording; every tensor the run
  // holds is then freed through the backend, which must no longer call the profiler
  // (under AddressSanitizer a dangling observer is a heap-use-after-free).
  BenchOptions o = Small("serial-fp32");
  o.profile = true;
  o.iterations = 3;
  o.before_unit = [](int64_t unit) {
    return unit == 1 ? Internal("stopped by the test at unit 1") : OkStatus();
  };
  auto r = RunBench(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "stopped by the test at unit 1");
  o.before_unit = nullptr;
  EXPECT_TRUE(RunBench(o).ok());  // nothing left behind
}

}  // namespace
}  // namespace tierscope
