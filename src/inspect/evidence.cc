// KernelEvidence from tierscope's replay, from an ncu CSV, and from a trace.
#include "inspect/evidence.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "analysis/reports.h"
#include "core/stats.h"
#include "inspect/occupancy.h"
#include "trace/args.h"

namespace tierscope {
namespace {

void SetDurations(KernelEvidence& e, const std::vector<double>& ns) {
  if (ns.empty()) return;
  const Summary s = Summarize(ns);
  e.duration_ns = s.median;
  e.duration_min_ns = s.min;
  e.duration_max_ns = s.max;
  e.samples = s.count;
  if (ns.size() >= 2) e.duration_cv = s.cv();
}

}  // namespace

std::optional<Dim3> ParseDim3(std::string_view text) {
  std::vector<int64_t> v;
  int64_t cur = 0;
  bool in_num = false;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      if (cur > (int64_t{1} << 40)) return std::nullopt;
      cur = cur * 10 + (c - '0');
      in_num = true;
    } else if (c == ',' || c == ' ' || c == '(' || c == ')' || c == '[' || c == ']') {
      if (in_num) v.push_back(cur);
      cur = 0;
      in_num = false;
    } else {
      return std::nullopt;
    }
  }
  if (in_num) v.push_back(cur);
  if (v.empty() || v.size() > 3) return std::nullopt;
  Dim3 d;
  d.x = v[0];
  if (v.size() > 1) d.y = v[1];
  if (v.size() > 2) d.z = v[2];
  if (d.count() <= 0) return std::nullopt;
  return d;
}

KernelEvidence EvidenceFromReplay(const ProfiledLaunch& p, const KernelInspector& inspector,
                                  const MachinePeaks& peaks, const DeviceProps& props,
                                  const std::string& device) {
  KernelEvidence e;
  e.source = "tierscope replay";
  e.kernel = p.kernel;
  e.device = device;
  e.id = p.id;
  e.grid = p.grid;
  e.block = p.block;
  e.units = p.workers;
  e.unit_name = "workers";
  if (props.kind != "cpu") {
    e.unit_name = "SMs";
    e.units = props.compute_units;
    if (p.shared_bytes > 0) e.shared_bytes = static_cast<double>(p.shared_bytes);
    if (!p.device_timed) {
      e.source += " (CUDA-event timing: durations include the launch latency)";
    }
    if (const auto& d = p.device) {  // what the device ran (a library call picks its own grid)
      e.device_kernel = d->name;
      e.device_kernels = d->kernels;
      e.grid = d->grid;
      e.block = d->block;
      if (d->registers_per_thread > 0) e.registers = d->registers_per_thread;
      e.shared_bytes = static_cast<double>(d->shared_bytes);
      if (auto occ = TheoreticalOccupancy(props, d->grid, d->block, d->registers_per_thread,
                                          d->shared_bytes)) {
        e.theoretical_occupancy = occ->theoretical_pct;
        e.waves = occ->waves;
        e.blocks_per_unit = occ->blocks_per_unit;
        e.occupancy_limiter = occ->limiter;
      }
    }
  }
  std::vector<double> ns(p.pass_ns.begin(), p.pass_ns.end());
  SetDurations(e, ns);
  e.passes = static_cast<int>(p.pass_ns.size());
  e.flops = p.flops;
  e.bytes_read = p.bytes_read;
  e.bytes_written = p.bytes_written;
  e.pipe = p.pipe;
  e.peak_flops = peaks.PeakFlops(p.pipe);
  e.peak_bw = peaks.mem_bw;
  if (!p.pass_busy.empty()) e.busy_pct = Summarize(p.pass_busy).median * 100;
  e.worker_tasks = p.worker_tasks;
  e.caches_flushed = inspector.options().flush_caches;
  const auto tallies = inspector.Tallies();
  for (size_t i = 0; i < tallies.size(); ++i) {
    if (tallies[i].kernel != p.kernel) continue;
    if (inspector.total_kernel_ns() > 0) {
      e.hot_share = static_cast<double>(tallies[i].total_ns) /
                    static_cast<double>(inspector.total_kernel_ns());
    }
    e.hot_rank = static_cast<int>(i) + 1;
  }
  return e;
}

KernelEvidence EvidenceFromNcu(const NcuKernel& k, const std::string& source) {
  KernelEvidence e;
  e.source = "ncu CSV " + source;
  e.missing = "(not in this CSV)";
  for (const NcuMetric& m : k.metrics) {
    if (m.set_aside) e.missing = "(not in this CSV, or set aside: see the note)";
  }
  e.kernel = k.name;
  e.device = k.device;
  e.id = k.id;
  e.unit_name = "SMs";
  e.grid = ParseDim3(k.grid_size);
  e.block = ParseDim3(k.block_size);
  const auto value = [&](std::string_view name) { return k.Value(name); };
  if (const NcuMetric* m = k.Find("Duration"); m != nullptr && m->has_value) {
    double scale = 1;  // to ns
    if (m->unit == "usecond" || m->unit == "us") scale = 1e3;
    else if (m->unit == "msecond" || m->unit == "ms") scale = 1e6;
    else if (m->unit == "second" || m->unit == "s") scale = 1e9;
    e.duration_ns = m->value * scale;
    e.samples = 1;
  }
  e.compute_pct = value("Compute (SM) Throughput");
  e.memory_pct = value("Memory Throughput");
  e.dram_pct = value("DRAM Throughput");
  e.registers = value("Registers Per Thread");
  e.achieved_occupancy = value("Achieved Occupancy");
  e.theoretical_occupancy = value("Theoretical Occupancy");
  e.waves = value("Waves Per SM");
  e.units = value("# SMs");
  // DRAM traffic when the run asked for it (--metrics dram__bytes_read.sum,...; in bytes
  // with --print-units base, as the lab's ncu step runs it).
  const auto bytes = [&](std::string_view name) -> std::optional<double> {
    const NcuMetric* m = k.Find(name);
    if (m == nullptr || !m->has_value) return std::nullopt;
    if (m->unit == "byte") return m->value;
    if (m->unit == "Kbyte") return m->value * 1e3;
    if (m->unit == "Mbyte") return m->value * 1e6;
    if (m->unit == "Gbyte") return m->value * 1e9;
    return std::nullopt;  // a unit this reader does not know: no number rather than a wrong one
  };
  e.bytes_read = bytes("dram__bytes_read.sum");
  e.bytes_written = bytes("dram__bytes_write.sum");
  // LaunchStats' "Grid Size" is the block count; the row's Grid Size is the shape.
  if (!e.grid) {
    if (auto blocks = value("Grid Size")) e.grid = Dim3{static_cast<int64_t>(*blocks), 1, 1};
  }
  if (!e.block) {
    if (auto threads = value("Block Size")) e.block = Dim3{static_cast<int64_t>(*threads), 1, 1};
  }
  return e;
}

void AddTraceEvidence(KernelEvidence& e, const KernelEvidence& trace) {
  e.hot_share = trace.hot_share;
  e.hot_rank = trace.hot_rank;
  e.duration_cv = trace.duration_cv;
  e.samples = trace.samples;
  // ncu's duration is its profiled launch's (serialised, with the counters' overhead: on an
  // H200 a 4-5 us GEMM read 6.9 us): the trace's min and max would contradict it, so only
  // the spread comes from the trace unless ncu gave no duration.
  if (!e.duration_ns) {
    e.duration_ns = trace.duration_ns;
    e.duration_min_ns = trace.duration_min_ns;
    e.duration_max_ns = trace.duration_max_ns;
  }
  if (!e.grid) e.grid = trace.grid;
  if (!e.block) e.block = trace.block;
  e.source += " + " + trace.source + " (share of kernel time and duration spread over " +
              std::to_string(trace.samples) + " launches)";
}

StatusOr<KernelEvidence> EvidenceFromTrace(const Trace& t, const std::string& name) {
  std::map<std::string, std::vector<size_t>, std::less<>> by_name;
  double total = 0;
  for (size_t i = 0; i < t.events.size(); ++i) {
    const Event& ev = t.events[i];
    if (ev.kind != EventKind::kKernel) continue;
    by_name[std::string(t.strings.Get(ev.name))].push_back(i);
    total += static_cast<double>(ev.dur_ns);
  }
  if (by_name.empty()) return NotFound(t.source + ": the trace has no kernel events");
  std::vector<std::pair<double, std::string>> ranked;
  for (const auto& [n, idx] : by_name) {
    double s = 0;
    for (size_t i : idx) s += static_cast<double>(t.events[i].dur_ns);
    ranked.push_back({s, n});
  }
  std::sort(ranked.rbegin(), ranked.rend());
  TS_ASSIGN_OR_RETURN(const KernelNameMatcher matcher, KernelNameMatcher::Create(name));
  int rank = 0;
  for (size_t r = 0; r < ranked.size() && rank == 0; ++r) {
    if (matcher.Matches(ranked[r].second)) rank = static_cast<int>(r) + 1;
  }
  if (rank == 0) {
    std::string hot;
    for (size_t r = 0; r < ranked.size() && r < 10; ++r) hot += "\n  " + ranked[r].second;
    return NotFound("no kernel in " + t.source + " matches -k " + name + "; the hottest are:" + hot);
  }
  const std::string& chosen = ranked[static_cast<size_t>(rank - 1)].second;
  const std::vector<size_t>& idx = by_name.find(chosen)->second;
  KernelEvidence e;
  e.source = "trace " + t.source;
  e.missing = "(not in this trace)";
  e.kernel = chosen;
  e.device = t.device_name;
  e.id = -1;
  e.unit_name = t.runtime == "cpu" ? "workers" : "SMs";
  if (t.device_units > 0) e.units = t.device_units;
  std::vector<double> ns;
  for (size_t i : idx) ns.push_back(static_cast<double>(t.events[i].dur_ns));
  SetDurations(e, ns);
  e.hot_rank = rank;
  if (total > 0) e.hot_share = ranked[static_cast<size_t>(rank - 1)].first / total;
  const Event& first = t.events[idx.front()];
  if (first.args >= 0) {
    const std::string_view args = t.strings.Get(first.args);
    e.grid = ParseDim3(ArgValue(args, "grid"));
    e.block = ParseDim3(ArgValue(args, "block"));
    const std::string regs(ArgValue(args, "registers per thread"));
    if (!regs.empty()) e.registers = std::atof(regs.c_str());
  }
  // tierscope's own traces carry the cost model (FLOPs, bytes) on each kernel.
  if (first.v0 > 0) e.flops = first.v0;
  if (first.v1 > 0) e.bytes_moved = first.v1;
  return e;
}

}  // namespace tierscope
