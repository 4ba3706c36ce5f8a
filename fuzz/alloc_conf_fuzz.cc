// libFuzzer target: PYTORCH_CUDA_ALLOC_CONF-style text (--alloc-conf, and
// the alloc_conf a policy records; alloc/budget_basis.h), then the models it
// configures driven by the rest of the input. The text is the input up to
// the first newline: accepted options must validate and survive
// AllocConfText -> ParseAllocConf unchanged; errors are one line, exit 2.
// The bytes after it are operations (3 bytes each: kind, size, stream) on
// both models; after each, reserved >= allocated >= 0, the largest free
// block <= reserved, and the segments sum to reserved.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "swapplan/alloc/budget_basis.h"
#include "swapplan/util/error.h"

namespace {

void CheckStats(const swapplan::AllocatorModel& m) {
  using swapplan::fuzz::Finding;
  const swapplan::AllocatorStats& s = m.stats();
  if (s.allocated_bytes < 0 || s.reserved_bytes < s.allocated_bytes) {
    Finding("reserved below allocated");
  }
  if (s.largest_free_bytes > s.reserved_bytes) Finding("largest free block above reserved");
  int64_t sum = 0;
  for (const swapplan::AllocSegmentInfo& seg : m.Segments()) {
    int64_t blocks = 0;
    for (const swapplan::AllocBlockInfo& b : seg.blocks) blocks += b.bytes;
    if (blocks != seg.bytes) Finding("a segment's blocks do not add up to it");
    sum += seg.bytes;
  }
  if (sum != s.reserved_bytes) Finding("segments do not add up to reserved bytes");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace swapplan;
  const absl::string_view all = fuzz::AsText(data, size);
  const size_t nl = all.find('\n');
  const absl::string_view text = all.substr(0, nl);
  AllocatorOptions o;
  if (absl::StatusOr<AllocatorOptions> parsed = ParseAllocConf(text); parsed.ok()) {
    if (!parsed->Validate().ok()) fuzz::Finding("accepted options do not validate");
    absl::StatusOr<AllocatorOptions> again = ParseAllocConf(AllocConfText(*parsed));
    if (!again.ok() || again->max_split_size_bytes != parsed->max_split_size_bytes ||
        again->expandable_segments != parsed->expandable_segments ||
        (again->roundup_power2_divisions > 1) != (parsed->roundup_power2_divisions > 1)) {
      fuzz::Finding("AllocConfText does not parse back to the same options");
    }
    o = *parsed;
  } else {
    const std::string msg(parsed.status().message());
    if (msg.find('\n') != std::string::npos) fuzz::Finding("multi-line message: " + msg);
    if (ExitCode(parsed.status()) != 2) fuzz::Finding("not exit 2: " + msg);
  }
  if (nl == absl::string_view::npos) return 0;
  const absl::string_view ops = all.substr(nl + 1);
  for (AllocatorKind kind : {AllocatorKind::kCudaCaching, AllocatorKind::kBestFitArena}) {
    o.kind = kind;
    o.capacity_bytes = int64_t{256} << 20;
    std::unique_ptr<AllocatorModel> m = MakeAllocatorModel(o);
    std::vector<AllocBlockId> live;
    for (size_t i = 0; i + 3 <= ops.size() && i < 3 * 400; i += 3) {
      const uint8_t k = static_cast<uint8_t>(ops[i]);
      const uint8_t b = static_cast<uint8_t>(ops[i + 1]);
      if (k % 8 == 7) {
        m->EmptyCache();
      } else if (k % 2 == 0 || live.empty()) {
        // Sizes from bytes to ~50 MiB on a log scale.
        const int64_t bytes = (int64_t{1} << (b % 27)) + b * 977;
        live.push_back(m->Malloc(bytes, static_cast<uint8_t>(ops[i + 2]) % 2).block);
      } else {
        const size_t at = b % live.size();
        m->Free(live[at]);
        live.erase(live.begin() + static_cast<long>(at));
      }
      CheckStats(*m);
    }
  }
  return 0;
}
