#include "cli.h"

#include <algorithm>
#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "swapplan/util/error.h"
#include "swapplan/util/file.h"
#include "swapplan/util/utf8.h"

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

absl::Status RefuseEmptyValues(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    const absl::string_view prev = i > 1 ? absl::string_view(argv[i - 1]) : absl::string_view();
    std::string flag;
    if (arg.empty() && absl::StartsWith(prev, "-") && prev.find('=') == absl::string_view::npos) {
      flag = std::string(prev);
    } else if (absl::StartsWith(arg, "--") && absl::EndsWith(arg, "=")) {
      flag = std::string(arg.substr(0, arg.size() - 1));
    }
    if (!flag.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(EscapeForMessage(flag, 60),
                                                     ": empty value (leave the flag out instead)"));
    }
  }
  return absl::OkStatus();
}

std::string DescribeParseError(const CLI::App& app, const CLI::ParseError& error) {
  // The deepest subcommand the command line selected ("swapplan compare").
  const CLI::App* sub = &app;
  std::string command = "swapplan";
  for (bool deeper = true; deeper;) {
    deeper = false;
    for (const CLI::App* s : sub->get_subcommands()) {
      sub = s;
      absl::StrAppend(&command, " ", s->get_name());
      deeper = true;
      break;
    }
  }
  const std::string prefix = sub == &app ? "" : absl::StrCat(sub->get_name(), ": ");
  const std::string hint = absl::StrCat(" (", command, " --help lists ",
                                        sub == &app ? "the commands" : "its flags", ")");
  // CLI11's text, on one line and escaped: the fallback.
  std::string what = EscapeForMessage(absl::StrReplaceAll(error.what(), {{"\n", " "}}), 300);

  if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr) {
    std::vector<std::string> extras = app.remaining(/*recurse=*/true);
    if (!extras.empty()) {
      std::string quoted;
      for (const std::string& x : extras) {
        absl::StrAppend(&quoted, quoted.empty() ? "" : " ", "'", EscapeForMessage(x, 60), "'");
      }
      return absl::StrCat(prefix, extras.size() == 1 ? "unexpected argument " : "unexpected arguments ",
                          quoted, hint);
    }
  }
  if (dynamic_cast<const CLI::ConversionError*>(&error) != nullptr) {
    // "Could not convert: --hidden = 1e400"
    absl::string_view w = error.what();
    if (absl::ConsumePrefix(&w, "Could not convert: ")) {
      const size_t eq = w.find(" = ");
      if (eq != absl::string_view::npos) {
        const std::string name(w.substr(0, eq));
        const CLI::Option* opt = sub->get_option_no_throw(name);
        const std::string type = opt != nullptr ? opt->get_type_name() : "";
        return absl::StrCat(prefix, name, ": '", EscapeForMessage(w.substr(eq + 3), 60),
                            "' is not ", type.empty() ? "a valid value" : "a valid " + type,
                            hint);
      }
    }
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) != nullptr) {
    // "--oversubscription: 1 required RATIO missing": the flag ended the
    // command line (or was followed by another flag) without its value.
    absl::string_view w = error.what();
    const size_t colon = w.find(": ");
    if (colon != absl::string_view::npos && absl::EndsWith(w, " missing")) {
      return absl::StrCat(prefix, EscapeForMessage(w.substr(0, colon), 60),
                          ": needs a value (give it as FLAG VALUE or FLAG=VALUE)");
    }
    // "--h2d-bandwidth: At Most 1 required but received 2": given twice.
    if (colon != absl::string_view::npos &&
        absl::StrContains(w.substr(colon), ": At Most 1 required but received")) {
      return absl::StrCat(prefix, EscapeForMessage(w.substr(0, colon), 60),
                          ": given more than once (give it once)", hint);
    }
  }
  if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr && sub == &app) {
    // No subcommand matched: a misspelt one is left over as an argument.
    const std::vector<std::string> extras = app.remaining(/*recurse=*/false);
    if (!extras.empty()) {
      return absl::StrCat("unknown command '", EscapeForMessage(extras.front(), 60), "'", hint);
    }
    return absl::StrCat("no command given", hint);
  }
  return absl::StrCat(prefix, what, hint);
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
