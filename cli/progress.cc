#include "progress.h"

#include <unistd.h>

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "swapplan/planners/registry.h"
#include "swapplan/util/units.h"

namespace swapplan::cli {

bool& GlobalQuiet() {
  static bool quiet = false;
  return quiet;
}

bool ProgressEnabled(std::FILE* stream) {
  return !GlobalQuiet() && stream != nullptr && isatty(fileno(stream)) == 1;
}

std::string FormatClock(int64_t ns) {
  const int64_t s = std::max<int64_t>(ns, 0) / 1000000000;
  if (s >= 3600) return absl::StrFormat("%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
  return absl::StrFormat("%02d:%02d", s / 60, s % 60);
}

std::string FormatProgress(absl::string_view label, int64_t done, int64_t total,
                           int64_t elapsed_ns, ProgressUnit unit, int width) {
  total = std::max<int64_t>(total, 1);
  done = std::clamp<int64_t>(done, 0, total);
  width = std::max(width, 1);
  const int64_t cells = done * width / total;
  std::string bar(static_cast<size_t>(width), '.');
  std::fill(bar.begin(), bar.begin() + cells, '#');
  const std::string eta =
      done == 0 ? "--:--"
                : FormatClock(static_cast<int64_t>(static_cast<double>(elapsed_ns) *
                                                   static_cast<double>(total - done) /
                                                   static_cast<double>(done)));
  std::string count;
  if (unit == ProgressUnit::kCount) count = absl::StrCat("  ", done, "/", total);
  if (unit == ProgressUnit::kBytes) count = absl::StrCat("  ", FormatBytes(done), "/", FormatBytes(total));
  return absl::StrFormat("%s [%s] %3d%%%s  %s ETA %s", label, bar, done * 100 / total, count,
                         FormatClock(elapsed_ns), eta);
}

ProgressBar::ProgressBar(std::string label, ProgressUnit unit)
    : ProgressBar(std::move(label), ProgressEnabled(stderr), unit, stderr) {}

ProgressBar::ProgressBar(std::string label, bool enabled, ProgressUnit unit, std::FILE* stream)
    : label_(std::move(label)),
      unit_(unit),
      stream_(stream),
      enabled_(enabled),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

ProgressBar::~ProgressBar() { Finish(); }

void ProgressBar::Update(int64_t done, int64_t total) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - start_ <= std::chrono::seconds(1)) return;
  if (drawn_ && now - last_draw_ < std::chrono::milliseconds(100) && done < total) return;
  last_draw_ = now;
  const int64_t elapsed_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now - start_).count();
  // \r and erase-to-end-of-line: redraw in place.
  std::fprintf(stream_, "\r%s\x1b[K", FormatProgress(label_, done, total, elapsed_ns, unit_).c_str());
  std::fflush(stream_);
  drawn_ = true;
}

void ProgressBar::Finish() {
  if (!drawn_) return;
  std::fprintf(stream_, "\r\x1b[K");
  std::fflush(stream_);
  drawn_ = false;
}

CompareProgress CompareBar(ProgressBar* bar, const CompareOptions& options) {
  int64_t total = static_cast<int64_t>(options.planners.size());
  if (options.planners.empty()) {
    for (const PlannerInfo& info : RegisteredPlanners()) total += info.in_default_set;
  }
  auto done = std::make_shared<int64_t>(0);
  return [bar, total, done](const PlannerOutcome&) { bar->Update(++*done, total); };
}

}  // namespace swapplan::cli
