// A job's critical path (job_path.h): the longest path through each step's joined graph,
// the ranks it runs on and where it crosses between them, and its reports.
#include <algorithm>
#include <map>
#include <string>

#include "analysis/job_path.h"

namespace tierscope {
namespace {

double Percent(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

JobCriticalPath PathOf(const JointGraph& j, const std::string& window, const std::vector<int>& rank_numbers) {
  JobCriticalPath p;
  p.window = window;
  p.ranks = j.ranks;
  p.nodes = static_cast<int64_t>(j.node_ts.size());
  p.edges = static_cast<int64_t>(j.edges.size());
  p.negative_edges = j.negative;
  p.graph_kernels = j.graph_kernels;
  p.joins = static_cast<int64_t>(j.arrivals.size());
  p.unjoined = j.unjoined;
  const size_t n = j.node_ts.size();
  if (n == 0) return p;
  p.span_ns = *std::max_element(j.node_ts.begin(), j.node_ts.end()) - *std::min_element(j.node_ts.begin(), j.node_ts.end());
  // Each node with no dependency released at its time on the aligned clock, so that a rank
  // whose step began late reaches its calls late (with HTA's 0 everywhere, the rank with the
  // most work before a collective would look like the one the others waited for); the
  // releases are not part of the path's length.
  std::vector<double> dist = Releases(j, 1.0);
  std::vector<int64_t> via;
  p.cyclic_nodes = static_cast<int64_t>(n - LongestDistances(n, j.edges, dist, via));
  if (p.cyclic_nodes > 0) return p;
  const std::vector<size_t> path = PathToFurthest(j.edges, dist, via);
  std::map<uint32_t, const JointGraph::Arrival*> arrival_at;
  for (const JointGraph::Arrival& a : j.arrivals) arrival_at[a.node] = &a;
  std::map<std::pair<int32_t, int>, size_t> at;  // (label, cause) -> index in p.events
  const auto on_rank = [&](int32_t r) {
    if (r < 0) return;
    const int number = rank_numbers[static_cast<size_t>(r)];
    if (p.on_path.empty() || p.on_path.back() != number) p.on_path.push_back(number);
  };
  for (size_t k = 0; k < path.size(); ++k) {
    const TimedEdge& e = j.edges[path[k]];
    on_rank(j.node_rank[e.from]);
    const auto a = arrival_at.find(e.to);
    if (a != arrival_at.end() && k + 1 < path.size()) {
      const int32_t from = a->second->last, to = j.node_rank[j.edges[path[k + 1]].to];
      if (from >= 0 && to >= 0 && from != to) {
        p.crossings.push_back({a->second->call->name, a->second->call->p2p, rank_numbers[static_cast<size_t>(from)],
                               rank_numbers[static_cast<size_t>(to)], a->second->late_ns});
      }
    }
    const auto w = static_cast<int64_t>(std::llround(e.weight));
    p.length_ns += w;
    if (w == 0 || e.label < 0) continue;
    p.by_cause[static_cast<size_t>(e.cause)] += w;
    auto [it, fresh] = at.try_emplace({e.label, static_cast<int>(e.cause)}, p.events.size());
    if (fresh) {
      const auto& [r, name] = j.labels[static_cast<size_t>(e.label)];
      p.events.push_back({rank_numbers[static_cast<size_t>(r)], name, e.cause, 0});
    }
    p.events[it->second].ns += w;
  }
  if (!path.empty()) on_rank(j.node_rank[j.edges[path.back()].to]);
  std::stable_sort(p.events.begin(), p.events.end(),
                   [](const JobCriticalPath::OnPath& a, const JobCriticalPath::OnPath& b) { return a.ns > b.ns; });
  return p;
}

// The step whose path is longest, or none.
const JobCriticalPath* Longest(const std::vector<JobCriticalPath>& paths) {
  const auto it = std::max_element(paths.begin(), paths.end(), [](const JobCriticalPath& a, const JobCriticalPath& b) {
    return a.length_ns < b.length_ns;
  });
  return it == paths.end() ? nullptr : &*it;
}

std::string RankSequence(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size() && i < 12; ++i) out += (i == 0 ? "" : " > ") + std::to_string(ranks[i]);
  if (ranks.size() > 12) out += " > ... (" + std::to_string(ranks.size()) + ")";
  return out.empty() ? "-" : out;
}

}  // namespace

std::vector<int64_t> ClockOffsets(const Stragglers& s, size_t ranks) {
  std::vector<int64_t> offsets(ranks, 0);
  for (size_t r = 0; r < ranks && r < s.ranks.size(); ++r) offsets[r] = s.ranks[r].aligned ? s.ranks[r].offset_ns : 0;
  return offsets;
}

std::vector<JobCriticalPath> JobCriticalPaths(const std::vector<const std::vector<RankStepGraph>*>& graphs,
                                              const std::vector<int>& rank_numbers, const Stragglers& s) {
  const std::vector<int64_t> offsets = ClockOffsets(s, graphs.size());
  std::vector<JobCriticalPath> out;
  for (const std::vector<const RankStepGraph*>& step : JobSteps(graphs)) {
    const RankStepGraph* first = *std::find_if(step.begin(), step.end(), [](const RankStepGraph* g) { return g; });
    out.push_back(PathOf(JoinStep(step, offsets, s.joined, 0, /*last_only=*/true), first->window, rank_numbers));
  }
  return out;
}

Table JobCriticalPathTable(const std::vector<JobCriticalPath>& paths, const Stragglers& s) {
  Table t;
  t.name = "critical_path";
  t.title = "Critical path of each step across the job's ranks: its length, its time by cause, the ranks it runs on";
  t.columns = {"Length (ns)", "Span (ns)", "CPU (%)", "GPU compute (%)", "GPU comm (%)", "Launch overhead (%)",
               "Kernel gaps (%)", "Ranks", "Joins", "Crossings", "Path's ranks", "Step"};
  int64_t negative = 0, graph = 0, cyclic = 0, empty = 0, unjoined = 0;
  for (const JobCriticalPath& p : paths) {
    const auto share = [&](PathCause c) { return Cell(Percent(p.by_cause[static_cast<size_t>(c)], p.length_ns)); };
    t.AddRow({p.length_ns, p.span_ns, share(PathCause::kCpu), share(PathCause::kGpuCompute),
              share(PathCause::kGpuCommunication), share(PathCause::kLaunchOverhead), share(PathCause::kKernelGap),
              int64_t{p.ranks}, p.joins, static_cast<int64_t>(p.crossings.size()), RankSequence(p.on_path), p.window});
    negative += p.negative_edges;
    graph += p.graph_kernels;
    cyclic += p.cyclic_nodes > 0 ? 1 : 0;
    empty += p.nodes == 0 ? 1 : 0;
    unjoined += p.unjoined;
  }
  t.notes.push_back("each rank's step graph as analyze --critical-path builds it, joined across ranks: a collective "
                    "ends on every rank only after the last rank reached it, a recv only after its send began "
                    "(each party's start -> the last arrival -> its end, weighed its end after that arrival: the "
                    "wait for a late rank is not the collective's time, the late rank's own work is); Span: on the "
                    "aligned clocks; Joins: the collectives and sends joined in the step; Crossings: where the path "
                    "goes from the rank that arrived last to another");
  t.notes.push_back(s.alignment);
  if (s.matched == 0 && s.p2p_paired == 0) {
    t.notes.push_back("no collective or send joins the ranks: each step's path is its longest rank's own");
  }
  t.NoteCount(unjoined,
              "matched call(s) could not be joined: their end is not reached from their start directly on two ranks "
              "(a host collective with calls inside it, gloo's ranges on their own threads): each rank's path runs "
              "through its own wait there");
  t.NoteCount(s.p2p_unpaired, "send / recv kernel(s) found no partner among the job's ranks: not joined");
  t.NoteCount(cyclic, "step(s) have a cycle in their joined graph (clocks that disagree): no path is claimed (length 0)");
  t.NoteCount(empty, "step(s) have no event in their window on any rank: no path");
  t.NoteCount(graph, "kernel(s) a graph replayed are in the graph (HTA leaves them out)");
  t.NoteCount(negative,
              "edge(s) end before they start (clocks that disagree, or a collective that ended before the last "
              "arrival on the aligned clocks): weighed 0, and the path's causes near them are not to be concluded from");
  return t;
}

Table JobCriticalPathCrossingsTable(const std::vector<JobCriticalPath>& paths) {
  Table t;
  t.name = "critical_path_crossings";
  t.title = "Where the longest step's critical path goes from one rank to another";
  t.columns = {"From rank", "To rank", "Late (ns)", "Kind", "Call"};
  const JobCriticalPath* longest = Longest(paths);
  if (longest == nullptr) return t;
  for (const JobCriticalPath::Crossing& c : longest->crossings) {
    t.AddRow({int64_t{c.from_rank}, int64_t{c.to_rank}, c.late_ns, std::string(c.p2p ? "send/recv" : "collective"), c.call});
  }
  t.notes.push_back("step: " + longest->window + "; From: the rank that reached the call last (the path runs through its "
                    "work before it); Late: its arrival after the one before it, on the aligned clocks");
  return t;
}

Table JobCriticalPathEventsTable(const std::vector<JobCriticalPath>& paths, size_t top) {
  Table t;
  t.name = "critical_path_events";
  t.title = "The events on the longest step's critical path across ranks, by time on it";
  t.columns = {"On path (ns)", "Of path (%)", "Cause", "Rank", "Name"};
  const JobCriticalPath* longest = Longest(paths);
  if (longest == nullptr) return t;
  for (size_t i = 0; i < longest->events.size() && i < top; ++i) {
    const JobCriticalPath::OnPath& e = longest->events[i];
    t.AddRow({e.ns, Percent(e.ns, longest->length_ns), PathCauseName(e.cause), int64_t{e.rank}, *e.name});
  }
  t.notes.push_back("step: " + longest->window + " (" + std::to_string(longest->events.size()) +
                    " names on its path; a rank's events of one name and cause added up)");
  return t;
}

}  // namespace tierscope
