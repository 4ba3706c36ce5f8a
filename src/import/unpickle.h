// SafeUnpickle: a minimal unpickler for data-only pickles (protocols 2-5):
// None, bools, ints, floats, str, bytes, lists, tuples, dicts and the memo.
// Every opcode that could name, import, construct or call anything (GLOBAL,
// STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, NEWOBJ_EX, EXT1-4,
// PERSID, BINPERSID, buffers) and the text opcodes of protocols 0-1 are
// refused with their byte offset; nothing is ever executed. This is what
// torch.cuda.memory._dump_snapshot() writes (pickle.dump of plain dicts).
//
//   ValueTree tree;
//   uint32_t root = kNoValue;
//   SWAPPLAN_RETURN_IF_ERROR(SafeUnpickle(stream, "snap.pickle", &tree, &root));
//
// Declared lengths (strings, bytes, long ints) are checked against the input
// as it is read: a length beyond the end of the input is an error
// ([declared-size]) and nothing is reserved for it up front. Memo
// references share nodes (the tree may be a DAG; a container that contains
// itself is accepted here and must not be walked generically — the snapshot
// importer only follows fixed paths).
//
// Errors: InvalidArgument "<source>: pickle byte N: ... [pickle-opcode |
// pickle-truncated | pickle-schema | declared-size]" (N: the opcode's
// offset). O(input) time and memory.
#ifndef SWAPPLAN_SRC_IMPORT_UNPICKLE_H_
#define SWAPPLAN_SRC_IMPORT_UNPICKLE_H_

#include <cstdint>
#include <functional>
#include <string>

#include <google/protobuf/io/zero_copy_stream.h>

#include "absl/status/status.h"
#include "import/value_tree.h"

namespace swapplan::import_internal {

absl::Status SafeUnpickle(google::protobuf::io::ZeroCopyInputStream* in, const std::string& source,
                          std::function<absl::Status()> stream_error, ValueTree* tree,
                          uint32_t* root);

}  // namespace swapplan::import_internal

#endif  // SWAPPLAN_SRC_IMPORT_UNPICKLE_H_
