// Binary trace form: "SWPLTRC1" + length-delimited TraceRecord messages.
#include <algorithm>
#include <climits>
#include <new>
#include <optional>
#include <memory>
#include <string>
#include <utility>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "absl/strings/str_cat.h"
#include "swapplan/trace/builder.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/error.h"
#include "swapplan/util/file.h"
#include "swapplan/util/status_macros.h"
#include "util/gunzip_stream.h"
#include "trace.pb.h"

namespace swapplan {

namespace pbio = google::protobuf::io;
namespace pb = ::swapplan::proto;

namespace internal {

// Largest record accepted; real writers emit chunks of a few MB at most.
constexpr uint32_t kMaxRecordBytes = 1u << 30;

// An enum value from the wire when the schema defines it (0 .. count-1);
// anything else — negative, or a value a newer writer might add — is
// refused by the caller (rule bad-enum), never clamped into a valid one.
template <typename E>
bool EnumFromProto(int v, int count, E* out) {
  if (v < 0 || v >= count) return false;
  *out = static_cast<E>(v);
  return true;
}

void MetadataFromProto(const pb::TraceMetadata& m, TraceMetadata* out) {
  out->device_name = m.device_name();
  out->device_memory_bytes = m.device_memory_bytes();
  out->h2d_bandwidth_bytes_per_s = m.h2d_bandwidth_bytes_per_s();
  out->d2h_bandwidth_bytes_per_s = m.d2h_bandwidth_bytes_per_s();
  out->framework = m.framework();
  out->recorder = m.recorder();
  out->recorder_version = m.recorder_version();
  out->model_name = m.model_name();
  out->model_layers = m.model_layers();
  for (const pb::Attribute& a : m.attributes()) out->attributes.emplace_back(a.key(), a.value());
  std::sort(out->attributes.begin(), out->attributes.end());
}

void MetadataToProto(const TraceMetadata& m, pb::TraceMetadata* out) {
  out->set_device_name(m.device_name);
  out->set_device_memory_bytes(m.device_memory_bytes);
  out->set_h2d_bandwidth_bytes_per_s(m.h2d_bandwidth_bytes_per_s);
  out->set_d2h_bandwidth_bytes_per_s(m.d2h_bandwidth_bytes_per_s);
  out->set_framework(m.framework);
  out->set_recorder(m.recorder);
  out->set_recorder_version(m.recorder_version);
  out->set_model_name(m.model_name);
  out->set_model_layers(m.model_layers);
  for (const auto& [k, v] : m.attributes) {
    pb::Attribute* a = out->add_attributes();
    a->set_key(k);
    a->set_value(v);
  }
}

// Forwards another stream and remembers whether it ran out of data, so a
// record parse that fails can be told apart: truncated (the data ended
// before the announced length) or corrupt (a bad field within it).
class EndTrackingStream : public pbio::ZeroCopyInputStream {
 public:
  explicit EndTrackingStream(pbio::ZeroCopyInputStream* in) : in_(in) {}
  bool Next(const void** data, int* size) override {
    if (in_->Next(data, size)) return true;
    ended_ = true;
    return false;
  }
  void BackUp(int count) override { in_->BackUp(count); }
  bool Skip(int count) override {
    if (in_->Skip(count)) return true;
    ended_ = true;
    return false;
  }
  int64_t ByteCount() const override { return in_->ByteCount(); }
  // True once a Next() or Skip() found no more data.
  bool ended() const { return ended_; }

 private:
  pbio::ZeroCopyInputStream* in_;
  bool ended_ = false;
};

// Reads records from a zero-copy stream and feeds a TraceBuilder, checking
// record order.
class BinaryReader {
 public:
  BinaryReader(pbio::ZeroCopyInputStream* in, std::string source,
               std::function<absl::Status()> stream_error)
      : in_(in), builder_(std::move(source)), stream_error_(std::move(stream_error)) {}

  absl::StatusOr<Trace> Read() {
    SWAPPLAN_RETURN_IF_ERROR(ReadMagic());
    pb::TraceRecord record;
    while (true) {
      bool eof = false;
      SWAPPLAN_RETURN_IF_ERROR(NextRecord(&record, &eof));
      if (eof) break;
      SWAPPLAN_RETURN_IF_ERROR(Apply(record));
      ++record_index_;
    }
    if (!seen_end_) {
      return absl::DataLossError(
          absl::StrCat(builder_.source(), ": file ends after ", record_index_,
                       " records without the end record (cut at a record boundary?) "
                       "[truncated-record]"));
    }
    return std::move(builder_).Finish();
  }

 private:
  absl::Status Err(absl::string_view rule, absl::string_view what) {
    return WithRule(
        absl::InvalidArgumentError(absl::StrCat(builder_.source(), ": record ", record_index_,
                                                " (byte ", record_offset_, "): ", what, " [", rule,
                                                "]")),
        rule);
  }
  absl::Status Truncated(absl::string_view what) {
    absl::Status st = stream_error_();
    if (!st.ok()) return st;
    return WithRule(absl::DataLossError(absl::StrCat(builder_.source(), ": record ",
                                                     record_index_, " (byte ", record_offset_,
                                                     "): ", what, " [truncated-record]")),
                    "truncated-record");
  }

  absl::Status ReadMagic() {
    pbio::CodedInputStream coded(&in_);
    std::string magic;
    if (!coded.ReadString(&magic, static_cast<int>(kTraceMagic.size())) || magic != kTraceMagic) {
      SWAPPLAN_RETURN_IF_ERROR(stream_error_());
      return absl::InvalidArgumentError(absl::StrCat(
          builder_.source(), ": not a swapplan binary trace (missing magic \"SWPLTRC1\") [bad-magic]"));
    }
    offset_ = static_cast<int64_t>(kTraceMagic.size());
    return absl::OkStatus();
  }

  // Parses the next length-delimited record into `record`; sets `eof` at a
  // clean end of data. The record is parsed straight from the stream, never
  // buffered whole first: a length prefix is only a claim, and a record
  // whose bytes do not parse is refused at its first bad field, after at
  // most one buffer of the stream (1 MiB for gzip) — not after inflating the
  // up to 1 GiB it announced (a gzip bomb: "SWPLTRC1", a length of
  // 2^30 - 1, then gigabytes of zeros). A fresh CodedInputStream per record
  // avoids its 2 GiB limit. Time O(record bytes actually read).
  absl::Status NextRecord(pb::TraceRecord* record, bool* eof) {
    pbio::CodedInputStream coded(&in_);
    record_offset_ = offset_;
    const void* data = nullptr;
    int avail = 0;
    if (!coded.GetDirectBufferPointer(&data, &avail)) {
      SWAPPLAN_RETURN_IF_ERROR(stream_error_());
      *eof = true;
      return absl::OkStatus();
    }
    uint32_t size = 0;
    if (!coded.ReadVarint32(&size)) return Truncated("file ends inside a record length");
    if (size > kMaxRecordBytes) {
      return Err("corrupt-record", absl::StrCat("record length ", size, " exceeds the limit of ",
                                                kMaxRecordBytes, " bytes"));
    }
    const pbio::CodedInputStream::Limit limit = coded.PushLimit(static_cast<int>(size));
    const bool parsed = record->ParseFromCodedStream(&coded);
    // The stream ending before the announced length is a truncation,
    // whether the parser stopped inside a field or at a field boundary.
    // Otherwise a record that fails to parse, or stops before its length (a
    // zero tag or an end-group tag ends a protobuf parse early), is corrupt.
    if (in_.ended()) {
      return Truncated(absl::StrCat("file ends inside a record of ", size, " bytes"));
    }
    if (!parsed || !coded.ConsumedEntireMessage() || coded.BytesUntilLimit() > 0) {
      return Err("corrupt-record",
                 absl::StrCat("a record of ", size, " bytes does not parse as a TraceRecord"));
    }
    coded.PopLimit(limit);
    offset_ += coded.CurrentPosition();
    return absl::OkStatus();
  }

  absl::Status Apply(const pb::TraceRecord& r) {
    if (seen_end_) return Err("bad-record-order", "data after the end record");
    if (!seen_header_ && r.record_case() != pb::TraceRecord::kHeader) {
      return Err("bad-record-order", "the first record must be the header");
    }
    switch (r.record_case()) {
      case pb::TraceRecord::kHeader: {
        if (seen_header_) return Err("bad-record-order", "a second header");
        seen_header_ = true;
        if (r.header().format_version() != static_cast<uint32_t>(kTraceFormatVersion)) {
          return Err("bad-magic", absl::StrCat("format version ", r.header().format_version(),
                                               " is not supported (expected ",
                                               kTraceFormatVersion, ")"));
        }
        MetadataFromProto(r.header().metadata(), &builder_.metadata());
        for (const std::string& n : r.header().op_names()) builder_.AddOpName(n);
        return absl::OkStatus();
      }
      case pb::TraceRecord::kOpNames:
        for (const std::string& n : r.op_names().op_names()) builder_.AddOpName(n);
        return absl::OkStatus();
      case pb::TraceRecord::kTensors:
        for (const pb::Tensor& t : r.tensors().tensors()) SWAPPLAN_RETURN_IF_ERROR(AddTensor(t));
        return absl::OkStatus();
      case pb::TraceRecord::kIterationBegin:
        if (builder_.in_iteration()) {
          return Err("bad-record-order", "iteration_begin inside an open iteration");
        }
        if (r.iteration_begin().index() != static_cast<uint32_t>(builder_.num_iterations())) {
          return Err("bad-record-order",
                     absl::StrCat("iteration_begin has index ", r.iteration_begin().index(),
                                  ", expected ", builder_.num_iterations()));
        }
        builder_.BeginIteration();
        return absl::OkStatus();
      case pb::TraceRecord::kOps:
        if (!builder_.in_iteration()) return Err("bad-record-order", "ops outside an iteration");
        for (const pb::Op& op : r.ops().ops()) SWAPPLAN_RETURN_IF_ERROR(AddOp(op));
        return absl::OkStatus();
      case pb::TraceRecord::kMemoryEvents:
        if (!builder_.in_iteration()) {
          return Err("bad-record-order", "memory events outside an iteration");
        }
        for (const pb::MemoryEvent& e : r.memory_events().events()) {
          MemoryEventKind kind;
          if (!EnumFromProto(e.kind(), kNumMemoryEventKinds, &kind)) {
            return Err("bad-enum",
                       absl::StrCat("iteration ", builder_.num_iterations() - 1,
                                    ", memory event of tensor ", e.tensor_id(), " at op ",
                                    e.op_index(), ": kind ", e.kind(),
                                    " is not a known memory event kind"));
          }
          builder_.AddMemoryEvent(e.op_index(), kind, e.tensor_id(), e.passive());
        }
        return absl::OkStatus();
      case pb::TraceRecord::kSavedTensorEvents:
        if (!builder_.in_iteration()) {
          return Err("bad-record-order", "saved-tensor events outside an iteration");
        }
        builder_.MarkSavedTensorEventsRecorded();
        for (const pb::SavedTensorEvent& e : r.saved_tensor_events().events()) {
          builder_.AddSavedTensorEvent(
              e.position(), e.unpack(),
              e.has_tensor_id() ? std::optional<uint64_t>(e.tensor_id()) : std::nullopt);
        }
        return absl::OkStatus();
      case pb::TraceRecord::kIterationEnd:
        if (!builder_.in_iteration()) {
          return Err("bad-record-order", "iteration_end without iteration_begin");
        }
        builder_.EndIteration(r.iteration_end().wall_time_ns());
        return absl::OkStatus();
      case pb::TraceRecord::kEnd:
        if (builder_.in_iteration()) return Err("bad-record-order", "end inside an iteration");
        seen_end_ = true;
        return CheckEndCounts(r.end());
      case pb::TraceRecord::RECORD_NOT_SET:
        return Err("corrupt-record", "empty record");
    }
    return absl::OkStatus();
  }

  // The end record's counts must match what the file held: a mismatch means
  // records were lost (or duplicated) in a way the framing cannot show.
  absl::Status CheckEndCounts(const pb::TraceEnd& end) {
    struct Count {
      const char* what;
      uint64_t claimed;
      uint64_t read;
    };
    const Count counts[] = {
        {"iterations", end.num_iterations(), static_cast<uint64_t>(builder_.num_iterations())},
        {"tensors", end.num_tensors(), builder_.num_tensors()},
        {"ops", end.num_ops(), builder_.num_ops()},
        {"memory events", end.num_memory_events(), builder_.num_memory_events()},
    };
    for (const Count& c : counts) {
      if (c.claimed != c.read) {
        return Err("count-mismatch", absl::StrCat("the end record counts ", c.claimed, " ",
                                                  c.what, " but the file holds ", c.read));
      }
    }
    return absl::OkStatus();
  }

  absl::Status AddTensor(const pb::Tensor& t) {
    TensorSpec s;
    s.id = t.id();
    s.size_bytes = t.size_bytes();
    if (!EnumFromProto(t.dtype(), kNumDTypes, &s.dtype)) {
      return Err("bad-enum", absl::StrCat("tensor ", t.id(), ": dtype ", t.dtype(),
                                          " is not a known dtype"));
    }
    s.shape = absl::MakeConstSpan(t.shape().data(), t.shape().size());
    if (!EnumFromProto(t.kind(), kNumTensorKinds, &s.kind)) {
      return Err("bad-enum", absl::StrCat("tensor ", t.id(), ": kind ", t.kind(),
                                          " is not a known tensor kind"));
    }
    if (t.has_storage_id()) s.storage_id = t.storage_id();
    s.device_address = t.has_device_address() ? t.device_address() : 0;
    s.persistent = t.has_persistent() ? (t.persistent() ? 1 : 0) : -1;
    s.name = t.name();
    builder_.AddTensor(s);
    return absl::OkStatus();
  }

  absl::Status AddOp(const pb::Op& op) {
    auto where = [&] {
      return absl::StrCat("iteration ", builder_.num_iterations() - 1, ", op ",
                          builder_.ops_in_open_iteration());
    };
    OpSpec s;
    if (op.name_id() > static_cast<uint32_t>(INT32_MAX)) {
      return Err("unknown-op-name", absl::StrCat(where(), ": op name id ", op.name_id(),
                                                 " is out of range"));
    }
    s.name = static_cast<NameId>(op.name_id());
    if (!EnumFromProto(op.phase(), kNumPhases, &s.phase)) {
      return Err("bad-enum",
                 absl::StrCat(where(), ": phase ", op.phase(), " is not a known phase"));
    }
    s.inputs = absl::MakeConstSpan(op.inputs().data(), op.inputs().size());
    s.outputs = absl::MakeConstSpan(op.outputs().data(), op.outputs().size());
    if (op.has_duration_ns()) s.duration_ns = op.duration_ns();
    if (op.has_allocator_bytes_in_use()) s.allocator_bytes_in_use = op.allocator_bytes_in_use();
    if (op.has_stack_id()) s.stack_id = op.stack_id();
    if (op.has_micro_batch()) s.micro_batch = op.micro_batch();
    if (op.has_layer()) s.layer = op.layer();
    builder_.AddOp(s);
    return absl::OkStatus();
  }

  EndTrackingStream in_;
  TraceBuilder builder_;
  std::function<absl::Status()> stream_error_;
  int64_t offset_ = 0;
  int64_t record_offset_ = 0;
  int64_t record_index_ = 0;
  bool seen_header_ = false;
  bool seen_end_ = false;
};

// Writes records to a zero-copy stream.
class BinaryWriter {
 public:
  BinaryWriter(pbio::ZeroCopyOutputStream* out, const TraceWriteOptions& opts)
      : coded_(out), opts_(opts) {}

  bool Write(const Trace& t) {
    coded_.WriteRaw(kTraceMagic.data(), static_cast<int>(kTraceMagic.size()));
    pb::TraceRecord r;
    pb::TraceHeader* h = r.mutable_header();
    h->set_format_version(kTraceFormatVersion);
    MetadataToProto(t.metadata(), h->mutable_metadata());
    for (const std::string& n : t.op_names()) h->add_op_names(n);
    Emit(&r);

    for (TensorId b = 0; b < t.num_tensors(); b += opts_.tensors_per_chunk) {
      pb::TensorChunk* c = r.mutable_tensors();
      TensorId e = std::min<TensorId>(t.num_tensors(), b + opts_.tensors_per_chunk);
      for (TensorId i = b; i < e; ++i) TensorToProto(t, i, c->add_tensors());
      Emit(&r);
    }
    for (int32_t it = 0; it < t.num_iterations(); ++it) {
      const IterationInfo& iter = t.iteration(it);
      r.mutable_iteration_begin()->set_index(it);
      Emit(&r);
      for (OpIndex b = iter.op_begin; b < iter.op_end; b += opts_.ops_per_chunk) {
        pb::OpChunk* c = r.mutable_ops();
        OpIndex e = std::min<OpIndex>(iter.op_end, b + opts_.ops_per_chunk);
        for (OpIndex i = b; i < e; ++i) OpToProto(t, i, c->add_ops());
        Emit(&r);
      }
      absl::Span<const MemoryEvent> events = t.iteration_events(it);
      for (size_t b = 0; b < events.size(); b += opts_.events_per_chunk) {
        pb::MemoryEventChunk* c = r.mutable_memory_events();
        size_t e = std::min(events.size(), b + opts_.events_per_chunk);
        for (size_t i = b; i < e; ++i) {
          pb::MemoryEvent* pe = c->add_events();
          pe->set_op_index(static_cast<uint32_t>(events[i].op - iter.op_begin));
          pe->set_kind(static_cast<pb::MemoryEventKind>(events[i].kind));
          pe->set_tensor_id(t.tensor(events[i].tensor).trace_id);
          pe->set_passive(events[i].passive);
        }
        Emit(&r);
      }
      if (iter.saved_recorded) {
        absl::Span<const SavedTensorEvent> saved = t.iteration_saved_events(it);
        size_t b = 0;
        do {  // at least one chunk: it marks the events as recorded
          pb::SavedTensorEventChunk* c = r.mutable_saved_tensor_events();
          size_t e = std::min(saved.size(), b + opts_.events_per_chunk);
          for (size_t i = b; i < e; ++i) {
            pb::SavedTensorEvent* pe = c->add_events();
            pe->set_position(static_cast<uint32_t>(saved[i].position));
            pe->set_unpack(saved[i].unpack);
            if (saved[i].tensor != kNoTensor) pe->set_tensor_id(t.tensor(saved[i].tensor).trace_id);
          }
          Emit(&r);
          b = e;
        } while (b < saved.size());
      }
      r.mutable_iteration_end()->set_wall_time_ns(iter.wall_time_ns);
      Emit(&r);
    }
    pb::TraceEnd* end = r.mutable_end();
    end->set_num_tensors(t.num_tensors());
    end->set_num_iterations(t.num_iterations());
    end->set_num_ops(t.num_ops());
    end->set_num_memory_events(t.events().size());
    Emit(&r);
    coded_.Trim();
    return !coded_.HadError();
  }

 private:
  void Emit(pb::TraceRecord* r) {
    coded_.WriteVarint32(static_cast<uint32_t>(r->ByteSizeLong()));
    r->SerializeWithCachedSizes(&coded_);
    r->Clear();
  }

  static void TensorToProto(const Trace& t, TensorId i, pb::Tensor* p) {
    const TensorInfo& info = t.tensor(i);
    p->set_id(info.trace_id);
    p->set_size_bytes(info.size_bytes);
    p->set_dtype(static_cast<pb::DType>(info.dtype));
    for (int64_t d : t.shape(i)) p->add_shape(d);
    p->set_kind(static_cast<pb::TensorKind>(info.kind));
    if (info.storage_id >= 0) p->set_storage_id(info.storage_id);
    if (info.device_address != 0) p->set_device_address(info.device_address);
    if (info.persistent != KindIsPersistentByDefault(info.kind)) {
      p->set_persistent(info.persistent);
    }
    absl::string_view name = t.tensor_name(i);
    if (!name.empty()) p->set_name(std::string(name));
  }

  static void OpToProto(const Trace& t, OpIndex i, pb::Op* p) {
    const OpInfo& op = t.op(i);
    p->set_name_id(static_cast<uint32_t>(op.name));
    p->set_phase(static_cast<pb::Phase>(op.phase));
    for (TensorId in : t.inputs(i)) p->add_inputs(t.tensor(in).trace_id);
    for (TensorId out : t.outputs(i)) p->add_outputs(t.tensor(out).trace_id);
    if (op.duration_ns >= 0) p->set_duration_ns(op.duration_ns);
    if (op.allocator_bytes_in_use >= 0) p->set_allocator_bytes_in_use(op.allocator_bytes_in_use);
    if (op.stack_id >= 0) p->set_stack_id(op.stack_id);
    if (op.micro_batch >= 0) p->set_micro_batch(op.micro_batch);
    if (op.layer >= 0) p->set_layer(op.layer);
  }

  pbio::CodedOutputStream coded_;
  const TraceWriteOptions& opts_;
};

absl::StatusOr<Trace> ReadBinaryFromStream(pbio::ZeroCopyInputStream* in, const std::string& source,
                                           std::function<absl::Status()> stream_error) {
  return BinaryReader(in, source, std::move(stream_error)).Read();
}

bool WriteBinaryToStream(const Trace& trace, pbio::ZeroCopyOutputStream* out,
                         const TraceWriteOptions& options) {
  return BinaryWriter(out, options).Write(trace);
}

}  // namespace internal

absl::StatusOr<Trace> ParseTraceBinary(absl::string_view bytes, const std::string& source,
                                       const TraceReadOptions& options) {
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    return WithRule(Error(ErrorKind::kResourceLimit,
                          absl::StrCat(source, ": ", bytes.size(),
                                       " bytes in memory; at most 2^31 - 1 are parsed at once "
                                       "(read the file with ReadTrace) [read-limit]")),
                    "read-limit");
  }
  pbio::ArrayInputStream array(bytes.data(), static_cast<int>(bytes.size()));
  std::unique_ptr<internal::GunzipStream> gz;
  pbio::ZeroCopyInputStream* in = &array;
  if (bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
      static_cast<unsigned char>(bytes[1]) == 0x8b) {
    gz = std::make_unique<internal::GunzipStream>(&array, source,
                                                  options.max_decompressed_bytes);
    in = gz.get();
  }
  try {
    return internal::ReadBinaryFromStream(
        in, source, [&]() -> absl::Status { return gz ? gz->status() : absl::OkStatus(); });
  } catch (const std::bad_alloc&) {
    return WithRule(Error(ErrorKind::kResourceLimit,
                          absl::StrCat(source, ": out of memory while reading the trace "
                                               "[out-of-memory]")),
                    "out-of-memory");
  }
}

std::string TraceToBinary(const Trace& trace, const TraceWriteOptions& options) {
  std::string out;
  {
    pbio::StringOutputStream s(&out);
    internal::WriteBinaryToStream(trace, &s, options);
  }
  return out;
}

}  // namespace swapplan
