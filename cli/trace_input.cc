#include "trace_input.h"

#include <filesystem>
#include <vector>

#include "absl/strings/str_join.h"
#include "progress.h"

namespace swapplan::cli {

ImportOptions& GlobalImportOptions() {
  static ImportOptions options;
  return options;
}

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
}

absl::StatusOr<Trace> LoadTrace(const std::string& path) {
  ImportOptions options = GlobalImportOptions();
  ProgressBar bar("read " + std::filesystem::path(path).filename().string(),
                  ProgressUnit::kBytes);
  options.progress = [&bar](int64_t read, int64_t total) { bar.Update(read, total); };
  return ReadAnyTrace(path, options);
}

}  // namespace swapplan::cli
