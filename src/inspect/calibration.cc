// Peak FLOP/s and memory-bandwidth measurements, and their per-machine cache.
#include "inspect/calibration.h"

#include <immintrin.h>

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
#include "tierscope/version.h"

namespace tierscope {
namespace {

using Clock = MonotonicClock;

// Each FMA test runs kChains independent accumulator chains, enough to cover the FMA
// latency on two pipes; returns FLOPs done.
constexpr int kChains = 12;
constexpr int64_t kIters = 12'000'000;  // ~25 ms per AVX2 trial on a 3 GHz core
constexpr int kFmaTrials = 7;
constexpr int kTriadTrials = 5;
constexpr int kMeasureAttempts = 3;  // while the trials' spread says the cores were shared

__attribute__((target("avx512f"))) double FmaAvx512(int64_t iters) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i) * 1e-3f);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  __m512 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm512_add_ps(s, acc[i]);
  float out[16];
  _mm512_storeu_ps(out, s);
  volatile float sink = out[0];
  (void)sink;
  return 2.0 * 16 * kChains * static_cast<double>(iters);
}

__attribute__((target("avx2,fma"))) double FmaAvx2(int64_t iters) {
  __m256 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i) * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  __m256 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm256_add_ps(s, acc[i]);
  float out[8];
  _mm256_storeu_ps(out, s);
  volatile float sink = out[0];
  (void)sink;
  return 2.0 * 8 * kChains * static_cast<double>(iters);
}

double FmaScalar(int64_t iters) {
  float acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = static_cast<float>(i) * 1e-3f;
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < kChains; ++i) acc[i] = acc[i] * 0.999999f + 1e-7f;
  }
  volatile float sink = acc[0];
  (void)sink;
  return 2.0 * kChains * static_cast<double>(iters);
}

__attribute__((target("avx512f,avx512bf16"))) double DotBf16(int64_t iters) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_setzero_ps();
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80);  // 1.0 in BF16
  const __m512bh b = (__m512bh)_mm512_set1_epi16(0x3380);  // ~6e-8
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  }
  __m512 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm512_add_ps(s, acc[i]);
  float out[16];
  _mm512_storeu_ps(out, s);
  volatile float sink = out[0];
  (void)sink;
  return 2.0 * 32 * kChains * static_cast<double>(iters);  // 16 lanes x 2 products
}

// INT8 dot throughput: u8 x s8 multiply-adds summed into int32, counted 2 operations
// each (as FLOPs), on the instruction the INT8 GEMM's micro-kernels use on this CPU.
__attribute__((target("avx512f,avx512bw,avx512vnni"))) double DotInt8Avx512Vnni(int64_t iters) {
  __m512i acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_epi32(i);
  const __m512i a = _mm512_set1_epi8(1), b = _mm512_set1_epi8(-1);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
  }
  __m512i s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm512_add_epi32(s, acc[i]);
  int out[16];
  _mm512_storeu_si512(out, s);
  volatile int sink = out[0];
  (void)sink;
  return 2.0 * 64 * kChains * static_cast<double>(iters);
}

__attribute__((target("avx2,avxvnni"))) double DotInt8AvxVnni(int64_t iters) {
  __m256i acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_epi32(i);
  const __m256i a = _mm256_set1_epi8(1), b = _mm256_set1_epi8(-1);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_dpbusd_avx_epi32(acc[i], a, b);
  }
  __m256i s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm256_add_epi32(s, acc[i]);
  volatile int sink = _mm256_extract_epi32(s, 0);
  (void)sink;
  return 2.0 * 32 * kChains * static_cast<double>(iters);
}

// AVX2 without VNNI: vpmaddubsw, vpmaddwd by ones, vpaddd — 32 multiply-adds a triple.
// The products do not depend on the sums, so each pass hides `a` from the compiler and
// each chain multiplies its own b: nothing can be computed once and reused.
constexpr int kInt8Avx2Chains = 6;  // 6 sums + 6 b + a + ones fit the 16 ymm registers
__attribute__((target("avx2"))) double DotInt8Avx2(int64_t iters) {
  __m256i acc[kInt8Avx2Chains], b[kInt8Avx2Chains];
  for (int i = 0; i < kInt8Avx2Chains; ++i) {
    acc[i] = _mm256_set1_epi32(i);
    b[i] = _mm256_set1_epi8(static_cast<char>(-1 - i));
  }
  __m256i a = _mm256_set1_epi8(1);
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t it = 0; it < iters; ++it) {
    __asm__ volatile("" : "+x"(a));  // a is new to the compiler each pass
    for (int i = 0; i < kInt8Avx2Chains; ++i) {
      acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(_mm256_maddubs_epi16(a, b[i]), ones));
    }
  }
  __m256i s = acc[0];
  for (int i = 1; i < kInt8Avx2Chains; ++i) s = _mm256_add_epi32(s, acc[i]);
  volatile int sink = _mm256_extract_epi32(s, 0);
  (void)sink;
  return 2.0 * 32 * kInt8Avx2Chains * static_cast<double>(iters);
}

// AMX: TDPBUSD on 16 x 64 u8 by 64 x 16 s8 tiles into 16 x 16 int32, 16,384 multiply-adds
// an instruction, over four independent C tiles (as the GEMM's 2 x 2 blocking), with the
// INT8 GEMM's own tile configuration (micro_kernel_int8.cc).
struct alignas(64) AmxPeakConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

__attribute__((target("amx-tile,amx-int8"))) double DotInt8Amx(int64_t iters) {
  AmxPeakConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }
  _tile_loadconfig(&cfg);
  alignas(64) static const uint8_t a[16 * 64] = {1};
  alignas(64) static const int8_t b[16 * 64] = {-1};
  alignas(64) int32_t out[16 * 16];
  _tile_loadd(4, a, 64);
  _tile_loadd(5, a, 64);
  _tile_loadd(6, b, 64);
  _tile_loadd(7, b, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t it = 0; it < iters; ++it) {
    _tile_dpbusd(0, 4, 6);
    _tile_dpbusd(1, 4, 7);
    _tile_dpbusd(2, 5, 6);
    _tile_dpbusd(3, 5, 7);
  }
  _tile_stored(0, out, 64);
  // No _tile_release: the INT8 GEMM configures each thread once with this same layout
  // (8 tiles of 16 x 64 bytes) and would find its tiles gone.
  volatile int sink = out[0];
  (void)sink;
  return 2.0 * 16 * 16 * 64 * 4 * static_cast<double>(iters);
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

// STREAM triad a = b + s*c over arrays far larger than the caches, split by thread.
RateSample TriadBandwidth(int threads) {
  constexpr size_t kElems = size_t{16} << 20;  // 64 MiB per array
  std::vector<float> a(kElems), b(kElems, 1.0f), c(kElems, 2.0f);
  const auto work = [&](int t) {
    const size_t per = kElems / static_cast<size_t>(threads);
    const size_t lo = per * static_cast<size_t>(t), hi = lo + per;
    float* pa = a.data();
    const float* pb = b.data();
    const float* pc = c.data();
    for (int rep = 0; rep < 2; ++rep) {
      for (size_t i = lo; i < hi; ++i) pa[i] = pb[i] + 3.0f * pc[i];
    }
    return 2.0 * 3.0 * sizeof(float) * static_cast<double>(per);
  };
  work(0);  // fault the pages in outside the timing
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

// One measurement: FP32 FMA (and BF16 dot) on one thread and on all, then the triad.
MachinePeaks MeasureOnce(int threads) {
  MachinePeaks p;
  p.threads = threads;
  p.cpu = CpuModelName();
  p.isa = CpuVectorIsa();
  p.build = TIERSCOPE_BUILD_ID;
  std::function<double(int)> fma;
  if (p.isa == "avx512f") fma = [](int) { return FmaAvx512(kIters); };
  else if (p.isa == "avx2+fma") fma = [](int) { return FmaAvx2(kIters); };
  else fma = [](int) { return FmaScalar(kIters / 4); };
  p.fp32_flops_1t = Rate(1, kFmaTrials, fma).best;
  const RateSample all = Rate(p.threads, kFmaTrials, fma);
  p.fp32_flops = all.best;
  p.fp32_spread_pct = all.spread_pct;
  p.trials = all.trials;
  p.bf16_dot = CpuHasFlag("avx512_bf16");
  if (p.bf16_dot) {
    const auto dot = [](int) { return DotBf16(kIters); };
    p.bf16_flops_1t = Rate(1, kFmaTrials, dot).best;
    p.bf16_flops = Rate(p.threads, kFmaTrials, dot).best;
  }
  p.int8_dot = CpuInt8DotIsa();  // the INT8 GEMM's own choice
  if (p.int8_dot == "scalar") p.int8_dot.clear();
  if (!p.int8_dot.empty()) {
    std::function<double(int)> dot;
    if (p.int8_dot == "amx-int8") dot = [](int) { return DotInt8Amx(kIters / 16); };
    else if (p.int8_dot == "avx512vnni") dot = [](int) { return DotInt8Avx512Vnni(kIters); };
    else if (p.int8_dot == "avxvnni") dot = [](int) { return DotInt8AvxVnni(kIters); };
    else dot = [](int) { return DotInt8Avx2(kIters); };
    p.int8_ops_1t = Rate(1, kFmaTrials, dot).best;
    p.int8_ops = Rate(p.threads, kFmaTrials, dot).best;
  }
  p.mem_bw_1t = TriadBandwidth(1).best;
  const RateSample mem = TriadBandwidth(p.threads);
  p.mem_bw = mem.best;
  p.mem_spread_pct = mem.spread_pct;
  p.measured_at = UtcNowIso8601();
  return p;
}

double ProbeFp32(int threads) {
  std::function<double(int)> fma;
  const std::string isa = CpuVectorIsa();
  if (isa == "avx512f") fma = [](int) { return FmaAvx512(kIters / 4); };
  else if (isa == "avx2+fma") fma = [](int) { return FmaAvx2(kIters / 4); };
  else fma = [](int) { return FmaScalar(kIters / 16); };
  return Rate(threads, 3, fma).best;
}

}  // namespace

const PeakMeter& DefaultPeakMeter() {
  static const PeakMeter meter{[](int threads) { return MeasurePeaks(threads); }, ProbeFp32};
  return meter;
}

StatusOr<MachinePeaks> MeasurePeaks(int threads) {
  if (threads < 0) return InvalidArgument("threads must be >= 0");
  if (threads == 0) threads = ThreadPool::HardwareThreads();
  // Peaks are maxima: other work on the cores only lowers a trial, so each figure is the
  // best seen, and a wide spread is measured again.
  MachinePeaks p = MeasureOnce(threads);
  for (int attempt = 1; attempt < kMeasureAttempts &&
                        std::max(p.fp32_spread_pct, p.mem_spread_pct) > kNoisySpreadPct;
       ++attempt) {
    const MachinePeaks again = MeasureOnce(threads);
    if (again.fp32_flops > p.fp32_flops) {
      p.fp32_flops = again.fp32_flops;
      p.fp32_spread_pct = again.fp32_spread_pct;
    } else {
      p.fp32_spread_pct = std::min(p.fp32_spread_pct, again.fp32_spread_pct);
    }
    if (again.mem_bw > p.mem_bw) {
      p.mem_bw = again.mem_bw;
      p.mem_spread_pct = again.mem_spread_pct;
    } else {
      p.mem_spread_pct = std::min(p.mem_spread_pct, again.mem_spread_pct);
    }
    p.fp32_flops_1t = std::max(p.fp32_flops_1t, again.fp32_flops_1t);
    p.mem_bw_1t = std::max(p.mem_bw_1t, again.mem_bw_1t);
    p.bf16_flops_1t = std::max(p.bf16_flops_1t, again.bf16_flops_1t);
    p.bf16_flops = std::max(p.bf16_flops, again.bf16_flops);
    p.trials += again.trials;
  }
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

}  // namespace

StatusOr<MachinePeaks> LoadOrMeasurePeaks(int threads, bool recalibrate, const PeakMeter& meter) {
  if (threads < 0) return InvalidArgument("threads must be >= 0");
  MachinePeaks key;
  key.threads = threads == 0 ? ThreadPool::HardwareThreads() : threads;
  key.cpu = CpuModelName();
  key.isa = CpuVectorIsa();
  key.build = TIERSCOPE_BUILD_ID;
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
  bool kept = false;
  for (auto [now, before] : {std::pair{&p.fp32_flops, previous.fp32_flops},
                             {&p.fp32_flops_1t, previous.fp32_flops_1t},
                             {&p.bf16_flops, previous.bf16_flops},
                             {&p.bf16_flops_1t, previous.bf16_flops_1t},
                             {&p.int8_ops, previous.int8_ops},
                             {&p.int8_ops_1t, previous.int8_ops_1t},
                             {&p.fp16_tensor_flops, previous.fp16_tensor_flops},
                             {&p.bf16_tensor_flops, previous.bf16_tensor_flops},
                             {&p.mem_bw, previous.mem_bw},
                             {&p.mem_bw_1t, previous.mem_bw_1t}}) {
    if (before > *now) {
      *now = before;
      kept = true;
    }
  }
  if (kept) Store(p.cache_path.empty() ? CachePath(p) : p.cache_path, p);
  return p;
}

}  // namespace tierscope
