// The lab's predictions (predictions.h).
#include "lab/predictions.h"

#include <cmath>
#include <cstdio>
#include <optional>

#include "analysis/whatif.h"
#include "inspect/kernel_run.h"

namespace tierscope {
namespace {

nlohmann::json Predict(const TraceAnalysis& a, const std::string& lever, const std::vector<std::string>& changes,
                       const std::string& trace, const std::optional<DeviceSpec>& spec, const std::string& spec_file) {
  std::string change, command = "tierscope whatif " + trace;
  for (const std::string& c : changes) {
    change += (change.empty() ? "" : ", ") + c;
    command += " --change " + c;
  }
  nlohmann::json p = {{"lever", lever}, {"change", change}, {"trace", trace},
                      {"command", command + (spec_file.empty() ? "" : " --device-spec " + spec_file)}};
  WhatIfOptions o;
  for (const std::string& text : changes) {
    StatusOr<WhatIfChange> c = ParseWhatIfChange(text);
    if (!c.ok()) {
      p["error"] = c.status().message();
      return p;
    }
    o.changes.push_back(*c);
  }
  o.device_spec = spec;
  StatusOr<WhatIfResult> r = WhatIf(a.index, o);
  if (!r.ok()) {
    p["error"] = r.status().message();
    return p;
  }
  int64_t replay = 0, predicted = 0, measured = 0;
  for (const WhatIfStep& s : r->steps) {
    replay += s.replay_ns;
    predicted += s.predicted_ns;
    measured += s.measured_ns;
  }
  if (replay <= 0 || predicted <= 0) {
    p["error"] = "the trace's steps have no graph to re-time";
    return p;
  }
  p["replay_ns"] = replay;
  p["predicted_ns"] = predicted;
  p["trace_span_ns"] = measured;
  p["replay_error_pct"] = measured > 0 ? 100.0 * static_cast<double>(replay - measured) / measured : 0.0;
  p["predicted_speedup"] = static_cast<double>(replay) / static_cast<double>(predicted);
  p["notes"] = r->notes;
  return p;
}

}  // namespace

MatrixFactors ReplayMatrixFactors(const BenchOptions& base, int passes, const std::vector<std::string>& precisions,
                                  const std::function<void(const std::string&)>& progress) {
  MatrixFactors out;
  const auto replay = [&](const std::string& mode) -> std::optional<double> {
    progress("tier 3: the first GEMM launch in " + mode + ", for the precision lever");
    KernelCommandOptions k;
    k.bench = base;
    k.bench.mode = mode;
    k.bench.warmup = 1;
    k.bench.iterations = 1;
    k.inspector.filter = {"regex:gemm", 0, 1};
    k.inspector.passes = passes;
    StatusOr<KernelCommandResult> kr = RunKernelCommand(k);
    out.replayed.push_back(mode);
    if (!kr.ok() || kr->reports.empty() || !kr->reports.front().evidence.duration_ns ||
        !(*kr->reports.front().evidence.duration_ns > 0)) {
      out.failures[mode] = kr.ok() ? "the replay timed no GEMM launch" : kr.status().message();
      return std::nullopt;
    }
    return *kr->reports.front().evidence.duration_ns;
  };
  const std::optional<double> fp32 = replay("batch-fp32");
  if (!fp32) return out;
  for (const std::string& p : precisions) {
    if (const std::optional<double> t = replay("batch-" + p)) out.factors[p] = *t / *fp32;
  }
  return out;
}

nlohmann::json PredictLevers(const TraceAnalysis& serial, const TraceAnalysis& batch, int64_t batch_size,
                             const std::optional<DeviceSpec>& spec, const std::string& spec_file,
                             const std::vector<std::string>& precisions, const MatrixFactors& matrix,
                             const std::string& engine) {
  nlohmann::json out = nlohmann::json::array();
  out.push_back(Predict(serial, "batch-fp32", {"batch=" + std::to_string(batch_size)}, "traces/serial.json.gz", spec,
                        spec_file));
  if (engine == "native" && batch.index.trace->device_units > 1) {  // the threads lever: one worker
    out.push_back(Predict(batch, kOneThreadLever, {"units=1"}, "traces/batch.json.gz", spec, spec_file));
  }
  for (const std::string& p : precisions) {
    std::vector<std::string> changes = {"precision=" + p};
    const auto f = matrix.factors.find(p);
    if (f != matrix.factors.end()) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.6g", f->second);
      changes.push_back(std::string("gemm=") + buf);
    }
    nlohmann::json q = Predict(batch, "batch-" + p, changes, "traces/batch.json.gz", spec, spec_file);
    if (f != matrix.factors.end()) {
      q["matrix_factor"] = f->second;
      q["matrix_factor_source"] = "tier 3: the first GEMM launch replayed in " + p + " and in fp32";
    } else if (engine != "native") {
      q["matrix_factor_source"] = "the roofline (tier 3 replays the native engine's kernels only)";
    } else {
      const auto why = matrix.failures.count("batch-" + p) ? matrix.failures.at("batch-" + p)
                       : matrix.failures.count("batch-fp32") ? matrix.failures.at("batch-fp32")
                                                             : "not replayed";
      q["matrix_factor_source"] = "the roofline (tier 3's replay: " + why + ")";
    }
    out.push_back(std::move(q));
  }
  return out;
}

void AddMeasured(nlohmann::json& predictions, const std::function<double(const std::string&)>& measured) {
  for (nlohmann::json& p : predictions) {
    const double m = measured(p["lever"].get<std::string>());
    if (!(m > 0) || !std::isfinite(m)) {
      p["measured_speedup"] = nullptr;
      continue;
    }
    p["measured_speedup"] = m;
    if (p.contains("predicted_speedup")) {
      p["error_pct"] = 100.0 * (p["predicted_speedup"].get<double>() - m) / m;
    }
  }
}

}  // namespace tierscope
