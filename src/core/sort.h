// Sorting what is usually sorted already: a trace's events come mostly in time order per
// stream, so checking first costs one pass where sorting costs n log n indirect compares.
#ifndef TIERSCOPE_CORE_SORT_H_
#define TIERSCOPE_CORE_SORT_H_

#include <algorithm>
#include <functional>

namespace tierscope {

template <typename It, typename Less = std::less<>>
void SortUnlessSorted(It first, It last, Less less = {}) {
  if (!std::is_sorted(first, last, less)) std::sort(first, last, less);
}

}  // namespace tierscope

#endif  // TIERSCOPE_CORE_SORT_H_
