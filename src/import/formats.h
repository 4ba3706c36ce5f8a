// The importers behind the registry (registry.cc), one entry point per
// format, each reading an ImportInput from its first content byte, plus the
// content detection the registry and the tar-member probe use.
//
//   ContentGuess g = DetectContent(in->head(), in->head_is_all());
//   if (g.format == kFormatKineto) return ImportKineto(*in, options);
#ifndef SWAPPLAN_SRC_IMPORT_FORMATS_H_
#define SWAPPLAN_SRC_IMPORT_FORMATS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "import/et_capture.h"
#include "import/input.h"
#include "swapplan/import/import.h"
#include "swapplan/trace/trace.h"

namespace swapplan::import_internal {

struct ContentGuess {
  std::string format;    // "" when unknown
  std::string evidence;  // what was seen, for messages
};

// Detects the format of content starting with `head` (`all`: head is the
// whole content). Never fails; O(head).
ContentGuess DetectContent(absl::string_view head, bool all);

absl::StatusOr<Trace> ImportSwapplan(ImportInput& in, const ImportOptions& options);
absl::StatusOr<Trace> ImportEtJson(ImportInput& in, const ImportOptions& options);
absl::StatusOr<Trace> ImportChakraEt(ImportInput& in, const ImportOptions& options);
absl::StatusOr<Trace> ImportKineto(ImportInput& in, const ImportOptions& options);
absl::StatusOr<Trace> ImportSnapshot(ImportInput& in, const ImportOptions& options);
absl::StatusOr<Trace> ImportTimeline(ImportInput& in, const ImportOptions& options);

// Reads the Kineto trace at `path` for pairing with an execution trace.
absl::StatusOr<EtPairing> LoadKinetoPairing(const std::string& path, const ImportOptions& options);

}  // namespace swapplan::import_internal

#endif  // SWAPPLAN_SRC_IMPORT_FORMATS_H_
