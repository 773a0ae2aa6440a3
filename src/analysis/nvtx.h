// NVTX and annotation ranges, as Nsight Systems reports them: nvtx_sum (the ranges) and
// nvtx_kern_sum (each kernel projected onto every range that launched it). Ranges come
// from nsys NVTX_EVENTS and Kineto user_annotation (host: a kernel belongs to the ranges
// open on its launching thread when it was launched) and gpu_user_annotation (device: the
// ranges on its stream when it started). The join is a sweep per thread / stream, so it
// stays O((ranges + kernels) log ranges) at millions of ranges.
#ifndef TIERSCOPE_ANALYSIS_NVTX_H_
#define TIERSCOPE_ANALYSIS_NVTX_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/int_map.h"

#include "analysis/gpu_time.h"
#include "analysis/reports.h"
#include "analysis/table.h"

namespace tierscope {

Table NvtxSum(const TraceIndex& index);
Table NvtxKernSum(const TraceIndex& index);

// nvtx_kern_sum's figures in a mergeable form (a job adds its ranks'): per (range, side,
// kernel name), the kernels' durations and the range instances that launched them.
struct RangeKernels {
  int64_t range_instances = 0;
  KernelTotals kernels;
};

// (range, side, kernel name) -> RangeKernels, each name held once: a big rank has about
// 10^5 such triples of 10^3 names, kept for the whole job (a map keyed by three strings
// took 77 MB a GB of JSON). Entries stay in the order they were added.
class RangeKernelMap {
 public:
  // The entry for (range, side, kernel), added empty when absent. `side` is "host" or
  // "device" (at most four sides).
  RangeKernels& At(std::string_view range, std::string_view side, std::string_view kernel) {
    return cells_[IndexOf(range, side, kernel)].value;
  }
  // The position of (range, side, kernel) in the order entries were added (added empty
  // when absent), and the entry at a position.
  size_t IndexOf(std::string_view range, std::string_view side, std::string_view kernel);
  RangeKernels& at(size_t i) { return cells_[i].value; }
  // The (range, side, kernel) names of the entry at a position.
  std::tuple<std::string_view, std::string_view, std::string_view> NamesAt(size_t i) const {
    const Cell& c = cells_[i];
    return {names_[c.range], sides_[c.side], names_[c.kernel]};
  }
  // Drops the lookup table and spare room: a rank's map is then only read (ForEach) for
  // the rest of the job, at half the memory. The next At or IndexOf rebuilds the table.
  void Compact();
  // f(range, side, kernel, cell) for every entry, in the order they were added.
  template <typename F>
  void ForEach(F&& f) const {
    for (const Cell& c : cells_) f(names_[c.range], sides_[c.side], names_[c.kernel], c.value);
  }
  size_t size() const { return cells_.size(); }

 private:
  struct Cell {
    int32_t range, kernel, side;
    RangeKernels value;
  };
  int32_t NameId(std::string_view name);
  static int64_t KeyOf(const Cell& c) {
    return static_cast<int64_t>((static_cast<uint64_t>(c.range) << 33) | (static_cast<uint64_t>(c.kernel) << 2) |
                                static_cast<uint64_t>(c.side));
  }
  std::vector<std::string> names_;
  std::map<std::string, int32_t, std::less<>> ids_;
  std::vector<std::string> sides_;
  std::vector<Cell> cells_;
  IntMap<int32_t> index_;  // (range << 33 | kernel << 2 | side) -> cell
};

RangeKernelMap NvtxKernTotals(const TraceIndex& index);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_NVTX_H_
