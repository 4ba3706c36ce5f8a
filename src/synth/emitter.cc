#include "emitter.h"

#include "absl/strings/str_cat.h"
#include "swapplan/synth/roofline.h"
#include "swapplan/util/checked.h"

namespace swapplan::synth_internal {

Emitter::Emitter(TraceBuilder* builder, const SynthOptions& options)
    : b_(builder), o_(options), names_(static_cast<size_t>(Site::kNumSites), -1) {}

void Emitter::SetMicroBatch(int32_t micro_batch, bool validation) {
  micro_batch_ = micro_batch;
  if (o_.tensor_names) {
    mb_prefix_ = validation ? absl::StrCat("val", micro_batch - o_.num_micro_batches, ".")
                            : absl::StrCat("mb", micro_batch, ".");
  }
}

absl::string_view Emitter::FullName(absl::string_view name, absl::string_view suffix) {
  if (!o_.tensor_names) return {};
  scratch_.clear();
  absl::StrAppend(&scratch_, mb_prefix_, scope_, name, suffix);
  if (stack_offset_ == kRecomputeStackOffset) scratch_ += ".recompute";
  return scratch_;
}

void Emitter::Overflow(absl::string_view what) {
  if (!status_.ok()) return;
  // Parameters and optimizer states are created before the first iteration.
  status_ = OverflowError(b_->num_iterations() == 0
                              ? std::string("synth: parameters")
                              : absl::StrCat("synth: iteration ", b_->num_iterations() - 1,
                                             ", op ", op_in_iteration_),
                          what);
}

int64_t Emitter::CheckedBytes(DType dtype, Shape shape, absl::string_view name) {
  int64_t bytes = DTypeBytes(dtype);
  for (int64_t d : shape) {
    if (!CheckedMul(bytes, d, &bytes)) {
      Overflow(absl::StrCat("tensor '", name,
                            "': numel x itemsize overflows a 64-bit integer; reduce the "
                            "configuration"));
      return 1;
    }
  }
  int64_t total = 0;
  if (!CheckedAdd(total_bytes_, bytes, &total) || total > kMaxSynthBytes) {
    Overflow(absl::StrCat("tensor '", name, "' (", bytes, " bytes) brings the tensors past ",
                          kMaxSynthBytes, " bytes (1 EiB) in all; reduce --hidden, --ffn, "
                          "--vocab, --layers, --experts, --seq or --micro-batch"));
    return 1;
  }
  total_bytes_ = total;
  return bytes;
}

uint64_t Emitter::New(TensorKind kind, DType dtype, Shape shape, absl::string_view name,
                      absl::string_view suffix) {
  const uint64_t id = bytes_.size();
  const int64_t size = CheckedBytes(dtype, shape, name);
  bytes_.push_back(size);
  state_.push_back(kUnborn);
  ++counts_.tensors;
  b_->AddTensor({.id = id, .size_bytes = size, .dtype = dtype, .shape = shape, .kind = kind,
                 .persistent = 0, .name = FullName(name, suffix)});
  return id;
}

uint64_t Emitter::NewPersistent(TensorKind kind, DType dtype, Shape shape,
                                absl::string_view name) {
  const uint64_t id = bytes_.size();
  const int64_t size = CheckedBytes(dtype, shape, name);
  bytes_.push_back(size);
  state_.push_back(kPersistent);
  ++counts_.tensors;
  b_->AddTensor({.id = id, .size_bytes = size, .dtype = dtype, .shape = shape, .kind = kind,
                 .persistent = 1, .name = o_.tensor_names ? name : absl::string_view()});
  return id;
}

NameId Emitter::NameOf(Site site) {
  NameId& n = names_[static_cast<size_t>(site)];
  if (n < 0) {
    const SiteInfo& info = kSiteInfo[static_cast<size_t>(site)];
    n = b_->InternOpName(o_.npu_op_names && info.npu_name != nullptr ? info.npu_name
                                                                            : info.cuda_name);
  }
  return n;
}

void Emitter::Bug(absl::string_view what, uint64_t t) {
  if (!status_.ok()) return;
  status_ = absl::InternalError(absl::StrCat(
      "synth: generator bug at iteration ", b_->num_iterations() - 1, ", op ", op_in_iteration_,
      ": tensor ", t, " ", what));
}

void Emitter::AddOp(Site site, Ids inputs, Ids outputs, int64_t duration_ns) {
  for (uint64_t t : inputs) {
    if (state_[t] != kLive && state_[t] != kPersistent) Bug("is used as an input but not live", t);
  }
  for (uint64_t t : outputs) {
    if (state_[t] == kUnborn) {
      state_[t] = kLive;
      b_->AddMemoryEvent(op_in_iteration_, MemoryEventKind::kAlloc, t);
      ++counts_.events;
    } else if (state_[t] == kFreed) {
      Bug("is written after it was freed", t);
    }
  }
  b_->AddOp({.name = NameOf(site),
             .phase = phase_,
             .inputs = inputs,
             .outputs = outputs,
             .duration_ns = duration_ns,
             .stack_id = static_cast<int64_t>(site) + stack_offset_,
             .micro_batch = micro_batch_,
             .layer = layer_});
  if (duration_ns == kDurationOverflowNs || !CheckedAdd(wall_ns_, duration_ns, &wall_ns_)) {
    Overflow(absl::StrCat("op '", kSiteInfo[static_cast<size_t>(site)].cuda_name,
                          "': the iteration's time overflows 64-bit nanoseconds (292 years); "
                          "check the device's FLOP/s and bandwidth figures"));
  }
  ++op_in_iteration_;
  ++counts_.ops;
  counts_.uses += static_cast<int64_t>(inputs.size() + outputs.size());
}

void Emitter::Op(Site site, Ids inputs, Ids outputs, double flops, double bytes_override) {
  double bytes = bytes_override;
  if (bytes < 0) {
    bytes = 0;
    for (uint64_t t : inputs) bytes += static_cast<double>(bytes_[t]);
    for (uint64_t t : outputs) bytes += static_cast<double>(bytes_[t]);
  }
  AddOp(site, inputs, outputs,
        RooflineDurationNs(flops, bytes, o_.device, o_.flops_efficiency, o_.hbm_efficiency));
}

void Emitter::Comm(Site site, Ids inputs, Ids outputs, double payload_bytes, int32_t group) {
  int64_t ns = 0;
  switch (kSiteInfo[static_cast<size_t>(site)].cost) {
    case CostKind::kAllReduce:
      ns = CollectiveDurationNs(CollectiveKind::kAllReduce, payload_bytes, group, o_.device);
      break;
    case CostKind::kReduceScatter:
      ns = CollectiveDurationNs(CollectiveKind::kReduceScatter, payload_bytes, group, o_.device);
      break;
    case CostKind::kAllGather:
      ns = CollectiveDurationNs(CollectiveKind::kAllGather, payload_bytes, group, o_.device);
      break;
    case CostKind::kPointToPoint:
      ns = CollectiveDurationNs(CollectiveKind::kPointToPoint, payload_bytes, group, o_.device);
      break;
    case CostKind::kHostToDevice:
      ns = HostCopyDurationNs(payload_bytes, o_.device.h2d_bandwidth_bytes_per_s);
      break;
    case CostKind::kCompute:
      ns = RooflineDurationNs(0, payload_bytes, o_.device, o_.flops_efficiency, o_.hbm_efficiency);
      break;
  }
  AddOp(site, inputs, outputs, ns);
}

void Emitter::Free(uint64_t t) {
  if (state_[t] != kLive) {
    Bug(state_[t] == kFreed ? "is freed twice" : "is freed but not live", t);
    return;
  }
  state_[t] = kFreed;
  b_->AddMemoryEvent(op_in_iteration_ - 1, MemoryEventKind::kFree, t);
  ++counts_.events;
}

void Emitter::BeginIteration() {
  b_->BeginIteration();
  op_in_iteration_ = 0;
  wall_ns_ = 0;
  iteration_first_tensor_ = bytes_.size();
}

void Emitter::EndIteration() {
  for (uint64_t t = iteration_first_tensor_; t < bytes_.size(); ++t) {
    if (state_[t] == kLive || state_[t] == kUnborn) {
      Bug(state_[t] == kLive ? "is still live at the end of its iteration"
                             : "was declared but never written",
          t);
      break;
    }
  }
  b_->EndIteration(wall_ns_);
}

}  // namespace swapplan::synth_internal
