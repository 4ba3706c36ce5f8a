#include "import/json_reader.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"

namespace swapplan::import_internal {
namespace {

constexpr size_t kInitialBuffer = size_t{64} << 10;  // grows for longer tokens

// Bytes that end the fast scan of a string: the quote, a backslash, and
// control characters (not allowed raw in JSON strings).
struct StringStops {
  bool stop[256] = {};
  constexpr StringStops() {
    for (int c = 0; c < 0x20; ++c) stop[c] = true;
    stop[static_cast<unsigned char>('"')] = true;
    stop[static_cast<unsigned char>('\\')] = true;
  }
};
constexpr StringStops kStops;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace

std::string PrintableText(absl::string_view s, size_t max) {
  std::string out;
  for (char c : s.substr(0, max)) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7F) {
      out.push_back(c);
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    }
  }
  if (s.size() > max) out += "...";
  return out;
}

double JsonNumber::ToDouble() const {
  if (is_int) return static_cast<double>(int_value);
  if (text == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (text == "Infinity") return std::numeric_limits<double>::infinity();
  if (text == "-Infinity") return -std::numeric_limits<double>::infinity();
  double v = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec == std::errc::result_out_of_range) {
    // Overflow to infinity or underflow to zero, keeping the sign.
    bool neg = !text.empty() && text[0] == '-';
    size_t e = text.find_first_of("eE");
    bool tiny = e != absl::string_view::npos && e + 1 < text.size() && text[e + 1] == '-';
    return tiny ? (neg ? -0.0 : 0.0)
                : (neg ? -std::numeric_limits<double>::infinity()
                       : std::numeric_limits<double>::infinity());
  }
  return v;
}

JsonReader::JsonReader(google::protobuf::io::ZeroCopyInputStream* in, std::string source,
                       JsonLimits limits, std::function<absl::Status()> stream_error)
    : in_(in),
      source_(std::move(source)),
      limits_(limits),
      stream_error_(std::move(stream_error)),
      buf_(kInitialBuffer) {
  // Views of keys point into the frames: never reallocate the stack.
  stack_.reserve(static_cast<size_t>(std::max(limits_.max_depth, 1)) + 1);
}

std::string JsonReader::Path() const {
  std::string p = "$";
  for (const Frame& f : stack_) {
    if (f.array) {
      if (f.index >= 0) absl::StrAppend(&p, "[", f.index, "]");
    } else if (!f.first) {
      absl::StrAppend(&p, ".", PrintableText(f.key));
    }
  }
  return p;
}

void JsonReader::Fail(absl::string_view what, absl::string_view rule) {
  if (!status_.ok()) return;
  status_ = absl::InvalidArgumentError(absl::StrCat(source_, ": byte ", offset(), ", at ", Path(),
                                                    ": ", what, " [", rule, "]"));
}

void JsonReader::DetachKeys() {
  const char* lo = buf_.data();
  const char* hi = buf_.data() + buf_.size();
  for (Frame& f : stack_) {
    if (f.key.data() >= lo && f.key.data() < hi) {
      f.stored.assign(f.key.data(), f.key.size());
      f.key = f.stored;
    }
  }
}

size_t JsonReader::Ensure(size_t n) {
  if (end_ - pos_ >= n || eof_) return end_ - pos_;
  DetachKeys();
  if (pos_ > 0) {
    std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
    consumed_ += static_cast<int64_t>(pos_);
    end_ -= pos_;
    pos_ = 0;
  }
  if (n > buf_.size()) buf_.resize(std::max(n, buf_.size() * 2));
  while (end_ < n && !eof_) {
    const void* data = nullptr;
    int size = 0;
    if (!in_->Next(&data, &size)) {
      eof_ = true;
      if (stream_error_) {
        absl::Status s = stream_error_();
        if (!s.ok() && status_.ok()) status_ = s;
      }
      break;
    }
    if (size <= 0) continue;
    size_t room = buf_.size() - end_;
    size_t take = std::min(room, static_cast<size_t>(size));
    std::memcpy(buf_.data() + end_, data, take);
    end_ += take;
    if (take < static_cast<size_t>(size)) in_->BackUp(size - static_cast<int>(take));
  }
  return end_ - pos_;
}

bool JsonReader::SkipWhitespaceSlow() {
  for (;;) {
    while (pos_ < end_ && IsWs(buf_[pos_])) ++pos_;
    if (pos_ < end_) return true;
    if (Ensure(1) == 0) return false;
  }
}

bool JsonReader::Expect(char c) {
  if (!SkipWhitespace()) {
    Fail(absl::StrCat("unexpected end of input, expected '", std::string(1, c), "'"),
         "json-syntax");
    return false;
  }
  if (buf_[pos_] != c) {
    Fail(absl::StrCat("expected '", std::string(1, c), "', found '",
                      PrintableText(absl::string_view(&buf_[pos_], 1)), "'"), "json-syntax");
    return false;
  }
  ++pos_;
  return true;
}

JsonKind JsonReader::Peek() {
  if (!ok()) return JsonKind::kEnd;
  if (!SkipWhitespace()) return JsonKind::kEnd;
  switch (buf_[pos_]) {
    case '{': return JsonKind::kObject;
    case '[': return JsonKind::kArray;
    case '"': return JsonKind::kString;
    case 't': return JsonKind::kTrue;
    case 'f': return JsonKind::kFalse;
    case 'n': return JsonKind::kNull;
    case '-': case 'N': case 'I':
      return JsonKind::kNumber;
    default:
      if (IsDigit(buf_[pos_])) return JsonKind::kNumber;
      Fail(absl::StrCat("unexpected character '", PrintableText(absl::string_view(&buf_[pos_], 1)),
                        "'"),
           "json-syntax");
      return JsonKind::kEnd;
  }
}

bool JsonReader::CheckDepth() {
  if (static_cast<int32_t>(stack_.size()) >= limits_.max_depth) {
    Fail(absl::StrCat("nesting deeper than ", limits_.max_depth, " levels"), "json-limit");
    return false;
  }
  return true;
}

bool JsonReader::BeginObject() {
  if (!ok() || !CheckDepth()) return false;
  if (Peek() != JsonKind::kObject) {
    if (ok()) Fail("expected an object", "json-schema");
    return false;
  }
  ++pos_;
  stack_.push_back(Frame{false, true, -1, {}});
  return true;
}

bool JsonReader::BeginArray() {
  if (!ok() || !CheckDepth()) return false;
  if (Peek() != JsonKind::kArray) {
    if (ok()) Fail("expected an array", "json-schema");
    return false;
  }
  ++pos_;
  stack_.push_back(Frame{true, true, -1, {}});
  return true;
}

bool JsonReader::NextKey(absl::string_view* key) {
  if (!ok() || stack_.empty() || stack_.back().array) return false;
  if (!SkipWhitespace()) {
    Fail("unexpected end of input inside an object", "json-syntax");
    return false;
  }
  Frame& f = stack_.back();
  if (buf_[pos_] == '}') {
    ++pos_;
    stack_.pop_back();
    return false;
  }
  if (!f.first) {
    if (!Expect(',')) return false;
    if (!SkipWhitespace()) {
      Fail("unexpected end of input inside an object", "json-syntax");
      return false;
    }
  }
  if (buf_[pos_] != '"') {
    Fail("expected a key string", "json-syntax");
    return false;
  }
  absl::string_view k;
  if (!ReadStringRaw(&k)) return false;
  Frame& top = stack_.back();
  if (k.data() >= buf_.data() && k.data() < buf_.data() + buf_.size()) {
    top.key = k;  // into the buffer; DetachKeys() copies it before a refill
  } else {
    top.stored.assign(k.data(), k.size());  // unescaped into scratch_
    top.key = top.stored;
  }
  top.first = false;
  if (pos_ < end_ && buf_[pos_] == ':') {
    ++pos_;
  } else if (!Expect(':')) {
    return false;
  }
  *key = stack_.back().key;
  return true;
}

bool JsonReader::NextElement() {
  if (!ok() || stack_.empty() || !stack_.back().array) return false;
  if (!SkipWhitespace()) {
    Fail("unexpected end of input inside an array", "json-syntax");
    return false;
  }
  Frame& f = stack_.back();
  if (buf_[pos_] == ']') {
    ++pos_;
    stack_.pop_back();
    return false;
  }
  if (!f.first && !Expect(',')) return false;
  f.first = false;
  ++f.index;
  return true;
}

bool JsonReader::ReadStringRaw(absl::string_view* out) {
  // buf_[pos_] == '"'
  size_t i = pos_ + 1;
  for (;;) {
    const char* b = buf_.data();
    while (i < end_ && !kStops.stop[static_cast<unsigned char>(b[i])]) ++i;
    if (i < end_) break;
    size_t rel = i - pos_;
    if (static_cast<int64_t>(rel) > limits_.max_token_bytes) {
      Fail(absl::StrCat("string longer than ", limits_.max_token_bytes, " bytes"), "json-limit");
      return false;
    }
    Ensure(rel + 4096);
    i = pos_ + rel;
    if (i >= end_) {
      if (ok()) Fail("unterminated string", "json-syntax");
      return false;
    }
  }
  if (static_cast<int64_t>(i - pos_ - 1) > limits_.max_token_bytes) {
    Fail(absl::StrCat("string longer than ", limits_.max_token_bytes, " bytes"), "json-limit");
    return false;
  }
  if (buf_[i] == '"') {
    *out = absl::string_view(buf_.data() + pos_ + 1, i - pos_ - 1);
    pos_ = i + 1;
    return true;
  }
  if (buf_[i] != '\\') {
    pos_ = i;
    Fail("control character inside a string", "json-syntax");
    return false;
  }
  return ScanStringSlow(i, out);
}

bool JsonReader::ScanStringSlow(size_t i, absl::string_view* out) {
  scratch_.assign(buf_.data() + pos_ + 1, i - pos_ - 1);
  size_t rel = i - pos_;
  for (;;) {
    if (static_cast<int64_t>(scratch_.size()) > limits_.max_token_bytes) {
      Fail(absl::StrCat("string longer than ", limits_.max_token_bytes, " bytes"), "json-limit");
      return false;
    }
    if (Ensure(rel + 12) <= rel) {
      if (ok()) Fail("unterminated string", "json-syntax");
      return false;
    }
    i = pos_ + rel;
    char c = buf_[i];
    if (c == '"') {
      pos_ = i + 1;
      *out = scratch_;
      return true;
    }
    if (static_cast<unsigned char>(c) < 0x20) {
      Fail("control character inside a string", "json-syntax");
      return false;
    }
    if (c != '\\') {
      scratch_.push_back(c);
      ++rel;
      continue;
    }
    if (i + 1 >= end_) {
      Fail("unterminated string", "json-syntax");
      return false;
    }
    char e = buf_[i + 1];
    rel += 2;
    switch (e) {
      case '"': scratch_.push_back('"'); break;
      case '\\': scratch_.push_back('\\'); break;
      case '/': scratch_.push_back('/'); break;
      case 'b': scratch_.push_back('\b'); break;
      case 'f': scratch_.push_back('\f'); break;
      case 'n': scratch_.push_back('\n'); break;
      case 'r': scratch_.push_back('\r'); break;
      case 't': scratch_.push_back('\t'); break;
      case 'u': {
        auto hex4 = [&](size_t at, uint32_t* v) {
          if (at + 4 > end_) return false;
          uint32_t x = 0;
          for (size_t k = 0; k < 4; ++k) {
            int h = HexValue(buf_[at + k]);
            if (h < 0) return false;
            x = x * 16 + static_cast<uint32_t>(h);
          }
          *v = x;
          return true;
        };
        uint32_t cp = 0;
        if (!hex4(i + 2, &cp)) {
          Fail("bad \\u escape", "json-syntax");
          return false;
        }
        rel += 4;
        if (cp >= 0xD800 && cp < 0xDC00) {
          Ensure(rel + 6);
          i = pos_ + rel;
          uint32_t lo = 0;
          if (i + 6 <= end_ && buf_[i] == '\\' && buf_[i + 1] == 'u' && hex4(i + 2, &lo) &&
              lo >= 0xDC00 && lo < 0xE000) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            rel += 6;
          } else {
            cp = 0xFFFD;  // lone surrogate
          }
        } else if (cp >= 0xDC00 && cp < 0xE000) {
          cp = 0xFFFD;
        }
        AppendUtf8(cp, &scratch_);
        break;
      }
      default:
        Fail(absl::StrCat("bad escape '\\", PrintableText(absl::string_view(&e, 1)), "'"),
             "json-syntax");
        return false;
    }
  }
}

bool JsonReader::ReadString(absl::string_view* out) {
  if (!ok()) return false;
  if (Peek() != JsonKind::kString) {
    if (ok()) Fail("expected a string", "json-schema");
    return false;
  }
  return ReadStringRaw(out);
}

bool JsonReader::ReadLiteral(absl::string_view word) {
  if (Ensure(word.size()) < word.size() ||
      absl::string_view(buf_.data() + pos_, word.size()) != word) {
    Fail(absl::StrCat("bad literal, expected '", word, "'"), "json-syntax");
    return false;
  }
  pos_ += word.size();
  return true;
}

bool JsonReader::ReadNumberToken(absl::string_view* text) {
  size_t i = pos_;
  for (;;) {
    while (i < end_) {
      char c = buf_[i];
      if (!(IsDigit(c) || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' ||
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) {
        break;
      }
      ++i;
    }
    if (i < end_ || eof_) break;
    size_t rel = i - pos_;
    if (static_cast<int64_t>(rel) > 1024) {
      Fail("number longer than 1024 characters", "json-limit");
      return false;
    }
    Ensure(rel + 64);
    i = pos_ + rel;
    if (i >= end_) break;
  }
  *text = absl::string_view(buf_.data() + pos_, i - pos_);
  return true;
}

bool JsonReader::ReadNumber(JsonNumber* out) {
  if (!ok()) return false;
  if (Peek() != JsonKind::kNumber) {
    if (ok()) Fail("expected a number", "json-schema");
    return false;
  }
  absl::string_view t;
  if (!ReadNumberToken(&t)) return false;
  *out = JsonNumber{};
  out->text = t;
  if (t == "NaN" || t == "Infinity" || t == "-Infinity") {
    pos_ += t.size();
    return true;
  }
  // Grammar: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
  size_t k = 0;
  bool neg = false;
  if (k < t.size() && t[k] == '-') {
    neg = true;
    ++k;
  }
  size_t int_start = k;
  while (k < t.size() && IsDigit(t[k])) ++k;
  size_t int_digits = k - int_start;
  bool bad = int_digits == 0 || (int_digits > 1 && t[int_start] == '0');
  bool integral = true;
  if (!bad && k < t.size() && t[k] == '.') {
    integral = false;
    size_t f = ++k;
    while (k < t.size() && IsDigit(t[k])) ++k;
    bad = k == f;
  }
  if (!bad && k < t.size() && (t[k] == 'e' || t[k] == 'E')) {
    integral = false;
    ++k;
    if (k < t.size() && (t[k] == '+' || t[k] == '-')) ++k;
    size_t e = k;
    while (k < t.size() && IsDigit(t[k])) ++k;
    bad = k == e;
  }
  if (bad || k != t.size()) {
    Fail(absl::StrCat("malformed number '", PrintableText(t, 40), "'"), "json-syntax");
    return false;
  }
  if (integral) {
    // Accumulate negatively so that INT64_MIN fits.
    int64_t v = 0;
    bool overflow = false;
    for (size_t d = int_start; d < t.size(); ++d) {
      int digit = t[d] - '0';
      if (v < (std::numeric_limits<int64_t>::min() + digit) / 10) {
        overflow = true;
        break;
      }
      v = v * 10 - digit;
    }
    if (!overflow && (neg || v != std::numeric_limits<int64_t>::min())) {
      out->is_int = true;
      out->int_value = neg ? v : -v;
    }
  }
  pos_ += t.size();
  return true;
}

bool JsonReader::ReadInt64(int64_t* out) {
  JsonNumber n;
  if (!ReadNumber(&n)) return false;
  if (!n.is_int) {
    pos_ -= n.text.size();
    Fail(absl::StrCat("expected an integer in int64 range, found ", PrintableText(n.text, 40)),
         "json-schema");
    return false;
  }
  *out = n.int_value;
  return true;
}

bool JsonReader::ReadDouble(double* out) {
  JsonNumber n;
  if (!ReadNumber(&n)) return false;
  *out = n.ToDouble();
  return true;
}

bool JsonReader::ReadBool(bool* out) {
  JsonKind k = Peek();
  if (k == JsonKind::kTrue) {
    *out = true;
    return ReadLiteral("true");
  }
  if (k == JsonKind::kFalse) {
    *out = false;
    return ReadLiteral("false");
  }
  if (ok()) Fail("expected true or false", "json-schema");
  return false;
}

bool JsonReader::Skip() {
  if (!ok()) return false;
  const size_t base = stack_.size();
  absl::string_view ignored;
  auto start_value = [&]() -> bool {
    switch (Peek()) {
      case JsonKind::kObject: return BeginObject();
      case JsonKind::kArray: return BeginArray();
      case JsonKind::kString: return ReadStringRaw(&ignored);
      case JsonKind::kNumber: {
        JsonNumber n;
        return ReadNumber(&n);
      }
      case JsonKind::kTrue: return ReadLiteral("true");
      case JsonKind::kFalse: return ReadLiteral("false");
      case JsonKind::kNull: return ReadLiteral("null");
      case JsonKind::kEnd:
        if (ok()) Fail("unexpected end of input, expected a value", "json-syntax");
        return false;
    }
    return false;
  };
  if (!start_value()) return false;
  while (stack_.size() > base) {
    bool more = stack_.back().array ? NextElement() : NextKey(&ignored);
    if (!ok()) return false;
    if (more && !start_value()) return false;
  }
  return ok();
}

bool JsonReader::AtEndOfInput() {
  if (!ok()) return false;
  if (SkipWhitespace()) {
    Fail("unexpected content after the document", "json-syntax");
    return false;
  }
  return ok();
}

}  // namespace swapplan::import_internal
