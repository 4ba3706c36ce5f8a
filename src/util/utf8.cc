#include "swapplan/util/utf8.h"

#include <cstdint>

namespace swapplan {

bool IsValidUtf8(absl::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    unsigned char c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    int n;
    uint32_t cp;
    if ((c & 0xe0) == 0xc0) {
      n = 1;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      n = 2;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (end - p < n + 1) return false;
    for (int k = 1; k <= n; ++k) {
      if ((p[k] & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (p[k] & 0x3f);
    }
    static constexpr uint32_t kMin[4] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    p += n + 1;
  }
  return true;
}

std::string EscapeForMessage(absl::string_view s, size_t max_chars) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  const size_t n = s.size() < max_chars ? s.size() : max_chars;
  out.reserve(n + 8);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\\': out += "\\\\"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += "\\x";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  if (n < s.size()) out += "...";
  return out;
}

}  // namespace swapplan
