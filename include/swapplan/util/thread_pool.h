// ThreadPool: a fixed set of std::thread workers running index ranges.
// ParallelFor hands out indices dynamically (an atomic counter), so the
// *assignment* of indices to workers varies from run to run; callers that
// need determinism make every index's work a pure function of the index and
// keep per-worker scratch state only (the `worker` argument).
//
//   ThreadPool pool(4);                       // 0 = hardware concurrency
//   std::vector<Workspace> ws(pool.size());
//   pool.ParallelFor(n, [&](int64_t i, int worker) { out[i] = Work(i, &ws[worker]); });
//
// ParallelFor blocks until every index is done; it is not reentrant. The
// calling thread works too, so size() - 1 threads are spawned.
#ifndef SWAPPLAN_UTIL_THREAD_POOL_H_
#define SWAPPLAN_UTIL_THREAD_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace swapplan {

class ThreadPool {
 public:
  // `threads` workers in total (the caller included); 0 = the hardware
  // concurrency (at least 1).
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return size_; }

  // Runs fn(i, worker) for i in [0, n), worker in [0, size()).
  void ParallelFor(int64_t n, const std::function<void(int64_t, int)>& fn);

 private:
  void WorkerLoop(int worker);
  void Drain(int worker);

  int size_ = 1;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  uint64_t generation_ = 0;
  int busy_ = 0;
  bool stop_ = false;
  const std::function<void(int64_t, int)>* fn_ = nullptr;
  int64_t n_ = 0;
  std::atomic<int64_t> next_{0};
};

}  // namespace swapplan

#endif  // SWAPPLAN_UTIL_THREAD_POOL_H_
