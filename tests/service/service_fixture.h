// Test fixture of the service suites: a PlannerServer on a loopback port the
// system picks (port 0), a generated client (PlannerGrpcClient), the log
// records it wrote, and the two-layer toy trace
// (tests/data/traces/chameleon_toy.json: 13 ops, device memory 1000 B, h2d
// 1 GB/s, d2h 2 GB/s; with a 100 B reserve Chameleon swaps 2 tensors, 300 B,
// and the peak drops from 1200 B to 900 B — the worked example of
// tests/planners/chameleon_test.cc).
#ifndef SWAPPLAN_TESTS_SERVICE_SERVICE_FIXTURE_H_
#define SWAPPLAN_TESTS_SERVICE_SERVICE_FIXTURE_H_

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "planner_service.grpc.pb.h"
#include "support/cli_runner.h"
#include "support/test_traces.h"
#include "swapplan/service/client.h"
#include "swapplan/service/server.h"

namespace swapplan::testing {

inline std::string ToyBytes() { return ReadFile(DataPath("traces/chameleon_toy.json")); }

struct TestServer {
  std::unique_ptr<PlannerServer> server;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<PlannerGrpcClient> rpc;
  std::shared_ptr<std::mutex> mu = std::make_shared<std::mutex>();
  std::shared_ptr<std::vector<RequestLog>> logs = std::make_shared<std::vector<RequestLog>>();

  explicit TestServer(PlannerServiceOptions po = {}, ServerOptions so = {},
                      std::shared_ptr<grpc::ChannelCredentials> creds = nullptr) {
    so.listen_address = so.listen_address == ServerOptions().listen_address
                            ? "127.0.0.1:0"
                            : so.listen_address;
    auto mu_copy = mu;
    auto logs_copy = logs;
    absl::StatusOr<std::unique_ptr<PlannerServer>> s =
        PlannerServer::Start(so, po, [mu_copy, logs_copy](const RequestLog& r) {
          std::lock_guard<std::mutex> lock(*mu_copy);
          logs_copy->push_back(r);
        });
    INFO(s.status().ToString());
    REQUIRE(s.ok());
    server = *std::move(s);
    Connect(creds ? creds : grpc::InsecureChannelCredentials());
  }

  void Connect(std::shared_ptr<grpc::ChannelCredentials> creds,
               const std::string& host = "127.0.0.1") {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(256 << 20);
    if (host == "localhost") args.SetSslTargetNameOverride("localhost");
    channel = grpc::CreateCustomChannel(host + ":" + std::to_string(server->port()), creds, args);
    rpc = NewPlannerGrpcClient(channel);
  }

  std::vector<RequestLog> Logs() {
    std::lock_guard<std::mutex> lock(*mu);
    return *logs;
  }

  // Uploads `bytes` in chunks of `chunk` bytes; the status and the response.
  grpc::Status Upload(const std::string& bytes, v1::UploadTraceResponse* out,
                      size_t chunk = 512, const std::string& name = "toy.json") {
    grpc::ClientContext ctx;
    auto writer = rpc->UploadTrace(&ctx, out);
    for (size_t i = 0; i < bytes.size(); i += chunk) {
      v1::UploadTraceRequest req;
      if (i == 0) req.set_name(name);
      req.set_chunk(bytes.substr(i, chunk));
      if (!writer->Write(req)) break;
    }
    writer->WritesDone();
    return writer->Finish();
  }

  std::string UploadToy() {
    v1::UploadTraceResponse r;
    grpc::Status s = Upload(ToyBytes(), &r);
    INFO(s.error_message());
    REQUIRE(s.ok());
    return r.trace().trace_id();
  }
};

// The toy's plan request: reserve 100 B, every tensor a candidate.
inline v1::PlanRequest ToyPlan(const std::string& trace_id) {
  v1::PlanRequest req;
  req.mutable_trace()->set_trace_id(trace_id);
  req.mutable_device()->set_reserve_bytes(100);
  req.mutable_options()->insert({std::string("min-tensor-bytes"), std::string("0")});
  return req;
}

// The value of trailing metadata `key` of a finished call ("" when absent).
inline std::string Trailer(const grpc::ClientContext& ctx, const std::string& key) {
  auto it = ctx.GetServerTrailingMetadata().find(key);
  if (it == ctx.GetServerTrailingMetadata().end()) return "";
  return std::string(it->second.data(), it->second.size());
}

// `swapplan serve --listen 127.0.0.1:0 ARGS...` in a child process; its
// stderr goes to a file. Start waits for the "listening on" line (port).
struct ServeProcess {
  pid_t pid = -1;
  int port = 0;
  std::string err_path;

  explicit ServeProcess(std::vector<std::string> args, const std::string& name = "serve") {
    err_path = TempDir() + "/" + name + ".err";
    std::filesystem::remove(err_path);
    std::vector<std::string> argv = {SWAPPLAN_BINARY, "serve", "--listen", "127.0.0.1:0"};
    argv.insert(argv.end(), args.begin(), args.end());
    pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      std::freopen(err_path.c_str(), "w", stderr);
      std::vector<char*> cargv;
      for (std::string& a : argv) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      execv(SWAPPLAN_BINARY, cargv.data());
      _exit(127);
    }
    for (int i = 0; i < 400 && port == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
      const std::string text = Err();
      const size_t at = text.find("listening on 127.0.0.1:");
      if (at != std::string::npos) port = std::atoi(text.c_str() + at + 23);
    }
    INFO(Err());
    REQUIRE(port > 0);
  }
  std::string Address() const { return "127.0.0.1:" + std::to_string(port); }
  std::string Err() const {
    return std::filesystem::exists(err_path) ? ReadFile(err_path) : std::string();
  }
  // SIGTERM; the exit status (-1 unless it exited).
  int Stop() {
    if (pid <= 0) return -1;
    kill(pid, SIGTERM);
    int status = 0;
    waitpid(pid, &status, 0);
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  ~ServeProcess() { Stop(); }
};

inline std::chrono::system_clock::time_point In(std::chrono::milliseconds d) {
  return std::chrono::system_clock::now() + d;
}

}  // namespace swapplan::testing

#endif  // SWAPPLAN_TESTS_SERVICE_SERVICE_FIXTURE_H_
