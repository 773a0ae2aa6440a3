// A small bench workload for the tests that run the engine (lab, profile, inspect).
#ifndef TIERSCOPE_TESTS_WORKLOAD_UTIL_H_
#define TIERSCOPE_TESTS_WORKLOAD_UTIL_H_

#include <cstdint>
#include <string>

#include "workload/bench.h"

namespace tierscope::testing {

// The built-in model on 2 workers: no warmup, one timed unit.
inline BenchOptions SmallWorkload(const std::string& mode, int64_t batch, int64_t seq_len) {
  BenchOptions o;
  o.mode = mode;
  o.batch_size = batch;
  o.seq_len = seq_len;
  o.warmup = 0;
  o.iterations = 1;
  o.threads = 2;
  return o;
}

}  // namespace tierscope::testing

#endif  // TIERSCOPE_TESTS_WORKLOAD_UTIL_H_
