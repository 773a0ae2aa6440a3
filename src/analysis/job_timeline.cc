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

// A timeline's chosen step, or null.
const nlohmann::json* ChosenStep(const nlohmann::json& t) {
  for (const nlohmann::json& s : t["steps"]) {
    if (s["chosen"].get<bool>()) return &s;
  }
  return nullptr;
}

int64_t ChosenKernels(const nlohmann::json& t) {
  const nlohmann::json* s = ChosenStep(t);
  return s ? (*s)["kernels"].get<int64_t>() : 0;
}

// A rank whose timeline goes into the job's, and where its times go on the merged clock.
struct Part {
  const RankAnalysis* rank;
  const nlohmann::json* timeline;
  int64_t offset = 0;  // the stragglers' alignment: subtracted from its times
  int64_t base = 0;    // its times + base = the merged timeline's
};

// The ranks with a timeline, the step most of them show, and the ranks whose clocks no
// collective aligned (drawn on their own clocks).
struct Parts {
  std::vector<Part> parts;
  std::string step;
  int on_step = 0;
  std::vector<int> unaligned;
  int64_t origin = 0;  // the merged timeline's 0 on the aligned clock
};
Parts CollectParts(const JobAnalysis& job) {
  Parts p;
  std::map<std::string, int> names;
  for (size_t i = 0; i < job.ranks.size(); ++i) {
    const RankAnalysis& r = job.ranks[i];
    if (!Usable(r.timeline) || ChosenStep(r.timeline) == nullptr) continue;
    Part part{&r, &r.timeline};
    if (i < job.stragglers.ranks.size() && job.stragglers.ranks[i].rank == r.rank && job.stragglers.ranks[i].aligned) {
      part.offset = job.stragglers.ranks[i].offset_ns;
    } else if (job.ranks.size() > 1) {
      p.unaligned.push_back(r.rank);
    }
    p.parts.push_back(part);
    ++names[r.timeline["step"].get<std::string>()];
  }
  for (const auto& [name, n] : names) {
    if (n > p.on_step) {
      p.step = name;
      p.on_step = n;
    }
  }
  // The merged origin: the earliest rank step's start on the aligned clock.
  int64_t origin = INT64_MAX;
  for (Part& part : p.parts) {
    part.base = (*part.timeline)["origin_ns"].get<int64_t>() - part.offset;
    origin = std::min(origin, part.base + (*ChosenStep(*part.timeline))["begin_ns"].get<int64_t>());
  }
  for (Part& part : p.parts) part.base -= origin;
  p.origin = origin;
  return p;
}

// The merged timeline's lanes, names, events and critical-path rows, a rank at a time.
struct Merged {
  nlohmann::json lanes = nlohmann::json::array(), names = nlohmann::json::array(), rows = nlohmann::json::array(),
                 launched = nlohmann::json::array();
  std::map<std::string, int64_t> name_of;
  TimelineEvents events;
  int64_t step_begin = INT64_MAX, step_end = INT64_MIN, kernels = 0;
  TimelineOmitted omitted;
  int64_t view_begin = INT64_MAX, view_end = INT64_MIN;
};
void Append(const Part& p, const std::string& step, Merged* m) {
  const nlohmann::json& t = *p.timeline;
  const std::string rank = "rank " + std::to_string(p.rank->rank);
  const std::string own = t["step"].get<std::string>();
  const int64_t lane_base = static_cast<int64_t>(m->lanes.size()), row_base = static_cast<int64_t>(m->events.size());
  for (nlohmann::json l : t["lanes"]) {
    l["name"] = rank + " " + l["name"].get<std::string>() + (own != step ? " (" + own + ")" : "");
    l["rank"] = p.rank->rank;
    m->lanes.push_back(std::move(l));
  }
  std::vector<int64_t> local_names;
  for (const nlohmann::json& n : t["names"]) {
    auto [it, fresh] = m->name_of.emplace(n.get<std::string>(), static_cast<int64_t>(m->names.size()));
    if (fresh) m->names.push_back(n);
    local_names.push_back(it->second);
  }
  const nlohmann::json& e = t["events"];
  TimelineEvents& to = m->events;
  for (size_t k = 0; k < e["lane"].size(); ++k) {
    to.lane.push_back(e["lane"][k].get<int64_t>() + lane_base);
    to.start_ns.push_back(e["start_ns"][k].get<int64_t>() + p.base);
    to.dur_ns.push_back(e["dur_ns"][k].get<int64_t>());
    to.name.push_back(local_names[e["name"][k].get<size_t>()]);
    to.kind.push_back(e["kind"][k].get<int64_t>());
    to.depth.push_back(e["depth"][k].get<int64_t>());
    to.type.push_back(e["type"][k].get<int64_t>());
    const int64_t l = e["launch"][k].get<int64_t>();
    to.launch.push_back(l >= 0 ? l + row_base : -1);
  }
  for (const nlohmann::json& row : t["critical_path"]["rows"]) {
    m->rows.push_back({row[0].get<int64_t>() + row_base, row[1], row[2]});
  }
  for (const nlohmann::json& l : t["launched_ns"]) {
    m->launched.push_back({l[0].get<int64_t>() + row_base, l[1].get<int64_t>() + p.base});
  }
  const nlohmann::json& s = *ChosenStep(t);
  m->step_begin = std::min(m->step_begin, s["begin_ns"].get<int64_t>() + p.base);
  m->step_end = std::max(m->step_end, s["end_ns"].get<int64_t>() + p.base);
  m->kernels += s["kernels"].get<int64_t>();
  m->omitted.Add(t["omitted"]);
  const nlohmann::json& o = t["overview"];
  m->view_begin = std::min(m->view_begin, o["begin_ns"].get<int64_t>() + p.base);
  m->view_end = std::max(m->view_end, o["end_ns"].get<int64_t>() + p.base);
}

// The ranks' overviews added into the merged range's bins, each bin by its centre.
nlohmann::json MergeOverviews(const std::vector<Part>& parts, int64_t begin, int64_t end) {
  std::vector<double> device_ns(kTimelineOverviewBins, 0), host_ns(kTimelineOverviewBins, 0);
  const double width = end > begin ? static_cast<double>(end - begin) / kTimelineOverviewBins : 1;
  for (const Part& p : parts) {
    const nlohmann::json& o = (*p.timeline)["overview"];
    const int64_t b = o["begin_ns"].get<int64_t>() + p.base, e = o["end_ns"].get<int64_t>() + p.base;
    for (auto [from, into] : {std::pair{&o["device_ns"], &device_ns}, std::pair{&o["host_runtime_ns"], &host_ns}}) {
      const size_t n = from->size();
      for (size_t k = 0; k < n; ++k) {
        const double centre = static_cast<double>(b) + (static_cast<double>(k) + 0.5) * static_cast<double>(e - b) / n;
        const int bin = std::clamp(static_cast<int>((centre - static_cast<double>(begin)) / width), 0,
                                   kTimelineOverviewBins - 1);
        (*into)[static_cast<size_t>(bin)] += (*from)[k].get<double>();
      }
    }
  }
  return {{"begin_ns", begin}, {"end_ns", end}, {"device_ns", device_ns}, {"host_runtime_ns", host_ns}};
}

// The critical path the page's figures give: the longest of the ranks' own paths (each
// rank's is marked on its lanes); their lengths are not added, as no rank waits for the sum.
nlohmann::json LongestPath(const std::vector<Part>& parts, nlohmann::json rows) {
  const Part* longest = &parts.front();
  for (const Part& p : parts) {
    if ((*p.timeline)["critical_path"]["length_ns"].get<int64_t>() >
        (*longest->timeline)["critical_path"]["length_ns"].get<int64_t>()) {
      longest = &p;
    }
  }
  nlohmann::json c = (*longest->timeline)["critical_path"];
  c["step"] = c["step"].get<std::string>() + ": the longest rank's path, rank " + std::to_string(longest->rank->rank) +
              "'s (each rank's own path is marked on its lanes)";
  c["rank"] = longest->rank->rank;
  c["rows"] = std::move(rows);
  return c;
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
  const Parts p = CollectParts(job);
  if (p.parts.empty()) return nullptr;
  Merged m;
  std::vector<std::string> other_steps;
  for (const Part& part : p.parts) {
    Append(part, p.step, &m);
    const std::string own = (*part.timeline)["step"].get<std::string>();
    if (own != p.step) other_steps.push_back("rank " + std::to_string(part.rank->rank) + ": " + own);
  }
  const nlohmann::json& first = *p.parts.front().timeline;
  const bool asked = first["why"].get<std::string>().rfind("the step asked for", 0) == 0;  // --step
  std::string why = (asked ? "the step asked for (" : "each rank's steady-state step (") + p.step + " on " +
                    std::to_string(p.on_step) + " of " + std::to_string(p.parts.size()) +
                    " ranks), on the clock the collectives aligned";
  if (!other_steps.empty()) {
    why += "; another step on " + std::to_string(other_steps.size()) + " (" + other_steps.front() +
           (other_steps.size() > 1 ? ", ...)" : ")");
  }
  if (!p.unaligned.empty()) {
    why += "; " + std::to_string(p.unaligned.size()) + " rank(s) on their own clocks, no collective aligning them (rank " +
           std::to_string(p.unaligned.front()) + (p.unaligned.size() > 1 ? ", ...)" : ")");
  }
  if (p.parts.size() < job.ranks.size()) {
    why += "; " + std::to_string(job.ranks.size() - p.parts.size()) + " rank(s) have no such step";
  }
  nlohmann::json j;
  for (const char* legend : {"kinds", "types", "causes"}) j[legend] = first[legend];
  j["origin_ns"] = p.origin;
  j["end_ns"] = m.step_end;
  j["step"] = p.step;
  j["why"] = why;
  j["every_step"] = false;
  j["steps"] = nlohmann::json::array({{{"name", p.step}, {"begin_ns", m.step_begin}, {"end_ns", m.step_end},
                                       {"kernels", m.kernels}, {"in_timeline", true}, {"chosen", true}}});
  j["lanes"] = std::move(m.lanes);
  j["names"] = std::move(m.names);
  j["events"] = m.events.ToJson();
  j["launched_ns"] = std::move(m.launched);
  j["omitted"] = m.omitted.ToJson();
  j["critical_path"] = LongestPath(p.parts, std::move(m.rows));
  j["overview"] = MergeOverviews(p.parts, m.view_begin, m.view_end);
  j["device"] = nullptr;
  return j;
}

}  // namespace tierscope
