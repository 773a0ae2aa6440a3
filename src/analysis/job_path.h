// A job's steps as one dependency graph: each rank's step graph (critical_path_graph.h),
// kept after its trace is let go, joined across ranks through the calls that join them — a
// collective ends on every rank only after the last rank has reached it, a recv only after
// its send began — on the clocks the straggler report aligned (stragglers.h). The critical
// path then runs through the ranks, crossing where a late rank held a collective up, and
// what-if re-times the whole job (whatif.h).
#ifndef TIERSCOPE_ANALYSIS_JOB_PATH_H_
#define TIERSCOPE_ANALYSIS_JOB_PATH_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analysis/critical_path.h"
#include "analysis/critical_path_graph.h"
#include "analysis/stragglers.h"
#include "analysis/table.h"

namespace tierscope {

struct TimedEdge {
  uint32_t from, to;
  double weight;
  PathCause cause;
  int32_t label;  // the event its time is attributed to, as an index into the step's labels; -1: none
};

// One step of one rank, as a job's graph needs it: the graph's node times and one or more
// sets of edges (the critical path's weights; what-if's replay and each scenario's).
struct RankStepGraph {
  std::string window;
  int64_t iteration = 0;   // ProfilerStep#N's N (when `numbered`), else the step's place in the rank's trace
  bool numbered = false;
  std::vector<int64_t> node_ts;               // on the rank's clock (its first window's)
  std::vector<std::vector<TimedEdge>> sets;   // edges, per timing
  std::vector<double> release_scale;          // per set: how a thread's first event moves (what-if's batch)
  std::vector<std::string> labels;            // event names
  // The rank's collectives and sends / recvs in this step: (is p2p, index into
  // RankCollectives::calls or ::p2p) -> (start node, end node).
  std::map<std::pair<bool, size_t>, std::pair<uint32_t, uint32_t>> calls;
  int64_t negative_edges = 0, graph_kernels = 0, cyclic_nodes = 0;
};

// The step's ProfilerStep#N number, or `ordinal` when its name is another.
void NumberStep(const std::string& name, int64_t ordinal, RankStepGraph* g);
// A step graph's window, number and node times from the step's graph, no edges yet.
RankStepGraph StepGraphOf(const WorkUnit& window, int64_t ordinal, const PathGraph& g);
// The nodes of a rank's collectives and sends / recvs found in the step's graph.
void MapCalls(const PathGraph& g, const RankCollectives& collectives, RankStepGraph* out);
// Each step of a trace (PathWindows) with the critical path's weights (one set): what a
// job's critical path keeps of each rank.
std::vector<RankStepGraph> RankPathGraphs(const TraceIndex& index, const RankCollectives& collectives);

// A rank's step graphs over its windows (in time order): each window's node times moved by
// its clock's shift, its step numbers as the collectives' are (k * stride + N), its calls'
// indices past the windows' before it.
void AppendWindowGraphs(std::vector<RankStepGraph> window, int64_t shift, int64_t step_number_add,
                        size_t calls_before, size_t p2p_before, std::vector<RankStepGraph>* into);

// One step of a job, joined.
struct JointGraph {
  std::vector<int64_t> node_ts;   // on the aligned clock
  std::vector<int32_t> node_rank; // index into the job's ranks; -1: a join's arrival
  std::vector<TimedEdge> edges;   // labels index `labels`
  std::vector<std::pair<int32_t, const std::string*>> labels;  // (rank index, name)
  struct Arrival {
    uint32_t node;
    const JoinedCalls* call;
    int64_t late_ns;  // the last party's arrival after the one before it
    int32_t last;     // the last party's rank index
  };
  std::vector<Arrival> arrivals;
  int64_t negative = 0, graph_kernels = 0, cyclic_nodes = 0;
  int64_t unjoined = 0;  // calls of the step that could not be joined (no span of their own on two ranks)
  int ranks = 0;  // ranks with this step
};

// Each node's release at its recorded time on the aligned clock, from the graph's first,
// times `scale` (what-if's batch): where a node with no dependency starts.
std::vector<double> Releases(const JointGraph& g, double scale);

// The job's steps: the ranks' step graphs grouped by step (numbered steps by N, others by
// place), in step order; per step, one pointer per rank (nullptr: that rank lacks it).
std::vector<std::vector<const RankStepGraph*>> JobSteps(const std::vector<const std::vector<RankStepGraph>*>& ranks);

// The step's graphs with edge set `set`, on the clocks `offsets` align (subtracted from each
// rank's times), joined through `joined`: the parties' starts -> one arrival node -> each
// party's end, weighed its end after the last arrival (scaled as the set scales the call's
// own span), in place of its span. `last_only`: only the last party's start leads to the
// arrival (what happened: the critical path); else every party's (what-if, where another
// party may become the last). A party that ended before the last arrival did not wait for
// it (a broadcast's root, an eager send) and keeps its span; a call whose end its start does
// not reach directly on two ranks (a host call with calls inside) is not joined.
JointGraph JoinStep(const std::vector<const RankStepGraph*>& step, const std::vector<int64_t>& offsets,
                    const std::vector<JoinedCalls>& joined, size_t set, bool last_only);

// Each rank's offset from the aligned clock (Stragglers::ranks; 0 for a rank not aligned).
std::vector<int64_t> ClockOffsets(const Stragglers& stragglers, size_t ranks);

// A job step's critical path.
struct JobCriticalPath {
  std::string window;
  int64_t span_ns = 0, length_ns = 0;
  std::array<int64_t, kPathCauses> by_cause{};
  int ranks = 0;           // ranks with the step
  std::vector<int> on_path;  // job rank numbers the path runs on, in its order (repeats merged)
  struct Crossing {
    std::string call;
    bool p2p = false;
    int from_rank = 0, to_rank = 0;  // job rank numbers: the last to arrive, and where the path goes on
    int64_t late_ns = 0;
  };
  std::vector<Crossing> crossings;
  struct OnPath {
    int rank;
    const std::string* name;
    PathCause cause;
    int64_t ns;
  };
  std::vector<OnPath> events;  // by time on the path, largest first
  int64_t nodes = 0, edges = 0, negative_edges = 0, cyclic_nodes = 0, graph_kernels = 0, joins = 0;
  int64_t unjoined = 0;  // matched calls in the step that could not be joined
};

// `graphs`: each rank's step graphs (RankPathGraphs, windows appended); `rank_numbers`:
// the job's numbers of those ranks.
std::vector<JobCriticalPath> JobCriticalPaths(const std::vector<const std::vector<RankStepGraph>*>& graphs,
                                              const std::vector<int>& rank_numbers, const Stragglers& stragglers);

Table JobCriticalPathTable(const std::vector<JobCriticalPath>& paths, const Stragglers& stragglers);
// Where the longest step's path goes from one rank to another.
Table JobCriticalPathCrossingsTable(const std::vector<JobCriticalPath>& paths);
Table JobCriticalPathEventsTable(const std::vector<JobCriticalPath>& paths, size_t top = 30);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_JOB_PATH_H_
