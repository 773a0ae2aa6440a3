// `tierscope sweep`: throughput, latency percentiles and peak memory over batch sizes
// (and, when asked, sequence-length buckets), and the largest batch that meets a latency
// SLO and a memory budget, with the constraint that binds.
#ifndef TIERSCOPE_LAB_SWEEP_H_
#define TIERSCOPE_LAB_SWEEP_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lab/bench.h"

namespace tierscope {

struct SweepOptions {
  BenchOptions bench;  // a batch mode; its seq_len unless seq_lens is set
  std::vector<int64_t> batch_sizes = {1, 4, 16, 64, 128, 256};
  std::vector<int64_t> seq_lens;  // empty: bench.seq_len only
  double slo_ms = 0;              // P95 batch latency limit (0: none)
  double memory_budget_mb = 0;    // peak memory limit (0: none)
};

struct SweepPoint {
  int64_t batch = 0, seq_len = 0;
  double samples_per_s = 0, batch_latency_ms = 0;
  double p50_ms = 0, p95_ms = 0, p99_ms = 0;
  double peak_memory_mb = 0;
};

// For one seq_len: the largest batch meeting both limits, and what binds.
struct BatchChoice {
  int64_t seq_len = 0;
  int64_t batch = 0;            // 0: none meets the limits
  std::string binding;          // "latency", "memory", "latency and memory", "none"
  std::string reason;
};

// Points of one seq_len, in increasing batch order.
BatchChoice ChooseBatch(const std::vector<SweepPoint>& points, double slo_ms,
                        double memory_budget_mb);

struct SweepResult {
  std::vector<SweepPoint> points;
  std::vector<BatchChoice> choices;
  nlohmann::json json;
  std::string text;  // batch_sweep.txt
};

// `progress` (may be null) is told of each point before it runs.
StatusOr<SweepResult> RunSweep(const SweepOptions& options,
                               const std::function<void(const std::string&)>& progress = {});

// "1,4,16" -> {1, 4, 16}; each >= 1.
StatusOr<std::vector<int64_t>> ParseSizeList(const std::string& list, const std::string& flag);

}  // namespace tierscope

#endif  // TIERSCOPE_LAB_SWEEP_H_
