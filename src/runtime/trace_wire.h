// The binary trace form (include/swapplan/trace/io.h, proto/trace.proto)
// written without the protobuf runtime: for the runtime shim
// (libswapplan_runtime.so), which carries no libprotobuf — a training
// process has its own (PyTorch's), see swapplan_runtime.h. Everything else
// writes traces with trace/io.h's WriteTrace.
//
// The output is byte for byte what swapplan::TraceToBinary writes for the
// same trace and chunk sizes: the magic "SWPLTRC1", then length-delimited
// TraceRecord messages (header, tensor chunks, per iteration begin / op
// chunks / memory-event chunks / end, trailer), each field encoded as
// protobuf 3.21 serializes proto3: fields in number order; scalars with
// implicit presence left out when zero (a double when its bits are zero);
// `optional` fields written whenever set, zero included; repeated integers
// packed; every varint of a negative int64 / int32 / enum sign-extended to
// 10 bytes; a set oneof message written even when empty.
// tests/runtime/trace_wire_test.cc checks byte equality with TraceToBinary
// and that ReadTrace gives back what the JSON form gives back.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(std::string bytes, EncodeTraceBinary(trace));
//   SWAPPLAN_RETURN_IF_ERROR(WriteFileAtomically("run.trace.gz", bytes, /*gzip=*/true));
//
// Thread-compatible (pure functions). Complexity: O(output bytes) time; the
// output plus one chunk of scratch memory.
#ifndef SWAPPLAN_SRC_RUNTIME_TRACE_WIRE_H_
#define SWAPPLAN_SRC_RUNTIME_TRACE_WIRE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "swapplan/trace/io.h"
#include "swapplan/trace/trace.h"

namespace swapplan::runtime {

// Protobuf wire types used by the trace schema.
enum class WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2 };

// Wire primitives, appending to `out`. Each is O(bytes written).
// Bytes of the base-128 varint of `v` (1..10).
int VarintSize(uint64_t v);
// The varint of `v`.
void AppendVarint(std::string* out, uint64_t v);
// A field key: (field << 3) | wire type.
void AppendTag(std::string* out, uint32_t field, WireType type);
// A varint field, written whatever its value (explicit presence). A
// negative int64 / int32 / enum value is passed sign-extended,
// static_cast<uint64_t>(int64_t{v}): 10 bytes, as protobuf writes it.
void AppendVarintField(std::string* out, uint32_t field, uint64_t v);
// A length-delimited field: tag, length, `bytes`.
void AppendBytesField(std::string* out, uint32_t field, absl::string_view bytes);
// A double field: tag and its 8 bytes, little-endian.
void AppendDoubleField(std::string* out, uint32_t field, double v);

// The whole trace in the binary form (not gzip-compressed). Uses only the
// chunk sizes of `options` (ops_per_chunk, tensors_per_chunk,
// events_per_chunk); InvalidArgument when one is < 1.
absl::StatusOr<std::string> EncodeTraceBinary(const Trace& trace,
                                              const TraceWriteOptions& options = {});

}  // namespace swapplan::runtime

#endif  // SWAPPLAN_SRC_RUNTIME_TRACE_WIRE_H_
