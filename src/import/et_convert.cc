// EtCapture -> Trace (the rules are in docs/importers.md, "PyTorch execution
// traces"). Passes, each linear in nodes (plus a sort by id):
//   1. index nodes by id; parents (only to a smaller id, so no cycle)
//   2. in id order: inherited structure (phase hint, autograd, gradient
//      scopes, ProfilerStep / Optimizer.step ancestors, nearest op ancestor)
//   3. in reverse id order: leaves, last descendant id, and the storages
//      each op's descendants touch (an op that touches one they do not
//      does work of its own and is kept next to its children)
//   4. iterations, order, tensor lifetimes by storage id, durations
#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "import/assembler.h"
#include "import/et_capture.h"
#include "import/names.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::import_internal {
namespace {

enum class NodeClass : uint8_t { kOp, kAnnotation, kAutograd, kGpu };

double Numel(absl::Span<const int64_t> shape) {
  double n = 1;
  for (int64_t d : shape) n *= static_cast<double>(d);
  return n;
}

// FLOPs of an op from its tensor arguments' shapes (0 when not a matmul or
// convolution, or when the shapes do not fit).
double EstimateFlops(RooflineClass cls, const EtCapture& cap, const EtNode& n) {
  auto in_shape = [&](int k) { return cap.Shape(cap.refs[n.refs_begin + k].shape); };
  auto out_shape = [&](int k) {
    return cap.Shape(cap.refs[n.refs_begin + n.num_inputs + k].shape);
  };
  switch (cls) {
    case RooflineClass::kMatmul: {
      // The last two inputs of rank >= 2: A [..., M, K] x B [..., K, N].
      int b = -1, a = -1;
      for (int k = n.num_inputs - 1; k >= 0; --k) {
        if (in_shape(k).size() >= 2) {
          if (b < 0) b = k;
          else if (a < 0) a = k;
        }
      }
      if (a < 0) return 0;
      return 2.0 * Numel(in_shape(a)) * static_cast<double>(in_shape(b).back());
    }
    case RooflineClass::kLinear: {
      // input [..., K] x weight [N, K].
      if (n.num_inputs < 2 || in_shape(1).size() != 2) return 0;
      return 2.0 * Numel(in_shape(0)) * static_cast<double>(in_shape(1)[0]);
    }
    case RooflineClass::kConv: {
      // 2 x output elements x (weight elements / output channels).
      if (n.num_inputs < 2 || n.num_outputs < 1 || in_shape(1).empty() || in_shape(1)[0] <= 0) {
        return 0;
      }
      return 2.0 * Numel(out_shape(0)) * Numel(in_shape(1)) / static_cast<double>(in_shape(1)[0]);
    }
    case RooflineClass::kConvBackward: {
      // grad_output, input, weight: gradients for input and weight.
      if (n.num_inputs < 3 || in_shape(2).empty() || in_shape(2)[0] <= 0) return 0;
      return 4.0 * Numel(in_shape(0)) * Numel(in_shape(2)) / static_cast<double>(in_shape(2)[0]);
    }
    default:
      return 0;
  }
}

int64_t RooflineNs(double flops, double bytes, const DeviceModel& d) {
  double s = std::max(flops / d.peak_flops_per_s, bytes / d.memory_bandwidth_bytes_per_s);
  double ns = std::ceil(s * 1e9);
  return ns >= 9.0e18 ? int64_t{9'000'000'000'000'000'000} : static_cast<int64_t>(ns);
}

struct Lifetime {
  uint64_t tensor = 0;
  int64_t start_id = -1;  // node id of the allocating op; -1 resident before the trace
};

// True when an op ancestor of node `i` (through `op_anc`) returns storage
// `storage` without taking it as an input: the ancestor made it (aten::cat
// whose narrow / slice children view its output; the views in between take
// and return it).
bool AncestorReturns(const EtCapture& cap, const std::vector<int32_t>& op_anc, uint32_t i,
                     int64_t storage) {
  for (int32_t p = op_anc[i]; p >= 0; p = op_anc[p]) {
    const EtNode& nd = cap.nodes[p];
    bool in = false, out = false;
    for (uint32_t r = 0; r < nd.num_inputs + nd.num_outputs; ++r) {
      if (cap.refs[nd.refs_begin + r].storage_id != storage) continue;
      (r < nd.num_inputs ? in : out) = true;
    }
    if (out && !in) return true;
    if (!in) return false;  // the ancestor does not touch it: not its work
  }
  return false;
}

}  // namespace

absl::StatusOr<Trace> ConvertEt(EtCapture&& cap, const std::string& source,
                                absl::string_view format, const ImportOptions& options,
                                const EtPairing* pairing) {
  const size_t n = cap.nodes.size();
  const std::vector<EtNode>& nodes = cap.nodes;
  std::vector<NameTraits> traits(cap.names.size());
  for (size_t i = 0; i < cap.names.size(); ++i) traits[i] = ClassifyName(cap.names[i]);

  // 1. Index, order, parents.
  absl::flat_hash_map<int64_t, uint32_t> index;
  index.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    auto [it, inserted] = index.try_emplace(nodes[i].id, i);
    if (!inserted) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": node id ", nodes[i].id,
                                                     " appears twice [et-schema]"));
    }
  }
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return nodes[a].id < nodes[b].id; });
  std::vector<int32_t> parent(n, -1);
  std::vector<NodeClass> cls(n);
  for (uint32_t i = 0; i < n; ++i) {
    const EtNode& nd = nodes[i];
    if (nd.parent >= 0 && nd.parent < nd.id) {
      auto it = index.find(nd.parent);
      if (it != index.end()) parent[i] = static_cast<int32_t>(it->second);
    }
    const NameTraits& t = traits[nd.name];
    cls[i] = nd.gpu                            ? NodeClass::kGpu
             : t.annotation || nd.scope == 7   ? NodeClass::kAnnotation
             : t.autograd || nd.scope == 1     ? NodeClass::kAutograd
                                               : NodeClass::kOp;
  }

  // Threads that run backward work: autograd nodes, or operators named
  // *_backward (older traces keep only the operators).
  // Not a thread that also runs the training loop (ProfilerStep# or
  // Optimizer.* annotations): on the CPU the engine runs backward on the
  // calling thread, whose forward ops are no backward work.
  absl::flat_hash_set<int32_t> autograd_threads, loop_threads;
  for (uint32_t i = 0; i < n; ++i) {
    const NameTraits& t = traits[nodes[i].name];
    if (t.profiler_step || t.optimizer_step || t.zero_grad) loop_threads.insert(nodes[i].tid);
    if (cls[i] == NodeClass::kAutograd || nodes[i].fw_tid ||
        (cls[i] == NodeClass::kOp && absl::StrContains(cap.names[nodes[i].name], "_backward"))) {
      autograd_threads.insert(nodes[i].tid);
    }
  }
  for (int32_t tid : loop_threads) autograd_threads.erase(tid);

  // 2. Inherited structure, parents first.
  std::vector<PhaseHint> hint(n, PhaseHint::kNone);
  std::vector<uint8_t> autograd(n, 0), grad_scope(n, 0);
  std::vector<int32_t> step_anc(n, -1), op_anc(n, -1), top_op(n, -1);
  std::vector<uint32_t> steps, opt_steps;  // in id order
  for (uint32_t i : order) {
    const EtNode& nd = nodes[i];
    const NameTraits& t = traits[nd.name];
    const int32_t p = parent[i];
    hint[i] = (cls[i] == NodeClass::kAnnotation && t.hint != PhaseHint::kNone) ? t.hint
              : p >= 0 ? hint[p] : PhaseHint::kNone;
    autograd[i] = (p >= 0 && autograd[p]) || cls[i] == NodeClass::kAutograd || nd.fw_tid ||
                  autograd_threads.contains(nd.tid);
    grad_scope[i] = (p >= 0 && grad_scope[p]) || t.accumulate_grad || t.zero_grad;
    step_anc[i] = t.profiler_step ? static_cast<int32_t>(i) : p >= 0 ? step_anc[p] : -1;
    op_anc[i] = p < 0 ? -1 : cls[p] == NodeClass::kOp ? p : op_anc[p];
    top_op[i] = op_anc[i] >= 0 ? top_op[op_anc[i]] : static_cast<int32_t>(i);
    if (t.profiler_step) steps.push_back(i);
    if (t.optimizer_step && cls[i] == NodeClass::kAnnotation) opt_steps.push_back(i);
  }

  // The device whose tensors the trace models: the accelerator holding the
  // most bytes (the CPU only when nothing else appears).
  std::vector<double> device_bytes(cap.devices.size(), 0);
  for (uint32_t i = 0; i < n; ++i) {
    if (cls[i] != NodeClass::kOp) continue;
    for (uint32_t r = 0; r < nodes[i].num_inputs + nodes[i].num_outputs; ++r) {
      const EtTensorRef& ref = cap.refs[nodes[i].refs_begin + r];
      device_bytes[ref.device] += static_cast<double>(ref.view_bytes);
    }
  }
  int main_device = -1;
  for (size_t d = 0; d < cap.devices.size(); ++d) {
    const bool cpu = absl::StartsWith(cap.devices[d], "cpu");
    if (main_device < 0) {
      main_device = static_cast<int>(d);
      continue;
    }
    const bool main_cpu = absl::StartsWith(cap.devices[main_device], "cpu");
    if ((main_cpu && !cpu) || (main_cpu == cpu && device_bytes[d] > device_bytes[main_device])) {
      main_device = static_cast<int>(d);
    }
  }
  auto on_main = [&](const EtTensorRef& r) { return static_cast<int>(r.device) == main_device; };

  // 3. Leaves, last descendants, storages touched below each op.
  std::vector<uint8_t> has_op_desc(n, 0), residual(n, 0);
  std::vector<int64_t> max_desc(n);
  std::vector<int64_t> gpu_ns(n, 0);
  bool any_gpu = false;
  for (uint32_t i = 0; i < n; ++i) max_desc[i] = nodes[i].id;
  absl::flat_hash_map<uint32_t, absl::flat_hash_set<int64_t>> covered;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const uint32_t i = *it;
    const int32_t p = parent[i];
    if (p >= 0) {
      max_desc[p] = std::max(max_desc[p], max_desc[i]);
      if (cls[i] == NodeClass::kOp || has_op_desc[i]) has_op_desc[p] = 1;
      if (cls[i] == NodeClass::kGpu && nodes[i].duration_ns > 0) {
        gpu_ns[p] = SatAdd(gpu_ns[p], nodes[i].duration_ns);
      }
    }
    if (cls[i] == NodeClass::kGpu) any_gpu = true;
    if (cls[i] != NodeClass::kOp) continue;
    absl::flat_hash_set<int64_t> mine;
    auto found = covered.find(i);
    if (found != covered.end()) mine = std::move(found->second), covered.erase(found);
    const EtNode& nd = nodes[i];
    bool own_work = false;
    for (uint32_t r = 0; r < nd.num_inputs + nd.num_outputs; ++r) {
      const EtTensorRef& ref = cap.refs[nd.refs_begin + r];
      if (!on_main(ref)) continue;
      if (has_op_desc[i] && !mine.contains(ref.storage_id)) own_work = true;
    }
    residual[i] = has_op_desc[i] && own_work;
    if (op_anc[i] >= 0) {
      absl::flat_hash_set<int64_t>& up = covered[static_cast<uint32_t>(op_anc[i])];
      for (int64_t s : mine) up.insert(s);
      for (uint32_t r = 0; r < nd.num_inputs + nd.num_outputs; ++r) {
        const EtTensorRef& ref = cap.refs[nd.refs_begin + r];
        if (on_main(ref)) up.insert(ref.storage_id);
      }
    }
  }

  // 3b. Dispatch-level ops (ImportOptions::EtOps::kDispatch): an operator
  // no emitted operator encloses, taken whole unless it is
  // CompositeImplicitAutograd with operators below it (then its children
  // are candidates in turn). Parents first. A CompositeImplicitAutograd
  // operator with no operator below it that returns only its inputs'
  // storages (aten::to, aten::contiguous, aten::reshape of a tensor that
  // needs nothing done) dispatched nothing: a TorchDispatchMode never sees
  // it, so it is not an op either (it makes no storage, so nothing is lost).
  const bool dispatch = options.et_ops == ImportOptions::EtOps::kDispatch;
  std::vector<uint8_t> dispatch_op(n, 0), inside_op(n, 0);
  auto returns_inputs_only = [&](uint32_t i) {
    const EtNode& nd = nodes[i];
    for (uint32_t o = nd.num_inputs; o < nd.num_inputs + nd.num_outputs; ++o) {
      bool found = false;
      for (uint32_t r = 0; r < nd.num_inputs && !found; ++r) {
        found = cap.refs[nd.refs_begin + r].storage_id == cap.refs[nd.refs_begin + o].storage_id;
      }
      if (!found) return false;
    }
    return true;
  };
  if (dispatch) {
    for (uint32_t i : order) {
      const int32_t p = op_anc[i];
      inside_op[i] = p >= 0 && (inside_op[p] || dispatch_op[p]);
      const bool composite = traits[nodes[i].name].composite_implicit;
      dispatch_op[i] = cls[i] == NodeClass::kOp && !inside_op[i] &&
                       (!composite || (!has_op_desc[i] && !returns_inputs_only(i)));
    }
  }

  // 4a. Iterations.
  TraceAssembler a(source);
  struct Emit {
    int32_t iteration;
    int64_t key;
    uint8_t after;
    uint32_t node;
  };
  std::vector<Emit> emit;
  int64_t outside = 0;
  for (uint32_t i = 0; i < n; ++i) {
    if (dispatch ? !dispatch_op[i] : cls[i] != NodeClass::kOp || (has_op_desc[i] && !residual[i])) {
      continue;
    }
    const int64_t id = nodes[i].id;
    int32_t it = 0;
    if (!steps.empty()) {
      int32_t s = -1;
      if (step_anc[i] >= 0) {
        s = static_cast<int32_t>(std::find(steps.begin(), steps.end(),
                                           static_cast<uint32_t>(step_anc[i])) - steps.begin());
      } else {
        auto up = std::upper_bound(steps.begin(), steps.end(), id,
                                   [&](int64_t v, uint32_t st) { return v < nodes[st].id; });
        if (up != steps.begin() && id <= max_desc[*(up - 1)]) {
          s = static_cast<int32_t>(up - steps.begin()) - 1;
        }
      }
      if (s < 0) {
        ++outside;
        continue;
      }
      it = s;
    } else if (!opt_steps.empty()) {
      auto up = std::lower_bound(opt_steps.begin(), opt_steps.end(), id,
                                 [&](uint32_t st, int64_t v) { return max_desc[st] < v; });
      if (up == opt_steps.end()) {
        ++outside;
        continue;
      }
      it = static_cast<int32_t>(up - opt_steps.begin());
    }
    const bool after = !dispatch && has_op_desc[i] != 0;
    emit.push_back({it, after ? max_desc[i] : id, static_cast<uint8_t>(after), i});
  }
  std::sort(emit.begin(), emit.end(), [](const Emit& x, const Emit& y) {
    if (x.iteration != y.iteration) return x.iteration < y.iteration;
    if (x.key != y.key) return x.key < y.key;
    return x.after < y.after;
  });
  if (outside > 0) {
    a.Note(steps.empty() ? "ops_after_last_optimizer_step" : "ops_outside_profiler_steps",
           outside);
  }

  // 4b. Ops, tensors, durations.
  const DeviceModel& dev = options.roofline_device;
  absl::flat_hash_map<int64_t, Lifetime> live;
  std::vector<int64_t> extent;  // per tensor
  std::vector<int64_t> in_storages;
  int64_t paired = 0, unpaired = 0;
  // Optimizer state made in the trace (Adam's first step): a tensor a state
  // creator (zeros_like, clone, torch.tensor, ...) makes inside
  // Optimizer.step and another top-level op of the step then uses. ET records
  // no frees, so without this it would die after its last use, a TEMPORARY.
  struct StateCandidate {
    uint64_t tensor;
    int32_t op;
  };
  std::vector<StateCandidate> state_candidates;
  std::vector<int32_t> made_by_top;        // per tensor: top-level op node that made it, -1
  std::vector<uint8_t> used_by_other_top;  // per tensor
  // Gradients (touched under AccumulateGrad / zero_grad) live until the end
  // of the iteration of their last use: .grad holds them until the next
  // zero_grad, not until their last read (a first step's optimizer peak
  // holds every gradient).
  std::vector<uint8_t> is_grad;            // per tensor
  std::vector<int32_t> last_use_iteration;  // per tensor
  std::vector<int32_t> iteration_last_op;   // per iteration
  // torch.tensor(...) at the dispatch level: the ET records the aten::empty
  // and aten::to that build it and the aten::detach_ after it, which run
  // below any TorchDispatchMode; only its aten::lift_fresh is seen. Those
  // are dropped and the storage is new at lift_fresh (the recorder's
  // "made outside the dispatcher: allocated at its first use").
  std::vector<uint8_t> skip(emit.size(), 0);
  absl::flat_hash_set<int64_t> fresh;  // storages lift_fresh receives new
  if (dispatch) {
    auto touches = [&](uint32_t node, int64_t storage) {
      const EtNode& nd = nodes[node];
      for (uint32_t r = 0; r < nd.num_inputs + nd.num_outputs; ++r) {
        if (cap.refs[nd.refs_begin + r].storage_id == storage) return true;
      }
      return false;
    };
    auto named = [&](uint32_t node, std::initializer_list<absl::string_view> names) {
      for (absl::string_view nm : names) {
        if (cap.names[nodes[node].name] == nm) return true;
      }
      return false;
    };
    for (size_t k = 0; k < emit.size(); ++k) {
      const EtNode& nd = nodes[emit[k].node];
      if (cap.names[nd.name] != "aten::lift_fresh" || nd.num_inputs == 0) continue;
      const int64_t storage = cap.refs[nd.refs_begin].storage_id;
      bool made_here = false;
      for (size_t j = k; j-- > 0 && emit[j].iteration == emit[k].iteration;) {
        if (!named(emit[j].node, {"aten::empty", "aten::to", "aten::_to_copy"}) ||
            !touches(emit[j].node, storage)) {
          break;
        }
        skip[j] = 1;
        made_here = true;
      }
      if (!made_here) continue;
      fresh.insert(storage);
      if (k + 1 < emit.size() && named(emit[k + 1].node, {"aten::detach_"}) &&
          touches(emit[k + 1].node, storage)) {
        skip[k + 1] = 1;
      }
    }
  }
  for (size_t ek = 0; ek < emit.size(); ++ek) {
    if (skip[ek]) continue;
    const Emit& e = emit[ek];
    const uint32_t i = e.node;
    const EtNode& nd = nodes[i];
    const NameTraits& t = traits[nd.name];
    PhaseHint h = hint[i] != PhaseHint::kNone ? hint[i]
                  : autograd[i]               ? PhaseHint::kAutograd
                                              : PhaseHint::kNone;
    const int32_t op = a.AddOp(e.iteration, a.Name(cap.names[nd.name]), h);
    if (static_cast<size_t>(e.iteration) >= iteration_last_op.size()) {
      iteration_last_op.resize(static_cast<size_t>(e.iteration) + 1, -1);
    }
    iteration_last_op[e.iteration] = op;
    in_storages.clear();
    bool from_other_device = false;
    double bytes = 0;
    for (uint32_t r = 0; r < nd.num_inputs + nd.num_outputs; ++r) {
      const EtTensorRef& ref = cap.refs[nd.refs_begin + r];
      const bool output = r >= nd.num_inputs;
      if (!on_main(ref)) {
        if (!output) from_other_device = true;
        continue;
      }
      bytes += static_cast<double>(ref.view_bytes);
      auto lt = live.find(ref.storage_id);
      // torch.tensor's storage at its lift_fresh: new, whatever the address
      // held before.
      const bool fresh_here = !output && fresh.erase(ref.storage_id) > 0;
      bool reuse = lt != live.end() && !fresh_here;
      if (output && reuse) {
        const bool was_input = std::find(in_storages.begin(), in_storages.end(),
                                         ref.storage_id) != in_storages.end();
        const bool from_child = lt->second.start_id > nd.id && lt->second.start_id <= max_desc[i];
        reuse = was_input || from_child;
      }
      // A storage first seen as a child's input that an enclosing op
      // returns was allocated by that op (aten::addmm's output, filled by
      // its aten::copy_ child): new here, not resident before the trace.
      const bool made_by_ancestor =
          fresh_here || (!reuse && !output && lt == live.end() &&
                         AncestorReturns(cap, op_anc, i, ref.storage_id));
      uint64_t tensor;
      if (reuse) {
        tensor = lt->second.tensor;
        extent[tensor] = std::max(extent[tensor], ref.extent_bytes);
      } else {
        tensor = a.AddTensor(ref.extent_bytes, ref.dtype, cap.Shape(ref.shape), "");
        extent.push_back(ref.extent_bytes);
        made_by_top.push_back(-1);
        used_by_other_top.push_back(0);
        is_grad.push_back(0);
        last_use_iteration.push_back(-1);
        if ((output || made_by_ancestor) && h == PhaseHint::kOptimizer &&
            traits[nodes[top_op[i]].name].state_creator) {
          made_by_top[tensor] = top_op[i];
          state_candidates.push_back({tensor, op});
        }
        if (!output && !made_by_ancestor) a.SetPersistent(tensor, true);
        live[ref.storage_id] = Lifetime{tensor, output || made_by_ancestor ? nd.id : -1};
        if (output && t.copy && from_other_device) a.SetKind(tensor, TensorKind::kInput);
      }
      if (!output) in_storages.push_back(ref.storage_id);
      if (grad_scope[i]) {
        a.SetKind(tensor, TensorKind::kGradient);
        is_grad[tensor] = 1;
      }
      last_use_iteration[tensor] = e.iteration;
      if (made_by_top[tensor] >= 0 && made_by_top[tensor] != top_op[i]) {
        used_by_other_top[tensor] = 1;
      }
      a.AddUse(op, tensor, output);
    }
    if (pairing != nullptr) {
      if (i < pairing->paired.size() && pairing->paired[i]) {
        const PairedTiming& pt = pairing->by_node[i];
        ++paired;
        a.SetDuration(op, std::max<int64_t>(pt.duration_ns, 0));
        if (pt.allocator_bytes >= 0) a.SetAllocatorBytes(op, pt.allocator_bytes);
      } else {
        ++unpaired;
        a.SetDuration(op, 0);
      }
    } else if (any_gpu) {
      a.SetDuration(op, gpu_ns[i]);
    } else if (nd.duration_ns >= 0) {
      a.SetDuration(op, nd.duration_ns);
    } else {
      const double flops = EstimateFlops(t.roofline, cap, nd);
      a.SetDuration(op, t.roofline == RooflineClass::kView ? 0 : RooflineNs(flops, bytes, dev));
    }
  }
  for (size_t k = 0; k < extent.size(); ++k) a.SetSize(k, extent[k]);
  int64_t state_created = 0;
  for (const StateCandidate& c : state_candidates) {
    if (!used_by_other_top[c.tensor] || a.kind_known(c.tensor)) continue;
    a.SetKind(c.tensor, TensorKind::kOptimizerState);
    a.SetPersistent(c.tensor, true);  // allocated at its creation, resident to the end
    a.AddEvent(c.op, MemoryEventKind::kAlloc, c.tensor);
    ++state_created;
  }
  if (state_created > 0) a.Note("optimizer_state_created", state_created);
  for (size_t k = 0; k < is_grad.size(); ++k) {
    if (!is_grad[k] || last_use_iteration[k] < 0) continue;
    a.AddEvent(iteration_last_op[last_use_iteration[k]], MemoryEventKind::kFree, k);
  }

  // Metadata.
  TraceMetadata& m = a.metadata();
  m.framework = "PyTorch";
  m.recorder = format == kFormatChakraEt ? "chakra execution trace" : "execution trace";
  m.recorder_version = cap.schema;
  a.SetAttribute("import.format", format);
  if (dispatch) a.SetAttribute("import.et_ops", "dispatch (the ops a TorchDispatchMode sees)");
  a.SetAttribute("import.schema", cap.schema);
  if (main_device >= 0) a.SetAttribute("import.device", cap.devices[main_device]);
  if (!steps.empty()) {
    a.SetAttribute("import.iterations", absl::StrCat("ProfilerStep#", traits[nodes[steps.front()].name].step_number, " .. #",
                                                     traits[nodes[steps.back()].name].step_number));
    if (pairing != nullptr) {
      for (size_t s = 0; s < steps.size(); ++s) {
        auto w = pairing->step_wall_ns.find(traits[nodes[steps[s]].name].step_number);
        if (w != pairing->step_wall_ns.end()) a.SetWallTime(static_cast<int32_t>(s), w->second);
      }
    }
  } else {
    a.SetAttribute("import.iterations", opt_steps.empty() ? "whole trace (no ProfilerStep#)"
                                                          : "one per Optimizer.step#");
  }
  if (pairing != nullptr) {
    m.device_name = pairing->device.device_name;
    m.device_memory_bytes = pairing->device.device_memory_bytes;
    a.SetAttribute("import.durations",
                   absl::StrCat("recorded by Kineto (", pairing->path, "): ",
                                pairing->timing_source, "; paired by ", pairing->method));
    a.SetAttribute("import.kineto_paired_ops", absl::StrCat(paired, " of ", paired + unpaired));
    if (pairing->allocator_peak_bytes >= 0) {
      a.SetAttribute("import.allocator_peak_bytes", absl::StrCat(pairing->allocator_peak_bytes));
    }
  } else if (any_gpu) {
    a.SetAttribute("import.durations", "recorded (sum of the device nodes under each op)");
  } else if (format == kFormatChakraEt) {
    a.SetAttribute("import.durations", "recorded (duration_micros, host time)");
  } else {
    a.SetAttribute("import.durations",
                   absl::StrFormat("estimated: roofline at %g FLOP/s and %g B/s; no Kineto trace "
                                   "was given (--kineto)",
                                   dev.peak_flops_per_s, dev.memory_bandwidth_bytes_per_s));
  }
  return std::move(a).Finish();
}

}  // namespace swapplan::import_internal
