// libFuzzer target: the allocator recording reader (import/alloc_recording.h:
// the raw ring, segments and allocator_settings of a memory snapshot, pickle
// or JSON) and the validation that replays it through the caching-allocator
// model (alloc/recording_validation.h). Any input must give a recording or
// an error that keeps the readers' contract (fuzz_util.h); a recording must
// validate, or be refused the same way, and the report must be consistent:
// compared events <= events, p50 <= p90 <= p99 <= max error, matching
// layouts <= matching segments <= recorded segments, nothing negative.
#include <cstddef>
#include <cstdint>

#include "fuzz_util.h"
#include "swapplan/import/alloc_recording.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace swapplan;
  static const ImportOptions options = [] {
    ImportOptions o;
    o.max_decompressed_bytes = int64_t{64} << 20;  // keep each run small
    return o;
  }();
  absl::StatusOr<AllocatorRecording> r =
      AllocatorRecordingFromMemory(fuzz::AsText(data, size), "fuzz", options);
  fuzz::CheckOneLineError(r.status(), "fuzz");
  if (!r.ok()) return 0;
  absl::StatusOr<ValidationReport> v = ValidateAgainstRecording(*r);
  fuzz::CheckOneLineError(v.status(), "fuzz");
  if (!v.ok()) return 0;
  if (v->compared_events > v->events) fuzz::Finding("more events compared than recorded");
  if (!(v->error_p50_fraction <= v->error_p90_fraction &&
        v->error_p90_fraction <= v->error_p99_fraction &&
        v->error_p99_fraction <= v->error_max_fraction)) {
    fuzz::Finding("error percentiles out of order");
  }
  if (v->matching_layouts > v->matching_segments ||
      v->matching_segments > v->recorded_segments) {
    fuzz::Finding("more segments matched than recorded");
  }
  if (v->initial_reserved_bytes < 0 || v->model_peak_reserved_bytes < 0 ||
      v->error_max_bytes < 0 || v->inferred_blocks < 0) {
    fuzz::Finding("a negative figure");
  }
  return 0;
}
