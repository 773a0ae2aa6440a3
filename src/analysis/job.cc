// AnalyzeJob: every trace read and reduced in parallel, a rank's windows added up, then the
// job's tables and findings.
#include "analysis/job.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>

#include "analysis/job_timeline.h"
#include "analysis/rank_table_summary.h"
#include "analysis/straggler_arrivals.h"
#include "analysis/trace_quality.h"
#include "core/clock.h"
#include "core/cpu_info.h"
#include "core/thread_pool.h"
#include "trace/kineto_stream.h"
#include "trace/json_input.h"

namespace tierscope {

RankAnalysis AnalyzeRank(const Trace& t, const AnalysisOptions& o) {
  StatusOr<RankAnalysis> r = AnalyzeRank(t, o, nullptr);
  return std::move(*r);  // without a hook, never an error
}

StatusOr<RankAnalysis> AnalyzeRank(const Trace& t, const AnalysisOptions& o, const RankHook& hook) {
  RankAnalysis r;
  r.trace_rank = t.rank;
  r.source = t.source;
  r.format = t.format;
  r.device = t.device_name;
  r.backend = t.collective_backend;
  r.world_size = t.world_size;
  r.events = static_cast<int64_t>(t.events.size());
  r.bytes = t.stats.bytes;
  r.malformed = t.stats.malformed;
  r.base_time_ns = t.base_time_ns;
  if (!t.events.empty()) {  // the trace's span, on its own clock (base_time_ns apart)
    const TraceWindow w = WindowOf(t);
    r.begin_ns = w.begin_ns - t.base_time_ns;
    r.end_ns = w.end_ns - t.base_time_ns;
  }
  // A spilled trace's strings read by one step leave memory before the next (a no-op
  // for one held in memory): the peak is the largest step's, not their sum.
  const auto release = [&t] { t.strings.ReleaseSpilled(); };
  const TraceIndex x = BuildIndex(t, o);
  r.unit_name = x.unit_name;
  r.units = static_cast<int64_t>(x.units.size());
  r.gpu = AnalyzeGpuTime(x);
  r.collectives = FindCollectives(x);
  release();
  for (size_t i : x.annotations) r.ranges[{"host", std::string(x.Name(i))}].Add(x.E(i).dur_ns);
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (t.events[i].kind == EventKind::kGpuAnnotation) r.ranges[{"device", std::string(x.Name(i))}].Add(t.events[i].dur_ns);
  }
  r.range_kernels = NvtxKernTotals(x);
  r.findings = Diagnose(x, o);
  release();
  // Each rank's verdict, as a single trace's: no finding from what failed a check.
  const TraceQuality quality = CheckTraceQuality(x);
  release();
  WithholdFindings(quality, &r.findings);
  r.quality = quality.Line();
  r.quality_failed = FailedChecks(quality);
  if (o.timeline) {
    r.timeline = RankTimeline(x, o);
    release();
  }
  if (hook) TS_RETURN_IF_ERROR(hook(x, r));
  return r;
}

namespace {

// Two sets of values' summary from theirs: exact (the sample variance pooled) but for the
// median, the two medians weighted by their counts.
Summary MergeSummary(const Summary& a, const Summary& b) {
  if (a.count == 0) return b;
  if (b.count == 0) return a;
  Summary s;
  s.count = a.count + b.count;
  s.total = a.total + b.total;
  const double na = static_cast<double>(a.count), nb = static_cast<double>(b.count), n = na + nb;
  s.mean = s.total / n;
  s.min = std::min(a.min, b.min);
  s.max = std::max(a.max, b.max);
  s.median = (a.median * na + b.median * nb) / n;
  const double squares = a.stddev * a.stddev * (na - 1) + b.stddev * b.stddev * (nb - 1) +
                         na * (a.mean - s.mean) * (a.mean - s.mean) + nb * (b.mean - s.mean) * (b.mean - s.mean);
  s.stddev = std::sqrt(std::max(0.0, squares / (n - 1)));
  return s;
}

// The entry of `all` for `one`'s device and stream (end() when it has none).
template <typename PerStream>
typename std::vector<PerStream>::iterator FindStream(std::vector<PerStream>& all, const PerStream& one) {
  return std::find_if(all.begin(), all.end(),
                      [&](const PerStream& x) { return x.device == one.device && x.stream == one.stream; });
}

void MergeGpuTime(GpuTime& g, const GpuTime& w) {
  g.has_device_events = g.has_device_events || w.has_device_events;
  g.temporal.span_ns += w.temporal.span_ns;
  g.temporal.busy_ns += w.temporal.busy_ns;
  g.temporal.compute_ns += w.temporal.compute_ns;
  for (size_t m = 0; m < g.by_mask.size(); ++m) g.by_mask[m] += w.by_mask[m];
  g.communication_ns += w.communication_ns;
  g.overlap_ns += w.overlap_ns;
  for (const auto& [name, k] : w.kernels) g.kernels[name].Merge(k);
  for (const StreamIdle& s : w.idle) {
    auto it = FindStream(g.idle, s);
    if (it == g.idle.end()) {
      g.idle.push_back(s);
      continue;
    }
    it->events += s.events;
    it->host_wait_ns += s.host_wait_ns;
    it->kernel_wait_ns += s.kernel_wait_ns;
    it->other_ns += s.other_ns;
  }
  LaunchStats& l = g.launch;
  l.launches += w.launch.launches;
  l.cpu_ns = MergeSummary(l.cpu_ns, w.launch.cpu_ns);
  l.gpu_ns = MergeSummary(l.gpu_ns, w.launch.gpu_ns);
  l.delay_ns = MergeSummary(l.delay_ns, w.launch.delay_ns);
  l.shorter_than_launch += w.launch.shorter_than_launch;
  l.long_delay += w.launch.long_delay;
  for (const StreamQueue& q : w.queues) {
    auto it = FindStream(g.queues, q);
    if (it == g.queues.end()) {
      g.queues.push_back(q);
      continue;
    }
    const double total = static_cast<double>(it->launches + q.launches);
    if (total > 0) {  // the windows' means, weighted by their launches
      it->mean_depth = (it->mean_depth * static_cast<double>(it->launches) +
                        q.mean_depth * static_cast<double>(q.launches)) / total;
    }
    it->launches += q.launches;
    it->max_depth = std::max(it->max_depth, q.max_depth);
  }
}

// Each rule once: the time it explains summed over the windows, the words and evidence of
// the window where it explains the most.
std::vector<Finding> MergeFindings(const std::vector<RankAnalysis>& windows) {
  std::map<std::string, std::vector<std::pair<size_t, const Finding*>>> by_rule;
  for (size_t k = 0; k < windows.size(); ++k) {
    for (const Finding& f : windows[k].findings) by_rule[f.rule].push_back({k, &f});
  }
  std::vector<Finding> out;
  const std::string n = std::to_string(windows.size());
  for (const auto& [rule, hits] : by_rule) {
    const auto worst = std::max_element(hits.begin(), hits.end(), [](const auto& a, const auto& b) {
      return a.second->explained_ns < b.second->explained_ns;
    });
    Finding f = *worst->second;
    f.explained_ns = 0;
    for (const auto& [k, hit] : hits) f.explained_ns += hit->explained_ns;
    if (hits.size() < windows.size()) f.title += " (in " + std::to_string(hits.size()) + " of " + n + " windows)";
    for (std::string& e : f.evidence) e = "window " + std::to_string(worst->first + 1) + " of " + n + ": " + e;
    out.push_back(std::move(f));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Finding& a, const Finding& b) { return a.explained_ns > b.explained_ns; });
  return out;
}

}  // namespace

RankAnalysis MergeRankWindows(std::vector<RankAnalysis> windows, int64_t step_stride) {
  if (windows.empty()) return {};
  std::vector<Finding> findings = MergeFindings(windows);
  RankAnalysis r = std::move(windows.front());
  r.findings = std::move(findings);
  for (size_t k = 1; k < windows.size(); ++k) {
    RankAnalysis& w = windows[k];
    if (r.device.empty()) r.device = w.device;
    if (r.backend.empty()) r.backend = w.backend;
    if (r.unit_name.empty()) r.unit_name = w.unit_name;
    r.world_size = std::max(r.world_size, w.world_size);
    r.events += w.events;
    r.bytes += w.bytes;
    r.malformed += w.malformed;
    r.units += w.units;
    MergeGpuTime(r.gpu, w.gpu);
    // One clock: the first window's (the windows of one process share it; Kineto's base
    // time can differ between them).
    const int64_t shift = w.base_time_ns - r.base_time_ns;
    r.end_ns = std::max(r.end_ns, w.end_ns + shift);
    r.collectives.device = r.collectives.device || w.collectives.device;
    r.collectives.point_to_point += w.collectives.point_to_point;
    AppendWindowGraphs(std::move(w.step_graphs), shift, static_cast<int64_t>(k) * step_stride,
                       r.collectives.calls.size(), r.collectives.p2p.size(), &r.step_graphs);
    r.whatif_notes.Merge(w.whatif_notes);
    KeepBusierTimeline(r, w, shift);
    for (auto [from, into] : {std::pair{&w.collectives.calls, &r.collectives.calls},
                              std::pair{&w.collectives.p2p, &r.collectives.p2p}}) {
      for (CollectiveCall& c : *from) {
        if (step_stride > 0 && c.iteration >= 0) c.iteration += static_cast<int64_t>(k) * step_stride;
        c.issue_ns += shift;
        c.arrive_ns += shift;
        c.end_ns += shift;
        into->push_back(std::move(c));
      }
    }
    for (const auto& [key, k_totals] : w.ranges) r.ranges[key].Merge(k_totals);
    w.range_kernels.ForEach([&](std::string_view range, std::string_view side, std::string_view kernel,
                                const RangeKernels& rk) {
      RangeKernels& into = r.range_kernels.At(range, side, kernel);
      into.kernels.Merge(rk.kernels);
      into.range_instances += rk.range_instances;
    });
  }
  r.range_kernels.Compact();  // kept for the whole job
  return r;
}

namespace {

// "0-3, 5, 7-8".
std::string RankList(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + std::to_string(ranks[i]) + (j > i ? "-" + std::to_string(ranks[j]) : "");
    i = j + 1;
  }
  return out;
}

Table RanksTable(const JobAnalysis& job) {
  Table t;
  t.name = "ranks";
  t.title = "Ranks: one trace each, or one per profiler cycle (windows)";
  t.columns = {"Rank",      "Events",  "Work units", "Device events", "Findings", "Malformed",
               "Rank from", "Windows", "Quality",    "Device",        "File"};
  for (const RankAnalysis& r : job.ranks) {
    int64_t device_events = 0;
    for (const auto& [name, k] : r.gpu.kernels) device_events += k.count;
    const int64_t windows = std::max<int64_t>(1, static_cast<int64_t>(r.windows.size()));
    t.AddRow({int64_t{r.rank}, r.events, r.units, device_events, static_cast<int64_t>(r.findings.size()), r.malformed,
              r.rank_from, windows, r.quality_failed.empty() ? std::string("pass") : "FAILED: " + r.quality_failed,
              r.device.empty() ? std::string("-") : r.device,
              windows > 1 ? r.source + " (+" + std::to_string(windows - 1) + ")" : r.source});
  }
  for (const RankAnalysis& r : job.ranks) {
    if (!r.quality_failed.empty()) t.notes.push_back("rank " + std::to_string(r.rank) + ": " + r.quality);
  }
  if (!job.rank_note.empty()) t.notes.push_back(job.rank_note + ".");
  for (const std::string& n : job.notes) t.notes.push_back(n + ".");
  return t;
}

Table JobNvtxTable(const JobAnalysis& job) {
  std::map<std::pair<std::string, std::string>, std::pair<KernelTotals, int64_t>> all;  // -> (durations, ranks)
  for (const RankAnalysis& r : job.ranks) {
    for (const auto& [key, k] : r.ranges) {
      auto& cell = all[key];
      cell.first.Merge(k);
      ++cell.second;
    }
  }
  std::vector<std::pair<int64_t, const std::pair<std::string, std::string>*>> order;
  for (const auto& [key, cell] : all) order.push_back({cell.first.total_ns, &key});
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  Table t;
  t.name = "nvtx_sum";
  t.title = "NVTX and annotation ranges over every rank (host: NVTX_EVENTS, user_annotation; device: "
            "gpu_user_annotation)";
  t.columns = {"Total Time (ns)", "Instances", "Avg (ns)", "Min (ns)", "Max (ns)", "StdDev (ns)", "Ranks", "Side",
               "Range"};
  for (size_t i = 0; i < order.size() && i < 40; ++i) {
    const auto& [k, ranks] = all.at(*order[i].second);
    t.AddRow({k.total_ns, k.count, k.mean(), k.min_ns, k.max_ns, k.stddev(), ranks, order[i].second->first,
              order[i].second->second});
  }
  if (order.size() > 40) t.notes.push_back(std::to_string(order.size() - 40) + " more ranges (stats --report nvtx_sum on one rank lists them all)");
  return t;
}

// nvtx_kern_sum over every rank: each (range, side, kernel) with its kernels' durations
// merged and the ranges that launched them counted.
Table JobNvtxKernTable(const JobAnalysis& job) {
  // Merged by interned names (a job of big ranks has 10^5-10^6 triples; a map keyed by
  // three strings was a large part of the job's end).
  RangeKernelMap all;
  std::vector<int64_t> ranks;  // per entry of `all`: the ranks that have it
  for (const RankAnalysis& r : job.ranks) {
    r.range_kernels.ForEach([&](std::string_view range, std::string_view side, std::string_view kernel,
                                const RangeKernels& rk) {
      const size_t i = all.IndexOf(range, side, kernel);
      if (i == ranks.size()) ranks.push_back(0);
      RangeKernels& cell = all.at(i);
      cell.kernels.Merge(rk.kernels);
      cell.range_instances += rk.range_instances;
      ++ranks[i];
    });
  }
  // By total time, then by names: the rows and their order do not depend on rank order.
  std::vector<size_t> order(ranks.size());
  std::iota(order.begin(), order.end(), size_t{0});
  const auto before = [&](size_t a, size_t b) {
    const int64_t ta = all.at(a).kernels.total_ns, tb = all.at(b).kernels.total_ns;
    if (ta != tb) return ta > tb;
    return all.NamesAt(a) < all.NamesAt(b);
  };
  constexpr size_t kRows = 40;
  const size_t shown = std::min(kRows, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(shown), order.end(), before);
  Table t;
  t.name = "nvtx_kern_sum";
  t.title = "Kernels projected onto the NVTX / annotation ranges that launched them, over every rank";
  t.columns = {"Range", "Side", "Range Inst", "Kern Inst", "Total Time (ns)", "Avg (ns)", "Min (ns)", "Max (ns)",
               "StdDev (ns)", "Ranks", "Kernel Name"};
  for (size_t i = 0; i < shown; ++i) {
    const auto [range, side, kernel] = all.NamesAt(order[i]);
    const RangeKernels& rk = all.at(order[i]);
    const KernelTotals& k = rk.kernels;
    t.AddRow({std::string(range), std::string(side), rk.range_instances, k.count, k.total_ns, k.mean(), k.min_ns,
              k.max_ns, k.stddev(), ranks[order[i]], std::string(kernel)});
  }
  if (order.size() > kRows) {
    t.notes.push_back(std::to_string(order.size() - kRows) +
                      " more (range, kernel) pairs (stats --report nvtx_kern_sum on one rank lists them all)");
  }
  return t;
}

// One finding per rule that fired on some rank: the rank where it explains the most time
// speaks for the others.
std::vector<Finding> RuleFindings(const JobAnalysis& job) {
  std::map<std::string, std::vector<std::pair<int, const Finding*>>> by_rule;
  for (const RankAnalysis& r : job.ranks) {
    for (const Finding& f : r.findings) by_rule[f.rule].push_back({r.rank, &f});
  }
  std::vector<Finding> out;
  for (const auto& [rule, hits] : by_rule) {
    const auto worst = std::max_element(hits.begin(), hits.end(), [](const auto& a, const auto& b) {
      return a.second->explained_ns < b.second->explained_ns;
    });
    std::vector<int> ranks;
    for (const auto& [rank, f] : hits) ranks.push_back(rank);
    Finding f = *worst->second;
    f.title += " (" + std::to_string(hits.size()) + " of " + std::to_string(job.ranks.size()) + " ranks: " +
               RankList(ranks) + ")";
    for (std::string& e : f.evidence) e = "rank " + std::to_string(worst->first) + ": " + e;
    out.push_back(std::move(f));
  }
  std::sort(out.begin(), out.end(), [](const Finding& a, const Finding& b) { return a.explained_ns > b.explained_ns; });
  return out;
}

std::vector<RankGpuTime> GpuTimes(const JobAnalysis& job) {
  std::vector<RankGpuTime> v;
  for (const RankAnalysis& r : job.ranks) v.push_back({r.rank, &r.gpu});
  return v;
}

}  // namespace

StatusOr<JobAnalysis> AnalyzeJob(const std::vector<std::string>& inputs, const AnalysisOptions& options,
                                 int threads, const JobProgress& progress, const RankHook& hook) {
  TS_ASSIGN_OR_RETURN(JobFileList list, FindJobFiles(inputs));
  const std::vector<std::string>& files = list.files;
  std::vector<int64_t> bytes;
  for (const std::string& f : files) bytes.push_back(std::max<int64_t>(0, EstimatedInputBytes(f)));
  const LoadPlan plan =
      PlanLoad(bytes, threads > 0 ? threads : ThreadPool::HardwareThreads(), MemoryBudget(), SpillsStrings());
  std::vector<RankAnalysis> ranks(files.size());
  // The traces share the page's events, no fewer than 100 each (the page then holds more,
  // past 600 traces).
  AnalysisOptions per_rank = options;
  per_rank.timeline_events = std::max<size_t>(100, options.timeline_events / std::max<size_t>(1, files.size()));
  const int64_t t0 = MonotonicNs();
  TS_RETURN_IF_ERROR(ForEachRankTrace(
      files, plan,
      [&](size_t i, Trace& t) {
        StatusOr<RankAnalysis> r = AnalyzeRank(t, per_rank, hook);
        if (!r.ok()) return r.status().WithContext(files[i]);
        ranks[i] = std::move(*r);
        return OkStatus();
      },
      [&](size_t done, size_t total, const std::string& path) {
        if (progress) progress(done, total, path, static_cast<double>(MonotonicNs() - t0) / 1e9);
      }));
  const double read_s = static_cast<double>(MonotonicNs() - t0) / 1e9;
  // As CheckUnitFound for one trace: a --unit no rank has would read every rank whole.
  if (!options.unit.empty() &&
      std::all_of(ranks.begin(), ranks.end(), [](const RankAnalysis& r) { return r.units == 0; })) {
    return InvalidArgument("--unit '" + options.unit + "': no annotation of that name in any of the job's " +
                           std::to_string(ranks.size()) + " traces");
  }
  StatusOr<JobAnalysis> job = JobFromRanks(std::move(ranks), files, plan, SkippedNotes(list.skipped));
  if (job.ok()) job->seconds.insert(job->seconds.begin(), {"ranks read and analysed", read_s});
  return job;
}

namespace {

// How the ranks read as several windows were read, for the ranks table: "" when none was.
std::string WindowsNote(const std::vector<RankAnalysis>& ranks, int64_t step_stride) {
  std::map<size_t, std::vector<int>> by_count;
  for (const RankAnalysis& r : ranks) {
    if (r.windows.size() > 1) by_count[r.windows.size()].push_back(r.rank);
  }
  if (by_count.empty()) return "";
  std::string note = "Several traces of one rank are its windows (one per profiler cycle), read in time order:";
  for (const auto& [count, list] : by_count) {
    note += std::string(note.back() == ':' ? " " : "; ") + (list.size() == 1 ? "rank " : "ranks ") + RankList(list) +
            ": " + std::to_string(count) + " windows" + (list.size() > 1 ? " each" : "");
  }
  note += ". Each window is analysed on its own and the figures added: the time between windows was not profiled "
          "and counts for nothing";
  if (step_stride > 0) {
    note += "; step numbers repeat across windows, so window k's ProfilerStep#N is iteration k x " +
            std::to_string(step_stride) + " + N in the straggler tables";
  }
  return note;
}

// 0 when no rank's windows repeat a step number; else a power of ten above every step
// number in the job, so that k * stride + N keeps window k's steps apart on every rank.
int64_t StepStride(const std::vector<RankAnalysis>& ranks, const RankAssignment& a) {
  bool repeat = false;
  int64_t top = 0;
  for (const RankAnalysis& r : ranks) {
    for (const CollectiveCall& c : r.collectives.calls) top = std::max(top, c.iteration);
  }
  for (const std::vector<size_t>& group : a.windows) {
    std::set<int64_t> earlier;
    for (size_t i : group) {
      std::set<int64_t> mine;
      for (const CollectiveCall& c : ranks[i].collectives.calls) {
        if (c.iteration >= 0) mine.insert(c.iteration);
      }
      for (int64_t n : mine) repeat = repeat || !earlier.insert(n).second;
    }
  }
  if (!repeat) return 0;
  int64_t stride = 10;
  while (stride <= top && stride < (int64_t{1} << 40)) stride *= 10;
  return stride;
}

}  // namespace

StatusOr<JobAnalysis> JobFromRanks(std::vector<RankAnalysis> ranks, const std::vector<std::string>& files,
                                   LoadPlan plan, std::vector<std::string> notes) {
  if (ranks.size() != files.size() || ranks.empty()) {
    return InvalidArgument("a job needs one summary per file (" + std::to_string(ranks.size()) + " summaries, " +
                           std::to_string(files.size()) + " files)");
  }
  JobAnalysis job;
  job.plan = std::move(plan);
  int64_t t = MonotonicNs();
  const auto lap = [&](const char* step) {  // the cross-rank steps' times, for bench/job
    const int64_t now = MonotonicNs();
    job.seconds.emplace_back(step, static_cast<double>(now - t) / 1e9);
    t = now;
  };
  std::vector<TraceWindow> windows;
  for (const RankAnalysis& r : ranks) {
    windows.push_back({r.trace_rank, r.base_time_ns + r.begin_ns, r.base_time_ns + r.end_ns});
  }
  TS_ASSIGN_OR_RETURN(RankAssignment a, AssignRankWindows(files, windows));
  const int64_t stride = StepStride(ranks, a);
  for (const std::vector<size_t>& group : a.windows) {
    std::vector<RankAnalysis> parts;
    std::vector<std::string> paths;
    for (size_t i : group) {
      parts.push_back(std::move(ranks[i]));
      paths.push_back(files[i]);
    }
    RankAnalysis r = parts.size() == 1 ? std::move(parts.front()) : MergeRankWindows(std::move(parts), stride);
    r.rank = a.rank[group.front()];
    r.rank_from = a.from[group.front()];
    r.windows = std::move(paths);
    job.ranks.push_back(std::move(r));
  }
  job.rank_note = a.note;
  job.notes = std::move(notes);
  if (std::string w = WindowsNote(job.ranks, stride); !w.empty()) job.notes.push_back(std::move(w));
  std::vector<RankCollectivesOf> collectives;
  for (const RankAnalysis& r : job.ranks) collectives.push_back({r.rank, &r.collectives});
  int world_size = 0;
  for (const RankAnalysis& r : job.ranks) world_size = std::max(world_size, static_cast<int>(r.world_size));
  lap("ranks assigned");
  job.stragglers = FindStragglers(collectives, world_size);
  lap("stragglers (clock alignment, permutation test)");
  job.findings = StragglerFindings(job.stragglers);
  job.timeline = JobTimeline(job);
  // The straggler view's rank x collective arrivals, on the timeline's aligned clock.
  if (!job.timeline.is_null()) job.timeline["straggler_arrivals"] = StragglerArrivals(job.stragglers, collectives);
  for (Finding& f : RuleFindings(job)) job.findings.push_back(std::move(f));
  lap("findings");
  std::stable_sort(job.findings.begin(), job.findings.end(),
                   [](const Finding& x, const Finding& y) { return x.explained_ns > y.explained_ns; });
  job.tables.push_back(RanksTable(job));
  for (Table& t : GpuTimeTables(GpuTimes(job))) job.tables.push_back(std::move(t));
  job.tables.push_back(StragglerTable(job.stragglers));
  job.tables.push_back(StragglerRankTable(job.stragglers));
  job.tables.push_back(StragglerCollectiveTable(job.stragglers));
  job.tables.push_back(JobNvtxTable(job));
  job.tables.push_back(JobNvtxKernTable(job));
  lap("tables");
  return job;
}

RankHook CriticalPathHook() {
  return [](const TraceIndex& x, RankAnalysis& r) {
    r.step_graphs = RankPathGraphs(x, r.collectives);
    return OkStatus();
  };
}

std::vector<const std::vector<RankStepGraph>*> JobStepGraphs(const JobAnalysis& job) {
  std::vector<const std::vector<RankStepGraph>*> graphs;
  for (const RankAnalysis& r : job.ranks) graphs.push_back(&r.step_graphs);
  return graphs;
}

std::vector<Table> JobCriticalPathTables(const JobAnalysis& job) {
  std::vector<int> numbers;
  for (const RankAnalysis& r : job.ranks) numbers.push_back(r.rank);
  const std::vector<JobCriticalPath> paths = JobCriticalPaths(JobStepGraphs(job), numbers, job.stragglers);
  return {JobCriticalPathTable(paths, job.stragglers), JobCriticalPathCrossingsTable(paths),
          JobCriticalPathEventsTable(paths)};
}

StatusOr<JobAnalysis> AnalyzeJobReports(const std::vector<std::string>& inputs, const AnalysisOptions& options,
                                        int threads, const JobProgress& progress) {
  TS_ASSIGN_OR_RETURN(JobAnalysis job,
                      AnalyzeJob(inputs, options, threads, progress, options.critical_path ? CriticalPathHook() : nullptr));
  if (!options.step.empty() && job.timeline.is_null()) {
    return InvalidArgument("--step '" + options.step + "' names no step of any rank");
  }
  if (options.critical_path) {
    for (Table& t : JobCriticalPathTables(job)) job.tables.push_back(std::move(t));
  }
  return job;
}

std::string RenderJob(const JobAnalysis& job, const RenderOptions& render) {
  if (render.format == OutputFormat::kJson) {
    nlohmann::json j;
    j["ranks"] = nlohmann::json::array();
    for (const RankAnalysis& r : job.ranks) {
      j["ranks"].push_back({{"rank", r.rank}, {"rank_from", r.rank_from}, {"source", r.source}, {"format", r.format},
                            {"device", r.device}, {"backend", r.backend}, {"world_size", r.world_size},
                            {"events", r.events}, {"windows", std::max<size_t>(1, r.windows.size())},
                            {"files", r.windows}, {"quality", r.quality}, {"quality_failed", r.quality_failed},
                            {"findings", FindingsToJson(r.findings)}});
    }
    j["notes"] = job.notes;
    j["read"] = {{"in_flight", job.plan.in_flight}, {"why", job.plan.why}};
    if (render.timings) {
      j["seconds"] = nlohmann::json::object();
      for (const auto& [step, s] : job.seconds) j["seconds"][step] = s;
    }
    j["alignment"] = job.stragglers.alignment;
    j["reports"] = nlohmann::json::array();
    for (const Table& t : job.tables) j["reports"].push_back(TableToJson(t));
    j["findings"] = FindingsToJson(job.findings);
    std::string text = ReportJsonText(j);
    if (const size_t end = text.rfind("\n}"); !job.timeline.is_null() && end != std::string::npos) {
      // The timeline last (keys sorted) and on one line: its columns are long arrays of
      // small numbers.
      text.replace(end, 2, ",\n  \"timeline\": " +
                               job.timeline.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n}");
    }
    return text;
  }
  std::string out;
  if (render.format == OutputFormat::kText) {
    const RankAnalysis& first = job.ranks.front();
    out += "job: " + std::to_string(job.ranks.size()) + (job.ranks.size() == 1 ? " rank" : " ranks") +
           " (numbered by " + first.rank_from + ")";
    if (first.world_size > 0) out += ", world size " + std::to_string(first.world_size);
    if (!first.backend.empty()) out += ", " + first.backend;
    size_t traces = 0;
    for (const RankAnalysis& r : job.ranks) traces += std::max<size_t>(1, r.windows.size());
    if (traces != job.ranks.size()) out += ", " + std::to_string(traces) + " traces (a rank's windows: the ranks table)";
    out += "\nread: " + std::to_string(job.plan.in_flight) + " at a time (" + job.plan.why + ")\n\n";
  }
  for (const Table& t : job.tables) {
    if (render.format == OutputFormat::kCsv) {
      out += "# " + t.name + "\n" + RenderCsv(t) + "\n";
    } else {
      const std::optional<Table> summary = SummarizeRankTable(t);  // many ranks: the ends and the spread
      out += "== " + t.name + " ==\n" + RenderText(summary ? *summary : t, render.wide) + "\n";
    }
  }
  if (render.format == OutputFormat::kText) out += RenderFindings(job.findings);
  return out;
}

std::string RenderJobDiff(const JobAnalysis& base, const JobAnalysis& next, const RenderOptions& render) {
  std::map<int, std::pair<const RankAnalysis*, const RankAnalysis*>> pairs;
  for (const RankAnalysis& r : base.ranks) pairs[r.rank].first = &r;
  for (const RankAnalysis& r : next.ranks) pairs[r.rank].second = &r;
  const auto pct = [](double part, int64_t whole) -> Cell {
    if (whole <= 0) return std::string("-");
    return std::round(10000.0 * part / static_cast<double>(whole)) / 100.0;
  };
  Table ranks;
  ranks.name = "job_diff_ranks";
  ranks.title = "Per rank, base -> new: the device's span, idle and compute shares, and the overlap of "
                "communication with computation";
  ranks.columns = {"Rank", "Span base (ns)", "Span new (ns)", "Idle base (%)", "Idle new (%)", "Compute base (%)",
                   "Compute new (%)", "Overlap base (%)", "Overlap new (%)"};
  for (const auto& [rank, p] : pairs) {
    std::vector<Cell> row{int64_t{rank}};
    for (const RankAnalysis* r : {p.first, p.second}) row.push_back(r ? Cell(r->gpu.temporal.span_ns) : Cell(std::string("-")));
    for (int what = 0; what < 3; ++what) {
      for (const RankAnalysis* r : {p.first, p.second}) {
        if (r == nullptr) {
          row.push_back(std::string("-"));
          continue;
        }
        const TemporalBreakdown& b = r->gpu.temporal;
        if (what == 0) row.push_back(pct(static_cast<double>(b.idle_ns()), b.span_ns));
        if (what == 1) row.push_back(pct(static_cast<double>(b.compute_ns), b.span_ns));
        if (what == 2) row.push_back(pct(static_cast<double>(r->gpu.overlap_ns), r->gpu.communication_ns));
      }
    }
    ranks.AddRow(std::move(row));
  }
  // What either job's reading skipped (files that are not traces, malformed entries): a
  // count that changed because of it is not a change in the run.
  for (const auto& [side, job] : {std::pair{"base", &base}, {"new", &next}}) {
    for (const std::string& n : job->notes) {
      if (n.rfind("Skipped", 0) == 0) ranks.notes.push_back(std::string(side) + ": " + n);
    }
    for (const RankAnalysis& r : job->ranks) {
      if (r.malformed > 0) {
        ranks.notes.push_back(std::string(side) + " rank " + std::to_string(r.rank) + ": " +
                              std::to_string(r.malformed) + " malformed entries skipped: its figures leave them out");
      }
    }
  }
  // Kernel types and kernels summed over ranks.
  std::array<int64_t, kKernelTypes> types_base{}, types_new{};
  std::map<std::string, std::pair<int64_t, int64_t>> kernels;
  std::map<std::string, KernelType> kernel_type;
  for (const auto& [job, types, side] : {std::tuple{&base, &types_base, 0}, {&next, &types_new, 1}}) {
    for (const RankAnalysis& r : job->ranks) {
      for (const auto& [name, k] : r.gpu.kernels) {
        (*types)[static_cast<size_t>(k.type)] += k.total_ns;
        (side == 0 ? kernels[name].first : kernels[name].second) += k.total_ns;
        kernel_type[name] = k.type;
      }
    }
  }
  Table types;
  types.name = "job_diff_kernel_types";
  types.title = "Device time by kernel type over every rank, base -> new";
  types.columns = {"Base (ns)", "New (ns)", "Change (%)", "Type"};
  for (int ty = 0; ty < kKernelTypes; ++ty) {
    const int64_t b = types_base[static_cast<size_t>(ty)], n = types_new[static_cast<size_t>(ty)];
    if (b == 0 && n == 0) continue;
    types.AddRow({b, n, b > 0 ? Cell(std::round(10000.0 * static_cast<double>(n - b) / static_cast<double>(b)) / 100.0)
                             : Cell(std::string("new")),
                  std::string(KernelTypeName(static_cast<KernelType>(ty)))});
  }
  std::vector<std::pair<int64_t, const std::string*>> order;
  for (const auto& [name, bn] : kernels) order.push_back({std::llabs(bn.second - bn.first), &name});
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  Table changed;
  changed.name = "job_diff_kernels";
  changed.title = "The kernels whose device time over every rank changed most, base -> new";
  changed.columns = {"Type", "Base (ns)", "New (ns)", "Delta (ns)", "Name"};
  for (size_t i = 0; i < order.size() && i < 15; ++i) {
    const auto& [b, n] = kernels.at(*order[i].second);
    changed.AddRow({std::string(KernelTypeName(kernel_type.at(*order[i].second))), b, n, n - b, *order[i].second});
  }
  const std::vector<Table> tables = {ranks, types, changed};
  if (render.format == OutputFormat::kJson) {
    nlohmann::json j;
    j["base"] = {{"ranks", base.ranks.size()}, {"alignment", base.stragglers.alignment}};
    j["new"] = {{"ranks", next.ranks.size()}, {"alignment", next.stragglers.alignment}};
    j["reports"] = nlohmann::json::array();
    for (const Table& t : tables) j["reports"].push_back(TableToJson(t));
    j["findings"] = {{"base", FindingsToJson(base.findings)}, {"new", FindingsToJson(next.findings)}};
    return ReportJsonText(j);
  }
  std::string out;
  if (render.format == OutputFormat::kText) {
    out += "base: " + std::to_string(base.ranks.size()) + " ranks\nnew:  " + std::to_string(next.ranks.size()) +
           " ranks\n";
    for (const auto& [name, job] : {std::pair{"base", &base}, {"new", &next}}) {
      const auto f = StragglerFindings(job->stragglers);
      out += std::string("  stragglers (") + name + "): " + (f.empty() ? "none" : f.front().title) + "\n";
    }
    out += "\n";
  }
  for (const Table& t : tables) {
    out += render.format == OutputFormat::kCsv ? "# " + t.name + "\n" + RenderCsv(t) + "\n"
                                               : "== " + t.name + " ==\n" + RenderText(t, render.wide) + "\n";
  }
  return out;
}

}  // namespace tierscope
