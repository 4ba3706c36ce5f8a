// ImportInput: the byte stream an importer reads, with the wrappers peeled
// off (gzip, possibly several members; a tar archive, of which the first
// member whose content is a supported format is taken) and the first bytes of
// the content kept aside for format detection. Decompressed bytes are
// counted and capped (ImportOptions::max_decompressed_bytes).
//
//   SWAPPLAN_ASSIGN_OR_RETURN(auto in, ImportInput::OpenFile(path, opts, detect));
//   DetectContent(in->head(), in->head_is_all());   // which importer
//   JsonReader r(in->stream(), in->source(), {}, [&] { return in->StreamError(); });
//
// Threading: one input per thread. Memory: the head (64 KiB) and the stream
// buffers (about 2 MiB), whatever the input size.
#ifndef SWAPPLAN_SRC_IMPORT_INPUT_H_
#define SWAPPLAN_SRC_IMPORT_INPUT_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <google/protobuf/io/zero_copy_stream.h>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "swapplan/import/import.h"

namespace swapplan::import_internal {

inline constexpr size_t kHeadBytes = size_t{64} << 10;

// Decides whether the content starting with `head` is a format worth
// selecting inside a tar archive (the registry's detection).
using ContentProbe = std::function<bool(absl::string_view head, bool head_is_all)>;

class ImportInput {
 public:
  static absl::StatusOr<std::unique_ptr<ImportInput>> OpenFile(const std::string& path,
                                                               const ImportOptions& options,
                                                               const ContentProbe& probe);
  static absl::StatusOr<std::unique_ptr<ImportInput>> OpenMemory(absl::string_view bytes,
                                                                 const std::string& source,
                                                                 const ImportOptions& options,
                                                                 const ContentProbe& probe);
  // Use OpenFile / OpenMemory; the token keeps construction to them.
  struct Token {
   private:
    friend class ImportInput;
    Token() = default;
  };
  explicit ImportInput(Token);
  ~ImportInput();

  // The content (after the wrappers), from its first byte.
  google::protobuf::io::ZeroCopyInputStream* stream();
  // First bytes of the content (up to kHeadBytes).
  absl::string_view head() const { return head_; }
  // True when head() is the whole content.
  bool head_is_all() const { return head_is_all_; }
  // "gzip", "tar member foo.json", in the order they were peeled.
  const std::vector<std::string>& wrappers() const { return wrappers_; }
  const std::string& source() const { return source_; }
  // Read, decompression or cap error so far (OK at a clean end).
  absl::Status StreamError() const;
  // A callable for readers that take one.
  std::function<absl::Status()> ErrorFn() {
    return [this] { return StreamError(); };
  }

 private:
  class HeadStream;
  class CountingStream;
  absl::Status Peel(const ImportOptions& options, const ContentProbe& probe);
  absl::Status PushGzipIfNeeded();
  absl::Status FillHead();
  google::protobuf::io::ZeroCopyInputStream* top();

  std::string source_;
  int fd_ = -1;
  std::vector<std::unique_ptr<google::protobuf::io::ZeroCopyInputStream>> layers_;
  std::vector<std::function<absl::Status()>> errors_;
  std::unique_ptr<HeadStream> head_stream_;
  std::string head_;
  bool head_is_all_ = false;
  std::vector<std::string> wrappers_;
};

}  // namespace swapplan::import_internal

#endif  // SWAPPLAN_SRC_IMPORT_INPUT_H_
