// UTF-8 validation for text that crosses a format boundary (op names, tensor
// names, metadata): everything swapplan accepts must be printable as JSON.
//
//   if (!IsValidUtf8(name)) return absl::InvalidArgumentError("... [bad-text]");
#ifndef SWAPPLAN_UTIL_UTF8_H_
#define SWAPPLAN_UTIL_UTF8_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace swapplan {

// True when `s` is well-formed UTF-8 (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF). O(size).
bool IsValidUtf8(absl::string_view s);

// `s` made safe to quote inside a one-line error message: control bytes
// (newlines, tabs, DEL, ...) and backslashes are escaped as \n, \r, \t,
// \\ or \xHH (other bytes, UTF-8 included, are kept), and text beyond
// `max_chars` input bytes is cut and marked with "...".
// O(min(size, max_chars)).
//   EscapeForMessage("a\nb")  -> a\nb (four characters: a, backslash, n, b)
std::string EscapeForMessage(absl::string_view s, size_t max_chars = 80);

}  // namespace swapplan

#endif  // SWAPPLAN_UTIL_UTF8_H_
