// UTF-8 validation for text that crosses a format boundary (op names, tensor
// names, metadata): everything swapplan accepts must be printable as JSON.
//
//   if (!IsValidUtf8(name)) return absl::InvalidArgumentError("... [bad-text]");
#ifndef SWAPPLAN_UTIL_UTF8_H_
#define SWAPPLAN_UTIL_UTF8_H_

#include "absl/strings/string_view.h"

namespace swapplan {

// True when `s` is well-formed UTF-8 (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF). O(size).
bool IsValidUtf8(absl::string_view s);

}  // namespace swapplan

#endif  // SWAPPLAN_UTIL_UTF8_H_
