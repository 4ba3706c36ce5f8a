// The document of a torch.cuda.memory._snapshot() (pickle, read by the safe
// unpickler, or a JSON dump of the same dict) as a ValueTree, and the device
// it is about: what the trace importer (snapshot.cc) and the allocator
// recording reader (alloc_recording.cc) share.
//
//   ValueTree tree;  uint32_t root;  bool pickle;
//   SWAPPLAN_RETURN_IF_ERROR(ReadSnapshotTree(in, options, &tree, &root, &pickle));
//   SnapshotParts p = FindSnapshotParts(tree, root);   // segments, device_traces
//
// O(input) time and memory.
#ifndef SWAPPLAN_SRC_IMPORT_SNAPSHOT_TREE_H_
#define SWAPPLAN_SRC_IMPORT_SNAPSHOT_TREE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "import/input.h"
#include "import/value_tree.h"

namespace swapplan::import_internal {

// Reads the whole document; *pickle says which encoding it was.
absl::Status ReadSnapshotTree(ImportInput& in, const ImportOptions& options, ValueTree* tree,
                              uint32_t* root, bool* pickle);

struct SnapshotParts {
  uint32_t segments = kNoValue;  // a list, or kNoValue
  uint32_t traces = kNoValue;    // device_traces: a list of rings, or kNoValue
  // The device: the ring with most entries, else the most common segment
  // device (ties: the lowest).
  int64_t device = 0;
  // The device's ring, when it has entries (else kNoValue).
  uint32_t ring = kNoValue;
};

// The parts of `root`: a dict with segments / device_traces, or (torch 1.13)
// a list of segments. InvalidArgument "<source>: ...: ... [snapshot-schema]"
// when it is neither or a part is not a list.
absl::StatusOr<SnapshotParts> FindSnapshotParts(const ValueTree& t, uint32_t root,
                                                const std::string& source);

// "<source>: <where>: <what> [snapshot-schema]".
absl::Status SnapshotSchemaError(const std::string& source, absl::string_view where,
                                 absl::string_view what);

}  // namespace swapplan::import_internal

#endif  // SWAPPLAN_SRC_IMPORT_SNAPSHOT_TREE_H_
