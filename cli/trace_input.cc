#include "trace_input.h"

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "progress.h"
#include "swapplan/util/error.h"
#include "swapplan/util/units.h"

namespace swapplan::cli {

ImportOptions& GlobalImportOptions() {
  static ImportOptions options;
  return options;
}

namespace {
// The text of --max-decompressed-bytes (parsed by LoadTrace, so a bad value
// is a one-line usage error in the project's words, exit 2).
std::optional<std::string>& MaxDecompressedText() {
  static std::optional<std::string> text;
  return text;
}
}  // namespace

void AddTraceInputFlags(CLI::App& root) {
  std::vector<std::string> names;
  for (const FormatInfo& f : SupportedFormats()) names.push_back(f.name);
  root.fallthrough();
  root.add_option("--trace-format", GlobalImportOptions().format,
                  "Read traces as this format instead of detecting it: " +
                      absl::StrJoin(names, ", "))
      ->check(CLI::IsMember(names));
  root.add_option("--kineto", GlobalImportOptions().kineto_path,
                  "Kineto trace of the same run as an execution-trace input: op durations and "
                  "allocator figures from it")
      ->check(CLI::ExistingFile);
  static const std::map<std::string, ImportOptions::EtOps> kEtOps = {
      {"leaves", ImportOptions::EtOps::kLeaves}, {"dispatch", ImportOptions::EtOps::kDispatch}};
  root.add_option("--et-ops", GlobalImportOptions().et_ops,
                  "Which execution-trace nodes are ops: leaves (leaf operators and operators' own "
                  "work, default) or dispatch (the ops a TorchDispatchMode sees, as swapplan's "
                  "recorder and runtime do)")
      ->transform(CLI::CheckedTransformer(kEtOps));
  root.add_option("--max-decompressed-bytes", MaxDecompressedText(),
                  "Refuse a gzip trace that inflates to more than this, e.g. 128GiB (default "
                  "64GiB)");
}

absl::StatusOr<Trace> LoadTrace(const std::string& path) {
  if (const std::optional<std::string>& text = MaxDecompressedText(); text.has_value()) {
    absl::StatusOr<int64_t> cap = ParseBytesWithUnit(*text);
    if (!cap.ok() || *cap < 1) {
      return Error(ErrorKind::kUsage,
                   absl::StrCat("--max-decompressed-bytes: ",
                                cap.ok() ? "must be at least 1B" : cap.status().message()));
    }
    GlobalImportOptions().max_decompressed_bytes = *cap;
  }
  ImportOptions options = GlobalImportOptions();
  ProgressBar bar("read " + std::filesystem::path(path).filename().string(),
                  ProgressUnit::kBytes);
  options.progress = [&bar](int64_t read, int64_t total) { bar.Update(read, total); };
  return ReadAnyTrace(path, options);
}

}  // namespace swapplan::cli
