// libFuzzer target: the binary trace reader (gzip or not, with a 64 MiB
// decompression limit so bombs stay cheap), then the checks of an accepted
// trace.
#include <cstddef>
#include <cstdint>

#include "fuzz_util.h"
#include "trace_checks.h"
#include "swapplan/trace/io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace swapplan;
  TraceReadOptions options;
  options.max_decompressed_bytes = int64_t{64} << 20;
  absl::StatusOr<Trace> t = ParseTraceBinary(fuzz::AsText(data, size), "fuzz.trace", options);
  fuzz::CheckOneLineError(t.status(), "fuzz.trace");
  if (t.ok()) fuzz::CheckAcceptedTrace(*t, "fuzz.trace");
  return 0;
}
