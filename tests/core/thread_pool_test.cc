// ThreadPool: every task runs exactly once, on a valid worker, job after job.
#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace tierscope {
namespace {

TEST(ThreadPoolTest, EveryTaskRunsExactlyOnceAcrossManyJobs) {
  ThreadPool pool(3);
  for (int job = 0; job < 200; ++job) {
    const int64_t n = 1 + job % 37;
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    std::atomic<int> bad_worker{0};
    pool.ParallelFor(n, [&](int64_t t, int w) {
      hits[static_cast<size_t>(t)].fetch_add(1);
      if (w < 0 || w >= 3) bad_worker.fetch_add(1);
    });
    for (int64_t t = 0; t < n; ++t) ASSERT_EQ(hits[static_cast<size_t>(t)].load(), 1) << "job " << job;
    ASSERT_EQ(bad_worker.load(), 0);
  }
}

TEST(ThreadPoolTest, SingleThreadRunsInlineInOrder) {
  ThreadPool pool(1);
  std::vector<int64_t> order;
  pool.ParallelFor(5, [&](int64_t t, int w) {
    EXPECT_EQ(w, 0);
    order.push_back(t);
  });
  EXPECT_EQ(order, (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

TEST(ThreadPoolTest, ZeroTasksReturnsImmediately) {
  ThreadPool pool(2);
  int calls = 0;
  pool.ParallelFor(0, [&](int64_t, int) { ++calls; });
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace tierscope
