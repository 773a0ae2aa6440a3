// AnalyzeJob: every rank read and reduced in parallel, then the job's tables and findings.
#include "analysis/job.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>

#include "core/clock.h"
#include "core/cpu_info.h"
#include "core/thread_pool.h"
#include "trace/json_input.h"

namespace tierscope {

RankAnalysis AnalyzeRank(const Trace& t, const AnalysisOptions& o) {
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
  const TraceIndex x = BuildIndex(t, o);
  r.unit_name = x.unit_name;
  r.units = static_cast<int64_t>(x.units.size());
  r.gpu = AnalyzeGpuTime(x);
  r.collectives = FindCollectives(x);
  for (size_t i : x.annotations) r.ranges[{"host", std::string(x.Name(i))}].Add(x.E(i).dur_ns);
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (t.events[i].kind == EventKind::kGpuAnnotation) r.ranges[{"device", std::string(x.Name(i))}].Add(t.events[i].dur_ns);
  }
  r.range_kernels = NvtxKernTotals(x);
  r.findings = Diagnose(x, o);
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
  t.title = "Ranks: one trace each";
  t.columns = {"Rank", "Events", "Work units", "Device events", "Findings", "Malformed", "Rank from", "Device", "File"};
  for (const RankAnalysis& r : job.ranks) {
    int64_t device_events = 0;
    for (const auto& [name, k] : r.gpu.kernels) device_events += k.count;
    t.AddRow({int64_t{r.rank}, r.events, r.units, device_events, static_cast<int64_t>(r.findings.size()), r.malformed,
              r.rank_from, r.device.empty() ? std::string("-") : r.device, r.source});
  }
  if (!job.rank_note.empty()) t.notes.push_back(job.rank_note + ".");
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
  using Key = std::tuple<std::string, std::string, std::string>;
  std::map<Key, std::pair<RangeKernels, int64_t>> all;  // -> (merged, ranks)
  for (const RankAnalysis& r : job.ranks) {
    for (const auto& [key, rk] : r.range_kernels) {
      auto& cell = all[key];
      cell.first.kernels.Merge(rk.kernels);
      cell.first.range_instances += rk.range_instances;
      ++cell.second;
    }
  }
  std::vector<std::pair<int64_t, const Key*>> order;
  for (const auto& [key, cell] : all) order.push_back({cell.first.kernels.total_ns, &key});
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  Table t;
  t.name = "nvtx_kern_sum";
  t.title = "Kernels projected onto the NVTX / annotation ranges that launched them, over every rank";
  t.columns = {"Range", "Side", "Range Inst", "Kern Inst", "Total Time (ns)", "Avg (ns)", "Min (ns)", "Max (ns)",
               "StdDev (ns)", "Ranks", "Kernel Name"};
  constexpr size_t kRows = 40;
  for (size_t i = 0; i < order.size() && i < kRows; ++i) {
    const auto& [rk, ranks] = all.at(*order[i].second);
    const auto& [range, side, kernel] = *order[i].second;
    const KernelTotals& k = rk.kernels;
    t.AddRow({range, side, rk.range_instances, k.count, k.total_ns, k.mean(), k.min_ns, k.max_ns, k.stddev(), ranks,
              kernel});
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
                                 int threads, const JobProgress& progress) {
  TS_ASSIGN_OR_RETURN(std::vector<std::string> files, JobFiles(inputs));
  std::vector<int64_t> bytes;
  for (const std::string& f : files) bytes.push_back(std::max<int64_t>(0, EstimatedInputBytes(f)));
  const LoadPlan plan =
      PlanLoad(bytes, threads > 0 ? threads : ThreadPool::HardwareThreads(), AvailableMemoryBytes());
  std::vector<RankAnalysis> ranks(files.size());
  const int64_t t0 = MonotonicNs();
  TS_RETURN_IF_ERROR(ForEachRankTrace(
      files, plan,
      [&](size_t i, Trace& t) {
        ranks[i] = AnalyzeRank(t, options);
        return OkStatus();
      },
      [&](size_t done, size_t total, const std::string& path) {
        if (progress) progress(done, total, path, static_cast<double>(MonotonicNs() - t0) / 1e9);
      }));
  return JobFromRanks(std::move(ranks), files, plan);
}

StatusOr<JobAnalysis> JobFromRanks(std::vector<RankAnalysis> ranks, const std::vector<std::string>& files,
                                   LoadPlan plan) {
  if (ranks.size() != files.size() || ranks.empty()) {
    return InvalidArgument("a job needs one summary per file (" + std::to_string(ranks.size()) + " summaries, " +
                           std::to_string(files.size()) + " files)");
  }
  JobAnalysis job;
  job.plan = std::move(plan);
  std::vector<int> trace_ranks;
  for (const RankAnalysis& r : ranks) trace_ranks.push_back(r.trace_rank);
  TS_ASSIGN_OR_RETURN(RankAssignment a, AssignRanks(files, trace_ranks));
  for (size_t i = 0; i < ranks.size(); ++i) {
    ranks[i].rank = a.rank[i];
    ranks[i].rank_from = a.from[i];
  }
  job.rank_note = a.note;
  std::sort(ranks.begin(), ranks.end(), [](const RankAnalysis& x, const RankAnalysis& y) { return x.rank < y.rank; });
  job.ranks = std::move(ranks);
  std::vector<RankCollectivesOf> collectives;
  for (const RankAnalysis& r : job.ranks) collectives.push_back({r.rank, &r.collectives});
  int world_size = 0;
  for (const RankAnalysis& r : job.ranks) world_size = std::max(world_size, static_cast<int>(r.world_size));
  job.stragglers = FindStragglers(collectives, world_size);
  job.findings = StragglerFindings(job.stragglers);
  for (Finding& f : RuleFindings(job)) job.findings.push_back(std::move(f));
  std::stable_sort(job.findings.begin(), job.findings.end(),
                   [](const Finding& x, const Finding& y) { return x.explained_ns > y.explained_ns; });
  job.tables.push_back(RanksTable(job));
  for (Table& t : GpuTimeTables(GpuTimes(job))) job.tables.push_back(std::move(t));
  job.tables.push_back(StragglerTable(job.stragglers));
  job.tables.push_back(StragglerRankTable(job.stragglers));
  job.tables.push_back(StragglerCollectiveTable(job.stragglers));
  job.tables.push_back(JobNvtxTable(job));
  job.tables.push_back(JobNvtxKernTable(job));
  return job;
}

std::string RenderJob(const JobAnalysis& job, const RenderOptions& render) {
  if (render.format == OutputFormat::kJson) {
    nlohmann::json j;
    j["ranks"] = nlohmann::json::array();
    for (const RankAnalysis& r : job.ranks) {
      j["ranks"].push_back({{"rank", r.rank}, {"rank_from", r.rank_from}, {"source", r.source}, {"format", r.format},
                            {"device", r.device}, {"backend", r.backend}, {"world_size", r.world_size},
                            {"events", r.events}, {"findings", FindingsToJson(r.findings)}});
    }
    j["read"] = {{"in_flight", job.plan.in_flight}, {"why", job.plan.why}};
    j["alignment"] = job.stragglers.alignment;
    j["reports"] = nlohmann::json::array();
    for (const Table& t : job.tables) j["reports"].push_back(TableToJson(t));
    j["findings"] = FindingsToJson(job.findings);
    return j.dump(2) + "\n";
  }
  std::string out;
  if (render.format == OutputFormat::kText) {
    const RankAnalysis& first = job.ranks.front();
    out += "job: " + std::to_string(job.ranks.size()) + (job.ranks.size() == 1 ? " rank" : " ranks") +
           " (numbered by " + first.rank_from + ")";
    if (first.world_size > 0) out += ", world size " + std::to_string(first.world_size);
    if (!first.backend.empty()) out += ", " + first.backend;
    out += "\nread: " + std::to_string(job.plan.in_flight) + " at a time (" + job.plan.why + ")\n\n";
  }
  for (const Table& t : job.tables) {
    if (render.format == OutputFormat::kCsv) {
      out += "# " + t.name + "\n" + RenderCsv(t) + "\n";
    } else {
      out += "== " + t.name + " ==\n" + RenderText(t, render.wide) + "\n";
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
    return j.dump(2) + "\n";
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
