// Helpers of the importer tests: in-memory imports, gzip and tar wrapping,
// metadata attributes, the external-trace directory.
#ifndef SWAPPLAN_TESTS_IMPORT_IMPORT_TEST_UTIL_H_
#define SWAPPLAN_TESTS_IMPORT_IMPORT_TEST_UTIL_H_

#include <string>

#include "absl/status/statusor.h"
#include "swapplan/import/import.h"
#include "swapplan/trace/trace.h"

namespace swapplan::testing {

// ImportFromMemory with `format` forced ("" detects).
absl::StatusOr<Trace> ImportText(const std::string& text, const std::string& format = "",
                                 const ImportOptions& options = {});
// A roofline of 1e12 FLOP/s and 1e9 B/s (1 byte per ns) for worked values.
ImportOptions RoundRoofline();
// gzip of `data` (one member).
std::string Gzip(const std::string& data);
// A ustar archive holding the (name, content) members in order.
std::string Tar(const std::vector<std::pair<std::string, std::string>>& members);
// Metadata attribute `key` ("" when absent).
std::string Attr(const Trace& t, const std::string& key);
// The whole content of a file under tests/data.
std::string DataFile(const std::string& relative);
// Ops of phase `p` / tensors of kind `k` in the whole trace.
int64_t OpsPerPhase(const Trace& t, Phase p);
int64_t TensorsOfKind(const Trace& t, TensorKind k);

}  // namespace swapplan::testing

#endif  // SWAPPLAN_TESTS_IMPORT_IMPORT_TEST_UTIL_H_
