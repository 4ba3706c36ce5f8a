#include "service_load_proc.h"

#include <sys/syscall.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

extern char** environ;

namespace swapplan::bench {

using nlohmann::json;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// p-th percentile as scripts/service_load.py computes it (nearest rank on
// the sorted values, index round(p/100 (n-1))); nullopt when empty.
std::optional<double> Percentile(std::vector<double> v, double p) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<size_t>(std::llround(p / 100.0 * static_cast<double>(v.size() - 1)));
  return v[std::min(i, v.size() - 1)];
}

json Round(std::optional<double> v, int digits) {
  if (!v) return nullptr;
  const double f = std::pow(10.0, digits);
  return std::round(*v * f) / f;
}

namespace {

int64_t ThreadId() { return static_cast<int64_t>(::syscall(SYS_gettid)); }

// Nanoseconds a thread has waited on a run queue (schedstat's 2nd field),
// and the ns it ran (1st); {0, 0} when unreadable.
std::pair<int64_t, int64_t> SchedStat(const std::string& path) {
  std::ifstream in(path);
  int64_t run = 0, wait = 0;
  if (!(in >> run >> wait)) return {0, 0};
  return {run, wait};
}

}  // namespace

int64_t OwnRunQueueWaitNs() {
  return SchedStat(absl::StrCat("/proc/self/task/", ThreadId(), "/schedstat")).second;
}

// A /proc/PID/status field in KiB (VmHWM, VmRSS); 0 when unreadable.
int64_t StatusKib(pid_t pid, const std::string& key) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, key + ":")) {
      std::istringstream s(line.substr(key.size() + 1));
      int64_t kib = 0;
      s >> kib;
      return kib;
    }
  }
  return 0;
}

std::map<std::string, ThreadSample> ServerThreads(pid_t pid) {
  std::map<std::string, ThreadSample> out;
  std::error_code ec;
  const std::string dir = absl::StrCat("/proc/", pid, "/task");
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string tid = e.path().filename().string();
    std::ifstream comm(e.path() / "comm");
    ThreadSample t;
    if (!std::getline(comm, t.name)) continue;
    while (!t.name.empty() && std::isdigit(static_cast<unsigned char>(t.name.back()))) {
      t.name.pop_back();
    }
    std::tie(t.run_ns, t.wait_ns) = SchedStat((e.path() / "schedstat").string());
    out[tid] = t;
  }
  return out;
}

int64_t ProcessCpuNs(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');  // the name may hold spaces
  if (close == std::string::npos) return 0;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  int64_t utime = 0, stime = 0;
  // Fields after the name start at 3 (state); utime and stime are 14 and 15.
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) absl::SimpleAtoi(field, &utime);
    if (i == 15) absl::SimpleAtoi(field, &stime);
  }
  return (utime + stime) * (1'000'000'000 / ::sysconf(_SC_CLK_TCK));
}

// By thread name: threads, seconds run and waited between two samples
// (threads started meanwhile count from 0; those that ended are not counted).
json ThreadDeltas(const std::map<std::string, ThreadSample>& before,
                  const std::map<std::string, ThreadSample>& after) {
  std::map<std::string, std::array<double, 3>> acc;
  for (const auto& [tid, t] : after) {
    auto it = before.find(tid);
    const ThreadSample zero;
    const ThreadSample& b = it == before.end() ? zero : it->second;
    auto& a = acc[t.name];
    a[0] += 1;
    a[1] += static_cast<double>(t.run_ns - b.run_ns) / 1e9;
    a[2] += static_cast<double>(t.wait_ns - b.wait_ns) / 1e9;
  }
  json out = json::object();
  for (const auto& [name, a] : acc) {
    out[name] = {{"threads", static_cast<int>(a[0])}, {"run_s", Round(a[1], 2)},
                 {"run_queue_wait_s", Round(a[2], 2)}};
  }
  return out;
}

// Runs argv to completion (stdin inherited); its exit status, or -1.
int RunCommand(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  if (::posix_spawn(&pid, args[0], nullptr, nullptr, args.data(), environ) != 0) return -1;
  int status = 0;
  if (::waitpid(pid, &status, 0) < 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error(ErrorKind::kNotFound, absl::StrCat(path, ": cannot be read"));
  std::ostringstream s;
  s << in.rdbuf();
  return std::move(s).str();
}


// From the server's log: per method (and Plan cache hits) p50/p99 of the
// latency it logs and of the handler thread's CPU (cpu_us), OK calls only.
json ServerSide(const std::string& log_path) {
  std::map<std::string, std::vector<double>> lat, cpu;
  std::ifstream in(log_path);
  std::string line;
  auto field = [&](const std::string& key) -> std::string {
    const size_t at = line.find(" " + key + "=");
    if (at == std::string::npos) return "";
    const size_t from = at + key.size() + 2;
    return line.substr(from, line.find(' ', from) - from);
  };
  while (std::getline(in, line)) {
    std::string method = field("method");
    int64_t us = 0;
    if (method.empty() || field("status") != "OK" || !absl::SimpleAtoi(field("latency_us"), &us)) {
      continue;
    }
    if (method == "Plan" && field("cache") == "hit") method = "Plan (cache hit)";
    lat[method].push_back(static_cast<double>(us) / 1e3);
    if (absl::SimpleAtoi(field("cpu_us"), &us)) cpu[method].push_back(static_cast<double>(us) / 1e3);
  }
  json out = json::object();
  for (const auto& [m, v] : lat) {
    out[m] = {{"count", v.size()}, {"p50_ms", Round(Percentile(v, 50))},
              {"p99_ms", Round(Percentile(v, 99))}};
    if (!cpu[m].empty()) {
      out[m]["handler_cpu_p50_ms"] = Round(Percentile(cpu[m], 50));
      out[m]["handler_cpu_p99_ms"] = Round(Percentile(cpu[m], 99));
    }
  }
  return out;
}

double LoadAverage1() {
  std::ifstream in("/proc/loadavg");
  double l = -1;
  in >> l;
  return l;
}

}  // namespace swapplan::bench
