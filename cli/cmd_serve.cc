// swapplan serve [--listen 127.0.0.1:7070] [--threads N] [--cache-dir DIR]
//   [--max-trace-bytes 1GiB] [--max-concurrent-plans N] [--compute-nice 10]
//   [--compute-sched idle|nice] [--max-cache-bytes 4GiB]
//   [--tls-cert F --tls-key F] [--token-file F] [--insecure] [--grace 30s]
//
// Runs the planner service (service/server.h, docs/service.md) until
// SIGTERM or SIGINT: then it stops accepting calls, lets calls in flight
// finish for up to --grace, cancels the rest and exits 0. One line per call
// on stderr (method, trace, bytes, latency, status, cache hit); the first
// line says where it listens ("swapplan serve: listening on ADDR:PORT").
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "cli.h"
#include "flags.h"
#include "swapplan/service/server.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"

namespace swapplan::cli {
namespace {

struct ServeArgs {
  FlagSet flags;
  std::optional<std::string> listen;
  std::optional<int64_t> threads;
  std::optional<std::string> cache_dir;
  std::optional<int64_t> max_trace_bytes;
  std::optional<int64_t> max_concurrent_plans;
  std::optional<int64_t> compute_nice;
  std::optional<std::string> compute_sched;
  std::optional<int64_t> max_cache_bytes;
  std::optional<std::string> tls_cert;
  std::optional<std::string> tls_key;
  std::optional<std::string> token_file;
  bool insecure = false;
  std::optional<int64_t> grace_ns;
};

absl::StatusOr<std::string> ReadToken(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error(ErrorKind::kNotFound, absl::StrCat("--token-file ", path, ": cannot be read"));
  std::ostringstream s;
  s << in.rdbuf();
  std::string token(absl::StripAsciiWhitespace(s.str()));
  if (token.empty()) {
    return Error(ErrorKind::kUsage, absl::StrCat("--token-file ", path, ": the file is empty"));
  }
  return token;
}

absl::Status RunServe(ServeArgs& a) {
  a.flags.Parse();
  SWAPPLAN_RETURN_IF_ERROR(a.flags.Status());
  ServerOptions so;
  so.listen_address = a.listen.value_or(so.listen_address);
  so.threads = static_cast<int32_t>(a.threads.value_or(so.threads));
  so.tls_cert_file = a.tls_cert.value_or("");
  so.tls_key_file = a.tls_key.value_or("");
  so.insecure = a.insecure;
  PlannerServiceOptions po;
  po.cache_dir = a.cache_dir.value_or("");
  po.max_trace_bytes = a.max_trace_bytes.value_or(po.max_trace_bytes);
  po.max_concurrent_plans =
      static_cast<int32_t>(a.max_concurrent_plans.value_or(po.max_concurrent_plans));
  po.compute_nice_increment =
      static_cast<int32_t>(a.compute_nice.value_or(po.compute_nice_increment));
  // --compute-nice alone asks for the nice policy (a nice increment means
  // nothing under SCHED_IDLE); --compute-sched idle with it is refused.
  if (a.compute_sched) {
    if (*a.compute_sched == "idle" && a.compute_nice) {
      return absl::InvalidArgumentError(
          "--compute-nice applies to --compute-sched nice, not idle (SCHED_IDLE has no nice "
          "increment)");
    }
    po.compute_scheduling = *a.compute_sched == "idle"
                                ? PlannerServiceOptions::ComputeScheduling::kIdle
                                : PlannerServiceOptions::ComputeScheduling::kNice;
  } else if (a.compute_nice) {
    po.compute_scheduling = PlannerServiceOptions::ComputeScheduling::kNice;
  }
  po.max_cache_disk_bytes = a.max_cache_bytes.value_or(po.max_cache_disk_bytes);
  if (a.token_file) {
    SWAPPLAN_ASSIGN_OR_RETURN(po.token, ReadToken(*a.token_file));
  }
  // SIGINT and SIGTERM go to the sigwait below: blocked before the server
  // starts its threads, which inherit the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  auto log_mu = std::make_shared<std::mutex>();
  RequestLogSink sink = [log_mu](const RequestLog& r) {
    const std::string line = absl::StrCat("swapplan serve: ", FormatRequestLog(r), "\n");
    std::lock_guard<std::mutex> lock(*log_mu);
    std::cerr << line << std::flush;
  };
  SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<PlannerServer> server,
                            PlannerServer::Start(so, po, sink));
  const std::string host = so.listen_address.substr(0, so.listen_address.rfind(':'));
  {
    std::lock_guard<std::mutex> lock(*log_mu);
    std::cerr << "swapplan serve: listening on " << host << ":" << server->port()
              << (so.tls_cert_file.empty() ? "" : " (TLS)")
              << (po.token.empty() ? "" : " (token required)") << std::endl;
  }
  int sig = 0;
  sigwait(&signals, &sig);
  const int64_t grace_ns = a.grace_ns.value_or(30'000'000'000);
  {
    std::lock_guard<std::mutex> lock(*log_mu);
    std::cerr << "swapplan serve: " << (sig == SIGINT ? "SIGINT" : "SIGTERM")
              << ": draining calls in flight (grace " << FormatDurationNs(grace_ns) << ")"
              << std::endl;
  }
  server->Shutdown(std::chrono::nanoseconds(grace_ns));
  {
    std::lock_guard<std::mutex> lock(*log_mu);
    std::cerr << "swapplan serve: stopped" << std::endl;
  }
  return absl::OkStatus();
}

}  // namespace

void SetupServe(CLI::App& root, Action* action) {
  auto a = std::make_shared<ServeArgs>();
  CLI::App* sub = root.add_subcommand(
      "serve", "Run the planner service (gRPC swapplan.v1.Planner, docs/service.md) until "
               "SIGTERM/SIGINT, then drain calls in flight and exit 0.");
  a->flags.Text(sub, "--listen", &a->listen,
                "host:port to listen on (default 127.0.0.1:7070; port 0 = any free port). A "
                "non-loopback address needs --tls-cert/--tls-key or --token-file, or --insecure");
  a->flags.Int(sub, "--threads", &a->threads,
               "Most calls in progress at once, plus 2 polling threads; more are refused with "
               "RESOURCE_EXHAUSTED (default 64)",
               1, 4096);
  a->flags.Text(sub, "--cache-dir", &a->cache_dir,
                "Keep plans and uploaded traces here (survives restarts; replicas may share it)");
  a->flags.Size(sub, "--max-trace-bytes", &a->max_trace_bytes,
                "Refuse a trace larger than this while it is uploaded (default 1GiB)");
  a->flags.Int(sub, "--max-concurrent-plans", &a->max_concurrent_plans,
               "Most plans/searches/checks/simulations/comparisons at once; more are refused "
               "with RESOURCE_EXHAUSTED (default 4)",
               1, 4096);
  a->flags.Int(sub, "--compute-nice", &a->compute_nice,
               "Run computations this much lower in CPU priority (a nice increment) than the "
               "threads answering cache hits and uploads; implies --compute-sched nice (default 10; "
               "0 = the same)",
               0, 19);
  a->flags.Choice(sub, "--compute-sched", &a->compute_sched, {"idle", "nice"},
                  "How computations yield the CPU to the threads answering cache hits: idle "
                  "(SCHED_IDLE: a core only when nothing else wants it; the default) or nice "
                  "(--compute-nice: a smaller share, for hosts whose other work keeps the cores "
                  "busy)");
  a->flags.Size(sub, "--max-cache-bytes", &a->max_cache_bytes,
                "Bound of --cache-dir's plans, and of its traces (each; LRU eviction; default "
                "4GiB)");
  a->flags.Text(sub, "--tls-cert", &a->tls_cert, "PEM certificate chain: serve TLS only");
  a->flags.Text(sub, "--tls-key", &a->tls_key, "PEM private key of --tls-cert");
  a->flags.Text(sub, "--token-file", &a->token_file,
                "Require `authorization: Bearer <token>` on every call (the file's content)");
  sub->add_flag("--insecure", a->insecure,
                "Allow a non-loopback --listen without TLS and without a token");
  a->flags.Duration(sub, "--grace", &a->grace_ns,
                    "On SIGTERM/SIGINT, let calls in flight finish for this long (default 30s)");
  sub->callback([a, action] { *action = [a]() { return RunServe(*a); }; });
}

}  // namespace swapplan::cli
