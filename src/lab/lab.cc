// The lab driver: runs every step, collects summary.json, writes the results directory.
#include "lab/lab.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>

#include "analysis/commands.h"
#include "analysis/rules.h"
#include "core/paths.h"
#include "core/stats.h"
#include "core/text.h"
#include "inspect/calibration.h"
#include "inspect/kernel_run.h"
#include "lab/report_html.h"
#include "lab/sweep.h"
#include "lab/validate.h"
#include "tierscope/engine.h"
#include "tierscope/version.h"
#include "workload/bench.h"

namespace tierscope {
namespace {

const char* const kModes[] = {"serial-fp32", "batch-fp32", "batch-fp16", "batch-bf16"};
// FP32 serial and batched outputs of the same samples differ only by summation order.
constexpr double kSerialBatchTolerance = 1e-4;


// The median of `repeats` runs of one mode, and each run's throughput; `output` (when
// given) receives the last run's output.
StatusOr<nlohmann::json> BenchMedian(const BenchOptions& base, const std::string& mode, int repeats,
                                     LabProgress& progress, std::vector<float>* output = nullptr) {
  std::vector<double> sps, lat, p50, p95, p99;
  double mem = 0, checksum = 0;
  nlohmann::json device, threads;
  for (int r = 0; r < repeats; ++r) {
    progress.Detail(mode + " run " + std::to_string(r + 1) + "/" + std::to_string(repeats));
    BenchOptions o = base;
    o.mode = mode;
    o.keep_output = output != nullptr && r == repeats - 1;
    TS_ASSIGN_OR_RETURN(BenchReport rep, RunBench(o));
    if (o.keep_output) *output = std::move(rep.output);
    const nlohmann::json& j = rep.result;
    sps.push_back(j["samples_per_s"]);
    lat.push_back(j["batch_latency_ms"]);
    p50.push_back(j["latency_p50_ms"]);
    p95.push_back(j["latency_p95_ms"]);
    p99.push_back(j["latency_p99_ms"]);
    mem = std::max(mem, j["max_memory_mb"].get<double>());
    checksum = j["checksum"];
    device = j["device"];
    threads = j["threads"];
  }
  return nlohmann::json{{"samples_per_s", Median(sps)}, {"batch_latency_ms", Median(lat)},
                        {"p50_ms", Median(p50)},        {"p95_ms", Median(p95)},
                        {"p99_ms", Median(p99)},        {"max_memory_mb", mem},
                        {"checksum", checksum},         {"runs_samples_per_s", sps},
                        {"device", device},             {"threads", threads}};
}

// The first `limit` rows of a report, as the JSON view writes them (null: none).
nlohmann::json RowsOf(const Table* report, size_t limit) {
  nlohmann::json rows = nlohmann::json::array();
  if (report == nullptr) return rows;
  const nlohmann::json all = TableToJson(*report)["rows"];
  for (size_t i = 0; i < all.size() && i < limit; ++i) rows.push_back(all[i]);
  return rows;
}

// The kernels of the first work unit, for the timeline strip: [start_us, dur_us, name],
// each placed in the unit that launched it (trace/units.h).
nlohmann::json UnitStrip(const TraceAnalysis& a) {
  nlohmann::json strip{{"unit", a.index.unit_name}, {"unit_us", 0}, {"kernels", nlohmann::json::array()},
                       {"names", nlohmann::json::array()}};
  if (a.index.units.empty()) return strip;
  const Trace& t = *a.index.trace;
  const WorkUnit& u = a.index.units.front();
  strip["unit_us"] = static_cast<double>(u.end_ns - u.begin_ns) / 1e3;
  const HostTimes host(t);
  std::map<int32_t, int> name_index;
  size_t n = 0;
  for (const Event& e : t.events) {
    if (e.kind != EventKind::kKernel || UnitAt(a.index.units, host.Of(e)) != 0) continue;
    if (++n > 5000) break;
    auto it = name_index.find(e.name);
    if (it == name_index.end()) {
      it = name_index.emplace(e.name, static_cast<int>(name_index.size())).first;
      strip["names"].push_back(std::string(t.strings.Get(e.name)));
    }
    strip["kernels"].push_back({static_cast<double>(e.ts_ns - u.begin_ns) / 1e3,
                                static_cast<double>(e.dur_ns) / 1e3, it->second});
  }
  return strip;
}

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

std::string Count(size_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

// The median of a mode's runs in steps 0 and 4 together.
double PooledMedian(const nlohmann::json& baseline, const nlohmann::json& final_modes, const char* mode) {
  std::vector<double> v;
  for (const nlohmann::json* step : {&baseline, &final_modes}) {
    for (double x : (*step)[mode]["runs_samples_per_s"]) v.push_back(x);
  }
  return Median(v);
}

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

// Step 4: every mode again at the workload's batch size, and the method's recommendation
// — `best_mode` at the batch size the sweep recommends. The final configuration is the
// best of the modes (pooled over steps 0 and 4, as the headline shows them) and the
// recommendation (step 4 alone when its batch size is another), so the final figure is
// never below a configuration measured beside it.
StatusOr<nlohmann::json> FinalStep(const BenchOptions& base, const LabOptions& o, int repeats,
                                   const nlohmann::json& baseline, const std::string& best_mode,
                                   const SweepResult& sweep, bool validation_pass,
                                   LabProgress& progress, nlohmann::json* commands) {
  nlohmann::json final_modes;
  std::vector<float> serial_out, batch_out;  // the same samples, run both ways
  for (const char* mode : kModes) {
    std::vector<float>* keep = std::string(mode) == "serial-fp32"  ? &serial_out
                               : std::string(mode) == "batch-fp32" ? &batch_out
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
                        (o.model_dir.empty() ? "" : " --model " + o.model_dir));
  }
  recommended["mode"] = best_mode;
  recommended["batch_size"] = recommended_batch;

  std::string best = best_mode;
  int64_t best_batch = recommended_batch;
  double best_sps = recommended_batch == o.batch_size ? PooledMedian(baseline, final_modes, best_mode.c_str())
                                                      : recommended["samples_per_s"].get<double>();
  for (const char* mode : kModes) {
    const double sps = PooledMedian(baseline, final_modes, mode);
    if (std::string(mode) == "serial-fp32" || sps <= best_sps) continue;
    best = mode;
    best_batch = o.batch_size;
    best_sps = sps;
  }
  const nlohmann::json& fin = best_batch == o.batch_size ? final_modes[best] : recommended;
  // Serial and batched FP32 run the same samples: their outputs agree element by element
  // (the batched kernels only reorder sums).
  const double max_diff = MaxAbsDiff(serial_out, batch_out);
  const bool outputs_agree = max_diff <= kSerialBatchTolerance;
  bool correct = validation_pass && outputs_agree;
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

}  // namespace

LabProgress::LabProgress(bool tty) : tty_(tty) {}

void LabProgress::Step(int index, const std::string& title) {
  step_ = index;
  title_ = title;
  if (tty_) std::cerr << "\r\033[K";
  std::cerr << "[lab " << index + 1 << "/7] " << title << (tty_ ? "" : "\n") << std::flush;
}

void LabProgress::Detail(const std::string& text) {
  if (tty_) {
    std::cerr << "\r\033[K[lab " << step_ + 1 << "/7] " << title_ << ": " << text << std::flush;
  } else {
    std::cerr << "[lab " << step_ + 1 << "/7]   " << text << "\n";
  }
}

void LabProgress::Done(const std::string& text) {
  if (tty_) std::cerr << "\r\033[K";
  std::cerr << text << "\n";
}

StatusOr<nlohmann::json> RunLab(const LabOptions& o, LabProgress& progress) {
  if (o.batch_size < 1 || o.seq_len < 1) return InvalidArgument("--batch-size and --seq-len must be >= 1");
  if (o.threads < 0) return InvalidArgument("--threads must be >= 0");
  if (o.repeats < 0) return InvalidArgument("--repeats must be >= 0");
  if (o.out_dir.empty()) return InvalidArgument("--out must name a directory");
  const int repeats = o.repeats > 0 ? o.repeats : (o.quick ? 1 : 3);
  TS_ASSIGN_OR_RETURN(std::string dir, ResolveModelDir(o.model_dir));
  TS_ASSIGN_OR_RETURN(BertConfig cfg, LoadBertConfig(dir + "/config.json"));
  if (o.seq_len > cfg.max_position_embeddings) {
    return InvalidArgument("--seq-len " + std::to_string(o.seq_len) + " exceeds the model's " +
                           std::to_string(cfg.max_position_embeddings) + " positions");
  }
  for (const char* sub : {"", "/traces", "/kernels"}) TS_RETURN_IF_ERROR(MakeDirs(o.out_dir + sub));
  const std::string out = o.out_dir;
  const auto write = [&](const std::string& name, const std::string& text) {
    return WriteFileAtomic(out + "/" + name, text);
  };

  BenchOptions base;
  base.model_dir = o.model_dir;
  base.batch_size = o.batch_size;
  base.seq_len = o.seq_len;
  base.seed = o.seed;
  base.threads = o.threads;
  base.device = o.device;
  base.warmup = o.quick ? 1 : 3;
  base.iterations = o.quick ? 3 : 10;
  const std::string flags = " --batch-size " + std::to_string(o.batch_size) + " --seq-len " +
                            std::to_string(o.seq_len) + " --threads " + std::to_string(o.threads) +
                            (o.model_dir.empty() ? "" : " --model " + o.model_dir);

  nlohmann::json s;
  s["schema_version"] = 1;
  s["tool"] = {{"name", "tierscope"}, {"version", TIERSCOPE_VERSION}};
  s["created_at"] = UtcNowIso8601();
  s["command_line"] = o.command_line;
  s["quick"] = o.quick;
  s["model"] = {{"dir", dir},
                {"name", o.model_dir.empty() ? "builtin:bert_uncased_L-2_H-128_A-2-synthetic" : o.model_dir},
                {"hidden_size", cfg.hidden_size},
                {"layers", cfg.num_hidden_layers},
                {"heads", cfg.num_attention_heads},
                {"vocab_size", cfg.vocab_size}};
  s["workload"] = {{"batch_size", o.batch_size}, {"seq_len", o.seq_len}, {"seed", o.seed},
                   {"warmup", base.warmup}, {"iterations", base.iterations}, {"repeats", repeats}};
  nlohmann::json commands = nlohmann::json::array();

  // The peaks tier 3 measures against, measured now rather than trusted from an old
  // cache (a cache written while the machine was busy would put kernels above 100%).
  progress.Step(0, "Step 0: calibration and no-profiler baselines");
  progress.Detail("measuring the device's peaks");
  nlohmann::json machine;
  {
    TS_ASSIGN_OR_RETURN(auto device, CreateBackend(o.device, o.threads));
    TS_ASSIGN_OR_RETURN(MachinePeaks peaks, LoadOrMeasureDevicePeaks(*device, /*recalibrate=*/true));
    machine = peaks.ToJson();
  }
  commands.push_back("tierscope device --recalibrate --threads " + std::to_string(o.threads) +
                     (o.device == "cpu" ? "" : " --device " + o.device));
  nlohmann::json baseline;
  for (const char* mode : kModes) {
    TS_ASSIGN_OR_RETURN(baseline[mode], BenchMedian(base, mode, repeats, progress));
    commands.push_back("tierscope bench --mode " + std::string(mode) + flags);
  }
  s["baseline"] = baseline;
  // The method's choice of mode: the fastest batched one at the workload's batch size.
  std::string best_mode = "batch-fp32";
  for (const char* mode : kModes) {
    if (std::string(mode) != "serial-fp32" &&
        baseline[mode]["samples_per_s"] > baseline[best_mode]["samples_per_s"]) {
      best_mode = mode;
    }
  }

  // Tier 1 and 2: one steady-state work unit of each, profiled.
  progress.Step(1, "Tier 1: operator profiles of serial and batched runs");
  AnalysisOptions ao;
  std::map<std::string, Trace> traces;
  nlohmann::json tier1, tier2;
  for (const auto& [name, mode] : {std::pair<std::string, std::string>{"serial", "serial-fp32"},
                                   {"batch", "batch-fp32"}}) {
    progress.Detail(name + " (" + mode + ")");
    BenchOptions p = base;
    p.mode = mode;
    p.profile = true;
    p.iterations = 2;
    p.profile_skip = 1;
    p.profile_units = 1;
    p.trace_path = out + "/traces/" + name + ".json.gz";
    TS_ASSIGN_OR_RETURN(BenchReport rep, RunBench(p));
    TS_RETURN_IF_ERROR(write("tier1_" + name + "_operators.txt", rep.profile_text));
    commands.push_back("tierscope bench --mode " + mode + flags + " --iterations 2 --profile " +
                       "--profile-skip 1 --profile-units 1 --trace traces/" + name + ".json.gz");
    TS_ASSIGN_OR_RETURN(Trace t, LoadTrace(p.trace_path));
    traces.emplace(name, std::move(t));
  }
  const Trace& serial = traces.at("serial");
  const Trace& batch = traces.at("batch");
  const TraceDiff diff = DiffTraceAnalysis(serial, batch, ao);
  TS_RETURN_IF_ERROR(write("tier1_diff.txt", RenderDiff(diff, serial, batch, OutputFormat::kText)));
  commands.push_back("tierscope diff traces/serial.json.gz traces/batch.json.gz");
  tier1["diff"] = {{"per_unit", diff.per_unit},
                   {"headline", diff.headline},
                   {"summary", RowsOf(&diff.summary, SIZE_MAX)},
                   {"operators", RowsOf(&diff.operators, SIZE_MAX)}};

  progress.Step(2, "Tier 2: timelines, system reports and rules");
  std::map<std::string, std::string> hottest;
  std::map<std::string, UnitCounts> per_unit;  // the chain of evidence reads these
  for (const auto& [name, t] : traces) {
    progress.Detail(name);
    const TraceAnalysis a = Analyze(t, ao);
    TS_RETURN_IF_ERROR(write("tier2_" + name + ".txt", RenderAnalysis(a, OutputFormat::kText)));
    commands.push_back("tierscope analyze traces/" + name + ".json.gz");
    tier1[name] = {{"trace", "traces/" + name + ".json.gz"},
                   {"units", RowsOf(a.Report("units"), 50)},
                   {"operators", RowsOf(a.Report("op_sum"), 12)}};
    if (!a.hottest_kernel.empty()) hottest[name] = a.hottest_kernel;
    per_unit[name] = a.index.counts;
    tier2[name] = {{"in_use_pct", a.in_use.percent()},
                   {"kernels", RowsOf(a.Report(a.index.prefix + "_gpu_kern_sum"), 8)},
                   {"api", RowsOf(a.Report(a.index.prefix + "_api_sum"), 4)},
                   {"gaps", RowsOf(a.Report("gaps"), 20)},
                   {"short_kernels", RowsOf(a.Report("short_kernels"), 4)},
                   {"hot_kernels", RowsOf(a.Report("hot_kernels"), 5)},
                   {"findings", FindingsToJson(a.findings)},
                   {"strip", UnitStrip(a)}};
  }
  s["tier1"] = tier1;
  s["tier2"] = tier2;

  // Tier 3: the hottest kernel of each run, replayed.
  progress.Step(3, "Tier 3: the hottest kernel of serial and batched runs");
  nlohmann::json tier3;
  for (const auto& [name, mode] : {std::pair<std::string, std::string>{"serial", "serial-fp32"},
                                   {"batch", "batch-fp32"}}) {
    if (hottest.count(name) == 0) continue;
    progress.Detail(name + ": " + hottest[name]);
    KernelCommandOptions k;
    k.bench = base;
    k.bench.mode = mode;
    k.bench.warmup = 1;
    k.bench.iterations = 1;
    k.inspector.filter = {hottest[name], 0, 1};
    k.inspector.passes = o.quick ? 3 : 10;
    TS_ASSIGN_OR_RETURN(KernelCommandResult kr, RunKernelCommand(k));
    const std::string file = "kernels/" + name + ".json";
    TS_RETURN_IF_ERROR(write(file, kr.json.dump(2) + "\n"));
    TS_RETURN_IF_ERROR(write("kernels/" + name + ".txt", kr.text));
    commands.push_back("tierscope kernel --mode " + mode + flags + " --warmup 1 --iterations 1 -k '" +
                       hottest[name] + "' -o " + file);
    tier3[name] = {{"kernel", hottest[name]}, {"file", file}, {"report", kr.json["reports"][0]}};
    machine = kr.json["machine"];  // the peaks tier 3 used (measured again if a replay exceeded them)
  }
  s["tier3"] = tier3;

  // Batch sweep and validation.
  progress.Step(4, "Batch sweep and FP16/BF16 validation");
  SweepOptions so;
  so.bench = base;
  so.bench.mode = best_mode;
  so.bench.warmup = 1;
  so.bench.iterations = o.quick ? 2 : 5;
  so.batch_sizes = o.quick ? std::vector<int64_t>{1, 16, 64} : std::vector<int64_t>{1, 4, 16, 64, 128, 256};
  TS_ASSIGN_OR_RETURN(SweepResult sweep, RunSweep(so, [&](const std::string& w) { progress.Detail("sweep " + w); }));
  TS_RETURN_IF_ERROR(write("batch_sweep.txt", sweep.text));
  TS_RETURN_IF_ERROR(write("batch_sweep.json", sweep.json.dump(2) + "\n"));
  commands.push_back("tierscope sweep --mode " + best_mode + flags + " --warmup 1 --iterations " +
                     std::to_string(so.bench.iterations));
  s["sweep"] = sweep.json;
  progress.Detail("validation");
  ValidateOptions vo;
  vo.model_dir = o.model_dir;
  vo.batch_size = o.batch_size;
  vo.seq_len = o.seq_len;
  vo.seed = o.seed;
  vo.threads = o.threads;
  vo.device = o.device;
  TS_ASSIGN_OR_RETURN(ValidationResult val, RunValidation(vo));
  TS_RETURN_IF_ERROR(write("validation.json", val.json.dump(2) + "\n"));
  commands.push_back("tierscope validate" + flags);
  s["validation"] = val.json;

  // Step 4 of the study: back to the no-profiler benchmark.
  progress.Step(5, "Step 4: the final no-profiler benchmark");
  TS_ASSIGN_OR_RETURN(s["final"], FinalStep(base, o, repeats, baseline, best_mode, sweep, val.pass,
                                            progress, &commands));
  const nlohmann::json& final_modes = s["final"]["modes"];
  const std::string best = s["final"]["mode"];
  const int64_t best_batch = s["final"]["batch_size"];
  const int64_t recommended_batch = s["final"]["recommended"]["batch_size"];
  const double best_sps = s["final"]["samples_per_s"];
  const nlohmann::json& fin = best_batch == o.batch_size ? final_modes[best] : s["final"]["recommended"];

  progress.Step(6, "Summary and report");
  // Throughputs at the workload's batch size pool the runs of step 0 and step 4 (on a
  // shared machine one step's runs can drift by tens of percent).
  const auto pooled = [&](const char* mode) { return PooledMedian(baseline, final_modes, mode); };
  const double serial_sps = pooled("serial-fp32");
  const double batch_sps = pooled("batch-fp32");
  const double fp16_sps = pooled("batch-fp16");
  s["headline"] = {
      {"baseline_mode", "serial-fp32"},
      {"baseline_samples_per_s", serial_sps},
      {"batch_samples_per_s", batch_sps},
      {"batch_speedup", batch_sps / serial_sps},
      {"fp16_samples_per_s", fp16_sps},
      {"fp16_speedup_over_batch", fp16_sps / batch_sps},
      {"final_mode", best},
      {"final_batch_size", best_batch},
      {"final_samples_per_s", best_sps},
      {"final_speedup", best_sps / serial_sps},
      {"pooled_runs", 2 * repeats},
      {"baseline_memory_mb", baseline["serial-fp32"]["max_memory_mb"]},
      {"final_memory_mb", fin["max_memory_mb"]},
      {"fp16_cosine", val.json["fp16"]["cosine"]},
      {"validation_pass", val.pass}};
  // The evidence chain in words, from the numbers above.
  nlohmann::json chain = nlohmann::json::array();
  const auto linear = [&](const std::string& run) {
    const UnitCounts& c = per_unit[run];
    auto it = c.op_calls.find("aten::linear");
    return c.PerUnit(it == c.op_calls.end() ? 0.0 : static_cast<double>(it->second));
  };
  const auto launches = [&](const std::string& run) {
    return per_unit[run].PerUnit(static_cast<double>(per_unit[run].launches));
  };
  chain.push_back("Tier 1: per work unit of " + std::to_string(o.batch_size) + " samples, aten::linear runs " +
                  Fixed(linear("serial"), 0) + " times serially and " + Fixed(linear("batch"), 0) +
                  " times batched; kernel launches fall from " + Fixed(launches("serial"), 0) + " to " +
                  Fixed(launches("batch"), 0) + ".");
  chain.push_back("Tier 2: the device is in use " + Fixed(tier2["serial"]["in_use_pct"].get<double>(), 1) +
                  "% of the serial window and " + Fixed(tier2["batch"]["in_use_pct"].get<double>(), 1) +
                  "% of the batched one; " + Count(tier2["serial"]["findings"].size(), "finding") +
                  " serially, " + Count(tier2["batch"]["findings"].size(), "finding") + " batched.");
  for (const char* run : {"serial", "batch"}) {
    if (!tier3.contains(run)) continue;
    const auto& rep = tier3[run]["report"];
    chain.push_back(std::string("Tier 3 (") + run + "): " + tier3[run]["kernel"].get<std::string>() + " — " +
                    rep["recommendation"]["verdict"].get<std::string>());
  }
  for (const std::string& trend : sweep.trends) {
    if (!trend.empty()) chain.push_back("Sweep (" + best_mode + "): " + trend + ".");
  }
  chain.push_back("Step 4: " + best + " at batch " + std::to_string(best_batch) + " runs " +
                  Fixed(best_sps, 1) + " samples/s, " + Fixed(best_sps / serial_sps, 2) +
                  "x the serial FP32 baseline (the method recommends " + best_mode + " at batch " +
                  std::to_string(recommended_batch) + "); FP16 output cosine " +
                  Fixed(val.json["fp16"]["cosine"].get<double>(), 8) + " vs FP32; serial and batched " +
                  "FP32 outputs " + (s["final"]["outputs_agree"].get<bool>() ? "agree" : "DISAGREE") +
                  " element by element (max abs " +
                  (s["final"]["serial_vs_batch_max_abs"].is_number()
                       ? Fixed(s["final"]["serial_vs_batch_max_abs"].get<double>(), 7)
                       : std::string("n/a")) +
                  ").");
  s["diagnosis"] = chain;
  s["machine"] = {{"device", baseline["batch-fp32"]["device"]},
                  {"threads", baseline["batch-fp32"]["threads"]},
                  {"peaks", machine}};
  s["commands"] = commands;
  s["files"] = {{"summary", "summary.json"}, {"validation", "validation.json"},
                {"sweep", "batch_sweep.txt"}, {"report", "report.html"},
                {"traces", {"traces/serial.json.gz", "traces/batch.json.gz"}},
                {"kernels", {"kernels/serial.json", "kernels/batch.json"}}};
  TS_RETURN_IF_ERROR(write("summary.json", s.dump(2) + "\n"));
  TS_RETURN_IF_ERROR(write("report.html", RenderReportHtml(s)));
  progress.Done("lab: results in " + out + "/ (summary.json, report.html)");
  if (!val.pass) {
    return Internal("validation FAILED (see " + out + "/validation.json): a precision is outside its tolerance");
  }
  return s;
}

}  // namespace tierscope
