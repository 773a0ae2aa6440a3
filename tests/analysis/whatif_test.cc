// What-if on built traces whose answer is known: each change re-times the step as its model
// says (README, "What-if"), the unchanged replay is the measured step, and a bad change is a
// one-line error.
#include "analysis/whatif.h"
#include "analysis/whatif_changes.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "analysis/critical_path.h"
#include "analysis/critical_path_graph.h"
#include "trace_builder.h"

namespace tierscope {
namespace {

StatusOr<WhatIfResult> RunWhatIf(const Trace& t, std::vector<std::string> changes, std::optional<DeviceSpec> spec = {}) {
  WhatIfOptions o;
  for (const std::string& c : changes) {
    StatusOr<WhatIfChange> parsed = ParseWhatIfChange(c);
    if (!parsed.ok()) return parsed.status();
    o.changes.push_back(*parsed);
  }
  o.device_spec = spec;
  const TraceIndex x = BuildIndex(t, AnalysisOptions{});
  return WhatIf(x, o);
}

WhatIfStep OnlyStep(const Trace& t, std::vector<std::string> changes, std::optional<DeviceSpec> spec = {}) {
  StatusOr<WhatIfResult> r = RunWhatIf(t, std::move(changes), spec);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok() || r->steps.size() != 1) {
    ADD_FAILURE() << "want one step";
    return {};
  }
  return r->steps[0];
}

// mm launches at 5 a kernel (100..1000); the host blocks in a stream sync from 20 until
// 1015, then add runs 1030..1080.
Trace GpuBound(const char* kernel = "gemm_kernel", const char* grid = nullptr) {
  Builder b;
  b.Unit("ProfilerStep#1", 0, 1100);
  b.Op("aten::mm", 0, 20, 1);
  b.Launch("cudaLaunchKernel", kernel, 5, 5, 100, 900, 1, grid);
  b.Launch("cudaStreamSynchronize", "Stream Sync", 20, 1000, 1015, 5, 0, nullptr, EventKind::kSync);
  b.Op("aten::add", 1030, 50, 2);
  return std::move(b.trace());
}

// The engine's kernels name their operands' dtype: INT8 GEMMs whatever they write, FP32
// rows on the BF16 dot kernels as FP32, BF16 and FP16 ones as such.
TEST(WhatIf, KernelDtypeReadsTheEnginesKernelNames) {
  EXPECT_EQ(KernelDtype("cpu_igemm_nt_u8s8_48x64_bias"), "signed char");
  EXPECT_EQ(KernelDtype("cpu_igemm_nt_u8s8_48x64_bias_bf16out"), "signed char");
  EXPECT_EQ(KernelDtype("cpu_igemm_nt_u8s8_rows_bias_gelu_u8out"), "signed char");
  EXPECT_EQ(KernelDtype("cpu_attn_softmax_f32_bf16dot_q32"), "float");
  EXPECT_EQ(KernelDtype("cpu_attn_softmax_bf16dot_f32out_q32"), "c10::BFloat16");
  EXPECT_EQ(KernelDtype("cpu_bgemm_nt_bf16_8x48_bias"), "c10::BFloat16");
  EXPECT_EQ(KernelDtype("cpu_sgemm_nt_f32_48x96_bias"), "float");
  EXPECT_EQ(KernelDtype("cpu_attn_softmax_f16_q32"), "c10::Half");
  EXPECT_EQ(KernelDtype("cpu_layer_norm"), "");
}

TEST(WhatIf, ATraceWithNothingToRetimeIsAnErrorNotAnEmptyTable) {
  Trace empty;
  empty.source = "empty.json";
  StatusOr<WhatIfResult> r = RunWhatIf(empty, {"gemm=0.5"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "empty.json: nothing to re-time: no step with host ops, runtime calls or device work");
  Builder b;  // a step annotated, with nothing in it
  b.Unit("ProfilerStep#1", 0, 1000);
  b.trace().source = "idle.json";
  r = RunWhatIf(b.trace(), {"gemm=0.5"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("idle.json: nothing to re-time"), std::string::npos) << r.status().message();
  EXPECT_TRUE(RunWhatIf(GpuBound(), {"gemm=0.5"}).ok());
}

TEST(WhatIf, TheUnchangedReplayIsTheMeasuredStep) {
  const WhatIfStep s = OnlyStep(GpuBound(), {"cpu=1"});
  EXPECT_EQ(s.measured_ns, 1080);
  EXPECT_EQ(s.replay_ns, 1080);
  EXPECT_EQ(s.predicted_ns, 1080);
  EXPECT_DOUBLE_EQ(s.Factor(), 1.0);
}

TEST(WhatIf, AKernelOnThePathMadeFasterShortensTheStepByItsSaving) {
  const WhatIfStep s = OnlyStep(GpuBound(), {"gemm=0.5"});
  // The kernel 450 shorter; the sync returns 15 after it, add follows 15 later.
  EXPECT_EQ(s.predicted_ns, 1080 - 450);
  // A selector that names no kernel changes nothing.
  EXPECT_EQ(OnlyStep(GpuBound(), {"kernel:softmax=0.5"}).predicted_ns, 1080);
}

TEST(WhatIf, AKernelOffThePathChangesNothing) {
  // The host runs 0..2000; a kernel it launched at 10 runs 30..130 and nothing waits for it.
  Builder b;
  b.Unit("ProfilerStep#1", 0, 2000);
  b.Op("aten::loop", 0, 2000, 1);
  b.Launch("cudaLaunchKernel", "gemm_kernel", 10, 5, 30, 100, 1);
  const WhatIfStep s = OnlyStep(std::move(b.trace()), {"gemm=0.1"});
  EXPECT_EQ(s.replay_ns, 2000);
  EXPECT_EQ(s.predicted_ns, 2000);
}

TEST(WhatIf, HostOpsScaleAndTheGapsBetweenThemStay) {
  Builder b;
  b.Unit("ProfilerStep#1", 0, 1000);
  b.Op("aten::a", 0, 400, 1);
  b.Op("aten::b", 500, 300, 2);  // 100 of the host's own time between them
  EXPECT_EQ(OnlyStep(b.trace(), {"cpu=0.5"}).predicted_ns, 200 + 100 + 150);
  // batch=2: two samples per op, so half the ops and half the gaps.
  EXPECT_EQ(OnlyStep(b.trace(), {"batch=2"}).predicted_ns, 400);
}

TEST(WhatIf, WithoutHostSyncsTheHostRunsOnAndWaitsForNothing) {
  const WhatIfStep s = OnlyStep(GpuBound(), {"sync=off"});
  // The host: mm (0..20), the sync call's own time is nothing, add's 10 gap and 50: the kernel
  // (ending at 1000) now bounds the step.
  EXPECT_EQ(s.predicted_ns, 1000);
}

TEST(WhatIf, OverlappedCommunicationDelaysNothing) {
  const WhatIfStep s = OnlyStep(GpuBound("ncclDevKernel_AllReduce_Sum_f32_RING_LL"), {"comm=overlap"});
  // The collective takes no time: it still starts 95 after its launch (100), the sync call
  // returns 20 after it, and add follows 10 later.
  EXPECT_EQ(s.predicted_ns, 100 + 20 + 10 + 50);
  EXPECT_EQ(s.predicted_by_cause[static_cast<size_t>(PathCause::kGpuCommunication)], 0);
}

TEST(WhatIf, CheaperLaunchesShortenALaunchBoundStep) {
  // Ten kernels of 10, each launched (api 5) 100 apart and starting 40 after its launch: the
  // device idles between them, the host bounds the step.
  Builder b;
  b.Unit("ProfilerStep#1", 0, 2000);
  for (int i = 0; i < 10; ++i) b.Launch("cudaLaunchKernel", "tiny", 100 * i, 5, 100 * i + 40, 10, i + 1);
  const WhatIfStep today = OnlyStep(b.trace(), {"gemm=0.5"});
  EXPECT_EQ(today.replay_ns, 950);
  EXPECT_EQ(today.predicted_ns, 950);  // no GEMM: unchanged
  const WhatIfStep s = OnlyStep(b.trace(), {"launch=0"});
  // Each launch call at most 0 and its kernel 0 after it: the host's 95 between calls stay,
  // so the last launch is at 9 x 95, and its kernel runs 10.
  EXPECT_EQ(s.predicted_ns, 9 * 95 + 10);
  EXPECT_EQ(OnlyStep(b.trace(), {"tiny=0.5"}).predicted_ns, 945);  // only the last kernel's half counts
}

TEST(WhatIf, BatchMergesSamplesIntoWavesOverTheUnits) {
  // One kernel of one block on 56 units: 8 samples in one launch are 8 blocks, still one
  // wave, so 8 samples take one sample's kernel time: per sample, 1/8.
  const WhatIfStep s = OnlyStep(GpuBound("gemm_kernel", "[1, 1, 1]"), {"batch=8"});
  // Every host span, gap, launch delay and wait 1/8, and the kernel too: the step 1/8.
  EXPECT_NEAR(static_cast<double>(s.predicted_ns), 1080.0 / 8, 1);
  // A kernel that fills the units already gains nothing but the host's share: 112 blocks
  // on 56 units are 2 waves; 8x are 16 waves, 8x the time; per sample the same.
  const WhatIfStep full = OnlyStep(GpuBound("gemm_kernel", "[112, 1, 1]"), {"batch=8"});
  EXPECT_NEAR(static_cast<double>(full.predicted_ns), (1080.0 - 900) / 8 + 900, 1);
}

TEST(WhatIf, FewerUnitsRunMoreWaves) {
  // 4 blocks on 56 units are one wave; on one unit, four.
  const WhatIfStep s = OnlyStep(GpuBound("gemm_kernel", "[4, 1, 1]"), {"units=1"});
  EXPECT_EQ(s.predicted_ns, 1080 + 3 * 900);
}

// GpuBound's kernel as an FP32 GEMM of 9e5 FLOPs and 100 bytes: compute-bound, 900 ns at
// 1 TFLOP/s (OneTflopDevice), at the roof already.
Trace ComputeBoundGemm(const char* grid = nullptr) {
  Trace t = GpuBound("cpu_sgemm_nt_f32_48x96", grid);
  for (Event& e : t.events) {
    if (e.kind == EventKind::kKernel) e.v0 = 9e5, e.v1 = 100;
  }
  return t;
}

// A device of 1 TFLOP/s FP32 and 1 TB/s, no other peaks.
DeviceSpec OneTflopDevice() {
  DeviceSpec d;
  d.name = "test";
  d.fp32 = d.fp32_vector = 1;
  d.memory_tbps = 1;
  return d;
}

TEST(WhatIf, BatchIsNoFasterThanTheRoofOfItsWork) {
  // One block of a compute-bound GEMM (9e5 FLOPs, 900 ns at 1 TFLOP/s: at the roof already):
  // 8 samples fit one wave, but 8x the FLOPs take 8x at the peak, so per sample the same.
  const Trace t = ComputeBoundGemm("[1, 1, 1]");
  const DeviceSpec d = OneTflopDevice();
  EXPECT_NEAR(static_cast<double>(OnlyStep(t, {"batch=8"}, d).predicted_ns), (1080.0 - 900) / 8 + 900, 1);
}

TEST(WhatIf, PrecisionScalesEachKernelByItsRoofline) {
  // A compute-bound FP32 GEMM (9e5 FLOPs: 900 ns at 1 TFLOP/s, few bytes) on a device with
  // BF16 at 4x FP32: 225 ns in BF16.
  const Trace t = ComputeBoundGemm();
  DeviceSpec d = OneTflopDevice();
  d.bf16 = 4;
  EXPECT_EQ(OnlyStep(t, {"precision=bf16"}, d).predicted_ns, 1080 - 900 + 225);
  // A measured factor for the GEMMs (tier 3's) replaces the roofline's for them.
  EXPECT_EQ(OnlyStep(t, {"precision=bf16", "gemm=0.9"}, d).predicted_ns, 1080 - 90);
  // Without the device's peaks there is nothing to scale by: said, not guessed.
  const StatusOr<WhatIfResult> r = RunWhatIf(t, {"precision=bf16"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("needs the device's peaks"), std::string::npos) << r.status().message();
}

TEST(WhatIf, TheCpuEnginesBf16RunsAtTheSpecsBf16PeakAndFp16AtFp32s) {
  // tierscope's CPU engine computes BF16 in BF16 where the CPU has a BF16 dot (its calibrated
  // spec's bf16 figure: here 2x FP32) and widens FP16 to FP32: a compute-bound FP32 GEMM of
  // 900 ns takes 450 in BF16 and 900 in FP16.
  Trace t = ComputeBoundGemm();
  t.runtime = "cpu";
  t.device_name = "cpu: test (2 threads)";
  DeviceSpec d = OneTflopDevice();
  d.bf16 = 2;
  d.fp16 = 8;  // no FP16 arithmetic in the engine: never used for its kernels
  EXPECT_EQ(OnlyStep(t, {"precision=bf16"}, d).predicted_ns, 1080 - 900 + 450);
  EXPECT_EQ(OnlyStep(t, {"precision=fp16"}, d).predicted_ns, 1080);
}

TEST(WhatIf, TheEngineOpsWaitForTheirKernels) {
  // tierscope's CPU engine: linear (0..100) launches at 10 a kernel that runs 12..80, and
  // returns at 100. Halving the kernel shortens the op by 34; the op's 20 after the kernel stays.
  Builder b;
  b.trace().runtime = "cpu";
  b.trace().device_name = "cpu: test (2 threads)";
  b.Unit("batched_bert_forward", 0, 200);
  b.Op("aten::linear", 0, 100, 1);
  b.Launch("cudaLaunchKernel", "cpu_sgemm_nt_f32_48x96", 10, 1, 12, 68, 1);
  b.Op("aten::add", 110, 20, 2);
  AnalysisOptions ao;
  ao.unit = "batched_bert_forward";
  const TraceIndex x = BuildIndex(b.trace(), ao);
  WhatIfOptions o;
  o.changes.push_back(*ParseWhatIfChange("gemm=0.5"));
  const StatusOr<WhatIfResult> r = WhatIf(x, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->steps.size(), 1u);
  EXPECT_EQ(r->steps[0].replay_ns, 130);
  EXPECT_EQ(r->steps[0].predicted_ns, 130 - 34);
}

// PyTorch's default: no sync events. The host blocks in `blocking` 20..1020; the kernel
// `launch` made before it (100..1000) is the last to end while it ran.
Trace BlockedOnKernel(const char* launch, const char* blocking) {
  Builder b;
  b.Unit("ProfilerStep#1", 0, 1100);
  b.Op("aten::mm", 0, 20, 1);
  b.Launch(launch, "gemm_kernel", 5, 5, 100, 900, 1);
  b.Api(blocking, 20, 1000);
  b.Op("aten::add", 1030, 50, 2);
  return std::move(b.trace());
}

TEST(WhatIf, ABlockingCallWithNoRecordedSyncWaitsForTheKernelThatEndedWhileItRan) {
  // The call returns 20 after the kernel, however fast the kernel gets.
  const Trace t = BlockedOnKernel("cudaLaunchKernel", "cudaStreamSynchronize");
  const WhatIfStep s = OnlyStep(t, {"sync=off"});
  EXPECT_EQ(s.replay_ns, 1080);
  // Without the wait the host runs on (add at 20 + 10); the kernel ends at 1000.
  EXPECT_EQ(s.predicted_ns, 1000);
  // A faster kernel: the call returns at 550 + 20, add runs 580..630 (it read 1080, the wait
  // as measured, before the wait was tied to the kernel).
  EXPECT_EQ(OnlyStep(t, {"gemm=0.5"}).predicted_ns, 630);
  // Faster host code: the launch at 2.5, the kernel 97.5..997.5 (its launch delay kept),
  // the call's return after it not host work: 1017.5, then the gap 10 and add's 25.
  EXPECT_EQ(OnlyStep(t, {"cpu=0.5"}).predicted_ns, 1053);
  const StatusOr<WhatIfResult> r = RunWhatIf(t, {"gemm=0.5"}, std::nullopt);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(std::any_of(r->notes.begin(), r->notes.end(), [](const std::string& n) {
    return n.starts_with("1 blocking call(s) with no recorded sync");
  }));
  // A blocking call while the device is idle waited for nothing the trace shows: its time
  // as measured, and no note.
  Builder idle;
  idle.Unit("ProfilerStep#1", 0, 1100);
  idle.Op("aten::mm", 0, 20, 1);
  idle.Launch("cudaLaunchKernel", "gemm_kernel", 5, 5, 100, 100, 1);
  idle.Api("cudaStreamSynchronize", 300, 500);
  idle.Op("aten::add", 810, 50, 2);
  EXPECT_EQ(OnlyStep(idle.trace(), {"gemm=0.5"}).predicted_ns, 860);
}

TEST(WhatIf, AKernelQueuedBehindWorkFromBeforeTheStepKeepsItsWait) {
  // Two kernels launched in the step before hold stream 7 (20..3020, then 3022..3026): the
  // step's gemm, launched at 1005 behind the second, starts at 3030, and nothing in the
  // step's window explains its wait. The host blocks in cudaStreamSynchronize (no recorded
  // sync) until 10 after gemm's end.
  Builder b;
  b.Launch("cudaLaunchKernel", "prev_kernel", 10, 5, 20, 3000, 9);
  b.Launch("cudaLaunchKernel", "prev_kernel", 16, 5, 3022, 4, 9);
  b.Unit("ProfilerStep#1", 1000, 3200);
  b.Op("aten::mm", 1000, 20, 1);
  b.Launch("cudaLaunchKernel", "gemm_kernel", 1005, 5, 3030, 900, 1);
  b.Api("cudaStreamSynchronize", 1020, 2920);
  b.Op("aten::add", 4000, 50, 2);
  b.Launch("cudaLaunchKernel", "add_kernel", 4005, 5, 4015, 100, 2);
  // The replay is the step as measured (gemm once started 10 after its launch, the typical
  // delay, which took 2015 off the step).
  const WhatIfStep s = OnlyStep(b.trace(), {"gemm=0.5"});
  EXPECT_EQ(s.measured_ns, 4115 - 1000);
  EXPECT_EQ(s.replay_ns, s.measured_ns);
  // Halved, gemm ends at 3480 and the host's return, gap and add follow 450 earlier.
  EXPECT_EQ(s.predicted_ns, s.measured_ns - 450);
}

TEST(WhatIf, AnAscendEventRecordIsTheStreamsNotAWaitOfTheHost) {
  // torch_npu's EVENT_RECORD task (from aclrtRecordEvent) sits on stream 7 behind a long
  // kernel (100..5000); the host called it at 30 and went on. It was once read as the host
  // waiting for that kernel: the replay ran 4960 long.
  Builder b;
  b.Unit("ProfilerStep#1", 0, 5100);
  b.Op("aten::mm", 0, 20, 1);
  b.Launch("AscendCL@aclrtLaunchKernel", "long_kernel", 5, 5, 100, 4900, 1);
  b.Launch("AscendCL@aclrtRecordEvent", "EVENT_RECORD", 30, 10, 5000, 1, 0, nullptr, EventKind::kSync);
  b.Op("aten::add", 50, 50, 2);
  const WhatIfStep s = OnlyStep(b.trace(), {"kernel:long_kernel=0.5"});
  EXPECT_EQ(s.replay_ns, s.measured_ns);
  EXPECT_EQ(s.measured_ns, 5000);
  EXPECT_EQ(s.predicted_ns, 100 + 2450);
}

TEST(WhatIf, AnAscendStreamSynchronizeWaitsForTheKernelAsCudasDoes) {
  // As ABlockingCallWithNoRecordedSyncWaitsForTheKernelThatEndedWhileItRan, with CANN's
  // names: the call returns 20 after the halved kernel's end; a query never blocks.
  const Trace sync = BlockedOnKernel("AscendCL@aclrtLaunchKernel", "AscendCL@aclrtSynchronizeStreamWithTimeout");
  EXPECT_EQ(OnlyStep(sync, {"gemm=0.5"}).predicted_ns, 630);
  const Trace query = BlockedOnKernel("AscendCL@aclrtLaunchKernel", "AscendCL@aclrtQueryEventStatus");
  EXPECT_EQ(OnlyStep(query, {"gemm=0.5"}).predicted_ns, 1080);
}

TEST(WhatIf, ADeviceOnlyTraceIsRetimedInStreamOrderWithItsGaps) {
  // rocprofv3 without API tracing: kernels and nothing that launched them. gemm 0..1000,
  // a gap of 200, add 1200..1300 on stream 7; other 0..500 on stream 8. Once "nothing to
  // re-time".
  Builder b;
  b.DeviceOnly("gemm_kernel", 0, 1000);
  b.DeviceOnly("add_kernel", 1200, 100);
  b.DeviceOnly("other_kernel", 0, 500, 8);
  const StatusOr<WhatIfResult> r = RunWhatIf(b.trace(), {"gemm=0.5"});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->steps.size(), 1u);
  EXPECT_EQ(r->steps[0].measured_ns, 1300);
  EXPECT_EQ(r->steps[0].replay_ns, 1300);
  EXPECT_EQ(r->steps[0].predicted_ns, 1300 - 500);  // add follows gemm's new end by its gap
  EXPECT_TRUE(std::any_of(r->notes.begin(), r->notes.end(),
                          [](const std::string& n) { return n == kDeviceOnlyNote; }));
  const TraceIndex x = BuildIndex(b.trace(), AnalysisOptions{});
  const std::vector<CriticalPath> paths = AnalyzeCriticalPaths(x);
  ASSERT_EQ(paths.size(), 1u);
  EXPECT_EQ(paths[0].length_ns, 1300);  // gemm, the gap, add
  EXPECT_EQ(paths[0].by_cause[static_cast<size_t>(PathCause::kKernelGap)], 200);
  // Host work and no device work at all is not a device-only capture.
  Builder host;
  host.Unit("ProfilerStep#1", 0, 100);
  host.Op("aten::add", 0, 50, 1);
  const StatusOr<WhatIfResult> h = RunWhatIf(host.trace(), {"cpu=0.5"});
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_TRUE(std::none_of(h->notes.begin(), h->notes.end(), [](const std::string& n) { return n == kDeviceOnlyNote; }));
  EXPECT_FALSE(AnalyzeCriticalPaths(BuildIndex(host.trace(), AnalysisOptions{}))[0].device_only);
}

// Stream 7 runs k1..k3 (50..354 us, 2 us apart); stream 8 a collective 60..1000 us. The host
// calls cudaStreamWaitEvent (when `wait`), then launches gemm onto stream 7: it starts at
// 1003 us, 3 us after the collective's end, 649 us after k3's; cudaDeviceSynchronize returns
// at 1510 us.
Trace StreamWait(bool wait) {
  Builder b;
  b.Unit("ProfilerStep#1", 0, 1600'000);
  b.Op("aten::mm", 0, 46'000, 1);
  b.Launch("cudaLaunchKernel", "k1", 10'000, 1'000, 50'000, 100'000, 1);
  b.Launch("cudaLaunchKernel", "k2", 12'000, 1'000, 152'000, 100'000, 1);
  b.Launch("cudaLaunchKernel", "k3", 14'000, 1'000, 254'000, 100'000, 1);
  b.Launch("cudaLaunchKernel", "ncclDevKernel_AllReduce", 16'000, 1'000, 60'000, 940'000, 1, nullptr,
           EventKind::kKernel, 8);
  if (wait) b.Api("cudaStreamWaitEvent", 30'000, 2'000);
  b.Launch("cudaLaunchKernel", "gemm_kernel", 40'000, 5'000, 1003'000, 500'000, 1);
  b.Api("cudaDeviceSynchronize", 50'000, 1460'000);
  return std::move(b.trace());
}

TEST(WhatIf, AKernelLaunchedAfterAStreamWaitMovesWithTheWorkItWaitedFor) {
  const StatusOr<WhatIfResult> r = RunWhatIf(StreamWait(true), {"communication=0"});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->steps.size(), 1u);
  EXPECT_EQ(r->steps[0].replay_ns, r->steps[0].measured_ns);
  // Without the collective gemm follows k3 by the queued gap (2 us): 356..856 us, and the
  // sync returns 7 us after it.
  EXPECT_EQ(r->steps[0].predicted_ns, 863'000);
  EXPECT_TRUE(std::any_of(r->notes.begin(), r->notes.end(), [](const std::string& n) {
    return n.starts_with("1 kernel(s) launched after a StreamWaitEvent call");
  }));
  // No stream-wait call: nothing says gemm waited for stream 8, and its gap stays.
  const WhatIfStep unsaid = OnlyStep(StreamWait(false), {"communication=0"});
  EXPECT_EQ(unsaid.replay_ns, unsaid.measured_ns);
  EXPECT_EQ(unsaid.predicted_ns, 1510'000);
}

// An event recorded and waited for at 10 and 13 us, then an all-reduce launched at 17 us onto
// idle stream 13 that starts at 1015 us, for 300 us.
void WaitThenAllReduce(Builder& b) {
  b.Api("cudaEventRecord", 10'000, 2'000);
  b.Api("cudaStreamWaitEvent", 13'000, 2'000);
  b.Launch("cudaLaunchKernel", "ncclKernel_AllReduce_RING_LL_Sum_float", 17'000, 5'000, 1015'000, 300'000, 2,
           nullptr, EventKind::kKernel, 13);
}

// gemm on stream 7 (20..1000 us), cudaEventRecord and cudaStreamWaitEvent, then an
// all-reduce launched onto idle stream 13 starting 15 us after gemm's end; with `other`, an
// elementwise kernel on stream 20 launched after the wait call ends 3 us before it.
// cudaDeviceSynchronize returns 5 us after the all-reduce.
Trace CollectiveAfterGemm(bool other) {
  Builder b;
  b.Unit("ProfilerStep#1", 0, 2000'000);
  b.Op("aten::mm", 1'000, 8'000, 1);
  b.Launch("cudaLaunchKernel", "ampere_sgemm_128x64_nn", 2'000, 5'000, 20'000, 980'000, 1);
  b.Api("cudaEventRecord", 10'000, 2'000);
  b.Api("cudaStreamWaitEvent", 13'000, 2'000);
  b.Op("nccl:all_reduce", 16'000, 8'000, 2);
  b.Launch("cudaLaunchKernel", "ncclKernel_AllReduce_RING_LL_Sum_float", 17'000, 5'000, 1015'000, 300'000, 2,
           nullptr, EventKind::kKernel, 13);
  if (other) {
    b.Launch("cudaLaunchKernel", "elementwise_kernel", 25'000, 3'000, 30'000, 982'000, 3, nullptr,
             EventKind::kKernel, 20);
  }
  b.Api("cudaDeviceSynchronize", 40'000, 1280'000);
  return std::move(b.trace());
}

TEST(WhatIf, AKernelOnAnIdleStreamThatWaitedMovesEarlierAndOnlyWithWorkLaunchedBeforeTheWait) {
  for (bool other : {false, true}) {
    const Trace t = CollectiveAfterGemm(other);
    const WhatIfStep same = OnlyStep(t, {"cpu=1"});
    EXPECT_EQ(same.replay_ns, same.measured_ns) << other;
    // Halved, gemm ends at 510 us: the all-reduce follows 15 us later (its launch edge no
    // longer holds the wait: it once read Factor 1), the sync 5 us after it (after the
    // elementwise kernel's 1012 with it). Doubled, gemm ends at 1980 and the all-reduce
    // follows it, not the elementwise kernel launched after the wait call (it once did).
    EXPECT_EQ(OnlyStep(t, {"kernel:sgemm=0.5"}).predicted_ns, (other ? 1012'000 : 510'000 + 15'000 + 300'000) + 5'000 - 1'000)
        << other;
    EXPECT_EQ(OnlyStep(t, {"kernel:sgemm=2"}).predicted_ns, 1980'000 + 15'000 + 300'000 + 5'000 - 1'000) << other;
  }
}

TEST(WhatIf, TheTypicalLaunchDelayLeavesOutTheWaitsAndPlacesNoKernelEarly) {
  // gemm on stream 7 (52..1000 us), a stream wait, an all-reduce on stream 13 that waited
  // 998 us for it; on stream 9, k2 launched after k1 ended (at 50, started at 90: the launch
  // placed it) and k3 queued behind it. Taking the wait out of the typical launch delay once
  // started k2 at its launch + 27.5 us: the replay ran 12.5 us short.
  Builder b;
  b.Unit("ProfilerStep#1", 0, 3000'000);
  b.Op("aten::mm", 1'000, 8'000, 1);
  b.Launch("cudaLaunchKernel", "ampere_sgemm_128x64_nn", 2'000, 5'000, 52'000, 948'000, 1);
  WaitThenAllReduce(b);
  b.Launch("cudaLaunchKernel", "k1_elementwise", 30'000, 3'000, 35'000, 5'000, 3, nullptr, EventKind::kKernel, 9);
  b.Launch("cudaLaunchKernel", "k2_elementwise", 50'000, 3'000, 90'000, 1310'000, 4, nullptr, EventKind::kKernel, 9);
  b.Launch("cudaLaunchKernel", "k3_elementwise", 60'000, 3'000, 1402'000, 98'000, 5, nullptr, EventKind::kKernel, 9);
  b.Api("cudaDeviceSynchronize", 70'000, 1435'000);
  const WhatIfStep s = OnlyStep(b.trace(), {"cpu=1"});
  EXPECT_EQ(s.replay_ns, s.measured_ns);
  // The all-reduce's launch edge is the only one, and its delay holds the wait: the wait is
  // still found against the least other launch delay (it once read Factor 1). Halved, gemm
  // ends at 505 us, the all-reduce runs 520..820, the sync returns 5 us after.
  Builder only;
  only.Unit("ProfilerStep#1", 0, 2000'000);
  only.Op("aten::mm", 1'000, 12'000, 1);
  only.Launch("cudaLaunchKernel", "k0_elementwise", 2'000, 1'000, 5'000, 3'000, 1);
  only.Launch("cudaLaunchKernel", "ampere_sgemm_128x64_nn", 4'000, 1'000, 10'000, 990'000, 1);
  WaitThenAllReduce(only);
  only.Api("cudaDeviceSynchronize", 40'000, 1280'000);
  EXPECT_EQ(OnlyStep(only.trace(), {"kernel:sgemm=0.5"}).predicted_ns, 825'000 - 1'000);
}

TEST(WhatIf, ADeviceSyncWaitsForEveryStreamAndAnEventQueryForNothing) {
  // Two streams: gemm 100..1000 on 7, other 100..600 on 8; cudaDeviceSynchronize 20..1020.
  // Halving gemm ends it at 550: the sync still waits for the other stream's 600, then its
  // 20 of return: add at 630 + 10.
  Builder b;
  b.Unit("ProfilerStep#1", 0, 1100);
  b.Op("aten::mm", 0, 20, 1);
  b.Launch("cudaLaunchKernel", "gemm_kernel", 5, 3, 100, 900, 1);
  b.Launch("cudaLaunchKernel", "other_kernel", 10, 3, 100, 500, 2, nullptr, EventKind::kKernel, 8);
  b.Api("cudaDeviceSynchronize", 20, 1000);
  b.Op("aten::add", 1030, 50, 2);
  EXPECT_EQ(OnlyStep(b.trace(), {"cpu=1"}).replay_ns, 1080);
  EXPECT_EQ(OnlyStep(b.trace(), {"gemm=0.5"}).predicted_ns, 600 + 20 + 10 + 50);
  // cudaEventQuery returns at once whatever the device does: a kernel that ends while it
  // runs is not its wait, and a slower kernel does not hold the host.
  Builder q;
  q.Unit("ProfilerStep#1", 0, 1100);
  q.Op("aten::mm", 0, 20, 1);
  q.Launch("cudaLaunchKernel", "gemm_kernel", 5, 5, 100, 100, 1);
  q.Api("cudaEventQuery", 198, 4);
  q.Op("aten::add", 210, 50, 2);
  const StatusOr<WhatIfResult> r = RunWhatIf(q.trace(), {"gemm=4"}, std::nullopt);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->steps.size(), 1u);
  EXPECT_EQ(r->steps[0].predicted_ns, 100 + 400);  // the kernel's own end, not the host's
  EXPECT_TRUE(std::none_of(r->notes.begin(), r->notes.end(),
                           [](const std::string& n) { return n.find("blocking call(s)") != std::string::npos; }));
}

TEST(WhatIf, BatchAndUnitsTogetherRunTheMergedBlocksOnTheNewUnits) {
  // 4 blocks on 56 units, batch=8 on 2 units: 32 blocks in 16 waves, against 1 wave today; per
  // sample 16/8 = 2x the kernel.
  const WhatIfStep s = OnlyStep(GpuBound("gemm_kernel", "[4, 1, 1]"), {"batch=8", "units=2"});
  EXPECT_NEAR(static_cast<double>(s.predicted_ns), (1080.0 - 900) / 8 + 2 * 900, 1);
}

TEST(WhatIf, AStepThatWouldRunPastTheClockIsLeftOutNotWrapped) {
  Trace t = GpuBound();
  for (Event& e : t.events) {
    if (e.kind == EventKind::kKernel) e.dur_ns = int64_t{1} << 60;
  }
  t.source = "long.json";
  const StatusOr<WhatIfResult> r = RunWhatIf(t, {"gemm=1000"});
  ASSERT_FALSE(r.ok());  // an empty table would read as a trace with nothing in it
  EXPECT_EQ(r.status().message(),
            "long.json: no prediction: every step was left out (0 with a cycle in its graph, 1 re-timing beyond 2^62 ns)");
}

TEST(WhatIf, ASelectorThatMatchesNothingIsSaid) {
  const StatusOr<WhatIfResult> r = RunWhatIf(GpuBound(), {" Softmax = 0.5 "});  // trimmed, any case
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_NE(r->notes[0].find("matches no kernel"), std::string::npos) << r->notes[0];
  EXPECT_EQ(OnlyStep(GpuBound(), {" GEMM = 0.5 "}).predicted_ns, 1080 - 450);
}

TEST(WhatIf, ABadChangeIsAOneLineErrorNamingIt) {
  for (const char* bad : {"gemm", "=3", " =3", "gemm= ", "batch=0", "batch=1.5", "units=-1", "sync=on", "comm=2", "precision=fp4",
                          "gemm=abc", "gemm=-1", "launch=inf", "kernel:=2"}) {
    const StatusOr<WhatIfChange> c = ParseWhatIfChange(bad);
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_NE(c.status().message().find(std::string("'") + bad + "'"), std::string::npos) << c.status().message();
    EXPECT_EQ(c.status().message().find('\n'), std::string::npos);
  }
  EXPECT_FALSE(RunWhatIf(GpuBound(), {}).ok());  // no change: nothing to predict
  Trace t = GpuBound("gemm_kernel", "[4, 1, 1]");
  t.device_units = 0;
  const StatusOr<WhatIfResult> r = RunWhatIf(t, {"units=2"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("compute units"), std::string::npos);
}

}  // namespace
}  // namespace tierscope
