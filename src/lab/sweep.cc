// The batch sweep and the batch-size choice under an SLO and a memory budget.
#include "lab/sweep.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>

#include "core/text.h"

namespace tierscope {

StatusOr<std::vector<int64_t>> ParseSizeList(const std::string& list, const std::string& flag) {
  std::vector<int64_t> out;
  for (const std::string& item : SplitList(list)) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || v < 1 || v > 1'000'000) {
      return InvalidArgument(flag + ": '" + item + "' is not a positive integer");
    }
    out.push_back(v);
  }
  if (out.empty()) return InvalidArgument(flag + ": empty list");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

BatchChoice ChooseBatch(const std::vector<SweepPoint>& points, double slo_ms, double budget_mb) {
  BatchChoice c;
  if (points.empty()) return c;
  c.seq_len = points.front().seq_len;
  const auto latency_ok = [&](const SweepPoint& p) { return slo_ms <= 0 || p.p95_ms <= slo_ms; };
  const auto memory_ok = [&](const SweepPoint& p) { return budget_mb <= 0 || p.peak_memory_mb <= budget_mb; };
  const SweepPoint* best = nullptr;
  for (const SweepPoint& p : points) {
    if (latency_ok(p) && memory_ok(p)) best = &p;  // the largest that meets both
  }
  char buf[256];
  if (best == nullptr) {
    const SweepPoint& p = points.front();
    const bool l = !latency_ok(p), m = !memory_ok(p);
    c.binding = l && m ? "latency and memory" : l ? "latency" : "memory";
    std::snprintf(buf, sizeof(buf),
                  "no batch meets the limits: even batch %lld has P95 %.2f ms (SLO %.2f) and "
                  "peak %.1f MB (budget %.1f)",
                  static_cast<long long>(p.batch), p.p95_ms, slo_ms, p.peak_memory_mb, budget_mb);
    c.reason = buf;
    return c;
  }
  c.batch = best->batch;
  const auto next = std::find_if(points.begin(), points.end(),
                                 [&](const SweepPoint& p) { return p.batch > best->batch; });
  if (next == points.end()) {
    c.binding = "none";
    std::snprintf(buf, sizeof(buf),
                  "batch %lld, the largest swept, meets both (P95 %.2f ms, peak %.1f MB); "
                  "sweep larger batches to find the limit",
                  static_cast<long long>(best->batch), best->p95_ms, best->peak_memory_mb);
    c.reason = buf;
    return c;
  }
  const bool l = !latency_ok(*next), m = !memory_ok(*next);
  c.binding = l && m ? "latency and memory" : l ? "latency" : "memory";
  std::snprintf(buf, sizeof(buf),
                "batch %lld: P95 %.2f ms, peak %.1f MB; batch %lld would break the %s (P95 %.2f ms "
                "vs SLO %.2f, peak %.1f MB vs budget %.1f)",
                static_cast<long long>(best->batch), best->p95_ms, best->peak_memory_mb,
                static_cast<long long>(next->batch), c.binding == "latency" ? "latency SLO"
                                                     : c.binding == "memory" ? "memory budget"
                                                                             : "SLO and the budget",
                next->p95_ms, slo_ms, next->peak_memory_mb, budget_mb);
  c.reason = buf;
  return c;
}

StatusOr<SweepResult> RunSweep(const SweepOptions& o,
                               const std::function<void(const std::string&)>& progress) {
  TS_RETURN_IF_ERROR(ValidateBenchOptions(o.bench));
  TS_ASSIGN_OR_RETURN(BenchMode mode, ParseBenchMode(o.bench.mode));
  if (mode.serial) {
    return InvalidArgument("sweep needs a batch mode (batch-fp32, batch-fp16, batch-bf16), not " +
                           o.bench.mode);
  }
  if (o.batch_sizes.empty()) return InvalidArgument("--batch-sizes: empty list");
  if (o.slo_ms < 0 || o.memory_budget_mb < 0) {
    return InvalidArgument("--slo-ms and --memory-budget-mb must be >= 0");
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
      const nlohmann::json& j = rep.result;
      SweepPoint p;
      p.batch = b;
      p.seq_len = s;
      p.samples_per_s = j["samples_per_s"];
      p.batch_latency_ms = j["batch_latency_ms"];
      p.p50_ms = j["latency_p50_ms"];
      p.p95_ms = j["latency_p95_ms"];
      p.p99_ms = j["latency_p99_ms"];
      p.peak_memory_mb = j["max_memory_mb"];
      r.points.push_back(p);
      by_seq[s].push_back(p);
    }
  }
  for (const auto& [s, pts] : by_seq) r.choices.push_back(ChooseBatch(pts, o.slo_ms, o.memory_budget_mb));

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
    r.text += "\nno limits given (--slo-ms, --memory-budget-mb): the choice is the largest batch\n";
  }
  for (const BatchChoice& c : r.choices) {
    r.text += "seq_len " + std::to_string(c.seq_len) + ": " +
              (c.batch > 0 ? "use batch " + std::to_string(c.batch) + " (binding: " + c.binding + "); "
                           : std::string("")) + c.reason + "\n";
    choices.push_back({{"seq_len", c.seq_len}, {"batch", c.batch}, {"binding", c.binding}, {"reason", c.reason}});
  }
  r.json = {{"mode", o.bench.mode}, {"iterations", o.bench.iterations}, {"warmup", o.bench.warmup},
            {"slo_ms", o.slo_ms}, {"memory_budget_mb", o.memory_budget_mb},
            {"points", points}, {"choices", choices}};
  return r;
}

}  // namespace tierscope
