// Process and /proc helpers of the planner service's load test
// (bench/service_load.cc): the `swapplan serve` child and its log, a
// thread's run-queue wait, a process's peak RSS and threads, percentiles.
//
//   Server server;
//   SWAPPLAN_RETURN_IF_ERROR(server.Start("build/swapplan", "/tmp/load", {}));
//   PlannerClient::Connect(server.address(), {});  ...
//   int64_t peak_kib = StatusKib(server.pid(), "VmHWM");
//   int rc = server.Stop();
//
// Threading model: Server's reader thread writes the log and sets the
// address under its mutex; the other functions are free of shared state.
// Linux only (/proc, posix_spawn).
#ifndef SWAPPLAN_BENCH_SERVICE_LOAD_PROC_H_
#define SWAPPLAN_BENCH_SERVICE_LOAD_PROC_H_

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "swapplan/util/error.h"

namespace swapplan::bench {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d);

// p-th percentile as scripts/service_load.py computes it (nearest rank on
// the sorted values, index round(p/100 (n-1))); nullopt when empty. O(n log n).
std::optional<double> Percentile(std::vector<double> v, double p);

// v rounded to `digits` decimals; null when v is empty.
nlohmann::json Round(std::optional<double> v, int digits = 3);

// Nanoseconds the calling thread has waited on a run queue so far
// (/proc/self/task/TID/schedstat, 2nd field); 0 when unreadable.
int64_t OwnRunQueueWaitNs();

// A /proc/PID/status field in KiB (VmHWM, VmRSS); 0 when unreadable.
int64_t StatusKib(pid_t pid, const std::string& key);

// utime + stime of /proc/PID/stat in ns (every thread, ended ones included;
// clock-tick resolution); 0 when unreadable.
int64_t ProcessCpuNs(pid_t pid);

// One thread of a process: name (trailing digits dropped), ns run, ns waited.
struct ThreadSample {
  std::string name;
  int64_t run_ns = 0;
  int64_t wait_ns = 0;
};
// Every thread of `pid` by thread id. O(threads).
std::map<std::string, ThreadSample> ServerThreads(pid_t pid);

// By thread name: threads, seconds run and waited on a run queue between two
// samples (threads started meanwhile count from 0; those that ended are not
// counted).
nlohmann::json ThreadDeltas(const std::map<std::string, ThreadSample>& before,
                            const std::map<std::string, ThreadSample>& after);

// Runs argv to completion (stdin inherited); its exit status, or -1.
int RunCommand(const std::vector<std::string>& argv);

// The file's bytes; kNotFound when it cannot be read.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// From a `swapplan serve` log: per method (and "Plan (cache hit)") p50/p99
// of the latency it logs and of the handler thread's CPU (cpu_us), OK calls.
nlohmann::json ServerSide(const std::string& log_path);

// The 1-minute load average; -1 when unreadable.
double LoadAverage1();

// `swapplan serve --listen 127.0.0.1:0 ARGS` as a child process; a thread
// copies its log (stderr) to work_dir/serve.log and finds the port.
class Server {
 public:
  // Starts it, logging to work_dir/serve.log; returns once it listens
  // (kUnavailable when it has not within 120 s, kInternal when it cannot
  // be started).
  absl::Status Start(const std::string& binary, const std::string& work_dir,
                     const std::vector<std::string>& serve_args) {
    log_.open(work_dir + "/serve.log");
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return Error(ErrorKind::kInternal, "pipe failed");
    std::vector<std::string> argv = {binary, "serve", "--listen", "127.0.0.1:0"};
    argv.insert(argv.end(), serve_args.begin(), serve_args.end());
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    const int rc = ::posix_spawn(&pid_, args[0], &fa, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(fds[1]);
    if (rc != 0) {
      ::close(fds[0]);
      return Error(ErrorKind::kInternal, absl::StrCat("cannot start ", binary, " serve"));
    }
    reader_ = std::thread([this, fd = fds[0]] { Read(fd); });
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(120), [&] { return !address_.empty() || eof_; });
    if (address_.empty()) return Error(ErrorKind::kUnavailable, "swapplan serve did not start");
    return absl::OkStatus();
  }

  std::string address() {
    std::lock_guard<std::mutex> lock(mu_);
    return address_;
  }
  pid_t pid() const { return pid_; }

  // SIGTERM, then its exit status (SIGKILL after 120 s: status -1).
  int Stop() {
    if (pid_ <= 0) return -1;
    ::kill(pid_, SIGTERM);
    int status = 0;
    const auto until = Clock::now() + std::chrono::seconds(120);
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (Clock::now() > until) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        status = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (reader_.joinable()) reader_.join();
    pid_ = 0;
    log_.close();
    return status == -1 || !WIFEXITED(status) ? -1 : WEXITSTATUS(status);
  }

  Server() = default;
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  ~Server() {
    if (pid_ > 0) Stop();
  }

 private:
  void Read(int fd) {
    FILE* in = ::fdopen(fd, "r");
    char* line = nullptr;
    size_t cap = 0;
    while (::getline(&line, &cap, in) > 0) {
      const std::string text(line);
      log_ << text;
      std::lock_guard<std::mutex> lock(mu_);
      const size_t at = text.find("listening on ");
      if (address_.empty() && at != std::string::npos) {
        const std::string hostport = text.substr(at + 13, text.find_first_of(" \n", at + 13) -
                                                               (at + 13));
        address_ = "127.0.0.1:" + hostport.substr(hostport.rfind(':') + 1);
        cv_.notify_all();
      } else if (address_.empty()) {
        std::cerr << text;
      }
    }
    std::free(line);
    std::fclose(in);
    std::lock_guard<std::mutex> lock(mu_);
    eof_ = true;
    cv_.notify_all();
  }

  pid_t pid_ = 0;
  std::ofstream log_;  // written by the reader thread only until Stop joins it
  std::thread reader_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string address_;
  bool eof_ = false;
};

}  // namespace swapplan::bench

#endif  // SWAPPLAN_BENCH_SERVICE_LOAD_PROC_H_
