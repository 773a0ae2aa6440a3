// ThreadPool: the CPU backend's workers. ParallelFor runs tasks [0, n) on the calling
// thread plus the workers. Worker w starts on its own contiguous share of the tasks (the
// w-th of num_threads), then helps finish the others' shares: so launch after launch over
// the same rows, a worker touches the rows it touched before, still in its core's cache,
// and no worker idles while tasks remain. Workers spin briefly between jobs and then
// park, so back-to-back small launches stay cheap.
#ifndef TIERSCOPE_CORE_THREAD_POOL_H_
#define TIERSCOPE_CORE_THREAD_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/function_ref.h"

namespace tierscope {

class ThreadPool {
 public:
  // `num_threads` counts the calling thread: 1 means no worker threads. Throws
  // std::system_error (with no thread left running) when the system refuses a thread.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Calls fn(task, worker) for every task in [0, num_tasks); worker is in
  // [0, num_threads). Returns when all tasks are done. Not reentrant.
  void ParallelFor(int64_t num_tasks, FunctionRef<void(int64_t, int)> fn);

  // Number of hardware threads this process may use.
  static int HardwareThreads();

 private:
  void WorkerLoop(int worker);
  void RunTasks(int worker);
  void StopAndJoin();

  const int num_threads_;
  std::vector<std::thread> threads_;

  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable done_cv_;
  bool stop_ = false;
  std::atomic<uint64_t> generation_{0};

  // The current job: one share of its tasks per worker, claimed front to back by the
  // owner first and by the others once their own share is done.
  struct alignas(64) Share {
    std::atomic<int64_t> next{0};
    int64_t end = 0;
  };
  FunctionRef<void(int64_t, int)>* job_ = nullptr;
  std::unique_ptr<Share[]> shares_;
  std::atomic<int> active_workers_{0};
};

}  // namespace tierscope

#endif  // TIERSCOPE_CORE_THREAD_POOL_H_
