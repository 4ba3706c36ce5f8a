// JsonReader: a streaming pull parser for the JSON documents the importers
// read (PyTorch execution traces, Kineto traces, memory-snapshot and memory-
// timeline dumps). It never holds the document: it keeps one buffer of input
// (grown only for a single string or number longer than the buffer, up to
// JsonLimits::max_token_bytes) and the path from the root to the current
// value, so a 1 GB trace is read in constant memory.
//
//   JsonReader r(stream, "trace.json");
//   if (r.BeginObject()) {
//     absl::string_view key;
//     while (r.NextKey(&key)) {
//       if (key == "nodes") { r.BeginArray(); while (r.NextElement()) ParseNode(r); }
//       else r.Skip();
//     }
//   }
//   SWAPPLAN_RETURN_IF_ERROR(r.status());
//
// Errors are sticky: after the first one every call returns false / 0 and
// status() names the source, the byte offset, the JSON path and a rule tag
// ([json-syntax], [json-limit], or the tag the caller passed to Fail()).
// Views returned by NextKey / ReadString / ReadNumberToken stay valid until
// the next call on the reader.
//
// Threading: one reader per thread. Complexity: O(input bytes); memory
// O(buffer + depth × key length).
#ifndef SWAPPLAN_SRC_IMPORT_JSON_READER_H_
#define SWAPPLAN_SRC_IMPORT_JSON_READER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <google/protobuf/io/zero_copy_stream.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace swapplan::import_internal {

// `s` (at most `max` bytes of it) with every byte that is not printable
// ASCII written as \xNN, for messages that quote input.
std::string PrintableText(absl::string_view s, size_t max = 64);

struct JsonLimits {
  // Longest single string or number token.
  int64_t max_token_bytes = int64_t{64} << 20;
  // Deepest nesting of arrays and objects.
  int32_t max_depth = 256;
};

enum class JsonKind : uint8_t { kObject, kArray, kString, kNumber, kTrue, kFalse, kNull, kEnd };

// A JSON number as text plus its integer value when it is an integer that
// fits in int64.
struct JsonNumber {
  absl::string_view text;
  bool is_int = false;
  int64_t int_value = 0;
  // The value as a double (exact for integers up to 2^53).
  double ToDouble() const;
};

class JsonReader {
 public:
  // `in` must outlive the reader; `stream_error` (optional) tells a clean end
  // of input from a read or decompression error.
  JsonReader(google::protobuf::io::ZeroCopyInputStream* in, std::string source,
             JsonLimits limits = {}, std::function<absl::Status()> stream_error = nullptr);

  // Kind of the next value (kEnd at the end of input or after an error).
  JsonKind Peek();
  bool BeginObject();
  // Next key of the current object; false at its end (consumed) or on error.
  bool NextKey(absl::string_view* key);
  bool BeginArray();
  // True when another element follows; false at the array's end (consumed).
  bool NextElement();
  // Scalars. Type mismatches fail with [json-schema] unless noted.
  bool ReadString(absl::string_view* out);
  bool ReadNumber(JsonNumber* out);
  // An integer; a number with a fraction or out of int64 range fails.
  bool ReadInt64(int64_t* out);
  bool ReadDouble(double* out);
  bool ReadBool(bool* out);
  // Skips the next value, whatever it is.
  bool Skip();
  // True after the root value when only whitespace remains.
  bool AtEndOfInput();

  // Records an error at the current position (first one wins).
  void Fail(absl::string_view what, absl::string_view rule);
  bool ok() const { return status_.ok(); }
  const absl::Status& status() const { return status_; }

  // Byte offset of the next unread byte (decompressed input).
  int64_t offset() const { return consumed_ + static_cast<int64_t>(pos_); }
  // "$.nodes[17].inputs" for the value being read.
  std::string Path() const;
  const std::string& source() const { return source_; }

 private:
  struct Frame {
    bool array = false;
    bool first = true;
    int64_t index = -1;
    // The current key: a view into buf_ (moved into `stored` before buf_ is
    // compacted, so it stays valid for messages) or into `stored`.
    absl::string_view key;
    std::string stored;
  };

  // Ensures at least `n` bytes are buffered unless the input ends first.
  // Returns the number available (<= n only at the end of input).
  size_t Ensure(size_t n);
  // False at end of input. The common case (a token right here) is inline.
  bool SkipWhitespace() {
    if (pos_ < end_ && !IsWs(buf_[pos_])) return true;
    return SkipWhitespaceSlow();
  }
  static bool IsWs(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
  bool SkipWhitespaceSlow();
  // Moves the keys that point into buf_ into their frames' own storage.
  void DetachKeys();
  bool Expect(char c);
  bool ReadStringRaw(absl::string_view* out);
  bool ScanStringSlow(size_t start, absl::string_view* out);
  bool ReadLiteral(absl::string_view word);
  bool ReadNumberToken(absl::string_view* text);
  bool CheckDepth();

  google::protobuf::io::ZeroCopyInputStream* in_;
  std::string source_;
  JsonLimits limits_;
  std::function<absl::Status()> stream_error_;
  std::vector<char> buf_;
  size_t pos_ = 0;
  size_t end_ = 0;
  int64_t consumed_ = 0;  // bytes dropped from the front of buf_
  bool eof_ = false;
  std::vector<Frame> stack_;
  std::string scratch_;  // unescaped strings
  absl::Status status_;
};

}  // namespace swapplan::import_internal

#endif  // SWAPPLAN_SRC_IMPORT_JSON_READER_H_
