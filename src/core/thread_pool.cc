// ThreadPool implementation: generation counter + spin-then-park workers.
#include "core/thread_pool.h"

#include <sched.h>

#include <chrono>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/clock.h"

namespace tierscope {
namespace {

inline void CpuRelax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

// How long a worker spins for the next job before it parks.
constexpr auto kSpin = std::chrono::microseconds(200);

}  // namespace

int ThreadPool::HardwareThreads() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

ThreadPool::ThreadPool(int num_threads)
    : num_threads_(num_threads < 1 ? 1 : num_threads), shares_(new Share[num_threads_]) {
  threads_.reserve(num_threads_ - 1);
  try {
    for (int w = 1; w < num_threads_; ++w) threads_.emplace_back([this, w] { WorkerLoop(w); });
  } catch (...) {  // the system refused a thread: stop the ones started, then say so
    StopAndJoin();
    throw;
  }
}

ThreadPool::~ThreadPool() { StopAndJoin(); }

void ThreadPool::StopAndJoin() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::RunTasks(int worker) {
  for (int i = 0; i < num_threads_; ++i) {  // its own share first, then the others' in turn
    Share& s = shares_[(worker + i) % num_threads_];
    for (;;) {
      const int64_t t = s.next.fetch_add(1, std::memory_order_relaxed);
      if (t >= s.end) break;
      (*job_)(t, worker);
    }
  }
}

void ThreadPool::ParallelFor(int64_t num_tasks, FunctionRef<void(int64_t, int)> fn) {
  if (num_tasks <= 0) return;
  if (num_threads_ == 1 || num_tasks == 1) {
    for (int64_t t = 0; t < num_tasks; ++t) fn(t, 0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    for (int w = 0; w < num_threads_; ++w) {
      shares_[w].next.store(num_tasks * w / num_threads_, std::memory_order_relaxed);
      shares_[w].end = num_tasks * (w + 1) / num_threads_;
    }
    active_workers_.store(num_threads_ - 1, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  RunTasks(0);
  // Wait for every worker to leave the job (they may still run a task).
  auto start = MonotonicClock::now();
  while (active_workers_.load(std::memory_order_acquire) != 0) {
    if (MonotonicClock::now() - start > kSpin) {
      std::unique_lock<std::mutex> lock(mu_);
      done_cv_.wait(lock, [this] { return active_workers_.load() == 0; });
      break;
    }
    CpuRelax();
  }
  std::lock_guard<std::mutex> lock(mu_);
  job_ = nullptr;
}

void ThreadPool::WorkerLoop(int worker) {
  uint64_t seen = 0;
  for (;;) {
    // Spin for a new generation, then park.
    auto start = MonotonicClock::now();
    while (generation_.load(std::memory_order_acquire) == seen) {
      if (MonotonicClock::now() - start > kSpin) {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return generation_.load() != seen; });
        break;
      }
      CpuRelax();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      seen = generation_.load();
      if (stop_) return;
    }
    RunTasks(worker);
    if (active_workers_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mu_);
      done_cv_.notify_all();
    }
  }
}

}  // namespace tierscope
