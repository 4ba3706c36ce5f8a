#include "import/pylit.h"

#include "import/json_reader.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace swapplan::import_internal {
namespace {

class LiteralParser {
 public:
  LiteralParser(absl::string_view s, absl::string_view where, ValueTree* t)
      : s_(s), where_(where), t_(*t) {}

  absl::Status Parse(uint32_t* out) {
    uint32_t v = Value(0);
    if (!error_.ok()) return error_;
    Ws();
    if (i_ != s_.size()) {
      Fail("unexpected text after the value");
      return error_;
    }
    *out = v;
    return absl::OkStatus();
  }

 private:
  // Records the first error.
  void Fail(absl::string_view what) {
    if (error_.ok()) {
      error_ = absl::InvalidArgumentError(
          absl::StrCat(where_, ": character ", i_, ": ", what, " [chakra-record]"));
    }
  }
  void Ws() {
    while (i_ < s_.size() && absl::ascii_isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  uint32_t Checked(uint32_t v) {
    if (v == kNoValue) Fail("value too large for the importer's budget");
    return v;
  }

  uint32_t Value(int depth) {
    if (depth > 256) {
      Fail("nesting deeper than 256 levels");
      return kNoValue;
    }
    Ws();
    if (i_ >= s_.size()) {
      Fail("unexpected end of the literal");
      return kNoValue;
    }
    char c = s_[i_];
    if (c == '[' || c == '(' || c == '{') return Container(depth);
    if (c == '\'' || c == '"') return String();
    if (Word("True")) return Checked(t_.AddBool(true));
    if (Word("False")) return Checked(t_.AddBool(false));
    if (Word("None")) return Checked(t_.AddNone());
    return Number();
  }

  bool Word(absl::string_view w) {
    if (s_.substr(i_, w.size()) != w) return false;
    size_t e = i_ + w.size();
    if (e < s_.size() && (absl::ascii_isalnum(static_cast<unsigned char>(s_[e])) || s_[e] == '_')) {
      return false;
    }
    i_ = e;
    return true;
  }

  uint32_t Container(int depth) {
    const char open = s_[i_++];
    const char close = open == '[' ? ']' : open == '(' ? ')' : '}';
    const ValueKind kind = open == '[' ? ValueKind::kList
                           : open == '(' ? ValueKind::kTuple
                                         : ValueKind::kDict;
    uint32_t c = Checked(t_.AddContainer(kind));
    if (c == kNoValue) return c;
    bool first = true;
    for (;;) {
      Ws();
      if (i_ >= s_.size()) {
        Fail("unterminated container");
        return kNoValue;
      }
      if (s_[i_] == close) {
        ++i_;
        return c;
      }
      if (!first) {
        if (s_[i_] != ',') {
          Fail(absl::StrCat("expected ',' or '", std::string(1, close), "'"));
          return kNoValue;
        }
        ++i_;
        Ws();
        if (i_ < s_.size() && s_[i_] == close) {  // trailing comma, as in (1,)
          ++i_;
          return c;
        }
      }
      first = false;
      uint32_t v = Value(depth + 1);
      if (v == kNoValue) return kNoValue;
      t_.Append(c, v);
      if (kind == ValueKind::kDict) {
        Ws();
        if (i_ >= s_.size() || s_[i_] != ':') {
          Fail("expected ':' in a dict");
          return kNoValue;
        }
        ++i_;
        uint32_t x = Value(depth + 1);
        if (x == kNoValue) return kNoValue;
        t_.Append(c, x);
      }
    }
  }

  uint32_t String() {
    const char q = s_[i_++];
    std::string out;
    while (i_ < s_.size() && s_[i_] != q) {
      char c = s_[i_++];
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (i_ >= s_.size()) break;
      char e = s_[i_++];
      switch (e) {
        case 'n': out.push_back('\n'); break;
        case 't': out.push_back('\t'); break;
        case 'r': out.push_back('\r'); break;
        case '0': out.push_back('\0'); break;
        case '\\': case '\'': case '"': out.push_back(e); break;
        case 'x': case 'u': case 'U': {
          const size_t len = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          if (i_ + len > s_.size()) {
            Fail("truncated escape");
            return kNoValue;
          }
          for (size_t k = 0; k < len; ++k) {
            char h = s_[i_ + k];
            int d = h >= '0' && h <= '9' ? h - '0'
                    : h >= 'a' && h <= 'f' ? h - 'a' + 10
                    : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                           : -1;
            if (d < 0) {
              Fail("bad hex escape");
              return kNoValue;
            }
            cp = cp * 16 + static_cast<uint32_t>(d);
          }
          i_ += len;
          if (cp > 0x10FFFF) cp = 0xFFFD;
          if (cp < 0x80) {
            out.push_back(static_cast<char>(cp));
          } else if (cp < 0x800) {
            out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
          } else if (cp < 0x10000) {
            out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
          } else {
            out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
          }
          break;
        }
        default:
          out.push_back('\\');
          out.push_back(e);
      }
    }
    if (i_ >= s_.size()) {
      Fail("unterminated string");
      return kNoValue;
    }
    ++i_;
    return Checked(t_.AddString(out));
  }

  uint32_t Number() {
    size_t start = i_;
    if (i_ < s_.size() && (s_[i_] == '-' || s_[i_] == '+')) ++i_;
    if (Word("inf")) {
      return Checked(t_.AddFloat(s_[start] == '-' ? -std::numeric_limits<double>::infinity()
                                                   : std::numeric_limits<double>::infinity()));
    }
    if (Word("nan")) return Checked(t_.AddFloat(std::numeric_limits<double>::quiet_NaN()));
    bool is_float = false;
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (absl::ascii_isdigit(static_cast<unsigned char>(c))) {
        ++i_;
      } else if (c == '.' || c == 'e' || c == 'E' ||
                 ((c == '-' || c == '+') && (s_[i_ - 1] == 'e' || s_[i_ - 1] == 'E'))) {
        is_float = true;
        ++i_;
      } else {
        break;
      }
    }
    absl::string_view tok = s_.substr(start, i_ - start);
    if (tok.empty() || tok == "-" || tok == "+") {
      Fail(absl::StrCat("unexpected character '", PrintableText(s_.substr(start, 1)), "'"));
      return kNoValue;
    }
    const char* b = tok.data() + (tok[0] == '+' ? 1 : 0);
    const char* e = tok.data() + tok.size();
    if (!is_float) {
      int64_t v = 0;
      auto r = std::from_chars(b, e, v);
      if (r.ec == std::errc() && r.ptr == e) return Checked(t_.AddInt(v));
      if (r.ec == std::errc::result_out_of_range) {
        // uint64 values above INT64_MAX (seq_id -1 written unsigned).
        return Checked(t_.AddInt(-1, /*too_large=*/true));
      }
    }
    double d = 0;
    auto r = std::from_chars(b, e, d);
    if (r.ptr != e || (r.ec != std::errc() && r.ec != std::errc::result_out_of_range)) {
      Fail(absl::StrCat("malformed number '", PrintableText(tok, 32), "'"));
      return kNoValue;
    }
    return Checked(t_.AddFloat(d));
  }

  absl::string_view s_;
  absl::string_view where_;
  ValueTree& t_;
  size_t i_ = 0;
  absl::Status error_;
};

}  // namespace

absl::Status ParsePythonLiteral(absl::string_view text, absl::string_view where, ValueTree* tree,
                                uint32_t* out) {
  LiteralParser p(text, where, tree);
  return p.Parse(out);
}

}  // namespace swapplan::import_internal
