// The batch sweep and the batch-size choice under an SLO and a memory budget.
#include "lab/sweep.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <functional>
#include <map>

#include "core/text.h"

namespace tierscope {

namespace {

std::string Limits(bool latency, bool memory) {
  return latency && memory ? "latency and memory" : latency ? "latency" : memory ? "memory" : "none";
}

__attribute__((format(printf, 1, 2))) std::string Printf(const char* fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, args);
  va_end(args);
  return buf;
}

}  // namespace

BatchChoice ChooseBatch(const std::vector<SweepPoint>& points, double slo_ms, double budget_mb) {
  BatchChoice c;
  if (points.empty()) return c;
  c.seq_len = points.front().seq_len;
  const auto latency_ok = [&](const SweepPoint& p) { return slo_ms <= 0 || p.p95_ms <= slo_ms; };
  const auto memory_ok = [&](const SweepPoint& p) { return budget_mb <= 0 || p.peak_memory_mb <= budget_mb; };
  const bool limited = slo_ms > 0 || budget_mb > 0;
  const SweepPoint* best = nullptr;  // the best throughput among the batches within limits
  const SweepPoint* fastest = nullptr;  // the best throughput of all
  for (const SweepPoint& p : points) {
    if (fastest == nullptr || p.samples_per_s > fastest->samples_per_s) fastest = &p;
    if (!latency_ok(p) || !memory_ok(p)) continue;
    if (best == nullptr || p.samples_per_s > best->samples_per_s) best = &p;
  }
  if (best == nullptr) {
    const SweepPoint& p = points.front();
    c.binding = Limits(!latency_ok(p), !memory_ok(p));
    c.reason = Printf("no batch meets the limits: even batch %lld has P95 %.2f ms (SLO %.2f) and "
                      "peak %.1f MB (budget %.1f)",
                      static_cast<long long>(p.batch), p.p95_ms, slo_ms, p.peak_memory_mb, budget_mb);
    return c;
  }
  const SweepPoint* chosen = best;
  if (!limited) {  // the smallest batch that does as well as the best
    for (const SweepPoint& p : points) {
      if (p.samples_per_s >= kNearBestThroughput * best->samples_per_s) {
        chosen = &p;
        break;
      }
    }
  }
  c.batch = chosen->batch;
  c.samples_per_s = chosen->samples_per_s;
  std::string why = Printf("batch %lld: %.1f samples/s, P95 %.2f ms, peak %.1f MB",
                           static_cast<long long>(chosen->batch), chosen->samples_per_s,
                           chosen->p95_ms, chosen->peak_memory_mb);
  if (chosen != best) {
    why += Printf(", within %.0f%% of the best (%.1f samples/s at batch %lld) with less latency and memory",
                  100 * (1 - kNearBestThroughput), best->samples_per_s, static_cast<long long>(best->batch));
  } else if (!limited || best == fastest) {
    why += ", the best throughput swept";
  }
  if (best != fastest) {  // a limit rules out a faster batch
    const bool l = !latency_ok(*fastest), m = !memory_ok(*fastest);
    c.binding = Limits(l, m);
    why += Printf("; batch %lld would give %.1f samples/s but break the %s (P95 %.2f ms vs SLO %.2f, "
                  "peak %.1f MB vs budget %.1f)",
                  static_cast<long long>(fastest->batch), fastest->samples_per_s,
                  l && m ? "SLO and the budget" : l ? "latency SLO" : "memory budget",
                  fastest->p95_ms, slo_ms, fastest->peak_memory_mb, budget_mb);
  } else {
    c.binding = "none";
    if (fastest->batch == points.back().batch && points.size() > 1) {
      why += "; throughput still grows at the largest batch swept: sweep larger batches to find its peak";
    }
  }
  c.reason = why;
  return c;
}

std::string DescribeThroughputTrend(const std::vector<SweepPoint>& points,
                                    const std::vector<CacheLevel>& caches, int workers) {
  if (points.size() < 2) return "";
  const SweepPoint* best = &points.front();
  for (const SweepPoint& p : points) {
    if (p.samples_per_s > best->samples_per_s) best = &p;
  }
  const SweepPoint& last = points.back();
  if (best == &last || last.samples_per_s >= kNearBestThroughput * best->samples_per_s) return "";
  std::string out = Printf("throughput falls as the batch grows past %lld: %.1f samples/s at batch "
                           "%lld, %.1f at batch %lld (%+.0f%%)",
                           static_cast<long long>(best->batch), best->samples_per_s,
                           static_cast<long long>(best->batch), last.samples_per_s,
                           static_cast<long long>(last.batch),
                           100 * (last.samples_per_s / best->samples_per_s - 1));
  out += Printf("; peak memory grows from %.1f MB at batch %lld to %.1f MB at batch %lld",
                points.front().peak_memory_mb, static_cast<long long>(points.front().batch),
                last.peak_memory_mb, static_cast<long long>(last.batch));
  // Where peak memory stood against each cache (the capacity of the instances the
  // workers use), and at which batch it outgrew one.
  std::vector<std::string> levels;
  bool crossed = false;
  for (const CacheLevel& c : caches) {
    const int instances = std::max(1, (std::max(workers, 1) + c.shared_by - 1) / c.shared_by);
    const double capacity = static_cast<double>(c.bytes) * instances;
    const std::string name = Printf("L%d (%s)", c.level, FormatBytes(capacity).c_str());
    std::string where;
    for (size_t i = 1; i < points.size() && where.empty(); ++i) {
      if (points[i - 1].peak_memory_mb * 1048576.0 <= capacity &&
          points[i].peak_memory_mb * 1048576.0 > capacity) {
        where = "past " + name + Printf(" between batch %lld and %lld",
                                        static_cast<long long>(points[i - 1].batch),
                                        static_cast<long long>(points[i].batch));
        crossed = true;
      }
    }
    if (where.empty()) {
      where = (points.front().peak_memory_mb * 1048576.0 > capacity ? "above " : "within ") + name +
              " at every batch";
    }
    levels.push_back(where);
  }
  for (size_t i = 0; i < levels.size(); ++i) out += (i ? ", " : "; ") + levels[i];
  if (crossed) out += " (likely cause: once past a cache, each op streams its activations from the next level)";
  return out;
}

StatusOr<SweepResult> RunSweep(const SweepOptions& o,
                               const std::function<void(const std::string&)>& progress) {
  TS_RETURN_IF_ERROR(ValidateBenchOptions(o.bench));
  TS_ASSIGN_OR_RETURN(BenchMode mode, ParseBenchMode(o.bench.mode));
  if (mode.serial) {
    return InvalidArgument("sweep needs a batch mode (batch-fp32, batch-fp16, batch-bf16, batch-int8), not " +
                           o.bench.mode);
  }
  if (o.batch_sizes.empty()) return InvalidArgument("--batch-sizes: empty list");
  if (!(o.slo_ms >= 0 && std::isfinite(o.slo_ms)) || !(o.memory_budget_mb >= 0 && std::isfinite(o.memory_budget_mb))) {
    char got[96];
    std::snprintf(got, sizeof(got), "%g and %g", o.slo_ms, o.memory_budget_mb);
    return InvalidArgument(std::string("--slo-ms and --memory-budget-mb must be finite and >= 0 (0: no limit), got ") +
                           got);
  }
  const std::vector<int64_t> seq_lens =
      o.seq_lens.empty() ? std::vector<int64_t>{o.bench.seq_len} : o.seq_lens;
  SweepResult r;
  std::map<int64_t, std::vector<SweepPoint>> by_seq;
  for (int64_t s : seq_lens) {
    for (int64_t b : o.batch_sizes) {
      if (progress) progress("seq_len " + std::to_string(s) + ", batch " + std::to_string(b));
      BenchOptions bo = o.bench;
      bo.batch_size = b;
      bo.seq_len = s;
      bo.profile = false;
      TS_ASSIGN_OR_RETURN(BenchReport rep, RunBench(bo));
      const BenchResult& j = rep.result;
      SweepPoint p;
      p.batch = b;
      p.seq_len = s;
      p.samples_per_s = j.samples_per_s;
      p.batch_latency_ms = j.batch_latency_ms;
      p.p50_ms = j.latency_p50_ms;
      p.p95_ms = j.latency_p95_ms;
      p.p99_ms = j.latency_p99_ms;
      p.peak_memory_mb = j.max_memory_mb;
      p.threads = j.threads;
      r.points.push_back(p);
      by_seq[s].push_back(p);
    }
  }
  // Peak memory against the caches only where it is the workload's own (the native
  // allocator's): PyTorch's CPU figure is the whole process's resident set.
  const std::vector<CacheLevel> caches =
      o.bench.device == "cpu" && o.bench.engine == "native" ? CpuDataCaches() : std::vector<CacheLevel>{};
  const int workers = r.points.empty() ? 1 : r.points.front().threads;
  for (const auto& [s, pts] : by_seq) {
    r.choices.push_back(ChooseBatch(pts, o.slo_ms, o.memory_budget_mb));
    r.trends.push_back(DescribeThroughputTrend(pts, caches, workers));
  }

  char buf[256];
  std::snprintf(buf, sizeof(buf), "batch sweep: mode %s, %lld iterations (warmup %lld), threads %d\n",
                o.bench.mode.c_str(), static_cast<long long>(o.bench.iterations),
                static_cast<long long>(o.bench.warmup), o.bench.threads);
  r.text = buf;
  std::snprintf(buf, sizeof(buf), "%8s %7s %11s %10s %9s %9s %9s %9s\n", "seq_len", "batch",
                "samples/s", "batch ms", "P50 ms", "P95 ms", "P99 ms", "peak MB");
  r.text += buf;
  nlohmann::json points = nlohmann::json::array();
  for (const SweepPoint& p : r.points) {
    std::snprintf(buf, sizeof(buf), "%8lld %7lld %11.1f %10.3f %9.3f %9.3f %9.3f %9.2f\n",
                  static_cast<long long>(p.seq_len), static_cast<long long>(p.batch),
                  p.samples_per_s, p.batch_latency_ms, p.p50_ms, p.p95_ms, p.p99_ms,
                  p.peak_memory_mb);
    r.text += buf;
    points.push_back({{"seq_len", p.seq_len}, {"batch", p.batch}, {"samples_per_s", p.samples_per_s},
                      {"batch_latency_ms", p.batch_latency_ms}, {"p50_ms", p.p50_ms},
                      {"p95_ms", p.p95_ms}, {"p99_ms", p.p99_ms}, {"peak_memory_mb", p.peak_memory_mb}});
  }
  nlohmann::json choices = nlohmann::json::array();
  if (o.slo_ms > 0 || o.memory_budget_mb > 0) {
    char slo[32] = "none", mem[32] = "none";
    if (o.slo_ms > 0) std::snprintf(slo, sizeof(slo), "%g ms", o.slo_ms);
    if (o.memory_budget_mb > 0) std::snprintf(mem, sizeof(mem), "%g MB", o.memory_budget_mb);
    r.text += std::string("\nlimits: P95 latency ") + slo + ", peak memory " + mem + "\n";
  } else {
    r.text += "\nno limits given (--slo-ms, --memory-budget-mb): the choice is the smallest batch within " +
              std::to_string(static_cast<int>(100 * (1 - kNearBestThroughput))) +
              "% of the best throughput\n";
  }
  for (size_t i = 0; i < r.choices.size(); ++i) {
    const BatchChoice& c = r.choices[i];
    r.text += "seq_len " + std::to_string(c.seq_len) + ": " +
              (c.batch > 0 ? "use batch " + std::to_string(c.batch) + " (binding: " + c.binding + "); "
                           : std::string("")) + c.reason + "\n";
    if (!r.trends[i].empty()) r.text += "seq_len " + std::to_string(c.seq_len) + ": " + r.trends[i] + "\n";
    choices.push_back({{"seq_len", c.seq_len}, {"batch", c.batch}, {"samples_per_s", c.samples_per_s},
                       {"binding", c.binding}, {"reason", c.reason}, {"trend", r.trends[i]}});
  }
  r.json = {{"mode", o.bench.mode}, {"iterations", o.bench.iterations}, {"warmup", o.bench.warmup},
            {"slo_ms", o.slo_ms}, {"memory_budget_mb", o.memory_budget_mb},
            {"points", points}, {"choices", choices}};
  return r;
}

}  // namespace tierscope
