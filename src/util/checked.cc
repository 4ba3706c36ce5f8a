#include "absl/strings/str_cat.h"
#include "swapplan/util/checked.h"

namespace swapplan {

absl::Status OverflowError(absl::string_view where, absl::string_view what) {
  return WithRule(Error(ErrorKind::kMalformedInput,
                        absl::StrCat(where, ": ", what, " [", kOverflowRule, "]")),
                  kOverflowRule);
}

}  // namespace swapplan
