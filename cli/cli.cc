#include "cli.h"

#include <algorithm>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "swapplan/util/error.h"
#include "swapplan/util/file.h"

namespace swapplan::cli {

int ExitCodeFor(const absl::Status& status) { return ExitCode(status); }

absl::Status WriteOutput(const std::string& path, absl::string_view content) {
  if (path.empty() || path == "-") {
    std::cout.write(content.data(), static_cast<std::streamsize>(content.size()));
    std::cout.flush();
    if (!std::cout) return absl::InternalError("writing to stdout failed");
    return absl::OkStatus();
  }
  return WriteStringToFile(path, content);
}

namespace {

// Terminal columns of UTF-8 text: one per code point (tensor labels carry
// "→"), i.e. the bytes that are not continuation bytes (10xxxxxx).
size_t Columns(const std::string& s) {
  size_t n = 0;
  for (unsigned char ch : s) n += (ch & 0xC0) != 0x80;
  return n;
}

}  // namespace

std::string TextTable::Render(int left_columns) const {
  size_t ncol = header_.size();
  std::vector<size_t> width(ncol, 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t c = 0; c < row.size() && c < ncol; ++c) {
      width[c] = std::max(width[c], Columns(row[c]));
    }
  };
  measure(header_);
  for (const auto& r : rows_) measure(r);
  std::string out;
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t c = 0; c < ncol; ++c) {
      const std::string cell = c < row.size() ? row[c] : "";
      std::string pad(width[c] - Columns(cell), ' ');
      if (c > 0) line += "  ";
      line += static_cast<int>(c) < left_columns ? cell + pad : pad + cell;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    absl::StrAppend(&out, line, "\n");
  };
  emit(header_);
  for (const auto& r : rows_) emit(r);
  return out;
}

}  // namespace swapplan::cli
