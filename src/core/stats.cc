// Percentiles, medians and summaries: the one definition.
#include "core/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tierscope {

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty() || std::isnan(p)) return std::numeric_limits<double>::quiet_NaN();
  p = std::clamp(p, 0.0, 100.0);
  const double pos = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(sorted.size() - 1, lo + 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

Summary Summarize(std::vector<double> v) {
  Summary s;
  s.count = static_cast<int64_t>(v.size());
  if (v.empty()) return s;
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  s.min = *lo;
  s.max = *hi;
  for (double x : v) s.total += x;
  s.mean = s.total / static_cast<double>(v.size());
  double var = 0;
  for (double x : v) var += (x - s.mean) * (x - s.mean);
  s.stddev = v.size() > 1 ? std::sqrt(var / static_cast<double>(v.size() - 1)) : 0.0;
  s.median = Median(std::move(v));
  return s;
}

double Median(std::vector<double> values) {
  // Percentile(sorted, 50) without sorting: the two middle values by selection.
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  const size_t lo = (values.size() - 1) / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(lo), values.end());
  const double a = values[lo];
  if (values.size() % 2 == 1) return a;
  const double b = *std::min_element(values.begin() + static_cast<std::ptrdiff_t>(lo) + 1, values.end());
  return a + (b - a) * 0.5;
}

}  // namespace tierscope
