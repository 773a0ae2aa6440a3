// The text helpers that are more than a line: size lists.
#include "core/text.h"

#include <algorithm>

namespace tierscope {

StatusOr<std::vector<int64_t>> ParseSizeList(const std::string& list, const std::string& flag) {
  std::vector<int64_t> out;
  for (const std::string& item : SplitList(list)) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || v < 1 || v > 1'000'000) {
      return InvalidArgument(flag + ": '" + item + "' is not a positive integer");
    }
    out.push_back(v);
  }
  if (out.empty()) return InvalidArgument(flag + ": empty list");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace tierscope
