// ParsePythonLiteral: reads the Python literal Chakra writes into its .et IO
// fields (str() of the ET JSON lists: [[6, 7, 0, 65536, 4, 'cuda:0'], 1.0,
// '<None>', True, None]) into a ValueTree. Lists, tuples, dicts, quoted
// strings with Python escapes, ints, floats (inf, nan), True, False, None.
// Nothing is evaluated.
//
//   ValueTree t;
//   uint32_t v = 0;
//   SWAPPLAN_RETURN_IF_ERROR(ParsePythonLiteral("[1, 'a']", "node 5 inputs", &t, &v));
//
// Errors: InvalidArgument "<where>: character N: ... [chakra-record]".
// Complexity O(text); nesting limited to 256 levels.
#ifndef SWAPPLAN_SRC_IMPORT_PYLIT_H_
#define SWAPPLAN_SRC_IMPORT_PYLIT_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "import/value_tree.h"

namespace swapplan::import_internal {

absl::Status ParsePythonLiteral(absl::string_view text, absl::string_view where, ValueTree* tree,
                                uint32_t* out);

}  // namespace swapplan::import_internal

#endif  // SWAPPLAN_SRC_IMPORT_PYLIT_H_
