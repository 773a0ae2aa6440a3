// Each rank's step timeline kept, then the ranks' put side by side on the aligned clock.
#include "analysis/job_timeline.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "analysis/job.h"
#include "analysis/timeline.h"

namespace tierscope {
namespace {

bool Usable(const nlohmann::json& t) { return t.is_object() && !t.contains("error"); }

// The kernels launched in a timeline's chosen step.
int64_t ChosenKernels(const nlohmann::json& t) {
  for (const nlohmann::json& s : t["steps"]) {
    if (s["chosen"].get<bool>()) return s["kernels"].get<int64_t>();
  }
  return 0;
}

const nlohmann::json* ChosenStep(const nlohmann::json& t) {
  for (const nlohmann::json& s : t["steps"]) {
    if (s["chosen"].get<bool>()) return &s;
  }
  return nullptr;
}

}  // namespace

nlohmann::json RankTimeline(const TraceIndex& index, const AnalysisOptions& options) {
  StatusOr<nlohmann::json> t = BuildTimeline(
      index, options.step, std::nullopt,
      {.max_events = options.timeline_events, .every_step = false, .python = false});
  return t.ok() ? std::move(*t) : nlohmann::json();
}

void KeepBusierTimeline(RankAnalysis& into, RankAnalysis& window, int64_t shift) {
  if (!Usable(window.timeline)) return;
  if (Usable(into.timeline) && ChosenKernels(into.timeline) >= ChosenKernels(window.timeline)) return;
  into.timeline = std::move(window.timeline);
  into.timeline["origin_ns"] = into.timeline["origin_ns"].get<int64_t>() + shift;
}

nlohmann::json JobTimeline(const JobAnalysis& job) {
  // The ranks that kept one, each with its offset onto the aligned clock.
  struct Part {
    const RankAnalysis* rank;
    int64_t offset;
    int64_t base = 0;  // its times + base = the merged timeline's
  };
  std::vector<Part> parts;
  std::map<std::string, int> step_names;
  for (size_t i = 0; i < job.ranks.size(); ++i) {
    const RankAnalysis& r = job.ranks[i];
    if (!Usable(r.timeline) || ChosenStep(r.timeline) == nullptr) continue;
    int64_t offset = 0;
    if (i < job.stragglers.ranks.size() && job.stragglers.ranks[i].rank == r.rank && job.stragglers.ranks[i].aligned) {
      offset = job.stragglers.ranks[i].offset_ns;
    }
    parts.push_back({&r, offset});
    ++step_names[r.timeline["step"].get<std::string>()];
  }
  if (parts.empty()) return nullptr;
  std::string step = step_names.begin()->first;
  for (const auto& [name, n] : step_names) {
    if (n > step_names[step]) step = name;
  }
  // The merged origin: the earliest rank step's start on the aligned clock.
  int64_t origin = INT64_MAX;
  for (Part& p : parts) {
    const nlohmann::json& t = p.rank->timeline;
    p.base = t["origin_ns"].get<int64_t>() - p.offset;
    origin = std::min(origin, p.base + (*ChosenStep(t))["begin_ns"].get<int64_t>());
  }
  for (Part& p : parts) p.base -= origin;

  nlohmann::json lanes = nlohmann::json::array(), names = nlohmann::json::array(), rows = nlohmann::json::array();
  std::map<std::string, int64_t> name_of;
  std::vector<int64_t> lane, start, dur, name, kind, depth, type, launch;
  std::vector<double> device_ns(kTimelineOverviewBins, 0), host_ns(kTimelineOverviewBins, 0);
  int64_t step_begin = INT64_MAX, step_end = INT64_MIN, kernels = 0, length = 0, span = 0, on_path = 0, omitted = 0,
          shorter = 0, view_begin = INT64_MAX, view_end = INT64_MIN, cyclic = 0;
  nlohmann::json by_cause = nlohmann::json::object();
  std::vector<std::string> other_steps;
  for (const Part& p : parts) {
    const nlohmann::json& t = p.rank->timeline;
    const std::string rank = "rank " + std::to_string(p.rank->rank);
    const std::string own = t["step"].get<std::string>();
    if (own != step) other_steps.push_back(rank + ": " + own);
    const int64_t lane_base = static_cast<int64_t>(lanes.size()), row_base = static_cast<int64_t>(lane.size());
    for (nlohmann::json l : t["lanes"]) {
      l["name"] = rank + " " + l["name"].get<std::string>() + (own != step ? " (" + own + ")" : "");
      l["rank"] = p.rank->rank;
      lanes.push_back(std::move(l));
    }
    const nlohmann::json& e = t["events"];
    std::vector<int64_t> local_names;
    for (const nlohmann::json& n : t["names"]) {
      auto [it, fresh] = name_of.emplace(n.get<std::string>(), static_cast<int64_t>(names.size()));
      if (fresh) names.push_back(n);
      local_names.push_back(it->second);
    }
    for (size_t k = 0; k < e["lane"].size(); ++k) {
      lane.push_back(e["lane"][k].get<int64_t>() + lane_base);
      start.push_back(e["start_ns"][k].get<int64_t>() + p.base);
      dur.push_back(e["dur_ns"][k].get<int64_t>());
      name.push_back(local_names[e["name"][k].get<size_t>()]);
      kind.push_back(e["kind"][k].get<int64_t>());
      depth.push_back(e["depth"][k].get<int64_t>());
      type.push_back(e["type"][k].get<int64_t>());
      const int64_t l = e["launch"][k].get<int64_t>();
      launch.push_back(l >= 0 ? l + row_base : -1);
    }
    const nlohmann::json& s = *ChosenStep(t);
    step_begin = std::min(step_begin, s["begin_ns"].get<int64_t>() + p.base);
    step_end = std::max(step_end, s["end_ns"].get<int64_t>() + p.base);
    kernels += s["kernels"].get<int64_t>();
    const nlohmann::json& c = t["critical_path"];
    length += c["length_ns"].get<int64_t>();
    span = std::max(span, c["span_ns"].get<int64_t>());
    on_path += c["events"].get<int64_t>();
    cyclic += c["cyclic_nodes"].get<int64_t>();
    for (const auto& [cause, ns] : c["by_cause"].items()) by_cause[cause] = by_cause.value(cause, int64_t{0}) + ns.get<int64_t>();
    for (const nlohmann::json& row : c["rows"]) rows.push_back({row[0].get<int64_t>() + row_base, row[1], row[2]});
    omitted += t["omitted"]["events"].get<int64_t>();
    shorter = std::max(shorter, t["omitted"]["shorter_than_ns"].get<int64_t>());
    const nlohmann::json& o = t["overview"];
    view_begin = std::min(view_begin, o["begin_ns"].get<int64_t>() + p.base);
    view_end = std::max(view_end, o["end_ns"].get<int64_t>() + p.base);
  }
  // The overview: each rank's bins added into the merged range's by their centres.
  const double width = view_end > view_begin ? static_cast<double>(view_end - view_begin) / kTimelineOverviewBins : 1;
  for (const Part& p : parts) {
    const nlohmann::json& o = p.rank->timeline["overview"];
    const int64_t b = o["begin_ns"].get<int64_t>() + p.base, e = o["end_ns"].get<int64_t>() + p.base;
    for (auto [from, into] : {std::pair{&o["device_ns"], &device_ns}, std::pair{&o["host_runtime_ns"], &host_ns}}) {
      const size_t n = from->size();
      for (size_t k = 0; k < n; ++k) {
        const double centre = static_cast<double>(b) + (static_cast<double>(k) + 0.5) * static_cast<double>(e - b) / n;
        const int bin = std::clamp(static_cast<int>((centre - static_cast<double>(view_begin)) / width), 0,
                                   kTimelineOverviewBins - 1);
        (*into)[static_cast<size_t>(bin)] += (*from)[k].get<double>();
      }
    }
  }
  const nlohmann::json& first = parts.front().rank->timeline;
  std::string why = "each rank's steady-state step (" + step + " on " + std::to_string(step_names[step]) + " of " +
                    std::to_string(parts.size()) + " ranks), on the clock the collectives aligned";
  if (!other_steps.empty()) {
    why += "; another step on " + std::to_string(other_steps.size()) + " (" + other_steps.front() +
           (other_steps.size() > 1 ? ", ...)" : ")");
  }
  if (parts.size() < job.ranks.size()) {
    why += "; " + std::to_string(job.ranks.size() - parts.size()) + " ranks have no such step";
  }
  nlohmann::json j;
  j["origin_ns"] = origin;
  j["end_ns"] = step_end;
  j["step"] = step;
  j["why"] = why;
  j["every_step"] = false;
  j["steps"] = nlohmann::json::array({{{"name", step}, {"begin_ns", step_begin}, {"end_ns", step_end},
                                       {"kernels", kernels}, {"in_timeline", true}, {"chosen", true}}});
  j["lanes"] = std::move(lanes);
  j["names"] = std::move(names);
  j["kinds"] = first["kinds"];
  j["types"] = first["types"];
  j["causes"] = first["causes"];
  j["events"] = {{"lane", lane}, {"start_ns", start}, {"dur_ns", dur}, {"name", name},
                 {"kind", kind}, {"depth", depth},    {"type", type},  {"launch", launch}};
  j["omitted"] = {{"events", omitted}, {"shorter_than_ns", shorter}};
  j["critical_path"] = {{"step", step + " (each rank's own path, summed)"}, {"length_ns", length}, {"span_ns", span},
                        {"events", on_path}, {"by_cause", by_cause}, {"cyclic_nodes", cyclic}, {"rows", std::move(rows)}};
  j["overview"] = {{"begin_ns", view_begin}, {"end_ns", view_end}, {"device_ns", device_ns}, {"host_runtime_ns", host_ns}};
  j["device"] = nullptr;
  return j;
}

}  // namespace tierscope
