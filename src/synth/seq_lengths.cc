// Per-iteration sequence lengths (seq_lengths.h).
#include "swapplan/synth/seq_lengths.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "swapplan/util/file.h"

namespace swapplan {
namespace {

constexpr size_t kMaxLengths = 1000000;

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

absl::Status Bad(absl::string_view spec, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("--seq-lengths '", spec, "': ", what));
}

absl::StatusOr<int64_t> Length(absl::string_view spec, absl::string_view text) {
  int64_t v = 0;
  text = absl::StripAsciiWhitespace(text);
  if (!absl::SimpleAtoi(text, &v)) return Bad(spec, absl::StrCat("'", text, "' is not a number"));
  if (v < 1) return Bad(spec, absl::StrCat("length ", v, " must be >= 1"));
  return v;
}

}  // namespace

int64_t SeqLengthSchedule::max() const {
  int64_t m = 0;
  for (int64_t v : lengths) m = std::max(m, v);
  return m;
}

int32_t SeqLengthSchedule::distinct() const {
  std::vector<int64_t> v = lengths;
  std::sort(v.begin(), v.end());
  return static_cast<int32_t>(std::unique(v.begin(), v.end()) - v.begin());
}

int64_t SeqLengthSchedule::At(uint64_t seed, int32_t iteration) const {
  const uint64_t n = lengths.size();
  if (in_order) return lengths[static_cast<uint64_t>(iteration) % n];
  // Salted apart from the MoE routing stream (routing.cc).
  const uint64_t r = SplitMix64(SplitMix64(seed ^ 0x5345514c454e5354ULL) +
                                static_cast<uint64_t>(static_cast<uint32_t>(iteration)));
  return lengths[r % n];
}

std::string SeqLengthSchedule::ToString() const {
  return absl::StrCat(in_order ? "@in order: " : "", absl::StrJoin(lengths, ","));
}

absl::Status SeqLengthSchedule::Validate() const {
  for (int64_t v : lengths) {
    if (v < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("--seq-lengths: length ", v, " must be >= 1"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<SeqLengthSchedule> ParseSeqLengths(absl::string_view spec) {
  SeqLengthSchedule s;
  if (absl::StartsWith(spec, "@")) {
    const std::string path(spec.substr(1));
    if (path.empty()) return Bad(spec, "no file name after '@'");
    absl::StatusOr<std::unique_ptr<InputFile>> f = InputFile::Open(path);
    if (!f.ok()) return f.status();
    absl::StatusOr<std::string> text = (*f)->ReadAll();
    if (!text.ok()) return text.status();
    s.in_order = true;
    for (absl::string_view line : absl::StrSplit(*text, '\n')) {
      line = line.substr(0, line.find('#'));
      for (absl::string_view tok :
           absl::StrSplit(line, absl::ByAnyChar(", \t\r"), absl::SkipEmpty())) {
        absl::StatusOr<int64_t> v = Length(spec, tok);
        if (!v.ok()) return v.status();
        if (s.lengths.size() == kMaxLengths) {
          return Bad(spec, absl::StrCat("more than ", kMaxLengths, " lengths"));
        }
        s.lengths.push_back(*v);
      }
    }
    if (s.lengths.empty()) return Bad(spec, "the file has no lengths");
    return s;
  }
  if (spec.find(':') != absl::string_view::npos) {
    std::vector<absl::string_view> parts = absl::StrSplit(spec, ':');
    if (parts.size() > 3) return Bad(spec, "a range is LO:HI or LO:HI:STEP");
    absl::StatusOr<int64_t> lo = Length(spec, parts[0]);
    if (!lo.ok()) return lo.status();
    absl::StatusOr<int64_t> hi = Length(spec, parts[1]);
    if (!hi.ok()) return hi.status();
    int64_t step = *lo;
    if (parts.size() == 3) {
      absl::StatusOr<int64_t> st = Length(spec, parts[2]);
      if (!st.ok()) return st.status();
      step = *st;
    }
    if (*lo > *hi) return Bad(spec, absl::StrCat("LO ", *lo, " is above HI ", *hi));
    if ((*hi - *lo) / step + 1 > static_cast<int64_t>(kMaxLengths)) {
      return Bad(spec, absl::StrCat("more than ", kMaxLengths, " lengths"));
    }
    for (int64_t v = *lo; v <= *hi; v += step) s.lengths.push_back(v);
    return s;
  }
  for (absl::string_view tok : absl::StrSplit(spec, ',')) {
    absl::StatusOr<int64_t> v = Length(spec, tok);
    if (!v.ok()) return v.status();
    if (s.lengths.size() == kMaxLengths) {
      return Bad(spec, absl::StrCat("more than ", kMaxLengths, " lengths"));
    }
    s.lengths.push_back(*v);
  }
  return s;
}

}  // namespace swapplan
