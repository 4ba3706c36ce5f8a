// Validation of the caching-allocator model against a recording: the
// allocation trace of torch.cuda.memory._record_memory_history() and the
// segments of _snapshot() (read by import/alloc_recording.h), fed through
// the model (allocator_model.h) event by event and compared.
//
//   recorded   alloc 4 MB  free  alloc 30 MB ...   segment_alloc / _free
//   model      Malloc      Free  Malloc      ...   its own segments
//   compared   reserved bytes after every alloc and free_completed (the
//              recorded figure is rebuilt from the segments at the end and
//              the segment events of the ring), each segment the recording
//              opened vs the one the model opened for the same allocation,
//              and the segments at the end (pool, stream, size, blocks).
//
// A recording that starts after the first allocation (the ring was turned
// on late, or it wrapped) begins with segments already reserved: the model
// is seeded with them (AllocatorModel::AddSegment) and the blocks allocated
// in them before the ring — the blocks still allocated at the end that the
// ring did not allocate (their sizes from `segments`), and the blocks the
// ring frees without having allocated them (their sizes rounded from the
// request: ValidationReport::inferred_blocks). Segment releases (segment_free,
// from empty_cache() or an allocation retried after releasing the cache) are
// replayed where the recording has them: the model releases its cached
// segments there (EmptyCache). Segments are placed at the recorded device
// addresses (AllocatorModel::PlaceNextSegmentAt): best fit breaks ties
// between equal free blocks by address, and cudaMalloc's addresses do not
// follow creation order. The model runs with unlimited capacity: it
// validates placement and segment rules, not the device's size.
//
// Where the model cannot follow, the report names the rule it lacks
// (`missing_rules`, "tag: detail"): event-kind (an action the model has no
// rule for), private-pool (CUDA graph pools), expandable-segments (a seeded
// segment whose is_expandable differs from the recorded setting), per-size-roundup (roundup_power2_divisions
// that differ by size), garbage-collection, unknown-free (a free of a block
// neither the ring nor the segments account for), seed (a recorded block
// that does not fit its segment), partial-release (the recording released
// fewer segments than the model's empty_cache would).
//
//   SWAPPLAN_ASSIGN_OR_RETURN(AllocatorRecording r, ReadAllocatorRecording(path));
//   SWAPPLAN_ASSIGN_OR_RETURN(ValidationReport v, ValidateAgainstRecording(r, {}));
//   v.error_p99_fraction;  v.peak_error_fraction;  v.missing_rules;
//
// Complexity: O(E log B + S log S) time (E events, B blocks, S segments),
// O(E + B) memory.
#ifndef SWAPPLAN_ALLOC_RECORDING_VALIDATION_H_
#define SWAPPLAN_ALLOC_RECORDING_VALIDATION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "swapplan/alloc/allocator_model.h"

namespace swapplan {

// One entry of a device's allocation trace (device_traces[d][k]).
struct RecordedAllocEvent {
  enum class Kind : uint8_t {
    kAlloc,
    kFreeRequested,
    kFreeCompleted,
    kSegmentAlloc,
    kSegmentFree,
    kSegmentMap,
    kSegmentUnmap,
    kOom,
    kSnapshot,
    kOther,  // an action the model has no rule for (`action` names it)
  };
  Kind kind = Kind::kAlloc;
  int64_t address = 0;
  // alloc / free_*: the requested bytes; segment_*: the segment's (or the
  // mapped range's) bytes.
  int64_t bytes = 0;
  int32_t stream = 0;
  std::string action;  // kOther only
};

// A block of a segment at the end (segments[s].blocks[b]).
struct RecordedBlock {
  int64_t address = 0;
  int64_t bytes = 0;
  int64_t requested_bytes = 0;
  // active_allocated or active_pending_free (the program still holds it or
  // its free waits for a stream); false: inactive (free, cached).
  bool allocated = false;
};

// A segment at the end (segments[s]).
struct RecordedSegment {
  int64_t address = 0;
  int64_t bytes = 0;
  int32_t stream = 0;
  bool large = true;         // segment_type "large"
  bool expandable = false;   // is_expandable
  bool private_pool = false; // segment_pool_id other than (0, 0): a CUDA graph pool
  std::vector<RecordedBlock> blocks;  // by address
};

struct AllocatorRecording {
  std::string source;
  int32_t device = 0;
  // The device's trace ring, in order.
  std::vector<RecordedAllocEvent> events;
  // The device's segments at the end (when the snapshot was taken).
  std::vector<RecordedSegment> segments;
  // allocator_settings, when the snapshot has them: the caching fields of
  // `settings` are the recorded configuration.
  bool has_settings = false;
  AllocatorOptions settings;
  // Recorded settings the model does not have ("garbage-collection: 0.8",
  // "per-size-roundup: ..."): each becomes a missing rule.
  std::vector<std::string> unmodelled_settings;
};

struct ValidationOptions {
  // The model; kind must be kCudaCaching. capacity_bytes is ignored (the
  // replay is unlimited).
  AllocatorOptions allocator;
  // Use the recording's allocator_settings (when it has them) instead of
  // allocator's caching fields.
  bool use_recorded_settings = true;
  // Peak error and p99 per-event error at most this: within_tolerance.
  double tolerance_fraction = 0.03;
  // How many divergences (segments opened differently) to list.
  int32_t max_divergences = 10;

  // InvalidArgument naming the field: a model other than kCudaCaching,
  // allocator options that do not validate, tolerance not in [0, 1],
  // max_divergences < 0.
  absl::Status Validate() const;
};

struct ValidationReport {
  AllocatorOptions allocator;  // the model that ran
  int64_t events = 0;           // ring entries
  int64_t compared_events = 0;  // allocs and free_completed, compared after each
  // The state before the ring (seeded): reserved bytes, segments, blocks
  // allocated in them, of which sizes inferred from requests.
  int64_t initial_reserved_bytes = 0;
  int32_t initial_segments = 0;
  int32_t initial_blocks = 0;
  int32_t inferred_blocks = 0;
  // |model - recorded| / recorded reserved bytes after each compared event:
  // nearest-rank percentiles and the maximum (with its bytes and event).
  double error_p50_fraction = 0;
  double error_p90_fraction = 0;
  double error_p99_fraction = 0;
  double error_max_fraction = 0;
  int64_t error_max_bytes = 0;
  int64_t error_max_event = -1;
  // Reserved peaks over the compared events, and the end.
  int64_t recorded_peak_reserved_bytes = 0;
  int64_t model_peak_reserved_bytes = 0;
  double peak_error_fraction = 0;
  int64_t recorded_final_reserved_bytes = 0;
  int64_t model_final_reserved_bytes = 0;
  // Segments opened during the ring: by the recording, by the model, and
  // allocations where both opened one of the same size (or neither did:
  // not counted).
  int32_t recorded_segment_allocs = 0;
  int32_t model_segment_allocs = 0;
  int32_t matched_segment_allocs = 0;
  // Allocations where the two differ; the first max_divergences described.
  int32_t divergences = 0;
  std::vector<std::string> divergence_notes;
  // Segment releases the recording has (runs of segment_free) replayed as
  // the model's EmptyCache, and the recording's OOM events.
  int32_t releases_replayed = 0;
  int32_t recorded_ooms = 0;
  // Segments at the end: counts, how many of the recorded ones the model
  // has with the same pool, stream and size (as multisets), and how many of
  // those it opened at the same event with the same blocks (sizes and
  // states, by address).
  int32_t recorded_segments = 0;
  int32_t model_segments = 0;
  int32_t matching_segments = 0;
  int32_t matching_layouts = 0;
  // "tag: detail", see the file comment; empty when the model has every
  // rule the recording needed.
  std::vector<std::string> missing_rules;
  // peak_error_fraction and error_p99_fraction within the tolerance.
  bool within_tolerance = false;
};

// Replays `recording` through the model of `options` and compares (above).
// InvalidArgument for invalid options or a recording without events.
absl::StatusOr<ValidationReport> ValidateAgainstRecording(const AllocatorRecording& recording,
                                                          const ValidationOptions& options = {});

}  // namespace swapplan

#endif  // SWAPPLAN_ALLOC_RECORDING_VALIDATION_H_
