// Helpers shared by the libFuzzer targets (fuzz/*_fuzz.cc): the contract
// every reader must keep on arbitrary bytes, checked after each call.
//
//   extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
//     absl::StatusOr<Trace> t = ParseTraceJson(AsText(data, size), "fuzz.json");
//     CheckOneLineError(t.status(), "fuzz.json");
//     return 0;
//   }
//
// A broken contract calls std::abort(), which libFuzzer reports as a crash
// and saves the input under the artifact prefix.
#ifndef SWAPPLAN_FUZZ_FUZZ_UTIL_H_
#define SWAPPLAN_FUZZ_FUZZ_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "swapplan/util/error.h"

namespace swapplan::fuzz {

inline absl::string_view AsText(const uint8_t* data, size_t size) {
  return absl::string_view(reinterpret_cast<const char*>(data), size);
}

// Aborts with `why` on stderr (a fuzzer finding).
[[noreturn]] inline void Finding(const std::string& why) {
  std::fprintf(stderr, "contract broken: %s\n", why.c_str());
  std::abort();
}

// An error from reading untrusted input must be an input error (exit 2, never
// "internal"), on one line, naming `source` first.
inline void CheckOneLineError(const absl::Status& status, absl::string_view source) {
  if (status.ok()) return;
  const std::string m(status.message());
  if (m.find('\n') != std::string::npos) Finding("multi-line message: " + m);
  if (m.rfind(std::string(source), 0) != 0) Finding("message does not name the input: " + m);
  if (ExitCode(status) != 2) {
    Finding("exit status " + std::to_string(ExitCode(status)) + " for malformed input: " + m);
  }
}

}  // namespace swapplan::fuzz

#endif  // SWAPPLAN_FUZZ_FUZZ_UTIL_H_
