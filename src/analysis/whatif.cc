// What-if (whatif.h): each step's dependency graph re-timed as a simulation. Every node
// starts when its last dependency allows (a thread's first event at its recorded time); an
// edge takes the time it took, changed as the changes say. Unlike the critical path's
// weights (HTA's), the simulation keeps the host's gaps between operators, and holds every
// kernel after its launch, so that a kernel made faster cannot start before it was launched.
#include "analysis/whatif.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "analysis/critical_path_graph.h"
#include "analysis/gpu_time.h"
#include "analysis/whatif_changes.h"
#include "analysis/whatif_facts.h"

namespace tierscope {
namespace {

struct Levers {
  double cpu = 1, per_launch = 1;  // host time x cpu; per-launch costs x per_launch (1/K under batch)
  std::optional<double> launch_ns;
  bool sync_off = false, comm_overlap = false;
};

Levers LeversOf(const std::vector<WhatIfChange>& changes) {
  Levers l;
  for (const WhatIfChange& c : changes) {
    using K = WhatIfChange::Kind;
    if (c.kind == K::kCpu) l.cpu *= c.value;
    if (c.kind == K::kBatch) l.per_launch /= c.value;
    if (c.kind == K::kLaunch) l.launch_ns = c.value * 1000;
    if (c.kind == K::kSyncOff) l.sync_off = true;
    if (c.kind == K::kCommOverlap) l.comm_overlap = true;
  }
  return l;
}

// The simulation's edges: the graph's, weighed as the levers say, plus each kernel held
// after its launch call by the trace's typical launch delay.
std::vector<TimedEdge> SimEdges(const TraceIndex& x, const PathGraph& g, const WindowFacts& facts,
                              const std::vector<double>& factor, const Levers& l,
                              const std::unordered_set<size_t>& launch_calls) {
  const std::vector<bool>& waited = facts.waited;
  const double launch_delay = l.launch_ns ? *l.launch_ns : facts.launch_delay;
  const double device_gap = facts.device_gap;
  std::vector<TimedEdge> out;
  out.reserve(g.edges.size() + g.launch_call.size());
  // has_launch: a launch edge; launch_placed: a kernel-kernel edge where the stream waited
  // for the launch (the launch, as measured, places the kernel then too).
  std::vector<bool> has_launch(g.node_ts.size(), false), has_in(g.node_ts.size(), false),
      launch_placed(g.node_ts.size(), false);
  for (size_t i = 0; i < g.edges.size(); ++i) {
    const PathGraph::Edge& e = g.edges[i];
    has_in[e.to] = true;
    const double w0 = static_cast<double>(std::max<int64_t>(0, g.node_ts[e.to] - g.node_ts[e.from]));
    const PathCause cause = facts.causes[i];
    double w = 0;
    switch (e.type) {
      case PathEdgeType::kSpan: {
        const Event& ev = x.E(static_cast<size_t>(std::max<int64_t>(e.event, 0)));
        if (e.event >= 0 && IsDeviceWork(ev.kind)) {
          w = static_cast<double>(e.weight) * factor[static_cast<size_t>(e.event)];
          if (l.comm_overlap && cause == PathCause::kGpuCommunication) w = 0;
        } else if (UnsyncedBlockingSpan(x, g, waited, e)) {
          // A blocking call with no recorded sync: as a recorded one, when the device event
          // it waited for is known (its return after that event's end: the edge below);
          // else its wait as measured. Nothing when the host no longer waits.
          const auto awaited = facts.awaited.find(e.to);
          if (l.sync_off) {
            w = 0;
          } else if (awaited == facts.awaited.end()) {
            w = w0 * l.per_launch;
          } else {
            // The call returned this long after the last of them ended; after each, at the
            // earliest, as long.
            const int64_t call_start = x.E(static_cast<size_t>(e.event)).ts_ns;
            const uint32_t last = awaited->second.front();
            const double tail =
                static_cast<double>(std::max<int64_t>(0, g.node_ts[e.to] - std::max(g.node_ts[last], call_start)));
            for (const uint32_t d : awaited->second) out.push_back({d, e.to, tail * l.per_launch, PathCause::kCpu, -1});
          }
        } else {
          w = static_cast<double>(e.weight) * l.cpu * l.per_launch;
          if (l.launch_ns && e.event >= 0 && launch_calls.count(static_cast<size_t>(e.event)) != 0) {
            w = std::min(w, *l.launch_ns);
          }
        }
        break;
      }
      case PathEdgeType::kDependency: w = w0 * l.per_launch; break;  // the host's gap, kept
      case PathEdgeType::kLaunch:
        // A kernel that waited for another stream's work holds that wait on the edge from
        // it (below): its launch, at most the typical delay.
        w = (l.launch_ns                               ? *l.launch_ns
             : facts.stream_waits.count(e.to) != 0 ? std::min(w0, facts.launch_delay)
                                                       : w0) *
            l.per_launch;
        has_launch[e.to] = true;
        break;
      case PathEdgeType::kKernelKernel: {
        // A wait for the launch is the launch's, a wait for another stream that stream's (the
        // edge below); with no launch in the window (a device-only trace), the gap is the
        // device's, kept.
        const auto call = g.launch_call.find(e.to);
        const bool queued = call == g.launch_call.end() || g.node_ts[call->second] < g.node_ts[e.from];
        w = (queued && facts.stream_waits.count(e.to) == 0 ? w0 : std::min(w0, device_gap)) * l.per_launch;
        if (!queued) launch_placed[e.to] = true;
        break;
      }
      case PathEdgeType::kSync: {
        const Event& waiter = x.E(g.node_event[e.to]);
        if (IsDeviceWork(waiter.kind)) break;  // a stream's wait: none of its own
        if (l.sync_off) continue;     // the host no longer waits
        // The host's return after the wait was met: its call's time from the later of its
        // start and the awaited end.
        w = static_cast<double>(std::max<int64_t>(0, g.node_ts[e.to] - std::max(g.node_ts[e.from], waiter.ts_ns))) *
            l.per_launch;
        break;
      }
    }
    out.push_back({e.from, e.to, w, e.type == PathEdgeType::kDependency ? PathCause::kCpu : cause, -1});
  }
  // A stream's wait for another's work: after it, by as long as the event took to reach it.
  for (const auto& [start, awaited] : facts.stream_waits) {
    has_in[start] = true;
    const double reach = static_cast<double>(std::max<int64_t>(0, g.node_ts[start] - g.node_ts[awaited]));
    out.push_back({awaited, start, reach * l.per_launch, PathCause::kKernelGap, -1});
  }
  // Every device event after its launch call: at least the typical launch delay (never more
  // than its own, so the replay is as measured). One that nothing in the window explains (no
  // launch edge, nothing before it on its stream, no wait) waited for work from before the
  // window, or for something the trace does not record, or for less than the typical delay:
  // it keeps its measured delay, less the typical one, plus the typical one as the levers set
  // it; a wait beyond the typical delay is counted as a gap of the device's queue, not as
  // launch overhead.
  for (const auto& [kernel, call] : g.launch_call) {
    if (has_launch[kernel]) continue;
    const double measured = static_cast<double>(std::max<int64_t>(0, g.node_ts[kernel] - g.node_ts[call]));
    if (launch_placed[kernel] && facts.stream_waits.count(kernel) == 0) {  // as a launch edge would
      out.push_back({call, kernel, (l.launch_ns ? *l.launch_ns : measured) * l.per_launch, PathCause::kLaunchOverhead, -1});
      continue;
    }
    const double unexplained = has_in[kernel] ? 0 : measured - facts.launch_delay;
    const double w = has_in[kernel] ? std::min(measured, launch_delay) : std::max(0.0, unexplained + launch_delay);
    out.push_back({call, kernel, w * l.per_launch,
                   unexplained > launch_delay ? PathCause::kKernelGap : PathCause::kLaunchOverhead, -1});
  }
  return out;
}

struct SimResult {
  double span = 0, path = 0;
  std::array<double, kPathCauses> by_cause{};
  int64_t cyclic = 0;
};

// Earliest times (Kahn's order; a node with no dependency at its recorded time), the last
// node's time from the first's, and the binding path to it by cause.
SimResult Simulate(const JointGraph& g, double release_scale) {
  const size_t n = g.node_ts.size();
  SimResult r;
  if (n == 0) return r;
  std::vector<double> t = Releases(g, release_scale);
  std::vector<int64_t> via;
  r.cyclic = static_cast<int64_t>(n - LongestDistances(n, g.edges, t, via));
  if (r.cyclic > 0) return r;
  r.span = *std::max_element(t.begin(), t.end());
  const std::vector<size_t> path = PathToFurthest(g.edges, t, via);
  for (size_t e : path) {
    r.path += g.edges[e].weight;
    r.by_cause[static_cast<size_t>(g.edges[e].cause)] += g.edges[e].weight;
  }
  // The release of the path's first node.
  const double first = path.empty() ? r.span : t[g.edges[path.front()].from];
  r.path += first;
  r.by_cause[static_cast<size_t>(PathCause::kCpu)] += first;
  return r;
}

std::optional<DeviceSpec> SpecFor(const TraceIndex& x, const std::optional<DeviceSpec>& given) {
  if (given) return given;
  return FindDeviceSpec(x.trace->device_name, x.trace->device_units, x.trace->device_memory);
}

}  // namespace

void ChangeNotes::Merge(const ChangeNotes& o) {
  no_grid += o.no_grid;
  no_dtype += o.no_dtype;
  no_spec = no_spec || o.no_spec;
  inferred_waits += o.inferred_waits;
  device_only = device_only || o.device_only;
  stream_waits += o.stream_waits;
  std::vector<std::string> both;
  for (const std::string& u : unmatched) {
    if (std::find(o.unmatched.begin(), o.unmatched.end(), u) != o.unmatched.end()) both.push_back(u);
  }
  unmatched = std::move(both);
}

std::vector<std::string> ChangeNoteLines(const ChangeNotes& n, const std::vector<WhatIfChange>& changes, bool job) {
  std::vector<std::string> notes;
  for (const std::string& c : n.unmatched) {
    notes.push_back(c + (job ? " matches no kernel of any rank" : " matches no kernel of the trace") +
                    ": it changes nothing");
  }
  if (n.no_grid > 0) {
    notes.push_back(std::to_string(n.no_grid) + " kernel(s) record no grid: batch scales their time with the "
                    "work, units leaves it as it was");
  }
  if (n.no_dtype > 0) {
    notes.push_back(std::to_string(n.no_dtype) + " kernel(s) have no dtype in their name or no recorded "
                    "work: precision leaves their time as it was");
  }
  if (n.device_only) notes.push_back(kDeviceOnlyNote);
  if (n.stream_waits > 0) {
    notes.push_back(std::to_string(n.stream_waits) + " kernel(s) launched after a StreamWaitEvent call, with no "
                    "recorded sync, started late just after another stream's work ended: each is taken to wait "
                    "for that work (an event recorded after it), and moves as it moves");
  }
  if (n.inferred_waits > 0) {
    notes.push_back(std::to_string(n.inferred_waits) + " blocking call(s) with no recorded sync (Kineto records "
                    "one only with enable_cuda_sync_events) are taken to wait for the device work their process launched before "
                    "them that ended while they ran: a device sync for all of it; a stream or event sync, or a copy, "
                    "for the last of it, on whichever stream (the trace does not say which it synced); an async "
                    "copy for its own copy");
  }
  for (const WhatIfChange& c : changes) {
    if (c.kind == WhatIfChange::Kind::kBatch && n.no_spec) {
      notes.push_back("no peaks for the trace's device: " + c.text + " has no roofline floor (--device-spec)");
    }
    if (c.kind == WhatIfChange::Kind::kPrecision) {
      notes.push_back(c.text + ": kernels the new precision adds (conversions, quantization) are not predicted");
    }
  }
  return notes;
}

namespace {

// Each step's what-if graph, built and handed to `each` one at a time.
Status ForEachWhatIfStep(const TraceIndex& x, const RankCollectives* collectives,
                         const std::vector<std::vector<WhatIfChange>>& scenarios,
                         const std::optional<DeviceSpec>& device_spec, std::vector<ChangeNotes>* notes,
                         const std::function<void(RankStepGraph)>& each) {
  const std::optional<DeviceSpec> spec = SpecFor(x, device_spec);
  std::vector<std::vector<double>> factors;
  std::vector<Levers> levers;
  notes->assign(scenarios.size(), {});
  for (size_t i = 0; i < scenarios.size(); ++i) {
    if (scenarios[i].empty()) return InvalidArgument("whatif needs at least one --change");
    StatusOr<std::vector<double>> factor = DeviceFactors(x, scenarios[i], spec, &(*notes)[i]);
    if (!factor.ok()) return factor.status();
    (*notes)[i].no_spec = !spec.has_value();
    factors.push_back(std::move(*factor));
    levers.push_back(LeversOf(scenarios[i]));
  }
  const std::vector<double> unchanged(x.trace->events.size(), 1.0);
  const std::unordered_set<size_t> launch_calls(x.launches.begin(), x.launches.end());
  PathContext context = BuildPathContext(x);
  for (ChangeNotes& n : *notes) n.device_only = context.device_only;
  int64_t ordinal = 0;
  for (const WorkUnit& w : PathWindows(x)) {
    const PathGraph g = BuildPathGraph(x, context, w.begin_ns, w.end_ns);
    const WindowFacts facts = FactsOf(x, g);
    for (size_t i = 0; i < scenarios.size(); ++i) {
      if (!levers[i].sync_off) (*notes)[i].inferred_waits += static_cast<int64_t>(facts.awaited.size());
      (*notes)[i].stream_waits += static_cast<int64_t>(facts.stream_waits.size());
    }
    RankStepGraph s = StepGraphOf(w, ordinal++, g);
    s.sets.push_back(SimEdges(x, g, facts, unchanged, Levers{}, launch_calls));
    s.release_scale.push_back(1.0);
    for (size_t i = 0; i < scenarios.size(); ++i) {
      s.sets.push_back(SimEdges(x, g, facts, factors[i], levers[i], launch_calls));
      s.release_scale.push_back(levers[i].per_launch);
    }
    if (collectives != nullptr) MapCalls(g, *collectives, &s);
    each(std::move(s));
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::vector<RankStepGraph>> WhatIfStepGraphs(const TraceIndex& x, const RankCollectives* collectives,
                                                      const std::vector<std::vector<WhatIfChange>>& scenarios,
                                                      const std::optional<DeviceSpec>& device_spec,
                                                      std::vector<ChangeNotes>* notes) {
  std::vector<RankStepGraph> out;
  TS_RETURN_IF_ERROR(ForEachWhatIfStep(x, collectives, scenarios, device_spec, notes,
                                       [&](RankStepGraph g) { out.push_back(std::move(g)); }));
  return out;
}

StepSimulator::StepSimulator(size_t scenarios) : cyclic_(scenarios, 0), out_of_range_(scenarios, 0), results_(scenarios) {}

void StepSimulator::Add(const std::vector<const RankStepGraph*>& step, const std::vector<int64_t>& offsets,
                        const std::vector<JoinedCalls>& joined) {
  const auto first = std::find_if(step.begin(), step.end(), [](const RankStepGraph* g) { return g != nullptr; });
  if (first == step.end()) return;
  const JointGraph today_graph = JoinStep(step, offsets, joined, 0, /*last_only=*/false);
  const int64_t measured = today_graph.node_ts.empty()
                               ? 0
                               : *std::max_element(today_graph.node_ts.begin(), today_graph.node_ts.end()) -
                                     *std::min_element(today_graph.node_ts.begin(), today_graph.node_ts.end());
  const SimResult today = Simulate(today_graph, 1.0);
  for (size_t i = 0; i < results_.size(); ++i) {
    if ((*first)->release_scale.size() < i + 2) continue;  // graphs without this scenario's edges
    WhatIfStep s;
    s.window = (*first)->window;
    s.measured_ns = measured;
    const SimResult next =
        Simulate(JoinStep(step, offsets, joined, i + 1, /*last_only=*/false), (*first)->release_scale[i + 1]);
    if (today.cyclic > 0 || next.cyclic > 0) ++cyclic_[i];
    // Times past what an int64 of ns holds (factors on traces that are already long): no
    // prediction rather than a wrapped one.
    if (!(std::max(today.span, next.span) < static_cast<double>(kMaxTraceNs))) {
      ++out_of_range_[i];
      continue;
    }
    s.replay_ns = std::llround(today.span);
    s.predicted_ns = std::llround(next.span);
    s.today_path_ns = std::llround(today.path);
    s.predicted_path_ns = std::llround(next.path);
    for (int c = 0; c < kPathCauses; ++c) {
      s.today_by_cause[c] = std::llround(today.by_cause[c]);
      s.predicted_by_cause[c] = std::llround(next.by_cause[c]);
    }
    results_[i].steps.push_back(std::move(s));
  }
}

std::vector<WhatIfResult> StepSimulator::Finish() {
  for (size_t i = 0; i < results_.size(); ++i) {
    std::vector<std::string>& notes = results_[i].notes;
    results_[i].cyclic = cyclic_[i];
    results_[i].out_of_range = out_of_range_[i];
    if (cyclic_[i] > 0) notes.push_back(std::to_string(cyclic_[i]) + " step(s) have a cycle in their graph: no prediction");
    if (out_of_range_[i] > 0) {
      notes.push_back(std::to_string(out_of_range_[i]) + " step(s) re-time beyond 2^62 ns: no prediction, left out");
    }
  }
  return std::move(results_);
}

StatusOr<std::vector<WhatIfResult>> WhatIfEach(const TraceIndex& x,
                                                const std::vector<std::vector<WhatIfChange>>& scenarios,
                                                const std::optional<DeviceSpec>& device_spec) {
  // Each step simulated as soon as its graph is built, then let go.
  std::vector<ChangeNotes> notes;
  StepSimulator sim(scenarios.size());
  TS_RETURN_IF_ERROR(ForEachWhatIfStep(x, nullptr, scenarios, device_spec, &notes,
                                       [&](RankStepGraph g) { sim.Add({&g}, {0}, {}); }));
  std::vector<WhatIfResult> results = sim.Finish();
  for (size_t i = 0; i < results.size(); ++i) {
    for (std::string& n : ChangeNoteLines(notes[i], scenarios[i], /*job=*/false)) results[i].notes.push_back(std::move(n));
  }
  return results;
}

Status CheckSomethingRetimed(const WhatIfResult& r, const std::string& what) {
  for (const WhatIfStep& s : r.steps) {
    if (s.replay_ns > 0) return OkStatus();
  }
  if (r.cyclic + r.out_of_range > 0) {
    return InvalidArgument(what + ": no prediction: every step was left out (" + std::to_string(r.cyclic) +
                           " with a cycle in its graph, " + std::to_string(r.out_of_range) +
                           " re-timing beyond 2^62 ns)");
  }
  return InvalidArgument(what + ": nothing to re-time: " +
                         (r.steps.empty() ? std::string("no step with host ops, runtime calls or device work")
                                          : std::to_string(r.steps.size()) +
                                                " step(s), none with a host op, runtime call or device work"));
}

StatusOr<WhatIfResult> WhatIf(const TraceIndex& x, const WhatIfOptions& o) {
  StatusOr<std::vector<WhatIfResult>> r = WhatIfEach(x, {o.changes}, o.device_spec);
  if (!r.ok()) return r.status();
  TS_RETURN_IF_ERROR(CheckSomethingRetimed(r->front(), x.trace->source));
  return std::move(r->front());
}

Table WhatIfTable(const WhatIfResult& r, const WhatIfOptions& o) {
  Table t;
  t.name = "whatif";
  std::string changes;
  for (const WhatIfChange& c : o.changes) changes += (changes.empty() ? "" : ", ") + c.text;
  t.title = "What-if: each step re-timed with " + changes;
  t.columns = {"Measured (ns)", "Replayed (ns)", "Replay error (%)", "Predicted (ns)", "Factor", "CPU (%)",
               "GPU compute (%)", "GPU comm (%)", "Launch (%)", "Kernel gaps (%)", "Step"};
  int64_t poor = 0, empty = 0;
  for (const WhatIfStep& s : r.steps) {
    if (s.replay_ns <= 0) {  // nothing in the window to re-time
      ++empty;
      continue;
    }
    const double err = s.measured_ns > 0 ? 100.0 * static_cast<double>(s.replay_ns - s.measured_ns) / s.measured_ns : 0;
    if (std::fabs(err) > 10) ++poor;
    const auto share = [&](PathCause c) {
      return Cell(s.predicted_path_ns > 0 ? 100.0 * static_cast<double>(s.predicted_by_cause[static_cast<size_t>(c)]) /
                                                static_cast<double>(s.predicted_path_ns)
                                          : 0.0);
    };
    t.AddRow({s.measured_ns, s.replay_ns, Cell(err), s.predicted_ns, Cell(s.Factor()), share(PathCause::kCpu),
              share(PathCause::kGpuCompute), share(PathCause::kGpuCommunication), share(PathCause::kLaunchOverhead),
              share(PathCause::kKernelGap), s.window});
  }
  t.notes.push_back("Replayed: the step's graph re-timed unchanged (host gaps kept, each kernel after its launch, "
                    "stream order, waits); Factor: predicted / replayed, the change's effect on the step; the shares "
                    "are the predicted critical path's, by cause");
  t.NoteCount(poor,
              "step(s) replay more than 10% away from their measured span: the graph misses dependencies "
              "there, and their prediction is not to be relied on");
  t.NoteCount(empty, "step(s) have no host op, runtime call or device work in their window: nothing to re-time, "
                     "left out");
  for (const std::string& n : r.notes) t.notes.push_back(n);
  return t;
}

}  // namespace tierscope
