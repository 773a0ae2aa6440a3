// Sorting what is mostly sorted already: a trace's events come in time order per stream
// and nearly so across streams (a few inversions where streams interleave). Its ascending
// runs are found in one pass and merged pairwise — n log(runs) moves instead of n log n
// indirect compares — and only input with many runs goes to std::sort. Equal elements keep
// their order when the runs are merged (std::sort makes no such promise: callers must not
// depend on the order of ties).
#ifndef TIERSCOPE_CORE_SORT_H_
#define TIERSCOPE_CORE_SORT_H_

#include <algorithm>
#include <functional>
#include <vector>

namespace tierscope {

template <typename It, typename Less = std::less<>>
void SortUnlessSorted(It first, It last, Less less = {}) {
  constexpr size_t kMaxRuns = 64;
  std::vector<It> bounds{first};  // each run's start, then `last`
  for (It it = first; it != last;) {
    it = std::is_sorted_until(it, last, less);
    if (it == last) break;
    if (bounds.size() == kMaxRuns) {
      std::sort(first, last, less);
      return;
    }
    bounds.push_back(it);
  }
  bounds.push_back(last);
  while (bounds.size() > 2) {
    const size_t runs = bounds.size() - 1;
    std::vector<It> merged{bounds[0]};
    size_t i = 0;
    for (; i + 2 <= runs; i += 2) {
      std::inplace_merge(bounds[i], bounds[i + 1], bounds[i + 2], less);
      merged.push_back(bounds[i + 2]);
    }
    if (i < runs) merged.push_back(bounds[runs]);  // an odd run out waits for the next round
    bounds = std::move(merged);
  }
}

}  // namespace tierscope

#endif  // TIERSCOPE_CORE_SORT_H_
