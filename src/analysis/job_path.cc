// A job's steps joined across ranks (job_path.h): the ranks' step graphs, the joins, and the
// critical path through them.
#include "analysis/job_path.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <unordered_map>

namespace tierscope {

void NumberStep(const std::string& name, int64_t ordinal, RankStepGraph* g) {
  g->iteration = ordinal;
  g->numbered = false;
  constexpr std::string_view kStep = "ProfilerStep#";
  if (name.rfind(kStep, 0) != 0) return;
  int64_t n = 0;
  const char* first = name.data() + kStep.size();
  const char* last = name.data() + name.size();
  const auto [end, ec] = std::from_chars(first, last, n);
  if (ec == std::errc() && end == last && first != last && n >= 0) {
    g->iteration = n;
    g->numbered = true;
  }
}

RankStepGraph StepGraphOf(const WorkUnit& w, int64_t ordinal, const PathGraph& g) {
  RankStepGraph s;
  s.window = w.name;
  NumberStep(w.name, ordinal, &s);
  s.node_ts = g.node_ts;
  s.negative_edges = g.negative;
  s.graph_kernels = g.graph_kernels;
  return s;
}

void MapCalls(const PathGraph& g, const RankCollectives& collectives, RankStepGraph* out) {
  std::unordered_map<size_t, std::pair<bool, size_t>> by_event;
  for (bool p2p : {false, true}) {
    const std::vector<CollectiveCall>& v = p2p ? collectives.p2p : collectives.calls;
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i].event >= 0) by_event[static_cast<size_t>(v[i].event)] = {p2p, i};
    }
  }
  if (by_event.empty()) return;
  std::map<std::pair<bool, size_t>, std::pair<int64_t, int64_t>> nodes;
  for (uint32_t v = 0; v < g.node_event.size(); ++v) {
    const auto it = by_event.find(g.node_event[v]);
    if (it == by_event.end()) continue;
    auto [n, fresh] = nodes.try_emplace(it->second, -1, -1);
    (g.node_is_start[v] ? n->second.first : n->second.second) = v;
  }
  for (const auto& [call, se] : nodes) {
    if (se.first >= 0 && se.second >= 0) {
      out->calls[call] = {static_cast<uint32_t>(se.first), static_cast<uint32_t>(se.second)};
    }
  }
}

std::vector<RankStepGraph> RankPathGraphs(const TraceIndex& x, const RankCollectives& collectives) {
  std::vector<RankStepGraph> out;
  PathContext context = BuildPathContext(x);
  int64_t ordinal = 0;
  for (const WorkUnit& w : PathWindows(x)) {
    const PathGraph g = BuildPathGraph(x, context, w.begin_ns, w.end_ns);
    RankStepGraph s = StepGraphOf(w, ordinal++, g);
    std::unordered_map<int32_t, int32_t> label_of;  // interned name -> label: one string a name
    std::vector<TimedEdge>& edges = s.sets.emplace_back();
    edges.reserve(g.edges.size());
    for (const PathGraph::Edge& e : g.edges) {
      // As the single-trace path attributes it: a launch's delay to its kernel, other time
      // to its event; dependencies and waits to nothing.
      int32_t label = -1;
      if (e.weight > 0 && (e.event >= 0 || e.type == PathEdgeType::kLaunch)) {
        const size_t event = e.type == PathEdgeType::kLaunch ? g.node_event[e.to] : static_cast<size_t>(e.event);
        auto [it, fresh] = label_of.try_emplace(x.E(event).name, static_cast<int32_t>(s.labels.size()));
        if (fresh) s.labels.emplace_back(x.Name(event));
        label = it->second;
      }
      edges.push_back({e.from, e.to, static_cast<double>(e.weight), EdgeCause(x, e), label});
    }
    s.release_scale.push_back(1.0);
    MapCalls(g, collectives, &s);
    out.push_back(std::move(s));
  }
  return out;
}

void AppendWindowGraphs(std::vector<RankStepGraph> window, int64_t shift, int64_t step_number_add,
                        size_t calls_before, size_t p2p_before, std::vector<RankStepGraph>* into) {
  const int64_t ordinal_add = static_cast<int64_t>(into->size());
  for (RankStepGraph& g : window) {
    for (int64_t& ts : g.node_ts) ts += shift;
    g.iteration += g.numbered ? step_number_add : ordinal_add;
    std::map<std::pair<bool, size_t>, std::pair<uint32_t, uint32_t>> calls;
    for (const auto& [key, nodes] : g.calls) calls[{key.first, key.second + (key.first ? p2p_before : calls_before)}] = nodes;
    g.calls = std::move(calls);
    into->push_back(std::move(g));
  }
}

std::vector<double> Releases(const JointGraph& g, double scale) {
  std::vector<double> t(g.node_ts.size());
  if (t.empty()) return t;
  const int64_t origin = *std::min_element(g.node_ts.begin(), g.node_ts.end());
  for (size_t v = 0; v < t.size(); ++v) t[v] = static_cast<double>(g.node_ts[v] - origin) * scale;
  return t;
}

std::vector<std::vector<const RankStepGraph*>> JobSteps(const std::vector<const std::vector<RankStepGraph>*>& ranks) {
  std::map<std::pair<bool, int64_t>, std::vector<const RankStepGraph*>> by_step;  // (not numbered, N) -> per rank
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r] == nullptr) continue;
    for (const RankStepGraph& g : *ranks[r]) {
      auto& v = by_step[{!g.numbered, g.iteration}];
      if (v.empty()) v.resize(ranks.size(), nullptr);
      if (v[r] == nullptr) v[r] = &g;
    }
  }
  std::vector<std::vector<const RankStepGraph*>> out;
  for (auto& [key, v] : by_step) out.push_back(std::move(v));
  return out;
}

namespace {

// The party of a joined call in this step: (rank index, start node, end node), or none.
struct Party {
  size_t rank;
  uint32_t start, end;
};

// A joined call's own span edge, as the joint graph numbers it (none: the call's end is
// not reached by its start directly, a host call with calls inside it: not joined).
using OwnSpans = std::map<std::pair<uint32_t, uint32_t>, std::optional<TimedEdge>>;

// One call joined: an arrival node after the last party's start (every party's, with
// `last_only` false), and each party's end after it, weighed its end after the arrival,
// scaled as the set scales the call's own span. A party that ended before the arrival did
// not wait for it (a broadcast's root, an eager send) and keeps its own span, unless its
// call ends together on every rank, where the clocks are to blame (counted).
void Join(const std::vector<Party>& all, const JoinedCalls& call, const OwnSpans& own, bool last_only, JointGraph* j) {
  std::vector<std::pair<Party, TimedEdge>> parties;
  for (const Party& p : all) {
    const std::optional<TimedEdge>& e = own.at({p.start, p.end});
    if (e) parties.push_back({p, *e});
  }
  if (parties.size() < 2) {  // nothing to join: the spans stay
    for (const auto& [p, e] : parties) j->edges.push_back(e);
    return;
  }
  std::vector<int64_t> starts;
  for (const auto& [p, e] : parties) starts.push_back(j->node_ts[p.start]);
  const size_t last = static_cast<size_t>(std::max_element(starts.begin(), starts.end()) - starts.begin());
  const int64_t arrival = starts[last];
  std::vector<int64_t> sorted = starts;
  std::sort(sorted.begin(), sorted.end());
  const auto node = static_cast<uint32_t>(j->node_ts.size());
  j->node_ts.push_back(arrival);
  j->node_rank.push_back(-1);
  j->arrivals.push_back({node, &call, arrival - sorted[sorted.size() - 2], j->node_rank[parties[last].first.start]});
  const bool together = !call.p2p && EndsTogether(call.name);
  for (size_t k = 0; k < parties.size(); ++k) {
    const auto& [p, e] = parties[k];
    const int64_t measured = j->node_ts[p.end] - j->node_ts[p.start];
    const int64_t after = j->node_ts[p.end] - arrival;
    if (after < 0 && !together) {
      j->edges.push_back(e);
      continue;
    }
    if (after < 0) ++j->negative;
    const double scale = measured <= 0 ? 1.0 : e.weight / static_cast<double>(measured);
    if (!last_only || k == last) j->edges.push_back({p.start, node, 0.0, e.cause, -1});
    j->edges.push_back({node, p.end, static_cast<double>(std::max<int64_t>(0, after)) * scale, e.cause, e.label});
  }
}

}  // namespace

JointGraph JoinStep(const std::vector<const RankStepGraph*>& step, const std::vector<int64_t>& offsets,
                    const std::vector<JoinedCalls>& joined, size_t set, bool last_only) {
  JointGraph j;
  std::vector<uint32_t> base(step.size(), 0);
  std::vector<int32_t> label_base(step.size(), 0);
  for (size_t r = 0; r < step.size(); ++r) {
    if (step[r] == nullptr) continue;
    ++j.ranks;
    base[r] = static_cast<uint32_t>(j.node_ts.size());
    label_base[r] = static_cast<int32_t>(j.labels.size());
    for (int64_t ts : step[r]->node_ts) {
      j.node_ts.push_back(ts - offsets[r]);
      j.node_rank.push_back(static_cast<int32_t>(r));
    }
    for (const std::string& l : step[r]->labels) j.labels.push_back({static_cast<int32_t>(r), &l});
    j.negative += step[r]->negative_edges;
    j.graph_kernels += step[r]->graph_kernels;
  }
  // The joins present in this step, and the span edges they replace.
  std::vector<std::vector<Party>> joins;
  std::vector<const JoinedCalls*> join_of;
  OwnSpans own;
  for (const JoinedCalls& call : joined) {
    std::vector<Party> parties;
    for (const auto& [r, index] : call.calls) {
      if (r >= step.size() || step[r] == nullptr) continue;
      const auto it = step[r]->calls.find({call.p2p, index});
      if (it != step[r]->calls.end()) parties.push_back({r, base[r] + it->second.first, base[r] + it->second.second});
    }
    if (parties.size() < 2) continue;
    for (const Party& p : parties) own[{p.start, p.end}] = std::nullopt;
    joins.push_back(std::move(parties));
    join_of.push_back(&call);
  }
  // Every edge but the joined calls' own spans, kept aside for Join.
  for (size_t r = 0; r < step.size(); ++r) {
    if (step[r] == nullptr || set >= step[r]->sets.size()) continue;
    for (const TimedEdge& e : step[r]->sets[set]) {
      TimedEdge out{base[r] + e.from, base[r] + e.to, e.weight, e.cause, e.label < 0 ? -1 : label_base[r] + e.label};
      if (!own.empty()) {
        const auto it = own.find({out.from, out.to});
        if (it != own.end() && !it->second) {
          it->second = out;
          continue;
        }
      }
      j.edges.push_back(out);
    }
  }
  for (size_t k = 0; k < joins.size(); ++k) {
    Join(joins[k], *join_of[k], own, last_only, &j);
    if (j.arrivals.empty() || j.arrivals.back().call != join_of[k]) ++j.unjoined;
  }
  return j;
}

}  // namespace tierscope
