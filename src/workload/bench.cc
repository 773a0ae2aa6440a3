// The no-profiler benchmark (the study's Step 0).
#include "workload/bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "backend/backend.h"
#include "core/checksum.h"
#include "core/paths.h"
#include "core/stats.h"
#include "core/splitmix.h"
#include "model/bert.h"
#include "profile/chrome_trace.h"
#include "profile/op_summary.h"
#include "profile/profiler.h"
#include "tierscope/version.h"

namespace tierscope {

StatusOr<BenchMode> ParseBenchMode(const std::string& mode) {
  if (mode == "serial-fp32") return BenchMode{true, DType::kF32};
  if (mode == "batch-fp32") return BenchMode{false, DType::kF32};
  if (mode == "batch-fp16") return BenchMode{false, DType::kF16};
  if (mode == "batch-bf16") return BenchMode{false, DType::kBF16};
  return InvalidArgument("unknown mode '" + mode +
                         "' (valid: serial-fp32, batch-fp32, batch-fp16, batch-bf16)");
}

Status ValidateBenchOptions(const BenchOptions& o) {
  TS_RETURN_IF_ERROR(ParseBenchMode(o.mode).status());
  if (o.batch_size < 1) return InvalidArgument("--batch-size must be >= 1, got " + std::to_string(o.batch_size));
  if (o.seq_len < 1) return InvalidArgument("--seq-len must be >= 1, got " + std::to_string(o.seq_len));
  if (o.warmup < 0) return InvalidArgument("--warmup must be >= 0, got " + std::to_string(o.warmup));
  if (o.iterations < 1) return InvalidArgument("--iterations must be >= 1, got " + std::to_string(o.iterations));
  if (o.threads < 0) return InvalidArgument("--threads must be >= 0, got " + std::to_string(o.threads));
  if (!(o.pre_delay_s >= 0) || o.pre_delay_s > 86400) {
    return InvalidArgument("--pre-delay must be between 0 and 86400 seconds");
  }
  if (o.profile_skip < 0 || o.profile_units < 0 || !(o.profile_delay_s >= 0) ||
      !(o.profile_duration_s >= 0)) {
    return InvalidArgument("--profile-skip, --profile-units, --profile-delay and --profile-duration must be >= 0");
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

StatusOr<BenchReport> RunBench(const BenchOptions& o) {
  TS_RETURN_IF_ERROR(ValidateBenchOptions(o));
  TS_ASSIGN_OR_RETURN(BenchMode mode, ParseBenchMode(o.mode));
  TS_ASSIGN_OR_RETURN(std::string dir, ResolveModelDir(o.model_dir));
  EngineOptions eo;
  eo.dtype = mode.dtype;
  eo.threads = o.threads;
  eo.device = o.device;
  TS_ASSIGN_OR_RETURN(auto engine, BertEngine::Load(dir, eo));
  const BertConfig& cfg = engine->config();
  if (o.seq_len > cfg.max_position_embeddings) {
    return InvalidArgument("--seq-len " + std::to_string(o.seq_len) +
                           " exceeds the model's max_position_embeddings " +
                           std::to_string(cfg.max_position_embeddings));
  }
  BertModel& model = engine->model();
  Backend& backend = engine->backend();
  const int64_t B = o.batch_size, S = o.seq_len, H = cfg.hidden_size;
  {
    // Everything the run will hold, checked before any of it is allocated.
    int64_t tokens_i = 0;
    if (__builtin_mul_overflow(B, S, &tokens_i) || tokens_i > (int64_t{1} << 50)) {
      return InvalidArgument("--batch-size " + std::to_string(B) + " x --seq-len " + std::to_string(S) +
                             " tokens is too large to address");
    }
    TS_ASSIGN_OR_RETURN(MemoryNeed need, engine->ForwardMemory(mode.serial ? 1 : B, S, {}));
    const double tokens = static_cast<double>(B) * static_cast<double>(S);
    const double es = static_cast<double>(DTypeSize(mode.dtype));
    need.host += tokens * (8 + static_cast<double>(H) * (4 + es));  // the ids; the output read back
    if (mode.serial) need.device += tokens * (12 + static_cast<double>(H) * es);  // all inputs; the output
    TS_RETURN_IF_ERROR(engine->CheckMemory(
        need, "--batch-size " + std::to_string(B) + " x --seq-len " + std::to_string(S) + " (" + o.mode + ")"));
  }
  const std::vector<int64_t> ids = BenchInputIds(o.seed, B, S, cfg.vocab_size);

  // Inputs go to the device before timing: one batch, or one batch-1 slice per sample.
  std::vector<BertModel::Inputs> inputs;
  if (mode.serial) {
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

  // One work unit: 64 samples through the model, serially or as one batch.
  auto run_unit = [&]() -> StatusOr<Tensor> {
    if (!mode.serial) return model.Forward(inputs[0]);
    TS_ASSIGN_OR_RETURN(Tensor out, Tensor::Empty(backend, mode.dtype, {B, S, H}));
    for (int64_t i = 0; i < B; ++i) {
      TS_ASSIGN_OR_RETURN(Tensor y, model.Forward(inputs[i]));
      TS_RETURN_IF_ERROR(model.CopyIntoSlice(y, out, i));
    }
    return out;
  };
  // Under the profiler each unit is a user scope, as the study's record_function.
  const char* unit_name = mode.serial ? "serial_bert_forward" : "batched_bert_forward";
  std::unique_ptr<Profiler> profiler;
  // Whatever way the run ends, the backend and the model let go of the profiler before
  // it is destroyed (the tensors above are freed after it, through the backend).
  struct ObserverGuard {
    Backend& backend;
    BertModel& model;
    ~ObserverGuard() {
      backend.SetObserver(nullptr);
      model.set_profiler(nullptr);
    }
  } observer_guard{backend, model};
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
  struct HookGuard {
    Backend& backend;
    ~HookGuard() { backend.SetLaunchHook(nullptr); }
  } hook_guard{backend};
  if (o.launch_hook != nullptr) {
    if (o.profile) return InvalidArgument("a launch hook and the profiler cannot run together");
    backend.SetLaunchHook(o.launch_hook);
  }
  if (o.graph && (o.profile || o.launch_hook != nullptr)) {
    return InvalidArgument("--graph replays a captured unit: it runs without --profile or tier 3");
  }
  for (int64_t i = 0; i < std::max<int64_t>(o.warmup, o.graph ? 1 : 0); ++i) {
    TS_RETURN_IF_ERROR(work_unit().status());
  }
  TS_RETURN_IF_ERROR(backend.Synchronize());
  // The graph path: one unit captured (its buffers come from the allocator's cache, warm
  // after the warmup, and its output stays held), then each timed unit is one replay.
  std::unique_ptr<Graph> graph;
  Tensor graph_out;
  if (o.graph) {
    TS_RETURN_IF_ERROR(backend.BeginCapture());
    StatusOr<Tensor> captured = run_unit();
    StatusOr<std::unique_ptr<Graph>> g = backend.EndCapture();  // closes the capture either way
    TS_RETURN_IF_ERROR(captured.status());
    TS_RETURN_IF_ERROR(g.status());
    graph = std::move(*g);
    graph_out = std::move(*captured);
    TS_RETURN_IF_ERROR(backend.LaunchGraph(*graph));
    TS_RETURN_IF_ERROR(backend.Synchronize());
  }
  engine->ResetPeakMemory();

  std::vector<double> iter_ms;
  Tensor last;
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
  const int64_t t0 = MonotonicNs();
  int64_t recorded_units = 0;
  int64_t window_start = 0;
  for (int64_t i = 0; i < o.iterations; ++i) {
    if (profiler != nullptr) {
      const double since = static_cast<double>(MonotonicNs() - t0) * 1e-9;
      if (!profiler->recording() && recorded_units == 0 && i >= o.profile_skip &&
          since >= o.profile_delay_s) {
        profiler->set_recording(true);
        window_start = MonotonicNs();
      }
      if (profiler->recording() &&
          ((o.profile_units > 0 && recorded_units >= o.profile_units) ||
           (o.profile_duration_s > 0 &&
            static_cast<double>(MonotonicNs() - window_start) * 1e-9 >= o.profile_duration_s))) {
        profiler->set_recording(false);
        recorded_units = -recorded_units;  // closed: never reopen
      }
      if (profiler->recording()) ++recorded_units;
    }
    if (o.before_unit) TS_RETURN_IF_ERROR(o.before_unit(i));
    const int64_t s = MonotonicNs();
    if (graph != nullptr) {
      TS_RETURN_IF_ERROR(backend.LaunchGraph(*graph));  // its output is graph_out
    } else {
      TS_ASSIGN_OR_RETURN(last, work_unit());
    }
    TS_RETURN_IF_ERROR(backend.Synchronize());
    iter_ms.push_back(static_cast<double>(MonotonicNs() - s) * 1e-6);
  }
  TS_RETURN_IF_ERROR(backend.Synchronize());
  const double total_s = static_cast<double>(MonotonicNs() - t0) * 1e-9;
  const int64_t peak = engine->memory().peak_bytes;
  BenchReport report;
  if (profiler != nullptr) {
    profiler->set_recording(false);
    backend.SetObserver(nullptr);
    model.set_profiler(nullptr);
    const Trace& trace = profiler->trace();
    if (recorded_units == 0) {
      report.profile_text = "profile: the window never opened (fewer iterations than --profile-skip/--profile-delay)\n";
    } else {
      report.profile_text = FormatKeyAveragesTable(KeyAverages(trace, o.record_shapes),
                                                   static_cast<int>(o.table_rows));
      std::string scope;
      const std::vector<WorkUnit> units = FindWorkUnits(trace, unit_name, &scope);
      report.profile_text += FormatUnitSummary(CountPerUnit(trace, units, scope));
    }
    if (!o.trace_path.empty()) TS_RETURN_IF_ERROR(WriteChromeTrace(trace, o.trace_path));
  }

  if (o.after_run) {
    backend.SetLaunchHook(nullptr);
    TS_RETURN_IF_ERROR(o.after_run(backend));
  }

  const Tensor& result = graph != nullptr ? graph_out : last;
  std::vector<std::byte> raw(result.bytes());
  TS_RETURN_IF_ERROR(backend.CopyDeviceToHost(raw.data(), result.data(), raw.size()));
  std::vector<float> out(static_cast<size_t>(result.numel()));
  ToFloat(result.dtype(), raw.data(), out.data(), out.size());
  const double checksum = OrderSensitiveChecksum(out.data(), out.size());
  if (!std::isfinite(checksum)) {
    return Internal("the output has non-finite values (checksum " + std::to_string(checksum) + ")");
  }

  std::vector<double> sorted = iter_ms;
  std::sort(sorted.begin(), sorted.end());
  nlohmann::json r;
  r["model"] = o.model_dir.empty() ? "builtin:bert_uncased_L-2_H-128_A-2-synthetic" : o.model_dir;
  r["model_dir"] = dir;
  r["mode"] = o.mode;
  r["dtype"] = std::string(DTypeName(mode.dtype));
  r["batch_size"] = B;
  r["seq_len"] = S;
  r["warmup"] = o.warmup;
  r["iterations"] = o.iterations;
  r["seed"] = o.seed;
  r["threads"] = engine->threads();
  if (o.graph) r["graph"] = true;
  r["device"] = engine->device_name();
  r["total_s"] = total_s;
  r["batch_latency_ms"] = total_s * 1000.0 / static_cast<double>(o.iterations);
  r["sample_latency_ms"] = total_s * 1000.0 / static_cast<double>(o.iterations * B);
  r["samples_per_s"] = static_cast<double>(o.iterations * B) / total_s;
  r["latency_p50_ms"] = Percentile(sorted, 50);
  r["latency_p95_ms"] = Percentile(sorted, 95);
  r["latency_p99_ms"] = Percentile(sorted, 99);
  r["latency_min_ms"] = sorted.front();
  r["latency_max_ms"] = sorted.back();
  r["checksum"] = checksum;
  r["max_memory_mb"] = static_cast<double>(peak) / (1024.0 * 1024.0);
  r["weight_memory_mb"] = static_cast<double>(engine->memory().weight_bytes) / (1024.0 * 1024.0);
  r["version"] = TIERSCOPE_VERSION;
  r["profiled"] = o.profile;
  if (o.profile) {
    r["profiled_units"] = recorded_units < 0 ? -recorded_units : recorded_units;
    if (!o.trace_path.empty()) r["trace"] = o.trace_path;
  }
  report.result = std::move(r);
  if (o.keep_output) report.output = std::move(out);
  return report;
}

std::string FormatResultLine(const nlohmann::json& result) {
  return "RESULT_JSON=" + result.dump();  // nlohmann::json objects keep keys sorted
}

}  // namespace tierscope
