// `tierscope sweep`: throughput, latency percentiles and peak memory over batch sizes
// (and, when asked, sequence-length buckets), and the batch to use: the best throughput
// among the batches that meet a latency SLO and a memory budget (without limits, the
// smallest batch within 5% of the best), with the constraint that binds and, in words,
// how throughput moved as the batch grew.
#ifndef TIERSCOPE_LAB_SWEEP_H_
#define TIERSCOPE_LAB_SWEEP_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cpu_info.h"
#include "core/text.h"
#include "workload/bench.h"

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
  int threads = 0;  // the engine's workers
};

// Without limits, a batch within this share of the best throughput is as good as the
// best, and the smallest such batch is chosen (less latency and memory for the same work).
inline constexpr double kNearBestThroughput = 0.95;

// For one seq_len: the batch to use and what binds.
struct BatchChoice {
  int64_t seq_len = 0;
  int64_t batch = 0;            // 0: none meets the limits
  double samples_per_s = 0;     // of the chosen batch
  // "latency", "memory", "latency and memory": a limit rules out a faster batch;
  // "none": no limit does (the choice is the throughput's own).
  std::string binding;
  std::string reason;
};

// Points of one seq_len, in increasing batch order.
BatchChoice ChooseBatch(const std::vector<SweepPoint>& points, double slo_ms,
                        double memory_budget_mb);

// In words, when throughput falls as the batch grows past its best, and where peak
// memory crossed the data caches (`caches` from CpuDataCaches(); `workers` threads
// share them). "" when throughput does not fall.
std::string DescribeThroughputTrend(const std::vector<SweepPoint>& points,
                                    const std::vector<CacheLevel>& caches, int workers);

struct SweepResult {
  std::vector<SweepPoint> points;
  std::vector<BatchChoice> choices;
  std::vector<std::string> trends;  // per seq_len, DescribeThroughputTrend ("" if none)
  nlohmann::json json;
  std::string text;  // batch_sweep.txt
};

// `progress` (may be null) is told of each point before it runs.
StatusOr<SweepResult> RunSweep(const SweepOptions& options,
                               const std::function<void(const std::string&)>& progress = {});


}  // namespace tierscope

#endif  // TIERSCOPE_LAB_SWEEP_H_
