// The fake vendor runtimes' call log (fake_control.h), parsed: one Call per
// line "<seq> <function> key=value ... -> <code>". For tests that check
// which vendor calls the backends make, with what, in which order.
//
//   std::vector<Call> log = ParseCallLog(device->CallLog());
//   int64_t at = FindCall(log, 0, "cudaFreeAsync", {{"ptr", Hex(p)}});
//
// O(lines) to parse; FindCall O(lines) per search.
#ifndef SWAPPLAN_TESTS_RUNTIME_FAKE_LOG_H_
#define SWAPPLAN_TESTS_RUNTIME_FAKE_LOG_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace swapplan::runtime::testing {

struct Call {
  int64_t seq = 0;
  std::string name;
  std::map<std::string, std::string> args;
  int64_t code = 0;
  std::string arg(const std::string& key) const {
    auto it = args.find(key);
    return it == args.end() ? std::string() : it->second;
  }
};

inline std::vector<Call> ParseCallLog(const std::string& text) {
  std::vector<Call> calls;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> parts = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (parts.size() < 4) continue;
    Call c;
    if (!absl::SimpleAtoi(parts[0], &c.seq)) continue;
    c.name = std::string(parts[1]);
    for (size_t k = 2; k + 2 < parts.size(); ++k) {
      std::pair<std::string, std::string> kv = absl::StrSplit(parts[k], absl::MaxSplits('=', 1));
      c.args[kv.first] = kv.second;
    }
    if (!absl::SimpleAtoi(parts.back(), &c.code)) continue;
    calls.push_back(std::move(c));
  }
  return calls;
}

// Index of the first call at or after `from` named `name` whose arguments
// include every pair of `args`; -1 when there is none.
inline int64_t FindCall(const std::vector<Call>& log, int64_t from, const std::string& name,
                        const std::map<std::string, std::string>& args = {}) {
  for (int64_t k = from; k < static_cast<int64_t>(log.size()); ++k) {
    if (log[k].name != name) continue;
    bool all = true;
    for (const auto& [key, value] : args) all = all && log[k].arg(key) == value;
    if (all) return k;
  }
  return -1;
}

}  // namespace swapplan::runtime::testing

#endif  // SWAPPLAN_TESTS_RUNTIME_FAKE_LOG_H_
