// Per-iteration sequence lengths (synth/seq_lengths.h): parsing the three
// forms, the seeded draw, and synthesized traces whose sizes follow.
#include "swapplan/synth/seq_lengths.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <string>

#include "support/test_traces.h"
#include "swapplan/trace/io.h"
#include "synth_helpers.h"

namespace swapplan {
namespace {

using testing::Synth;
using testing::TensorsNamed;
using testing::TinyOptions;

std::string Message(absl::string_view spec) {
  return std::string(ParseSeqLengths(spec).status().message());
}

TEST_CASE("seq lengths: a list, a range and a file", "[synth][seq_lengths]") {
  absl::StatusOr<SeqLengthSchedule> s = ParseSeqLengths("512,1024, 2048,4096");
  REQUIRE(s.ok());
  CHECK(s->lengths == std::vector<int64_t>{512, 1024, 2048, 4096});
  CHECK_FALSE(s->in_order);
  CHECK(s->max() == 4096);
  CHECK(s->distinct() == 4);
  CHECK(s->ToString() == "512,1024,2048,4096");
  // LO:HI steps by LO; LO:HI:STEP by STEP (HI itself only when on a step).
  s = ParseSeqLengths("512:2048");
  REQUIRE(s.ok());
  CHECK(s->lengths == std::vector<int64_t>{512, 1024, 1536, 2048});
  s = ParseSeqLengths("100:350:100");
  REQUIRE(s.ok());
  CHECK(s->lengths == std::vector<int64_t>{100, 200, 300});
  // @FILE: in order, commas or white space, # comments.
  const std::string path = testing::TempDir() + "/lengths.txt";
  std::ofstream(path) << "# a data loader's lengths\n512, 4096\n1024   2048 # bucket 3\n\n";
  s = ParseSeqLengths("@" + path);
  REQUIRE(s.ok());
  CHECK(s->lengths == std::vector<int64_t>{512, 4096, 1024, 2048});
  CHECK(s->in_order);
  CHECK(s->ToString() == "@in order: 512,4096,1024,2048");
}

TEST_CASE("seq lengths: errors name the flag, the text and the rule", "[synth][seq_lengths]") {
  CHECK(Message("512,abc") == "--seq-lengths '512,abc': 'abc' is not a number");
  CHECK(Message("512,0") == "--seq-lengths '512,0': length 0 must be >= 1");
  CHECK(Message("") == "--seq-lengths '': '' is not a number");
  CHECK(Message("4096:512") == "--seq-lengths '4096:512': LO 4096 is above HI 512");
  CHECK(Message("1:2:3:4") == "--seq-lengths '1:2:3:4': a range is LO:HI or LO:HI:STEP");
  CHECK(Message("1:9:0") == "--seq-lengths '1:9:0': length 0 must be >= 1");
  CHECK(Message("1:2000000:1") == "--seq-lengths '1:2000000:1': more than 1000000 lengths");
  CHECK(Message("@") == "--seq-lengths '@': no file name after '@'");
  CHECK(ParseSeqLengths("@/nonexistent/lengths.txt").status().code() ==
        absl::StatusCode::kNotFound);
  const std::string empty = testing::TempDir() + "/empty_lengths.txt";
  std::ofstream(empty) << "# nothing\n";
  CHECK(Message("@" + empty) == "--seq-lengths '@" + empty + "': the file has no lengths");
}

TEST_CASE("seq lengths: the draw is seeded, uniform and counter-based", "[synth][seq_lengths]") {
  SeqLengthSchedule s = *ParseSeqLengths("512,1024,2048,4096");
  // Same seed, same lengths, whatever order they are asked in.
  CHECK(s.At(7, 123) == s.At(7, 123));
  int differ = 0;
  for (int it = 0; it < 100; ++it) differ += s.At(7, it) != s.At(8, it);
  CHECK(differ > 50);  // another seed draws another run (3/4 differ on average)
  // 40,000 draws: each length 10,000 ± 4.5 σ (σ = sqrt(40000·1/4·3/4) ≈ 87).
  std::map<int64_t, int> count;
  for (int it = 0; it < 40000; ++it) ++count[s.At(1, it)];
  REQUIRE(count.size() == 4);
  for (const auto& [len, n] : count) {
    INFO("length " << len);
    CHECK(n > 10000 - 390);
    CHECK(n < 10000 + 390);
  }
  // In order: cycles.
  SeqLengthSchedule o{{5, 6, 7}, true};
  CHECK(o.At(99, 0) == 5);
  CHECK(o.At(99, 4) == 6);
}

TEST_CASE("seq lengths: a synthesized run's sizes follow, its ops do not", "[synth][seq_lengths]") {
  // TinyOptions: one sequence, bf16; the tokens are int64: 8 bytes per
  // token, so the input tokens tensor is 8·s bytes.
  SynthOptions o = TinyOptions();
  o.seq_lengths = *ParseSeqLengths("4,8,16");
  o.seq_length_tokens = 16;
  o.iterations = 12;
  o.seed = 3;
  Trace t = Synth(o);
  std::vector<TensorId> tokens = TensorsNamed(t, "mb0.input.tokens");
  REQUIRE(tokens.size() == 12);
  std::map<int64_t, int> seen;
  for (int32_t it = 0; it < 12; ++it) {
    INFO("iteration " << it);
    CHECK(t.tensor(tokens[it]).size_bytes == 8 * o.SeqLengthOf(it));
    CHECK(t.iteration(it).num_ops() == t.iteration(0).num_ops());
    ++seen[o.SeqLengthOf(it)];
  }
  CHECK(seen.size() == 3);
  // The persistent rotary table is sized by the longest length: [16, d = 4]
  // fp32.
  CHECK(t.tensor(testing::TensorNamed(t, "rope.freqs")).size_bytes == 16 * 4 * 4);
  bool attr = false;
  for (const auto& [k, v] : t.metadata().attributes) {
    if (k == "synth.seq_lengths") attr = v == "4,8,16";
  }
  CHECK(attr);
  // Deterministic by seed.
  CHECK(TraceToJson(Synth(o)) == TraceToJson(t));
  // The longest length must not exceed seq_length_tokens.
  o.seq_length_tokens = 8;
  CHECK(o.Validate().message() ==
        "synth: --seq-lengths reach 16, above --seq 8 (the longest length sizes the persistent "
        "buffers)");
}

}  // namespace
}  // namespace swapplan
