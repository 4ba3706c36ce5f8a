// Content detection: magic bytes for the binary formats, top-level keys for
// the JSON ones. Reads only the head (64 KiB): a key that first appears later
// (a Kineto trace whose "traceEvents" follows a long "deviceProperties") is
// still found because the other keys of each format are distinctive too.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "import/formats.h"
#include "import/json_reader.h"
#include "swapplan/trace/io.h"

namespace swapplan::import_internal {
namespace {

// A forgiving scanner over a possibly cut-off JSON head.
class HeadScanner {
 public:
  explicit HeadScanner(absl::string_view s) : s_(s) {}
  bool AtEnd() {
    Ws();
    return i_ >= s_.size();
  }
  char PeekChar() {
    Ws();
    return i_ < s_.size() ? s_[i_] : '\0';
  }
  void Advance() { ++i_; }
  // Reads a string (at '"'); false when cut off.
  bool String(std::string* out) {
    out->clear();
    if (PeekChar() != '"') return false;
    ++i_;
    while (i_ < s_.size()) {
      char c = s_[i_++];
      if (c == '"') return true;
      if (c == '\\') {
        if (i_ >= s_.size()) return false;
        out->push_back(s_[i_++]);
        continue;
      }
      if (out->size() < 256) out->push_back(c);
    }
    return false;
  }
  // Skips one value; false when cut off.
  bool SkipValue() {
    char c = PeekChar();
    if (c == '"') {
      std::string ignored;
      return String(&ignored);
    }
    if (c == '{' || c == '[') {
      int depth = 0;
      while (i_ < s_.size()) {
        char d = s_[i_];
        if (d == '"') {
          std::string ignored;
          if (!String(&ignored)) return false;
          continue;
        }
        ++i_;
        if (d == '{' || d == '[') ++depth;
        if (d == '}' || d == ']') {
          if (--depth == 0) return true;
        }
      }
      return false;
    }
    while (i_ < s_.size() && s_[i_] != ',' && s_[i_] != '}' && s_[i_] != ']') ++i_;
    return i_ < s_.size();
  }
  // Keys of the object at the cursor (at '{'), with the string value of
  // `want` when it has one.
  std::vector<std::string> ObjectKeys(absl::string_view want, std::string* want_value) {
    std::vector<std::string> keys;
    if (PeekChar() != '{') return keys;
    ++i_;
    std::string key;
    while (keys.size() < 64) {
      char c = PeekChar();
      if (c == ',') {
        ++i_;
        continue;
      }
      if (c != '"' || !String(&key)) break;
      keys.push_back(key);
      if (PeekChar() != ':') break;
      ++i_;
      if (key == want && PeekChar() == '"') {
        if (!String(want_value)) break;
        continue;
      }
      if (!SkipValue()) break;
    }
    return keys;
  }

 private:
  void Ws() {
    while (i_ < s_.size() && absl::ascii_isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  absl::string_view s_;
  size_t i_ = 0;
};

bool Has(const std::vector<std::string>& keys, absl::string_view k) {
  for (const std::string& x : keys) {
    if (x == k) return true;
  }
  return false;
}

std::string KeyList(const std::vector<std::string>& keys) {
  std::vector<std::string> shown;
  for (size_t i = 0; i < keys.size() && i < 8; ++i) shown.push_back(PrintableText(keys[i], 32));
  return absl::StrCat(absl::StrJoin(shown, ", "), keys.size() > 8 ? ", ..." : "");
}

bool ReadVarint(absl::string_view s, size_t* i, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64 && *i < s.size(); shift += 7) {
    unsigned char c = static_cast<unsigned char>(s[(*i)++]);
    *v |= static_cast<uint64_t>(c & 0x7F) << shift;
    if (!(c & 0x80)) return true;
  }
  return false;
}

// A Chakra .et file: a varint-length-delimited GlobalMetadata (fields 1
// version, 2 attr; both length-delimited) followed by Node records.
bool LooksLikeChakra(absl::string_view s, bool all) {
  size_t i = 0;
  uint64_t len = 0;
  if (!ReadVarint(s, &i, &len) || len == 0 || len > (uint64_t{1} << 24)) return false;
  if (i >= s.size()) return false;
  unsigned char tag = static_cast<unsigned char>(s[i]);
  if (tag != 0x0A && tag != 0x12) return false;
  if (i + len > s.size()) return !all;
  const size_t end = i + static_cast<size_t>(len);
  while (i < end) {
    uint64_t key = 0, flen = 0;
    if (!ReadVarint(s, &i, &key) || (key & 7) != 2 || ((key >> 3) != 1 && (key >> 3) != 2)) {
      return false;
    }
    if (!ReadVarint(s, &i, &flen) || flen > end - i) return false;
    i += static_cast<size_t>(flen);
  }
  if (i == s.size()) return true;  // metadata only
  uint64_t nlen = 0;
  if (!ReadVarint(s, &i, &nlen)) return !all;
  return i >= s.size() || static_cast<unsigned char>(s[i]) == 0x08;
}

std::string Printable(absl::string_view s) {
  std::string out;
  for (char c : s.substr(0, 16)) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7F) {
      out.push_back(c);
    } else {
      absl::StrAppend(&out, "\\x", absl::Hex(u, absl::kZeroPad2));
    }
  }
  return out;
}

}  // namespace

ContentGuess DetectContent(absl::string_view head, bool all) {
  if (head.empty()) return {"", "empty content"};
  if (absl::StartsWith(head, kTraceMagic)) return {std::string(kFormatSwapplan), "magic SWPLTRC1"};
  const unsigned char b0 = static_cast<unsigned char>(head[0]);
  if (b0 == 0x80 && head.size() >= 2 && head[1] >= 2 && head[1] <= 5) {
    return {std::string(kFormatSnapshot), absl::StrCat("pickle protocol ", int{head[1]})};
  }
  absl::string_view h = head;
  if (absl::StartsWith(h, "\xEF\xBB\xBF")) h.remove_prefix(3);  // UTF-8 BOM
  HeadScanner sc(h);
  char c = sc.PeekChar();
  if (c == '{') {
    std::string schema, fmt;
    HeadScanner probe(h);
    std::vector<std::string> keys = probe.ObjectKeys("schema", &schema);
    HeadScanner probe2(h);
    probe2.ObjectKeys("format", &fmt);
    std::string ev = absl::StrCat("JSON object with keys ", KeyList(keys));
    if (fmt == "swapplan-trace" || Has(keys, "op_names") || Has(keys, "iterations") ||
        Has(keys, "format_version")) {
      return {std::string(kFormatSwapplan), ev};
    }
    if (Has(keys, "nodes") ||
        (!schema.empty() && (Has(keys, "pid") || Has(keys, "start_ts") || Has(keys, "time")))) {
      return {std::string(kFormatEtJson), schema.empty() ? ev : absl::StrCat(ev, ", schema ", schema)};
    }
    if (Has(keys, "traceEvents") || Has(keys, "schemaVersion") || Has(keys, "deviceProperties") ||
        Has(keys, "displayTimeUnit")) {
      return {std::string(kFormatKineto), ev};
    }
    if (Has(keys, "segments") || Has(keys, "device_traces")) {
      return {std::string(kFormatSnapshot), ev};
    }
    return {"", ev};
  }
  if (c == '[') {
    sc.Advance();
    char d = sc.PeekChar();
    if (d == '[') {
      sc.Advance();
      char e = sc.PeekChar();
      if (e == '-' || (e >= '0' && e <= '9')) {
        return {std::string(kFormatTimeline), "JSON array of number rows"};
      }
      return {"", "JSON array of arrays"};
    }
    if (d == '{') {
      std::string ignored;
      std::vector<std::string> keys = sc.ObjectKeys("", &ignored);
      std::string ev = absl::StrCat("JSON array of objects with keys ", KeyList(keys));
      if (Has(keys, "ph") || (Has(keys, "ts") && Has(keys, "name"))) {
        return {std::string(kFormatKineto), ev};
      }
      if (Has(keys, "total_size") || Has(keys, "blocks") || Has(keys, "segment_type")) {
        return {std::string(kFormatSnapshot), ev};
      }
      return {"", ev};
    }
    if (d == ']') return {std::string(kFormatTimeline), "empty JSON array"};
    return {"", "JSON array"};
  }
  if (LooksLikeChakra(head, all)) {
    return {std::string(kFormatChakraEt), "length-delimited protobuf (Chakra GlobalMetadata)"};
  }
  return {"", absl::StrCat("content starts with \"", Printable(head), "\"")};
}

}  // namespace swapplan::import_internal
