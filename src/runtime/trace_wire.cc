// Binary trace encoding without libprotobuf. See trace_wire.h; the field
// numbers are proto/trace.proto's, the record order binary_io.cc's
// BinaryWriter's.
#include "runtime/trace_wire.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"

namespace swapplan::runtime {
namespace {

// Field numbers of proto/trace.proto.
namespace field {
// TraceRecord (oneof record).
constexpr uint32_t kRecordHeader = 1;
constexpr uint32_t kRecordTensors = 3;
constexpr uint32_t kRecordIterationBegin = 4;
constexpr uint32_t kRecordOps = 5;
constexpr uint32_t kRecordMemoryEvents = 6;
constexpr uint32_t kRecordIterationEnd = 7;
constexpr uint32_t kRecordEnd = 8;
constexpr uint32_t kRecordSavedTensorEvents = 9;
// TraceHeader.
constexpr uint32_t kHeaderFormatVersion = 1;
constexpr uint32_t kHeaderMetadata = 2;
constexpr uint32_t kHeaderOpNames = 3;
// TraceMetadata.
constexpr uint32_t kMetaDeviceName = 1;
constexpr uint32_t kMetaDeviceMemoryBytes = 2;
constexpr uint32_t kMetaH2d = 3;
constexpr uint32_t kMetaD2h = 4;
constexpr uint32_t kMetaFramework = 5;
constexpr uint32_t kMetaRecorder = 6;
constexpr uint32_t kMetaRecorderVersion = 7;
constexpr uint32_t kMetaModelName = 8;
constexpr uint32_t kMetaModelLayers = 9;
constexpr uint32_t kMetaAttributes = 10;
constexpr uint32_t kAttributeKey = 1;
constexpr uint32_t kAttributeValue = 2;
// TensorChunk / Tensor.
constexpr uint32_t kChunkTensors = 1;
constexpr uint32_t kTensorId = 1;
constexpr uint32_t kTensorSizeBytes = 2;
constexpr uint32_t kTensorDType = 3;
constexpr uint32_t kTensorShape = 4;
constexpr uint32_t kTensorKind = 5;
constexpr uint32_t kTensorStorageId = 6;
constexpr uint32_t kTensorDeviceAddress = 7;
constexpr uint32_t kTensorPersistent = 8;
constexpr uint32_t kTensorName = 9;
// OpChunk / Op.
constexpr uint32_t kChunkOps = 1;
constexpr uint32_t kOpNameId = 1;
constexpr uint32_t kOpPhase = 2;
constexpr uint32_t kOpInputs = 3;
constexpr uint32_t kOpOutputs = 4;
constexpr uint32_t kOpDurationNs = 5;
constexpr uint32_t kOpAllocatorBytesInUse = 6;
constexpr uint32_t kOpStackId = 7;
constexpr uint32_t kOpMicroBatch = 8;
constexpr uint32_t kOpLayer = 9;
// MemoryEventChunk / MemoryEvent.
constexpr uint32_t kChunkEvents = 1;
constexpr uint32_t kEventOpIndex = 1;
constexpr uint32_t kEventKind = 2;
constexpr uint32_t kEventTensorId = 3;
constexpr uint32_t kEventPassive = 4;
// SavedTensorEventChunk / SavedTensorEvent.
constexpr uint32_t kChunkSaved = 1;
constexpr uint32_t kSavedPosition = 1;
constexpr uint32_t kSavedUnpack = 2;
constexpr uint32_t kSavedTensorId = 3;  // proto3 optional: written when set, 0 too
// IterationBegin, IterationEnd, TraceEnd.
constexpr uint32_t kIterationBeginIndex = 1;
constexpr uint32_t kIterationEndWallTimeNs = 1;
constexpr uint32_t kEndNumTensors = 1;
constexpr uint32_t kEndNumIterations = 2;
constexpr uint32_t kEndNumOps = 3;
constexpr uint32_t kEndNumMemoryEvents = 4;
}  // namespace field

// A signed value as protobuf puts it in a varint (sign-extended to 64 bits).
uint64_t Signed(int64_t v) { return static_cast<uint64_t>(v); }

// proto3 implicit presence: a zero scalar / empty text is not written.
void VarintIfNonZero(std::string* out, uint32_t f, uint64_t v) {
  if (v != 0) AppendVarintField(out, f, v);
}
void BytesIfNonEmpty(std::string* out, uint32_t f, absl::string_view s) {
  if (!s.empty()) AppendBytesField(out, f, s);
}
void DoubleIfNonZero(std::string* out, uint32_t f, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  if (bits != 0) AppendDoubleField(out, f, v);  // -0.0 is written, as protobuf does
}

// A packed repeated varint field (left out when empty); `value(i)` gives
// element i as a varint.
template <typename Value>
void AppendPacked(std::string* out, uint32_t f, size_t n, Value value) {
  if (n == 0) return;
  uint64_t bytes = 0;
  for (size_t i = 0; i < n; ++i) bytes += static_cast<uint64_t>(VarintSize(value(i)));
  AppendTag(out, f, WireType::kLengthDelimited);
  AppendVarint(out, bytes);
  for (size_t i = 0; i < n; ++i) AppendVarint(out, value(i));
}

void EncodeMetadata(const TraceMetadata& m, std::string* out) {
  BytesIfNonEmpty(out, field::kMetaDeviceName, m.device_name);
  VarintIfNonZero(out, field::kMetaDeviceMemoryBytes, Signed(m.device_memory_bytes));
  DoubleIfNonZero(out, field::kMetaH2d, m.h2d_bandwidth_bytes_per_s);
  DoubleIfNonZero(out, field::kMetaD2h, m.d2h_bandwidth_bytes_per_s);
  BytesIfNonEmpty(out, field::kMetaFramework, m.framework);
  BytesIfNonEmpty(out, field::kMetaRecorder, m.recorder);
  BytesIfNonEmpty(out, field::kMetaRecorderVersion, m.recorder_version);
  BytesIfNonEmpty(out, field::kMetaModelName, m.model_name);
  VarintIfNonZero(out, field::kMetaModelLayers, Signed(m.model_layers));
  std::string attribute;
  for (const auto& [key, value] : m.attributes) {
    attribute.clear();
    BytesIfNonEmpty(&attribute, field::kAttributeKey, key);
    BytesIfNonEmpty(&attribute, field::kAttributeValue, value);
    AppendBytesField(out, field::kMetaAttributes, attribute);
  }
}

void EncodeTensor(const Trace& t, TensorId i, std::string* out) {
  const TensorInfo& info = t.tensor(i);
  VarintIfNonZero(out, field::kTensorId, info.trace_id);
  VarintIfNonZero(out, field::kTensorSizeBytes, Signed(info.size_bytes));
  VarintIfNonZero(out, field::kTensorDType, static_cast<uint64_t>(info.dtype));
  const absl::Span<const int64_t> shape = t.shape(i);
  AppendPacked(out, field::kTensorShape, shape.size(), [&](size_t k) { return Signed(shape[k]); });
  VarintIfNonZero(out, field::kTensorKind, static_cast<uint64_t>(info.kind));
  if (info.storage_id >= 0) AppendVarintField(out, field::kTensorStorageId, Signed(info.storage_id));
  if (info.device_address != 0) {
    AppendVarintField(out, field::kTensorDeviceAddress, info.device_address);
  }
  if (info.persistent != KindIsPersistentByDefault(info.kind)) {
    AppendVarintField(out, field::kTensorPersistent, info.persistent ? 1 : 0);
  }
  BytesIfNonEmpty(out, field::kTensorName, t.tensor_name(i));
}

void EncodeOp(const Trace& t, OpIndex i, std::string* out) {
  const OpInfo& op = t.op(i);
  VarintIfNonZero(out, field::kOpNameId, static_cast<uint32_t>(op.name));
  VarintIfNonZero(out, field::kOpPhase, static_cast<uint64_t>(op.phase));
  const absl::Span<const TensorId> in = t.inputs(i);
  const absl::Span<const TensorId> outs = t.outputs(i);
  AppendPacked(out, field::kOpInputs, in.size(), [&](size_t k) { return t.tensor(in[k]).trace_id; });
  AppendPacked(out, field::kOpOutputs, outs.size(),
               [&](size_t k) { return t.tensor(outs[k]).trace_id; });
  // Optional fields: -1 means absent in the model; present ones are >= 0.
  if (op.duration_ns >= 0) AppendVarintField(out, field::kOpDurationNs, Signed(op.duration_ns));
  if (op.allocator_bytes_in_use >= 0) {
    AppendVarintField(out, field::kOpAllocatorBytesInUse, Signed(op.allocator_bytes_in_use));
  }
  if (op.stack_id >= 0) AppendVarintField(out, field::kOpStackId, Signed(op.stack_id));
  if (op.micro_batch >= 0) AppendVarintField(out, field::kOpMicroBatch, Signed(op.micro_batch));
  if (op.layer >= 0) AppendVarintField(out, field::kOpLayer, Signed(op.layer));
}

void EncodeEvent(const Trace& t, const IterationInfo& iter, const MemoryEvent& e,
                 std::string* out) {
  VarintIfNonZero(out, field::kEventOpIndex, static_cast<uint32_t>(e.op - iter.op_begin));
  VarintIfNonZero(out, field::kEventKind, static_cast<uint64_t>(e.kind));
  VarintIfNonZero(out, field::kEventTensorId, t.tensor(e.tensor).trace_id);
  VarintIfNonZero(out, field::kEventPassive, e.passive ? 1 : 0);
}

void EncodeSaved(const Trace& t, const SavedTensorEvent& e, std::string* out) {
  VarintIfNonZero(out, field::kSavedPosition, static_cast<uint32_t>(e.position));
  VarintIfNonZero(out, field::kSavedUnpack, e.unpack ? 1 : 0);
  if (e.tensor != kNoTensor) {
    AppendVarintField(out, field::kSavedTensorId, t.tensor(e.tensor).trace_id);
  }
}

// Appends records to the output: each a varint length, then a TraceRecord
// whose oneof holds the message `body` under `record_field`.
class RecordWriter {
 public:
  explicit RecordWriter(std::string* out) : out_(out) {}

  void Emit(uint32_t record_field, absl::string_view body) {
    const uint64_t key = (static_cast<uint64_t>(record_field) << 3) |
                         static_cast<uint64_t>(WireType::kLengthDelimited);
    const uint64_t record_bytes = static_cast<uint64_t>(VarintSize(key)) +
                                  static_cast<uint64_t>(VarintSize(body.size())) + body.size();
    AppendVarint(out_, record_bytes);
    AppendBytesField(out_, record_field, body);
  }

  // Emits chunks of at most `per_chunk` items [0, n): item k goes through
  // `encode(k, scratch)` and is appended as field `item_field` of the chunk.
  // at_least_one: an empty chunk for n = 0 too (SavedTensorEventChunk: it
  // marks the iteration's events as recorded).
  template <typename Encode>
  void EmitChunked(uint32_t record_field, uint32_t item_field, size_t n, size_t per_chunk,
                   Encode encode, bool at_least_one = false) {
    if (n == 0 && at_least_one) {
      Emit(record_field, "");
      return;
    }
    for (size_t b = 0; b < n; b += per_chunk) {
      chunk_.clear();
      const size_t e = std::min(n, b + per_chunk);
      for (size_t k = b; k < e; ++k) {
        item_.clear();
        encode(k, &item_);
        AppendBytesField(&chunk_, item_field, item_);
      }
      Emit(record_field, chunk_);
    }
  }

 private:
  std::string* out_;
  std::string chunk_;  // scratch: one chunk message
  std::string item_;   // scratch: one item of it
};

}  // namespace

int VarintSize(uint64_t v) {
  int n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

void AppendVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void AppendTag(std::string* out, uint32_t field, WireType type) {
  AppendVarint(out, (static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(type));
}

void AppendVarintField(std::string* out, uint32_t field, uint64_t v) {
  AppendTag(out, field, WireType::kVarint);
  AppendVarint(out, v);
}

void AppendBytesField(std::string* out, uint32_t field, absl::string_view bytes) {
  AppendTag(out, field, WireType::kLengthDelimited);
  AppendVarint(out, bytes.size());
  out->append(bytes.data(), bytes.size());
}

void AppendDoubleField(std::string* out, uint32_t field, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  AppendTag(out, field, WireType::kFixed64);
  for (int k = 0; k < 8; ++k) out->push_back(static_cast<char>((bits >> (8 * k)) & 0xff));
}

absl::StatusOr<std::string> EncodeTraceBinary(const Trace& trace,
                                              const TraceWriteOptions& options) {
  if (options.ops_per_chunk < 1 || options.tensors_per_chunk < 1 || options.events_per_chunk < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "trace chunk sizes must be >= 1 (ops ", options.ops_per_chunk, ", tensors ",
        options.tensors_per_chunk, ", events ", options.events_per_chunk, ")"));
  }
  std::string out(kTraceMagic);
  RecordWriter records(&out);

  std::string body;
  AppendVarintField(&body, field::kHeaderFormatVersion, kTraceFormatVersion);
  std::string metadata;
  EncodeMetadata(trace.metadata(), &metadata);
  AppendBytesField(&body, field::kHeaderMetadata, metadata);  // always set by the writer
  for (const std::string& name : trace.op_names()) {
    AppendBytesField(&body, field::kHeaderOpNames, name);  // repeated: "" is written too
  }
  records.Emit(field::kRecordHeader, body);

  records.EmitChunked(field::kRecordTensors, field::kChunkTensors,
                      static_cast<size_t>(trace.num_tensors()),
                      static_cast<size_t>(options.tensors_per_chunk),
                      [&](size_t k, std::string* item) {
                        EncodeTensor(trace, static_cast<TensorId>(k), item);
                      });
  for (int32_t it = 0; it < trace.num_iterations(); ++it) {
    const IterationInfo& iter = trace.iteration(it);
    body.clear();
    VarintIfNonZero(&body, field::kIterationBeginIndex, static_cast<uint32_t>(it));
    records.Emit(field::kRecordIterationBegin, body);
    records.EmitChunked(field::kRecordOps, field::kChunkOps, static_cast<size_t>(iter.num_ops()),
                        static_cast<size_t>(options.ops_per_chunk),
                        [&](size_t k, std::string* item) {
                          EncodeOp(trace, iter.op_begin + static_cast<OpIndex>(k), item);
                        });
    const absl::Span<const MemoryEvent> events = trace.iteration_events(it);
    records.EmitChunked(field::kRecordMemoryEvents, field::kChunkEvents, events.size(),
                        static_cast<size_t>(options.events_per_chunk),
                        [&](size_t k, std::string* item) {
                          EncodeEvent(trace, iter, events[k], item);
                        });
    if (iter.saved_recorded) {
      const absl::Span<const SavedTensorEvent> saved = trace.iteration_saved_events(it);
      records.EmitChunked(
          field::kRecordSavedTensorEvents, field::kChunkSaved, saved.size(),
          static_cast<size_t>(options.events_per_chunk),
          [&](size_t k, std::string* item) { EncodeSaved(trace, saved[k], item); },
          /*at_least_one=*/true);
    }
    body.clear();
    VarintIfNonZero(&body, field::kIterationEndWallTimeNs, Signed(iter.wall_time_ns));
    records.Emit(field::kRecordIterationEnd, body);
  }
  body.clear();
  VarintIfNonZero(&body, field::kEndNumTensors, static_cast<uint64_t>(trace.num_tensors()));
  VarintIfNonZero(&body, field::kEndNumIterations, static_cast<uint64_t>(trace.num_iterations()));
  VarintIfNonZero(&body, field::kEndNumOps, static_cast<uint64_t>(trace.num_ops()));
  VarintIfNonZero(&body, field::kEndNumMemoryEvents, trace.events().size());
  records.Emit(field::kRecordEnd, body);
  return out;
}

}  // namespace swapplan::runtime
