// The kernel inspector: replays leave the workload's output bit-for-bit as a single run
// leaves it (in-place kernels included), launches are picked by exact name or regex
// after a skip, the launch geometry of the hottest GEMM follows the batch, the rule gives
// the study's answer when the grid has too few tasks, and bad requests say what is valid.
#include "inspect/kernel_inspector.h"

#include <gtest/gtest.h>

#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "inspect/calibration.h"
#include "lab/kernel.h"
#include "test_util.h"

namespace tierscope {
namespace {

using testing::Contains;

class KernelInspectorTest : public testing::FreshCacheTest {};

InspectorOptions Pick(const std::string& name, int64_t skip, int64_t count, int passes = 3) {
  InspectorOptions o;
  o.filter = {name, skip, count};
  o.passes = passes;
  o.flush_caches = false;
  return o;
}

std::unique_ptr<KernelInspector> Make(const InspectorOptions& o) {
  auto k = KernelInspector::Create(o);
  EXPECT_TRUE(k.ok()) << k.status().ToString();
  return k.ok() ? std::move(k).value() : nullptr;
}

TEST_F(KernelInspectorTest, ReplayOfAnInPlaceKernelLeavesOneRunsResult) {
  CpuBackend be(2);
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  auto inspector = Make(Pick("add_one_in_place", 0, 1, 5));
  be.SetLaunchHook(inspector.get());
  LaunchDesc desc;
  desc.kernel = "add_one_in_place";
  desc.grid = Dim3{10, 1, 1};
  desc.block = Dim3{100, 1, 1};
  desc.flops = 1000;
  desc.writes[0] = {x.data(), x.size() * sizeof(float)};
  ASSERT_TRUE(be.Launch(desc, [&](int64_t task, int) {
                 for (int64_t i = task * 100; i < (task + 1) * 100; ++i) x[static_cast<size_t>(i)] += 1;
               }).ok());
  be.SetLaunchHook(nullptr);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], static_cast<float>(i) + 1) << i;
  ASSERT_EQ(inspector->profiled().size(), 1u);
  EXPECT_EQ(inspector->profiled()[0].pass_ns.size(), 5u);
  int64_t tasks = 0;
  for (int64_t t : inspector->profiled()[0].worker_tasks) tasks += t;
  EXPECT_EQ(tasks, 10);
}

// One unit of the built-in model, no warmup, on 2 workers.
BenchOptions OneUnit(int64_t batch, int64_t seq_len) {
  BenchOptions o;
  o.batch_size = batch;
  o.seq_len = seq_len;
  o.warmup = 0;
  o.iterations = 1;
  o.threads = 2;
  return o;
}

TEST_F(KernelInspectorTest, ReplaysDoNotChangeTheWorkloadsOutput) {
  BenchOptions o = OneUnit(4, 32);
  auto plain = RunBench(o);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  auto every = Make(Pick("regex:.", 0, 1000, 2));  // every launch
  o.launch_hook = every.get();
  auto replayed = RunBench(o);
  ASSERT_TRUE(replayed.ok()) << replayed.status().ToString();
  EXPECT_EQ(plain->result["checksum"], replayed->result["checksum"]);
  EXPECT_EQ(static_cast<int64_t>(every->profiled().size()), every->launches());
  EXPECT_GT(every->launches(), 10);
}

TEST_F(KernelInspectorTest, SkipAndCountPickTheMatchingLaunchesInOrder) {
  BenchOptions o = OneUnit(2, 16);
  auto all = Make(Pick("regex:layer_norm", 0, 1000, 1));
  o.launch_hook = all.get();
  ASSERT_TRUE(RunBench(o).ok());
  ASSERT_GE(all->profiled().size(), 4u);
  auto some = Make(Pick("regex:layer_norm", 1, 2, 1));
  o.launch_hook = some.get();
  ASSERT_TRUE(RunBench(o).ok());
  ASSERT_EQ(some->profiled().size(), 2u);
  EXPECT_EQ(some->profiled()[0].id, all->profiled()[1].id);
  EXPECT_EQ(some->profiled()[1].id, all->profiled()[2].id);
  const std::string exact = all->profiled()[0].kernel;
  auto named = Make(Pick(exact, 0, 1000, 1));
  o.launch_hook = named.get();
  ASSERT_TRUE(RunBench(o).ok());
  for (const ProfiledLaunch& p : named->profiled()) EXPECT_EQ(p.kernel, exact);
}

KernelCommandOptions GemmCommand(const std::string& mode, int threads) {
  KernelCommandOptions k;
  k.bench.mode = mode;
  k.bench.batch_size = 64;
  k.bench.seq_len = 128;
  k.bench.warmup = 0;
  k.bench.iterations = 1;
  k.bench.threads = threads;
  // The attention output projection: N = hidden = 128, the narrowest GEMM.
  k.inspector = Pick("cpu_sgemm_nt_f32_48x64_bias", 1, 1, 3);
  return k;
}

TEST_F(KernelInspectorTest, SerialVsBatchedGemmGeometryAndTheRule) {
  // Eight workers stand in for a device wider than one serial launch's work, as the
  // study's 56-unit GPU was.
  auto serial = RunKernelCommand(GemmCommand("serial-fp32", 8));
  ASSERT_TRUE(serial.ok()) << serial.status().ToString();
  auto batched = RunKernelCommand(GemmCommand("batch-fp32", 8));
  ASSERT_TRUE(batched.ok()) << batched.status().ToString();
  const KernelReport& s = serial->reports.at(0);
  const KernelReport& b = batched->reports.at(0);
  EXPECT_EQ(s.evidence.grid->count(), 2 * 3);     // 2 column blocks x ceil(128 / 48)
  EXPECT_EQ(b.evidence.grid->count(), 2 * 171);   // 2 x ceil(8192 / 48)
  EXPECT_EQ(s.evidence.units, 8);
  EXPECT_EQ(s.recommendation.checks[0].ok, false);
  EXPECT_TRUE(Contains(s.recommendation.verdict, "higher tier"));
  EXPECT_EQ(b.recommendation.checks[0].ok, true);
  EXPECT_EQ(s.evidence.passes, 3);
  EXPECT_GT(*s.evidence.duration_ns, 0);
  EXPECT_TRUE(Contains(serial->text, "Section: Launch Statistics"));
  EXPECT_EQ(serial->json["reports"][0]["grid"], nlohmann::json({2, 3, 1}));
  EXPECT_GT(serial->json["machine"]["fp32_gflops"].get<double>(), 0);
}

TEST_F(KernelInspectorTest, BadRequestsSayWhatIsValid) {
  KernelCommandOptions k = GemmCommand("batch-fp32", 2);
  k.bench.batch_size = 2;
  k.bench.seq_len = 16;
  k.inspector.filter.name = "cpu_sgemm_nope";
  auto none = RunKernelCommand(k);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(none.status().message(), "cpu_sgemm_nt_f32_48x64_bias_gelu"));
  k.inspector.filter.name = "cpu_sgemm_nt_f32_48x64_bias";
  k.inspector.filter.count = 0;
  EXPECT_TRUE(Contains(RunKernelCommand(k).status().message(), "--launch-count must be at least 1"));
  k.inspector.filter.count = 1;
  k.inspector.filter.skip = 1000;
  EXPECT_TRUE(Contains(RunKernelCommand(k).status().message(), "skipped all of them"));
  k.inspector.filter.skip = 0;
  k.sections = "SpeedOfLight,Roofline";
  EXPECT_TRUE(Contains(RunKernelCommand(k).status().message(), "LaunchStats, SpeedOfLight"));
  k.sections = "";
  k.inspector.filter.name = "regex:([";
  EXPECT_TRUE(Contains(RunKernelCommand(k).status().message(), "not a valid regular expression"));
}

TEST_F(KernelInspectorTest, CalibrationIsCachedPerMachineAndPlausible) {
  auto first = LoadOrMeasurePeaks(1, false);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->from_cache);
  // Wide bands: any machine that runs this test, loaded or not.
  EXPECT_GT(first->fp32_flops_1t, 1e9);
  EXPECT_LT(first->fp32_flops_1t, 1e13);
  EXPECT_GT(first->mem_bw, 1e8);
  EXPECT_LT(first->mem_bw, 1e13);
  EXPECT_EQ(first->bf16_dot, first->bf16_flops > 0);
  auto second = LoadOrMeasurePeaks(1, false);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->from_cache);
  // The cache keeps GFLOP/s for people to read: x / 1e9 * 1e9 may be 1 ulp off.
  EXPECT_DOUBLE_EQ(second->fp32_flops, first->fp32_flops);
  // A corrupt cache is measured again, not trusted.
  testing::WriteBytes(second->cache_path, "{\"cpu\": 3");
  auto third = LoadOrMeasurePeaks(1, false);
  ASSERT_TRUE(third.ok());
  EXPECT_FALSE(third->from_cache);
}

}  // namespace
}  // namespace tierscope
