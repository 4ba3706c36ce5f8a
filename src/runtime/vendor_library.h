// VendorLibrary: a vendor runtime (libcudart.so, libascendcl.so) opened at
// run time with dlopen, its functions found with dlsym. The runtime shim
// links no vendor library at build time (tests/runtime/
// exported_symbols_test.py checks `readelf -d`), so it builds and loads on
// any machine; what is missing on this one is a clear error naming the
// library and the symbol, not a link or load failure of the whole process.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(VendorLibrary lib,
//       VendorLibrary::Open({"libcudart.so", "libcudart.so.13"}, "the CUDA runtime"));
//   cudaError_t (*set_device)(int) = nullptr;
//   SWAPPLAN_RETURN_IF_ERROR(lib.Bind("cudaSetDevice", &set_device));
//
// The handle is opened RTLD_NOW | RTLD_LOCAL (nothing of it becomes visible
// to other libraries) and closed with the object (a process that loaded the
// same library itself, e.g. PyTorch's libcudart, keeps it loaded: dlopen
// counts references and returns the loaded copy for the same soname).
//
// Threading: Open and Bind from one thread; a bound function pointer may be
// called from any. Open costs one dlopen per candidate tried.
#ifndef SWAPPLAN_SRC_RUNTIME_VENDOR_LIBRARY_H_
#define SWAPPLAN_SRC_RUNTIME_VENDOR_LIBRARY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace swapplan::runtime::internal {

class VendorLibrary {
 public:
  // Tries each candidate (a path, or a name the dynamic loader searches) in
  // order and keeps the first that loads. Unavailable naming `what`, every
  // candidate and the loader's message for each when none loads.
  static absl::StatusOr<VendorLibrary> Open(const std::vector<std::string>& candidates,
                                            absl::string_view what);

  VendorLibrary(VendorLibrary&& o) noexcept;
  VendorLibrary& operator=(VendorLibrary&& o) noexcept;
  VendorLibrary(const VendorLibrary&) = delete;
  VendorLibrary& operator=(const VendorLibrary&) = delete;
  ~VendorLibrary();

  // The address of `name`; Unavailable "<library> (<path>): symbol <name>
  // not found (<dlerror>)" when the library lacks it.
  absl::StatusOr<void*> Symbol(const char* name) const;
  // nullptr when absent (optional functions).
  void* SymbolOrNull(const char* name) const;

  // Binds *fn to `name` (a function of type F); the Symbol error otherwise.
  template <typename F>
  absl::Status Bind(const char* name, F* fn) const {
    absl::StatusOr<void*> p = Symbol(name);
    if (!p.ok()) return p.status();
    *fn = reinterpret_cast<F>(*p);
    return absl::OkStatus();
  }
  // Binds *fn to `name` when present, leaves it nullptr otherwise.
  template <typename F>
  void BindOptional(const char* name, F* fn) const {
    *fn = reinterpret_cast<F>(SymbolOrNull(name));
  }

  // The name it was opened by and the file the loader resolved it to.
  const std::string& name() const { return name_; }
  const std::string& path() const { return path_; }

 private:
  VendorLibrary() = default;
  void* handle_ = nullptr;
  std::string name_;
  std::string path_;
};

}  // namespace swapplan::runtime::internal

#endif  // SWAPPLAN_SRC_RUNTIME_VENDOR_LIBRARY_H_
