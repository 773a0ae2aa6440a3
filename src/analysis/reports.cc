// The reports: kernel / API / memory-operation summaries, launch-to-execution times,
// device in-use, gaps, short kernels, work units, hot kernels, operators.
#include "analysis/reports.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <map>
#include <tuple>

#include "analysis/gpu_time.h"
#include "analysis/collective_bandwidth.h"
#include "analysis/critical_path.h"
#include "analysis/op_roofline.h"
#include "analysis/trace_quality.h"
#include "analysis/nvtx.h"
#include "core/sort.h"
#include "core/stats.h"
#include "profile/op_summary.h"
#include "trace/args.h"

namespace tierscope {
namespace {

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Groups indexes by event name.
std::map<std::string, std::vector<size_t>> ByName(const TraceIndex& x, const std::vector<size_t>& idx) {
  std::map<std::string, std::vector<size_t>> g;
  for (size_t i : idx) g[std::string(x.Name(i))].push_back(i);
  return g;
}

std::vector<double> Durations(const TraceIndex& x, const std::vector<size_t>& idx) {
  std::vector<double> d;
  d.reserve(idx.size());
  for (size_t i : idx) d.push_back(static_cast<double>(x.E(i).dur_ns));
  return d;
}

Table KernSum(const TraceIndex& x) {
  return SumTable(x, x.prefix + "_gpu_kern_sum", "GPU kernel summary (device time per kernel name)", x.kernels);
}

Table ApiSum(const TraceIndex& x) {
  return SumTable(x, x.prefix + "_api_sum", "Runtime API summary (host time per API name)", x.runtime);
}

Table GpuSum(const TraceIndex& x) {
  std::vector<size_t> all = x.kernels;
  all.insert(all.end(), x.memops.begin(), x.memops.end());
  Table t = SumTable(x, x.prefix + "_gpu_sum", "GPU summary (kernels and memory operations)", all);
  t.columns.insert(t.columns.end() - 1, "Category");
  std::map<std::string, std::string> memop_category;
  for (size_t i : x.memops) {
    memop_category.emplace(std::string(x.Name(i)),
                           x.E(i).kind == EventKind::kMemcpy ? "MEMCPY" : "MEMSET");
  }
  for (auto& row : t.rows) {
    auto it = memop_category.find(std::get<std::string>(row.back()));
    row.insert(row.end() - 1, it == memop_category.end() ? std::string("KERNEL") : it->second);
  }
  return t;
}

Table MemTimeSum(const TraceIndex& x) {
  return SumTable(x, x.prefix + "_gpu_mem_time_sum", "GPU memory operations by time", x.memops);
}

Table MemSizeSum(const TraceIndex& x) {
  Table t;
  t.name = x.prefix + "_gpu_mem_size_sum";
  t.title = "GPU memory operations by size (bytes, where the trace records them)";
  t.columns = {"Total (MB)", "Count", "Avg (MB)", "Min (MB)", "Max (MB)", "Operation"};
  for (auto& [n, members] : ByName(x, x.memops)) {
    std::vector<double> mb;
    for (size_t i : members) {
      const Event& e = x.E(i);
      double bytes = e.v0;
      if (bytes == 0 && e.args >= 0) {
        const std::string b(ArgValue(x.trace->strings.Get(e.args), "bytes"));
        if (!b.empty()) bytes = std::atof(b.c_str());
      }
      mb.push_back(bytes / 1e6);
    }
    double total = 0, mn = mb.empty() ? 0 : mb[0], mx = 0;
    for (double v : mb) {
      total += v;
      mn = std::min(mn, v);
      mx = std::max(mx, v);
    }
    t.AddRow({total, static_cast<int64_t>(mb.size()), mb.empty() ? 0.0 : total / mb.size(), mn, mx, n});
  }
  return t;
}

Table KernExecSum(const TraceIndex& x) {
  Table t;
  t.name = x.prefix + "_kern_exec_sum";
  t.title = "Kernel launch and execution (API time, queue time = kernel start - API end, kernel time)";
  t.columns = {"Count", "API Avg (ns)", "Queue Avg (ns)", "Queue Max (ns)", "Kernel Avg (ns)",
               "Kernel Total (ns)", "API Name", "Kernel Name"};
  std::map<std::pair<std::string, std::string>, std::vector<std::array<int64_t, 3>>> g;
  for (size_t k : x.kernels) {
    const Event& ke = x.E(k);
    auto it = x.runtime_by_corr.find(ke.correlation);
    if (ke.correlation == 0 || it == x.runtime_by_corr.end()) continue;
    const Event& api = x.E(it->second);
    const int64_t queue = std::max<int64_t>(0, ke.ts_ns - (api.ts_ns + api.dur_ns));
    g[{std::string(x.Name(it->second)), std::string(x.Name(k))}].push_back({api.dur_ns, queue, ke.dur_ns});
  }
  std::vector<std::pair<double, std::vector<Cell>>> rows;
  for (auto& [key, v] : g) {
    double api = 0, q = 0, qmax = 0, kt = 0;
    for (auto& a : v) {
      api += a[0];
      q += a[1];
      qmax = std::max<double>(qmax, a[1]);
      kt += a[2];
    }
    const double n = static_cast<double>(v.size());
    rows.push_back({kt, {static_cast<int64_t>(v.size()), api / n, q / n, qmax, kt / n, kt, key.first, key.second}});
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (auto& r : rows) t.AddRow(std::move(r.second));
  return t;
}

Table ApiGpuSum(const TraceIndex& x) {
  Table t;
  t.name = x.prefix + "_api_gpu_sum";
  t.title = "Runtime API calls with the device work they launched";
  t.columns = {"Count", "API Time (ns)", "GPU Time (ns)", "API Name", "GPU Name"};
  std::map<std::pair<std::string, std::string>, std::array<double, 3>> g;
  auto add = [&](const std::vector<size_t>& dev) {
    for (size_t d : dev) {
      auto it = x.runtime_by_corr.find(x.E(d).correlation);
      if (x.E(d).correlation == 0 || it == x.runtime_by_corr.end()) continue;
      auto& a = g[{std::string(x.Name(it->second)), std::string(x.Name(d))}];
      a[0] += 1;
      a[1] += static_cast<double>(x.E(it->second).dur_ns);
      a[2] += static_cast<double>(x.E(d).dur_ns);
    }
  };
  add(x.kernels);
  add(x.memops);
  std::vector<std::pair<std::pair<std::string, std::string>, std::array<double, 3>>> v(g.begin(), g.end());
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second[2] > b.second[2]; });
  for (auto& [k, a] : v) t.AddRow({static_cast<int64_t>(a[0]), a[1], a[2], k.first, k.second});
  return t;
}

Table InUseTable(const TraceIndex& x) {
  Table t;
  t.name = "in_use";
  t.title = "Device in-use: union of kernel and memory-operation time over the device window";
  t.columns = {"Busy (ns)", "Window (ns)", "In use (%)", "Kernels", "Memory ops", "Scope"};
  const InUse u = DeviceInUse(x);
  t.AddRow({u.busy_ns, u.window_ns, u.percent(),
            static_cast<int64_t>(x.kernels.size()), static_cast<int64_t>(x.memops.size()),
            std::string("all devices")});
  return t;
}

Table GapsTable(const TraceIndex& x) {
  Table t;
  t.name = "gaps";
  t.title = "Idle gaps between device work (device union)";
  t.columns = {"Count", "Total (ns)", "Share of idle (%)", "Gap length"};
  const std::vector<int64_t> gaps = DeviceGaps(x);
  const int64_t edges[] = {1'000, 10'000, 100'000, 1'000'000, INT64_MAX};
  const char* labels[] = {"< 1 us", "1-10 us", "10-100 us", "100 us-1 ms", ">= 1 ms"};
  double idle = 0;
  for (int64_t g : gaps) idle += static_cast<double>(g);
  int64_t lo = 0;
  for (int b = 0; b < 5; ++b) {
    int64_t n = 0;
    double sum = 0;
    for (int64_t g : gaps) {
      if (g >= lo && g < edges[b]) {
        ++n;
        sum += static_cast<double>(g);
      }
    }
    t.AddRow({n, sum, idle > 0 ? 100.0 * sum / idle : 0.0, std::string(labels[b])});
    lo = edges[b];
  }
  if (!gaps.empty()) {
    t.notes.push_back("largest gap: " + FormatNs(static_cast<double>(*std::max_element(gaps.begin(), gaps.end()))) +
                      "; gaps: " + std::to_string(gaps.size()));
  }
  return t;
}

Table ShortKernels(const TraceIndex& x, const AnalysisOptions& o) {
  Table t;
  t.name = "short_kernels";
  t.title = "Short kernels (below " + FormatNs(o.short_kernel_ns) + ")";
  t.columns = {"Short", "Kernels", "Short (%)", "Short time (ns)", "Kernel time (ns)", "Threshold"};
  int64_t n = 0;
  double st = 0, kt = 0;
  for (size_t k : x.kernels) {
    const double d = static_cast<double>(x.E(k).dur_ns);
    kt += d;
    if (d < o.short_kernel_ns) {
      ++n;
      st += d;
    }
  }
  const int64_t total = static_cast<int64_t>(x.kernels.size());
  t.AddRow({n, total, total ? 100.0 * n / total : 0.0, st, kt, FormatNs(o.short_kernel_ns)});
  return t;
}

Table UnitsTable(const TraceIndex& x) {
  Table t;
  t.name = "units";
  t.title = x.unit_name.empty() ? std::string("Events per work unit")
                                : "Events per work unit ('" + x.unit_name + "', " +
                                      std::to_string(x.units.size()) + " units)";
  t.columns = {"Per unit", "Total", "Event"};
  if (x.unit_name.empty()) {
    t.notes.push_back("No work units found: no ProfilerStep#N, serial_bert_forward or batched_bert_forward "
                      "annotation; pass --unit NAME.");
  }
  if (x.units.empty()) return t;
  const UnitCounts& c = x.counts;
  for (const auto& [total, what] : {std::pair{c.launches, "launches"}, {c.kernels, "kernels"},
                                    {c.memory_ops, "memory operations"}, {c.allocations, "allocations"}}) {
    t.AddRow({c.PerUnit(static_cast<double>(total)), total, std::string(what)});
  }
  std::vector<std::pair<int64_t, std::string>> v;
  for (const auto& [n, calls] : c.op_calls) v.push_back({calls, n});
  std::sort(v.rbegin(), v.rend());
  for (const auto& [calls, n] : v) t.AddRow({c.PerUnit(static_cast<double>(calls)), calls, n});
  return t;
}

Table HotKernels(const TraceIndex& x, const AnalysisOptions& o) {
  Table t;
  t.name = "hot_kernels";
  t.title = "Hot kernels (by total device time), with their launch geometry";
  t.columns = {"Time (%)", "Total (ns)", "Instances", "Avg (ns)", "Grid", "Block", "Name"};
  double total = 0;
  for (size_t k : x.kernels) total += static_cast<double>(x.E(k).dur_ns);
  auto groups = ByName(x, x.kernels);
  const std::vector<std::pair<double, std::string>> v = KernelsByTime(x);
  for (int r = 0; r < o.hot_kernels && r < static_cast<int>(v.size()); ++r) {
    const auto& m = groups[v[r].second];
    const Event& e = x.E(m.front());
    std::string grid, block;
    if (e.args >= 0) {
      grid = CompactJson(ArgValue(x.trace->strings.Get(e.args), "grid"));
      block = CompactJson(ArgValue(x.trace->strings.Get(e.args), "block"));
    }
    t.AddRow({total > 0 ? 100.0 * v[r].first / total : 0.0, v[r].first, static_cast<int64_t>(m.size()),
              v[r].first / m.size(), grid.empty() ? "-" : grid, block.empty() ? "-" : block, v[r].second});
  }
  if (!v.empty()) {
    std::string name = v[0].second;
    for (size_t p = 0; (p = name.find('\'', p)) != std::string::npos; p += 4) name.replace(p, 1, "'\\''");
    t.notes.push_back("tier 3 for the hottest: tierscope kernel --from-trace " + x.trace->source +
                      " -k '" + name + "'" +
                      (x.prefix == "cpu" || x.trace->runtime == "cpu"
                           ? " (on the engine: tierscope kernel -k '" + name + "' with the run's bench flags)"
                           : ""));
  }
  return t;
}

Table OpSum(const TraceIndex& x) {
  Table t;
  t.name = "op_sum";
  t.title = "Operators (tier 1): host time, and device time (kernels, copies, sets) by External id; a graph "
            "replay's under the call that launched it";
  t.columns = {"Calls", "Per unit", "Self CPU (ns)", "CPU total (ns)", "Self device (ns)",
               "Device total (ns)", "Input Shapes", "Name"};
  std::vector<OpStat> stats = KeyAverages(*x.trace, true);
  for (const OpStat& s : stats) {
    Cell per_unit = std::string("-");
    if (!x.units.empty()) {
      auto it = x.counts.op_calls.find(s.name);
      per_unit = x.counts.PerUnit(it == x.counts.op_calls.end() ? 0.0 : static_cast<double>(it->second));
    }
    t.AddRow({s.calls, per_unit, static_cast<double>(s.self_cpu_ns), static_cast<double>(s.cpu_total_ns),
              static_cast<double>(s.self_device_ns), static_cast<double>(s.device_total_ns),
              s.input_dims.empty() ? "-" : ShapesText(s.input_dims), s.name});
  }
  if (!x.units.empty()) t.notes.push_back("Per unit counts all shapes of an operator together.");
  return t;
}

}  // namespace

Table SumTable(const TraceIndex& x, const std::string& name, const std::string& title,
               const std::vector<size_t>& idx) {
  Table t;
  t.name = name;
  t.title = title;
  t.columns = {"Time (%)", "Total Time (ns)", "Instances", "Avg (ns)", "Med (ns)", "Min (ns)",
               "Max (ns)", "StdDev (ns)", "Name"};
  double total = 0;
  for (size_t i : idx) total += static_cast<double>(x.E(i).dur_ns);
  struct Row {
    std::string name;
    Summary s;
  };
  std::vector<Row> rows;
  for (auto& [n, members] : ByName(x, idx)) rows.push_back({n, Summarize(Durations(x, members))});
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.s.total > b.s.total; });
  for (const Row& r : rows) {
    t.AddRow({total > 0 ? 100.0 * r.s.total / total : 0.0, r.s.total, r.s.count, r.s.mean, r.s.median,
              r.s.min, r.s.max, r.s.stddev, r.name});
  }
  return t;
}


std::vector<std::pair<double, std::string>> KernelsByTime(const TraceIndex& x) {
  std::map<std::string, double> by_name;
  for (size_t k : x.kernels) by_name[std::string(x.Name(k))] += static_cast<double>(x.E(k).dur_ns);
  std::vector<std::pair<double, std::string>> v;
  for (auto& [n, ns] : by_name) v.push_back({ns, n});
  std::sort(v.rbegin(), v.rend());
  return v;
}

int TraceIndex::UnitAt(int64_t ts) const { return tierscope::UnitAt(units, ts); }

int64_t TraceIndex::LaunchTime(size_t i) const {
  const Event& e = trace->events[i];
  if (e.correlation != 0) {
    auto it = runtime_by_corr.find(e.correlation);
    if (it != runtime_by_corr.end()) return trace->events[it->second].ts_ns;
  }
  return e.ts_ns;
}

std::vector<int64_t> OpParents(const TraceIndex& x) {
  std::vector<size_t> order = x.ops;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Event &p = x.E(a), &q = x.E(b);
    return std::tie(p.pid, p.tid, p.ts_ns, q.dur_ns) < std::tie(q.pid, q.tid, q.ts_ns, p.dur_ns);
  });
  std::vector<int64_t> parents(x.trace->events.size(), -1);
  std::vector<size_t> stack;
  for (size_t i : order) {
    const Event& e = x.E(i);
    while (!stack.empty()) {
      const Event& top = x.E(stack.back());
      if (top.pid != e.pid || top.tid != e.tid || e.ts_ns >= top.ts_ns + top.dur_ns) stack.pop_back();
      else break;
    }
    parents[i] = stack.empty() ? -1 : static_cast<int64_t>(stack.back());
    stack.push_back(i);
  }
  return parents;
}

TraceIndex BuildIndex(const Trace& t, const AnalysisOptions& o) {
  TraceIndex x;
  x.trace = &t;
  if (t.runtime == "musa") x.prefix = "musa";
  else if (t.runtime == "hip") x.prefix = "hip";
  else if (t.runtime == "cann") x.prefix = "cann";
  x.device_begin_ns = INT64_MAX;
  x.device_end_ns = INT64_MIN;
  for (size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    switch (e.kind) {
      case EventKind::kOp: x.ops.push_back(i); break;
      case EventKind::kAnnotation: x.annotations.push_back(i); break;
      case EventKind::kRuntime: x.runtime.push_back(i); break;
      case EventKind::kKernel: x.kernels.push_back(i); break;
      case EventKind::kMemcpy:
      case EventKind::kMemset: x.memops.push_back(i); break;
      case EventKind::kSync: x.syncs.push_back(i); break;
      case EventKind::kMemory: x.memory.push_back(i); break;
      default: break;
    }
    if (IsDeviceWork(e.kind)) {
      x.device_begin_ns = std::min(x.device_begin_ns, e.ts_ns);
      x.device_end_ns = std::max(x.device_end_ns, e.ts_ns + e.dur_ns);
    }
  }
  if (x.device_begin_ns > x.device_end_ns) x.device_begin_ns = x.device_end_ns = 0;
  // The correlation tables, sized once and filled with the slots asked for ahead (they are
  // far larger than the caches on a big trace).
  const auto corr = [&](const std::vector<size_t>& list, size_t j) { return t.events[list[j]].correlation; };
  x.runtime_by_corr.reserve(x.runtime.size());
  ForEachPrefetched(
      x.runtime.size(), [&](size_t j) { x.runtime_by_corr.Prefetch(corr(x.runtime, j)); },
      [&](size_t j) {
        if (const int64_t c = corr(x.runtime, j); c != 0) x.runtime_by_corr.emplace(c, x.runtime[j]);
      });
  // The launches (runtime calls with device work of their correlation) from the host times
  // the per-unit counts need too: their tables are built once.
  const HostTimes host(t);
  ForEachPrefetched(
      x.runtime.size(), [&](size_t j) { host.Prefetch(t.events[x.runtime[j]]); },
      [&](size_t j) {
        if (host.IsLaunch(t.events[x.runtime[j]])) x.launches.push_back(x.runtime[j]);
      });
  // Work units: the requested annotation, else ProfilerStep#N, else the study's scopes.
  x.units = FindWorkUnits(t, o.unit, &x.unit_name);
  x.counts = CountPerUnit(t, x.units, x.unit_name, host);
  return x;
}

std::vector<std::string> ReportNames() {
  return {"op_sum", "cuda_gpu_kern_sum", "cuda_api_sum", "cuda_gpu_sum", "cuda_gpu_mem_time_sum",
          "cuda_gpu_mem_size_sum", "cuda_kern_exec_sum", "cuda_api_gpu_sum", "in_use", "gaps",
          "short_kernels", "units", "hot_kernels", "nvtx_sum", "nvtx_kern_sum", "op_roofline", "roofline_sum", "nccl_sum", "trace_quality"};
}

std::vector<std::string> OnDemandReportNames() { return {"critical_path", "critical_path_events"}; }

std::vector<std::pair<std::string, std::string>> ReportCatalog() {
  // The titles are the reports' own: each report run on an empty trace.
  const Trace empty;
  const AnalysisOptions options;
  const TraceIndex index = BuildIndex(empty, options);
  std::vector<std::string> names = ReportNames();
  for (const std::string& n : GpuTimeReportNames()) names.push_back(n);
  for (const std::string& n : OnDemandReportNames()) names.push_back(n);
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& n : names) {
    StatusOr<Table> t = RunReport(index, n, options);
    out.emplace_back(n, t.ok() ? t->title : t.status().message());
  }
  return out;
}

StatusOr<Table> RunReport(const TraceIndex& x, const std::string& requested, const AnalysisOptions& o) {
  std::string name = requested;
  for (const char* p : {"musa_", "hip_", "cann_", "cuda_"}) {
    if (StartsWith(name, p)) name = "cuda_" + name.substr(std::string(p).size());
  }
  Table t;
  if (name == "op_sum") t = OpSum(x);
  else if (name == "cuda_gpu_kern_sum") t = KernSum(x);
  else if (name == "cuda_api_sum") t = ApiSum(x);
  else if (name == "cuda_gpu_sum") t = GpuSum(x);
  else if (name == "cuda_gpu_mem_time_sum") t = MemTimeSum(x);
  else if (name == "cuda_gpu_mem_size_sum") t = MemSizeSum(x);
  else if (name == "cuda_kern_exec_sum") t = KernExecSum(x);
  else if (name == "cuda_api_gpu_sum") t = ApiGpuSum(x);
  else if (name == "in_use") t = InUseTable(x);
  else if (name == "gaps") t = GapsTable(x);
  else if (name == "short_kernels") t = ShortKernels(x, o);
  else if (name == "units") t = UnitsTable(x);
  else if (name == "hot_kernels") t = HotKernels(x, o);
  else if (name == "nvtx_sum") t = NvtxSum(x);
  else if (name == "nvtx_kern_sum") t = NvtxKernSum(x);
  else if (name == "op_roofline") t = OpRooflineTable(AnalyzeOpRoofline(x, o.device_spec));
  else if (name == "roofline_sum") t = RooflineSumTable(AnalyzeOpRoofline(x, o.device_spec));
  else if (name == "trace_quality") t = TraceQualityTable(CheckTraceQuality(x));
  else if (name == "nccl_sum") t = NcclSumTable(x, o.device_spec);
  else if (name == "critical_path") t = CriticalPathTable(AnalyzeCriticalPaths(x));
  else if (name == "critical_path_events") t = CriticalPathEventsTable(x, AnalyzeCriticalPaths(x));
  else if (const auto& g = GpuTimeReportNames(); std::find(g.begin(), g.end(), name) != g.end()) {
    const GpuTime gpu = AnalyzeGpuTime(x);
    const std::vector<Table> all = GpuTimeTables({{x.trace->rank >= 0 ? x.trace->rank : 0, &gpu}});
    t = all[static_cast<size_t>(std::find(g.begin(), g.end(), name) - g.begin())];
  } else {
    std::string valid;
    for (const auto& n : ReportNames()) valid += (valid.empty() ? "" : ", ") + n;
    for (const auto& n : GpuTimeReportNames()) valid += ", " + n;
    for (const auto& n : OnDemandReportNames()) valid += ", " + n;
    return InvalidArgument("unknown report '" + requested + "' (valid: " + valid +
                           "; musa_*, hip_* and cann_* are aliases of cuda_*)");
  }
  return t;
}

namespace {

// Each device's kernels and memory operations as [start, end) intervals, sorted.
std::map<int32_t, std::vector<std::pair<int64_t, int64_t>>> DeviceIntervals(const TraceIndex& x) {
  std::map<int32_t, std::vector<std::pair<int64_t, int64_t>>> by_dev;
  for (const auto* v : {&x.kernels, &x.memops}) {
    for (size_t i : *v) by_dev[x.E(i).pid].push_back({x.E(i).ts_ns, x.E(i).ts_ns + x.E(i).dur_ns});
  }
  for (auto& [dev, iv] : by_dev) SortUnlessSorted(iv.begin(), iv.end());
  return by_dev;
}

}  // namespace

InUse DeviceInUse(const TraceIndex& x) {
  InUse u;
  for (const auto& [dev, iv] : DeviceIntervals(x)) {
    int64_t busy = 0, cur_b = iv[0].first, cur_e = iv[0].second;
    for (const auto& [b, e] : iv) {
      if (b > cur_e) {
        busy += cur_e - cur_b;
        cur_b = b;
        cur_e = e;
      } else {
        cur_e = std::max(cur_e, e);
      }
    }
    busy += cur_e - cur_b;
    int64_t lo = iv.front().first, hi = 0;
    for (const auto& p : iv) hi = std::max(hi, p.second);
    u.busy_ns += static_cast<double>(busy);
    u.window_ns += static_cast<double>(hi - lo);
  }
  return u;
}

std::vector<int64_t> DeviceGaps(const TraceIndex& x) {
  std::vector<int64_t> gaps;
  for (const auto& [dev, iv] : DeviceIntervals(x)) {
    int64_t end = iv[0].second;
    for (const auto& [b, e] : iv) {
      if (b > end) gaps.push_back(b - end);
      end = std::max(end, e);
    }
  }
  return gaps;
}

}  // namespace tierscope
