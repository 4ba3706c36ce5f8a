// libFuzzer target: the JSON policy reader (round 2 of issue 19 rewrites it;
// findings go to tests/data/fuzz_findings/ for that round).
#include <cstddef>
#include <cstdint>

#include "fuzz_util.h"
#include "swapplan/policy/policy_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace swapplan;
  absl::StatusOr<Policy> p = ParsePolicyJson(fuzz::AsText(data, size), "fuzz.policy.json");
  fuzz::CheckOneLineError(p.status(), "fuzz.policy.json");
  return 0;
}
