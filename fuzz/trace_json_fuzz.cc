// libFuzzer target: the JSON trace reader, then the analyses every command
// runs on an accepted trace (memory curve, statistics, op times).
#include <cstddef>
#include <cstdint>

#include "fuzz_util.h"
#include "trace_checks.h"
#include "swapplan/trace/io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace swapplan;
  absl::StatusOr<Trace> t = ParseTraceJson(fuzz::AsText(data, size), "fuzz.json");
  fuzz::CheckOneLineError(t.status(), "fuzz.json");
  if (t.ok()) fuzz::CheckAcceptedTrace(*t, "fuzz.json");
  return 0;
}
