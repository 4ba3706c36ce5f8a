#include "import/unpickle.h"

#include <cstring>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace swapplan::import_internal {
namespace {

namespace pbio = google::protobuf::io;

class Unpickler {
 public:
  Unpickler(pbio::ZeroCopyInputStream* in, const std::string& source,
            std::function<absl::Status()> stream_error, ValueTree* tree)
      : in_(in), source_(source), stream_error_(std::move(stream_error)), t_(*tree) {}

  absl::Status Run(uint32_t* root) {
    for (;;) {
      op_offset_ = offset_;
      uint8_t op = 0;
      if (!Byte(&op)) {
        Truncated("the pickle ends before its STOP opcode");
        return error_;
      }
      if (!Step(op)) break;
      if (!error_.ok()) return error_;
    }
    if (!error_.ok()) return error_;
    if (stack_.size() != 1 || !marks_.empty()) {
      Schema(absl::StrCat("STOP with ", stack_.size(), " values on the stack"));
      return error_;
    }
    *root = stack_.back();
    return absl::OkStatus();
  }

 private:
  // --- input ---------------------------------------------------------------
  bool Fill() {
    while (pos_ >= size_) {
      const void* d = nullptr;
      int n = 0;
      if (!in_->Next(&d, &n)) return false;
      data_ = static_cast<const char*>(d);
      size_ = static_cast<size_t>(n);
      pos_ = 0;
    }
    return true;
  }
  bool Byte(uint8_t* b) {
    if (!Fill()) return false;
    *b = static_cast<uint8_t>(data_[pos_++]);
    ++offset_;
    return true;
  }
  // Appends n bytes as they arrive; false when the input ends first.
  bool Bytes(uint64_t n, std::string* out) {
    out->clear();
    while (out->size() < n) {
      if (!Fill()) return false;
      size_t take = static_cast<size_t>(std::min<uint64_t>(n - out->size(), size_ - pos_));
      out->append(data_ + pos_, take);
      pos_ += take;
      offset_ += static_cast<int64_t>(take);
    }
    return true;
  }
  bool SkipBytes(uint64_t n) {
    while (n > 0) {
      if (!Fill()) return false;
      size_t take = static_cast<size_t>(std::min<uint64_t>(n, size_ - pos_));
      pos_ += take;
      offset_ += static_cast<int64_t>(take);
      n -= take;
    }
    return true;
  }
  bool Le(int bytes, uint64_t* v) {
    *v = 0;
    for (int k = 0; k < bytes; ++k) {
      uint8_t b = 0;
      if (!Byte(&b)) return false;
      *v |= static_cast<uint64_t>(b) << (8 * k);
    }
    return true;
  }

  // --- errors --------------------------------------------------------------
  // Each records the first error and returns false.
  bool Err(absl::string_view what, absl::string_view rule) {
    if (error_.ok()) {
      error_ = absl::InvalidArgumentError(
          absl::StrCat(source_, ": pickle byte ", op_offset_, ": ", what, " [", rule, "]"));
    }
    return false;
  }
  bool Truncated(absl::string_view what) {
    if (stream_error_ && error_.ok()) {
      absl::Status s = stream_error_();
      if (!s.ok()) {
        error_ = s;
        return false;
      }
    }
    return Err(what, "pickle-truncated");
  }
  bool Schema(absl::string_view what) { return Err(what, "pickle-schema"); }
  bool Refused(uint8_t op, absl::string_view name) {
    return Err(absl::StrFormat("opcode 0x%02x (%s) is refused: snapshot pickles hold plain data "
                               "only, and this unpickler never imports or calls anything",
                               op, name),
               "pickle-opcode");
  }

  // --- stack ---------------------------------------------------------------
  bool Push(uint32_t v) {
    if (v == kNoValue) {
      Err("the pickle holds more values than the importer's budget", "pickle-schema");
      return false;
    }
    stack_.push_back(v);
    return true;
  }
  bool Pop(uint32_t* v) {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) {
      Schema("stack underflow");
      return false;
    }
    *v = stack_.back();
    stack_.pop_back();
    return true;
  }
  bool Top(uint32_t* v) {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) {
      Schema("stack underflow");
      return false;
    }
    *v = stack_.back();
    return true;
  }
  // Items above the last MARK (and removes the mark).
  bool PopMark(std::vector<uint32_t>* items) {
    if (marks_.empty()) {
      Schema("no MARK to pop to");
      return false;
    }
    size_t m = marks_.back();
    marks_.pop_back();
    items->assign(stack_.begin() + static_cast<long>(m), stack_.end());
    stack_.resize(m);
    return true;
  }
  bool Container(uint32_t c, ValueKind kind) {
    if (t_.Kind(c) != kind) {
      Schema(kind == ValueKind::kList ? "APPEND to something that is not a list"
                                      : "SETITEM on something that is not a dict");
      return false;
    }
    return true;
  }
  bool String(uint64_t len, ValueKind kind) {
    if (!Bytes(len, &buf_)) {
      if (!error_.ok()) return false;
      if (stream_error_) {
        absl::Status st = stream_error_();
        if (!st.ok()) {
          error_ = st;
          return false;
        }
      }
      return Err(absl::StrCat("a string declares ", len, " bytes; the input ends first"),
                 "declared-size");
    }
    return Push(t_.AddString(buf_, kind));
  }

  // Executes one opcode; false after STOP or an error.
  bool Step(uint8_t op) {
    uint64_t n = 0;
    uint32_t v = 0, c = 0;
    switch (op) {
      case 0x80: {  // PROTO
        uint8_t p = 0;
        if (!Byte(&p)) return Truncated("truncated PROTO");
        if (p < 2 || p > 5) return Err(absl::StrCat("pickle protocol ", p, " is not supported (2-5)"), "pickle-opcode");
        return true;
      }
      case 0x95:  // FRAME: a length hint only
        if (!Le(8, &n)) return Truncated("truncated FRAME");
        return true;
      case '.':  // STOP
        return false;
      case 'N': return Push(t_.AddNone());
      case 0x88: return Push(t_.AddBool(true));
      case 0x89: return Push(t_.AddBool(false));
      case 'K':
        if (!Le(1, &n)) return Truncated("truncated BININT1");
        return Push(t_.AddInt(static_cast<int64_t>(n)));
      case 'M':
        if (!Le(2, &n)) return Truncated("truncated BININT2");
        return Push(t_.AddInt(static_cast<int64_t>(n)));
      case 'J':
        if (!Le(4, &n)) return Truncated("truncated BININT");
        return Push(t_.AddInt(static_cast<int32_t>(static_cast<uint32_t>(n))));
      case 0x8a:    // LONG1
      case 0x8b: {  // LONG4
        if (!Le(op == 0x8a ? 1 : 4, &n)) return Truncated("truncated LONG");
        if (n > 8) {
          // Too large for int64: keep the sign only.
          if (!Bytes(n, &buf_)) return Err(absl::StrCat("a long declares ", n, " bytes; the input ends first"), "declared-size");
          bool neg = (static_cast<uint8_t>(buf_.back()) & 0x80) != 0;
          return Push(t_.AddInt(neg ? -1 : 1, /*too_large=*/true));
        }
        if (!Bytes(n, &buf_)) return Truncated("truncated LONG");
        uint64_t x = 0;
        for (size_t k = 0; k < n; ++k) x |= static_cast<uint64_t>(static_cast<uint8_t>(buf_[k])) << (8 * k);
        if (n > 0 && n < 8 && (static_cast<uint8_t>(buf_[n - 1]) & 0x80)) x |= ~uint64_t{0} << (8 * n);
        return Push(t_.AddInt(static_cast<int64_t>(x)));
      }
      case 'G': {  // BINFLOAT, big-endian
        if (!Bytes(8, &buf_)) return Truncated("truncated BINFLOAT");
        uint64_t bits = 0;
        for (int k = 0; k < 8; ++k) bits = (bits << 8) | static_cast<uint8_t>(buf_[k]);
        double d = 0;
        std::memcpy(&d, &bits, sizeof(d));
        return Push(t_.AddFloat(d));
      }
      case 0x8c:  // SHORT_BINUNICODE
      case 'U':   // SHORT_BINSTRING
        if (!Le(1, &n)) return Truncated("truncated string length");
        return String(n, ValueKind::kString);
      case 'X':  // BINUNICODE
      case 'T':  // BINSTRING
        if (!Le(4, &n)) return Truncated("truncated string length");
        return String(n, ValueKind::kString);
      case 0x8d:  // BINUNICODE8
        if (!Le(8, &n)) return Truncated("truncated string length");
        return String(n, ValueKind::kString);
      case 'C':
        if (!Le(1, &n)) return Truncated("truncated bytes length");
        return String(n, ValueKind::kBytes);
      case 'B':
        if (!Le(4, &n)) return Truncated("truncated bytes length");
        return String(n, ValueKind::kBytes);
      case 0x8e:
        if (!Le(8, &n)) return Truncated("truncated bytes length");
        return String(n, ValueKind::kBytes);
      case ']': return Push(t_.AddContainer(ValueKind::kList));
      case '}': return Push(t_.AddContainer(ValueKind::kDict));
      case ')': return Push(t_.AddContainer(ValueKind::kTuple));
      case '(':
        marks_.push_back(stack_.size());
        return true;
      case 'a':  // APPEND
        if (!Pop(&v) || !Top(&c) || !Container(c, ValueKind::kList)) return false;
        t_.Append(c, v);
        return true;
      case 'e': {  // APPENDS
        if (!PopMark(&items_) || !Top(&c) || !Container(c, ValueKind::kList)) return false;
        for (uint32_t x : items_) t_.Append(c, x);
        return true;
      }
      case 's': {  // SETITEM
        uint32_t k = 0;
        if (!Pop(&v) || !Pop(&k) || !Top(&c) || !Container(c, ValueKind::kDict)) return false;
        t_.Append(c, k);
        t_.Append(c, v);
        return true;
      }
      case 'u': {  // SETITEMS
        if (!PopMark(&items_) || !Top(&c) || !Container(c, ValueKind::kDict)) return false;
        if (items_.size() % 2 != 0) return Schema("SETITEMS with an odd number of items");
        for (uint32_t x : items_) t_.Append(c, x);
        return true;
      }
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1-3
        const size_t k = static_cast<size_t>(op - 0x84);
        if (stack_.size() < k || (!marks_.empty() && stack_.size() - k < marks_.back())) {
          return Schema("stack underflow");
        }
        uint32_t tup = t_.AddContainer(ValueKind::kTuple);
        if (tup == kNoValue) return Push(tup);
        for (size_t j = stack_.size() - k; j < stack_.size(); ++j) t_.Append(tup, stack_[j]);
        stack_.resize(stack_.size() - k);
        return Push(tup);
      }
      case 't': {  // TUPLE
        if (!PopMark(&items_)) return false;
        uint32_t tup = t_.AddContainer(ValueKind::kTuple);
        if (tup == kNoValue) return Push(tup);
        for (uint32_t x : items_) t_.Append(tup, x);
        return Push(tup);
      }
      case '0':  // POP
        return Pop(&v);
      case '1':  // POP_MARK
        return PopMark(&items_);
      case '2':  // DUP
        return Top(&v) && Push(v);
      case 0x94:  // MEMOIZE
        if (!Top(&v)) return false;
        memo_[static_cast<uint32_t>(memo_.size())] = v;
        return true;
      case 'q':
      case 'r':  // BINPUT, LONG_BINPUT
        if (!Le(op == 'q' ? 1 : 4, &n)) return Truncated("truncated PUT");
        if (!Top(&v)) return false;
        memo_[static_cast<uint32_t>(n)] = v;
        return true;
      case 'h':
      case 'j': {  // BINGET, LONG_BINGET
        if (!Le(op == 'h' ? 1 : 4, &n)) return Truncated("truncated GET");
        auto it = memo_.find(static_cast<uint32_t>(n));
        if (it == memo_.end()) return Schema(absl::StrCat("memo entry ", n, " was never stored"));
        return Push(it->second);
      }
      case 'c': return Refused(op, "GLOBAL");
      case 0x93: return Refused(op, "STACK_GLOBAL");
      case 'R': return Refused(op, "REDUCE");
      case 'b': return Refused(op, "BUILD");
      case 'i': return Refused(op, "INST");
      case 'o': return Refused(op, "OBJ");
      case 0x81: return Refused(op, "NEWOBJ");
      case 0x92: return Refused(op, "NEWOBJ_EX");
      case 0x82: case 0x83: case 0x84: return Refused(op, "EXT");
      case 'P': return Refused(op, "PERSID");
      case 'Q': return Refused(op, "BINPERSID");
      case 0x8f: case 0x90: case 0x91: return Refused(op, "set");
      case 0x96: case 0x97: case 0x98: return Refused(op, "buffer");
      default:
        return Err(absl::StrFormat("opcode 0x%02x is not one this unpickler reads (protocols 2-5 "
                                   "data opcodes only)", op),
                   "pickle-opcode")
            ;
    }
  }

  pbio::ZeroCopyInputStream* in_;
  const std::string& source_;
  std::function<absl::Status()> stream_error_;
  ValueTree& t_;
  const char* data_ = nullptr;
  size_t size_ = 0;
  size_t pos_ = 0;
  int64_t offset_ = 0;
  int64_t op_offset_ = 0;
  std::vector<uint32_t> stack_;
  std::vector<size_t> marks_;
  std::vector<uint32_t> items_;
  absl::flat_hash_map<uint32_t, uint32_t> memo_;
  std::string buf_;
  absl::Status error_;
};

}  // namespace

absl::Status SafeUnpickle(pbio::ZeroCopyInputStream* in, const std::string& source,
                          std::function<absl::Status()> stream_error, ValueTree* tree,
                          uint32_t* root) {
  Unpickler u(in, source, std::move(stream_error), tree);
  return u.Run(root);
}

}  // namespace swapplan::import_internal
