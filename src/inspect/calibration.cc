// Peak FLOP/s and memory-bandwidth measurements, and their per-machine cache.
#include "inspect/calibration.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "core/paths.h"
#include "core/text.h"
#include "core/thread_pool.h"

namespace tierscope {
namespace {

using Clock = std::chrono::steady_clock;

// Each FMA test runs kChains independent accumulator chains, enough to cover the FMA
// latency on two pipes; returns FLOPs done.
constexpr int kChains = 12;
constexpr int64_t kIters = 2'000'000;

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

// Runs `work` on `threads` threads released together; best of `trials` of total units
// of work per second of the slowest thread's wall time.
double Rate(int threads, int trials, const std::function<double(int)>& work) {
  double best = 0;
  for (int trial = 0; trial < trials; ++trial) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<double> done(static_cast<size_t>(threads), 0);
    std::vector<std::thread> pool;
    Clock::time_point start;
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
    start = Clock::now();
    go.store(true, std::memory_order_release);
    done[0] = work(0);
    for (auto& th : pool) th.join();
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    double total = 0;
    for (double d : done) total += d;
    if (s > 0) best = std::max(best, total / s);
  }
  return best;
}

std::string CpuModel() {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen("/proc/cpuinfo", "r"), std::fclose);
  char line[512];
  while (f != nullptr && std::fgets(line, sizeof(line), f.get()) != nullptr) {
    if (std::strncmp(line, "model name", 10) == 0) {
      const char* colon = std::strchr(line, ':');
      if (colon == nullptr) break;
      std::string name(colon + 1);
      while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
      while (!name.empty() && name.front() == ' ') name.erase(name.begin());
      return name;
    }
  }
  return "unknown CPU";
}

// STREAM triad a = b + s*c over arrays far larger than the caches, split by thread.
double TriadBandwidth(int threads) {
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
  return Rate(threads, 5, work);
}

std::string CacheKey(const MachinePeaks& p) {
  std::string key = p.cpu + "|" + p.isa + "|" + std::to_string(p.threads);
  if (p.kind != "cpu") key = p.kind + "|" + p.device + "|" + key;
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char ch : key) h = (h ^ ch) * 1099511628211ULL;
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string Isa() {
  if (__builtin_cpu_supports("avx512f")) return "avx512f";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "avx2+fma";
  return "scalar";
}

}  // namespace

double MachinePeaks::PeakFlops(std::string_view pipe) const {
  if (pipe == "bf16_dot" && bf16_dot && bf16_flops > 0) return bf16_flops;
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
                          {"fp32_gflops", fp32_flops / 1e9},
                          {"fp16_tensor_gflops", fp16_tensor_flops / 1e9},
                          {"bf16_tensor_gflops", bf16_tensor_flops / 1e9},
                          {"mem_gbps", mem_bw / 1e9},
                          {"measured_at", measured_at}};
  }
  return nlohmann::json{{"cpu", cpu},
                        {"isa", isa},
                        {"threads", threads},
                        {"fp32_gflops_1t", fp32_flops_1t / 1e9},
                        {"fp32_gflops", fp32_flops / 1e9},
                        {"bf16_dot", bf16_dot},
                        {"bf16_gflops_1t", bf16_flops_1t / 1e9},
                        {"bf16_gflops", bf16_flops / 1e9},
                        {"mem_gbps_1t", mem_bw_1t / 1e9},
                        {"mem_gbps", mem_bw / 1e9},
                        {"measured_at", measured_at}};
}

StatusOr<MachinePeaks> MachinePeaks::FromJson(const nlohmann::json& j) {
  MachinePeaks p;
  try {
    p.kind = j.value("kind", std::string("cpu"));
    if (p.kind != "cpu") {
      p.device = j.at("device").get<std::string>();
      p.isa = j.at("isa").get<std::string>();
      p.threads = j.at("threads").get<int>();
      p.fp32_flops = j.at("fp32_gflops").get<double>() * 1e9;
      p.fp16_tensor_flops = j.at("fp16_tensor_gflops").get<double>() * 1e9;
      p.bf16_tensor_flops = j.at("bf16_tensor_gflops").get<double>() * 1e9;
      p.mem_bw = j.at("mem_gbps").get<double>() * 1e9;
      p.measured_at = j.at("measured_at").get<std::string>();
    } else {
      p.cpu = j.at("cpu").get<std::string>();
      p.isa = j.at("isa").get<std::string>();
      p.threads = j.at("threads").get<int>();
      p.fp32_flops_1t = j.at("fp32_gflops_1t").get<double>() * 1e9;
      p.fp32_flops = j.at("fp32_gflops").get<double>() * 1e9;
      p.bf16_dot = j.at("bf16_dot").get<bool>();
      p.bf16_flops_1t = j.at("bf16_gflops_1t").get<double>() * 1e9;
      p.bf16_flops = j.at("bf16_gflops").get<double>() * 1e9;
      p.mem_bw_1t = j.at("mem_gbps_1t").get<double>() * 1e9;
      p.mem_bw = j.at("mem_gbps").get<double>() * 1e9;
      p.measured_at = j.at("measured_at").get<std::string>();
    }
  } catch (const nlohmann::json::exception& e) {
    return DataLoss(std::string("calibration cache: ") + e.what());
  }
  if (p.threads < 1 || !(p.fp32_flops > 0) || !(p.mem_bw > 0)) {
    return DataLoss("calibration cache: implausible values");
  }
  return p;
}

StatusOr<MachinePeaks> MeasurePeaks(int threads) {
  if (threads < 0) return InvalidArgument("threads must be >= 0");
  MachinePeaks p;
  p.threads = threads == 0 ? ThreadPool::HardwareThreads() : threads;
  p.cpu = CpuModel();
  p.isa = Isa();
  std::function<double(int)> fma;
  if (p.isa == "avx512f") fma = [](int) { return FmaAvx512(kIters); };
  else if (p.isa == "avx2+fma") fma = [](int) { return FmaAvx2(kIters); };
  else fma = [](int) { return FmaScalar(kIters / 4); };
  p.fp32_flops_1t = Rate(1, 3, fma);
  p.fp32_flops = Rate(p.threads, 3, fma);
  p.bf16_dot = __builtin_cpu_supports("avx512bf16");
  if (p.bf16_dot) {
    const auto dot = [](int) { return DotBf16(kIters); };
    p.bf16_flops_1t = Rate(1, 3, dot);
    p.bf16_flops = Rate(p.threads, 3, dot);
  }
  p.mem_bw_1t = TriadBandwidth(1);
  p.mem_bw = TriadBandwidth(p.threads);
  p.measured_at = UtcNowIso8601();
  return p;
}

namespace {

// The cached peaks at `path` when they are for the same machine as `probe`, else null.
std::optional<MachinePeaks> LoadCached(const std::string& path, const MachinePeaks& probe) {
  if (path.empty() || !IsRegularFile(path)) return std::nullopt;
  auto text = ReadFile(path);
  if (!text.ok()) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  auto cached = MachinePeaks::FromJson(j);
  if (!cached.ok() || cached->kind != probe.kind || cached->cpu != probe.cpu ||
      cached->device != probe.device || cached->threads != probe.threads ||
      cached->isa != probe.isa) {
    return std::nullopt;  // an unreadable or stale cache is measured again and overwritten
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

}  // namespace

StatusOr<MachinePeaks> LoadOrMeasurePeaks(int threads, bool recalibrate) {
  MachinePeaks probe;
  probe.threads = threads == 0 ? ThreadPool::HardwareThreads() : threads;
  probe.cpu = CpuModel();
  probe.isa = Isa();
  const std::string path = CachePath(probe);
  if (!recalibrate) {
    if (auto cached = LoadCached(path, probe)) return *cached;
  }
  TS_ASSIGN_OR_RETURN(MachinePeaks p, MeasurePeaks(probe.threads));
  Store(path, p);
  return p;
}

StatusOr<MachinePeaks> LoadOrMeasureDevicePeaks(Backend& backend, bool recalibrate) {
  const DeviceProps& props = backend.props();
  if (props.kind == "cpu") return LoadOrMeasurePeaks(props.compute_units, recalibrate);
  MachinePeaks probe;
  probe.kind = props.kind;
  probe.device = props.model.empty() ? props.name : props.model;  // not the ordinal
  probe.isa = props.arch;
  probe.threads = props.compute_units;
  const std::string path = CachePath(probe);
  if (!recalibrate) {
    if (auto cached = LoadCached(path, probe)) return *cached;
  }
  TS_ASSIGN_OR_RETURN(DevicePeaks d, backend.MeasurePeaks());
  if (!(d.fp32_flops > 0) || !(d.mem_bw > 0)) {
    return Internal(props.name + ": the peak measurement gave no FP32 or memory throughput");
  }
  MachinePeaks p = probe;
  p.fp32_flops = d.fp32_flops;
  p.fp16_tensor_flops = d.fp16_tensor_flops;
  p.bf16_tensor_flops = d.bf16_tensor_flops;
  p.mem_bw = d.mem_bw;
  p.measured_at = UtcNowIso8601();
  Store(path, p);
  return p;
}

}  // namespace tierscope
