// libFuzzer target: the gzip stream (util/gunzip_stream.h) over arbitrary
// bytes, read to the end with Next / BackUp / Skip mixed as the readers use
// them, with a 16 MiB output limit. Checks: the byte count matches what was
// returned, and an error is DataLoss or the limit, on one line naming the
// input.
#include <cstddef>
#include <cstdint>

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "fuzz_util.h"
#include "util/gunzip_stream.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace swapplan;
  google::protobuf::io::ArrayInputStream array(data, static_cast<int>(size), 7);
  internal::GunzipStream gz(&array, "fuzz.gz", int64_t{16} << 20, 4096);
  const void* out = nullptr;
  int n = 0;
  int64_t total = 0;
  unsigned step = 0;
  while (gz.Next(&out, &n)) {
    if (n <= 0) fuzz::Finding("Next returned an empty buffer");
    // Exercise BackUp and Skip on a fixed pattern (no extra input bytes).
    if (++step % 3 == 0 && n > 1) {
      gz.BackUp(n / 2);
      n -= n / 2;
    }
    total += n;
    if (step % 5 == 0) {
      const int64_t before = gz.ByteCount();
      if (gz.Skip(10)) {
        if (gz.ByteCount() != before + 10) fuzz::Finding("Skip moved the wrong distance");
        total += 10;
      } else {
        break;
      }
    }
    if (gz.ByteCount() != total) fuzz::Finding("ByteCount disagrees with the bytes returned");
  }
  const absl::Status st = gz.status();
  if (!st.ok() && st.code() != absl::StatusCode::kDataLoss &&
      KindOf(st) != ErrorKind::kResourceLimit) {
    fuzz::Finding("unexpected status " + st.ToString());
  }
  fuzz::CheckOneLineError(st, "fuzz.gz");
  return 0;
}
