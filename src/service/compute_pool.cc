#include "service/compute_pool.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace swapplan::service {

ComputePool::ComputePool(int32_t threads, int32_t nice_increment, bool sched_idle,
                         const char* thread_name) {
  workers_.reserve(static_cast<size_t>(threads));
  for (int32_t i = 0; i < threads; ++i) {
    workers_.emplace_back([this, nice_increment, sched_idle, thread_name] {
      WorkerLoop(nice_increment, sched_idle, thread_name);
    });
  }
}

ComputePool::~ComputePool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_.notify_all();
  for (std::thread& t : workers_) t.join();
}

int64_t ComputePool::tasks_run() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tasks_run_;
}

void ComputePool::RunTask(const std::function<void()>& fn) {
  Task task{&fn, false};
  std::unique_lock<std::mutex> lock(mu_);
  queue_.push_back(&task);
  work_.notify_one();
  done_.wait(lock, [&] { return task.done; });
}

void ComputePool::WorkerLoop(int32_t nice_increment, bool sched_idle, const char* thread_name) {
  // Named for ps/top and the load test's per-thread scheduler figures.
  ::pthread_setname_np(::pthread_self(), thread_name);
  if (sched_idle) {
    // SCHED_IDLE (priority 0): runs only when no normal-priority thread wants
    // the core; a thread may always switch itself to it, no privilege needed.
    // Threads it starts inherit the policy (PTHREAD_INHERIT_SCHED).
    sched_param param{};
    param.sched_priority = 0;
    ::pthread_setschedparam(::pthread_self(), SCHED_IDLE, &param);
  } else if (nice_increment > 0) {
    // Linux: the nice value is per thread (setpriority on the thread id);
    // lowering it needs no privilege. On failure the worker keeps the
    // process's priority: slower hits under load, never wrong answers.
    const pid_t tid = static_cast<pid_t>(::syscall(SYS_gettid));
    errno = 0;
    const int current = ::getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
    if (errno == 0) ::setpriority(PRIO_PROCESS, static_cast<id_t>(tid), current + nice_increment);
  }
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_ and nothing left
    Task* task = queue_.front();
    queue_.pop_front();
    ++tasks_run_;
    lock.unlock();
    (*task->fn)();
    lock.lock();
    task->done = true;
    done_.notify_all();
  }
}

}  // namespace swapplan::service
