// What-if: a step's dependency graph (critical_path_graph.h) re-timed as a simulation after
// a change — kernels faster or slower, launches cheaper (CUDA graphs), host syncs gone,
// communication overlapped, the host faster, K samples merged into one launch per op,
// fewer or more compute units, another precision — giving the predicted step time and the
// new critical path beside today's. The model of each change is in the README ("What-if").
#ifndef TIERSCOPE_ANALYSIS_WHATIF_H_
#define TIERSCOPE_ANALYSIS_WHATIF_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/critical_path.h"
#include "analysis/device_specs.h"
#include "analysis/job_path.h"
#include "analysis/reports.h"
#include "analysis/table.h"
#include "tierscope/status.h"

namespace tierscope {

struct WhatIfChange {
  enum class Kind {
    kKernels,      // SELECTOR=F: matching kernels' time x F
    kLaunch,       // launch=US: every launch's delay to its kernel US, and its host call at most US
    kSyncOff,      // sync=off: the host no longer waits for the device
    kCommOverlap,  // comm=overlap: communication kernels delay nothing
    kCpu,          // cpu=F: host operators' and runtime calls' own time x F
    kBatch,        // batch=K: K samples in one launch per op
    kUnits,        // units=N: the device's compute units (CPU threads, SMs) N
    kPrecision,    // precision=P: kernels of another dtype at the roofline's implied factor
  };
  Kind kind = Kind::kKernels;
  std::string selector;  // kKernels: category or name substring (case-insensitive); kPrecision: the dtype
  double value = 1;
  std::string text;  // as given
};

// "gemm=0.5", "kernel:sgemm=0.5", "launch=2", "sync=off", "comm=overlap", "cpu=0.8",
// "batch=16", "units=1", "precision=bf16"; a clear error naming what is wrong otherwise.
StatusOr<WhatIfChange> ParseWhatIfChange(const std::string& text);

struct WhatIfOptions {
  std::vector<WhatIfChange> changes;
  std::optional<DeviceSpec> device_spec;  // peaks for batch and precision; default: the trace's device
};

struct WhatIfStep {
  std::string window;
  int64_t measured_ns = 0;   // the step's span as recorded
  int64_t replay_ns = 0;     // the graph re-timed unchanged: how well the graph explains the step
  int64_t predicted_ns = 0;  // re-timed with the changes
  std::array<int64_t, kPathCauses> today_by_cause{}, predicted_by_cause{};
  int64_t today_path_ns = 0, predicted_path_ns = 0;  // the re-timed critical paths' lengths
  // Predicted / replay: the change's factor on the step, applied to what was measured.
  double Factor() const { return replay_ns > 0 ? static_cast<double>(predicted_ns) / replay_ns : 0; }
};

struct WhatIfResult {
  std::vector<WhatIfStep> steps;
  std::vector<std::string> notes;  // what a change could not model, counted
  int64_t cyclic = 0, out_of_range = 0;  // steps left out: a cycle in the graph, a time past 2^62 ns
};

// An error (naming `what`, the trace or job) when no step of `result` had anything to re-time.
Status CheckSomethingRetimed(const WhatIfResult& result, const std::string& what);
// Refuses a trace with nothing to re-time (CheckSomethingRetimed).
StatusOr<WhatIfResult> WhatIf(const TraceIndex& index, const WhatIfOptions& options);
// The same for several sets of changes at once, each re-timing the same graphs (built, and
// replayed unchanged, once per step): one result per set, in order.
StatusOr<std::vector<WhatIfResult>> WhatIfEach(const TraceIndex& index,
                                                const std::vector<std::vector<WhatIfChange>>& scenarios,
                                                const std::optional<DeviceSpec>& device_spec);

// What a set of changes could not model on a trace, counted.
struct ChangeNotes {
  int64_t no_grid = 0;   // kernels without a grid: batch scales their time with the work, units leaves it
  int64_t no_dtype = 0;  // kernels whose dtype or work is unknown: precision leaves them
  std::vector<std::string> unmatched;  // kernel selectors that matched no kernel
  bool no_spec = false;  // no peaks for the device
  int64_t inferred_waits = 0;  // blocking calls without a recorded sync, taken to wait for a device event
  bool device_only = false;    // no launch in the trace (PathContext::device_only)
  int64_t stream_waits = 0;    // device events taken to wait for another stream's work (no recorded sync)
  // Another trace's (a window or rank of one job): counts added, a selector unmatched only
  // where it matched nothing in either.
  void Merge(const ChangeNotes& other);
};
// The notes in words, for the changes they were counted under (`job`: over a job's ranks).
std::vector<std::string> ChangeNoteLines(const ChangeNotes& notes, const std::vector<WhatIfChange>& changes,
                                         bool job);

// The pieces of WhatIfEach, for a job (cli/whatif_command.cc): each step's graph of a
// rank's trace with one edge set per timing — [0] the unchanged replay, then one per
// scenario — and its collectives' nodes when `collectives` is given; `notes`: what each
// scenario's changes could not model.
StatusOr<std::vector<RankStepGraph>> WhatIfStepGraphs(const TraceIndex& index, const RankCollectives* collectives,
                                                      const std::vector<std::vector<WhatIfChange>>& scenarios,
                                                      const std::optional<DeviceSpec>& device_spec,
                                                      std::vector<ChangeNotes>* notes);

// Steps (one graph per rank, from WhatIfStepGraphs; JobSteps) joined (JoinStep, every
// party's start before the arrival) and simulated one at a time: the replay and each of
// `scenarios` scenarios; a step whose graphs lack a scenario's edges is left out of it.
class StepSimulator {
 public:
  explicit StepSimulator(size_t scenarios);
  void Add(const std::vector<const RankStepGraph*>& step, const std::vector<int64_t>& offsets,
           const std::vector<JoinedCalls>& joined);
  std::vector<WhatIfResult> Finish();  // once

 private:
  std::vector<int64_t> cyclic_, out_of_range_;
  std::vector<WhatIfResult> results_;
};

// One row per step: measured, replayed, predicted, the factor, and the predicted path's causes.
Table WhatIfTable(const WhatIfResult& result, const WhatIfOptions& options);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_WHATIF_H_
