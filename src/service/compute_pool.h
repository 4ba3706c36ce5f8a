// ComputePool: the planner service's computing threads (private to
// src/service). Planning, searching, checking, simulating and comparing run
// here, never on gRPC's threads, and at a lower CPU priority (a nice
// increment, default +10, or the SCHED_IDLE policy): gRPC's pollers and the
// handlers that answer cache hits, uploads and GetPolicy then get a core
// before planning work does, so a cache hit is not delayed by the planners'
// CPU use (docs/service.md, "Where a cached Plan waited").
//
//   ComputePool pool(/*threads=*/4, /*nice_increment=*/10, /*sched_idle=*/false);
//   absl::StatusOr<Answer> a = pool.Run<Answer>([&] { return Plan(...); });
//
// Threading model: `threads` workers, started by the constructor and joined
// by the destructor; Run may be called from any thread at once and blocks
// its caller until a worker has run the function (tasks beyond `threads`
// wait in FIFO order; the service admits at most max_concurrent_plans
// computations, the pool's size, so none waits in practice). Threads a task
// starts (the advisor's evaluation pool) inherit the worker's priority.
// Complexity: O(1) per Run besides the task.
#ifndef SWAPPLAN_SERVICE_COMPUTE_POOL_H_
#define SWAPPLAN_SERVICE_COMPUTE_POOL_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace swapplan::service {

class ComputePool {
 public:
  // Requires threads >= 1 and 0 <= nice_increment <= 19 (checked by
  // PlannerServiceOptions::Validate). sched_idle: the workers switch to
  // SCHED_IDLE (nice_increment unused). A worker that cannot lower its
  // priority runs at the process's. thread_name (at most 15 characters)
  // names the workers for ps/top and /proc/PID/task/*/comm.
  ComputePool(int32_t threads, int32_t nice_increment, bool sched_idle,
              const char* thread_name = "swapplan-comput");
  ~ComputePool();
  ComputePool(const ComputePool&) = delete;
  ComputePool& operator=(const ComputePool&) = delete;

  // fn() on a worker; returns its result once it has run.
  template <typename T, typename Fn>
  T Run(Fn&& fn) {
    std::optional<T> out;
    RunTask([&] { out.emplace(fn()); });
    return *std::move(out);
  }

  // Tasks started (for tests and the log).
  int64_t tasks_run() const;

 private:
  struct Task {
    const std::function<void()>* fn = nullptr;
    bool done = false;
  };
  void RunTask(const std::function<void()>& fn);
  void WorkerLoop(int32_t nice_increment, bool sched_idle, const char* thread_name);

  mutable std::mutex mu_;
  std::condition_variable work_;
  std::condition_variable done_;
  std::deque<Task*> queue_;
  bool stop_ = false;
  int64_t tasks_run_ = 0;
  std::vector<std::thread> workers_;
};

}  // namespace swapplan::service

#endif  // SWAPPLAN_SERVICE_COMPUTE_POOL_H_
