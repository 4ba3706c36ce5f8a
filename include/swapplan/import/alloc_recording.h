// The allocator recording in a torch.cuda.memory._snapshot() (pickle or a
// JSON dump of the same dict, gzip allowed): one device's allocation trace
// (device_traces, what _record_memory_history() keeps), its segments and
// blocks at the end, and allocator_settings — the raw events and addresses
// that alloc/recording_validation.h replays through the allocator model.
// (ReadAnyTrace turns the same file into a Trace of ops and tensors; this
// keeps what that drops: addresses, segments, segment events, streams.)
//
//   SWAPPLAN_ASSIGN_OR_RETURN(AllocatorRecording r, ReadAllocatorRecording("snap.pickle"));
//   r.events.size();  r.segments.size();  r.settings.expandable_segments;
//
// The device: the ring with most entries, else the most common segment
// device. Streams are renumbered densely (stream 0 stays 0, others 1, 2, ...
// in order of first appearance, ring first). allocator_settings:
// max_split_size (bytes, -1 unset), expandable_segments,
// roundup_power2_divisions (one value, or a per-size dict whose values are
// all equal) set `settings`; a per-size dict with different values, a
// garbage_collection_threshold above 0 or a max_split_size the model
// refuses go to unmodelled_settings.
//
// Errors: InvalidArgument "<file>: device_traces[d][k]: ... [snapshot-schema]"
// (an entry without an action, an alloc or free without an address or
// size, a size above 1 PiB, an address outside [0, 2^62), reserved bytes
// adding up past 2^60), the unpickler's and JSON reader's errors, NotFound
// for a missing file. O(input) time and memory.
#ifndef SWAPPLAN_IMPORT_ALLOC_RECORDING_H_
#define SWAPPLAN_IMPORT_ALLOC_RECORDING_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "swapplan/alloc/recording_validation.h"
#include "swapplan/import/import.h"

namespace swapplan {

absl::StatusOr<AllocatorRecording> ReadAllocatorRecording(const std::string& path,
                                                          const ImportOptions& options = {});

// The same from memory (tests, fuzzing); `source` names it in messages.
absl::StatusOr<AllocatorRecording> AllocatorRecordingFromMemory(absl::string_view bytes,
                                                                const std::string& source,
                                                                const ImportOptions& options = {});

}  // namespace swapplan

#endif  // SWAPPLAN_IMPORT_ALLOC_RECORDING_H_
