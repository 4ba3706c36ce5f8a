// Kineto traces (the Chrome-trace JSON torch.profiler writes): the events the
// importers use, kept compactly, and their structure per thread.
//
//   KinetoCapture cap;
//   SWAPPLAN_RETURN_IF_ERROR(ParseKineto(stream, "run.json", opts, nullptr, &cap));
//   KinetoIndex idx = IndexKineto(cap);   // nesting, attribution
//
// Kept: CPU ops and annotations (cat cpu_op / Operator / user_annotation),
// runtime launches (cuda_runtime / Runtime / cuda_driver), device activity
// (kernel / gpu_memcpy / gpu_memset and the older capitalised names) and the
// `[memory]` instant events; everything else is skipped while parsing.
// Times are kept in nanoseconds (Kineto writes microseconds, possibly with
// a fraction).
#ifndef SWAPPLAN_SRC_IMPORT_KINETO_H_
#define SWAPPLAN_SRC_IMPORT_KINETO_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <google/protobuf/io/zero_copy_stream.h>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "import/names.h"
#include "swapplan/import/import.h"

namespace swapplan::import_internal {

struct KOp {
  int64_t ts_ns = 0;
  int64_t end_ns = 0;
  int64_t external_id = -1;
  int64_t rf_id = -1;       // "Record function id"
  int32_t name = 0;         // KinetoCapture::names
  int32_t thread = 0;       // KinetoCapture::threads
  int32_t stack = -1;       // KinetoCapture::stacks ("Call stack")
  bool annotation = false;  // user_annotation category
  bool fwd_thread = false;  // "Fwd thread id" > 0
};

struct KLaunch {
  int64_t ts_ns = 0;
  int64_t correlation = -1;
  int32_t thread = 0;
};

struct KMemory {
  int64_t ts_ns = 0;
  int64_t addr = -1;             // -1: not recorded (older traces)
  int64_t bytes = 0;             // > 0 allocation, < 0 free
  int64_t total_allocated = -1;  // -1: not recorded
  int32_t thread = 0;
  int32_t device_type = 0;
  int32_t device_id = -1;
};

struct KinetoCapture {
  std::vector<KOp> ops;
  std::vector<KLaunch> launches;
  std::vector<KMemory> memory;
  // Device time per correlation id (kernels, copies, sets).
  absl::flat_hash_map<int64_t, int64_t> device_ns;
  std::vector<std::string> names;
  absl::flat_hash_map<std::string, int32_t> name_index;
  std::vector<std::string> threads;
  absl::flat_hash_map<std::string, int32_t> thread_index;
  std::vector<std::string> stacks;
  absl::flat_hash_map<std::string, int32_t> stack_index;
  struct Device {
    int64_t id = -1;
    std::string name;
    int64_t memory_bytes = 0;
  };
  std::vector<Device> devices;
  int64_t events = 0;  // trace events seen

  int32_t Intern(absl::string_view s, std::vector<std::string>* table,
                 absl::flat_hash_map<std::string, int32_t>* index);
};

absl::Status ParseKineto(google::protobuf::io::ZeroCopyInputStream* in, const std::string& source,
                         const ImportOptions& options, std::function<absl::Status()> stream_error,
                         KinetoCapture* cap);

// Structure derived from a capture.
struct KinetoIndex {
  std::vector<NameTraits> traits;   // per name
  std::vector<int32_t> parent;      // per op: enclosing op on its thread, -1
  std::vector<uint8_t> has_op_child;  // per op: encloses an operator (not an annotation)
  // per thread: runs autograd::engine functions and not the training loop
  std::vector<uint8_t> autograd_thread;
  // Innermost op (any kind) enclosing each launch / memory event on its
  // thread; -1 outside every op.
  std::vector<int32_t> launch_op;
  std::vector<int32_t> memory_op;
  // The memory events of the modelled device, in time order (indices into
  // KinetoCapture::memory), and that device ("cuda:1").
  std::vector<uint32_t> device_memory;
  std::string memory_device;
  int32_t memory_device_id = -1;
  bool any_device_activity = false;
};

// Nesting by time per thread, attribution of launches and memory events.
// O((ops + events) log(ops + events)).
KinetoIndex IndexKineto(const KinetoCapture& cap);

// True for an op the trace models (not an annotation, not an autograd
// wrapper).
inline bool IsOperator(const KinetoCapture& cap, const KinetoIndex& idx, size_t op) {
  const NameTraits& t = idx.traits[cap.ops[op].name];
  return !cap.ops[op].annotation && !t.annotation && !t.autograd;
}

}  // namespace swapplan::import_internal

#endif  // SWAPPLAN_SRC_IMPORT_KINETO_H_
