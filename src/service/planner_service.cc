#include "swapplan/service/planner_service.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "service/call.h"
#include "service/compute_pool.h"
#include "service/requests.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {

const char* GrpcCodeName(grpc::StatusCode c) {
  switch (c) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::UNKNOWN: return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED: return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
    default: return "UNKNOWN";
  }
}

namespace {

std::string Quoted(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += (c == '\n' ? ' ' : c);
  }
  return out + "\"";
}

// Threads hashing and parsing uploaded traces at once (ingest_); more
// uploads wait for one in FIFO order.
constexpr int32_t kIngestThreads = 2;

// A pool of `threads` workers at the computations' scheduling (SCHED_IDLE,
// or the nice increment, clamped to 0..19).
std::unique_ptr<service::ComputePool> LowPriorityPool(const PlannerServiceOptions& o,
                                                      int32_t threads, const char* name) {
  return std::make_unique<service::ComputePool>(
      threads, std::clamp(o.compute_nice_increment, 0, 19),
      o.compute_scheduling == PlannerServiceOptions::ComputeScheduling::kIdle, name);
}

}  // namespace

absl::Status PlannerServiceOptions::Validate() const {
  auto bad = [](absl::string_view field, int64_t v, absl::string_view rule) {
    return Error(ErrorKind::kUsage, absl::StrCat("service: ", field, " ", v, " ", rule));
  };
  if (max_trace_bytes < 1) return bad("max_trace_bytes", max_trace_bytes, "must be >= 1");
  if (max_concurrent_plans < 1) {
    return bad("max_concurrent_plans", max_concurrent_plans, "must be >= 1");
  }
  if (compute_nice_increment < 0 || compute_nice_increment > 19) {
    return bad("compute_nice_increment", compute_nice_increment, "must be in 0..19");
  }
  if (max_cache_memory_bytes < 1) {
    return bad("max_cache_memory_bytes", max_cache_memory_bytes, "must be >= 1");
  }
  if (max_cache_disk_bytes < 1) {
    return bad("max_cache_disk_bytes", max_cache_disk_bytes, "must be >= 1");
  }
  if (max_trace_memory_bytes < 1) {
    return bad("max_trace_memory_bytes", max_trace_memory_bytes, "must be >= 1");
  }
  if (deadline_margin_ns < 0) return bad("deadline_margin_ns", deadline_margin_ns, "must be >= 0");
  return absl::OkStatus();
}

std::string FormatRequestLog(const RequestLog& r) {
  std::string line =
      absl::StrCat("method=", r.method, " trace=", r.trace_id.empty() ? "-" : r.trace_id.substr(0, 16),
                   " bytes_in=", r.request_bytes, " bytes_out=", r.response_bytes,
                   " latency_us=", r.latency_ns / 1000, " status=", GrpcCodeName(r.code),
                   " cache=", r.cache_hit ? "hit" : "miss", " cpu_us=", r.handler_cpu_ns / 1000,
                   " peer=", r.peer.empty() ? "-" : r.peer);
  if (!r.message.empty()) absl::StrAppend(&line, " message=", Quoted(r.message));
  return line;
}

grpc::StatusCode GrpcCodeFor(const absl::Status& status) {
  switch (KindOf(status)) {
    case ErrorKind::kNone: return grpc::StatusCode::OK;
    case ErrorKind::kMalformedInput:
    case ErrorKind::kUsage: return grpc::StatusCode::INVALID_ARGUMENT;
    case ErrorKind::kNotFound: return grpc::StatusCode::NOT_FOUND;
    case ErrorKind::kFingerprintMismatch: return grpc::StatusCode::FAILED_PRECONDITION;
    case ErrorKind::kInfeasible: return grpc::StatusCode::OUT_OF_RANGE;
    case ErrorKind::kQualityRegression: return grpc::StatusCode::ABORTED;
    case ErrorKind::kResourceLimit: return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case ErrorKind::kDeadlineExceeded: return grpc::StatusCode::DEADLINE_EXCEEDED;
    case ErrorKind::kCancelled: return grpc::StatusCode::CANCELLED;
    case ErrorKind::kUnavailable: return grpc::StatusCode::UNAVAILABLE;
    case ErrorKind::kInternal: return grpc::StatusCode::INTERNAL;
  }
  return grpc::StatusCode::INTERNAL;
}

PlannerService::PlannerService(PlannerServiceOptions options, RequestLogSink log)
    : options_(std::move(options)),
      log_(std::move(log)),
      // Clamped: Create validates, the constructor must never start 0 workers.
      compute_(LowPriorityPool(options_, std::max(options_.max_concurrent_plans, 1),
                               "swapplan-comput")),
      ingest_(LowPriorityPool(options_, kIngestThreads, "swapplan-ingest")) {}

PlannerService::~PlannerService() = default;

int64_t PlannerService::computations_run() const { return compute_->tasks_run(); }

absl::StatusOr<std::unique_ptr<PlannerService>> PlannerService::Create(
    PlannerServiceOptions options, RequestLogSink log) {
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  auto service = std::make_unique<PlannerService>(options, std::move(log));
  const std::string dir = options.cache_dir;
  SWAPPLAN_ASSIGN_OR_RETURN(service->traces_,
                            TraceStore::Open({.dir = dir,
                                              .max_memory_bytes = options.max_trace_memory_bytes,
                                              .max_disk_bytes = options.max_cache_disk_bytes}));
  SWAPPLAN_ASSIGN_OR_RETURN(
      service->cache_,
      BlobCache::Open({.dir = dir.empty() ? dir : dir + "/plans",
                       .max_memory_bytes = options.max_cache_memory_bytes,
                       .max_disk_bytes = options.max_cache_disk_bytes}));
  return service;
}

absl::StatusOr<std::shared_ptr<const StoredTrace>> PlannerService::Ingest(
    const std::string& name, const std::string& bytes, Call* call) {
  std::string id;
  absl::StatusOr<std::shared_ptr<const StoredTrace>> stored =
      ingest_->Run<absl::StatusOr<std::shared_ptr<const StoredTrace>>>([&] {
        id = Sha256Hex(bytes);
        return traces_->Add(name, bytes, id);
      });
  call->log().trace_id = id;
  return stored;
}

absl::StatusOr<std::shared_ptr<const StoredTrace>> PlannerService::ResolveTrace(
    const v1::TraceRef& ref, Call* call) {
  if (ref.source_case() == v1::TraceRef::kInlineTrace) {
    const std::string& bytes = ref.inline_trace();
    if (static_cast<int64_t>(bytes.size()) > options_.max_trace_bytes) {
      return Error(ErrorKind::kResourceLimit,
                   absl::StrCat("inline trace of ", bytes.size(), " bytes is over the server's "
                                "limit of ", options_.max_trace_bytes, " bytes (--max-trace-bytes)"));
    }
    return Ingest(ref.inline_name().empty() ? "inline trace" : ref.inline_name(), bytes, call);
  }
  if (ref.source_case() == v1::TraceRef::kTraceId && !ref.trace_id().empty()) {
    call->log().trace_id = ref.trace_id();
    return traces_->Find(ref.trace_id());
  }
  return Error(ErrorKind::kUsage, "trace: set trace.trace_id (UploadTrace) or trace.inline_trace");
}

grpc::Status PlannerService::UploadTrace(grpc::ServerContext* ctx,
                                         grpc::ServerReader<v1::UploadTraceRequest>* reader,
                                         v1::UploadTraceResponse* response) {
  Call call(this, ctx, "UploadTrace");
  if (!call.Authorized()) return call.Unauthenticated();
  std::string bytes;
  std::string name;
  v1::UploadTraceRequest chunk;
  bool first = true;
  while (reader->Read(&chunk)) {
    if (first) {
      name = chunk.name();
      first = false;
      if (chunk.total_bytes() > options_.max_trace_bytes) {
        return call.Finish(Error(
            ErrorKind::kResourceLimit,
            absl::StrCat("trace ", name, " of ", chunk.total_bytes(), " bytes is over the "
                         "server's limit of ", options_.max_trace_bytes,
                         " bytes (--max-trace-bytes)")));
      }
    }
    if (static_cast<int64_t>(bytes.size() + chunk.chunk().size()) > options_.max_trace_bytes) {
      call.log().request_bytes = static_cast<int64_t>(bytes.size() + chunk.chunk().size());
      return call.Finish(Error(
          ErrorKind::kResourceLimit,
          absl::StrCat("trace ", name, " passes the server's limit of ", options_.max_trace_bytes,
                       " bytes (--max-trace-bytes) while uploading")));
    }
    bytes.append(chunk.chunk());
  }
  call.log().request_bytes = static_cast<int64_t>(bytes.size());
  if (ctx->IsCancelled()) {
    return call.Finish(Error(ErrorKind::kCancelled, "upload cancelled by the client"));
  }
  absl::StatusOr<std::shared_ptr<const StoredTrace>> stored =
      Ingest(name.empty() ? "uploaded trace" : name, bytes, &call);
  if (!stored.ok()) return call.Finish(stored.status());
  const Trace& t = (*stored)->trace;
  v1::TraceInfo* info = response->mutable_trace();
  info->set_trace_id((*stored)->id);
  info->set_source(t.source());
  info->set_size_bytes(static_cast<int64_t>(bytes.size()));
  info->set_num_iterations(t.num_iterations());
  info->set_num_ops(t.num_ops());
  info->set_num_tensors(t.num_tensors());
  for (int32_t i = 0; i < t.num_iterations(); ++i) {
    v1::IterationInfo* it = info->add_iterations();
    it->set_iteration(i);
    it->set_num_ops(t.iteration(i).num_ops());
    it->set_op_sequence_hash((*stored)->fingerprints[static_cast<size_t>(i)].op_sequence_hash);
  }
  info->set_device_name(t.metadata().device_name);
  info->set_device_memory_bytes(t.metadata().device_memory_bytes);
  call.log().response_bytes = static_cast<int64_t>(response->ByteSizeLong());
  return call.Finish(absl::OkStatus());
}

}  // namespace swapplan
