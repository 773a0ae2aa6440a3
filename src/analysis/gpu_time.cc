// GpuTime: one pass over a trace's device events (unions, a type sweep, per-stream gaps,
// launch joins and queue depth), and its tables across ranks.
#include "analysis/gpu_time.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <utility>

#include "core/sort.h"
#include "core/text.h"

namespace tierscope {
namespace {

using Interval = std::pair<int64_t, int64_t>;  // [begin, end)


// Sorts and merges `v` in place (touching intervals join); returns the covered length.
int64_t Merge(std::vector<Interval>& v) {
  if (v.empty()) return 0;
  SortUnlessSorted(v.begin(), v.end());
  size_t out = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i].first <= v[out].second) {
      v[out].second = std::max(v[out].second, v[i].second);
    } else {
      v[++out] = v[i];
    }
  }
  v.resize(out + 1);
  int64_t total = 0;
  for (const Interval& i : v) total += i.second - i.first;
  return total;
}

// Exclusive time per set of types busy at once, from each type's merged intervals.
void SweepTypes(const std::array<std::vector<Interval>, kKernelTypes>& merged,
                std::array<int64_t, 1 << kKernelTypes>& by_mask) {
  std::vector<std::pair<int64_t, int>> edges;  // (time, +/-(bit + 1))
  for (int t = 0; t < kKernelTypes; ++t) {
    for (const Interval& i : merged[static_cast<size_t>(t)]) {
      edges.push_back({i.first, t + 1});
      edges.push_back({i.second, -(t + 1)});
    }
  }
  SortUnlessSorted(edges.begin(), edges.end());  // one ascending run per type
  int mask = 0;
  for (size_t k = 0; k < edges.size();) {
    const int64_t now = edges[k].first;
    while (k < edges.size() && edges[k].first == now) {  // every change at this instant
      const int bit = 1 << (std::abs(edges[k].second) - 1);
      mask = edges[k].second > 0 ? (mask | bit) : (mask & ~bit);
      ++k;
    }
    if (k < edges.size() && mask != 0) by_mask[static_cast<size_t>(mask)] += edges[k].first - now;
  }
}

Cell PctCell(double part, double whole) {
  if (!(whole > 0)) return std::string("-");
  return std::round(10000.0 * part / whole) / 100.0;
}

// The per-stream analyses: gaps by cause, and queue depth.
void AnalyzeStreams(const TraceIndex& x, const std::vector<size_t>& device, const GpuTimeOptions& o,
                    GpuTime& g) {
  std::map<std::pair<int32_t, int32_t>, std::vector<size_t>> lanes;
  for (size_t i : device) lanes[{x.E(i).pid, x.E(i).tid}].push_back(i);
  for (auto& [lane, events] : lanes) {
    SortUnlessSorted(events.begin(), events.end(), [&](size_t a, size_t b) { return x.E(a).ts_ns < x.E(b).ts_ns; });
    StreamIdle idle{lane.first, lane.second, static_cast<int64_t>(events.size()), 0, 0, 0};
    StreamQueue q{lane.first, lane.second, 0, 0, 0};
    std::vector<int64_t> launched, started;  // launch calls' and their kernels' starts
    int64_t busy_until = std::numeric_limits<int64_t>::min();
    for (size_t i : events) {
      const Event& e = x.E(i);
      const Event* launch = nullptr;
      if (e.correlation != 0) {
        auto it = x.runtime_by_corr.find(e.correlation);
        if (it != x.runtime_by_corr.end()) launch = &x.E(it->second);
      }
      if (busy_until != std::numeric_limits<int64_t>::min() && e.ts_ns > busy_until) {
        const int64_t gap = e.ts_ns - busy_until;
        if (launch != nullptr && launch->ts_ns > busy_until) idle.host_wait_ns += gap;
        else if (gap < o.kernel_wait_ns) idle.kernel_wait_ns += gap;
        else idle.other_ns += gap;
      }
      busy_until = std::max(busy_until, e.ts_ns + e.dur_ns);
      if (launch != nullptr && launch->ts_ns <= e.ts_ns) {
        launched.push_back(launch->ts_ns);
        started.push_back(e.ts_ns);
        ++q.launches;
      }
    }
    g.idle.push_back(idle);
    if (q.launches == 0) continue;
    // Both lists are nearly in order already; merged with launches before starts at one
    // instant, so a kernel launched and started at once never makes the depth negative.
    SortUnlessSorted(launched.begin(), launched.end());
    SortUnlessSorted(started.begin(), started.end());
    std::vector<std::pair<int64_t, int>> steps;  // (time, +1 launch call / -1 start)
    steps.reserve(launched.size() + started.size());
    size_t a = 0, b = 0;
    while (a < launched.size() || b < started.size()) {
      if (b == started.size() || (a < launched.size() && launched[a] <= started[b])) steps.push_back({launched[a++], +1});
      else steps.push_back({started[b++], -1});
    }
    int64_t depth = 0, weighted = 0;
    for (size_t k = 0; k < steps.size(); ++k) {
      depth += steps[k].second;
      q.max_depth = std::max(q.max_depth, depth);
      if (k + 1 < steps.size()) weighted += depth * (steps[k + 1].first - steps[k].first);
    }
    const int64_t span = steps.back().first - steps.front().first;
    q.mean_depth = span > 0 ? static_cast<double>(weighted) / static_cast<double>(span) : 0;
    g.queues.push_back(q);
  }
}

void AnalyzeLaunches(const TraceIndex& x, const std::vector<size_t>& device, const GpuTimeOptions& o,
                     GpuTime& g) {
  std::vector<double> cpu, gpu, delay;
  for (size_t i : device) {
    const Event& e = x.E(i);
    if (e.correlation == 0) continue;
    auto it = x.runtime_by_corr.find(e.correlation);
    if (it == x.runtime_by_corr.end()) continue;
    const Event& l = x.E(it->second);
    cpu.push_back(static_cast<double>(l.dur_ns));
    gpu.push_back(static_cast<double>(e.dur_ns));
    const int64_t d = std::max<int64_t>(0, e.ts_ns - (l.ts_ns + l.dur_ns));
    delay.push_back(static_cast<double>(d));
    if (e.dur_ns < l.dur_ns) ++g.launch.shorter_than_launch;
    if (d > o.launch_delay_cutoff_ns) ++g.launch.long_delay;
  }
  g.launch.launches = static_cast<int64_t>(cpu.size());
  g.launch.cpu_ns = Summarize(std::move(cpu));
  g.launch.gpu_ns = Summarize(std::move(gpu));
  g.launch.delay_ns = Summarize(std::move(delay));
}

}  // namespace

const char* KernelTypeName(KernelType t) {
  switch (t) {
    case KernelType::kComputation: return "computation";
    case KernelType::kCommunication: return "communication";
    case KernelType::kMemory: return "memory";
    case KernelType::kOther: return "other";
  }
  return "other";
}

KernelType ClassifyDeviceEvent(EventKind kind, std::string_view name) {
  if (kind == EventKind::kMemcpy || kind == EventKind::kMemset) return KernelType::kMemory;
  const bool nccl = (name.starts_with("nccl") || name.starts_with("void nccl")) &&
                    name.find("Kernel") != std::string_view::npos;
  if (nccl || name.starts_with("rccl") || name.starts_with("hcom")) return KernelType::kCommunication;
  for (std::string_view w : {"all_reduce", "allreduce", "all_gather", "allgather", "reduce_scatter",
                             "reducescatter", "all_to_all", "alltoall", "cross_device_reduce"}) {
    if (ContainsIgnoreCase(name, w)) return KernelType::kCommunication;
  }
  // ROCm 7.1 records its copies and fills as kernels (__amd_rocclr_copyBuffer, ...FillBuffer):
  // memory, as their Memcpy / Memset names would be.
  if (name.starts_with("Memcpy") || name.starts_with("Memset") || name.starts_with("dma") ||
      name.starts_with("__amd_rocclr_copyBuffer") || name.starts_with("__amd_rocclr_fillBuffer")) {
    return KernelType::kMemory;
  }
  if (name.find("Memcpy") != std::string_view::npos || name.find("Memset") != std::string_view::npos ||
      name.find("Sync") != std::string_view::npos) {
    return KernelType::kOther;
  }
  return KernelType::kComputation;
}

KernelType DeviceEventTypes::Of(size_t event) {
  const Event& e = index_.E(event);
  const int64_t key = (static_cast<int64_t>(e.kind) << 32) | static_cast<uint32_t>(e.name);
  auto [it, fresh] = by_name_.try_emplace(key, KernelType::kComputation);
  if (fresh) it->second = ClassifyDeviceEvent(e.kind, index_.Name(event));
  return it->second;
}

void KernelTotals::Add(int64_t ns) {
  min_ns = count == 0 ? ns : std::min(min_ns, ns);
  max_ns = count == 0 ? ns : std::max(max_ns, ns);
  ++count;
  total_ns += ns;
  // Welford: a running mean and squared deviations, exact for equal values however large.
  const double x = static_cast<double>(ns), delta = x - mean_;
  mean_ += delta / static_cast<double>(count);
  m2_ += delta * (x - mean_);
}

void KernelTotals::Merge(const KernelTotals& o) {
  if (o.count == 0) return;
  if (count == 0) {
    *this = o;
    return;
  }
  min_ns = std::min(min_ns, o.min_ns);
  max_ns = std::max(max_ns, o.max_ns);
  // Chan et al.'s pairwise combination of two (count, mean, M2).
  const double na = static_cast<double>(count), nb = static_cast<double>(o.count), delta = o.mean_ - mean_;
  mean_ += delta * nb / (na + nb);
  m2_ += o.m2_ + delta * delta * na * nb / (na + nb);
  count += o.count;
  total_ns += o.total_ns;
}

double KernelTotals::stddev() const {
  if (count < 2) return 0;
  return std::sqrt(std::max(0.0, m2_ / static_cast<double>(count - 1)));
}

double GpuTime::CommCompOverlapPct() const {
  if (communication_ns <= 0) return std::numeric_limits<double>::quiet_NaN();
  return 100.0 * static_cast<double>(overlap_ns) / static_cast<double>(communication_ns);
}

GpuTime AnalyzeGpuTime(const TraceIndex& x, const GpuTimeOptions& o) {
  GpuTime g;
  std::vector<size_t> device = x.kernels;
  device.insert(device.end(), x.memops.begin(), x.memops.end());
  std::array<std::vector<Interval>, kKernelTypes> by_type;
  std::vector<Interval> all;
  all.reserve(device.size());
  // Per interned name, not per event: a trace has millions of kernels and few names.
  std::unordered_map<int32_t, KernelTotals> by_name;
  for (size_t i : device) {
    const Event& e = x.E(i);
    if (!IsDeviceWork(e.kind)) continue;
    auto [it, fresh] = by_name.try_emplace(e.name);
    if (fresh) it->second.type = ClassifyDeviceEvent(e.kind, x.Name(i));
    it->second.Add(e.dur_ns);
    const Interval iv{e.ts_ns, e.ts_ns + e.dur_ns};
    all.push_back(iv);
    by_type[static_cast<size_t>(it->second.type)].push_back(iv);
  }
  for (const auto& [id, k] : by_name) g.kernels[std::string(x.trace->strings.Get(id))].Merge(k);
  for (const auto& [id, k] : by_name) g.kernels[std::string(x.trace->strings.Get(id))].type = k.type;
  g.has_device_events = !all.empty();
  if (!g.has_device_events) return g;
  int64_t first = all.front().first, last = all.front().second;
  for (const Interval& i : all) {
    first = std::min(first, i.first);
    last = std::max(last, i.second);
  }
  g.temporal.span_ns = last - first;
  g.temporal.busy_ns = Merge(all);
  for (auto& v : by_type) Merge(v);
  auto union_of = [&](KernelType t) {
    int64_t s = 0;
    for (const Interval& i : by_type[static_cast<size_t>(t)]) s += i.second - i.first;
    return s;
  };
  g.temporal.compute_ns = union_of(KernelType::kComputation);
  g.communication_ns = union_of(KernelType::kCommunication);
  SweepTypes(by_type, g.by_mask);
  const int both = (1 << static_cast<int>(KernelType::kComputation)) | (1 << static_cast<int>(KernelType::kCommunication));
  for (size_t m = 0; m < g.by_mask.size(); ++m) {
    if ((static_cast<int>(m) & both) == both) g.overlap_ns += g.by_mask[m];
  }
  AnalyzeStreams(x, device, o, g);
  AnalyzeLaunches(x, device, o, g);
  return g;
}

// ---------------------------------------------------------------------------------------
// Tables.

Table TemporalBreakdownTable(const std::vector<RankGpuTime>& ranks) {
  Table t;
  t.name = "temporal_breakdown";
  t.title = "Temporal breakdown: the device's span (first to last kernel) as idle, computation and "
            "other device work (communication, memory), all streams together";
  t.columns = {"Rank", "Span (ns)", "Idle (ns)", "Compute (ns)", "Non-compute (ns)", "Idle (%)", "Compute (%)",
               "Non-compute (%)"};
  for (const RankGpuTime& r : ranks) {
    const TemporalBreakdown& b = r.gpu->temporal;
    if (!r.gpu->has_device_events) {
      t.AddRow({int64_t{r.rank}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, "-", "-", "-"});
      continue;
    }
    const double span = static_cast<double>(b.span_ns);
    t.AddRow({int64_t{r.rank}, b.span_ns, b.idle_ns(), b.compute_ns, b.non_compute_ns(),
              PctCell(static_cast<double>(b.idle_ns()), span), PctCell(static_cast<double>(b.compute_ns), span),
              PctCell(static_cast<double>(b.non_compute_ns()), span)});
  }
  t.notes.push_back("A rank without device events shows '-' (HTA's get_temporal_breakdown stops with an error there).");
  return t;
}

Table KernelTypeTable(const std::vector<RankGpuTime>& ranks) {
  Table t;
  t.name = "kernel_type_breakdown";
  t.title = "Kernel breakdown by type: exclusive device time of each combination of types running at once";
  t.columns = {"Rank", "Time (ns)", "Share (%)", "Types"};
  std::array<int64_t, 1 << kKernelTypes> job{};
  auto label = [](size_t mask) {
    std::string s;
    for (int b = 0; b < kKernelTypes; ++b) {
      if (mask & (size_t{1} << b)) s += (s.empty() ? "" : " + ") + std::string(KernelTypeName(static_cast<KernelType>(b)));
    }
    return s;
  };
  auto add_rows = [&](const std::string& rank, const std::array<int64_t, 1 << kKernelTypes>& by_mask) {
    int64_t total = 0;
    for (int64_t v : by_mask) total += v;
    std::vector<std::pair<int64_t, size_t>> order;
    for (size_t m = 1; m < by_mask.size(); ++m) {
      if (by_mask[m] > 0) order.push_back({by_mask[m], m});
    }
    std::sort(order.rbegin(), order.rend());
    for (const auto& [ns, m] : order) {
      t.AddRow({rank, ns, PctCell(static_cast<double>(ns), static_cast<double>(total)), label(m)});
    }
  };
  for (const RankGpuTime& r : ranks) {
    add_rows(std::to_string(r.rank), r.gpu->by_mask);
    for (size_t m = 0; m < job.size(); ++m) job[m] += r.gpu->by_mask[m];
  }
  if (ranks.size() > 1) add_rows("all", job);
  t.notes.push_back("Share: of the rank's busy device time (for 'all', of every rank's together).");
  return t;
}

Table KernelBreakdownTable(const std::vector<RankGpuTime>& ranks, int top) {
  struct Across {
    KernelTotals all;
    std::vector<std::pair<int64_t, int>> per_rank;  // (total ns, rank)
  };
  std::map<std::string, Across> by_name;
  for (const RankGpuTime& r : ranks) {
    for (const auto& [name, k] : r.gpu->kernels) {
      Across& a = by_name[name];
      if (a.all.count == 0) a.all.type = k.type;
      a.all.Merge(k);
      a.per_rank.push_back({k.total_ns, r.rank});
    }
  }
  std::vector<std::pair<int64_t, const std::string*>> order;
  for (const auto& [name, a] : by_name) order.push_back({a.all.total_ns, &name});
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : *a.second < *b.second;
  });
  Table t;
  t.name = "kernel_breakdown";
  t.title = "Kernels across ranks: total device time, instances, and the per-rank spread";
  t.columns = {"Type", "Total (ns)", "Instances", "Avg (ns)", "StdDev (ns)", "Rank mean (ns)", "Min rank (ns)",
               "Max rank (ns)", "Max/mean", "Name"};
  const double n_ranks = static_cast<double>(std::max<size_t>(ranks.size(), 1));
  std::array<KernelTotals, kKernelTypes> others;
  std::array<int64_t, kKernelTypes> others_names{};
  for (size_t i = 0; i < order.size(); ++i) {
    const Across& a = by_name.at(*order[i].second);
    if (static_cast<int>(i) >= top) {
      others[static_cast<size_t>(a.all.type)].Merge(a.all);
      ++others_names[static_cast<size_t>(a.all.type)];
      continue;
    }
    int64_t mn = a.per_rank.front().first, mx = mn;
    int mn_rank = a.per_rank.front().second, mx_rank = mn_rank;
    for (const auto& [ns, rank] : a.per_rank) {
      if (ns < mn) mn = ns, mn_rank = rank;
      if (ns > mx) mx = ns, mx_rank = rank;
    }
    if (a.per_rank.size() < ranks.size()) mn = 0, mn_rank = -1;  // a rank that never ran it
    const double mean = static_cast<double>(a.all.total_ns) / n_ranks;
    t.AddRow({std::string(KernelTypeName(a.all.type)), a.all.total_ns, a.all.count, a.all.mean(), a.all.stddev(), mean,
              std::to_string(mn) + (mn_rank >= 0 ? " (r" + std::to_string(mn_rank) + ")" : " (none)"),
              std::to_string(mx) + " (r" + std::to_string(mx_rank) + ")",
              mean > 0 ? Cell(static_cast<double>(mx) / mean) : Cell(std::string("-")), *order[i].second});
  }
  for (int ty = 0; ty < kKernelTypes; ++ty) {
    const KernelTotals& o = others[static_cast<size_t>(ty)];
    if (o.count == 0) continue;
    t.AddRow({std::string(KernelTypeName(static_cast<KernelType>(ty))), o.total_ns, o.count, o.mean(), o.stddev(),
              static_cast<double>(o.total_ns) / n_ranks, "-", "-", "-",
              "(" + std::to_string(others_names[static_cast<size_t>(ty)]) + " other kernels)"});
  }
  return t;
}

Table CommCompOverlapTable(const std::vector<RankGpuTime>& ranks) {
  Table t;
  t.name = "comm_comp_overlap";
  t.title = "Communication-computation overlap: the share of communication time hidden under computation";
  t.columns = {"Rank", "Communication (ns)", "Overlapped (ns)", "Overlap (%)"};
  for (const RankGpuTime& r : ranks) {
    t.AddRow({int64_t{r.rank}, r.gpu->communication_ns, r.gpu->overlap_ns,
              PctCell(static_cast<double>(r.gpu->overlap_ns), static_cast<double>(r.gpu->communication_ns))});
  }
  return t;
}

Table IdleTimeTable(const std::vector<RankGpuTime>& ranks) {
  Table t;
  t.name = "idle_time_breakdown";
  t.title = "Idle time per stream: the gaps between a stream's device events, by what it waited for";
  t.columns = {"Rank", "Device", "Stream", "Events", "Host wait (ns)", "Kernel wait (ns)", "Other (ns)",
               "Host wait (%)", "Kernel wait (%)", "Other (%)"};
  for (const RankGpuTime& r : ranks) {
    for (const StreamIdle& s : r.gpu->idle) {
      const double total = static_cast<double>(s.host_wait_ns + s.kernel_wait_ns + s.other_ns);
      t.AddRow({int64_t{r.rank}, int64_t{s.device}, int64_t{s.stream}, s.events, s.host_wait_ns, s.kernel_wait_ns,
                s.other_ns, PctCell(static_cast<double>(s.host_wait_ns), total),
                PctCell(static_cast<double>(s.kernel_wait_ns), total), PctCell(static_cast<double>(s.other_ns), total)});
    }
  }
  t.notes.push_back("Host wait: the launch call began after the stream went idle. Kernel wait: a gap shorter "
                    "than 30 us between events. Other: longer gaps (synchronisation, dependencies).");
  return t;
}

Table LaunchStatsTable(const std::vector<RankGpuTime>& ranks) {
  Table t;
  t.name = "kernel_launch_stats";
  t.title = "Kernel launch statistics: launch call, device time and launch delay (device start - call end)";
  t.columns = {"Rank", "Launches", "Call avg (ns)", "Call med (ns)", "Device avg (ns)", "Device med (ns)",
               "Delay avg (ns)", "Delay med (ns)", "Delay max (ns)", "Shorter than call", "Delay > 100 us"};
  for (const RankGpuTime& r : ranks) {
    const LaunchStats& l = r.gpu->launch;
    t.AddRow({int64_t{r.rank}, l.launches, l.cpu_ns.mean, l.cpu_ns.median, l.gpu_ns.mean, l.gpu_ns.median,
              l.delay_ns.mean, l.delay_ns.median, l.delay_ns.max, l.shorter_than_launch, l.long_delay});
  }
  t.notes.push_back("Shorter than call: device events that took less time than the call that launched them "
                    "(short kernels with long launches: launch-bound).");
  return t;
}

Table QueueLengthTable(const std::vector<RankGpuTime>& ranks) {
  Table t;
  t.name = "queue_length";
  t.title = "Queue length per stream: launches issued but not yet started";
  t.columns = {"Rank", "Device", "Stream", "Launches", "Max", "Mean (time-weighted)"};
  for (const RankGpuTime& r : ranks) {
    for (const StreamQueue& q : r.gpu->queues) {
      t.AddRow({int64_t{r.rank}, int64_t{q.device}, int64_t{q.stream}, q.launches, q.max_depth, q.mean_depth});
    }
  }
  t.notes.push_back("A queue that stays near 0 starves the device (the host is the bottleneck); a long one "
                    "means the host runs ahead.");
  return t;
}

std::vector<Table> GpuTimeTables(const std::vector<RankGpuTime>& ranks) {
  return {TemporalBreakdownTable(ranks), KernelTypeTable(ranks),   KernelBreakdownTable(ranks),
          CommCompOverlapTable(ranks),   IdleTimeTable(ranks),     LaunchStatsTable(ranks),
          QueueLengthTable(ranks)};
}

const std::vector<std::string>& GpuTimeReportNames() {
  static const std::vector<std::string> kNames = {"temporal_breakdown", "kernel_type_breakdown",
                                                  "kernel_breakdown",   "comm_comp_overlap",
                                                  "idle_time_breakdown", "kernel_launch_stats",
                                                  "queue_length"};
  return kNames;
}

}  // namespace tierscope#include "core/text.h"

