// The reader registry: format names, detection, dispatch.
#include <algorithm>
#include <cmath>
#include <new>
#include <functional>
#include <string>
#include <vector>

#include <google/protobuf/io/zero_copy_stream.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "import/formats.h"
#include "import/input.h"
#include "swapplan/import/import.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/error.h"
#include "swapplan/util/file.h"
#include "swapplan/util/units.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {

namespace internal {
// Defined in src/trace/binary_io.cc.
absl::StatusOr<Trace> ReadBinaryFromStream(google::protobuf::io::ZeroCopyInputStream* in,
                                           const std::string& source,
                                           std::function<absl::Status()> stream_error);
}  // namespace internal

namespace import_internal {
namespace {

using ImportFn = absl::StatusOr<Trace> (*)(ImportInput&, const ImportOptions&);

struct Entry {
  absl::string_view name;
  absl::string_view description;
  ImportFn fn;
};

const Entry kEntries[] = {
    {kFormatSwapplan, "swapplan trace (binary SWPLTRC1 or JSON)", &ImportSwapplan},
    {kFormatEtJson, "PyTorch execution trace JSON (schemas 1.0.1 - 1.1.x, chakra suffix too)",
     &ImportEtJson},
    {kFormatChakraEt, "Chakra execution trace protobuf (.et)", &ImportChakraEt},
    {kFormatKineto, "Kineto / torch.profiler Chrome trace JSON with [memory] events",
     &ImportKineto},
    {kFormatSnapshot, "torch.cuda.memory._snapshot() pickle or JSON dump", &ImportSnapshot},
    {kFormatTimeline, "torch.profiler memory timeline raw export (export_memory_timeline_raw)",
     &ImportTimeline},
};

const Entry* FindEntry(absl::string_view name) {
  for (const Entry& e : kEntries) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

std::string FormatList() {
  std::vector<std::string> names;
  for (const Entry& e : kEntries) names.emplace_back(e.name);
  return absl::StrJoin(names, ", ");
}

ContentProbe MakeProbe(const ImportOptions& options) {
  std::string forced = options.format;
  return [forced](absl::string_view head, bool all) {
    ContentGuess g = DetectContent(head, all);
    return forced.empty() ? !g.format.empty() : (g.format == forced || g.format.empty());
  };
}

absl::StatusOr<Trace> Dispatch(ImportInput& in, const ImportOptions& options) {
  std::string format = options.format;
  if (format.empty()) {
    ContentGuess g = DetectContent(in.head(), in.head_is_all());
    if (g.format.empty()) {
      std::string peeled = in.wrappers().empty()
                               ? ""
                               : absl::StrCat(" (after ", absl::StrJoin(in.wrappers(), ", "), ")");
      return absl::InvalidArgumentError(absl::StrCat(
          in.source(), ": unknown trace format: byte 0", peeled, ": ", g.evidence,
          "; supported formats: ", FormatList(), "; force one with --trace-format NAME",
          " [unknown-format]"));
    }
    format = g.format;
  }
  const Entry* e = FindEntry(format);
  if (e == nullptr) {
    return Error(ErrorKind::kUsage, absl::StrCat("unknown trace format '", format,
                                                 "'; supported formats: ", FormatList()));
  }
  if (!options.kineto_path.empty() && format != kFormatEtJson && format != kFormatChakraEt) {
    return Error(ErrorKind::kUsage,
                 absl::StrCat(in.source(), " is a ", format,
                              " trace; a Kineto trace (--kineto) pairs only with an execution "
                              "trace (et-json or chakra-et)"));
  }
  return e->fn(in, options);
}

}  // namespace

absl::StatusOr<Trace> ImportSwapplan(ImportInput& in, const ImportOptions& options) {
  if (absl::StartsWith(in.head(), kTraceMagic.substr(0, std::min(in.head().size(), kTraceMagic.size())))) {
    return internal::ReadBinaryFromStream(in.stream(), in.source(), in.ErrorFn());
  }
  std::string text;
  const void* data = nullptr;
  int size = 0;
  // The JSON form is parsed whole into a document about ten times its size:
  // refuse it before more than kDefaultMaxReadAllBytes is buffered (issue 19:
  // a small .json.gz that inflates to gigabytes must not end in bad_alloc).
  const int64_t max_json_bytes = std::min(options.max_decompressed_bytes, kDefaultMaxReadAllBytes);
  while (in.stream()->Next(&data, &size)) {
    if (static_cast<int64_t>(size) > max_json_bytes - static_cast<int64_t>(text.size())) {
      return WithRule(Error(ErrorKind::kResourceLimit,
                            absl::StrCat(in.source(), ": ",
                                         in.wrappers().empty() ? "the file"
                                                               : "the decompressed content",
                                         " exceeds ", FormatBytes(max_json_bytes),
                                         ", the limit for inputs read whole (JSON traces, "
                                         "policies, baselines) [read-limit]")),
                      "read-limit");
    }
    text.append(static_cast<const char*>(data), size);
  }
  SWAPPLAN_RETURN_IF_ERROR(in.StreamError());
  return ParseTraceJson(text, in.source());
}

}  // namespace import_internal

DeviceModel ImportOptions::DefaultRooflineDevice() {
  DeviceModel d;
  d.name = "roofline-default";
  d.peak_flops_per_s = 312e12;              // A100 dense BF16/FP16 tensor cores
  d.memory_bandwidth_bytes_per_s = 1.555e12;  // A100 40 GB HBM2
  return d;
}

absl::Status ImportOptions::Validate() const {
  if (!format.empty() && import_internal::FindEntry(format) == nullptr) {
    return Error(ErrorKind::kUsage, absl::StrCat("import options: unknown format '", format,
                                                 "'; supported formats: ",
                                                 import_internal::FormatList()));
  }
  for (auto [name, v] : {std::pair<const char*, double>{"roofline_device.peak_flops_per_s",
                                                        roofline_device.peak_flops_per_s},
                         {"roofline_device.memory_bandwidth_bytes_per_s",
                          roofline_device.memory_bandwidth_bytes_per_s}}) {
    if (!(v > 0) || !std::isfinite(v)) {
      return Error(ErrorKind::kUsage,
                   absl::StrCat("import options: ", name, " is ", v, "; must be positive and finite"));
    }
  }
  if (max_decompressed_bytes < 1 || max_json_token_bytes < 1) {
    return Error(ErrorKind::kUsage, "import options: limits must be >= 1");
  }
  return absl::OkStatus();
}

const std::vector<FormatInfo>& SupportedFormats() {
  static const std::vector<FormatInfo> kFormats = [] {
    std::vector<FormatInfo> v;
    for (const import_internal::Entry& e : import_internal::kEntries) {
      v.push_back({std::string(e.name), std::string(e.description)});
    }
    return v;
  }();
  return kFormats;
}

absl::StatusOr<Detection> DetectTraceFormat(const std::string& path, const ImportOptions& options) {
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  ImportOptions detect = options;
  detect.format.clear();
  SWAPPLAN_ASSIGN_OR_RETURN(
      std::unique_ptr<import_internal::ImportInput> in,
      import_internal::ImportInput::OpenFile(path, detect, import_internal::MakeProbe(detect)));
  import_internal::ContentGuess g = import_internal::DetectContent(in->head(), in->head_is_all());
  return Detection{in->wrappers(), g.format, g.evidence};
}

absl::StatusOr<Trace> ReadAnyTrace(const std::string& path, const ImportOptions& options) {
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  SWAPPLAN_ASSIGN_OR_RETURN(
      std::unique_ptr<import_internal::ImportInput> in,
      import_internal::ImportInput::OpenFile(path, options, import_internal::MakeProbe(options)));
  // Memory is the one resource the readers' checks cannot bound (a valid
  // trace may simply be too large for this machine): running out is an
  // input error naming the file, not a crash.
  try {
    return import_internal::Dispatch(*in, options);
  } catch (const std::bad_alloc&) {
    return WithRule(Error(ErrorKind::kResourceLimit,
                          absl::StrCat(path, ": out of memory while reading the trace "
                                             "[out-of-memory]")),
                    "out-of-memory");
  }
}

absl::StatusOr<Trace> ImportFromMemory(absl::string_view bytes, const std::string& source,
                                       const ImportOptions& options) {
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<import_internal::ImportInput> in,
                            import_internal::ImportInput::OpenMemory(
                                bytes, source, options, import_internal::MakeProbe(options)));
  return import_internal::Dispatch(*in, options);
}

}  // namespace swapplan
