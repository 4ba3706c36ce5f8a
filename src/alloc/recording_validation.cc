// ValidateAgainstRecording (alloc/recording_validation.h): seed the model
// with the state before the ring, replay the ring, compare.
#include "swapplan/alloc/recording_validation.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace swapplan {
namespace {

using Kind = RecordedAllocEvent::Kind;

struct InitialSegment {
  int64_t bytes = 0;
  int32_t stream = 0;
  bool large = true;
  bool expandable = false;
  std::vector<SeedBlock> blocks;
  std::vector<int64_t> block_addresses;
};

struct PreRingBlock {
  int64_t address = 0;
  int64_t bytes = 0;  // 0: infer from the request
  int64_t requested_bytes = 0;
};

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t n = sorted.size();
  size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(n)));
  rank = std::clamp<size_t>(rank, 1, n);
  return sorted[rank - 1];
}

// Whether the model would split a block of `block` bytes for `size` (the
// caching model's ShouldSplit, for a block size that must be inferred).
bool WouldSplit(bool large, int64_t block, int64_t size, const AllocatorOptions& o) {
  const int64_t remaining = block - size;
  if (!large) return remaining >= kMinBlockSize;
  return size < o.max_split_size_bytes && remaining > kSmallSize;
}

class Validator {
 public:
  Validator(const AllocatorRecording& r, const ValidationOptions& o) : rec_(r), opt_(o) {}

  absl::StatusOr<ValidationReport> Run() {
    AllocatorOptions a = opt_.allocator;
    a.capacity_bytes = std::numeric_limits<int64_t>::max();
    if (opt_.use_recorded_settings && rec_.has_settings) {
      a.max_split_size_bytes = rec_.settings.max_split_size_bytes;
      a.roundup_power2_divisions = rec_.settings.roundup_power2_divisions;
      a.expandable_segments = rec_.settings.expandable_segments;
    }
    if (absl::Status s = a.Validate(); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(rec_.source, ": the recorded allocator settings: ", s.message()));
    }
    out_.allocator = a;
    out_.events = static_cast<int64_t>(rec_.events.size());
    model_ = MakeAllocatorModel(a);
    for (const std::string& s : rec_.unmodelled_settings) out_.missing_rules.push_back(s);
    NoteUnmodelledEvents();
    Seed();
    Replay();
    CompareSegments();
    Finish();
    return std::move(out_);
  }

 private:
  void NoteUnmodelledEvents() {
    std::map<std::string, int64_t> other;
    for (const RecordedAllocEvent& e : rec_.events) {
      if (e.kind == Kind::kOther) ++other[e.action];
    }
    for (const auto& [action, n] : other) {
      out_.missing_rules.push_back(
          absl::StrCat("event-kind: ", n, " '", action, "' events (no rule in the model)"));
    }
    int32_t private_pools = 0;
    for (const RecordedSegment& s : rec_.segments) private_pools += s.private_pool ? 1 : 0;
    if (private_pools > 0) {
      out_.missing_rules.push_back(absl::StrCat(
          "private-pool: ", private_pools,
          " segments belong to CUDA graph private pools (replayed as the default pool)"));
    }
  }

  // The segments and blocks of the moment before the ring's first entry.
  void Seed() {
    std::map<int64_t, InitialSegment> segs;
    for (const RecordedSegment& s : rec_.segments) {
      segs[s.address] = {s.bytes, s.stream, s.large, s.expandable, {}, {}};
    }
    for (auto it = rec_.events.rbegin(); it != rec_.events.rend(); ++it) {
      if (it->kind == Kind::kSegmentAlloc) {
        segs.erase(it->address);
      } else if (it->kind == Kind::kSegmentFree) {
        segs[it->address] = {it->bytes, it->stream, it->bytes != kSmallBuffer, false, {}, {}};
      }
    }
    // Blocks allocated before the ring: freed by it without an alloc, or
    // allocated at the end without one.
    std::vector<PreRingBlock> pre;
    absl::flat_hash_map<int64_t, bool> live;  // address -> allocated in the ring
    for (const RecordedAllocEvent& e : rec_.events) {
      if (e.kind == Kind::kAlloc && e.bytes > 0) {
        live[e.address] = true;
      } else if (e.kind == Kind::kFreeCompleted && e.bytes > 0) {
        if (!live.contains(e.address)) pre.push_back({e.address, 0, e.bytes});
        live.erase(e.address);
      }
    }
    for (const RecordedSegment& s : rec_.segments) {
      for (const RecordedBlock& b : s.blocks) {
        if (b.allocated && !live.contains(b.address)) {
          pre.push_back({b.address, b.bytes, b.requested_bytes});
        }
      }
    }
    std::sort(pre.begin(), pre.end(),
              [](const PreRingBlock& x, const PreRingBlock& y) { return x.address < y.address; });
    int32_t orphans = 0;
    for (size_t i = 0; i < pre.size(); ++i) {
      const PreRingBlock& b = pre[i];
      auto s = segs.upper_bound(b.address);
      if (s == segs.begin() || b.address >= std::prev(s)->first + std::prev(s)->second.bytes) {
        ++orphans;
        continue;
      }
      --s;
      InitialSegment& seg = s->second;
      const int64_t offset = b.address - s->first;
      int64_t bytes = b.bytes;
      if (bytes == 0) {
        // Inferred: the rounded request, or the whole gap to the next block
        // (or the segment's end) when the model would not split it.
        ++out_.inferred_blocks;
        const int64_t next =
            i + 1 < pre.size() && pre[i + 1].address < s->first + seg.bytes
                ? pre[i + 1].address - s->first
                : seg.bytes;
        bytes = CachingRoundSize(b.requested_bytes, out_.allocator.roundup_power2_divisions);
        if (next - offset < bytes ||
            !WouldSplit(seg.large, next - offset, bytes, out_.allocator)) {
          bytes = next - offset;
        }
      }
      seg.blocks.push_back({offset, bytes, std::min(b.requested_bytes, bytes)});
      seg.block_addresses.push_back(b.address);
    }
    if (orphans > 0) {
      out_.missing_rules.push_back(absl::StrCat(
          "seed: ", orphans, " blocks allocated before the ring lie in no segment reserved then"));
    }
    int32_t mismatched = 0;
    for (auto& [address, seg] : segs) {
      if (seg.expandable != out_.allocator.expandable_segments) {
        ++mismatched;
        continue;
      }
      model_->PlaceNextSegmentAt(address);
      absl::StatusOr<std::vector<AllocBlockId>> ids =
          model_->AddSegment(seg.bytes, seg.stream, seg.large, seg.blocks);
      if (!ids.ok()) {
        out_.missing_rules.push_back(absl::StrCat("seed: the segment at 0x", absl::Hex(address),
                                                  ": ", ids.status().message()));
        model_->PlaceNextSegmentAt(address);
        ids = model_->AddSegment(seg.bytes, seg.stream, seg.large, {});
        if (!ids.ok()) continue;
      } else {
        for (size_t k = 0; k < ids->size(); ++k) live_[seg.block_addresses[k]] = (*ids)[k];
        out_.initial_blocks += static_cast<int32_t>(ids->size());
      }
      out_.initial_reserved_bytes += seg.bytes;
      ++out_.initial_segments;
    }
    if (mismatched > 0) {
      out_.missing_rules.push_back(absl::StrCat(
          "expandable-segments: ", mismatched, " segments reserved before the ring are ",
          out_.allocator.expandable_segments ? "not " : "",
          "expandable while the model runs with expandable_segments:",
          out_.allocator.expandable_segments ? "True" : "False", "; they are not seeded"));
    }
  }

  void Compare(int64_t event, int64_t recorded) {
    const int64_t model = model_->stats().reserved_bytes;
    const int64_t diff = std::llabs(model - recorded);
    const double err = static_cast<double>(diff) / static_cast<double>(std::max<int64_t>(recorded, 1));
    errors_.push_back(err);
    if (err > out_.error_max_fraction || out_.error_max_event < 0) {
      out_.error_max_fraction = err;
      out_.error_max_bytes = diff;
      out_.error_max_event = event;
    }
    out_.recorded_peak_reserved_bytes = std::max(out_.recorded_peak_reserved_bytes, recorded);
    out_.model_peak_reserved_bytes = std::max(out_.model_peak_reserved_bytes, model);
    ++out_.compared_events;
  }

  void Diverge(std::string note) {
    ++out_.divergences;
    if (static_cast<int32_t>(out_.divergence_notes.size()) < opt_.max_divergences) {
      out_.divergence_notes.push_back(std::move(note));
    }
  }

  void Replay() {
    // The recorded reserved bytes before the ring: the segments at the end
    // less what the ring reserved (seeded or not).
    int64_t growth = 0;
    for (const RecordedAllocEvent& e : rec_.events) {
      if (e.kind == Kind::kSegmentAlloc || e.kind == Kind::kSegmentMap) growth += e.bytes;
      if (e.kind == Kind::kSegmentFree || e.kind == Kind::kSegmentUnmap) growth -= e.bytes;
    }
    int64_t final_bytes = 0;
    for (const RecordedSegment& s : rec_.segments) final_bytes += s.bytes;
    int64_t recorded = final_bytes - growth;
    int32_t pending_count = 0;
    int64_t pending_bytes = 0;
    bool in_release = false;
    int64_t released_recorded = 0, released_model = 0;
    int32_t partial = 0, unknown_free = 0;
    auto end_release = [&] {
      if (in_release && released_recorded < released_model) ++partial;
      in_release = false;
    };
    for (size_t k = 0; k < rec_.events.size(); ++k) {
      const RecordedAllocEvent& e = rec_.events[k];
      const int64_t event = static_cast<int64_t>(k);
      switch (e.kind) {
        case Kind::kSegmentAlloc:
        case Kind::kSegmentMap:
          end_release();
          recorded += e.bytes;
          // The segment the next allocation opens starts where the
          // recording's did (best-fit ties are broken by address).
          if (pending_count++ == 0) model_->PlaceNextSegmentAt(e.address);
          pending_bytes += e.bytes;
          break;
        case Kind::kSegmentFree:
        case Kind::kSegmentUnmap:
          recorded -= e.bytes;
          if (!in_release) {
            const int64_t before = model_->stats().reserved_bytes;
            model_->EmptyCache();
            released_model = before - model_->stats().reserved_bytes;
            released_recorded = 0;
            ++out_.releases_replayed;
            in_release = true;
          }
          released_recorded += e.bytes;
          break;
        case Kind::kAlloc: {
          end_release();
          if (e.bytes <= 0) break;  // PyTorch hands out no block for 0 bytes
          const int64_t before = model_->stats().reserved_bytes;
          const int32_t segs_before = model_->stats().segments;
          const MallocResult r = model_->Malloc(std::min(e.bytes, kMaxAllocatorRequestBytes),
                                                std::max(e.stream, 0));
          model_->PlaceNextSegmentAt(-1);
          const int32_t opened = model_->stats().segments - segs_before;
          const int64_t opened_bytes = model_->stats().reserved_bytes - before;
          out_.recorded_segment_allocs += pending_count;
          out_.model_segment_allocs += std::max(opened, 0);
          if (pending_count > 0 || opened_bytes > 0) {
            const std::string what = absl::StrCat("event ", k, ": alloc of ", e.bytes,
                                                  " B (stream ", e.stream, "): ");
            if (pending_count > 0 && opened_bytes == pending_bytes) {
              ++out_.matched_segment_allocs;
            } else if (opened_bytes <= 0) {
              Diverge(absl::StrCat(what, "the recording opened ", pending_bytes,
                                   " B of segments, the model reused a cached block"));
            } else if (pending_count == 0) {
              Diverge(absl::StrCat(what, "the model opened ", opened_bytes,
                                   " B of segments, the recording reused a cached block"));
            } else {
              Diverge(absl::StrCat(what, "the recording opened ", pending_bytes,
                                   " B of segments, the model ", opened_bytes, " B"));
            }
          }
          pending_count = 0;
          pending_bytes = 0;
          auto old = live_.find(e.address);
          if (old != live_.end()) model_->Free(old->second);  // never freed in the ring
          live_[e.address] = r.block;
          Compare(event, recorded);
          break;
        }
        case Kind::kFreeCompleted: {
          end_release();
          auto it = live_.find(e.address);
          if (it == live_.end()) {
            if (e.bytes > 0) ++unknown_free;
            break;
          }
          model_->Free(it->second);
          live_.erase(it);
          Compare(event, recorded);
          break;
        }
        case Kind::kOom:
          ++out_.recorded_ooms;
          break;
        case Kind::kFreeRequested:
        case Kind::kSnapshot:
        case Kind::kOther:
          break;
      }
    }
    end_release();
    out_.recorded_final_reserved_bytes = recorded;
    out_.model_final_reserved_bytes = model_->stats().reserved_bytes;
    if (unknown_free > 0) {
      out_.missing_rules.push_back(absl::StrCat(
          "unknown-free: ", unknown_free,
          " frees of blocks neither the ring nor the segments account for"));
    }
    if (partial > 0) {
      out_.missing_rules.push_back(absl::StrCat(
          "partial-release: ", partial,
          " segment releases freed less than the model's empty_cache (release of oversize "
          "blocks only, or segments the model still caches)"));
    }
  }

  void CompareSegments() {
    const std::vector<AllocSegmentInfo> model = model_->Segments();
    out_.recorded_segments = static_cast<int32_t>(rec_.segments.size());
    out_.model_segments = static_cast<int32_t>(model.size());
    std::multiset<std::tuple<int32_t, bool, int64_t>> model_keys;
    absl::flat_hash_map<int64_t, const AllocSegmentInfo*> by_address;
    for (const AllocSegmentInfo& s : model) {
      model_keys.insert({s.stream, s.large, s.bytes});
      by_address[s.address] = &s;
    }
    for (const RecordedSegment& s : rec_.segments) {
      auto k = model_keys.find({s.stream, s.large, s.bytes});
      if (k == model_keys.end()) continue;
      model_keys.erase(k);
      ++out_.matching_segments;
      // The model's segment at the recorded address (it was seeded or
      // opened there).
      auto seg = by_address.find(s.address);
      if (seg == by_address.end() || seg->second->bytes != s.bytes) continue;
      const std::vector<AllocBlockInfo>& mb = seg->second->blocks;
      bool same = mb.size() == s.blocks.size();
      for (size_t b = 0; same && b < mb.size(); ++b) {
        same = mb[b].bytes == s.blocks[b].bytes && mb[b].allocated == s.blocks[b].allocated;
      }
      out_.matching_layouts += same ? 1 : 0;
    }
  }

  void Finish() {
    std::sort(errors_.begin(), errors_.end());
    out_.error_p50_fraction = Percentile(errors_, 0.50);
    out_.error_p90_fraction = Percentile(errors_, 0.90);
    out_.error_p99_fraction = Percentile(errors_, 0.99);
    const int64_t rp = out_.recorded_peak_reserved_bytes;
    out_.peak_error_fraction =
        static_cast<double>(std::llabs(out_.model_peak_reserved_bytes - rp)) /
        static_cast<double>(std::max<int64_t>(rp, 1));
    out_.within_tolerance = out_.compared_events > 0 &&
                            out_.peak_error_fraction <= opt_.tolerance_fraction &&
                            out_.error_p99_fraction <= opt_.tolerance_fraction;
  }

  const AllocatorRecording& rec_;
  const ValidationOptions& opt_;
  ValidationReport out_;
  std::unique_ptr<AllocatorModel> model_;
  // Recorded block address -> model block.
  absl::flat_hash_map<int64_t, AllocBlockId> live_;
  std::vector<double> errors_;
};

}  // namespace

absl::Status ValidationOptions::Validate() const {
  if (allocator.kind != AllocatorKind::kCudaCaching) {
    return absl::InvalidArgumentError(
        absl::StrCat("validation options: allocator is ", AllocatorKindName(allocator.kind),
                     "; a recording of torch.cuda.memory validates the cuda-caching model only"));
  }
  if (absl::Status s = allocator.Validate(); !s.ok()) return s;
  if (!(tolerance_fraction >= 0 && tolerance_fraction <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("validation options: tolerance_fraction is ",
                                                   tolerance_fraction, "; must be in [0, 1]"));
  }
  if (max_divergences < 0) {
    return absl::InvalidArgumentError(absl::StrCat("validation options: max_divergences is ",
                                                   max_divergences, "; must be >= 0"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ValidationReport> ValidateAgainstRecording(const AllocatorRecording& recording,
                                                          const ValidationOptions& options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  if (recording.events.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        recording.source, ": the snapshot has no allocation trace (device_traces) to replay; "
                          "record it with torch.cuda.memory._record_memory_history()"));
  }
  return Validator(recording, options).Run();
}

}  // namespace swapplan
