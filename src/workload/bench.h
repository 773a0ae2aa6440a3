// `tierscope bench`: the study's bert_infer.py in C++. Times serial (a loop of batch-1
// forwards) or batched forwards without any profiler, and reports RESULT_JSON.
#ifndef TIERSCOPE_WORKLOAD_BENCH_H_
#define TIERSCOPE_WORKLOAD_BENCH_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "trace/trace.h"
#include "tierscope/engine.h"
#include "tierscope/status.h"

namespace tierscope {

struct BenchOptions {
  // native: tierscope's engine; torch: the model through PyTorch and transformers in a
  // Python process (torch_bench.h).
  std::string engine = "native";
  std::string python;     // torch: the Python to run (empty: TIERSCOPE_PYTHON, the test venv's, python3)
  std::string model_dir;  // empty: the built-in default model
  std::string mode = "batch-fp32";
  int64_t batch_size = 64;
  int64_t seq_len = 128;
  int64_t warmup = 3;
  int64_t iterations = 10;
  uint64_t seed = 2026;
  double pre_delay_s = 0;
  int threads = 0;
  std::string device = "cpu";  // cpu | cuda[:N]; torch also xpu, npu, musa
  std::string row_block;  // native: EngineOptions::row_block (auto | off | token rows; empty: the default)
  // torch: a run with no reply in this many seconds stops its worker (0: no limit); the
  // lab's profiler runs take the same limit.
  double timeout_s = 1800;

  // Profiling (tiers 1 and 2). The window opens at the first work unit that is at
  // least `profile_skip` units and `profile_delay_s` seconds past warmup, and closes
  // after `profile_units` units (0: no limit) or `profile_duration_s` seconds (0: no
  // limit), always at a unit boundary — like nsys/msys `--delay --duration`.
  bool profile = false;
  bool graph = false;  // capture the work unit once as a graph and replay it (CUDA)
  std::string trace_path;  // .json or .json.gz; empty: no file
  int64_t profile_skip = 0;
  int64_t profile_units = 0;
  double profile_delay_s = 0;
  double profile_duration_s = 0;
  bool record_shapes = true;
  bool profile_memory = true;
  int64_t table_rows = 25;

  bool keep_output = false;  // BenchReport::output gets the last unit's output
  // Called before each timed unit with its index; an error stops the run there (with the
  // profiler, if any, still attached): a seam for callers that pace or stop a run.
  std::function<Status(int64_t unit)> before_unit;

  // Tier 3: attached for the whole workload, warmup included (not with `profile`).
  LaunchHook* launch_hook = nullptr;
  // Called with the workload's backend after the last unit (tier 3 measures the
  // device's peaks on it); its error is RunBench's.
  std::function<Status(Backend&)> after_run;
};

struct BenchMode {
  bool serial = false;
  DType dtype = DType::kF32;
};

// Parses "serial-fp32", "batch-fp32", "batch-fp16", "batch-bf16", "batch-int8" (dtype is
// the run's precision: kI8 for dynamic INT8 quantization).
StatusOr<BenchMode> ParseBenchMode(const std::string& mode);
// Checks the options that do not need the model (InvalidArgument on a bad value).
Status ValidateBenchOptions(const BenchOptions& options);
// Resolves options.model_dir (the default model when empty) to a directory.
StatusOr<std::string> ResolveModelDir(const std::string& model_dir);

// input_ids uniform in [100, vocab) from a generator seeded by `seed`, [batch, seq].
std::vector<int64_t> BenchInputIds(uint64_t seed, int64_t batch, int64_t seq_len,
                                   int64_t vocab_size);

// One run's figures, typed for the commands that read them (sweep, lab, tier 3); ToJson()
// is the RESULT_JSON object that `bench` prints.
struct BenchResult {
  std::string engine = "native";
  std::string model, model_dir, mode, dtype, device;
  int64_t batch_size = 0, seq_len = 0, warmup = 0, iterations = 0;
  uint64_t seed = 0;
  int threads = 0;
  bool graph = false;
  double total_s = 0;
  double batch_latency_ms = 0, sample_latency_ms = 0;  // means over the timed units
  double samples_per_s = 0;
  // Per timed unit (core/stats.h's percentile).
  double latency_p50_ms = 0, latency_p95_ms = 0, latency_p99_ms = 0, latency_min_ms = 0, latency_max_ms = 0;
  double checksum = 0;  // core/checksum.h: order-sensitive
  double max_memory_mb = 0, weight_memory_mb = 0;
  std::string memory_source;      // what max_memory_mb measured
  nlohmann::json runtime;         // the engine's versions (torch: Python's, torch's, transformers')
  double flops_per_sample = 0;  // BertModel::FlopsPerSample at seq_len
  bool profiled = false;
  int64_t profiled_units = 0;  // with `profiled`
  std::string trace;           // with `profiled` and a trace file
  nlohmann::json ToJson() const;
};

struct BenchReport {
  BenchResult result;
  std::string profile_text;  // key_averages table and per-unit summary, when profiled
  std::vector<float> output;  // [batch, seq_len, hidden] of the last unit, with keep_output
};

// Runs the benchmark; returns its figures (and the profile, if asked).
StatusOr<BenchReport> RunBench(const BenchOptions& options);

// What the timed loop measured, for BenchResult: each engine fills it its own way.
struct Measured {
  double total_s = 0;
  std::vector<double> unit_ms;
  int64_t peak_bytes = 0;
  std::string memory_source;
  double checksum = 0;
  int64_t profiled_units = 0;
  int threads = 0;
  std::string device;
  int64_t weight_bytes = 0;
  double flops_per_sample = 0;
  nlohmann::json runtime = nlohmann::json::object();
};
// The run's figures from its measurements: one definition of every one for both engines.
BenchResult MakeBenchResult(const BenchOptions& o, const BenchMode& mode, const std::string& model_dir,
                            const Measured& m);

// The key_averages table and the per-unit summary of a profiled run's trace.
std::string ProfileText(const Trace& trace, const BenchOptions& o, const char* unit_name, int64_t units);

// "RESULT_JSON={...}" with sorted keys.
std::string FormatResultLine(const nlohmann::json& result);

}  // namespace tierscope

#endif  // TIERSCOPE_WORKLOAD_BENCH_H_
