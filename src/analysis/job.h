// A whole job: one trace per rank, read in parallel within a memory budget (job_files.h),
// each rank reduced to what the job's reports need — where its device time went
// (gpu_time.h), its collectives (stragglers.h), its NVTX ranges and its findings — before
// its trace is let go. The job's reports put the ranks side by side and across each other.
#ifndef TIERSCOPE_ANALYSIS_JOB_H_
#define TIERSCOPE_ANALYSIS_JOB_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "analysis/gpu_time.h"
#include "analysis/job_files.h"
#include "analysis/nvtx.h"
#include "analysis/reports.h"
#include "analysis/rules.h"
#include "analysis/stragglers.h"
#include "analysis/table.h"
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
  std::map<std::tuple<std::string, std::string, std::string>, RangeKernels> range_kernels;  // nvtx_kern_sum's
  std::vector<Finding> findings;
  int32_t trace_rank = -1;  // the trace's own distributedInfo.rank (-1: it does not say)
};

// One rank's trace reduced to what the job needs (a few kilobytes to megabytes: never the
// events): the work each worker does, here or on a Dask worker.
RankAnalysis AnalyzeRank(const Trace& trace, const AnalysisOptions& options);

struct JobAnalysis {
  std::vector<RankAnalysis> ranks;  // by rank
  LoadPlan plan;
  std::string rank_note;  // how ranks were numbered when the traces disagree ("" otherwise)
  Stragglers stragglers;
  std::vector<Finding> findings;  // the job's: stragglers, then each rule over the ranks
  std::vector<Table> tables;      // ranks, the seven GPU-time tables, stragglers, NVTX
};

// Called after each rank is read: (ranks done, ranks in all, its file, seconds so far).
using JobProgress = std::function<void(size_t, size_t, const std::string&, double)>;

// Analyses the traces `inputs` name (files or directories; job_files.h), `threads` at most
// at once (0: the hardware threads), within the memory available.
StatusOr<JobAnalysis> AnalyzeJob(const std::vector<std::string>& inputs, const AnalysisOptions& options,
                                 int threads, const JobProgress& progress);

// The job from its ranks' summaries, `files[i]` the file `ranks[i]` came from: ranks
// numbered (AssignRanks), stragglers, the job's findings and every table.
StatusOr<JobAnalysis> JobFromRanks(std::vector<RankAnalysis> ranks, const std::vector<std::string>& files,
                                   LoadPlan plan);

std::string RenderJob(const JobAnalysis& job, const RenderOptions& render);

// Base against new, rank by rank and for the job: device time, overlap, kernel types,
// the kernels that changed most, and the stragglers.
std::string RenderJobDiff(const JobAnalysis& base, const JobAnalysis& next, const RenderOptions& render);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_JOB_H_
