// A whole job: one trace per rank, or several (one per profiler cycle), read in parallel
// within a memory budget (job_files.h), each reduced to what the job's reports need —
// where its device time went (gpu_time.h), its collectives (stragglers.h), its NVTX ranges
// and its findings — before its trace is let go; a rank's windows are then added up in
// time order. The job's reports put the ranks side by side and across each other.
#ifndef TIERSCOPE_ANALYSIS_JOB_H_
#define TIERSCOPE_ANALYSIS_JOB_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/gpu_time.h"
#include "analysis/job_files.h"
#include "analysis/job_path.h"
#include "analysis/nvtx.h"
#include "analysis/reports.h"
#include "analysis/rules.h"
#include "analysis/stragglers.h"
#include "analysis/table.h"
#include "analysis/whatif.h"
#include "tierscope/status.h"

namespace tierscope {

struct RankAnalysis {
  int rank = 0;
  std::string rank_from;  // "distributedInfo", "file name", "order"
  std::string source, format, device, backend;
  int32_t world_size = 0;
  int64_t events = 0, bytes = 0, malformed = 0;
  std::string unit_name;
  int64_t units = 0;
  GpuTime gpu;
  RankCollectives collectives;
  std::map<std::pair<std::string, std::string>, KernelTotals> ranges;  // (side, name) -> durations
  RangeKernelMap range_kernels;  // nvtx_kern_sum's
  std::vector<Finding> findings;  // those resting on a failed quality check withheld
  std::string quality;            // its trace_quality line
  std::string quality_failed;     // the failed checks' names ("" when none failed)
  int32_t trace_rank = -1;  // the trace's own distributedInfo.rank (-1: it does not say)
  // Where the trace lies in time: its events' first start and last end on its clock, and
  // the wall-clock time of that clock's 0 (Kineto's baseTimeNanoseconds; 0 if unknown).
  int64_t begin_ns = 0, end_ns = 0, base_time_ns = 0;
  // The files the rank was read from, in time order: one, or one per profiler cycle (set
  // when the job is assembled).
  std::vector<std::string> windows;
  // Its steps' dependency graphs, when a hook kept them (the job's critical path, what-if;
  // job_path.h), and what what-if's changes could not model on it.
  std::vector<RankStepGraph> step_graphs;
  ChangeNotes whatif_notes;
  // Its steady-state step's timeline, with AnalysisOptions::timeline (job_timeline.h).
  nlohmann::json timeline;
};

// What else to keep of a rank's trace before it is let go, from its index (the step graphs
// of the job's critical path or what-if): an error stops the job.
using RankHook = std::function<Status(const TraceIndex&, RankAnalysis&)>;

// One rank's trace reduced to what the job needs (a few kilobytes to megabytes: never the
// events): the work each worker does, here or on a Dask worker. With a hook, also what it
// keeps: step graphs take about 100 bytes per event (a what-if scenario, a set of edges
// more), held for the whole job.
RankAnalysis AnalyzeRank(const Trace& trace, const AnalysisOptions& options);
StatusOr<RankAnalysis> AnalyzeRank(const Trace& trace, const AnalysisOptions& options, const RankHook& hook);

// One rank's windows (their summaries, in time order) as one rank: events, durations and
// device time added (the time between windows was not profiled and counts for nothing),
// collectives one after another on the first window's clock, findings merged by rule
// (summed, with the evidence of the window where each explains the most). With
// `step_stride` > 0, window k's step numbers N become k * step_stride + N, so steps that
// repeat across windows stay distinct. Launch statistics' medians are the windows'
// medians weighted by their counts; everything else is exact.
RankAnalysis MergeRankWindows(std::vector<RankAnalysis> windows, int64_t step_stride);

struct JobAnalysis {
  std::vector<RankAnalysis> ranks;  // by rank
  LoadPlan plan;
  std::string rank_note;  // how ranks were numbered when the traces disagree ("" otherwise)
  std::vector<std::string> notes;  // the files skipped, the ranks read as several windows
  Stragglers stragglers;
  std::vector<Finding> findings;  // the job's: stragglers, then each rule over the ranks
  std::vector<Table> tables;      // ranks, the seven GPU-time tables, stragglers, NVTX
  // Wall seconds of each step: the ranks read and analysed, then the cross-rank steps
  // (in the JSON with --timings only: a timing is not a finding, and varies run to run).
  std::vector<std::pair<std::string, double>> seconds;
  nlohmann::json timeline;  // the ranks' step timelines on the aligned clock (job_timeline.h), or null
};

// The hook that keeps each rank's step graphs for the job's critical path, and the job's
// critical-path reports from them (job_path.h): paths, crossings, events.
RankHook CriticalPathHook();
std::vector<Table> JobCriticalPathTables(const JobAnalysis& job);
// Each rank's step graphs, by rank (for JobSteps).
std::vector<const std::vector<RankStepGraph>*> JobStepGraphs(const JobAnalysis& job);

// Called after each rank is read: (ranks done, ranks in all, its file, seconds so far).
using JobProgress = std::function<void(size_t, size_t, const std::string&, double)>;

// Analyses the traces `inputs` name (files or directories; job_files.h), `threads` at most
// at once (0: the hardware threads), within the memory available.
StatusOr<JobAnalysis> AnalyzeJob(const std::vector<std::string>& inputs, const AnalysisOptions& options,
                                 int threads, const JobProgress& progress, const RankHook& hook = nullptr);

// The job from its traces' summaries, `files[i]` the file `ranks[i]` came from: ranks
// numbered and a rank's windows merged (AssignRankWindows, MergeRankWindows), stragglers,
// the job's findings and every table; `notes` go with the ranks table.
StatusOr<JobAnalysis> JobFromRanks(std::vector<RankAnalysis> ranks, const std::vector<std::string>& files,
                                   LoadPlan plan, std::vector<std::string> notes = {});

// What `analyze DIR` reports: AnalyzeJob, with the job's critical-path reports when
// options.critical_path, and its timeline when options.timeline (InvalidArgument when no
// rank has options.step).
StatusOr<JobAnalysis> AnalyzeJobReports(const std::vector<std::string>& inputs, const AnalysisOptions& options,
                                        int threads, const JobProgress& progress);

std::string RenderJob(const JobAnalysis& job, const RenderOptions& render);

// Base against new, rank by rank and for the job: device time, overlap, kernel types,
// the kernels that changed most, and the stragglers.
std::string RenderJobDiff(const JobAnalysis& base, const JobAnalysis& next, const RenderOptions& render);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_JOB_H_
