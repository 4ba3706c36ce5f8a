// libFuzzer target: one importer (import/import.h), through the in-memory
// entry point with the format forced, so every input reaches that reader
// (gzip and tar wrappers included). fuzz/meson.build compiles this file once
// per format, naming it in SWAPPLAN_FUZZ_IMPORT_FORMAT (import_et_json:
// kFormatEtJson, import_chakra_et: kFormatChakraEt, import_kineto:
// kFormatKineto, import_snapshot: kFormatSnapshot (pickle or JSON, the safe
// unpickler), import_timeline: kFormatTimeline); seeds in
// fuzz/corpus/import_<format>/.
//
// Any input must give a trace with at least one iteration, or an error that
// keeps the readers' contract (fuzz_util.h: one line, naming the input,
// exit status 2); a crash, a sanitizer report or a hang is a finding too.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "swapplan/import/import.h"

#ifndef SWAPPLAN_FUZZ_IMPORT_FORMAT
#error "fuzz/meson.build defines SWAPPLAN_FUZZ_IMPORT_FORMAT (an import.h kFormat constant)"
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const swapplan::ImportOptions options = [] {
    swapplan::ImportOptions o;
    o.format = std::string(swapplan::SWAPPLAN_FUZZ_IMPORT_FORMAT);
    o.max_decompressed_bytes = int64_t{64} << 20;  // keep each run small
    return o;
  }();
  absl::StatusOr<swapplan::Trace> t =
      swapplan::ImportFromMemory(swapplan::fuzz::AsText(data, size), "fuzz", options);
  swapplan::fuzz::CheckOneLineError(t.status(), "fuzz");
  if (t.ok() && t->num_iterations() < 1) swapplan::fuzz::Finding("accepted a trace without iterations");
  return 0;
}
