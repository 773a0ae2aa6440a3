// nvtx_sum and nvtx_kern_sum: ranges, and kernels projected onto the ranges that launched
// them (a sweep per thread or stream).
#include "analysis/nvtx.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "core/sort.h"
#include "core/stats.h"

namespace tierscope {
namespace {

using Lane = std::pair<int32_t, int32_t>;  // (pid, tid): a host thread or a device stream

struct Point {
  int64_t t;
  size_t kernel;  // event index
};

// Per (range name, side, kernel name): the kernels' durations and the range instances.
struct Projection {
  std::vector<double> kernel_ns;
  std::vector<size_t> ranges;  // range event indexes (deduplicated at the end)
};
using ProjectionKey = std::tuple<std::string, std::string, std::string>;
// The same key by interned names during the sweep (no string built per kernel).
using IdKey = std::tuple<int32_t, int, int32_t>;  // (range name, side: 0 host / 1 device, kernel name)

// For every point, every range of `ranges` (same lane) with start <= t <= end:
// add(range event, kernel event).
template <typename Add>
void Sweep(const TraceIndex& x, std::vector<size_t> ranges, std::vector<Point> points, Add&& add) {
  SortUnlessSorted(ranges.begin(), ranges.end(), [&](size_t a, size_t b) { return x.E(a).ts_ns < x.E(b).ts_ns; });
  SortUnlessSorted(points.begin(), points.end(), [](const Point& a, const Point& b) { return a.t < b.t; });
  const auto end_of = [&](size_t r) { return x.E(r).ts_ns + x.E(r).dur_ns; };
  const auto later_end = [&](size_t a, size_t b) { return end_of(a) > end_of(b); };
  // A heap on end time (earliest on top): after popping the ended ones, every range in it
  // is open at p.t, so its storage is the active set.
  std::vector<size_t> open;
  size_t next = 0;
  for (const Point& p : points) {
    while (next < ranges.size() && x.E(ranges[next]).ts_ns <= p.t) {
      open.push_back(ranges[next++]);
      std::push_heap(open.begin(), open.end(), later_end);
    }
    while (!open.empty() && end_of(open.front()) < p.t) {
      std::pop_heap(open.begin(), open.end(), later_end);
      open.pop_back();
    }
    for (size_t r : open) add(r, p.kernel);
  }
}

std::vector<size_t> GpuAnnotations(const TraceIndex& x) {
  std::vector<size_t> v;
  for (size_t i = 0; i < x.trace->events.size(); ++i) {
    if (x.trace->events[i].kind == EventKind::kGpuAnnotation) v.push_back(i);
  }
  return v;
}

}  // namespace

Table NvtxSum(const TraceIndex& x) {
  std::vector<size_t> host = x.annotations, device = GpuAnnotations(x);
  Table h = SumTable(x, "nvtx_sum", "", host);
  Table d = SumTable(x, "nvtx_sum", "", device);
  Table t;
  t.name = "nvtx_sum";
  t.title = "NVTX and annotation ranges (host: NVTX_EVENTS, user_annotation; device: gpu_user_annotation)";
  t.columns = h.columns;
  t.columns.back() = "Range";
  t.columns.insert(t.columns.end() - 1, "Side");
  for (auto [side, tb] : {std::pair{"host", &h}, {"device", &d}}) {
    for (auto& row : tb->rows) {
      row.insert(row.end() - 1, std::string(side));
      t.AddRow(std::move(row));
    }
  }
  return t;
}

namespace {

// Every kernel onto every range open at its launch (host) or start (device):
// add(range event, kernel event, side) for each.
template <typename Add>
void Project(const TraceIndex& x, Add&& add) {
  // Host ranges: kernels by the host time and thread of their launch.
  std::map<Lane, std::vector<size_t>> host_ranges;
  for (size_t r : x.annotations) host_ranges[{x.E(r).pid, x.E(r).tid}].push_back(r);
  std::map<Lane, std::vector<Point>> launches;
  for (size_t k : x.kernels) {
    const Event& e = x.E(k);
    if (e.correlation == 0) continue;
    auto it = x.runtime_by_corr.find(e.correlation);
    if (it == x.runtime_by_corr.end()) continue;
    const Event& l = x.E(it->second);
    launches[{l.pid, l.tid}].push_back({l.ts_ns, k});
  }
  for (auto& [lane, ranges] : host_ranges) {
    auto it = launches.find(lane);
    if (it != launches.end()) {
      Sweep(x, std::move(ranges), std::move(it->second), [&](size_t r, size_t k) { add(r, k, 0); });
    }
  }
  // Device ranges: kernels on the same stream by their start.
  std::map<Lane, std::vector<size_t>> device_ranges;
  for (size_t r : GpuAnnotations(x)) device_ranges[{x.E(r).pid, x.E(r).tid}].push_back(r);
  std::map<Lane, std::vector<Point>> starts;
  for (size_t k : x.kernels) starts[{x.E(k).pid, x.E(k).tid}].push_back({x.E(k).ts_ns, k});
  for (auto& [lane, ranges] : device_ranges) {
    auto it = starts.find(lane);
    if (it != starts.end()) {
      Sweep(x, std::move(ranges), std::move(it->second), [&](size_t r, size_t k) { add(r, k, 1); });
    }
  }
}

ProjectionKey NamesOf(const TraceIndex& x, const IdKey& k) {
  return {std::string(x.trace->strings.Get(std::get<0>(k))), std::get<1>(k) == 0 ? "host" : "device",
          std::string(x.trace->strings.Get(std::get<2>(k)))};
}

int64_t Distinct(std::vector<size_t>& v) {
  std::sort(v.begin(), v.end());
  return std::unique(v.begin(), v.end()) - v.begin();
}

}  // namespace

int32_t RangeKernelMap::NameId(std::string_view name) {
  auto it = ids_.find(name);
  if (it != ids_.end()) return it->second;
  const int32_t id = static_cast<int32_t>(names_.size());
  names_.emplace_back(name);
  ids_.emplace(names_.back(), id);
  return id;
}

size_t RangeKernelMap::IndexOf(std::string_view range, std::string_view side, std::string_view kernel) {
  const auto s = std::find(sides_.begin(), sides_.end(), side);
  const int32_t side_id = static_cast<int32_t>(s - sides_.begin());
  if (s == sides_.end()) {
    if (sides_.size() == 4) throw std::length_error("RangeKernelMap: a fifth side '" + std::string(side) + "'");
    sides_.emplace_back(side);
  }
  const int32_t r = NameId(range), k = NameId(kernel);
  if (index_.empty() && !cells_.empty()) {  // compacted: the table again
    index_.reserve(cells_.size());
    for (size_t i = 0; i < cells_.size(); ++i) index_.emplace(KeyOf(cells_[i]), static_cast<int32_t>(i));
  }
  const Cell cell{r, k, side_id, RangeKernels{}};
  auto [slot, added] = index_.emplace(KeyOf(cell), static_cast<int32_t>(cells_.size()));
  if (added) cells_.push_back(cell);
  return static_cast<size_t>(slot->second);
}

void RangeKernelMap::Compact() {
  index_ = IntMap<int32_t>();
  cells_.shrink_to_fit();
}

RangeKernelMap NvtxKernTotals(const TraceIndex& x) {
  std::map<IdKey, std::pair<KernelTotals, std::vector<size_t>>> by_id;  // -> (durations, ranges)
  Project(x, [&](size_t r, size_t k, int side) {
    auto& cell = by_id[{x.E(r).name, side, x.E(k).name}];
    cell.first.Add(x.E(k).dur_ns);
    // One entry per run of kernels in one range instance (Distinct counts instances).
    if (cell.second.empty() || cell.second.back() != r) cell.second.push_back(r);
  });
  RangeKernelMap out;
  for (auto& [key, cell] : by_id) {
    const ProjectionKey names = NamesOf(x, key);
    RangeKernels& rk = out.At(std::get<0>(names), std::get<1>(names), std::get<2>(names));
    rk.kernels.Merge(cell.first);
    rk.range_instances += Distinct(cell.second);
  }
  out.Compact();  // kept for the whole job
  return out;
}

Table NvtxKernSum(const TraceIndex& x) {
  std::map<IdKey, Projection> by_id;
  Project(x, [&](size_t r, size_t k, int side) {
    Projection& p = by_id[{x.E(r).name, side, x.E(k).name}];
    p.kernel_ns.push_back(static_cast<double>(x.E(k).dur_ns));
    p.ranges.push_back(r);
  });
  std::map<ProjectionKey, Projection> proj;
  for (auto& [key, p] : by_id) {
    Projection& q = proj[NamesOf(x, key)];
    q.kernel_ns.insert(q.kernel_ns.end(), p.kernel_ns.begin(), p.kernel_ns.end());
    q.ranges.insert(q.ranges.end(), p.ranges.begin(), p.ranges.end());
  }
  Table t;
  t.name = "nvtx_kern_sum";
  t.title = "Kernels projected onto the NVTX / annotation ranges that launched them";
  t.columns = {"Range", "Side", "Range Inst", "Kern Inst", "Total Time (ns)", "Avg (ns)", "Med (ns)",
               "Min (ns)", "Max (ns)", "StdDev (ns)", "Kernel Name"};
  struct Row {
    const ProjectionKey* key;
    Summary s;
    int64_t range_instances;
  };
  std::vector<Row> rows;
  for (auto& [key, p] : proj) rows.push_back({&key, Summarize(std::move(p.kernel_ns)), Distinct(p.ranges)});
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    if (std::get<0>(*a.key) != std::get<0>(*b.key)) return std::get<0>(*a.key) < std::get<0>(*b.key);
    return a.s.total > b.s.total;
  });
  for (const Row& r : rows) {
    t.AddRow({std::get<0>(*r.key), std::get<1>(*r.key), r.range_instances, r.s.count, r.s.total, r.s.mean,
              r.s.median, r.s.min, r.s.max, r.s.stddev, std::get<2>(*r.key)});
  }
  return t;
}

}  // namespace tierscope
