// ThreadPool: every task runs exactly once, on a valid worker, job after job.
#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
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

TEST(ThreadPoolTest, EachWorkerStartsOnItsOwnContiguousShare) {
  // Launch after launch over the same rows, a worker should meet the rows it touched last
  // time (still in its core's cache): worker 1 of 2 starts at task n/2, not at task 1.
  ThreadPool pool(2);
  for (int job = 0; job < 20; ++job) {
    const int64_t n = 8;
    std::atomic<int64_t> first_of_worker1{-1};
    std::vector<std::atomic<int>> hits(n);
    pool.ParallelFor(n, [&](int64_t t, int w) {
      if (w == 1) {
        int64_t none = -1;
        first_of_worker1.compare_exchange_strong(none, t);
      } else if (t == 0) {
        // Hold worker 0's first task until worker 1 has taken one (or 2 s have passed).
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        while (first_of_worker1.load() < 0 && std::chrono::steady_clock::now() < deadline) {
          std::this_thread::yield();
        }
      }
      hits[t].fetch_add(1);
    });
    ASSERT_EQ(first_of_worker1.load(), n / 2) << "job " << job;
    for (int64_t t = 0; t < n; ++t) ASSERT_EQ(hits[t].load(), 1) << "job " << job << " task " << t;
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
