// libFuzzer target: the binary policy reader.
#include <cstddef>
#include <cstdint>

#include "fuzz_util.h"
#include "swapplan/policy/policy_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace swapplan;
  absl::StatusOr<Policy> p = ParsePolicyBinary(fuzz::AsText(data, size), "fuzz.policy");
  fuzz::CheckOneLineError(p.status(), "fuzz.policy");
  return 0;
}
