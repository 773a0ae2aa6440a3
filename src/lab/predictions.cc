// The lab's predictions (predictions.h).
#include "lab/predictions.h"

#include <cmath>

#include "analysis/whatif.h"

namespace tierscope {
namespace {

nlohmann::json Predict(const TraceAnalysis& a, const std::string& lever, const std::string& change,
                       const std::string& trace, const std::optional<DeviceSpec>& spec, const std::string& spec_file) {
  nlohmann::json p = {{"lever", lever}, {"change", change}, {"trace", trace},
                      {"command", "tierscope whatif " + trace + " --change " + change +
                                      (spec_file.empty() ? "" : " --device-spec " + spec_file)}};
  WhatIfOptions o;
  StatusOr<WhatIfChange> c = ParseWhatIfChange(change);
  if (!c.ok()) {
    p["error"] = c.status().message();
    return p;
  }
  o.changes.push_back(*c);
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

nlohmann::json PredictLevers(const TraceAnalysis& serial, const TraceAnalysis& batch, int64_t batch_size,
                             const std::optional<DeviceSpec>& spec, const std::string& spec_file,
                             const std::vector<std::string>& precisions) {
  nlohmann::json out = nlohmann::json::array();
  out.push_back(Predict(serial, "batch-fp32", "batch=" + std::to_string(batch_size), "traces/serial.json.gz", spec,
                        spec_file));
  for (const std::string& p : precisions) {
    out.push_back(Predict(batch, "batch-" + p, "precision=" + p, "traces/batch.json.gz", spec, spec_file));
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
