#include "import/import_test_util.h"

#include <zlib.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include <catch2/catch.hpp>

#include "support/test_traces.h"

namespace swapplan::testing {

absl::StatusOr<Trace> ImportText(const std::string& text, const std::string& format,
                                 const ImportOptions& options) {
  ImportOptions o = options;
  o.format = format;
  return ImportFromMemory(text, "mem", o);
}

ImportOptions RoundRoofline() {
  ImportOptions o;
  o.roofline_device.peak_flops_per_s = 1e12;
  o.roofline_device.memory_bandwidth_bytes_per_s = 1e9;
  return o;
}

std::string Gzip(const std::string& data) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) ==
          Z_OK);
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string Tar(const std::vector<std::pair<std::string, std::string>>& members) {
  std::string out;
  for (const auto& [name, content] : members) {
    char h[512];
    std::memset(h, 0, sizeof(h));
    std::snprintf(h, 100, "%s", name.c_str());
    std::snprintf(h + 100, 8, "%07o", 0644);
    std::snprintf(h + 108, 8, "%07o", 0);
    std::snprintf(h + 116, 8, "%07o", 0);
    std::snprintf(h + 124, 12, "%011o", static_cast<unsigned>(content.size()));
    std::snprintf(h + 136, 12, "%011o", 0);
    h[156] = '0';
    std::memcpy(h + 257, "ustar", 5);
    std::memcpy(h + 263, "00", 2);
    std::memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (unsigned char c : h) sum += c;
    std::snprintf(h + 148, 8, "%06o", sum);
    out.append(h, 512);
    out += content;
    out.append((512 - content.size() % 512) % 512, '\0');
  }
  out.append(1024, '\0');
  return out;
}

std::string Attr(const Trace& t, const std::string& key) {
  for (const auto& [k, v] : t.metadata().attributes) {
    if (k == key) return v;
  }
  return "";
}

std::string DataFile(const std::string& relative) {
  std::ifstream f(DataPath(relative), std::ios::binary);
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

int64_t OpsPerPhase(const Trace& t, Phase p) {
  int64_t n = 0;
  for (OpIndex i = 0; i < t.num_ops(); ++i) n += t.op(i).phase == p ? 1 : 0;
  return n;
}

int64_t TensorsOfKind(const Trace& t, TensorKind k) {
  int64_t n = 0;
  for (TensorId i = 0; i < t.num_tensors(); ++i) n += t.tensor(i).kind == k ? 1 : 0;
  return n;
}

}  // namespace swapplan::testing
