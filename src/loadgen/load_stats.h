// The pure parts of `tierscope load`: the input-length distribution, the Poisson arrival
// schedule, latency percentiles (core/stats.h), the Prometheus histogram parser (for the server's
// tierscope_batch_size) with the difference of two snapshots, and the report's text form.
// Nothing here does I/O, so all of it is tested without a server.
#ifndef TIERSCOPE_LOADGEN_LOAD_STATS_H_
#define TIERSCOPE_LOADGEN_LOAD_STATS_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tierscope/status.h"

namespace tierscope {

// Tokens per input, counting [CLS] and [SEP]: "fixed:N", "uniform:A-B" (inclusive) or
// "choice:A,B,C" (each equally likely). Every length is in [kMinLength, kMaxLength].
struct LengthSpec {
  static constexpr int64_t kMinLength = 3;        // [CLS], one word, [SEP]
  static constexpr int64_t kMaxLength = 1 << 20;  // a guard against typos, not a model limit
  enum class Kind { kFixed, kUniform, kChoice };
  Kind kind = Kind::kFixed;
  std::vector<int64_t> values;  // fixed: {N}; uniform: {A, B}; choice: the choices

  int64_t Draw(std::mt19937_64& rng) const;
  int64_t Max() const;
  double Mean() const;
};

// InvalidArgument, naming the spec and what is wrong, for anything else.
StatusOr<LengthSpec> ParseLengthSpec(const std::string& spec);

// Arrival times of a Poisson process: exponential gaps of mean 1/rate, drawn from a
// std::mt19937_64 seeded with `seed`, so a seed always gives the same schedule.
class PoissonSchedule {
 public:
  PoissonSchedule(double rate_per_s, uint64_t seed) : rng_(seed), gap_(rate_per_s) {}
  // Seconds from the start to the next arrival (increasing).
  double Next() {
    t_ += gap_(rng_);
    return t_;
  }

 private:
  std::mt19937_64 rng_;
  std::exponential_distribution<double> gap_;
  double t_ = 0;
};


// {"p50","p90","p95","p99","max","mean","count"} of `values` (any order); the
// statistics are null when `values` is empty.
nlohmann::json SummarizeLatencies(std::vector<double> values);

// One histogram of a Prometheus text exposition; buckets are cumulative, in increasing
// order of their bound, the last one +Inf.
struct PromHistogram {
  struct Bucket {
    std::string le;    // the bound as written: "4", "0.5", "+Inf"
    double bound = 0;  // the same, as a number
    double cumulative = 0;
  };
  std::vector<Bucket> buckets;
  double sum = 0;
  double count = 0;
};

// Finds histogram `name` (lines `name_bucket{le="4"} 12`, `name_sum 40`, `name_count 12`;
// other labels and a trailing timestamp allowed) in the exposition `text`. NotFound when
// it has no such lines; InvalidArgument, quoting the line, for a malformed sample, a
// bucket without `le`, a repeated bound, a missing +Inf bucket or _count, counts that
// decrease with the bound, or a _count that differs from the +Inf bucket.
StatusOr<PromHistogram> ParsePromHistogram(const std::string& text, const std::string& name);

// What happened between two snapshots of one histogram of batch sizes:
// {"count": batches, "inputs": sum, "mean_size": sum / count (null when no batch),
//  "histogram": {"1": n, "2": n, ..., "+Inf": n}} with non-cumulative counts per bucket
// (bucket "4" holds sizes in (2, 4]). FailedPrecondition when the bounds differ or a
// count went down (the server restarted between the snapshots).
StatusOr<nlohmann::json> HistogramDelta(const PromHistogram& before, const PromHistogram& after);

// The report of RunLoad as a short human-readable table (it tolerates missing fields).
std::string FormatLoadReport(const nlohmann::json& report);

}  // namespace tierscope

#endif  // TIERSCOPE_LOADGEN_LOAD_STATS_H_
