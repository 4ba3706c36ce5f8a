#include "swapplan/planners/chameleon/logical_layers.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "swapplan/planners/chameleon/options.h"

namespace swapplan {

absl::string_view LayerTypeName(LayerType t) {
  switch (t) {
    case LayerType::kForward:
      return "FWD";
    case LayerType::kBackward:
      return "BWD";
    case LayerType::kOptimizer:
      return "OPT";
    case LayerType::kOther:
      return "OTHER";
  }
  return "OTHER";
}

absl::string_view LayerCountSourceName(LayerCountSource s) {
  switch (s) {
    case LayerCountSource::kOption:
      return "option";
    case LayerCountSource::kLayerHints:
      return "layer hints";
    case LayerCountSource::kMetadata:
      return "trace metadata";
    case LayerCountSource::kDefault:
      return "default";
  }
  return "default";
}

int32_t ResolveLayerCount(const Trace& trace, int32_t iteration, int32_t option,
                          LayerCountSource* source) {
  if (option > 0) {
    *source = LayerCountSource::kOption;
    return option;
  }
  const IterationInfo& iter = trace.iteration(iteration);
  absl::flat_hash_set<int32_t> hints;
  for (OpIndex i = iter.op_begin; i < iter.op_end; ++i) {
    const OpInfo& op = trace.op(i);
    if (op.phase == Phase::kForward && op.layer >= 0) hints.insert(op.layer);
  }
  if (!hints.empty()) {
    *source = LayerCountSource::kLayerHints;
    return static_cast<int32_t>(hints.size());
  }
  if (trace.metadata().model_layers > 0) {
    *source = LayerCountSource::kMetadata;
    return trace.metadata().model_layers;
  }
  *source = LayerCountSource::kDefault;
  return kDefaultLogicalLayers;
}

namespace {

LayerType TypeOfPhase(Phase p) {
  switch (p) {
    case Phase::kForward:
      return LayerType::kForward;
    case Phase::kBackward:
      return LayerType::kBackward;
    case Phase::kOptimizer:
      return LayerType::kOptimizer;
    case Phase::kOther:
      return LayerType::kOther;
  }
  return LayerType::kOther;
}

struct SegmentKey {
  LayerType type = LayerType::kOther;
  int32_t micro_batch = -1;
  bool operator==(const SegmentKey& o) const {
    return type == o.type && micro_batch == o.micro_batch;
  }
};

}  // namespace

LogicalLayers BuildLogicalLayers(const Trace& trace, int32_t iteration, const OpTimeline& timeline,
                                 int32_t layers_per_segment, int32_t optimizer_layers) {
  const IterationInfo& iter = trace.iteration(iteration);
  const int32_t n = iter.num_ops();
  auto own_key = [&](int32_t i) {
    const OpInfo& op = trace.op(iter.op_begin + i);
    SegmentKey k{TypeOfPhase(op.phase), op.micro_batch};
    if (k.type == LayerType::kOptimizer) k.micro_batch = -1;
    return k;
  };
  // Effective key per op: OTHER ops inherit the previous op's, leading ones
  // the first non-OTHER op's.
  SegmentKey current;
  for (int32_t i = 0; i < n; ++i) {
    if (trace.op(iter.op_begin + i).phase != Phase::kOther) {
      current = own_key(i);
      break;
    }
  }
  LogicalLayers ll;
  ll.op_type.resize(n);
  ll.layer_of_op.resize(n);
  std::vector<SegmentKey> keys(n);
  for (int32_t i = 0; i < n; ++i) {
    if (trace.op(iter.op_begin + i).phase != Phase::kOther) current = own_key(i);
    keys[i] = current;
    ll.op_type[i] = current.type;
  }
  for (int32_t begin = 0; begin < n;) {
    int32_t end = begin + 1;
    while (end < n && keys[end] == keys[begin]) ++end;
    const SegmentKey k = keys[begin];
    const int32_t len = end - begin;
    int32_t groups = 1;
    if (k.type == LayerType::kForward || k.type == LayerType::kBackward) {
      groups = layers_per_segment;
    } else if (k.type == LayerType::kOptimizer) {
      groups = optimizer_layers;
    }
    groups = std::min(groups, len);
    for (int32_t g = 0; g < groups; ++g) {
      LogicalLayer l;
      l.begin_op = begin + static_cast<int32_t>(static_cast<int64_t>(g) * len / groups);
      l.end_op = begin + static_cast<int32_t>(static_cast<int64_t>(g + 1) * len / groups);
      l.type = k.type;
      l.micro_batch = k.micro_batch;
      l.segment = ll.num_segments;
      l.index_in_segment = g;
      l.start_ns = timeline.start_ns(l.begin_op);
      l.time_ns = timeline.end_ns(l.end_op - 1) - l.start_ns;
      const int32_t index = static_cast<int32_t>(ll.layers.size());
      std::fill(ll.layer_of_op.begin() + l.begin_op, ll.layer_of_op.begin() + l.end_op, index);
      ll.layers.push_back(l);
    }
    ++ll.num_segments;
    begin = end;
  }
  return ll;
}

}  // namespace swapplan
