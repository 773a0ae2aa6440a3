// The text helpers that are more than a line: size lists, decimal numbers.
#include "core/text.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

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
    const bool digits = !item.empty() && std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (digits && (used != item.size() || v > 1'000'000)) {  // out of range for stoll, or above the cap
      return InvalidArgument(flag + ": '" + item + "' is above 1000000, the most it takes");
    }
    if (used != item.size() || v < 1) {
      return InvalidArgument(flag + ": '" + item + "' is not a positive integer");
    }
    out.push_back(v);
  }
  if (out.empty()) return InvalidArgument(flag + ": empty list");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::optional<double> ParseDecimal(std::string_view text) {
  // Digits, one point, an exponent, signs: what strtod reads besides is hex, inf and nan.
  const bool decimal = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-';
  });
  if (!decimal) return std::nullopt;
  const std::string whole(text);
  char* end = nullptr;
  const double v = std::strtod(whole.c_str(), &end);
  if (end != whole.c_str() + whole.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace tierscope
