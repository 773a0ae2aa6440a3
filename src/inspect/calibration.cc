// Peak FLOP/s and memory-bandwidth measurements, and their per-machine cache.
#include "inspect/calibration.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "core/clock.h"
#include "core/cpu_info.h"
#include "core/paths.h"
#include "core/stats.h"
#include "core/text.h"
#include "core/thread_pool.h"
#include "inspect/peak_kernels.h"
#include "tierscope/version.h"

namespace tierscope {
namespace {

using Clock = MonotonicClock;

constexpr int64_t kIters = 12'000'000;  // FMA passes: ~25 ms per AVX2 trial on a 3 GHz core
constexpr int kFmaTrials = 7;
constexpr int kTriadTrials = 5;
constexpr int kMeasureAttempts = 3;  // while the trials' spread says the cores were shared

// The triad's arrays (PlanTriad): each at least kTriadCacheFactor x the last-level cache,
// never under 64 MiB, 256 MiB when the cache's size is unknown; the three at most half
// the available memory (1 GiB each when that is unknown). A trial streams at least
// kTriadTrialBytes (two passes over 3 x 64 MiB).
constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kTriadCacheFactor = 4;
constexpr int64_t kTriadMinBytes = 64 * kMiB;
constexpr int64_t kTriadUnknownCacheBytes = 256 * kMiB;
constexpr int64_t kTriadNoMemInfoBytes = 1024 * kMiB;
constexpr int64_t kTriadTrialBytes = 384 * kMiB;

// Passes of the calibration's kernel `k` per thread and trial.
int64_t PeakIters(const PeakKernel& k) {
  if (k.isa == "scalar") return kIters / 4;
  if (k.isa == "amx-int8") return kIters / 16;
  return kIters;
}

// Runs `work` on `threads` threads released together: once untimed (a warm-up: clocks
// up, pages touched, threads scheduled), then `trials` timed times. A trial's rate is
// the units of work all threads did per second of the slowest thread's wall time.
RateSample Rate(int threads, int trials, const std::function<double(int)>& work) {
  std::vector<double> rates;
  for (int trial = -1; trial < trials; ++trial) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<double> done(static_cast<size_t>(threads), 0);
    std::vector<std::jthread> pool;
    for (int t = 1; t < threads; ++t) {
      pool.emplace_back([&, t] {
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) {
        }
        done[static_cast<size_t>(t)] = work(t);
      });
    }
    while (ready.load() < threads - 1) {
    }
    const Clock::time_point start = Clock::now();
    go.store(true, std::memory_order_release);
    done[0] = work(0);
    for (auto& th : pool) th.join();
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    double total = 0;
    for (double d : done) total += d;
    if (trial >= 0 && s > 0) rates.push_back(total / s);
  }
  RateSample r;
  if (rates.empty()) return r;
  std::sort(rates.begin(), rates.end());
  r.trials = static_cast<int>(rates.size());
  r.best = rates.back();
  r.median = Percentile(rates, 50);
  r.spread_pct = r.best > 0 ? 100 * (r.best - rates.front()) / r.best : 0;
  return r;
}

// The triad's arrays, allocated once per measurement (PlanTriad sizes them) and first
// touched by the threads that stream them, so each page sits on its thread's node.
struct TriadArrays {
  std::unique_ptr<float[]> a, b, c;
  size_t n = 0;    // floats in each array
  size_t one = 0;  // floats the one-thread run streams (a prefix)
};

// Allocates plan.array_bytes per array or, when that fails, halves it down to 16 MiB.
TriadArrays AllocateTriad(const TriadPlan& plan, int threads) {
  TriadArrays t;
  for (int64_t bytes = plan.array_bytes; t.n == 0; bytes /= 2) {
    const size_t n = static_cast<size_t>(bytes) / sizeof(float);
    t.a.reset(new (std::nothrow) float[n]);
    t.b.reset(new (std::nothrow) float[n]);
    t.c.reset(new (std::nothrow) float[n]);
    if (t.a && t.b && t.c) {
      t.n = n;
      t.one = std::min(n, static_cast<size_t>(plan.one_thread_bytes) / sizeof(float));
    } else {
      t.a.reset();
      t.b.reset();
      t.c.reset();
      if (bytes / 2 < 16 * kMiB) break;
    }
  }
  if (t.n == 0) return t;
  // Rate with no timed trial runs `work` once on every thread: the first touch.
  Rate(threads, 0, [&](int th) {
    const size_t per = t.n / static_cast<size_t>(threads);
    const size_t lo = per * static_cast<size_t>(th);
    const size_t hi = th == threads - 1 ? t.n : lo + per;
    for (size_t i = lo; i < hi; ++i) {
      t.a[i] = 0.0f;
      t.b[i] = 1.0f;
      t.c[i] = 2.0f;
    }
    return 0.0;
  });
  return t;
}

// STREAM triad a = b + s*c over the first `span` floats of the arrays, split by thread;
// bytes/s, 12 bytes an element (two reads, one write).
RateSample TriadBandwidth(TriadArrays& t, int threads, size_t span) {
  const size_t per = span / static_cast<size_t>(threads);
  const int64_t pass = static_cast<int64_t>(12 * per) * threads;
  const int reps = static_cast<int>(
      std::max<int64_t>(1, (kTriadTrialBytes + pass - 1) / std::max<int64_t>(pass, 1)));
  const auto work = [&](int th) {
    const size_t lo = per * static_cast<size_t>(th), hi = lo + per;
    float* pa = t.a.get();
    const float* pb = t.b.get();
    const float* pc = t.c.get();
    for (int rep = 0; rep < reps; ++rep) {
      for (size_t i = lo; i < hi; ++i) pa[i] = pb[i] + 3.0f * pc[i];
    }
    return static_cast<double>(reps) * 3.0 * sizeof(float) * static_cast<double>(per);
  };
  return Rate(threads, kTriadTrials, work);
}

std::string CacheKey(const MachinePeaks& p) {
  std::string key = p.cpu + "|" + p.isa + "|" + std::to_string(p.threads) + "|" + p.build;
  if (p.kind != "cpu") key = p.kind + "|" + p.device + "|" + key;
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char ch : key) h = (h ^ ch) * 1099511628211ULL;
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}


}  // namespace

double MachinePeaks::PeakFlops(std::string_view pipe) const {
  if (pipe == "bf16_dot" && bf16_dot && bf16_flops > 0) return bf16_flops;
  if (pipe == "int8_dot" && int8_ops > 0) return int8_ops;
  if (pipe == "tensor_f16" && fp16_tensor_flops > 0) return fp16_tensor_flops;
  if (pipe == "tensor_bf16" && bf16_tensor_flops > 0) return bf16_tensor_flops;
  return fp32_flops;
}

nlohmann::json MachinePeaks::ToJson() const {
  if (kind != "cpu") {
    return nlohmann::json{{"kind", kind},
                          {"device", device},
                          {"isa", isa},
                          {"threads", threads},
                          {"method", kCalibrationMethod},
                          {"build", build},
                          {"fp32_gflops", fp32_flops / 1e9},
                          {"fp16_tensor_gflops", fp16_tensor_flops / 1e9},
                          {"bf16_tensor_gflops", bf16_tensor_flops / 1e9},
                          {"mem_gbps", mem_bw / 1e9},
                          {"measured_at", measured_at}};
  }
  return nlohmann::json{{"cpu", cpu},
                        {"isa", isa},
                        {"threads", threads},
                        {"method", kCalibrationMethod},
                        {"build", build},
                        {"trials", trials},
                        {"fp32_gflops_1t", fp32_flops_1t / 1e9},
                        {"fp32_gflops", fp32_flops / 1e9},
                        {"fp32_spread_pct", fp32_spread_pct},
                        {"bf16_dot", bf16_dot},
                        {"bf16_gflops_1t", bf16_flops_1t / 1e9},
                        {"bf16_gflops", bf16_flops / 1e9},
                        {"int8_dot", int8_dot},
                        {"int8_gops_1t", int8_ops_1t / 1e9},
                        {"int8_gops", int8_ops / 1e9},
                        {"mem_gbps_1t", mem_bw_1t / 1e9},
                        {"mem_gbps", mem_bw / 1e9},
                        {"mem_spread_pct", mem_spread_pct},
                        {"triad_array_bytes", triad_array_bytes},
                        {"mem_note", mem_note},
                        {"measured_at", measured_at}};
}

StatusOr<MachinePeaks> MachinePeaks::FromJson(const nlohmann::json& j) {
  MachinePeaks p;
  try {
    const int method = j.value("method", 1);
    if (method != kCalibrationMethod) {
      return DataLoss("calibration cache: written by calibration method " + std::to_string(method) +
                      ", this build measures with method " + std::to_string(kCalibrationMethod));
    }
    p.kind = j.value("kind", std::string("cpu"));
    p.isa = j.at("isa").get<std::string>();
    p.threads = j.at("threads").get<int>();
    p.build = j.at("build").get<std::string>();
    p.fp32_flops = j.at("fp32_gflops").get<double>() * 1e9;
    p.mem_bw = j.at("mem_gbps").get<double>() * 1e9;
    p.measured_at = j.at("measured_at").get<std::string>();
    if (p.kind != "cpu") {
      p.device = j.at("device").get<std::string>();
      p.fp16_tensor_flops = j.at("fp16_tensor_gflops").get<double>() * 1e9;
      p.bf16_tensor_flops = j.at("bf16_tensor_gflops").get<double>() * 1e9;
    } else {
      p.cpu = j.at("cpu").get<std::string>();
      p.trials = j.at("trials").get<int>();
      p.fp32_flops_1t = j.at("fp32_gflops_1t").get<double>() * 1e9;
      p.fp32_spread_pct = j.at("fp32_spread_pct").get<double>();
      p.bf16_dot = j.at("bf16_dot").get<bool>();
      p.bf16_flops_1t = j.at("bf16_gflops_1t").get<double>() * 1e9;
      p.bf16_flops = j.at("bf16_gflops").get<double>() * 1e9;
      p.int8_dot = j.at("int8_dot").get<std::string>();
      p.int8_ops_1t = j.at("int8_gops_1t").get<double>() * 1e9;
      p.int8_ops = j.at("int8_gops").get<double>() * 1e9;
      p.mem_bw_1t = j.at("mem_gbps_1t").get<double>() * 1e9;
      p.mem_spread_pct = j.at("mem_spread_pct").get<double>();
      p.triad_array_bytes = j.at("triad_array_bytes").get<int64_t>();
      p.mem_note = j.at("mem_note").get<std::string>();
    }
  } catch (const nlohmann::json::exception& e) {
    return DataLoss(std::string("calibration cache: ") + e.what());
  }
  if (p.threads < 1 || !(p.fp32_flops > 0) || !(p.mem_bw > 0) || !std::isfinite(p.fp32_flops) ||
      !std::isfinite(p.mem_bw)) {
    return DataLoss("calibration cache: implausible values");
  }
  return p;
}

namespace {

// The calibration's kernel for `pipe` on `isa`, as a Rate work item (the CPU runs it:
// the ISA came from CpuVectorIsa, CpuInt8DotIsa or the CPU's flags).
std::function<double(int)> PeakWork(PeakPipe pipe, const std::string& isa, int64_t divide = 1) {
  StatusOr<PeakKernel> k = FindPeakKernel(pipe, isa);
  if (!k.ok()) k = FindPeakKernel(PeakPipe::kFp32Fma, "scalar");
  const int64_t iters = std::max<int64_t>(PeakIters(*k) / divide, 1);
  return [run = k->run, iters](int) { return run(iters, nullptr); };
}

// One measurement: FP32 FMA (and BF16 and INT8 dot) on one thread and on all, then the
// triad over `triad`.
MachinePeaks MeasureOnce(int threads, TriadArrays& triad) {
  MachinePeaks p;
  p.threads = threads;
  p.cpu = CpuModelName();
  p.isa = CpuVectorIsa();
  p.build = TIERSCOPE_BUILD_ID;
  const std::function<double(int)> fma = PeakWork(PeakPipe::kFp32Fma, p.isa);
  p.fp32_flops_1t = Rate(1, kFmaTrials, fma).best;
  const RateSample all = Rate(p.threads, kFmaTrials, fma);
  p.fp32_flops = all.best;
  p.fp32_spread_pct = all.spread_pct;
  p.trials = all.trials;
  p.bf16_dot = FindPeakKernel(PeakPipe::kBf16Dot, "avx512_bf16").ok();
  if (p.bf16_dot) {
    const std::function<double(int)> dot = PeakWork(PeakPipe::kBf16Dot, "avx512_bf16");
    p.bf16_flops_1t = Rate(1, kFmaTrials, dot).best;
    p.bf16_flops = Rate(p.threads, kFmaTrials, dot).best;
  }
  p.int8_dot = CpuInt8DotIsa();  // the INT8 GEMM's own choice
  if (!FindPeakKernel(PeakPipe::kInt8Dot, p.int8_dot).ok()) p.int8_dot.clear();  // "scalar"
  if (!p.int8_dot.empty()) {
    const std::function<double(int)> dot = PeakWork(PeakPipe::kInt8Dot, p.int8_dot);
    p.int8_ops_1t = Rate(1, kFmaTrials, dot).best;
    p.int8_ops = Rate(p.threads, kFmaTrials, dot).best;
  }
  p.triad_array_bytes = static_cast<int64_t>(triad.n * sizeof(float));
  if (triad.n > 0) {
    p.mem_bw_1t = TriadBandwidth(triad, 1, triad.one).best;
    const RateSample mem = TriadBandwidth(triad, p.threads, triad.n);
    p.mem_bw = mem.best;
    p.mem_spread_pct = mem.spread_pct;
  }
  p.measured_at = UtcNowIso8601();
  return p;
}

// A quarter of a trial's FMA passes, best of 3.
double ProbeFp32(int threads) {
  return Rate(threads, 3, PeakWork(PeakPipe::kFp32Fma, CpuVectorIsa(), 4)).best;
}

}  // namespace

TriadPlan PlanTriad(const LastLevelCache& llc, int64_t available_bytes) {
  TriadPlan plan;
  const bool known = llc.total_bytes > 0;
  const int64_t want = known ? std::max(kTriadCacheFactor * llc.total_bytes, kTriadMinBytes)
                             : kTriadUnknownCacheBytes;
  const int64_t want_one = llc.instance_bytes > 0
                               ? std::max(kTriadCacheFactor * llc.instance_bytes, kTriadMinBytes)
                               : want;
  const int64_t cap = available_bytes > 0 ? available_bytes / 6 : kTriadNoMemInfoBytes;
  plan.array_bytes = std::max<int64_t>(std::min(want, cap) / 4096 * 4096, 4096);
  plan.one_thread_bytes = std::min(want_one, plan.array_bytes);
  const std::string arrays = FormatBytes(static_cast<double>(plan.array_bytes));
  if (!known) {
    plan.note = "the last-level cache's size is unknown (sysfs lists no CPU caches): the triad's "
                "arrays are " + arrays + " each, which a larger cache would hold, so 'memory' may be "
                "cache bandwidth";
  } else if (plan.array_bytes < kTriadCacheFactor * llc.total_bytes) {
    const std::string why =
        available_bytes > 0
            ? "a sixth of the " + FormatBytes(static_cast<double>(available_bytes)) + " of memory available"
            : std::string("the available memory is unknown");
    plan.note = "the triad's arrays are " + arrays + " each, under " + std::to_string(kTriadCacheFactor) +
                "x the " + FormatBytes(static_cast<double>(llc.total_bytes)) + " last-level cache (" + why +
                " caps them), so 'memory' may include cache bandwidth";
  }
  return plan;
}

bool KeepBestPeaks(const MachinePeaks& other, MachinePeaks* p) {
  bool kept = false;
  for (double MachinePeaks::*f :
       {&MachinePeaks::fp32_flops, &MachinePeaks::fp32_flops_1t, &MachinePeaks::bf16_flops,
        &MachinePeaks::bf16_flops_1t, &MachinePeaks::int8_ops, &MachinePeaks::int8_ops_1t,
        &MachinePeaks::fp16_tensor_flops, &MachinePeaks::bf16_tensor_flops, &MachinePeaks::mem_bw,
        &MachinePeaks::mem_bw_1t}) {
    if (other.*f > p->*f) {
      p->*f = other.*f;
      kept = true;
    }
  }
  return kept;
}

const PeakMeter& DefaultPeakMeter() {
  static const PeakMeter meter{[](int threads) { return MeasurePeaks(threads); }, ProbeFp32};
  return meter;
}

StatusOr<MachinePeaks> MeasurePeaks(int threads) {
  if (threads < 0) return InvalidArgument("threads must be >= 0");
  if (threads == 0) threads = ThreadPool::HardwareThreads();
  const TriadPlan plan = PlanTriad(CpuLastLevelCache(), AvailableMemoryBytes());
  TriadArrays triad = AllocateTriad(plan, threads);
  if (triad.n == 0) {
    return ResourceExhausted("calibration: no memory for the triad's arrays (3 x " +
                             FormatBytes(static_cast<double>(plan.array_bytes)) + " planned)");
  }
  std::string note = plan.note;
  if (static_cast<int64_t>(triad.n * sizeof(float)) < plan.array_bytes) {
    note += std::string(note.empty() ? "" : "; ") + "the triad's arrays were cut to " +
            FormatBytes(static_cast<double>(triad.n * sizeof(float))) + " each (" +
            FormatBytes(static_cast<double>(plan.array_bytes)) +
            " could not be allocated), so 'memory' may include cache bandwidth";
  }
  // Peaks are maxima: other work on the cores only lowers a trial, so each figure is the
  // best seen, and a wide spread is measured again.
  MachinePeaks p = MeasureOnce(threads, triad);
  for (int attempt = 1; attempt < kMeasureAttempts &&
                        std::max(p.fp32_spread_pct, p.mem_spread_pct) > kNoisySpreadPct;
       ++attempt) {
    const MachinePeaks again = MeasureOnce(threads, triad);
    p.fp32_spread_pct = again.fp32_flops > p.fp32_flops ? again.fp32_spread_pct
                                                        : std::min(p.fp32_spread_pct, again.fp32_spread_pct);
    p.mem_spread_pct = again.mem_bw > p.mem_bw ? again.mem_spread_pct
                                               : std::min(p.mem_spread_pct, again.mem_spread_pct);
    KeepBestPeaks(again, &p);  // every peak, INT8 and BF16 too
    p.trials += again.trials;
  }
  p.mem_note = note;
  return p;
}

namespace {

// The cached peaks at `path` when they are for the same machine, thread count and build
// as `probe` and measured by this method; else null, with the reason in `why`.
std::optional<MachinePeaks> LoadCached(const std::string& path, const MachinePeaks& probe,
                                       std::string* why) {
  if (path.empty() || !IsRegularFile(path)) return std::nullopt;
  auto text = ReadFile(path);
  if (!text.ok()) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  auto cached = MachinePeaks::FromJson(j);
  if (!cached.ok()) {
    *why = cached.status().message();
    return std::nullopt;
  }
  if (cached->kind != probe.kind || cached->cpu != probe.cpu || cached->device != probe.device ||
      cached->threads != probe.threads || cached->isa != probe.isa || cached->build != probe.build) {
    *why = "the cache is for another machine, thread count or build";
    return std::nullopt;
  }
  const int64_t at = ParseUtcIso8601(cached->measured_at);
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  if (at < 0 || at > now + 3600) {
    *why = "the cache's measurement time '" + cached->measured_at + "' is not a past UTC time";
    return std::nullopt;
  }
  if (now - at > kPeaksMaxAgeS) {
    *why = "the cached peaks were measured " + cached->measured_at + ", more than " +
           std::to_string(kPeaksMaxAgeS / 86400) + " days ago";
    return std::nullopt;
  }
  cached->from_cache = true;
  cached->cache_path = path;
  return *cached;
}

void Store(const std::string& path, MachinePeaks& p) {
  if (path.empty()) return;
  const size_t slash = path.rfind('/');
  if (MakeDirs(path.substr(0, slash)).ok() && WriteFileAtomic(path, p.ToJson().dump(2) + "\n").ok()) {
    p.cache_path = path;
  }
}

std::string CachePath(const MachinePeaks& probe) {
  if (auto dir = CacheDir(); dir.ok()) return *dir + "/device/" + CacheKey(probe) + ".json";
  return "";
}

std::string Gflops(double flops) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", flops / 1e9);
  return buf;
}

// The cache's key for `threads` on this machine and build.
MachinePeaks PeaksKey(int threads) {
  MachinePeaks key;
  key.threads = threads;
  key.cpu = CpuModelName();
  key.isa = CpuVectorIsa();
  key.build = TIERSCOPE_BUILD_ID;
  return key;
}

}  // namespace

std::string TimesFp32Peak(double peak, double fp32_peak) {
  if (!(peak > 0) || !(fp32_peak > 0) || !std::isfinite(peak) || !std::isfinite(fp32_peak)) return "";
  return Fixed(peak / fp32_peak, 2) + "x the FP32 FMA peak";
}

StatusOr<MachinePeaks> LoadOrMeasurePeaks(int threads, bool recalibrate, const PeakMeter& meter) {
  if (threads < 0) return InvalidArgument("threads must be >= 0");
  const MachinePeaks key = PeaksKey(threads == 0 ? ThreadPool::HardwareThreads() : threads);
  const std::string path = CachePath(key);
  std::string why = recalibrate ? "--recalibrate" : "";
  if (!recalibrate) {
    if (auto cached = LoadCached(path, key, &why)) {
      // A cache measured while other work held the cores is too low; a quick probe now
      // tells, and a low peak would put kernels above 100% of it.
      const double now = meter.probe ? meter.probe(key.threads) : 0;
      if (!(now > cached->fp32_flops * kProbeStaleFactor)) return *cached;
      why = "a quick probe measured " + Gflops(now) + " GFLOP/s, above the cached FP32 peak of " +
            Gflops(cached->fp32_flops) + " (measured on a busy machine)";
    }
  }
  TS_ASSIGN_OR_RETURN(MachinePeaks p, meter.measure(key.threads));
  p.cpu = key.cpu;
  p.isa = key.isa;
  p.build = key.build;
  p.threads = key.threads;
  Store(path, p);
  p.remeasured_because = why;
  return p;
}

std::optional<MachinePeaks> CachedPeaks(int threads) {
  if (threads <= 0) return std::nullopt;
  const MachinePeaks key = PeaksKey(threads);
  std::string why;
  return LoadCached(CachePath(key), key, &why);
}

StatusOr<MachinePeaks> LoadOrMeasureDevicePeaks(Backend& backend, bool recalibrate,
                                                const PeakMeter& meter) {
  const DeviceProps& props = backend.props();
  if (props.kind == "cpu") return LoadOrMeasurePeaks(props.compute_units, recalibrate, meter);
  MachinePeaks key;
  key.kind = props.kind;
  key.device = props.model.empty() ? props.name : props.model;  // not the ordinal
  key.isa = props.arch;
  key.threads = props.compute_units;
  key.build = TIERSCOPE_BUILD_ID;
  const std::string path = CachePath(key);
  std::string why = recalibrate ? "--recalibrate" : "";
  if (!recalibrate) {
    if (auto cached = LoadCached(path, key, &why)) return *cached;
  }
  TS_ASSIGN_OR_RETURN(DevicePeaks d, backend.MeasurePeaks());
  if (!(d.fp32_flops > 0) || !(d.mem_bw > 0)) {
    return Internal(props.name + ": the peak measurement gave no FP32 or memory throughput");
  }
  MachinePeaks p = key;
  p.fp32_flops = d.fp32_flops;
  p.fp16_tensor_flops = d.fp16_tensor_flops;
  p.bf16_tensor_flops = d.bf16_tensor_flops;
  p.mem_bw = d.mem_bw;
  p.measured_at = UtcNowIso8601();
  Store(path, p);
  p.remeasured_because = why;
  return p;
}

StatusOr<MachinePeaks> RemeasurePeaks(Backend& backend, const MachinePeaks& previous,
                                      const PeakMeter& meter) {
  TS_ASSIGN_OR_RETURN(MachinePeaks p, LoadOrMeasureDevicePeaks(backend, /*recalibrate=*/true, meter));
  if (p.kind != previous.kind || p.cpu != previous.cpu || p.device != previous.device ||
      p.threads != previous.threads || p.build != previous.build) {
    return p;  // not the same key: nothing to keep
  }
  const bool kept = KeepBestPeaks(previous, &p);
  if (kept) Store(p.cache_path.empty() ? CachePath(p) : p.cache_path, p);
  return p;
}

}  // namespace tierscope
