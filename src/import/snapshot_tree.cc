// ReadSnapshotTree and FindSnapshotParts (import/snapshot_tree.h).
#include "import/snapshot_tree.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "import/json_reader.h"
#include "import/unpickle.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::import_internal {

absl::Status SnapshotSchemaError(const std::string& source, absl::string_view where,
                                 absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": ", where, ": ", what,
                                                 " [snapshot-schema]"));
}

absl::Status ReadSnapshotTree(ImportInput& in, const ImportOptions& options, ValueTree* tree,
                              uint32_t* root, bool* pickle) {
  *pickle = !in.head().empty() && static_cast<unsigned char>(in.head()[0]) == 0x80;
  if (*pickle) return SafeUnpickle(in.stream(), in.source(), in.ErrorFn(), tree, root);
  JsonLimits limits;
  limits.max_token_bytes = options.max_json_token_bytes;
  JsonReader r(in.stream(), in.source(), limits, in.ErrorFn());
  *root = tree->ParseJson(r);
  if (r.ok()) r.AtEndOfInput();
  return r.status();
}

absl::StatusOr<SnapshotParts> FindSnapshotParts(const ValueTree& t, uint32_t root,
                                                const std::string& source) {
  SnapshotParts p;
  if (t.Kind(root) == ValueKind::kDict) {
    p.segments = t.Lookup(root, "segments");
    p.traces = t.Lookup(root, "device_traces");
  } else if (t.IsSequence(root)) {
    p.segments = root;
  } else {
    return SnapshotSchemaError(
        source, "the snapshot", "is neither a dict with segments / device_traces nor a list of segments");
  }
  if (p.segments != kNoValue && !t.IsSequence(p.segments)) {
    return SnapshotSchemaError(source, "segments", "is not a list");
  }
  if (p.traces != kNoValue && !t.IsSequence(p.traces)) {
    return SnapshotSchemaError(source, "device_traces", "is not a list");
  }
  size_t best = 0;
  if (p.traces != kNoValue) {
    const std::vector<uint32_t>& rings = t.Items(p.traces);
    for (size_t d = 0; d < rings.size(); ++d) {
      if (t.IsSequence(rings[d]) && t.Items(rings[d]).size() > best) {
        best = t.Items(rings[d]).size();
        p.device = static_cast<int64_t>(d);
        p.ring = rings[d];
      }
    }
  }
  if (best == 0 && p.segments != kNoValue) {
    absl::flat_hash_map<int64_t, size_t> count;
    for (uint32_t s : t.Items(p.segments)) {
      int64_t dev = 0;
      if (t.Kind(s) == ValueKind::kDict) t.AsInt(t.Lookup(s, "device"), &dev);
      if (++count[dev] > best || (count[dev] == best && dev < p.device)) {
        best = count[dev];
        p.device = dev;
      }
    }
  }
  return p;
}

}  // namespace swapplan::import_internal
