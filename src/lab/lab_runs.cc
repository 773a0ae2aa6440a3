// The lab's benchmark runs: medians of repeated runs, and step 4's final choice.
#include "lab/lab_runs.h"

#include <algorithm>
#include <cmath>

#include "core/stats.h"

namespace tierscope {
namespace {

// FP32 serial and batched outputs of the same samples differ only by summation order.
constexpr double kSerialBatchTolerance = 1e-4;

// The largest |a[i] - b[i]|; infinite when the lengths differ or a value is NaN.
double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size() || a.empty()) return INFINITY;
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    if (!(d <= m)) m = std::isnan(d) ? INFINITY : d;
  }
  return m;
}

}  // namespace

std::vector<std::string> LabModes(const std::string& device) {
  std::vector<std::string> modes = {"serial-fp32", "batch-fp32", "batch-fp16", "batch-bf16"};
  if (device == "cpu") modes.push_back("batch-int8");
  return modes;
}

// The median of `repeats` runs of one mode, and each run's throughput; `output` (when
// given) receives the last run's output.
StatusOr<nlohmann::json> BenchMedian(const BenchOptions& base, const std::string& mode, int repeats,
                                     LabProgress& progress, std::vector<float>* output) {
  std::vector<double> sps, lat, p50, p95, p99;
  double mem = 0, checksum = 0;
  nlohmann::json device, threads, engine, memory_source, runtime;
  for (int r = 0; r < repeats; ++r) {
    progress.Detail(mode + " run " + std::to_string(r + 1) + "/" + std::to_string(repeats));
    BenchOptions o = base;
    o.mode = mode;
    o.keep_output = output != nullptr && r == repeats - 1;
    TS_ASSIGN_OR_RETURN(BenchReport rep, RunBench(o));
    if (o.keep_output) *output = std::move(rep.output);
    const BenchResult& j = rep.result;
    sps.push_back(j.samples_per_s);
    lat.push_back(j.batch_latency_ms);
    p50.push_back(j.latency_p50_ms);
    p95.push_back(j.latency_p95_ms);
    p99.push_back(j.latency_p99_ms);
    mem = std::max(mem, j.max_memory_mb);
    checksum = j.checksum;
    device = j.device;
    threads = j.threads;
    engine = j.engine;
    memory_source = j.memory_source;
    runtime = j.runtime;
  }
  return nlohmann::json{{"samples_per_s", Median(sps)}, {"batch_latency_ms", Median(lat)},
                        {"p50_ms", Median(p50)},        {"p95_ms", Median(p95)},
                        {"p99_ms", Median(p99)},        {"max_memory_mb", mem},
                        {"checksum", checksum},         {"runs_samples_per_s", sps},
                        {"device", device},             {"threads", threads},
                        {"engine", engine},             {"memory_source", memory_source},
                        {"runtime", runtime}};
}

// The median of a mode's runs in steps 0 and 4 together.
double PooledMedian(const nlohmann::json& baseline, const nlohmann::json& final_modes, const char* mode) {
  std::vector<double> v;
  for (const nlohmann::json* step : {&baseline, &final_modes}) {
    for (double x : (*step)[mode]["runs_samples_per_s"]) v.push_back(x);
  }
  return Median(v);
}

// Step 4: every mode again at the workload's batch size, and the method's recommendation
// — `best_mode` at the batch size the sweep recommends. The final configuration is the
// best of the modes (pooled over steps 0 and 4, as the headline shows them) and the
// recommendation (step 4 alone when its batch size is another), so the final figure is
// never below a configuration measured beside it.
StatusOr<nlohmann::json> FinalStep(const BenchOptions& base, const LabOptions& o, int repeats,
                                   const nlohmann::json& baseline, const std::string& best_mode,
                                   const SweepResult& sweep, const std::function<bool(const std::string&)>& valid,
                                   LabProgress& progress, nlohmann::json* commands) {
  nlohmann::json final_modes;
  std::vector<float> serial_out, batch_out;  // the same samples, run both ways
  for (const std::string& mode : LabModes(o.device)) {
    std::vector<float>* keep = mode == "serial-fp32"  ? &serial_out
                               : mode == "batch-fp32" ? &batch_out
                                                      : nullptr;
    TS_ASSIGN_OR_RETURN(final_modes[mode], BenchMedian(base, mode, repeats, progress, keep));
  }
  int64_t recommended_batch = o.batch_size;
  for (const BatchChoice& c : sweep.choices) {
    if (c.seq_len == o.seq_len && c.batch > 0) recommended_batch = c.batch;
  }
  nlohmann::json recommended;
  if (recommended_batch == o.batch_size) {
    recommended = final_modes[best_mode];
  } else {
    BenchOptions rb = base;
    rb.batch_size = recommended_batch;
    TS_ASSIGN_OR_RETURN(recommended, BenchMedian(rb, best_mode, repeats, progress));
    commands->push_back("tierscope bench --mode " + best_mode + " --batch-size " +
                        std::to_string(recommended_batch) + " --seq-len " + std::to_string(o.seq_len) +
                        " --threads " + std::to_string(o.threads) +
                        (o.model_dir.empty() ? "" : " --model " + o.model_dir) +
                        (o.engine == "native" ? "" : " --engine " + o.engine) +
                        (o.device == "cpu" ? "" : " --device " + o.device));
  }
  recommended["mode"] = best_mode;
  recommended["batch_size"] = recommended_batch;

  std::string best = best_mode;
  int64_t best_batch = recommended_batch;
  double best_sps = recommended_batch == o.batch_size ? PooledMedian(baseline, final_modes, best_mode.c_str())
                                                      : recommended["samples_per_s"].get<double>();
  for (const std::string& mode : LabModes(o.device)) {
    const double sps = PooledMedian(baseline, final_modes, mode.c_str());
    if (mode == "serial-fp32" || !valid(mode) || sps <= best_sps) continue;
    best = mode;
    best_batch = o.batch_size;
    best_sps = sps;
  }
  const nlohmann::json& fin = best_batch == o.batch_size ? final_modes[best] : recommended;
  // Serial and batched FP32 run the same samples: their outputs agree element by element
  // (the batched kernels only reorder sums).
  const double max_diff = MaxAbsDiff(serial_out, batch_out);
  const bool outputs_agree = max_diff <= kSerialBatchTolerance;
  bool correct = valid(best) && outputs_agree;
  for (const auto& [mode, r] : final_modes.items()) correct = correct && std::isfinite(r["checksum"].get<double>());
  return nlohmann::json{
      {"modes", final_modes},
      {"recommended", recommended},
      {"mode", best},
      {"batch_size", best_batch},
      {"samples_per_s", best_sps},
      {"p50_ms", fin["p50_ms"]},
      {"p95_ms", fin["p95_ms"]},
      {"p99_ms", fin["p99_ms"]},
      {"max_memory_mb", fin["max_memory_mb"]},
      {"serial_vs_batch_max_abs", std::isfinite(max_diff) ? nlohmann::json(max_diff) : nlohmann::json(nullptr)},
      {"outputs_agree", outputs_agree},
      {"correct", correct},
      {"speedup_over_baseline", best_sps / PooledMedian(baseline, final_modes, "serial-fp32")}};
}

}  // namespace tierscope
