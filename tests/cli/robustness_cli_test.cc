// Issue 19 through the binary: inputs that used to crash (SIGFPE, SIGSEGV),
// escape as internal errors or buffer a decompression bomb are refused with
// exit 2 and one line naming the file and the rule.
#include <zlib.h>

#include <chrono>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include "support/cli_runner.h"
#include "support/test_traces.h"

namespace {

using swapplan::testing::CliRun;
using swapplan::testing::Swapplan;

// One line on stderr: "swapplan: " + `message`.
void CheckOneLine(const CliRun& r, const std::string& message) {
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err == "swapplan: " + message + "\n");
}

TEST_CASE("zero iterations: every trace command refuses at read (no SIGFPE)",
          "[cli][robustness]") {
  const std::string msg =
      "robustness/zero_iterations.json: the trace has no iterations (at least one is required) "
      "[no-iterations]";
  CheckOneLine(Swapplan("inspect robustness/zero_iterations.json"), msg);
  CheckOneLine(Swapplan("inspect --json robustness/zero_iterations.json"), msg);
  CheckOneLine(Swapplan("curve robustness/zero_iterations.json"), msg);
  CheckOneLine(Swapplan("plan robustness/zero_iterations.json --device-memory 1GiB "
                        "--h2d-bandwidth 1GB/s --d2h-bandwidth 1GB/s -o /dev/null"),
               msg);
}

TEST_CASE("a JSON number past a double is a clean json-number error", "[cli][robustness]") {
  CheckOneLine(Swapplan("inspect robustness/number_overflow.json"),
               "robustness/number_overflow.json: JSON $.iterations[0].wall_time_ns (byte 494): "
               "number overflow parsing '1e400' (out of the range of a double) [json-number]");
}

TEST_CASE("tensor sizes of 2^62 overflow at read, not in the curve", "[cli][robustness]") {
  const std::string msg =
      "robustness/size_overflow.json: tensor 4: size_bytes 4611686018427387904 makes the sizes "
      "of all tensors overflow a 64-bit integer [overflow]";
  CheckOneLine(Swapplan("inspect robustness/size_overflow.json"), msg);
  CheckOneLine(Swapplan("curve robustness/size_overflow.json"), msg);
}

TEST_CASE("synth: sizes past int64 are an input error, not a generator bug",
          "[cli][robustness]") {
  const std::string out = swapplan::testing::TempDir() + "/never.trace";
  CheckOneLine(Swapplan("synth --hidden 2147483640 --heads 20 --kv-heads 20 -q -o " + out),
               "synth: the attention weights (3 x hidden^2) would have more than 2^63 "
               "elements, more than the 2^56 a tensor may have; reduce --hidden, --ffn, --vocab, "
               "--seq or --micro-batch [overflow]");
  CHECK_FALSE(std::ifstream(out).good());
  // Each tensor fits, all of them together do not: 2 x 2^40 x 4096 x 16
  // bytes per MLP weight and its optimizer states; layer 5's master copy
  // crosses 1 EiB.
  CheckOneLine(Swapplan("synth --ffn 1099511627776 -q -o " + out),
               "synth: parameters: tensor 'layers.5.mlp.fc1.weight.master' (36028797018963968 bytes) "
               "brings the tensors past 1152921504606846976 bytes (1 EiB) in all; reduce "
               "--hidden, --ffn, --vocab, --layers, --experts, --seq or --micro-batch "
               "[overflow]");
  // 1 FLOP/s (the least --peak-flops takes): op 4, the first matmul, needs
  // more than 2^63 ns.
  CheckOneLine(Swapplan("synth --peak-flops 1 -q -o " + out),
               "synth: iteration 0, op 4: op 'aten::mm': the iteration's time overflows 64-bit "
               "nanoseconds (292 years); check the device's FLOP/s and bandwidth figures "
               "[overflow]");
}

TEST_CASE("a 12.5 MB gzip inflating to 12 GiB is refused before it is buffered",
          "[cli][robustness]") {
  // One gzip member of 1 MiB of spaces (~1 KB), repeated 12288 times: a
  // 12 MB file that inflates to 12 GiB of (leading) JSON whitespace.
  z_stream z{};
  REQUIRE(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string spaces(1 << 20, ' ');
  std::string member(deflateBound(&z, spaces.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(spaces.data());
  z.avail_in = static_cast<uInt>(spaces.size());
  z.next_out = reinterpret_cast<Bytef*>(member.data());
  z.avail_out = static_cast<uInt>(member.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  member.resize(z.total_out);
  deflateEnd(&z);
  const std::string path = swapplan::testing::TempDir() + "/bomb.json.gz";
  {
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < 12288; ++i) out << member;
  }
  const auto start = std::chrono::steady_clock::now();
  // Forced to the swapplan reader (detection alone already refuses content
  // that starts with this much whitespace: unknown-format).
  CliRun r = Swapplan("inspect --trace-format swapplan " + path);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CheckOneLine(r, path + ": the decompressed content exceeds 1.00 GiB, the limit for inputs "
                         "read whole (JSON traces, policies, baselines) [read-limit]");
  // Inflating 1 GiB takes about 4 s of CPU; 12 GiB would take twelve times
  // that (and the memory). Generous for loaded machines (52 s wall measured
  // at load 19 on 2 cores) and sanitizer builds.
  CHECK(seconds < 240);
}

// One gzip member inflating to `text`.
std::string GzipMember(const std::string& text) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string member(deflateBound(&z, text.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(member.data());
  z.avail_out = static_cast<uInt>(member.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  member.resize(z.total_out);
  deflateEnd(&z);
  return member;
}

// Issue 19, round 5: the mutation campaign's binary-record bomb — the
// magic, a record announcing 2^30 - 1 bytes, then 1 GiB of zeros (about
// 1 MB of gzip). It used to be buffered whole before parsing (10-29 s of
// wall time under load, 1 GiB of memory); it is refused at the record's
// first byte. The 4 MiB cap proves it: with it the old reader stopped at
// decompressed-limit instead.
TEST_CASE("a gzip record announcing 1 GiB of zeros is refused at its first bytes",
          "[cli][robustness]") {
  const std::string path = swapplan::testing::TempDir() + "/record-bomb.trace.gz";
  {
    std::ofstream out(path, std::ios::binary);
    out << GzipMember("SWPLTRC1\xff\xff\xff\xff\x03");  // varint 2^30 - 1
    const std::string zeros = GzipMember(std::string(1 << 20, '\0'));
    for (int i = 0; i < 1024; ++i) out << zeros;
  }
  const std::string msg = path + ": record 0 (byte 8): a record of 1073741823 bytes does not "
                                 "parse as a TraceRecord [corrupt-record]";
  CheckOneLine(Swapplan("inspect --max-decompressed-bytes 4MiB " + path), msg);
  CheckOneLine(Swapplan("inspect " + path), msg);
  CheckOneLine(Swapplan("curve " + path), msg);
}

// Issue 19: the cap on decompressed bytes has a flag. traces/toy_valid.json
// gzipped inflates to its own size (more than 100 bytes), so a 100-byte cap
// stops it; bad values of the flag are one-line usage errors.
TEST_CASE("--max-decompressed-bytes caps gzip input; bad values are usage errors",
          "[cli][robustness]") {
  const std::string json = swapplan::testing::ReadFile(std::string(SWAPPLAN_TEST_DATA_DIR) +
                                                       "/traces/toy_valid.json");
  REQUIRE(json.size() > 100);
  z_stream z{};
  REQUIRE(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string gz(deflateBound(&z, json.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(json.data()));
  z.avail_in = static_cast<uInt>(json.size());
  z.next_out = reinterpret_cast<Bytef*>(gz.data());
  z.avail_out = static_cast<uInt>(gz.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  gz.resize(z.total_out);
  deflateEnd(&z);
  const std::string path = swapplan::testing::TempDir() + "/toy.json.gz";
  {
    std::ofstream out(path, std::ios::binary);
    out << gz;
  }
  CHECK(Swapplan("inspect " + path).exit_code == 0);
  CHECK(Swapplan("inspect --max-decompressed-bytes 1MiB " + path).exit_code == 0);
  CliRun r = Swapplan("inspect --max-decompressed-bytes 100B " + path);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::StartsWith("swapplan: " + path + ": decompresses to more than 100 bytes, "
                                      "the limit on decompressed input (raise it with "
                                      "--max-decompressed-bytes) [resource-limit]\n"));
  CheckOneLine(Swapplan("inspect --max-decompressed-bytes 100 " + path),
               "--max-decompressed-bytes: '100' needs a unit, e.g. 100B or 100GiB");
  CheckOneLine(Swapplan("inspect --max-decompressed-bytes 0B " + path),
               "--max-decompressed-bytes: must be at least 1B");
}

}  // namespace
