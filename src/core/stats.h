// One definition of each summary statistic the reports print — bench's latency
// percentiles, the load generator's, the analyzer's duration columns, tier 3's replay
// timings and the lab's medians all use these.
#ifndef TIERSCOPE_CORE_STATS_H_
#define TIERSCOPE_CORE_STATS_H_

#include <cstdint>
#include <vector>

namespace tierscope {

// The p-th percentile (0..100) of ascending `sorted`, interpolating linearly between the
// closest ranks: position p/100 x (n - 1), as numpy's default ("linear", Hyndman-Fan
// type 7) and PyTorch's quantile compute it. P0 is the minimum, P100 the maximum, P50 the
// median. NaN for no values.
double Percentile(const std::vector<double>& sorted, double p);

struct Summary {
  int64_t count = 0;
  double total = 0, mean = 0, min = 0, max = 0, median = 0;
  double stddev = 0;  // sample standard deviation (n - 1); 0 for fewer than 2 values
  // Coefficient of variation: stddev / mean (0 when the mean is not positive).
  double cv() const { return mean > 0 ? stddev / mean : 0; }
};
Summary Summarize(std::vector<double> values);

// The median (P50) of unsorted values.
double Median(std::vector<double> values);

}  // namespace tierscope

#endif  // TIERSCOPE_CORE_STATS_H_
