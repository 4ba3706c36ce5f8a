// ReadAllocatorRecording (import/alloc_recording.h): the raw trace ring,
// segments and allocator_settings of a memory snapshot.
#include "swapplan/import/alloc_recording.h"

#include <bit>
#include <limits>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "import/formats.h"
#include "import/input.h"
#include "import/snapshot_tree.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {
namespace {

using import_internal::ImportInput;
using import_internal::kNoValue;
using import_internal::SnapshotSchemaError;
using import_internal::ValueKind;
using import_internal::ValueTree;
using Kind = RecordedAllocEvent::Kind;

constexpr int64_t kMaxAddress = int64_t{1} << 62;
constexpr int64_t kMaxTotalBytes = int64_t{1} << 60;

Kind KindOf(absl::string_view action) {
  static constexpr std::pair<absl::string_view, Kind> kKinds[] = {
      {"alloc", Kind::kAlloc},
      {"free_requested", Kind::kFreeRequested},
      {"free_completed", Kind::kFreeCompleted},
      {"segment_alloc", Kind::kSegmentAlloc},
      {"segment_free", Kind::kSegmentFree},
      {"segment_map", Kind::kSegmentMap},
      {"segment_unmap", Kind::kSegmentUnmap},
      {"oom", Kind::kOom},
      {"snapshot", Kind::kSnapshot},
  };
  for (const auto& [name, kind] : kKinds) {
    if (name == action) return kind;
  }
  return Kind::kOther;
}

class RecordingReader {
 public:
  RecordingReader(const ValueTree& t, const std::string& source) : t_(t), source_(source) {}

  absl::StatusOr<AllocatorRecording> Run(uint32_t root) {
    SWAPPLAN_ASSIGN_OR_RETURN(import_internal::SnapshotParts parts,
                              import_internal::FindSnapshotParts(t_, root, source_));
    out_.source = source_;
    out_.device = static_cast<int32_t>(std::min<int64_t>(parts.device, INT32_MAX));
    if (parts.ring != kNoValue) SWAPPLAN_RETURN_IF_ERROR(Ring(parts.ring, parts.device));
    if (parts.segments != kNoValue) {
      SWAPPLAN_RETURN_IF_ERROR(Segments(parts.segments, parts.device));
    }
    if (t_.Kind(root) == ValueKind::kDict) Settings(t_.Lookup(root, "allocator_settings"));
    return std::move(out_);
  }

 private:
  bool Int(uint32_t dict, absl::string_view key, int64_t* out) const {
    return t_.AsInt(t_.Lookup(dict, key), out);
  }

  int32_t Stream(uint32_t dict) {
    int64_t s = 0;
    if (!Int(dict, "stream", &s) || s == 0) return 0;
    auto [it, inserted] = streams_.try_emplace(s, static_cast<int32_t>(streams_.size() + 1));
    return it->second;
  }

  absl::Status Bytes(uint32_t dict, absl::string_view key, const std::string& where,
                     int64_t* out) {
    if (!Int(dict, key, out) || *out < 0) {
      return SnapshotSchemaError(source_, where, absl::StrCat("has no non-negative '", key, "'"));
    }
    if (*out > kMaxAllocatorRequestBytes) {
      return SnapshotSchemaError(source_, where,
                                 absl::StrCat("'", key, "' ", *out, " is above 1 PiB"));
    }
    return absl::OkStatus();
  }

  absl::Status Address(uint32_t dict, absl::string_view key, const std::string& where,
                       int64_t* out) {
    if (!Int(dict, key, out) || *out < 0 || *out >= kMaxAddress) {
      return SnapshotSchemaError(source_, where,
                                 absl::StrCat("has no '", key, "' in [0, 2^62)"));
    }
    return absl::OkStatus();
  }

  absl::Status AddTotal(int64_t bytes, const std::string& where) {
    total_ += bytes;
    if (total_ > kMaxTotalBytes) {
      return SnapshotSchemaError(source_, where, "reserved bytes add up past 2^60");
    }
    return absl::OkStatus();
  }

  absl::Status Ring(uint32_t ring, int64_t device) {
    const std::vector<uint32_t>& entries = t_.Items(ring);
    out_.events.reserve(entries.size());
    for (size_t k = 0; k < entries.size(); ++k) {
      const uint32_t e = entries[k];
      const std::string where = absl::StrCat("device_traces[", device, "][", k, "]");
      if (t_.Kind(e) != ValueKind::kDict) return SnapshotSchemaError(source_, where, "is not a dict");
      const uint32_t act = t_.Lookup(e, "action");
      if (t_.Kind(act) != ValueKind::kString) {
        return SnapshotSchemaError(source_, where, "has no 'action' string");
      }
      RecordedAllocEvent ev;
      ev.kind = KindOf(t_.Str(act));
      if (ev.kind == Kind::kOther) ev.action = std::string(t_.Str(act).substr(0, 64));
      ev.stream = Stream(e);
      const bool sized = ev.kind != Kind::kOom && ev.kind != Kind::kSnapshot &&
                         ev.kind != Kind::kOther;
      if (sized) {
        SWAPPLAN_RETURN_IF_ERROR(Address(e, "addr", where, &ev.address));
        SWAPPLAN_RETURN_IF_ERROR(Bytes(e, "size", where, &ev.bytes));
      }
      if (ev.kind == Kind::kSegmentAlloc || ev.kind == Kind::kSegmentMap) {
        SWAPPLAN_RETURN_IF_ERROR(AddTotal(ev.bytes, where));
      }
      out_.events.push_back(std::move(ev));
    }
    return absl::OkStatus();
  }

  absl::Status Segments(uint32_t segments, int64_t device) {
    const std::vector<uint32_t>& segs = t_.Items(segments);
    for (size_t s = 0; s < segs.size(); ++s) {
      const uint32_t seg = segs[s];
      const std::string where = absl::StrCat("segments[", s, "]");
      if (t_.Kind(seg) != ValueKind::kDict) return SnapshotSchemaError(source_, where, "is not a dict");
      int64_t dev = 0;
      Int(seg, "device", &dev);
      if (dev != device) continue;
      RecordedSegment r;
      SWAPPLAN_RETURN_IF_ERROR(Address(seg, "address", where, &r.address));
      SWAPPLAN_RETURN_IF_ERROR(Bytes(seg, "total_size", where, &r.bytes));
      SWAPPLAN_RETURN_IF_ERROR(AddTotal(r.bytes, where));
      r.stream = Stream(seg);
      const uint32_t type = t_.Lookup(seg, "segment_type");
      r.large = t_.Kind(type) == ValueKind::kString ? t_.Str(type) != "small"
                                                     : r.bytes != kSmallBuffer;
      const uint32_t exp = t_.Lookup(seg, "is_expandable");
      r.expandable = t_.Kind(exp) == ValueKind::kBool && t_.Get(exp).flag;
      const uint32_t pool = t_.Lookup(seg, "segment_pool_id");
      if (t_.IsSequence(pool)) {
        for (uint32_t id : t_.Items(pool)) {
          int64_t v = 0;
          if (t_.AsInt(id, &v) && v != 0) r.private_pool = true;
        }
      }
      const uint32_t blocks = t_.Lookup(seg, "blocks");
      if (blocks != kNoValue) {
        if (!t_.IsSequence(blocks)) return SnapshotSchemaError(source_, where, "'blocks' is not a list");
        int64_t at = r.address;
        const std::vector<uint32_t>& bl = t_.Items(blocks);
        for (size_t b = 0; b < bl.size(); ++b) {
          const uint32_t blk = bl[b];
          const std::string bwhere = absl::StrCat(where, ".blocks[", b, "]");
          if (t_.Kind(blk) != ValueKind::kDict) return SnapshotSchemaError(source_, bwhere, "is not a dict");
          RecordedBlock rb;
          SWAPPLAN_RETURN_IF_ERROR(Bytes(blk, "size", bwhere, &rb.bytes));
          // Snapshots before torch 2.1 list blocks without addresses: in order.
          if (t_.Lookup(blk, "address") == kNoValue) {
            rb.address = at;
          } else {
            SWAPPLAN_RETURN_IF_ERROR(Address(blk, "address", bwhere, &rb.address));
          }
          if (!Int(blk, "requested_size", &rb.requested_bytes) || rb.requested_bytes < 0 ||
              rb.requested_bytes > rb.bytes) {
            rb.requested_bytes = rb.bytes;
          }
          const uint32_t st = t_.Lookup(blk, "state");
          const absl::string_view state = t_.Kind(st) == ValueKind::kString ? t_.Str(st) : "";
          rb.allocated = state == "active_allocated" || state == "active_pending_free";
          at = std::min(rb.address + rb.bytes, kMaxAddress);
          r.blocks.push_back(rb);
        }
      }
      out_.segments.push_back(std::move(r));
    }
    return absl::OkStatus();
  }

  void Settings(uint32_t s) {
    if (t_.Kind(s) != ValueKind::kDict) return;
    out_.has_settings = true;
    AllocatorOptions& o = out_.settings;
    int64_t max_split = -1;
    if (Int(s, "max_split_size", &max_split) && max_split > 0 &&
        max_split != std::numeric_limits<int64_t>::max()) {
      if (max_split > kLargeBuffer) {
        o.max_split_size_bytes = max_split;
      } else {
        out_.unmodelled_settings.push_back(absl::StrCat(
            "max-split-size: ", max_split, " B (the model takes more than 20 MiB only)"));
      }
    }
    const uint32_t exp = t_.Lookup(s, "expandable_segments");
    o.expandable_segments = t_.Kind(exp) == ValueKind::kBool && t_.Get(exp).flag;
    double gc = 0;
    if (t_.AsDouble(t_.Lookup(s, "garbage_collection_threshold"), &gc) && gc > 0) {
      out_.unmodelled_settings.push_back(absl::StrCat(
          "garbage-collection: threshold ", gc, " (the model never frees cached blocks early)"));
    }
    // roundup_power2_divisions: an int, a list, or a dict per size range.
    const uint32_t rd = t_.Lookup(s, "roundup_power2_divisions");
    std::vector<int64_t> values;
    int64_t one = 0;
    if (t_.AsInt(rd, &one)) {
      values.push_back(one);
    } else if (t_.IsContainer(rd)) {
      const std::vector<uint32_t>& items = t_.Items(rd);
      const bool dict = t_.Kind(rd) == ValueKind::kDict;
      for (size_t i = dict ? 1 : 0; i < items.size(); i += dict ? 2 : 1) {
        if (t_.AsInt(items[i], &one)) values.push_back(one);
      }
    }
    if (values.empty()) return;
    bool same = true;
    for (int64_t v : values) same = same && v == values.front();
    const int64_t v = values.front();
    if (!same) {
      out_.unmodelled_settings.push_back(
          "per-size-roundup: roundup_power2_divisions differs by size (the model has one value)");
    } else if (v <= 1) {
      o.roundup_power2_divisions = 0;
    } else if (v <= 64 && std::has_single_bit(static_cast<uint64_t>(v))) {
      o.roundup_power2_divisions = static_cast<int32_t>(v);
    } else {
      out_.unmodelled_settings.push_back(absl::StrCat(
          "per-size-roundup: roundup_power2_divisions ", v, " (the model takes powers of two to 64)"));
    }
  }

  const ValueTree& t_;
  const std::string& source_;
  AllocatorRecording out_;
  absl::flat_hash_map<int64_t, int32_t> streams_;
  int64_t total_ = 0;
};

import_internal::ContentProbe SnapshotProbe() {
  return [](absl::string_view head, bool all) {
    return import_internal::DetectContent(head, all).format == kFormatSnapshot;
  };
}

absl::StatusOr<AllocatorRecording> ReadRecording(ImportInput& in, const ImportOptions& options) {
  const import_internal::ContentGuess g = import_internal::DetectContent(in.head(), in.head_is_all());
  if (g.format != kFormatSnapshot) {
    return absl::InvalidArgumentError(absl::StrCat(
        in.source(), ": not a torch.cuda.memory._snapshot() (",
        g.format.empty() ? g.evidence : absl::StrCat("a ", g.format, " trace"), ") [unknown-format]"));
  }
  ValueTree tree;
  uint32_t root = kNoValue;
  bool pickle = false;
  SWAPPLAN_RETURN_IF_ERROR(import_internal::ReadSnapshotTree(in, options, &tree, &root, &pickle));
  return RecordingReader(tree, in.source()).Run(root);
}

}  // namespace

absl::StatusOr<AllocatorRecording> ReadAllocatorRecording(const std::string& path,
                                                          const ImportOptions& options) {
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<ImportInput> in,
                            ImportInput::OpenFile(path, options, SnapshotProbe()));
  return ReadRecording(*in, options);
}

absl::StatusOr<AllocatorRecording> AllocatorRecordingFromMemory(absl::string_view bytes,
                                                                const std::string& source,
                                                                const ImportOptions& options) {
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<ImportInput> in,
                            ImportInput::OpenMemory(bytes, source, options, SnapshotProbe()));
  return ReadRecording(*in, options);
}

}  // namespace swapplan
