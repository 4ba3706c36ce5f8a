// TensorLabel / TensorLabeler (trace/tensor_label.h): the one way reports name
// tensors.
#include <catch2/catch.hpp>

#include <string>

#include "swapplan/trace/builder.h"
#include "swapplan/trace/tensor_label.h"

namespace swapplan {
namespace {

// Three tensors: file ids 10 (named, bf16 [8,32,1024,1024] = 8·32·1024·1024·2
// bytes = 512 MiB), 20 (named, no shape or dtype recorded, 100 bytes) and 30
// (unnamed). Ids are not dense, so the labeler maps them.
Trace ThreeTensors() {
  TraceBuilder b("labels");
  const int64_t shape[] = {8, 32, 1024, 1024};
  b.AddTensor({.id = 10, .size_bytes = int64_t{8} * 32 * 1024 * 1024 * 2,
               .dtype = DType::kBFloat16, .shape = shape, .kind = TensorKind::kActivation,
               .name = "layers.3.attn.softmax"});
  b.AddTensor({.id = 20, .size_bytes = 100, .kind = TensorKind::kParameter, .name = "fc.weight"});
  b.AddTensor({.id = 30, .size_bytes = 100, .kind = TensorKind::kActivation});
  b.BeginIteration();
  const uint64_t in[] = {10, 20};
  const uint64_t out[] = {30};
  b.AddOp({.name = b.InternOpName("mm"), .phase = Phase::kForward, .inputs = in, .outputs = out});
  b.EndIteration(0);
  absl::StatusOr<Trace> t = std::move(b).Finish();
  REQUIRE(t.ok());
  return *std::move(t);
}

TEST_CASE("a named tensor is labelled with its name, shape, dtype, kind and size",
          "[trace][label]") {
  Trace t = ThreeTensors();
  TensorLabeler names(t);
  // 8·32·1024·1024·2 bytes = 536870912 = exactly 512 MiB.
  CHECK(names.Label(10) ==
        "layers.3.attn.softmax \xE2\x86\x92 [8,32,1024,1024] bf16 ACTIVATION 512 MiB");
  // The short forms: in a message, in a table's tensor column.
  CHECK(names.Label(10, LabelForm::kShort) == "tensor 10 'layers.3.attn.softmax'");
  CHECK(names.Label(10, LabelForm::kCell) == "layers.3.attn.softmax (10)");
  CHECK(names.Name(10) == "layers.3.attn.softmax");
  CHECK(names.DenseOf(10) == 0);
  // No shape, no dtype recorded: left out.
  CHECK(names.Label(20) == "fc.weight \xE2\x86\x92 PARAMETER 100 B");
  CHECK(TensorLabel(t, 1) == names.Label(20));  // dense index 1 = file id 20
}

TEST_CASE("an unnamed or unknown tensor falls back to its file id", "[trace][label]") {
  Trace t = ThreeTensors();
  TensorLabeler names(t);
  CHECK(names.Label(30) == "tensor 30");
  CHECK(names.Label(30, LabelForm::kShort) == "tensor 30");
  CHECK(names.Name(30).empty());
  CHECK(names.Label(30, LabelForm::kCell) == "30");
  CHECK(TensorLabel(t, 2, LabelForm::kCell) == "30");
  // An id the trace does not hold (a policy for another trace).
  CHECK(names.Label(99) == "tensor 99");
  CHECK(names.Label(0, LabelForm::kCell) == "0");
  CHECK(names.Name(99).empty());
  CHECK(names.DenseOf(99) == kNoTensor);
}

TEST_CASE("sizes print whole units short, fractions as FormatBytes", "[trace][label]") {
  CHECK(FormatBytesShort(100) == "100 B");
  CHECK(FormatBytesShort(1024) == "1 KiB");
  CHECK(FormatBytesShort(1536) == "1.50 KiB");               // 1.5 KiB
  CHECK(FormatBytesShort(int64_t{256} << 20) == "256 MiB");  // 256·2^20
  CHECK(FormatBytesShort(int64_t{1536} << 20) == "1.50 GiB");  // 1536 MiB = 1.5 GiB
  CHECK(FormatBytesShort(int64_t{3} << 40) == "3 TiB");
  CHECK(FormatBytesShort(int64_t{2048} << 40) == "2048 TiB");  // no unit above TiB
  CHECK(DTypeShortName(DType::kBFloat16) == "bf16");
  CHECK(DTypeShortName(DType::kFloat32) == "f32");
}

}  // namespace
}  // namespace swapplan
