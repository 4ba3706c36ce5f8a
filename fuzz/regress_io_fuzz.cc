// libFuzzer target: the quality-baseline reader (swapplan regress
// --baseline FILE).
#include <cstddef>
#include <cstdint>

#include "fuzz_util.h"
#include "swapplan/eval/regress.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace swapplan;
  absl::StatusOr<QualityBaseline> b =
      ParseQualityBaseline(fuzz::AsText(data, size), "fuzz.quality.json");
  fuzz::CheckOneLineError(b.status(), "fuzz.quality.json");
  return 0;
}
