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
  std::sort(v.begin(), v.end());
  for (double x : v) s.total += x;
  s.mean = s.total / static_cast<double>(v.size());
  s.min = v.front();
  s.max = v.back();
  s.median = Percentile(v, 50);
  double var = 0;
  for (double x : v) var += (x - s.mean) * (x - s.mean);
  s.stddev = v.size() > 1 ? std::sqrt(var / static_cast<double>(v.size() - 1)) : 0.0;
  return s;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return Percentile(values, 50);
}

}  // namespace tierscope
