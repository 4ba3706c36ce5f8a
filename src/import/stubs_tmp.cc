#include "import/formats.h"
namespace swapplan::import_internal {
absl::StatusOr<Trace> ImportChakraEt(ImportInput&, const ImportOptions&) { return absl::UnimplementedError("x"); }
absl::StatusOr<Trace> ImportSnapshot(ImportInput&, const ImportOptions&) { return absl::UnimplementedError("x"); }
}
