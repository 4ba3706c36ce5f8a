// Per-iteration sequence lengths of the synthesizer (SPEC §2, "sequence
// changes across iterations"): a data loader that buckets, packs or follows
// a curriculum hands every step a batch of another length. Every activation
// scales with it; the op sequence does not change (so the stage tracker's
// Algorithm 1 calls such iterations stable — the point of
// varying/policy_set.h).
//
//   --seq-lengths 512,1024,2048,4096   each iteration draws one of the list,
//                                      uniformly, from --seed
//   --seq-lengths 512:4096[:STEP]      the same over LO, LO+STEP, ... <= HI
//                                      (STEP defaults to LO: 512:4096 is
//                                      512, 1024, 1536, ..., 4096)
//   --seq-lengths @FILE                the lengths of successive iterations,
//                                      in order (separated by commas or white
//                                      space; `#` starts a comment; the list
//                                      repeats when the run is longer)
//
//   SWAPPLAN_ASSIGN_OR_RETURN(o.seq_lengths, ParseSeqLengths("512,1024,2048,4096"));
//   o.seq_length_tokens = o.seq_lengths.max();  // sizes the persistent buffers
//   SeqLengthOf(o, 7);                           // iteration 7's length
//
// The draw is counter-based (splitmix64 of the seed and the iteration, apart
// from the MoE routing's stream), so any iteration's length is known without
// generating the ones before it and the same seed gives the same lengths.
// Complexity: Parse O(length of the spec or file); SeqLengthOf O(1).
#ifndef SWAPPLAN_SYNTH_SEQ_LENGTHS_H_
#define SWAPPLAN_SYNTH_SEQ_LENGTHS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace swapplan {

struct SeqLengthSchedule {
  // Lengths (tokens, each >= 1); empty: every iteration uses the fixed
  // SynthOptions::seq_length_tokens.
  std::vector<int64_t> lengths;
  // true: iteration i uses lengths[i mod size] (@FILE); false: a uniform
  // draw from `lengths`.
  bool in_order = false;

  bool empty() const { return lengths.empty(); }
  // The longest length (0 when empty).
  int64_t max() const;
  // Distinct lengths.
  int32_t distinct() const;
  // The length of iteration `iteration` under seed `seed`. Requires
  // !empty().
  int64_t At(uint64_t seed, int32_t iteration) const;
  // "512,1024,2048,4096" (drawn) or "@in order: 512,4096,..." — for the
  // trace's metadata.
  std::string ToString() const;
  // InvalidArgument ("--seq-lengths ...") for a length < 1.
  absl::Status Validate() const;
};

// Parses a --seq-lengths value (the three forms above; @FILE is read).
// InvalidArgument naming the flag, the text and what is wrong (not a number,
// a length < 1, LO > HI, STEP < 1, an empty list, more than 1,000,000
// lengths); NotFound / PermissionDenied from reading FILE.
absl::StatusOr<SeqLengthSchedule> ParseSeqLengths(absl::string_view spec);

}  // namespace swapplan

#endif  // SWAPPLAN_SYNTH_SEQ_LENGTHS_H_
