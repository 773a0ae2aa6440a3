// The kernel inspector: replays leave the workload's output bit-for-bit as a single run
// leaves it (in-place kernels included), launches are picked by exact name or regex
// after a skip, the launch geometry of the hottest GEMM follows the batch, the rule gives
// the study's answer when the grid has too few tasks, and bad requests say what is valid.
#include "inspect/kernel_inspector.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/micro_kernel.h"
#include "backend/cpu/tile_rows.h"
#include "core/cpu_info.h"
#include "inspect/calibration.h"
#include "inspect/evidence.h"
#include "inspect/sections.h"
#include "inspect/kernel_run.h"
#include "core/text.h"
#include "test_util.h"
#include "workload_util.h"

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

// A device whose memory the inspector must reach through the backend's copies, as a
// GPU's: it counts them, and its FlushCaches; and it reports itself as a CUDA device with
// peaks of its own.
class CountingDevice : public CpuBackend {
 public:
  CountingDevice() : CpuBackend(2), props_(testing::HopperProps()) {}
  const DeviceProps& props() const override { return props_; }
  Status CopyHostToDevice(void* dst, const void* src, size_t bytes) override {
    ++to_device;
    return CpuBackend::CopyHostToDevice(dst, src, bytes);
  }
  Status CopyDeviceToHost(void* dst, const void* src, size_t bytes) override {
    ++to_host;
    return CpuBackend::CopyDeviceToHost(dst, src, bytes);
  }
  Status FlushCaches() override {
    ++flushes;
    return OkStatus();
  }
  StatusOr<DevicePeaks> MeasurePeaks() override {
    ++measured;
    return DevicePeaks{60e12, 700e12, 710e12, 4e12};
  }
  int to_device = 0, to_host = 0, flushes = 0, measured = 0;

 private:
  DeviceProps props_;
};

TEST_F(KernelInspectorTest, SavesAndRestoresThroughTheBackendsCopies) {
  CountingDevice be;
  std::vector<float> x(256, 1.0f);
  InspectorOptions o = Pick("scale", 0, 1, 4);
  o.flush_caches = true;
  auto inspector = Make(o);
  be.SetLaunchHook(inspector.get());
  LaunchDesc desc;
  desc.kernel = "scale";
  desc.grid = Dim3{1, 1, 1};
  desc.writes[0] = {x.data(), x.size() * sizeof(float)};
  ASSERT_TRUE(be.Launch(desc, [&](int64_t, int) {
                 for (float& v : x) v *= 2;
               }).ok());
  be.SetLaunchHook(nullptr);
  EXPECT_EQ(x[0], 2.0f);  // one run's result, after 4 replays
  EXPECT_EQ(be.to_host, 2);    // before the first run and after it
  EXPECT_EQ(be.to_device, 5);  // before each pass, and the workload's result at the end
  EXPECT_EQ(be.flushes, 4);
}

TEST_F(KernelInspectorTest, GpuReplaysReportSmsOccupancyAndTheDevicesKernel) {
  CountingDevice be;
  ProfiledLaunch p;
  p.id = 7;
  p.kernel = "cublasLt_gemm_nt_f32_bias";
  p.grid = Dim3{1, 1, 1};  // the descriptor's stand-in
  p.block = Dim3{256, 1, 1};
  p.flops = 2.0 * 128 * 384 * 128;
  p.bytes_read = 4.0 * (128 * 128 + 384 * 128);
  p.bytes_written = 4.0 * 128 * 384;
  p.pipe = "fp32_fma";
  p.pass_ns = {9000, 9100, 9050};
  p.device_timed = true;
  p.device.emplace();
  p.device->name = "sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8";
  p.device->grid = Dim3{3, 1, 1};
  p.device->block = Dim3{128, 1, 1};
  p.device->registers_per_thread = 128;
  p.device->shared_bytes = 16384;
  p.device->kernels = 1;
  auto inspector = Make(Pick("regex:gemm", 0, 1));
  auto peaks = LoadOrMeasureDevicePeaks(be, false);
  ASSERT_TRUE(peaks.ok()) << peaks.status().ToString();
  const KernelEvidence e = EvidenceFromReplay(p, *inspector, *peaks, be.props(), be.props().name);
  EXPECT_EQ(e.unit_name, "SMs");
  EXPECT_EQ(e.units, 132);
  EXPECT_EQ(e.grid->x, 3);  // the device's own grid
  EXPECT_EQ(e.device_kernel, p.device->name);
  EXPECT_EQ(e.registers, 128);
  ASSERT_TRUE(e.theoretical_occupancy.has_value());
  EXPECT_DOUBLE_EQ(*e.theoretical_occupancy, 25.0);  // 128 registers: 4 blocks of 4 warps
  EXPECT_FALSE(e.busy_pct.has_value());               // no workers on a GPU
  EXPECT_DOUBLE_EQ(*e.peak_flops, 60e12);
  const KernelReport r = BuildKernelReport(e, {"LaunchStats", "SpeedOfLight"});
  const std::string text = RenderKernelReports({r});
  EXPECT_TRUE(Contains(text, "Device Kernel")) << text;
  EXPECT_TRUE(Contains(text, "3 blocks for 132 SMs")) << text;
  EXPECT_TRUE(Contains(text, "Theoretical Occupancy")) << text;
  EXPECT_FALSE(r.recommendation.kernel_level);
  EXPECT_TRUE(Contains(r.recommendation.verdict, "higher tier")) << r.recommendation.verdict;
  // A BF16 GEMM is measured against the tensor cores' peak.
  p.pipe = "tensor_bf16";
  EXPECT_DOUBLE_EQ(*EvidenceFromReplay(p, *inspector, *peaks, be.props(), "").peak_flops, 710e12);
  // CUDA-event timing says so.
  p.device_timed = false;
  EXPECT_TRUE(Contains(EvidenceFromReplay(p, *inspector, *peaks, be.props(), "").source, "CUDA-event"));
}

TEST_F(KernelInspectorTest, GpuPeaksAreCachedPerDeviceAndRemeasuredWhenAsked) {
  CountingDevice be;
  auto first = LoadOrMeasureDevicePeaks(be, true);  // measured, whatever an earlier test cached
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->from_cache);
  auto second = LoadOrMeasureDevicePeaks(be, false);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->from_cache);
  EXPECT_EQ(second->kind, "cuda");
  EXPECT_EQ(second->isa, "sm_90");
  EXPECT_EQ(second->threads, 132);
  EXPECT_DOUBLE_EQ(second->bf16_tensor_flops, 710e12);
  EXPECT_DOUBLE_EQ(second->mem_bw, 4e12);
  const nlohmann::json j = second->ToJson();
  EXPECT_EQ(j["kind"], "cuda");
  EXPECT_DOUBLE_EQ(j["fp16_tensor_gflops"].get<double>(), 700e3);
  auto recal = LoadOrMeasureDevicePeaks(be, true);
  ASSERT_TRUE(recal.ok());
  EXPECT_FALSE(recal->from_cache);
  testing::WriteBytes(recal->cache_path, "{\"kind\": \"cuda\", \"device\": 1}");
  auto again = LoadOrMeasureDevicePeaks(be, false);  // a corrupt cache is measured again
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->from_cache);
  EXPECT_EQ(be.measured, 3);
}

// One unit of the built-in model, no warmup, on 2 workers.
BenchOptions OneUnit(int64_t batch, int64_t seq_len) {
  return testing::SmallWorkload("batch-fp32", batch, seq_len);
}

TEST_F(KernelInspectorTest, ReplaysDoNotChangeTheWorkloadsOutput) {
  BenchOptions o = OneUnit(4, 32);
  auto plain = RunBench(o);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  auto every = Make(Pick("regex:.", 0, 1000, 2));  // every launch
  o.launch_hook = every.get();
  auto replayed = RunBench(o);
  ASSERT_TRUE(replayed.ok()) << replayed.status().ToString();
  EXPECT_EQ(plain->result.checksum, replayed->result.checksum);
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

// Peaks far above what a CPU GEMM reaches (1 TFLOP/s, 1 TB/s), without measuring them:
// the geometry tests need a verdict, not this machine's calibration.
const PeakMeter& AmplePeaks() {
  static const PeakMeter meter{[](int threads) -> StatusOr<MachinePeaks> {
                                 MachinePeaks p;
                                 p.threads = threads;
                                 p.fp32_flops = p.fp32_flops_1t = 1e12;
                                 p.mem_bw = p.mem_bw_1t = 1e12;
                                 p.measured_at = UtcNowIso8601();
                                 return p;
                               },
                               [](int) { return 0.0; }};
  return meter;
}

KernelCommandOptions GemmCommand(const std::string& mode, int threads) {
  KernelCommandOptions k;
  k.meter = &AmplePeaks();
  k.bench.mode = mode;
  k.bench.batch_size = 64;
  k.bench.seq_len = 128;
  k.bench.warmup = 0;
  k.bench.iterations = 1;
  k.bench.threads = threads;
  // A projection with its residual add and LayerNorm (the second launch: layer 0's FFN
  // output): N = hidden = 128, the narrowest GEMM, tasks of whole rows.
  k.inspector = Pick("cpu_sgemm_nt_f32_rows_bias_add_layer_norm", 1, 1, 3);
  return k;
}

TEST_F(KernelInspectorTest, SerialVsBatchedGemmGeometryAndTheRule) {
  // Eight workers stand in for a device wider than one serial launch's work, as the
  // study's 56-unit GPU was: 16-token samples, so a serial launch's rows (two or three
  // tasks, as the CPU GEMM shares few rows out among its workers in whole micro-kernel
  // calls: 8 rows on AVX-512, 6 on AVX2) make fewer tasks than workers. On every FP32
  // variant this host runs.
  for (const MicroKernelVariant& v : AvailableMicroKernels()) {
    SCOPED_TRACE(v.isa);
    ScopedMicroKernels forced(v.kernels);
    KernelCommandOptions sk = GemmCommand("serial-fp32", 8), bk = GemmCommand("batch-fp32", 8);
    sk.bench.seq_len = bk.bench.seq_len = 16;
    auto serial = RunKernelCommand(sk);
    ASSERT_TRUE(serial.ok()) << serial.status().ToString();
    auto batched = RunKernelCommand(bk);
    ASSERT_TRUE(batched.ok()) << batched.status().ToString();
    const KernelReport& s = serial->reports.at(0);
    const KernelReport& b = batched->reports.at(0);
    const int64_t granule = CpuGemmRowGranule();
    EXPECT_EQ(granule, v.kernels.has_wide() ? 8 : 6);
    const TileRows serial_rows = SplitRowTasks(16, 48, granule, 8);
    EXPECT_EQ(serial_rows.blocks, granule == 8 ? 2 : 3);
    EXPECT_EQ(s.evidence.grid->count(), serial_rows.blocks);  // the row blocks, every column each
    // The batch runs in row blocks of whole 16-token samples (the CPU's choice for 8
    // workers and the tiny model's widest activation, 512 FP32 a row), or all 1,024 rows.
    const int64_t block = std::min<int64_t>(1024, CpuRowBlockRows(8, 512 * 4) / 16 * 16);
    EXPECT_EQ(b.evidence.grid->count(), SplitRowTasks(block, 48, granule, 8).blocks);
    EXPECT_EQ(s.evidence.units, 8);
    EXPECT_EQ(s.recommendation.checks[0].ok, false);
    EXPECT_TRUE(Contains(s.recommendation.verdict, "higher tier"));
    EXPECT_EQ(b.recommendation.checks[0].ok, true);
    EXPECT_EQ(s.evidence.passes, 3);
    EXPECT_GT(*s.evidence.duration_ns, 0);
    EXPECT_TRUE(Contains(serial->text, "Section: Launch Statistics"));
    EXPECT_EQ(serial->json["reports"][0]["grid"], nlohmann::json({serial_rows.blocks, 1, 1}));
    EXPECT_GT(serial->json["machine"]["fp32_gflops"].get<double>(), 0);
  }
}

TEST_F(KernelInspectorTest, BadRequestsSayWhatIsValid) {
  KernelCommandOptions k = GemmCommand("batch-fp32", 2);
  k.bench.batch_size = 2;
  k.bench.seq_len = 16;
  k.inspector.filter.name = "cpu_sgemm_nope";
  auto none = RunKernelCommand(k);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(none.status().message(), "cpu_sgemm_nt_f32_48x96_bias_gelu"));
  k.inspector.filter.name = "cpu_sgemm_nt_f32_48x96_bias";
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

TEST_F(KernelInspectorTest, CalibrationIsCachedPerMachineAndBuild) {
  auto first = LoadOrMeasurePeaks(1, false);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->from_cache);
  EXPECT_GT(first->fp32_flops_1t, 0);
  EXPECT_TRUE(std::isfinite(first->fp32_flops_1t));
  EXPECT_GT(first->mem_bw, 0);
  EXPECT_GE(first->trials, 5);  // best of several timed trials, their spread kept
  EXPECT_GE(first->fp32_spread_pct, 0);
  EXPECT_LE(first->fp32_spread_pct, 100);
  EXPECT_FALSE(first->build.empty());
  EXPECT_EQ(first->bf16_dot, first->bf16_flops > 0);
  // The triad's arrays reach well past the whole last-level cache, or the peaks say why not.
  const LastLevelCache llc = CpuLastLevelCache();
  EXPECT_TRUE((llc.total_bytes > 0 && first->triad_array_bytes >= 4 * llc.total_bytes) ||
              !first->mem_note.empty())
      << first->triad_array_bytes << " bytes an array, LLC " << llc.total_bytes;
  // A probe that finds the machine no faster than the cache says: the cache is used.
  PeakMeter quiet = DefaultPeakMeter();
  quiet.probe = [](int) { return 0.0; };
  auto second = LoadOrMeasurePeaks(1, false, quiet);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->from_cache);
  // The cache keeps GFLOP/s for people to read: x / 1e9 * 1e9 may be 1 ulp off.
  EXPECT_DOUBLE_EQ(second->fp32_flops, first->fp32_flops);
  EXPECT_EQ(second->triad_array_bytes, first->triad_array_bytes);
  EXPECT_EQ(second->mem_note, first->mem_note);
  // A corrupt cache is measured again, not trusted (by a stand-in measurement: the real
  // one ran above, and takes minutes under the sanitizers).
  testing::WriteBytes(first->cache_path, "{\"cpu\": 3");
  int measured = 0;
  PeakMeter again = quiet;
  again.measure = [&](int threads) -> StatusOr<MachinePeaks> {
    ++measured;
    MachinePeaks p = *first;
    p.threads = threads;
    return p;
  };
  auto third = LoadOrMeasurePeaks(1, false, again);
  ASSERT_TRUE(third.ok());
  EXPECT_FALSE(third->from_cache);
  EXPECT_EQ(measured, 1);
}

class PeakCacheTest : public testing::FreshCacheTest {};

// A machine whose FP32 rate the test sets: `now` is what a measurement or a probe sees.
struct FakeMachine {
  double now = 64e9;
  int measured = 0;
  PeakMeter Meter() {
    PeakMeter m;
    m.measure = [this](int threads) -> StatusOr<MachinePeaks> {
      ++measured;
      MachinePeaks p;
      p.threads = threads;
      p.fp32_flops = p.fp32_flops_1t = now;
      p.mem_bw = p.mem_bw_1t = now / 10;
      p.trials = 7;
      p.measured_at = UtcNowIso8601();
      return p;
    };
    m.probe = [this](int) { return now; };
    return m;
  }
};

TEST_F(PeakCacheTest, PeaksCachedOnABusyMachineAreMeasuredAgainWhenTheProbeIsFaster) {
  // The field case: the first calibration shared the cores (64 GFLOP/s) and was cached;
  // minutes later the same 2 threads did 203.
  FakeMachine machine;
  const PeakMeter meter = machine.Meter();
  auto first = LoadOrMeasurePeaks(2, false, meter);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(machine.measured, 1);
  auto kept = LoadOrMeasurePeaks(2, false, meter);  // still as busy: the cache stands
  ASSERT_TRUE(kept.ok());
  EXPECT_TRUE(kept->from_cache);
  EXPECT_EQ(machine.measured, 1);
  machine.now = 203.2e9;
  auto fresh = LoadOrMeasurePeaks(2, false, meter);
  ASSERT_TRUE(fresh.ok());
  EXPECT_FALSE(fresh->from_cache);
  EXPECT_EQ(machine.measured, 2);
  EXPECT_DOUBLE_EQ(fresh->fp32_flops, 203.2e9);
  EXPECT_TRUE(Contains(fresh->remeasured_because,
                       "a quick probe measured 203.2 GFLOP/s, above the cached FP32 peak of 64.0"))
      << fresh->remeasured_because;
  auto recal = LoadOrMeasurePeaks(2, true, meter);
  EXPECT_EQ(machine.measured, 3);
  EXPECT_EQ(recal->remeasured_because, "--recalibrate");
}

TEST_F(PeakCacheTest, ACacheOfAnotherBuildMethodOrAgeIsMeasuredAgain) {
  FakeMachine machine;
  machine.now = 100e9;
  const PeakMeter meter = machine.Meter();
  auto first = LoadOrMeasurePeaks(3, false, meter);
  ASSERT_TRUE(first.ok());
  const std::string path = first->cache_path;
  ASSERT_FALSE(path.empty());
  const nlohmann::json cached = nlohmann::json::parse(testing::ReadBytes(path));
  const auto rewrite_and_load = [&](const std::string& field, const nlohmann::json& value) {
    nlohmann::json j = cached;
    if (value.is_null()) j.erase(field);
    else j[field] = value;
    testing::WriteBytes(path, j.dump());
    return LoadOrMeasurePeaks(3, false, meter);
  };
  auto other_build = rewrite_and_load("build", "0.0.1 GNU-9 Debug march=x86-64");
  EXPECT_FALSE(other_build->from_cache);
  EXPECT_TRUE(Contains(other_build->remeasured_because, "another machine, thread count or build"));
  auto old_method = rewrite_and_load("method", nullptr);  // written by the first method
  EXPECT_FALSE(old_method->from_cache);
  EXPECT_TRUE(Contains(old_method->remeasured_because, "calibration method 1"));
  auto stale = rewrite_and_load("measured_at", "2025-01-01T00:00:00Z");
  EXPECT_FALSE(stale->from_cache);
  EXPECT_TRUE(Contains(stale->remeasured_because, "more than 30 days ago"));
  EXPECT_EQ(machine.measured, 4);
  EXPECT_TRUE(LoadOrMeasurePeaks(3, false, meter)->from_cache);
}

TEST_F(PeakCacheTest, AReplayAboveThePeaksMeasuresThemOnceMoreThenRefusesAVerdict) {
  KernelCommandOptions k = GemmCommand("batch-fp32", 2);
  k.bench.batch_size = 4;
  k.bench.seq_len = 32;
  k.inspector.filter.skip = 0;
  k.recalibrate = true;
  // Peaks far below anything a GEMM does: every replay is "above 100%".
  FakeMachine busy;
  busy.now = 1e6;
  const PeakMeter low = busy.Meter();
  k.meter = &low;
  auto r = RunKernelCommand(k);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(busy.measured, 2);  // the first measurement, and once again
  const KernelReport& rep = r->reports.at(0);
  EXPECT_FALSE(rep.recommendation.trustworthy);
  EXPECT_FALSE(rep.recommendation.kernel_level);
  EXPECT_TRUE(Contains(rep.recommendation.verdict, "No verdict")) << rep.recommendation.verdict;
  EXPECT_TRUE(Contains(rep.recommendation.verdict, "physically impossible"));
  EXPECT_TRUE(Contains(rep.evidence.peaks_note, "re-measured once because")) << rep.evidence.peaks_note;
  EXPECT_EQ(r->json["reports"][0]["recommendation"]["trustworthy"], false);

  // A machine that was busy for the first measurement only: the second one holds, and
  // the rule draws its conclusion from it.
  FakeMachine machine;
  machine.now = 1e6;
  PeakMeter recovering = machine.Meter();
  const auto measure = recovering.measure;
  recovering.measure = [&machine, measure](int threads) {
    auto p = measure(threads);
    machine.now = 1e15;  // from now on, a fast machine
    return p;
  };
  k.meter = &recovering;
  auto again = RunKernelCommand(k);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(machine.measured, 2);
  EXPECT_TRUE(again->reports.at(0).recommendation.trustworthy);
  EXPECT_FALSE(Contains(again->reports.at(0).recommendation.verdict, "No verdict"));
  EXPECT_TRUE(Contains(again->text, "re-measured once because"));
}

TEST_F(PeakCacheTest, AMeasurementAgainNeverLowersAPeak) {
  FakeMachine machine;
  machine.now = 200e9;
  const PeakMeter meter = machine.Meter();
  CpuBackend be(4);
  auto good = LoadOrMeasureDevicePeaks(be, false, meter);
  ASSERT_TRUE(good.ok());
  machine.now = 64e9;  // busy while it measures again
  auto again = RemeasurePeaks(be, *good, meter);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(machine.measured, 2);
  EXPECT_DOUBLE_EQ(again->fp32_flops, 200e9);
  EXPECT_DOUBLE_EQ(again->mem_bw, 20e9);
  machine.now = 64e9;
  auto cached = LoadOrMeasureDevicePeaks(be, false, meter);  // the kept peaks were cached
  EXPECT_TRUE(cached->from_cache);
  EXPECT_DOUBLE_EQ(cached->fp32_flops, 200e9);
}

}  // namespace
}  // namespace tierscope
