// torch.cuda.memory._snapshot() (pickle, read by the safe unpickler, or a
// JSON dump of the same dict) -> Trace. Rules in docs/importers.md,
// "Memory snapshots":
//   * one op per entry of the device's trace ring (alloc, free_requested,
//     free_completed, segment_alloc / segment_free / segment_map /
//     segment_unmap, oom), named after the action and the innermost user
//     frame; the entry's stack is the op's call site (stack_id);
//   * alloc -> a tensor, ALLOC and output of its op; free_requested -> an
//     input of its op (the program released it); free_completed -> FREE;
//   * blocks freed in the ring but allocated before it, and blocks active in
//     `segments` that the ring does not account for, are resident from the
//     start; blocks still allocated at the end stay resident to the end;
//   * without a ring (torch 1.13 snapshots are a list of segments, or
//     history was not recorded) each active block becomes one op that
//     allocates it: a picture of the moment of the snapshot.
#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "import/assembler.h"
#include "import/formats.h"
#include "import/snapshot_tree.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::import_internal {
namespace {

struct Site {
  int64_t stack_id = -1;
  std::string label;  // "file.py:12:forward"
  PhaseHint hint = PhaseHint::kNone;
};

class SnapshotConverter {
 public:
  SnapshotConverter(const ValueTree& t, const std::string& source, TraceAssembler* a)
      : t_(t), source_(source), a_(*a) {}

  absl::Status Run(uint32_t root) {
    SWAPPLAN_ASSIGN_OR_RETURN(SnapshotParts parts, FindSnapshotParts(t_, root, source_));
    const uint32_t segments = parts.segments;
    const int64_t device = parts.device;
    a_.SetAttribute("import.device", absl::StrCat("cuda:", device));
    const bool have_ring = parts.ring != kNoValue;
    if (have_ring) SWAPPLAN_RETURN_IF_ERROR(Ring(parts.ring, device));
    SWAPPLAN_RETURN_IF_ERROR(Segments(segments, device, have_ring));
    a_.SetAttribute("import.source", have_ring ? "device_traces ring, then segments"
                                               : "segments only (no allocation history)");
    return absl::OkStatus();
  }

 private:
  absl::Status Bad(absl::string_view where, absl::string_view what) {
    return SnapshotSchemaError(source_, where, what);
  }
  bool Int(uint32_t dict, absl::string_view key, int64_t* out) {
    return t_.AsInt(t_.Lookup(dict, key), out);
  }

  // The call site of a frames list (cached per list: memo-shared lists are
  // read once).
  const Site& SiteOf(uint32_t frames) {
    auto it = sites_.find(frames);
    if (it != sites_.end()) return it->second;
    Site s;
    std::string stack;
    bool backward = false, optimizer = false;
    absl::string_view first_user, first_any;
    if (t_.IsSequence(frames)) {
      int k = 0;
      for (uint32_t f : t_.Items(frames)) {
        if (t_.Kind(f) != ValueKind::kDict) continue;
        uint32_t fn = t_.Lookup(f, "filename"), nm = t_.Lookup(f, "name");
        absl::string_view file = t_.Kind(fn) == ValueKind::kString ? t_.Str(fn) : "";
        absl::string_view name = t_.Kind(nm) == ValueKind::kString ? t_.Str(nm) : "";
        int64_t line = 0;
        Int(f, "line", &line);
        std::string lower = absl::AsciiStrToLower(name);
        backward = backward || absl::StrContains(lower, "backward") ||
                   absl::StrContains(name, "autograd::Engine") ||
                   absl::StrContains(file, "torch/autograd/");
        optimizer = optimizer || absl::StrContains(file, "torch/optim/");
        size_t slash = file.rfind('/');
        absl::string_view base = slash == absl::string_view::npos ? file : file.substr(slash + 1);
        std::string label = absl::StrCat(base, ":", line, ":", name);
        if (k < 16) absl::StrAppend(&stack, k == 0 ? "" : ";", label);
        if (first_any.empty()) {
          labels_.push_back(label);
          first_any = labels_.back();
        }
        if (first_user.empty() && !absl::StrContains(file, "torch/") && !file.empty() &&
            !absl::EndsWith(file, ".cpp") && !absl::EndsWith(file, ".h")) {
          labels_.push_back(label);
          first_user = labels_.back();
        }
        ++k;
      }
    }
    s.label = std::string(!first_user.empty() ? first_user : first_any);
    s.hint = optimizer ? PhaseHint::kOptimizer : backward ? PhaseHint::kBackward : PhaseHint::kNone;
    if (!stack.empty()) {
      auto [st, inserted] = stacks_.try_emplace(stack, static_cast<int64_t>(stacks_.size()));
      s.stack_id = st->second;
    }
    return sites_.emplace(frames, std::move(s)).first->second;
  }

  int32_t Op(absl::string_view action, const Site& site) {
    // A new iteration at the first op after optimizer work that is not
    // optimizer work itself.
    if (site.hint == PhaseHint::kOptimizer) {
      in_optimizer_ = true;
    } else if (in_optimizer_) {
      in_optimizer_ = false;
      ++iteration_;
    }
    int32_t op = a_.AddOp(iteration_,
                          a_.Name(site.label.empty() ? std::string(action)
                                                     : absl::StrCat(action, " ", site.label)),
                          site.hint);
    if (site.stack_id >= 0) a_.SetStack(op, site.stack_id);
    return op;
  }

  uint64_t Resident(int64_t size, absl::string_view name) {
    uint64_t t = a_.AddTensor(size, DType::kUnknown, {}, name);
    a_.SetPersistent(t, true);
    return t;
  }

  absl::Status Ring(uint32_t ring, int64_t device) {
    const std::vector<uint32_t>& entries = t_.Items(ring);
    int64_t prev_time = -1;
    int32_t prev_op = -1;
    int64_t reserved = 0, reserved_peak = 0, ooms = 0;
    for (size_t k = 0; k < entries.size(); ++k) {
      const uint32_t e = entries[k];
      std::string where = absl::StrCat("device_traces[", device, "][", k, "]");
      if (t_.Kind(e) != ValueKind::kDict) return Bad(where, "is not a dict");
      uint32_t act = t_.Lookup(e, "action");
      if (t_.Kind(act) != ValueKind::kString) return Bad(where, "has no 'action' string");
      absl::string_view action = t_.Str(act);
      int64_t addr = 0, size = 0;
      Int(e, "addr", &addr);
      if (!Int(e, "size", &size) || size < 0) {
        if (action != "oom" && action != "snapshot") return Bad(where, "has no non-negative 'size'");
        size = std::max<int64_t>(size, 0);
      }
      if (action == "snapshot") continue;
      const Site& site = SiteOf(t_.Lookup(e, "frames"));
      int32_t op = -1;
      if (action == "alloc") {
        if (size == 0) continue;
        op = Op(action, site);
        uint64_t t = a_.AddTensor(size, DType::kUnknown, {}, "");
        auto old = live_.find(addr);
        if (old != live_.end()) {
          a_.AddEvent(op, MemoryEventKind::kFree, old->second);
          a_.Note("allocations_over_live_blocks");
        }
        live_[addr] = t;
        a_.AddEvent(op, MemoryEventKind::kAlloc, t);
        a_.AddUse(op, t, /*output=*/true);
      } else if (action == "free_requested" || action == "free_completed") {
        op = Op(action, site);
        auto it = live_.find(addr);
        uint64_t t = 0;
        if (it == live_.end()) {
          if (size == 0) continue;
          t = Resident(size, "allocated before the recorded history");  // freed, never allocated
          live_[addr] = t;
          it = live_.find(addr);
        } else {
          t = it->second;
        }
        a_.AddUse(op, t, /*output=*/false);
        if (action == "free_completed") {
          a_.AddEvent(op, MemoryEventKind::kFree, t);
          live_.erase(it);
        }
      } else if (action == "segment_alloc" || action == "segment_map") {
        op = Op(action, site);
        reserved = SatAdd(reserved, size);
        reserved_peak = std::max(reserved_peak, reserved);
      } else if (action == "segment_free" || action == "segment_unmap") {
        op = Op(action, site);
        reserved = SatSub(reserved, size);
      } else if (action == "oom") {
        op = Op(action, site);
        ++ooms;
      } else {
        a_.Note("unknown_ring_actions");
        continue;
      }
      int64_t time_us = -1;
      if (Int(e, "time_us", &time_us) && time_us >= 0) {
        if (prev_op >= 0 && prev_time >= 0 && time_us >= prev_time &&
            time_us - prev_time < INT64_MAX / 1000) {
          a_.SetDuration(prev_op, (time_us - prev_time) * 1000);
        }
        prev_time = time_us;
      }
      prev_op = op;
    }
    if (prev_op >= 0 && prev_time >= 0) a_.SetDuration(prev_op, 0);
    if (ooms > 0) a_.SetAttribute("import.oom_events", absl::StrCat(ooms));
    if (reserved_peak > 0) {
      a_.SetAttribute("import.reserved_growth_peak_bytes", absl::StrCat(reserved_peak));
    }
    return absl::OkStatus();
  }

  absl::Status Segments(uint32_t segments, int64_t device, bool have_ring) {
    int64_t allocated = 0;
    bool have_allocated = false;
    int32_t last_op = a_.num_ops() - 1;
    if (segments != kNoValue) {
      const std::vector<uint32_t>& segs = t_.Items(segments);
      for (size_t s = 0; s < segs.size(); ++s) {
        const uint32_t seg = segs[s];
        std::string where = absl::StrCat("segments[", s, "]");
        if (t_.Kind(seg) != ValueKind::kDict) return Bad(where, "is not a dict");
        int64_t dev = 0;
        Int(seg, "device", &dev);
        if (dev != device) continue;
        int64_t seg_alloc = 0;
        if (Int(seg, "allocated_size", &seg_alloc)) {
          have_allocated = true;
          allocated += seg_alloc;
        }
        uint32_t blocks = t_.Lookup(seg, "blocks");
        if (blocks == kNoValue) continue;
        if (!t_.IsSequence(blocks)) return Bad(where, "'blocks' is not a list");
        const std::vector<uint32_t>& bl = t_.Items(blocks);
        for (size_t b = 0; b < bl.size(); ++b) {
          const uint32_t blk = bl[b];
          std::string bwhere = absl::StrCat(where, ".blocks[", b, "]");
          if (t_.Kind(blk) != ValueKind::kDict) return Bad(bwhere, "is not a dict");
          uint32_t st = t_.Lookup(blk, "state");
          absl::string_view state = t_.Kind(st) == ValueKind::kString ? t_.Str(st) : "";
          if (state != "active_allocated" && state != "active_pending_free") continue;
          int64_t size = 0, addr = -1;
          if (!Int(blk, "size", &size) || size < 0) return Bad(bwhere, "has no non-negative 'size'");
          Int(blk, "address", &addr);
          if (size == 0 || (have_ring && live_.contains(addr))) continue;
          uint32_t frames = t_.Lookup(blk, "frames");
          uint32_t history = t_.Lookup(blk, "history");
          if (frames == kNoValue && t_.IsSequence(history) && !t_.Items(history).empty()) {
            frames = t_.Lookup(t_.Items(history).back(), "frames");
          }
          const Site& site = SiteOf(frames);
          if (have_ring) {
            Resident(size, site.label);  // allocated before the history, alive at the end
          } else {
            int32_t op = Op("alloc", site);
            uint64_t t = a_.AddTensor(size, DType::kUnknown, {}, site.label);
            a_.SetPersistent(t, true);
            a_.AddEvent(op, MemoryEventKind::kAlloc, t);
            a_.AddUse(op, t, /*output=*/true);
            last_op = op;
          }
        }
      }
    }
    // Still allocated at the end of the ring: resident to the end.
    for (const auto& [addr, t] : live_) a_.SetPersistent(t, true);
    if (have_allocated && last_op >= 0) {
      a_.SetAllocatorBytes(last_op, allocated);
      a_.SetAttribute("import.snapshot_allocated_bytes", absl::StrCat(allocated));
    }
    return absl::OkStatus();
  }

  const ValueTree& t_;
  const std::string& source_;
  TraceAssembler& a_;
  absl::flat_hash_map<uint32_t, Site> sites_;
  absl::flat_hash_map<std::string, int64_t> stacks_;
  std::vector<std::string> labels_;
  absl::flat_hash_map<int64_t, uint64_t> live_;
  int32_t iteration_ = 0;
  bool in_optimizer_ = false;
};

}  // namespace

absl::StatusOr<Trace> ImportSnapshot(ImportInput& in, const ImportOptions& options) {
  ValueTree tree;
  uint32_t root = kNoValue;
  bool pickle = false;
  SWAPPLAN_RETURN_IF_ERROR(ReadSnapshotTree(in, options, &tree, &root, &pickle));
  TraceAssembler a(in.source());
  SnapshotConverter conv(tree, in.source(), &a);
  SWAPPLAN_RETURN_IF_ERROR(conv.Run(root));
  a.metadata().framework = "PyTorch";
  a.metadata().recorder = "torch.cuda.memory";
  a.metadata().recorder_version = "_snapshot";
  a.SetAttribute("import.format", kFormatSnapshot);
  a.SetAttribute("import.encoding", pickle ? "pickle (safe unpickler)" : "JSON");
  return std::move(a).Finish();
}

}  // namespace swapplan::import_internal
