// The lab driver: runs every step, collects summary.json, writes the results directory.
#include "lab/lab.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <tuple>
#include <vector>

#include "analysis/commands.h"
#include "analysis/profilers.h"
#include "analysis/rules.h"
#include "core/paths.h"
#include "core/stats.h"
#include "core/text.h"
#include "inspect/calibrated_spec.h"
#include "lab/predictions.h"
#include "inspect/calibration.h"
#include "inspect/kernel_run.h"
#include "lab/lab_runs.h"
#include "lab/precision_lever.h"
#include "lab/profiler_steps.h"
#include "lab/report_html.h"
#include "lab/study_reference.h"
#include "lab/sweep.h"
#include "lab/validate.h"
#include "model/encoder_shape.h"
#include "tierscope/engine.h"
#include "tierscope/version.h"
#include "workload/bench.h"
#include "workload/torch_bench.h"

namespace tierscope {
namespace {

// The first `limit` rows of a report, as the JSON view writes them (null: none).
nlohmann::json RowsOf(const Table* report, size_t limit) {
  nlohmann::json rows = nlohmann::json::array();
  if (report == nullptr) return rows;
  const nlohmann::json all = TableToJson(*report)["rows"];
  for (size_t i = 0; i < all.size() && i < limit; ++i) rows.push_back(all[i]);
  return rows;
}

// The per-unit counts (trace/units.h) as summary.json carries them: each total over the
// units divided by their number, operators by name.
nlohmann::json PerUnitJson(const UnitCounts& c) {
  nlohmann::json ops = nlohmann::json::object();
  for (const auto& [name, calls] : c.op_calls) ops[name] = c.PerUnit(static_cast<double>(calls));
  return {{"unit", c.unit},
          {"units", c.units},
          {"launches", c.PerUnit(static_cast<double>(c.launches))},
          {"kernels", c.PerUnit(static_cast<double>(c.kernels))},
          {"memory_operations", c.PerUnit(static_cast<double>(c.memory_ops))},
          {"allocations", c.PerUnit(static_cast<double>(c.allocations))},
          {"frees", c.PerUnit(static_cast<double>(c.frees))},
          {"kernel_ns", c.PerUnit(c.kernel_ns)},
          {"operators", ops}};
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

std::string Count(size_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
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

void LabProgress::Warn(const std::string& text) {
  if (tty_) std::cerr << "\r\033[K";
  std::cerr << "[lab " << step_ + 1 << "/7] warning: " << text << "\n";
  if (tty_) std::cerr << "[lab " << step_ + 1 << "/7] " << title_ << std::flush;
}

void LabProgress::Done(const std::string& text) {
  if (tty_) std::cerr << "\r\033[K";
  std::cerr << text << "\n";
}

namespace {

// One run of the lab: each step a method, the results gathered in the summary.
class LabRun {
 public:
  LabRun(const LabOptions& o, LabProgress& progress, std::string dir, EncoderShape cfg)
      : o_(o), progress_(progress), dir_(std::move(dir)), cfg_(std::move(cfg)),
        repeats_(o.repeats > 0 ? o.repeats : (o.quick ? 1 : 3)) {
    base_.engine = o.engine;
    base_.python = o.python;
    base_.timeout_s = o.timeout_s;
    base_.model_dir = o.model_dir;
    base_.batch_size = o.batch_size;
    base_.seq_len = o.seq_len;
    base_.seed = o.seed;
    base_.threads = o.threads;
    base_.device = o.device;
    base_.warmup = o.quick ? 1 : 3;
    base_.iterations = o.quick ? 3 : 10;
    flags_ = " --batch-size " + std::to_string(o.batch_size) + " --seq-len " + std::to_string(o.seq_len) +
             " --threads " + std::to_string(o.threads) + (o.model_dir.empty() ? "" : " --model " + o.model_dir) +
             (o.engine == "native" ? "" : " --engine " + o.engine) + (o.device == "cpu" ? "" : " --device " + o.device);
    // The profiled runs of tiers 1 and 3 run as the study ran its batch: each op once over
    // the whole batch (no row blocks), so their launches and grids read as the study's;
    // the timed runs take the engine's default.
    study_ = base_;
    study_flags_ = flags_;
    if (o.engine == "native") {
      study_.row_block = "off";
      study_flags_ += " --row-block off";
    }
  }

  StatusOr<nlohmann::json> Run() {
    for (const char* sub : {"", "/traces", "/kernels"}) TS_RETURN_IF_ERROR(MakeDirs(o_.out_dir + sub));
    Header();
    TS_RETURN_IF_ERROR(CalibrateAndBaselines());
    TS_RETURN_IF_ERROR(Tier1());
    TS_RETURN_IF_ERROR(Tier2());
    TS_RETURN_IF_ERROR(Tier3());
    Predict();
    TS_RETURN_IF_ERROR(SweepAndValidate());
    progress_.Step(5, "Step 4: the final no-profiler benchmark");
    TS_ASSIGN_OR_RETURN(s_["final"], FinalStep(base_, o_, repeats_, baseline_, best_mode_, sweep_,
                                               [this](const std::string& m) { return Valid(m); }, progress_,
                                               &commands_));
    // The threads lever, measured after its prediction: the batched run on one worker.
    if (o_.engine == "native" && traces_.at("batch").device_units > 1) {
      BenchOptions one = base_;
      one.threads = 1;
      TS_ASSIGN_OR_RETURN(s_["final"]["one_thread"], BenchMedian(one, "batch-fp32", repeats_, progress_));
      commands_.push_back("tierscope bench --mode batch-fp32" + flags_ + " --threads 1");
    }
    // The native engine is correct only when every precision is (a failure is our kernel's).
    if (o_.engine == "native") s_["final"]["correct"] = s_["final"]["correct"].get<bool>() && val_.pass;
    progress_.Step(6, "Summary and report");
    Summarize();
    TS_RETURN_IF_ERROR(Write("summary.json", s_.dump(2) + "\n"));
    TS_RETURN_IF_ERROR(Write("report.html", RenderReportHtml(s_)));
    progress_.Done("lab: results in " + o_.out_dir + "/ (summary.json, report.html)");
    // A precision outside its tolerance is a broken kernel of tierscope's engine: the lab
    // fails. Through PyTorch it is what the user's model does in that precision: the lab
    // leaves it out of every choice and says so (the summary's validation, the diagnosis).
    if (!val_.pass && o_.engine == "native") {
      return Internal("validation FAILED (see " + o_.out_dir +
                      "/validation.json): a precision is outside its tolerance");
    }
    return s_;
  }

 private:
  Status Write(const std::string& name, const std::string& text) {
    return WriteFileAtomic(o_.out_dir + "/" + name, text);
  }

  void Header() {
    s_["schema_version"] = 1;
    s_["tool"] = {{"name", "tierscope"}, {"version", TIERSCOPE_VERSION}};
    s_["created_at"] = UtcNowIso8601();
    s_["command_line"] = o_.command_line;
    s_["quick"] = o_.quick;
    s_["engine"] = o_.engine;
    s_["model"] = {{"dir", dir_},
                   {"name", o_.model_dir.empty() ? "builtin:bert_uncased_L-2_H-128_A-2-synthetic" : o_.model_dir},
                   {"model_type", cfg_.model_type},
                   {"hidden_size", cfg_.hidden_size},
                   {"layers", cfg_.layers},
                   {"heads", cfg_.heads},
                   {"vocab_size", cfg_.vocab_size},
                   {"flops_counted", cfg_.bert_layers}};
    s_["workload"] = {{"batch_size", o_.batch_size}, {"seq_len", o_.seq_len}, {"seed", o_.seed},
                      {"warmup", base_.warmup}, {"iterations", base_.iterations}, {"repeats", repeats_}};
  }

  // Step 0: the peaks tier 3 measures against, measured now rather than trusted from an
  // old cache (one written while the machine was busy would put kernels above 100%), and
  // the no-profiler baselines (the method's mode, the fastest batched one that passes
  // validation, is chosen after it).
  Status CalibrateAndBaselines() {
    progress_.Step(0, "Step 0: calibration and no-profiler baselines");
    progress_.Detail("measuring the device's peaks");
    if (StatusOr<std::unique_ptr<Backend>> device = CreateBackend(o_.device, o_.threads); device.ok()) {
      TS_ASSIGN_OR_RETURN(MachinePeaks peaks, LoadOrMeasureDevicePeaks(**device, /*recalibrate=*/true));
      peaks_ = peaks.ToJson();
      bf16_arithmetic_ = (*device)->props().bf16_arithmetic;
      // The engine's traces against the peaks its own kernels were measured to reach (not
      // PyTorch's: cuBLAS or oneDNN's AMX can exceed tierscope's microkernels' peaks).
      if (o_.engine == "native") ao_.device_spec = CalibratedDeviceSpec(peaks);
      commands_.push_back("tierscope device --recalibrate --threads " + std::to_string(o_.threads) +
                          (o_.device == "cpu" ? "" : " --device " + o_.device));
    } else if (o_.engine == "torch") {
      // PyTorch runs where tierscope's kernels do not (xpu, npu, a GPU this build has no
      // backend for): the study goes on; no share of a peak is drawn from an unmeasured one.
      peaks_ = {{"kind", "unmeasured"},
                {"why", "tierscope has no kernels for " + o_.device + " to measure its peaks with (" +
                            device.status().message() + "); no share of a peak is claimed"}};
      progress_.Detail("peaks not measured: " + peaks_["why"].get<std::string>());
    } else {
      return device.status();
    }
    for (const std::string& mode : LabModes(o_.device)) {
      TS_ASSIGN_OR_RETURN(baseline_[mode], BenchMedian(base_, mode, repeats_, progress_));
      commands_.push_back("tierscope bench --mode " + mode + flags_);
    }
    s_["baseline"] = baseline_;
    return OkStatus();
  }

  // Tier 1: one steady-state work unit of each run, profiled, and their diff.
  Status Tier1() {
    progress_.Step(1, "Tier 1: operator profiles of serial and batched runs");
    for (const auto& [name, mode] : kRuns) {
      progress_.Detail(std::string(name) + " (" + mode + ")");
      BenchOptions p = study_;
      p.mode = mode;
      p.profile = true;
      p.iterations = 2;
      p.profile_skip = 1;
      p.profile_units = 1;
      p.trace_path = o_.out_dir + "/traces/" + name + ".json.gz";
      TS_ASSIGN_OR_RETURN(BenchReport rep, RunBench(p));
      TS_RETURN_IF_ERROR(Write(std::string("tier1_") + name + "_operators.txt", rep.profile_text));
      commands_.push_back("tierscope bench --mode " + std::string(mode) + study_flags_ + " --iterations 2 --profile " +
                          "--profile-skip 1 --profile-units 1 --trace traces/" + name + ".json.gz");
      TS_ASSIGN_OR_RETURN(Trace t, LoadTrace(p.trace_path));
      traces_.emplace(name, std::move(t));
    }
    // Each trace analysed once: the diff and tier 2 read the same typed results.
    for (const auto& [name, t] : traces_) analyses_.emplace(name, Analyze(t, ao_));
    const Trace& serial = traces_.at("serial");
    const Trace& batch = traces_.at("batch");
    const TraceDiff diff = DiffTraces(analyses_.at("serial").index, analyses_.at("batch").index);
    TS_RETURN_IF_ERROR(Write("tier1_diff.txt", RenderDiff(diff, serial, batch, OutputFormat::kText)));
    commands_.push_back("tierscope diff traces/serial.json.gz traces/batch.json.gz");
    tier1_["diff"] = {{"per_unit", diff.per_unit},
                      {"headline", diff.headline},
                      {"summary", RowsOf(&diff.summary, SIZE_MAX)},
                      {"operators", RowsOf(&diff.operators, SIZE_MAX)}};
    return OkStatus();
  }

  // Each lever predicted from the traces (what-if; each precision's GEMMs from tier 3) before
  // step 4's runs measure it: batching from the serial trace, each precision the baselines
  // ran from the batched one.
  void Predict() {
    std::vector<std::string> precisions;
    for (const auto& [mode, run] : baseline_.items()) {
      if (mode.rfind("batch-", 0) == 0 && mode != "batch-fp32") precisions.push_back(mode.substr(6));
    }
    MatrixFactors matrix;
    if (o_.engine == "native" && !precisions.empty()) {
      matrix = ReplayMatrixFactors(study_, o_.quick ? 3 : 10, precisions,
                                   [this](const std::string& d) { progress_.Detail(d); });
      for (const std::string& mode : matrix.replayed) {
        commands_.push_back("tierscope kernel --mode " + mode + study_flags_ + " --warmup 1 --iterations 1 -k 'regex:gemm'");
      }
    }
    // The peaks the predictions use, kept beside them: the recorded commands read the same.
    std::string spec_file;
    if (ao_.device_spec && Write("device_spec.json", DeviceSpecJsonText(*ao_.device_spec)).ok()) {
      spec_file = "device_spec.json";
    }
    s_["predictions"] = PredictLevers(analyses_.at("serial"), analyses_.at("batch"), o_.batch_size, ao_.device_spec,
                                      spec_file, precisions, matrix, o_.engine);
    for (const nlohmann::json& p : s_["predictions"]) {
      commands_.push_back(p["command"].get<std::string>());
      progress_.Detail("predicted " + p["lever"].get<std::string>() + ": " +
                       (p.contains("predicted_speedup") ? "x" + Fixed(p["predicted_speedup"].get<double>(), 2)
                                                        : p["error"].get<std::string>()));
    }
  }

  // Tier 2: each timeline analysed once; the lab reads the typed results.
  Status Tier2() {
    progress_.Step(2, "Tier 2: timelines, system reports and rules");
    for (const auto& [name, a] : analyses_) {
      progress_.Detail(name);
      TS_RETURN_IF_ERROR(Write("tier2_" + name + ".txt", RenderAnalysis(a, OutputFormat::kText)));
      commands_.push_back("tierscope analyze traces/" + name + ".json.gz");
      tier1_[name] = {{"trace", "traces/" + name + ".json.gz"},
                      {"per_unit", PerUnitJson(a.index.counts)},
                      {"operators", RowsOf(a.Report("op_sum"), 12)}};
      if (!a.hottest_kernel.empty()) hottest_[name] = a.hottest_kernel;
      in_use_[name] = a.in_use.percent();
      findings_[name] = a.findings.size();
      tier2_[name] = {{"in_use_pct", a.in_use.percent()},
                      {"kernels", RowsOf(a.Report(a.index.prefix + "_gpu_kern_sum"), 8)},
                      {"api", RowsOf(a.Report(a.index.prefix + "_api_sum"), 4)},
                      {"gaps", RowsOf(a.Report("gaps"), 20)},
                      {"short_kernels", RowsOf(a.Report("short_kernels"), 4)},
                      {"hot_kernels", RowsOf(a.Report("hot_kernels"), 5)},
                      {"findings", FindingsToJson(a.findings)},
                      {"strip", UnitStrip(a)}};
    }
    s_["tier1"] = tier1_;
    s_["tier2"] = tier2_;
    s_["profilers"] = {{"system", ResolveProfiler(o_.system_profiler, o_.device, o_.engine, true)},
                       {"kernel", ResolveProfiler(o_.kernel_profiler, o_.device, o_.engine, false)},
                       {"steps", nlohmann::json::array()}};
    const std::string tool = s_["profilers"]["system"];
    for (const auto& [name, mode] : kRuns) {
      if (tool.empty()) break;
      progress_.Detail(std::string(name) + " through " + tool);
      const nlohmann::json step = SystemProfilerStep(Profiled(tool, name, mode), analyses_.at(name));
      WarnUnlessOk(step);
      s_["profilers"]["steps"].push_back(step);  // its command lines are in the step (not tierscope's)
    }
    return OkStatus();
  }

  // A profiler step that failed or disagrees is said on the terminal too, not only in the
  // summary and the report.
  void WarnUnlessOk(const nlohmann::json& step) {
    if (step.value("status", "") == "ok") return;
    progress_.Warn(step.value("tool", "") + " (" + step.value("run", "") + " run) " + step.value("status", "") + ": " +
                   step.value("note", ""));
  }

  // Tier 3: the hottest kernel of each run, replayed against the peaks.
  Status Tier3() {
    progress_.Step(3, "Tier 3: the hottest kernel of serial and batched runs");
    for (const auto& [name, mode] : kRuns) {
      if (hottest_.count(name) == 0) {
        tier3_["notes"].push_back(std::string(name) + ": the trace has no device kernel to inspect" +
                                  (o_.engine == "torch" && o_.device == "cpu"
                                       ? " (PyTorch on the CPU records operators, not kernels; tier 3 replays the "
                                         "native engine's kernels: lab --engine native)"
                                       : ""));
        continue;
      }
      if (const std::string tool = s_["profilers"]["kernel"]; !tool.empty()) {
        KernelCommandResult kr;
        nlohmann::json step = KernelProfilerStep(Profiled(tool, name, mode), hottest_[name], &kr);
        WarnUnlessOk(step);
        const bool ok = step["status"] == "ok";
        s_["profilers"]["steps"].push_back(std::move(step));
        if (ok) {
          TS_RETURN_IF_ERROR(KeepTier3(name, kr, "kernel --ncu-csv kernels/" + std::string(name) + "." + tool + ".csv" +
                                                     (kr.json.contains("trace")
                                                          ? " --from-trace traces/" + std::string(name) + ".json.gz"
                                                          : "")));
          continue;
        }
      }
      if (o_.engine == "torch") {
        TS_RETURN_IF_ERROR(Tier3FromTrace(name));
        continue;
      }
      progress_.Detail(std::string(name) + ": " + hottest_[name]);
      KernelCommandOptions k;
      k.bench = study_;
      k.bench.mode = mode;
      k.bench.warmup = 1;
      k.bench.iterations = 1;
      k.inspector.filter = {hottest_[name], 0, 1};
      k.inspector.passes = o_.quick ? 3 : 10;
      TS_ASSIGN_OR_RETURN(KernelCommandResult kr, RunKernelCommand(k));
      const std::string file = std::string("kernels/") + name + ".json";
      TS_RETURN_IF_ERROR(Write(file, kr.json.dump(2) + "\n"));
      TS_RETURN_IF_ERROR(Write(std::string("kernels/") + name + ".txt", kr.text));
      commands_.push_back("tierscope kernel --mode " + std::string(mode) + study_flags_ +
                          " --warmup 1 --iterations 1 -k '" + hottest_[name] + "' -o " + file);
      if (kr.reports.empty()) return Internal("tier 3 replayed no launch of " + hottest_[name]);
      tier3_[name] = {{"kernel", hottest_[name]}, {"file", file},
                      {"report", KernelReportsToJson({kr.reports.front()})[0]}};
      peaks_ = kr.peaks.ToJson();  // the peaks tier 3 used (measured again if a replay exceeded them)
    }
    s_["tier3"] = tier3_;
    return OkStatus();
  }

  // The bench run a vendor profiler wraps: this binary, the lab's workload, a pre-delay
  // that keeps loading out of the capture (PyTorch's import and load take seconds).
  ProfilerRun Profiled(const std::string& tool, const char* name, const char* mode) const {
    ProfilerRun r;
    r.tool = tool;
    r.out_dir = o_.out_dir;
    r.name = name;
    r.pre_delay_s = o_.engine == "torch" ? 10 : 2;
    r.timeout_s = o_.timeout_s;
    r.units = 1 + 3;  // the command's --warmup 1 --iterations 3 below
    std::error_code ec;
    const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
    r.command = {ec ? std::string("tierscope") : self, "bench", "--engine", o_.engine, "--mode", mode,
                 "--batch-size", std::to_string(o_.batch_size), "--seq-len", std::to_string(o_.seq_len),
                 "--threads", std::to_string(o_.threads), "--device", o_.device, "--seed", std::to_string(o_.seed),
                 "--warmup", "1", "--iterations", "3", "--pre-delay", std::to_string(static_cast<int>(r.pre_delay_s))};
    if (!o_.model_dir.empty()) r.command.insert(r.command.end(), {"--model", o_.model_dir});
    if (!study_.row_block.empty()) r.command.insert(r.command.end(), {"--row-block", study_.row_block});
    if (o_.engine == "torch") {
      r.command.insert(r.command.end(), {"--python", TorchPython(o_.python), "--timeout", Fixed(o_.timeout_s, 0)});
    }
    return r;
  }

  // A tier-3 result kept for the summary and the report, from whichever source made it.
  Status KeepTier3(const char* name, const KernelCommandResult& kr, const std::string& how) {
    const std::string file = std::string("kernels/") + name + ".json";
    TS_RETURN_IF_ERROR(Write(file, kr.json.dump(2) + "\n"));
    TS_RETURN_IF_ERROR(Write(std::string("kernels/") + name + ".txt", kr.text));
    commands_.push_back("tierscope " + how + " -k '" + hottest_[name] + "' -o " + file);
    tier3_[name] = {{"kernel", hottest_[name]}, {"file", file},
                    {"report", KernelReportsToJson({kr.reports.front()})[0]}};
    return OkStatus();
  }

  // Tier 3 on PyTorch's run: the hottest kernel's launch from its trace (grid, block,
  // duration, and what the run's FLOPs and bytes give); the hardware counters are
  // Nsight Compute's to add.
  Status Tier3FromTrace(const char* name) {
    progress_.Detail(std::string(name) + ": " + hottest_[name] + " (from the trace)");
    KernelCommandOptions k;
    k.trace = o_.out_dir + "/traces/" + name + ".json.gz";
    k.inspector.filter = {hottest_[name], 0, 1};
    TS_ASSIGN_OR_RETURN(KernelCommandResult kr, RunKernelCommand(k));
    if (kr.reports.empty()) return Internal("tier 3 found no launch of " + hottest_[name] + " in the trace");
    TS_RETURN_IF_ERROR(KeepTier3(name, kr, "kernel --from-trace traces/" + std::string(name) + ".json.gz"));
    tier3_["notes"].push_back(std::string(name) + ": from the trace's launch record; Nsight Compute (ncu -k NAME -c 1 "
                              "--section SpeedOfLight --section LaunchStats --section MemoryWorkloadAnalysis --section Occupancy) would add the hardware "
                              "counters: achieved occupancy, throughput as a share of peak, memory traffic per level");
    return OkStatus();
  }

  // Whether a mode's precision passed validation against FP32 (FP32 always does).
  bool Valid(const std::string& mode) const {
    const std::string tag = mode.substr(mode.find('-') + 1);
    return tag == "fp32" || !val_.json.contains(tag) || val_.json[tag].value("pass", false);
  }

  // FP16/BF16 (and INT8) validation against FP32, then the batch sweep in the method's
  // mode: the fastest batched mode whose precision passed.
  Status SweepAndValidate() {
    progress_.Step(4, "Batch sweep and FP16/BF16 validation");
    progress_.Detail("validation");
    ValidateOptions vo;
    vo.engine = o_.engine;
    vo.python = o_.python;
    vo.timeout_s = o_.timeout_s;
    vo.model_dir = o_.model_dir;
    vo.batch_size = o_.batch_size;
    vo.seq_len = o_.seq_len;
    vo.seed = o_.seed;
    vo.threads = o_.threads;
    vo.device = o_.device;
    TS_ASSIGN_OR_RETURN(val_, RunValidation(vo));
    TS_RETURN_IF_ERROR(Write("validation.json", val_.json.dump(2) + "\n"));
    commands_.push_back("tierscope validate" + flags_);
    s_["validation"] = val_.json;
    best_mode_ = "batch-fp32";
    for (const std::string& mode : LabModes(o_.device)) {
      if (mode != "serial-fp32" && Valid(mode) &&
          baseline_[mode]["samples_per_s"] > baseline_[best_mode_]["samples_per_s"]) {
        best_mode_ = mode;
      }
    }
    SweepOptions so;
    so.bench = base_;
    so.bench.mode = best_mode_;
    so.bench.warmup = 1;
    so.bench.iterations = o_.quick ? 2 : 5;
    so.batch_sizes = o_.quick ? std::vector<int64_t>{1, 16, 64} : std::vector<int64_t>{1, 4, 16, 64, 128, 256};
    TS_ASSIGN_OR_RETURN(sweep_, RunSweep(so, [&](const std::string& w) { progress_.Detail("sweep " + w); }));
    TS_RETURN_IF_ERROR(Write("batch_sweep.txt", sweep_.text));
    TS_RETURN_IF_ERROR(Write("batch_sweep.json", sweep_.json.dump(2) + "\n"));
    commands_.push_back("tierscope sweep --mode " + best_mode_ + flags_ + " --warmup 1 --iterations " +
                        std::to_string(so.bench.iterations));
    s_["sweep"] = sweep_.json;
    return OkStatus();
  }

  // The headline, the chain of evidence in words, and where everything is.
  void Summarize() {
    const nlohmann::json& fin = s_["final"];
    const nlohmann::json& final_modes = fin["modes"];
    const std::string best = fin["mode"];
    const int64_t best_batch = fin["batch_size"];
    const double best_sps = fin["samples_per_s"];
    // Throughputs at the workload's batch size pool the runs of step 0 and step 4 (on a
    // shared machine one step's runs can drift by tens of percent).
    const auto pooled = [&](const char* mode) { return PooledMedian(baseline_, final_modes, mode); };
    const double serial_sps = pooled("serial-fp32"), batch_sps = pooled("batch-fp32");
    const double fp16_sps = pooled("batch-fp16");
    lever_ = ChooseLever(pooled);  // the headline's lever and the diagnosis's line
    s_["headline"] = {{"baseline_mode", "serial-fp32"},
                      {"baseline_samples_per_s", serial_sps},
                      {"batch_samples_per_s", batch_sps},
                      {"batch_speedup", batch_sps / serial_sps},
                      {"fp16_samples_per_s", fp16_sps},
                      {"fp16_speedup_over_batch", fp16_sps / batch_sps},
                      {"final_mode", best},
                      {"final_batch_size", best_batch},
                      {"final_samples_per_s", best_sps},
                      {"final_speedup", best_sps / serial_sps},
                      {"pooled_runs", 2 * repeats_},
                      {"baseline_memory_mb", baseline_["serial-fp32"]["max_memory_mb"]},
                      {"final_memory_mb", fin["max_memory_mb"]},
                      {"fp16_cosine", val_.json["fp16"]["cosine"]},
                      {"precision_lever", PrecisionLeverJson(pooled)},
                      {"validation_pass", val_.pass}};
    // Measured by step 4's runs alone: made after the predictions.
    AddMeasured(s_["predictions"], [&](const std::string& lever) {
      if (lever == kOneThreadLever) {
        const double b = final_modes.contains("batch-fp32") ? final_modes["batch-fp32"].value("samples_per_s", 0.0) : 0;
        return b > 0 && fin.contains("one_thread") ? fin["one_thread"].value("samples_per_s", 0.0) / b : 0.0;
      }
      const std::string base = lever == "batch-fp32" ? "serial-fp32" : "batch-fp32";
      if (!final_modes.contains(lever) || !final_modes.contains(base)) return 0.0;
      const double b = final_modes[base].value("samples_per_s", 0.0);
      return b > 0 ? final_modes[lever].value("samples_per_s", 0.0) / b : 0.0;
    });
    s_["diagnosis"] = Chain(serial_sps);
    if (auto study = StudyComparison(cfg_, o_.batch_size, o_.seq_len, s_)) s_["study"] = std::move(*study);
    s_["machine"] = {{"device", baseline_["batch-fp32"]["device"]},
                     {"threads", baseline_["batch-fp32"]["threads"]},
                     {"peaks", peaks_}};
    s_["commands"] = commands_;
    s_["files"] = {{"summary", "summary.json"}, {"validation", "validation.json"},
                   {"sweep", "batch_sweep.txt"}, {"report", "report.html"},
                   {"traces", {"traces/serial.json.gz", "traces/batch.json.gz"}},
                   {"kernels", nlohmann::json::array()}};
    for (const char* run : {"serial", "batch"}) {
      if (tier3_.contains(run)) s_["files"]["kernels"].push_back(tier3_[run]["file"]);
    }
  }

  // The precision lever that pays on this device, and why (precision_lever.h): the
  // candidates from the calibrated peaks, the verdict from the pooled runs and validation.
  PrecisionLever ChooseLever(const std::function<double(const char*)>& pooled) const {
    LeverInputs in;
    in.engine = o_.engine;
    in.device = o_.device;
    in.peaks = peaks_;
    in.bf16_arithmetic = bf16_arithmetic_;
    in.modes = LabModes(o_.device);
    in.valid = [this](const std::string& m) { return Valid(m); };
    in.pooled = [&pooled](const std::string& m) { return pooled(m.c_str()); };
    return ChoosePrecisionLever(in);
  }

  // lever_ as the summary's precision_lever: its figures pooled, its validation's cosine.
  nlohmann::json PrecisionLeverJson(const std::function<double(const char*)>& pooled) const {
    const std::string& mode = lever_.mode;
    const std::string& why = lever_.why;
    const double fp32_sps = pooled("batch-fp32");
    const double sps = pooled(mode.c_str());
    const std::string tag = mode.substr(mode.find('-') + 1);  // batch-fp16 -> fp16: its validation entry
    if (tag == "fp32") {
      return {{"mode", mode}, {"why", why}, {"samples_per_s", sps}, {"speedup_over_batch", 1.0},
              {"fp16_speedup_over_batch", pooled("batch-fp16") / fp32_sps}, {"cosine", 1.0}, {"max_abs", 0.0}};
    }
    return {{"mode", mode},
            {"why", why},
            {"samples_per_s", sps},
            {"speedup_over_batch", sps / fp32_sps},
            {"fp16_speedup_over_batch", pooled("batch-fp16") / fp32_sps},
            {"cosine", val_.json[tag]["cosine"]},
            {"max_abs", val_.json[tag]["max_abs"]}};
  }

  // The evidence chain in words, from the typed results of each step.
  nlohmann::json Chain(double serial_sps) {
    const nlohmann::json& fin = s_["final"];
    nlohmann::json chain = nlohmann::json::array();
    const auto linear = [&](const std::string& run) {
      const UnitCounts& c = analyses_.at(run).index.counts;
      auto it = c.op_calls.find("aten::linear");
      return c.PerUnit(it == c.op_calls.end() ? 0.0 : static_cast<double>(it->second));
    };
    const auto launches = [&](const std::string& run) {
      const UnitCounts& c = analyses_.at(run).index.counts;
      return c.PerUnit(static_cast<double>(c.launches));
    };
    const auto operators = [&](const std::string& run) {
      const UnitCounts& c = analyses_.at(run).index.counts;
      double calls = 0;
      for (const auto& [name, n] : c.op_calls) calls += static_cast<double>(n);
      return c.PerUnit(calls);
    };
    // PyTorch on the CPU records operators only: no launches, no device timeline to claim.
    const bool kernels = launches("serial") > 0 || launches("batch") > 0;
    chain.push_back("Tier 1: per work unit of " + std::to_string(o_.batch_size) + " samples, aten::linear runs " +
                    Fixed(linear("serial"), 0) + " times serially and " + Fixed(linear("batch"), 0) +
                    " times batched; " +
                    (kernels ? "kernel launches fall from " + Fixed(launches("serial"), 0) + " to " +
                                   Fixed(launches("batch"), 0)
                             : "operator calls fall from " + Fixed(operators("serial"), 0) + " to " +
                                   Fixed(operators("batch"), 0) + " (the trace holds host operators only, no kernels)") +
                    ".");
    chain.push_back((kernels ? "Tier 2: the device is in use " + Fixed(in_use_["serial"], 1) +
                                   "% of the serial window and " + Fixed(in_use_["batch"], 1) + "% of the batched one; "
                             : std::string("Tier 2: no device timeline (host operators only); ")) +
                    Count(findings_["serial"], "finding") + " serially, " + Count(findings_["batch"], "finding") +
                    " batched.");
    for (const char* run : {"serial", "batch"}) {
      if (!tier3_.contains(run)) continue;
      chain.push_back(std::string("Tier 3 (") + run + "): " + tier3_[run]["kernel"].get<std::string>() + " — " +
                      tier3_[run]["report"]["recommendation"]["verdict"].get<std::string>());
    }
    for (const PrecisionCheck& c : val_.checks) {
      if (c.pass) continue;
      chain.push_back("Validation: " + c.dtype + " is outside its tolerance of FP32 on this model (cosine " +
                      Fixed(c.diff.cosine, 6) + ", max abs " + Fixed(c.diff.max_abs, 4) + "; needs cosine >= " +
                      Fixed(c.min_cosine, 4) + ", max abs <= " + Fixed(c.max_abs_limit, 2) +
                      "): left out of the sweep, the precision lever and the final choice.");
    }
    for (const std::string& trend : sweep_.trends) {
      if (!trend.empty()) chain.push_back("Sweep (" + best_mode_ + "): " + trend + ".");
    }
    const nlohmann::json& lever = s_["headline"]["precision_lever"];
    chain.push_back(lever_.mode == "batch-fp32"
                        ? lever_.diagnosis + ": batch-fp32 stays, at " + Fixed(lever["samples_per_s"].get<double>(), 1) +
                              " samples/s."
                        : lever_.diagnosis + ". Measured: " + Fixed(lever["samples_per_s"].get<double>(), 1) +
                              " samples/s, " + Fixed(lever["speedup_over_batch"].get<double>(), 2) +
                              "x batch-fp32 (batch-fp16: " + Fixed(lever["fp16_speedup_over_batch"].get<double>(), 2) +
                              "x), output cosine " + Fixed(lever["cosine"].get<double>(), 8) + " vs FP32.");
    const double best_sps = fin["samples_per_s"];
    const nlohmann::json& diff = fin["serial_vs_batch_max_abs"];
    chain.push_back("Step 4: " + fin["mode"].get<std::string>() + " at batch " +
                    std::to_string(fin["batch_size"].get<int64_t>()) + " runs " + Fixed(best_sps, 1) +
                    " samples/s, " + Fixed(best_sps / serial_sps, 2) + "x the serial FP32 baseline (the method " +
                    "recommends " + best_mode_ + " at batch " +
                    std::to_string(fin["recommended"]["batch_size"].get<int64_t>()) + "); FP16 output cosine " +
                    Fixed(val_.json["fp16"]["cosine"].get<double>(), 8) + " vs FP32; serial and batched FP32 " +
                    "outputs " + (fin["outputs_agree"].get<bool>() ? "agree" : "DISAGREE") +
                    " element by element (max abs " +
                    (diff.is_number() ? Fixed(diff.get<double>(), 7) : std::string("n/a")) + ").");
    return chain;
  }

  static constexpr std::pair<const char*, const char*> kRuns[] = {{"serial", "serial-fp32"},
                                                                  {"batch", "batch-fp32"}};
  const LabOptions& o_;
  LabProgress& progress_;
  const std::string dir_;
  const EncoderShape cfg_;
  const int repeats_;
  BenchOptions base_, study_;  // study_: the profiled runs' (see the constructor)
  std::string flags_, study_flags_;
  AnalysisOptions ao_;
  nlohmann::json s_, commands_ = nlohmann::json::array(), baseline_, peaks_, tier1_, tier2_, tier3_;
  std::string best_mode_ = "batch-fp32";
  PrecisionLever lever_;  // the precision step's verdict (ChooseLever, in Summarize)
  bool bf16_arithmetic_ = false;  // the device's engine computes BF16 runs in BF16 (DeviceProps)
  std::map<std::string, Trace> traces_;           // node-based: analyses_ point into it
  std::map<std::string, TraceAnalysis> analyses_;
  std::map<std::string, std::string> hottest_;
  std::map<std::string, double> in_use_;
  std::map<std::string, size_t> findings_;
  SweepResult sweep_;
  ValidationResult val_;
};

}  // namespace

StatusOr<nlohmann::json> RunLab(const LabOptions& o, LabProgress& progress) {
  if (o.batch_size < 1 || o.seq_len < 1) return InvalidArgument("--batch-size and --seq-len must be >= 1");
  if (o.threads < 0) return InvalidArgument("--threads must be >= 0");
  if (o.repeats < 0 || o.repeats > 1000) {
    return InvalidArgument("--repeats must be between 0 and 1000, got " + std::to_string(o.repeats));
  }
  if (o.out_dir.empty()) return InvalidArgument("--out must name a directory");
  if (o.engine != "native" && o.engine != "torch") {
    return InvalidArgument("--engine must be native or torch, got '" + o.engine + "'");
  }
  for (const auto& [flag, choice, names] :
       {std::tuple<const char*, const std::string&, std::vector<std::string>>{"--system-profiler", o.system_profiler,
                                                                             {"nsys", "msys"}},
        {"--kernel-profiler", o.kernel_profiler, {"ncu", "mcu"}}}) {
    const std::string tool = ToolName(choice);
    if (choice != "auto" && choice != "none" && std::find(names.begin(), names.end(), tool) == names.end()) {
      return InvalidArgument(std::string(flag) + " must be auto, none, " + names[0] + " or " + names[1] +
                             " (or a path to one), got '" + choice + "'");
    }
  }
  TS_ASSIGN_OR_RETURN(std::string dir, ResolveModelDir(o.model_dir));
  // The native engine runs BERT (its config checked whole); PyTorch any encoder.
  if (o.engine == "native") TS_RETURN_IF_ERROR(LoadBertConfig(dir + "/config.json").status());
  TS_ASSIGN_OR_RETURN(EncoderShape cfg, LoadEncoderShape(dir + "/config.json"));
  if (cfg.positions > 0 && o.seq_len > cfg.positions) {
    return InvalidArgument("--seq-len " + std::to_string(o.seq_len) + " exceeds the model's " +
                           std::to_string(cfg.positions) + " positions");
  }
  LabRun run(o, progress, std::move(dir), std::move(cfg));
  return run.Run();
}

}  // namespace tierscope
