// libFuzzer target: the PyTorch execution trace JSON importer, through the in-memory entry
// point with the format forced (so every input reaches that reader, gzip and
// tar wrappers included). Any input must give a trace or an error status;
// a crash, a sanitizer report or a hang is a finding. Seeds: fuzz/corpus/import_et_json/.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

#include "swapplan/import/import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const swapplan::ImportOptions options = [] {
    swapplan::ImportOptions o;
    o.format = std::string(swapplan::kFormatEtJson);
    o.max_decompressed_bytes = int64_t{64} << 20;  // keep each run small
    return o;
  }();
  absl::StatusOr<swapplan::Trace> t = swapplan::ImportFromMemory(
      absl::string_view(reinterpret_cast<const char*>(data), size), "fuzz", options);
  (void)t;
  return 0;
}
