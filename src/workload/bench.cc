// The no-profiler benchmark (the study's Step 0).
#include "workload/bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "core/checksum.h"
#include "core/paths.h"
#include "core/stats.h"
#include "core/splitmix.h"
#include "model/row_blocks.h"
#include "model/bert.h"
#include "profile/chrome_trace.h"
#include "profile/op_summary.h"
#include "profile/profiler.h"
#include "tierscope/version.h"
#include "workload/torch_bench.h"

namespace tierscope {

StatusOr<BenchMode> ParseBenchMode(const std::string& mode) {
  if (mode == "serial-fp32") return BenchMode{true, DType::kF32};
  if (mode == "batch-fp32") return BenchMode{false, DType::kF32};
  if (mode == "batch-fp16") return BenchMode{false, DType::kF16};
  if (mode == "batch-bf16") return BenchMode{false, DType::kBF16};
  if (mode == "batch-int8") return BenchMode{false, DType::kI8};
  return InvalidArgument("unknown mode '" + mode +
                         "' (valid: serial-fp32, batch-fp32, batch-fp16, batch-bf16, batch-int8)");
}

Status ValidateBenchOptions(const BenchOptions& o) {
  if (o.engine != "native" && o.engine != "torch") {
    return InvalidArgument("--engine must be native or torch, got '" + o.engine + "'");
  }
  TS_RETURN_IF_ERROR(ParseBenchMode(o.mode).status());
  if (!o.row_block.empty()) {
    if (o.engine != "native") return InvalidArgument("--row-block sets the native engine's row blocks, not torch's");
    TS_RETURN_IF_ERROR(ParseRowBlockSetting(o.row_block, "--row-block").status());
  }
  if (o.batch_size < 1) return InvalidArgument("--batch-size must be >= 1, got " + std::to_string(o.batch_size));
  if (o.seq_len < 1) return InvalidArgument("--seq-len must be >= 1, got " + std::to_string(o.seq_len));
  // A million units is days of work for a real model: more is a typo, refused before it runs.
  constexpr int64_t kMaxUnits = 1'000'000;
  if (o.warmup < 0 || o.warmup > kMaxUnits) {
    return InvalidArgument("--warmup must be between 0 and " + std::to_string(kMaxUnits) + ", got " +
                           std::to_string(o.warmup));
  }
  if (o.iterations < 1 || o.iterations > kMaxUnits) {
    return InvalidArgument("--iterations must be between 1 and " + std::to_string(kMaxUnits) + ", got " +
                           std::to_string(o.iterations));
  }
  if (o.threads < 0) return InvalidArgument("--threads must be >= 0, got " + std::to_string(o.threads));
  if (!(o.pre_delay_s >= 0) || o.pre_delay_s > 86400) {
    return InvalidArgument("--pre-delay must be between 0 and 86400 seconds");
  }
  if (o.profile_skip < 0 || o.profile_units < 0 || !(o.profile_delay_s >= 0) ||
      !(o.profile_duration_s >= 0)) {
    return InvalidArgument("--profile-skip, --profile-units, --profile-delay and --profile-duration must be >= 0");
  }
  if (o.profile_skip > kMaxUnits || o.profile_units > kMaxUnits || o.profile_delay_s > 86400 ||
      o.profile_duration_s > 86400) {
    return InvalidArgument("--profile-skip and --profile-units must be at most " + std::to_string(kMaxUnits) +
                           ", --profile-delay and --profile-duration at most 86400 seconds");
  }
  if (!o.trace_path.empty() && !o.profile) return InvalidArgument("--trace needs --profile");
  if (o.table_rows < 0) return InvalidArgument("--table-rows must be >= 0");
  if (!o.model_dir.empty() && !IsDirectory(o.model_dir)) {
    return InvalidArgument("--model " + o.model_dir + ": no such directory");
  }
  return OkStatus();
}

StatusOr<std::string> ResolveModelDir(const std::string& model_dir) {
  if (model_dir.empty()) return EnsureDefaultModel();
  if (!IsDirectory(model_dir)) return InvalidArgument("--model " + model_dir + ": no such directory");
  return model_dir;
}

std::vector<int64_t> BenchInputIds(uint64_t seed, int64_t batch, int64_t seq_len,
                                   int64_t vocab_size) {
  // splitmix64 with rejection sampling: uniform and identical on every platform.
  SplitMix64 rng(seed);
  const int64_t lo = std::min<int64_t>(100, vocab_size - 1);
  const uint64_t range = static_cast<uint64_t>(vocab_size - lo);
  const uint64_t limit = UINT64_MAX - UINT64_MAX % range;
  std::vector<int64_t> ids(static_cast<size_t>(batch * seq_len));
  for (auto& id : ids) {
    uint64_t r;
    do {
      r = rng.Next();
    } while (r >= limit);
    id = lo + static_cast<int64_t>(r % range);
  }
  return ids;
}

namespace {

const char* const kBuiltinModelName = "builtin:bert_uncased_L-2_H-128_A-2-synthetic";

// Everything the run will hold — the ids, every input on the device, the activations,
// the output read back — checked before any of it is allocated.
Status CheckWorkloadMemory(const BertEngine& engine, const BenchOptions& o, const BenchMode& mode) {
  const int64_t B = o.batch_size, S = o.seq_len, H = engine.config().hidden_size;
  int64_t tokens_i = 0;
  if (__builtin_mul_overflow(B, S, &tokens_i) || tokens_i > (int64_t{1} << 50)) {
    return InvalidArgument("--batch-size " + std::to_string(B) + " x --seq-len " + std::to_string(S) +
                           " tokens is too large to address");
  }
  TS_ASSIGN_OR_RETURN(MemoryNeed need, engine.ForwardMemory(mode.serial ? 1 : B, S, {}));
  const double tokens = static_cast<double>(B) * static_cast<double>(S);
  const double es = static_cast<double>(DTypeSize(engine.model().dtype()));
  need.host += tokens * (8 + static_cast<double>(H) * (4 + es));  // the ids; the output read back
  if (mode.serial) need.device += tokens * (12 + static_cast<double>(H) * es);  // all inputs; the output
  need.device += tokens * static_cast<double>(H) * es;  // the last unit's output, held while the next runs
  return engine.CheckMemory(
      need, "--batch-size " + std::to_string(B) + " x --seq-len " + std::to_string(S) + " (" + o.mode + ")");
}

// The inputs on the device before timing: one batch, or one batch-1 slice per sample.
StatusOr<std::vector<BertModel::Inputs>> UploadInputs(BertModel& model, const std::vector<int64_t>& ids,
                                                      int64_t B, int64_t S, bool serial) {
  std::vector<BertModel::Inputs> inputs;
  if (serial) {
    for (int64_t i = 0; i < B; ++i) {
      BatchInput in{1, S, std::vector<int64_t>(ids.begin() + i * S, ids.begin() + (i + 1) * S), {}, {}};
      TS_ASSIGN_OR_RETURN(BertModel::Inputs d, model.Upload(in));
      inputs.push_back(std::move(d));
    }
  } else {
    BatchInput in{B, S, ids, {}, {}};
    TS_ASSIGN_OR_RETURN(BertModel::Inputs d, model.Upload(in));
    inputs.push_back(std::move(d));
  }
  return inputs;
}

// When the profiler records: from the first unit at least profile_skip units and
// profile_delay_s seconds past warmup, for profile_units units or profile_duration_s
// seconds, always at a unit boundary; once closed it never reopens.
class ProfileWindow {
 public:
  ProfileWindow(const BenchOptions& o, int64_t t0) : o_(o), t0_(t0) {}
  // Before timed unit i: opens or closes the window; true while it records.
  bool Update(Profiler& p, int64_t i) {
    const int64_t now = MonotonicNs();
    if (!p.recording() && !closed_ && units_ == 0 && i >= o_.profile_skip &&
        static_cast<double>(now - t0_) * 1e-9 >= o_.profile_delay_s) {
      p.set_recording(true);
      start_ = now;
    }
    if (p.recording() && ((o_.profile_units > 0 && units_ >= o_.profile_units) ||
                          (o_.profile_duration_s > 0 &&
                           static_cast<double>(now - start_) * 1e-9 >= o_.profile_duration_s))) {
      p.set_recording(false);
      closed_ = true;
    }
    if (p.recording()) ++units_;
    return p.recording();
  }
  int64_t units() const { return units_; }

 private:
  const BenchOptions& o_;
  const int64_t t0_;
  int64_t start_ = 0, units_ = 0;
  bool closed_ = false;
};

// What the loaded model and the options must agree on before anything runs.
Status CheckRunOptions(const BenchOptions& o, const BertConfig& cfg) {
  if (o.seq_len > cfg.max_position_embeddings) {
    return InvalidArgument("--seq-len " + std::to_string(o.seq_len) +
                           " exceeds the model's max_position_embeddings " +
                           std::to_string(cfg.max_position_embeddings));
  }
  if (o.launch_hook != nullptr && o.profile) {
    return InvalidArgument("a launch hook and the profiler cannot run together");
  }
  if (o.graph && (o.profile || o.launch_hook != nullptr)) {
    return InvalidArgument("--graph replays a captured unit: it runs without --profile or tier 3");
  }
  return OkStatus();
}

// The graph path: one unit captured (its buffers come from the allocator's cache, warm
// after the warmup, and its output stays held in *out), replayed once before timing.
Status CaptureUnit(Backend& backend, const std::function<StatusOr<Tensor>()>& run_unit,
                   std::unique_ptr<Graph>* graph, Tensor* out) {
  TS_RETURN_IF_ERROR(backend.BeginCapture());
  StatusOr<Tensor> captured = run_unit();
  StatusOr<std::unique_ptr<Graph>> g = backend.EndCapture();  // closes the capture either way
  TS_RETURN_IF_ERROR(captured.status());
  TS_RETURN_IF_ERROR(g.status());
  *graph = std::move(*g);
  *out = std::move(*captured);
  TS_RETURN_IF_ERROR(backend.LaunchGraph(**graph));
  return backend.Synchronize();
}

}  // namespace

BenchResult MakeBenchResult(const BenchOptions& o, const BenchMode& mode, const std::string& dir, const Measured& m) {
  std::vector<double> sorted = m.unit_ms;
  std::sort(sorted.begin(), sorted.end());
  const int64_t B = o.batch_size;
  BenchResult r;
  r.engine = o.engine;
  r.model = o.model_dir.empty() ? kBuiltinModelName : o.model_dir;
  r.model_dir = dir;
  r.mode = o.mode;
  r.dtype = std::string(DTypeName(mode.dtype));
  r.batch_size = B;
  r.seq_len = o.seq_len;
  r.warmup = o.warmup;
  r.iterations = o.iterations;
  r.seed = o.seed;
  r.threads = m.threads;
  r.graph = o.graph;
  r.device = m.device;
  r.total_s = m.total_s;
  r.batch_latency_ms = m.total_s * 1000.0 / static_cast<double>(o.iterations);
  r.sample_latency_ms = m.total_s * 1000.0 / static_cast<double>(o.iterations * B);
  r.samples_per_s = static_cast<double>(o.iterations * B) / m.total_s;
  r.latency_p50_ms = Percentile(sorted, 50);
  r.latency_p95_ms = Percentile(sorted, 95);
  r.latency_p99_ms = Percentile(sorted, 99);
  r.latency_min_ms = sorted.front();
  r.latency_max_ms = sorted.back();
  r.checksum = m.checksum;
  r.max_memory_mb = static_cast<double>(m.peak_bytes) / (1024.0 * 1024.0);
  r.memory_source = m.memory_source;
  r.weight_memory_mb = static_cast<double>(m.weight_bytes) / (1024.0 * 1024.0);
  r.flops_per_sample = m.flops_per_sample;
  r.runtime = m.runtime;
  r.profiled = o.profile;
  r.profiled_units = m.profiled_units;
  r.trace = o.trace_path;
  return r;
}

std::string ProfileText(const Trace& trace, const BenchOptions& o, const char* unit_name, int64_t units) {
  if (units == 0) {
    return "profile: the window never opened (fewer iterations than --profile-skip/--profile-delay)\n";
  }
  std::string text = FormatKeyAveragesTable(KeyAverages(trace, o.record_shapes), static_cast<int>(o.table_rows));
  std::string scope;
  const std::vector<WorkUnit> found = FindWorkUnits(trace, unit_name, &scope);
  return text + FormatUnitSummary(CountPerUnit(trace, found, scope));
}

StatusOr<BenchReport> RunBench(const BenchOptions& o) {
  if (o.engine == "torch") return RunTorchBench(o);
  TS_RETURN_IF_ERROR(ValidateBenchOptions(o));
  TS_ASSIGN_OR_RETURN(BenchMode mode, ParseBenchMode(o.mode));
  TS_ASSIGN_OR_RETURN(std::string dir, ResolveModelDir(o.model_dir));
  EngineOptions eo;
  eo.dtype = mode.dtype;
  eo.threads = o.threads;
  eo.device = o.device;
  eo.row_block = o.row_block;
  TS_ASSIGN_OR_RETURN(auto engine, BertEngine::Load(dir, eo));
  const BertConfig& cfg = engine->config();
  TS_RETURN_IF_ERROR(CheckRunOptions(o, cfg));
  BertModel& model = engine->model();
  Backend& backend = engine->backend();
  const int64_t B = o.batch_size, S = o.seq_len, H = cfg.hidden_size;
  TS_RETURN_IF_ERROR(CheckWorkloadMemory(*engine, o, mode));
  TS_ASSIGN_OR_RETURN(std::vector<BertModel::Inputs> inputs,
                      UploadInputs(model, BenchInputIds(o.seed, B, S, cfg.vocab_size), B, S, mode.serial));

  // One work unit: 64 samples through the model, serially or as one batch.
  auto run_unit = [&]() -> StatusOr<Tensor> {
    if (!mode.serial) return model.Forward(inputs[0]);
    TS_ASSIGN_OR_RETURN(Tensor out, Tensor::Empty(backend, model.dtype(), {B, S, H}));
    for (int64_t i = 0; i < B; ++i) {
      TS_ASSIGN_OR_RETURN(Tensor y, model.Forward(inputs[i]));
      TS_RETURN_IF_ERROR(model.CopyIntoSlice(y, out, i));
    }
    return out;
  };
  // Under the profiler each unit is a user scope, as the study's record_function.
  const char* unit_name = mode.serial ? "serial_bert_forward" : "batched_bert_forward";
  std::unique_ptr<Profiler> profiler;
  // Whatever way the run ends, the backend and the model let go of the profiler and the
  // hook before they are destroyed (the tensors above are freed after, through the backend).
  struct Detach {
    Backend& backend;
    BertModel& model;
    ~Detach() {
      backend.SetObserver(nullptr);
      backend.SetLaunchHook(nullptr);
      model.set_profiler(nullptr);
    }
  } detach{backend, model};
  auto work_unit = [&]() -> StatusOr<Tensor> {
    if (profiler == nullptr || !profiler->recording()) return run_unit();
    profiler->BeginAnnotation(unit_name);
    auto r = run_unit();
    profiler->End();
    return r;
  };

  if (o.pre_delay_s > 0) {
    std::this_thread::sleep_for(std::chrono::duration<double>(o.pre_delay_s));
  }
  if (o.launch_hook != nullptr) backend.SetLaunchHook(o.launch_hook);
  // Each warmup unit's output is held while the next runs, as the timed loop holds `last`:
  // from two warmup units on, the allocator has made every buffer the timed units take (a
  // second output among them) before the clock starts, rather than a timed unit faulting
  // in a fresh output's pages. With one (or the graph path, which holds its own output),
  // the warmup's output is let go, so the first timed unit (or the capture) reuses it.
  Tensor last;
  for (int64_t i = 0; i < std::max<int64_t>(o.warmup, o.graph ? 1 : 0); ++i) {
    TS_ASSIGN_OR_RETURN(last, work_unit());
  }
  if (o.warmup < 2 || o.graph) last = Tensor();
  TS_RETURN_IF_ERROR(backend.Synchronize());
  // The graph path: one unit captured, then each timed unit is one replay.
  std::unique_ptr<Graph> graph;
  Tensor graph_out;
  if (o.graph) TS_RETURN_IF_ERROR(CaptureUnit(backend, run_unit, &graph, &graph_out));
  engine->ResetPeakMemory();

  if (o.profile) {
    ProfilerOptions po;
    po.record_shapes = o.record_shapes;
    po.profile_memory = o.profile_memory;
    profiler = std::make_unique<Profiler>(po, backend.props());
    profiler->set_recording(false);
    model.set_profiler(profiler.get());
    backend.SetObserver(profiler.get());
  }
  TS_RETURN_IF_ERROR(backend.Synchronize());
  Measured m;
  m.unit_ms.reserve(static_cast<size_t>(o.iterations));
  const int64_t t0 = MonotonicNs();
  ProfileWindow window(o, t0);
  for (int64_t i = 0; i < o.iterations; ++i) {
    if (profiler != nullptr) window.Update(*profiler, i);
    if (o.before_unit) TS_RETURN_IF_ERROR(o.before_unit(i));
    const int64_t s = MonotonicNs();
    if (graph != nullptr) {
      TS_RETURN_IF_ERROR(backend.LaunchGraph(*graph));  // its output is graph_out
    } else {
      TS_ASSIGN_OR_RETURN(last, work_unit());
    }
    TS_RETURN_IF_ERROR(backend.Synchronize());
    m.unit_ms.push_back(static_cast<double>(MonotonicNs() - s) * 1e-6);
  }
  TS_RETURN_IF_ERROR(backend.Synchronize());
  m.total_s = static_cast<double>(MonotonicNs() - t0) * 1e-9;
  m.peak_bytes = engine->memory().peak_bytes;
  m.profiled_units = window.units();
  BenchReport report;
  if (profiler != nullptr) {
    profiler->set_recording(false);
    backend.SetObserver(nullptr);
    model.set_profiler(nullptr);
    report.profile_text = ProfileText(profiler->trace(), o, unit_name, window.units());
    if (!o.trace_path.empty()) TS_RETURN_IF_ERROR(WriteChromeTrace(profiler->trace(), o.trace_path));
  }
  if (o.after_run) {
    backend.SetLaunchHook(nullptr);
    TS_RETURN_IF_ERROR(o.after_run(backend));
  }

  std::vector<float> out;
  TS_RETURN_IF_ERROR(CopyToHostFloats(backend, graph != nullptr ? graph_out : last, &out));
  m.checksum = OrderSensitiveChecksum(out.data(), out.size());
  if (!std::isfinite(m.checksum)) {
    return Internal("the output has non-finite values (checksum " + std::to_string(m.checksum) + ")");
  }
  m.memory_source = "tierscope's allocator: peak live bytes";
  m.threads = engine->threads();
  m.device = engine->device_name();
  m.weight_bytes = engine->memory().weight_bytes;
  m.flops_per_sample = engine->model().FlopsPerSample(o.seq_len);
  m.runtime = {{"tierscope", TIERSCOPE_VERSION}};
  report.result = MakeBenchResult(o, mode, dir, m);
  if (o.keep_output) report.output = std::move(out);
  return report;
}

nlohmann::json BenchResult::ToJson() const {
  nlohmann::json r;
  r["model"] = model;
  r["model_dir"] = model_dir;
  r["mode"] = mode;
  r["dtype"] = dtype;
  r["batch_size"] = batch_size;
  r["seq_len"] = seq_len;
  r["warmup"] = warmup;
  r["iterations"] = iterations;
  r["seed"] = seed;
  r["threads"] = threads;
  if (graph) r["graph"] = true;
  r["device"] = device;
  r["total_s"] = total_s;
  r["batch_latency_ms"] = batch_latency_ms;
  r["sample_latency_ms"] = sample_latency_ms;
  r["samples_per_s"] = samples_per_s;
  r["latency_p50_ms"] = latency_p50_ms;
  r["latency_p95_ms"] = latency_p95_ms;
  r["latency_p99_ms"] = latency_p99_ms;
  r["latency_min_ms"] = latency_min_ms;
  r["latency_max_ms"] = latency_max_ms;
  r["checksum"] = checksum;
  r["engine"] = engine;
  r["max_memory_mb"] = max_memory_mb;
  r["memory_source"] = memory_source;
  r["runtime"] = runtime;
  r["weight_memory_mb"] = weight_memory_mb;
  r["flops_per_sample"] = flops_per_sample;
  r["version"] = TIERSCOPE_VERSION;
  r["profiled"] = profiled;
  if (profiled) {
    r["profiled_units"] = profiled_units;
    if (!trace.empty()) r["trace"] = trace;
  }
  return r;
}

std::string FormatResultLine(const nlohmann::json& result) {
  return "RESULT_JSON=" + result.dump();  // nlohmann::json objects keep keys sorted
}

}  // namespace tierscope
