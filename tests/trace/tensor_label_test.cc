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
  // 8·32·1024·1024·2 bytes = 536870912 = 512.00 MiB.
  CHECK(names.Label(10) ==
        "layers.3.attn.softmax \xE2\x86\x92 [8,32,1024,1024] bfloat16 ACTIVATION 512.00 MiB");
  // The table form of a named tensor is the same label.
  CHECK(names.Label(10, LabelForm::kCell) == names.Label(10));
  // No shape, no dtype recorded: left out.
  CHECK(names.Label(20) == "fc.weight \xE2\x86\x92 PARAMETER 100 B");
  CHECK(TensorLabel(t, 1) == names.Label(20));  // dense index 1 = file id 20
}

TEST_CASE("an unnamed or unknown tensor falls back to its file id", "[trace][label]") {
  Trace t = ThreeTensors();
  TensorLabeler names(t);
  CHECK(names.Label(30) == "tensor 30");
  CHECK(names.Label(30, LabelForm::kCell) == "30");
  CHECK(TensorLabel(t, 2, LabelForm::kCell) == "30");
  // An id the trace does not hold (a policy for another trace).
  CHECK(names.Label(99) == "tensor 99");
  CHECK(names.Label(0, LabelForm::kCell) == "0");
}

}  // namespace
}  // namespace swapplan
