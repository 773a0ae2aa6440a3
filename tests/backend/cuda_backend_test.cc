// The CUDA backend against the CPU backend (the oracle): the whole encoder on the
// built-in model in FP32 (max abs <= 1e-3), FP16 and BF16 (cosine >= 0.9999 against CPU
// FP32), with padded masks and token types; device selection errors; tier 3 (replays,
// the device's peaks) and tier 2 (CUPTI kernels, synchronisations) on the GPU. Tests that
// need a GPU skip cleanly where there is none (or where the build has no CUDA backend).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "inspect/sections.h"
#include "workload/bench.h"
#include "inspect/kernel_run.h"
#include "test_util.h"
#include "tierscope/engine.h"

namespace tierscope {

// Readable parameters in ctest's listing (found by argument-dependent lookup on DType).
[[maybe_unused]] static void PrintTo(DType t, std::ostream* os) { *os << DTypeName(t); }

namespace {

using testing::Cosine;

// Whether a CUDA device can be used. In a build with the plugin, anything but a missing
// device (the plugin missing, from another build, or its libraries absent) fails the test.
bool GpuPresent() {
  if (!HaveGpuBackend()) return false;
  auto b = CreateBackend(GpuKind(), 0);
  if (b.ok()) return true;
  EXPECT_EQ(b.status().message().find(std::string("no ") + GpuKind() + " device"), 0u)
      << "the " << GpuKind() << " plugin could not be used: " << b.status().ToString();
  return false;
}

TEST(DeviceSelection, UnknownDeviceNamesAreInvalidArguments) {
  auto b = CreateBackend("gpu", 1);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(b.status().message().find("cpu, cuda or cuda:N"), std::string::npos);
  for (const char* bad : {"cuda:x", "cuda:", "cuda:-1"}) {
    auto c = CreateBackend(bad, 1);
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_TRUE(CreateBackend("cpu", 1).ok());
}

TEST(DeviceSelection, CudaWithoutADeviceOrBackendIsAClearError) {
  if (GpuPresent()) GTEST_SKIP() << "a GPU is present";
  auto b = CreateBackend(std::string(GpuKind()) + ":0", 1);
  ASSERT_FALSE(b.ok());
  if (HaveGpuBackend()) {
    EXPECT_EQ(b.status().code(), StatusCode::kFailedPrecondition) << b.status().message();
    EXPECT_NE(b.status().message().find(std::string("no ") + GpuKind() + " device"), std::string::npos);
  } else {
    EXPECT_EQ(b.status().code(), StatusCode::kUnimplemented);
    EXPECT_NE(b.status().message().find("built without it"), std::string::npos);
  }
}

TEST(CudaBackend, ReportsDeviceProperties) {
  if (!GpuPresent()) GTEST_SKIP() << "no CUDA device";
  auto b = CreateBackend("cuda:0", 0);
  ASSERT_TRUE(b.ok()) << b.status().message();
  const DeviceProps& p = (*b)->props();
  EXPECT_EQ(p.kind, "cuda");
  EXPECT_GT(p.compute_units, 0);
  EXPECT_GT(p.total_memory, 0);
  EXPECT_GT(p.max_threads_per_unit, 0);
  EXPECT_EQ(p.arch.rfind("sm_", 0), 0u);
}

BatchInput PaddedBatch(const BertConfig& c) {
  BatchInput in;
  in.batch = 3;
  in.seq_len = 37;
  for (int64_t b = 0; b < in.batch; ++b) {
    const int64_t len = in.seq_len - 9 * b;  // right padding of 0, 9, 18
    for (int64_t s = 0; s < in.seq_len; ++s) {
      in.input_ids.push_back(s == 0 ? 101 : s < len ? 1000 + (b * 131 + s * 17) % (c.vocab_size - 1000) : 0);
      in.attention_mask.push_back(s < len ? 1 : 0);
      in.token_type_ids.push_back(s >= len / 2 && s < len ? 1 : 0);
    }
  }
  return in;
}

class CudaMatchesCpu : public ::testing::TestWithParam<DType> {};

TEST_P(CudaMatchesCpu, EncoderOutputsMatchTheCpuBackend) {
  if (!GpuPresent()) GTEST_SKIP() << "no CUDA device";
  auto dir = EnsureDefaultModel();
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  EngineOptions cpu_o;
  cpu_o.threads = 2;
  auto cpu = BertEngine::Load(*dir, cpu_o);
  ASSERT_TRUE(cpu.ok()) << cpu.status().message();
  EngineOptions gpu_o;
  gpu_o.device = "cuda:0";
  gpu_o.dtype = GetParam();
  auto gpu = BertEngine::Load(*dir, gpu_o);
  ASSERT_TRUE(gpu.ok()) << gpu.status().message();
  const BatchInput in = PaddedBatch((*cpu)->config());
  ForwardOptions fo;
  fo.pooler = true;
  auto ref = (*cpu)->Forward(in, fo);
  auto got = (*gpu)->Forward(in, fo);
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got->last_hidden_state.size(), ref->last_hidden_state.size());
  if (GetParam() == DType::kF32) {
    float max_abs = 0;
    for (size_t i = 0; i < ref->last_hidden_state.size(); ++i) {
      max_abs = std::max(max_abs, std::fabs(ref->last_hidden_state[i] - got->last_hidden_state[i]));
    }
    EXPECT_LE(max_abs, 1e-3f);
  } else {
    EXPECT_GE(Cosine(ref->last_hidden_state, got->last_hidden_state), 0.9999);
  }
  EXPECT_GE(Cosine(ref->pooler_output, got->pooler_output), 0.9999);
}

// A small workload on the GPU: one unit of batch 4 x seq 32, no warmup.
BenchOptions SmallGpuBench() {
  BenchOptions bench;
  bench.device = "cuda:0";
  bench.batch_size = 4;
  bench.seq_len = 32;
  bench.warmup = 0;
  bench.iterations = 1;
  return bench;
}

// Tier 3 on the GPU: replaying every GEMM launch leaves the workload's output as one
// run leaves it, and the report counts SMs and names the kernel the device ran.
TEST(CudaTier3, ReplaysKeepTheOutputAndReportTheDevicesKernel) {
  if (!GpuPresent()) GTEST_SKIP() << "no CUDA device";
  testing::TempDir cache;
  setenv("TIERSCOPE_CACHE_DIR", cache.path().c_str(), 1);
  const BenchOptions bench = SmallGpuBench();
  auto plain = RunBench(bench);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  KernelCommandOptions k;
  k.bench = bench;
  k.inspector.filter = {"regex:gemm", 0, 100};
  k.inspector.passes = 3;
  auto r = RunKernelCommand(k);
  unsetenv("TIERSCOPE_CACHE_DIR");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->json["workload"]["checksum"].get<double>(), plain->result.checksum);
  ASSERT_FALSE(r->reports.empty());
  const KernelEvidence& e = r->reports[0].evidence;
  EXPECT_EQ(e.unit_name, "SMs");
  auto be = CreateBackend("cuda:0", 0);
  ASSERT_TRUE(be.ok());
  EXPECT_EQ(e.units, (*be)->props().compute_units);
  EXPECT_EQ(e.passes, 3);
  ASSERT_TRUE(e.duration_ns.has_value());
  EXPECT_GT(*e.duration_ns, 0);
  if (e.source.find("CUDA-event") == std::string::npos) {  // CUPTI was available
    EXPECT_FALSE(e.device_kernel.empty());
    EXPECT_TRUE(e.registers.has_value());
    EXPECT_TRUE(e.theoretical_occupancy.has_value());
  }
  EXPECT_GT(r->json["machine"]["fp32_gflops"].get<double>(), 0);
}

// The device's peaks, measured by its own kernels: positive, finite, the tensor cores
// above the FP32 pipe (state, not speed: speeds live in bench/gpu/check.sh).
TEST(CudaTier3, DevicePeaksArePlausible) {
  if (!GpuPresent()) GTEST_SKIP() << "no CUDA device";
  auto be = CreateBackend("cuda:0", 0);
  ASSERT_TRUE(be.ok());
  auto peaks = (*be)->MeasurePeaks();
  ASSERT_TRUE(peaks.ok()) << peaks.status().ToString();
  EXPECT_GT(peaks->fp32_flops, 0);
  EXPECT_TRUE(std::isfinite(peaks->fp32_flops));
  EXPECT_GT(peaks->bf16_tensor_flops, peaks->fp32_flops);
  EXPECT_GT(peaks->fp16_tensor_flops, peaks->fp32_flops);
  EXPECT_GT(peaks->mem_bw, 0);
  EXPECT_TRUE(std::isfinite(peaks->mem_bw));
  EXPECT_TRUE((*be)->FlushCaches().ok());
}

// Tier 2 on the GPU: kernels carry the device's kernel name and grid (CUPTI), and the
// host's waits are traced as synchronisations.
TEST(CudaTier2, ProfiledTraceHasDeviceKernelsAndSynchronisations) {
  if (!GpuPresent()) GTEST_SKIP() << "no CUDA device";
  testing::TempDir dir;
  BenchOptions bench = SmallGpuBench();
  bench.mode = "serial-fp32";
  bench.warmup = 1;
  bench.profile = true;
  bench.trace_path = dir.file("t.json");
  auto r = RunBench(bench);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto j = nlohmann::json::parse(testing::ReadBytes(dir.file("t.json")));
  int kernels = 0, named = 0, syncs = 0;
  for (const auto& e : j["traceEvents"]) {
    const std::string cat = e.value("cat", "");
    if (cat == "kernel") {
      ++kernels;
      if (e["args"].contains("device_kernel")) ++named;
    }
    if (cat == "cuda_sync") ++syncs;
  }
  EXPECT_GT(kernels, 0);
  EXPECT_GE(syncs, 1);
  std::printf("traced %d kernels, %d with the device's kernel name, %d synchronisations\n", kernels,
              named, syncs);
}

INSTANTIATE_TEST_SUITE_P(Precisions, CudaMatchesCpu,
                         ::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(DTypeName(info.param)); });

}  // namespace
}  // namespace tierscope
