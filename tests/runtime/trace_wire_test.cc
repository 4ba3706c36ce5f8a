// The runtime's own binary trace encoder (src/runtime/trace_wire.h) against
// the protobuf-based reader and writer of the full library: byte equality
// with TraceToBinary, and ReadTrace of every form the runtime writes
// (run.trace, run.trace.gz, run.json, run.json.gz) giving back the same
// trace, field by field — for an execution record of the runtime, for
// randomized traces covering every field of the format (seed printed;
// SWAPPLAN_TEST_SEED=N reruns one), and for edge cases (zero values of every
// field, 10-byte varints of negative values).
#include <algorithm>
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "runtime/file_io.h"
#include "runtime/trace_wire.h"
#include "runtime_test_support.h"
#include "swapplan/trace/builder.h"
#include "swapplan/trace/io.h"
#include "trace.pb.h"

namespace swapplan::runtime::testing {
namespace {

uint64_t Bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// Every field of two traces' models (not their sources) is the same.
void CheckSameTrace(const Trace& a, const Trace& b) {
  const TraceMetadata& ma = a.metadata();
  const TraceMetadata& mb = b.metadata();
  CHECK(ma.device_name == mb.device_name);
  CHECK(ma.device_memory_bytes == mb.device_memory_bytes);
  CHECK(Bits(ma.h2d_bandwidth_bytes_per_s) == Bits(mb.h2d_bandwidth_bytes_per_s));
  CHECK(Bits(ma.d2h_bandwidth_bytes_per_s) == Bits(mb.d2h_bandwidth_bytes_per_s));
  CHECK(ma.framework == mb.framework);
  CHECK(ma.recorder == mb.recorder);
  CHECK(ma.recorder_version == mb.recorder_version);
  CHECK(ma.model_name == mb.model_name);
  CHECK(ma.model_layers == mb.model_layers);
  CHECK(ma.attributes == mb.attributes);
  CHECK(a.op_names() == b.op_names());
  REQUIRE(a.num_tensors() == b.num_tensors());
  for (TensorId t = 0; t < a.num_tensors(); ++t) {
    INFO("tensor #" << t);
    const TensorInfo& x = a.tensor(t);
    const TensorInfo& y = b.tensor(t);
    CHECK(x.trace_id == y.trace_id);
    CHECK(x.size_bytes == y.size_bytes);
    CHECK(x.storage_id == y.storage_id);
    CHECK(x.device_address == y.device_address);
    CHECK(x.dtype == y.dtype);
    CHECK(x.kind == y.kind);
    CHECK(x.persistent == y.persistent);
    CHECK(std::vector<int64_t>(a.shape(t).begin(), a.shape(t).end()) ==
          std::vector<int64_t>(b.shape(t).begin(), b.shape(t).end()));
    CHECK(a.tensor_name(t) == b.tensor_name(t));
    CHECK(a.lifetime(t).alloc_op == b.lifetime(t).alloc_op);
    CHECK(a.lifetime(t).free_op == b.lifetime(t).free_op);
  }
  REQUIRE(a.num_ops() == b.num_ops());
  for (OpIndex i = 0; i < a.num_ops(); ++i) {
    INFO("op " << i);
    const OpInfo& x = a.op(i);
    const OpInfo& y = b.op(i);
    CHECK(x.name == y.name);
    CHECK(x.phase == y.phase);
    CHECK(x.micro_batch == y.micro_batch);
    CHECK(x.layer == y.layer);
    CHECK(x.duration_ns == y.duration_ns);
    CHECK(x.allocator_bytes_in_use == y.allocator_bytes_in_use);
    CHECK(x.stack_id == y.stack_id);
    CHECK(std::vector<TensorId>(a.inputs(i).begin(), a.inputs(i).end()) ==
          std::vector<TensorId>(b.inputs(i).begin(), b.inputs(i).end()));
    CHECK(std::vector<TensorId>(a.outputs(i).begin(), a.outputs(i).end()) ==
          std::vector<TensorId>(b.outputs(i).begin(), b.outputs(i).end()));
  }
  REQUIRE(a.num_iterations() == b.num_iterations());
  for (int32_t it = 0; it < a.num_iterations(); ++it) {
    CHECK(a.iteration(it).op_begin == b.iteration(it).op_begin);
    CHECK(a.iteration(it).op_end == b.iteration(it).op_end);
    CHECK(a.iteration(it).event_begin == b.iteration(it).event_begin);
    CHECK(a.iteration(it).event_end == b.iteration(it).event_end);
    CHECK(a.iteration(it).wall_time_ns == b.iteration(it).wall_time_ns);
  }
  REQUIRE(a.events().size() == b.events().size());
  for (size_t e = 0; e < a.events().size(); ++e) {
    INFO("event " << e);
    CHECK(a.events()[e].op == b.events()[e].op);
    CHECK(a.events()[e].tensor == b.events()[e].tensor);
    CHECK(a.events()[e].kind == b.events()[e].kind);
    CHECK(a.events()[e].passive == b.events()[e].passive);
  }
  CHECK(a.has_op_durations() == b.has_op_durations());
  CHECK(a.has_allocator_bytes() == b.has_allocator_bytes());
  CHECK(TraceToJson(a) == TraceToJson(b));
}

// The encoder's bytes equal protobuf's for `options`; the runtime's four
// file forms read back (through the protobuf reader for the binary ones) as
// `t` itself and as each other.
void CheckAllForms(const Trace& t, const TraceWriteOptions& options, const std::string& dir) {
  absl::StatusOr<std::string> mine = EncodeTraceBinary(t, options);
  REQUIRE(mine.ok());
  const std::string theirs = TraceToBinary(t, options);
  CHECK(mine->size() == theirs.size());
  CHECK(*mine == theirs);
  absl::StatusOr<Trace> parsed = ParseTraceBinary(*mine, "encoded");
  REQUIRE(parsed.ok());
  CheckSameTrace(t, *parsed);

  absl::StatusOr<Trace> from_json;
  for (const char* name : {"run.json", "run.json.gz", "run.trace", "run.trace.gz"}) {
    INFO(name);
    const std::string path = dir + "/" + name;
    REQUIRE(WriteTraceFile(t, path).ok());
    absl::StatusOr<std::string> raw = ReadFileContent(path);  // gunzipped
    REQUIRE(raw.ok());
    const bool binary = std::string(name).find(".json") == std::string::npos;
    CHECK((raw->rfind(std::string(kTraceMagic), 0) == 0) == binary);
    absl::StatusOr<Trace> back = ReadTrace(path);
    REQUIRE(back.ok());
    CheckSameTrace(t, *back);
    if (!binary) {
      if (!from_json.ok()) from_json = std::move(back);
      continue;
    }
    REQUIRE(from_json.ok());
    CheckSameTrace(*from_json, *back);  // binary read == JSON read
  }
}

TEST_CASE("trace wire: varints and fields are protobuf's bytes") {
  // Varint sizes: 7 bits a byte; a negative int64 is 2^64 + v, 10 bytes.
  CHECK(VarintSize(0) == 1);
  CHECK(VarintSize(127) == 1);
  CHECK(VarintSize(128) == 2);
  CHECK(VarintSize(static_cast<uint64_t>(int64_t{-1})) == 10);
  CHECK(VarintSize(std::numeric_limits<uint64_t>::max()) == 10);
  std::string s;
  AppendVarint(&s, 300);  // 300 = 0b10_0101100 -> 0xac 0x02
  CHECK(s == std::string("\xac\x02", 2));

  const int64_t values[] = {0, 1, 127, 128, 300, -1, -300, std::numeric_limits<int64_t>::min(),
                            std::numeric_limits<int64_t>::max()};
  for (int64_t v : values) {
    INFO("value " << v);
    // Op.duration_ns (field 5) is `optional int64`: written even when 0.
    proto::Op op;
    op.set_duration_ns(v);
    std::string mine;
    AppendVarintField(&mine, 5, static_cast<uint64_t>(v));
    CHECK(mine == op.SerializeAsString());
    // 1 tag byte + a 10-byte varint for every negative value.
    if (v < 0) CHECK(mine.size() == 11);
    // Op.micro_batch (field 8) is `optional int32`: sign-extended as well.
    const int32_t v32 = static_cast<int32_t>(v);
    proto::Op op32;
    op32.set_micro_batch(v32);
    std::string mine32;
    AppendVarintField(&mine32, 8, static_cast<uint64_t>(int64_t{v32}));
    CHECK(mine32 == op32.SerializeAsString());
  }
  // Doubles: fixed 64-bit little-endian; -0.0 is written (its bits are not 0).
  for (double v : {-0.0, 1.0, 2.5e10, std::numeric_limits<double>::denorm_min()}) {
    proto::TraceMetadata m;
    m.set_h2d_bandwidth_bytes_per_s(v);
    std::string mine;
    AppendDoubleField(&mine, 3, v);
    CHECK(mine == m.SerializeAsString());
  }
  // Text: length-delimited, bytes as they are (UTF-8 included).
  proto::Attribute a;
  a.set_key("sequence_length_\xc3\xa9");
  std::string mine;
  AppendBytesField(&mine, 1, "sequence_length_\xc3\xa9");
  CHECK(mine == a.SerializeAsString());
}

TEST_CASE("trace wire: zero values of every field, empty strings, one op") {
  // Everything that proto3 leaves out when zero is zero here: tensor id 0
  // (dense ids), dtype UNKNOWN, kind OTHER, an empty shape, op name id 0,
  // phase FORWARD, event op_index 0 / kind ALLOC / tensor 0, wall time 0,
  // no metadata; the `optional` fields set to 0 (storage_id, duration,
  // allocator bytes, stack, micro-batch, layer) must still be written.
  TraceBuilder b("zeros");
  b.AddOpName("");  // an empty op name: a repeated element, written
  const int64_t zero_dim[] = {0, 3};
  b.AddTensor({.id = 0, .size_bytes = 1, .storage_id = 0});
  b.AddTensor({.id = 1, .size_bytes = 1, .dtype = DType::kFloat32, .shape = zero_dim,
               .kind = TensorKind::kParameter, .persistent = 0});
  b.BeginIteration();
  b.AddMemoryEvent(0, MemoryEventKind::kAlloc, 0);
  b.AddMemoryEvent(0, MemoryEventKind::kAlloc, 1);
  const uint64_t outs[] = {0, 1};
  b.AddOp({.name = 0, .phase = Phase::kForward, .outputs = outs, .duration_ns = 0,
           .allocator_bytes_in_use = 0, .stack_id = 0, .micro_batch = 0, .layer = 0});
  b.EndIteration(0);
  absl::StatusOr<Trace> t = std::move(b).Finish();
  REQUIRE(t.ok());
  CheckAllForms(*t, {}, TempDir("trace_wire_zeros"));

  // The zero-byte tensor is not a trace (bad-size): the encoder never gets
  // one, whatever the runtime recorded.
  TraceBuilder z("zero-bytes");
  z.AddOpName("x");
  z.AddTensor({.id = 1, .size_bytes = 0});
  z.BeginIteration();
  const uint64_t one[] = {1};
  z.AddOp({.name = 0, .outputs = one});
  z.EndIteration(0);
  absl::StatusOr<Trace> bad = std::move(z).Finish();
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("[bad-size]") != std::string::npos);

  // Chunk sizes below 1 are refused, as TraceWriteOptions::Validate does.
  TraceWriteOptions o;
  o.ops_per_chunk = 0;
  absl::StatusOr<std::string> refused = EncodeTraceBinary(*t, o);
  CHECK(absl::IsInvalidArgument(refused.status()));
  CHECK(refused.status().message().find("chunk sizes must be >= 1") != std::string::npos);
}

TEST_CASE("trace wire: the runtime's execution record in every form") {
  // LayeredProgram(4, 1000, 100) in a 4000-byte device: Algorithm 3 swaps
  // (passive SWAP_OUT / SWAP_IN), the record has ALLOC / FREE events, op
  // durations, allocator bytes, micro-batches and persistent tensors.
  const Program p = LayeredProgram(4, 1000, 100);
  EnvOptions o;
  o.capacity_bytes = 4000;
  o.runtime.keep_record = true;
  Env env = MakeEnv(o);
  REQUIRE(env.rt != nullptr);
  Runner run(env);
  REQUIRE(run.AllocatePersistent(p).ok());
  for (int i = 0; i < 3; ++i) REQUIRE(run.Iteration(p).ok());
  absl::StatusOr<Trace> rec = env.rt->RecordTrace();
  REQUIRE(rec.ok());
  REQUIRE(rec->num_iterations() == 3);
  int kinds[4] = {0, 0, 0, 0};
  int passive = 0;
  for (const MemoryEvent& e : rec->events()) {
    ++kinds[static_cast<int>(e.kind)];
    passive += e.passive;
  }
  CHECK(kinds[0] > 0);  // ALLOC
  CHECK(kinds[1] > 0);  // FREE
  CHECK(kinds[2] > 0);  // SWAP_OUT
  CHECK(kinds[3] > 0);  // SWAP_IN
  CHECK(passive > 0);
  const std::string dir = TempDir("trace_wire_record");
  CheckAllForms(*rec, {}, dir);
  TraceWriteOptions small;  // several chunks of every kind
  small.ops_per_chunk = 3;
  small.tensors_per_chunk = 2;
  small.events_per_chunk = 1;
  CheckAllForms(*rec, small, dir);
  // Through the Runtime's own entry point too.
  REQUIRE(env.rt->WriteRecord(dir + "/rt.trace.gz").ok());
  absl::StatusOr<Trace> back = ReadTrace(dir + "/rt.trace.gz");
  REQUIRE(back.ok());
  CheckSameTrace(*rec, *back);
}

TEST_CASE("trace wire: a record's saved-tensor events in every form") {
  // The toy program (A = tensor 0, made by op 0, last read by op 5), three
  // iterations. The first reports, after op 0, a pack of A and one of a
  // storage the runtime does not hold, and after op 4 an unpack of A; the
  // second is watched but no event fires; the third is not watched.
  const Program p = ToyProgram();
  EnvOptions o;
  o.runtime.keep_record = true;
  Env env = MakeEnv(o);
  REQUIRE(env.rt != nullptr);
  Runner run(env);
  int iteration = 0;
  TensorHandle a = kNoTensorHandle;
  run.before_op = [&](int op) {
    if (iteration == 1 && op == 0) REQUIRE(env.rt->MarkSavedTensorEventsRecorded().ok());
  };
  run.after_op = [&](int op) {
    if (iteration != 0) return;
    if (op == 0) {
      a = run.handle(0);
      REQUIRE(env.rt->SavedTensorEvent(/*unpack=*/false, a).ok());
      REQUIRE(env.rt->SavedTensorEvent(/*unpack=*/false, kNoTensorHandle).ok());
    }
    if (op == 4) REQUIRE(env.rt->SavedTensorEvent(/*unpack=*/true, a).ok());
  };
  for (; iteration < 3; ++iteration) REQUIRE(run.Iteration(p).ok());
  // Between iterations: ignored.
  REQUIRE(env.rt->SavedTensorEvent(/*unpack=*/false, kNoTensorHandle).ok());
  // A was freed after op 5 of the last iteration: its handle is stale.
  const absl::Status stale = env.rt->SavedTensorEvent(/*unpack=*/false, a);
  CHECK(stale.code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(stale.message()).find("does not name a live tensor") != std::string::npos);

  absl::StatusOr<Trace> rec = env.rt->RecordTrace();
  REQUIRE(rec.ok());
  REQUIRE(rec->num_iterations() == 3);
  CHECK(rec->iteration(0).saved_recorded);
  CHECK(rec->iteration(1).saved_recorded);
  CHECK(!rec->iteration(2).saved_recorded);
  CHECK(rec->iteration_saved_events(1).empty());
  CHECK(rec->iteration_saved_events(2).empty());
  absl::Span<const SavedTensorEvent> saved = rec->iteration_saved_events(0);
  REQUIRE(saved.size() == 3);
  const TensorId a_in_trace = rec->outputs(rec->iteration(0).op_begin)[0];
  // After op 0: 1 op completed; after op 4: 5.
  CHECK((saved[0].position == 1 && !saved[0].unpack && saved[0].tensor == a_in_trace));
  CHECK((saved[1].position == 1 && !saved[1].unpack && saved[1].tensor == kNoTensor));
  CHECK((saved[2].position == 5 && saved[2].unpack && saved[2].tensor == a_in_trace));

  // The encoder's bytes are protobuf's, the empty chunk of the watched
  // iteration included, in one chunk and in one event per chunk.
  const std::string dir = TempDir("trace_wire_saved");
  CheckAllForms(*rec, {}, dir);
  TraceWriteOptions small;
  small.events_per_chunk = 1;
  CheckAllForms(*rec, small, dir);
  absl::StatusOr<Trace> back = ReadTrace(dir + "/run.trace");  // CheckSameTrace: JSON equal
  REQUIRE(back.ok());
  for (int32_t it = 0; it < 3; ++it) {
    CHECK(back->iteration(it).saved_recorded == rec->iteration(it).saved_recorded);
    CHECK(back->iteration_saved_events(it).size() == rec->iteration_saved_events(it).size());
  }
}

// Text with ASCII, Latin, CJK, emoji (4-byte UTF-8) and an empty string.
std::string RandomText(std::mt19937_64& rng, int salt) {
  static const char* const kParts[] = {"", "aten::mm", "layer.\xc3\xa9t\xc3\xa9", "\xe6\xa8\xa1\xe5\x9e\x8b",
                                       "\xf0\x9f\x9a\x80", "x"};
  std::string s = kParts[rng() % 6];
  if (rng() % 2) s += kParts[rng() % 6];
  if (!s.empty() || salt >= 0) s += std::to_string(salt);
  return s;
}

// A random valid trace: every field of the format, every event kind, passive
// flags, 1-3 iterations. Per iteration, ops go FORWARD, BACKWARD, OPTIMIZER
// (OTHER anywhere); a transient tensor is ALLOCated at op a, used in [a, f],
// optionally swapped out after op s and back in at op r (unused between),
// FREEd after op f — or freed while off the device; persistent tensors are
// used anywhere and swapped now and then.
absl::StatusOr<Trace> RandomTrace(std::mt19937_64& rng) {
  auto pick = [&](int64_t lo, int64_t hi) {  // uniform in [lo, hi]
    return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  TraceBuilder b("random");
  TraceMetadata& m = b.metadata();
  m.device_name = RandomText(rng, -1);
  m.device_memory_bytes = pick(0, 1) ? pick(0, int64_t{1} << 40) : 0;
  const double doubles[] = {0.0, -0.0, 2.5e10, 1.0 / 3.0, 1e-300, 123456789.0};
  m.h2d_bandwidth_bytes_per_s = doubles[pick(0, 5)];
  m.d2h_bandwidth_bytes_per_s = doubles[pick(0, 5)];
  m.framework = RandomText(rng, -1);
  m.recorder = RandomText(rng, -1);
  m.recorder_version = RandomText(rng, -1);
  m.model_name = RandomText(rng, -1);
  m.model_layers = static_cast<int32_t>(pick(0, 3) == 0 ? 0 : pick(1, 96));
  for (int k = 0, n = static_cast<int>(pick(0, 3)); k < n; ++k) {
    m.attributes.emplace_back("key" + std::to_string(k) + RandomText(rng, -1),
                              k == 0 ? "" : RandomText(rng, k));
  }
  std::sort(m.attributes.begin(), m.attributes.end());

  const int names = static_cast<int>(pick(1, 6));
  for (int k = 0; k < names; ++k) b.AddOpName(RandomText(rng, k));  // unique by the salt

  const int iterations = static_cast<int>(pick(1, 3));
  std::vector<int> ops_per_iteration;
  for (int i = 0; i < iterations; ++i) ops_per_iteration.push_back(static_cast<int>(pick(3, 14)));

  struct Planned {
    uint64_t id;
    int iteration = -1;  // -1: persistent
    int a = 0, f = 0, s = -1, r = -1;  // alloc, free, swap out after, swap in at
    bool free_while_off = false;
    bool events = true;  // false: allocated at first use, freed after last use
  };
  std::vector<Planned> tensors;
  std::vector<uint64_t> used_ids;
  auto fresh_id = [&]() {
    for (;;) {
      const uint64_t id = pick(0, 1) ? rng() : static_cast<uint64_t>(pick(0, 1000));
      if (std::find(used_ids.begin(), used_ids.end(), id) == used_ids.end()) {
        used_ids.push_back(id);
        return id;
      }
    }
  };
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::string> tensor_names;
  auto declare = [&](TensorKind kind, int8_t persistent) {
    const uint64_t id = fresh_id();
    std::vector<int64_t> shape;
    for (int d = 0, n = static_cast<int>(pick(0, 4)); d < n; ++d) shape.push_back(pick(0, 4096));
    shapes.push_back(std::move(shape));
    tensor_names.push_back(RandomText(rng, -1));
    TensorSpec spec;
    spec.id = id;
    spec.size_bytes = pick(0, 1) ? pick(1, 1024) : pick(1, int64_t{1} << 42);
    spec.dtype = static_cast<DType>(pick(0, kNumDTypes - 1));
    spec.shape = shapes.back();
    // The trace model requires numel x itemsize <= size_bytes (issue 19,
    // bad-shape): at most 4096^4 x 8 bytes = 2^51, so it fits.
    if (!spec.shape.empty() && DTypeBytes(spec.dtype) > 0) {
      int64_t numel = 1;
      for (int64_t d : spec.shape) numel *= d;
      spec.size_bytes = std::max(spec.size_bytes, numel * DTypeBytes(spec.dtype));
    }
    spec.kind = kind;
    // Absent (std::optional) a third of the time; a present id is >= 0.
    if (const int64_t storage = pick(0, int64_t{1} << 50); pick(0, 2) != 0) {
      spec.storage_id = storage;
    }
    spec.device_address = pick(0, 1) ? 0 : rng();
    spec.persistent = persistent;
    spec.name = tensor_names.back();
    b.AddTensor(spec);
    return id;
  };
  shapes.reserve(256);
  tensor_names.reserve(256);
  // Persistent tensors (by kind or by flag).
  for (int k = 0, n = static_cast<int>(pick(1, 4)); k < n; ++k) {
    const bool by_kind = pick(0, 1);
    tensors.push_back({declare(by_kind ? TensorKind::kParameter : static_cast<TensorKind>(pick(0, 6)),
                               by_kind ? int8_t{-1} : int8_t{1})});
  }
  // A tensor declared and never used.
  declare(static_cast<TensorKind>(pick(0, 6)), static_cast<int8_t>(pick(-1, 0)));
  for (int i = 0; i < iterations; ++i) {
    const int n = ops_per_iteration[i];
    for (int k = 0, count = static_cast<int>(pick(1, 6)); k < count; ++k) {
      Planned t{declare(static_cast<TensorKind>(pick(0, kNumTensorKinds - 1)), 0)};
      t.iteration = i;
      t.a = static_cast<int>(pick(0, n - 1));
      t.f = static_cast<int>(pick(t.a, n - 1));
      t.events = pick(0, 4) != 0;
      if (t.events && t.f > t.a && pick(0, 1)) {
        t.s = static_cast<int>(pick(t.a, t.f - 1));
        t.free_while_off = pick(0, 3) == 0;
        if (!t.free_while_off) t.r = static_cast<int>(pick(t.s + 1, t.f));
      }
      tensors.push_back(t);
    }
  }

  std::vector<uint64_t> in, out;
  for (int i = 0; i < iterations; ++i) {
    const int n = ops_per_iteration[i];
    b.BeginIteration();
    // Memory events (any order: the builder sorts them by op, stably).
    for (Planned& t : tensors) {
      if (t.iteration == -1) {  // persistent: out after op s, back at op r, or neither
        t.s = t.r = -1;
        if (pick(0, 2) != 0) continue;
        t.s = static_cast<int>(pick(0, n - 2));
        t.r = static_cast<int>(pick(t.s + 1, n - 1));
        b.AddMemoryEvent(t.s, MemoryEventKind::kSwapOut, t.id, pick(0, 1));
        b.AddMemoryEvent(t.r, MemoryEventKind::kSwapIn, t.id, pick(0, 1));
        continue;
      }
      if (t.iteration != i || !t.events) continue;
      b.AddMemoryEvent(t.a, MemoryEventKind::kAlloc, t.id);
      if (t.s >= 0) b.AddMemoryEvent(t.s, MemoryEventKind::kSwapOut, t.id, pick(0, 1));
      if (t.r >= 0) b.AddMemoryEvent(t.r, MemoryEventKind::kSwapIn, t.id, pick(0, 1));
      b.AddMemoryEvent(t.f, MemoryEventKind::kFree, t.id);
    }
    for (int op = 0; op < n; ++op) {
      in.clear();
      out.clear();
      for (const Planned& t : tensors) {
        const bool off = t.s >= 0 && op > t.s && (t.free_while_off || op < t.r);
        if (t.iteration == -1) {
          if (!off && pick(0, 3) == 0) in.push_back(t.id);
          continue;
        }
        if (t.iteration != i) continue;
        if (op == t.a) {
          out.push_back(t.id);
        } else if (op > t.a && op <= t.f && !off && pick(0, 2) == 0) {
          in.push_back(t.id);
        }
      }
      OpSpec spec;
      spec.name = static_cast<NameId>(pick(0, names - 1));
      const Phase by_position = op < n / 3 ? Phase::kForward
                                : op < n - 1 ? Phase::kBackward
                                             : Phase::kOptimizer;
      spec.phase = pick(0, 5) == 0 ? Phase::kOther : by_position;
      spec.inputs = in;
      spec.outputs = out;
      if (pick(0, 3)) spec.duration_ns = pick(0, 1) ? pick(0, 10) : pick(0, int64_t{1} << 45);
      if (pick(0, 1)) spec.allocator_bytes_in_use = pick(0, int64_t{1} << 40);
      if (pick(0, 1)) spec.stack_id = pick(0, 1) ? pick(0, 5) : static_cast<int64_t>(rng() >> 1);
      if (pick(0, 1)) spec.micro_batch = static_cast<int32_t>(pick(0, 3));
      if (pick(0, 1)) spec.layer = static_cast<int32_t>(pick(0, 200));
      b.AddOp(spec);
    }
    // Saved-tensor events: none recorded, recorded and none fired, or a few
    // (positions non-decreasing, 0 .. n; a tensor of the trace or none).
    if (const int64_t mode = pick(0, 2); mode > 0) {
      b.MarkSavedTensorEventsRecorded();
      uint32_t position = 0;
      for (int k = 0, count = mode == 1 ? 0 : static_cast<int>(pick(1, 5)); k < count; ++k) {
        position = static_cast<uint32_t>(pick(position, n));
        const Planned& t = tensors[static_cast<size_t>(pick(0, tensors.size() - 1))];
        b.AddSavedTensorEvent(position, pick(0, 1) == 1,
                              pick(0, 2) == 0 ? std::nullopt : std::optional<uint64_t>(t.id));
      }
    }
    b.EndIteration(pick(0, 3) == 0 ? 0 : pick(1, int64_t{1} << 50));
  }
  return std::move(b).Finish();
}

TEST_CASE("trace wire: randomized traces read back the same in every form") {
  uint64_t seed = 20261125;
  if (const char* s = std::getenv("SWAPPLAN_TEST_SEED")) seed = std::strtoull(s, nullptr, 10);
  std::cout << "trace wire randomized test: seed " << seed << " (SWAPPLAN_TEST_SEED)" << std::endl;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  const std::string dir = TempDir("trace_wire_random");
  for (int round = 0; round < 60; ++round) {
    INFO("round " << round);
    absl::StatusOr<Trace> t = RandomTrace(rng);
    if (!t.ok()) FAIL(t.status().ToString());
    TraceWriteOptions o;
    if (round % 2 == 1) {
      o.ops_per_chunk = static_cast<int>(1 + rng() % 4);
      o.tensors_per_chunk = static_cast<int>(1 + rng() % 4);
      o.events_per_chunk = static_cast<int>(1 + rng() % 4);
    }
    CheckAllForms(*t, o, dir);
  }
}

}  // namespace
}  // namespace swapplan::runtime::testing
