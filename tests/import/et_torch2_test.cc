// What torch 2.x's ExecutionTraceObserver writes on the CPU (schema
// 1.1.1-chakra.0.0.4: inputs / outputs objects with strides, attrs lists),
// in miniature: one ProfilerStep#0 on one thread, which runs the forward,
// the autograd engine (the CPU runs backward on the calling thread) and
// Adam's first step.
//
//   id  node                                       storages (bytes)
//   4   aten::addmm(bias, x, W) -> y               bias 20 (16, expanded to [8,4] with
//   5     aten::copy_(y, bias)                     stride 0), x 21 (128), W 22 (64), y 23 (128)
//   6     aten::resolve_conj(W)
//   7   autograd::engine::evaluate_function: AddmmBackward0
//   8     AddmmBackward0 (scope 1)
//   9       aten::mm(y, x) -> gW                   gW 24 (64)
//   10  Optimizer.step#Adam.step
//   11    aten::zeros_like(W) -> m                 m 25 (64)
//   12      aten::empty_like   13 aten::empty_strided
//   14      aten::zero_(m)
//   15    aten::lerp_(m, gW)
//   16    aten::sqrt(m) -> s                       s 26 (64): a temporary
//   17    aten::add_(W, s)
#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "import/import_test_util.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/curve/step_anatomy.h"

namespace swapplan {
namespace {

using testing::Attr;
using testing::ImportText;
using testing::RoundRoofline;

// A tensor argument: [tensor id, storage id, offset, numel, itemsize, device].
std::string T(int storage, int numel) { return absl::StrCat("[", storage, ",", storage, ",0,", numel, ",4,\"cpu\"]"); }

std::string Io(const std::vector<std::string>& values, const std::vector<std::string>& shapes,
               const std::vector<std::string>& strides) {
  std::vector<std::string> types(values.size(), "\"Tensor(float)\"");
  return absl::StrCat("{\"values\":[", absl::StrJoin(values, ","), "],\"shapes\":[",
                      absl::StrJoin(shapes, ","), "],\"types\":[", absl::StrJoin(types, ","),
                      "],\"strides\":[", absl::StrJoin(strides, ","), "]}");
}

std::string Node(int id, const std::string& name, int parent, int scope, const std::string& in,
                 const std::string& out) {
  return absl::StrCat("{\"id\":", id, ",\"name\":\"", name, "\",\"ctrl_deps\":", parent,
                      ",\"inputs\":", in, ",\"outputs\":", out,
                      ",\"attrs\":[{\"name\":\"rf_id\",\"type\":\"uint64\",\"value\":", id,
                      "},{\"name\":\"scope\",\"type\":\"uint64\",\"value\":", scope,
                      "},{\"name\":\"tid\",\"type\":\"uint64\",\"value\":1},"
                      "{\"name\":\"fw_tid\",\"type\":\"uint64\",\"value\":0}]}");
}

// A torch 2.x ET document (schema 1.1.1) holding these nodes.
std::string EtOf(const std::vector<std::string>& nodes) {
  return absl::StrCat("{\"schema\":\"1.1.1-chakra.0.0.4\",\"pid\":1,\"nodes\":[",
                      absl::StrJoin(nodes, ","), "]}");
}

// The importer's options with ops counted at the dispatch level
// (--et-ops dispatch), op times from the round roofline.
ImportOptions DispatchOptions() {
  ImportOptions o = RoundRoofline();
  o.et_ops = ImportOptions::EtOps::kDispatch;
  return o;
}

std::string Torch2Et() {
  const std::string none = Io({}, {}, {});
  const std::string bias = T(20, 32), x = T(21, 32), w = T(22, 16), y = T(23, 32), gw = T(24, 16),
                    m = T(25, 16), s = T(26, 16);
  // bias as addmm sees it: [8,4] with strides [0,1] (numel 32, 4 elements).
  const std::string m84 = "[8,4]", m44 = "[4,4]", s84 = "[4,1]", s44 = "[4,1]", b84 = "[0,1]";
  std::vector<std::string> n = {
      Node(2, "[pytorch|profiler|execution_trace|thread]", 1, 7, none, none),
      Node(3, "ProfilerStep#0", 2, 7, none, none),
      Node(4, "aten::addmm", 3, 0, Io({bias, x, w}, {m84, m84, m44}, {b84, s84, s44}),
           Io({y}, {m84}, {s84})),
      Node(5, "aten::copy_", 4, 0, Io({y, bias}, {m84, m84}, {s84, b84}), Io({y}, {m84}, {s84})),
      Node(6, "aten::resolve_conj", 4, 0, Io({w}, {m44}, {s44}), Io({w}, {m44}, {s44})),
      Node(7, "autograd::engine::evaluate_function: AddmmBackward0", 3, 1, none, none),
      Node(8, "AddmmBackward0", 7, 1, none, none),
      Node(9, "aten::mm", 8, 0, Io({y, x}, {m84, m84}, {s84, s84}), Io({gw}, {m44}, {s44})),
      Node(10, "Optimizer.step#Adam.step", 3, 7, none, none),
      Node(11, "aten::zeros_like", 10, 0, Io({w}, {m44}, {s44}), Io({m}, {m44}, {s44})),
      Node(12, "aten::empty_like", 11, 0, Io({w}, {m44}, {s44}), Io({m}, {m44}, {s44})),
      Node(13, "aten::empty_strided", 12, 0, none, Io({m}, {m44}, {s44})),
      Node(14, "aten::zero_", 11, 0, Io({m}, {m44}, {s44}), Io({m}, {m44}, {s44})),
      Node(15, "aten::lerp_", 10, 0, Io({m, gw}, {m44, m44}, {s44, s44}), Io({m}, {m44}, {s44})),
      Node(16, "aten::sqrt", 10, 0, Io({m}, {m44}, {s44}), Io({s}, {m44}, {s44})),
      Node(17, "aten::add_", 10, 0, Io({w, s}, {m44, m44}, {s44, s44}), Io({w}, {m44}, {s44}))};
  return absl::StrCat("{\"schema\":\"1.1.1-chakra.0.0.4\",\"pid\":1,\"time\":\"t\","
                      "\"start_ts\":0,\"nodes\":[", absl::StrJoin(n, ","), "],\"finish_ts\":1}");
}

// File ids in order of first appearance: 0 y (copy_), 1 bias, 2 W
// (resolve_conj), 3 x (addmm), 4 gW, 5 m, 6 s.
TEST_CASE("ET torch 2.x: phases on the one CPU thread, sizes from strides, outputs a child fills") {
  auto t = ImportText(Torch2Et(), "", RoundRoofline());
  INFO(t.status().ToString());
  REQUIRE(t.ok());
  CHECK(Attr(*t, "import.schema") == "1.1.1-chakra.0.0.4");
  // copy_, resolve_conj, addmm (own work: x), mm, empty_strided,
  // empty_like (own work: W), zero_, lerp_, sqrt, add_.
  REQUIRE(t->num_ops() == 10);
  const Phase phases[] = {Phase::kForward,   Phase::kForward,   Phase::kForward,
                          Phase::kBackward,  Phase::kOptimizer, Phase::kOptimizer,
                          Phase::kOptimizer, Phase::kOptimizer, Phase::kOptimizer,
                          Phase::kOptimizer};
  for (OpIndex i = 0; i < 10; ++i) CHECK(t->op(i).phase == phases[i]);
  REQUIRE(t->num_tensors() == 7);
  // y: made by addmm (its copy_ child sees it first), an activation, not
  // resident before the trace.
  CHECK_FALSE(t->tensor(0).persistent);
  CHECK(t->lifetime(0).alloc_op == 0);
  CHECK(t->tensor(0).kind == TensorKind::kActivation);
  // The bias: 4 floats of storage, not the 32 of its expanded view.
  CHECK(t->tensor(1).size_bytes == 16);
  CHECK(t->tensor(2).kind == TensorKind::kParameter);
}

TEST_CASE("ET torch 2.x: the optimizer state of a first step is OPTIMIZER_STATE, to the end") {
  auto t = ImportText(Torch2Et(), "", RoundRoofline());
  INFO(t.status().ToString());
  REQUIRE(t.ok());
  // m: made by zeros_like inside Optimizer.step, then updated by lerp_.
  CHECK(t->tensor(5).kind == TensorKind::kOptimizerState);
  CHECK(t->lifetime(5).alloc_op == 4);             // aten::empty_strided
  CHECK(t->lifetime(5).free_op == t->num_ops());   // never freed
  // s: sqrt's output is scratch of the step.
  CHECK(t->tensor(6).kind == TensorKind::kTemporary);
  CHECK(Attr(*t, "import.note.optimizer_state_created") == "1");
  auto c = ComputeMemoryCurve(*t);
  REQUIRE(c.ok());
  auto a = AnalyzeStep(*t, *c, 0);
  REQUIRE(a.ok());
  CHECK(a->first_step);
  CHECK(a->num_state_tensors_created == 1);
  CHECK(a->state_bytes_created == 64);
  // Unswapped, during each op (resident: bias 16, W 64, x 128 = 208):
  //   copy_ 208 + y 128 = 336, resolve_conj 336, addmm 336, mm 336 + gW 64 =
  //   400 (y's last use); empty_strided 208 + gW 64 + m 64 = 336 .. lerp_
  //   (gW's last use); sqrt 208 + m 64 + s 64 = 336, add_ 336.
  CHECK(a->peak.bytes == 400);
  CHECK(a->peak.local_op == 3);  // the first of the two 400s: mm
  // Steady state: m resident from op 0: 464 at mm.
  CHECK(a->steady_peak_bytes == 464);
  CHECK(a->steady_peak_local_op == 3);
}

TEST_CASE("ET torch 2.x: dispatch-level ops, as a TorchDispatchMode sees them") {
  auto t = ImportText(Torch2Et(), "", DispatchOptions());
  INFO(t.status().ToString());
  REQUIRE(t.ok());
  CHECK(Attr(*t, "import.et_ops") == "dispatch (the ops a TorchDispatchMode sees)");
  // Every operator whole (aten::addmm with its copy_ and resolve_conj,
  // aten::zeros_like with its empty_like and zero_): 6 ops, not 10.
  const char* names[] = {"aten::addmm", "aten::mm",   "aten::zeros_like",
                         "aten::lerp_", "aten::sqrt", "aten::add_"};
  const Phase phases[] = {Phase::kForward,   Phase::kBackward,  Phase::kOptimizer,
                          Phase::kOptimizer, Phase::kOptimizer, Phase::kOptimizer};
  REQUIRE(t->num_ops() == 6);
  for (OpIndex i = 0; i < 6; ++i) {
    CHECK(t->op_name_at(i) == names[i]);
    CHECK(t->op(i).phase == phases[i]);
  }
  // File ids: 0 bias (16 B from its strides), 1 x, 2 W, 3 y, 4 gW, 5 m, 6 s.
  REQUIRE(t->num_tensors() == 7);
  CHECK(t->tensor(0).size_bytes == 16);
  CHECK(t->tensor(3).kind == TensorKind::kActivation);
  CHECK_FALSE(t->tensor(3).persistent);
  CHECK(t->tensor(5).kind == TensorKind::kOptimizerState);
  CHECK(t->lifetime(5).alloc_op == 2);  // zeros_like
  CHECK(t->lifetime(5).free_op == t->num_ops());
  CHECK(t->tensor(6).kind == TensorKind::kTemporary);
}

TEST_CASE("ET: CompositeImplicitAutograd operators are decomposed at the dispatch level") {
  // aten::linear (composite) holds aten::t and aten::addmm; aten::addmm
  // (not composite) holds aten::copy_: linear is not an op, its children
  // are, addmm whole.
  const std::string none = Io({}, {}, {});
  const std::string x = T(1, 8), w = T(2, 4), y = T(3, 4);
  std::vector<std::string> n = {
      Node(2, "ProfilerStep#0", 1, 7, none, none),
      Node(3, "aten::linear", 2, 0, Io({x, w}, {"[2,4]", "[1,4]"}, {"[4,1]", "[4,1]"}),
           Io({y}, {"[2,2]"}, {"[2,1]"})),
      Node(4, "aten::t", 3, 0, Io({w}, {"[1,4]"}, {"[4,1]"}), Io({w}, {"[4,1]"}, {"[1,4]"})),
      Node(5, "aten::addmm", 3, 0, Io({x, w}, {"[2,4]", "[4,1]"}, {"[4,1]", "[1,4]"}),
           Io({y}, {"[2,2]"}, {"[2,1]"})),
      Node(6, "aten::copy_", 5, 0, Io({y}, {"[2,2]"}, {"[2,1]"}), Io({y}, {"[2,2]"}, {"[2,1]"}))};
  const std::string et = EtOf(n);
  auto t = ImportText(et, "", DispatchOptions());
  INFO(t.status().ToString());
  REQUIRE(t.ok());
  REQUIRE(t->num_ops() == 2);
  CHECK(t->op_name_at(0) == "aten::t");
  CHECK(t->op_name_at(1) == "aten::addmm");
  // The default (leaves): t, copy_, and addmm's own work (x) after it.
  auto leaves = ImportText(et, "", RoundRoofline());
  REQUIRE(leaves.ok());
  CHECK(leaves->num_ops() == 3);
}

TEST_CASE("ET: a composite operator that dispatched nothing is no op at the dispatch level") {
  // cross_entropy's aten::to(float32) of a float32 tensor (composite, no
  // child, returns its input's storage 3): a TorchDispatchMode never sees
  // it. aten::to to another dtype holds aten::_to_copy: that child is the
  // op. relu's aten::relu, to (dropped), to -> _to_copy: 2 ops.
  const std::string none = Io({}, {}, {});
  const std::string x = T(1, 4), y = T(3, 4), z = T(4, 4);
  std::vector<std::string> n = {
      Node(2, "ProfilerStep#0", 1, 5, none, none),
      Node(3, "aten::relu", 2, 0, Io({x}, {"[4]"}, {"[1]"}), Io({y}, {"[4]"}, {"[1]"})),
      Node(4, "aten::to", 2, 0, Io({y}, {"[4]"}, {"[1]"}), Io({y}, {"[4]"}, {"[1]"})),
      Node(5, "aten::to", 2, 0, Io({y}, {"[4]"}, {"[1]"}), Io({z}, {"[4]"}, {"[1]"})),
      Node(6, "aten::_to_copy", 5, 0, Io({y}, {"[4]"}, {"[1]"}), Io({z}, {"[4]"}, {"[1]"}))};
  auto t = ImportText(EtOf(n), "", DispatchOptions());
  INFO(t.status().ToString());
  REQUIRE(t.ok());
  REQUIRE(t->num_ops() == 2);
  CHECK(t->op_name_at(0) == "aten::relu");
  CHECK(t->op_name_at(1) == "aten::_to_copy");
}

TEST_CASE("ET: torch.tensor is one aten::lift_fresh at the dispatch level, new there") {
  // Adam's state["step"] = torch.tensor(0.0): aten::empty, aten::to,
  // aten::lift_fresh, aten::detach_ on storage 7 (4 B), then step += 1.
  // Storage 7 was an older tensor's address before (aten::relu's output).
  const std::string none = Io({}, {}, {});
  const std::string x = T(5, 4), st = T(7, 1), r = T(7, 4);
  std::vector<std::string> n = {
      Node(2, "ProfilerStep#0", 1, 7, none, none),
      Node(3, "aten::relu", 2, 0, Io({x}, {"[4]"}, {"[1]"}), Io({r}, {"[4]"}, {"[1]"})),
      Node(4, "Optimizer.step#Adam.step", 2, 7, none, none),
      Node(5, "aten::empty", 4, 0, none, Io({st}, {"[]"}, {"[]"})),
      Node(6, "aten::to", 4, 0, Io({st}, {"[]"}, {"[]"}), Io({st}, {"[]"}, {"[]"})),
      Node(7, "aten::lift_fresh", 4, 0, Io({st}, {"[]"}, {"[]"}), Io({st}, {"[]"}, {"[]"})),
      Node(8, "aten::detach_", 4, 0, Io({st}, {"[]"}, {"[]"}), Io({st}, {"[]"}, {"[]"})),
      Node(9, "aten::add_", 4, 0, Io({st}, {"[]"}, {"[]"}), Io({st}, {"[]"}, {"[]"}))};
  const std::string et = EtOf(n);
  auto t = ImportText(et, "", DispatchOptions());
  INFO(t.status().ToString());
  REQUIRE(t.ok());
  REQUIRE(t->num_ops() == 3);  // relu, lift_fresh, add_
  CHECK(t->op_name_at(1) == "aten::lift_fresh");
  CHECK(t->op_name_at(2) == "aten::add_");
  // File ids: 0 x, 1 relu's output, 2 the step counter: a new tensor at
  // lift_fresh (not relu's output continued), optimizer state to the end.
  REQUIRE(t->num_tensors() == 3);
  CHECK(t->tensor(2).size_bytes == 4);
  CHECK(t->lifetime(2).alloc_op == 1);
  CHECK(t->tensor(2).kind == TensorKind::kOptimizerState);
  CHECK(t->lifetime(1).free_op == 0);  // relu's output died after its only use
  // The leaf level keeps all five optimizer ops.
  auto leaves = ImportText(et, "", RoundRoofline());
  REQUIRE(leaves.ok());
  CHECK(leaves->num_ops() == 6);
}

}  // namespace
}  // namespace swapplan
