// A Chakra .et writer for tests and fixtures: converts an ET JSON document
// (any schema the importer reads) into .et records the way Chakra's
// converter lays them out (GlobalMetadata, then one Node per ET node with
// ctrl_deps = [parent], the IO lists as Python literals, the attributes as
// typed values). Written for swapplan (no Chakra code): it exists because
// no binary .et file is among the external traces.
#ifndef SWAPPLAN_TESTS_IMPORT_CHAKRA_WRITER_H_
#define SWAPPLAN_TESTS_IMPORT_CHAKRA_WRITER_H_

#include <string>

namespace swapplan::testing {

// The .et bytes of `et_json`; REQUIREs that it parses.
std::string ChakraFromEtJson(const std::string& et_json);

}  // namespace swapplan::testing

#endif  // SWAPPLAN_TESTS_IMPORT_CHAKRA_WRITER_H_
