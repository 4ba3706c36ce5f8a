// A vendor library opened with dlopen. See vendor_library.h.
#include "runtime/vendor_library.h"

#include <dlfcn.h>
#include <link.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "swapplan/util/error.h"

namespace swapplan::runtime::internal {

absl::StatusOr<VendorLibrary> VendorLibrary::Open(const std::vector<std::string>& candidates,
                                                  absl::string_view what) {
  std::vector<std::string> tried;
  for (const std::string& name : candidates) {
    if (name.empty()) continue;
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      tried.push_back(absl::StrCat(name, " (", why != nullptr ? why : "not loadable", ")"));
      continue;
    }
    VendorLibrary lib;
    lib.handle_ = handle;
    lib.name_ = name;
    lib.path_ = name;
    struct link_map* map = nullptr;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
        map->l_name[0] != '\0') {
      lib.path_ = map->l_name;
    }
    return lib;
  }
  return Error(ErrorKind::kUnavailable,
               absl::StrCat("cannot load ", what, ": tried ",
                            tried.empty() ? std::string("no library") : absl::StrJoin(tried, "; ")));
}

VendorLibrary::VendorLibrary(VendorLibrary&& o) noexcept
    : handle_(std::exchange(o.handle_, nullptr)),
      name_(std::move(o.name_)),
      path_(std::move(o.path_)) {}

VendorLibrary& VendorLibrary::operator=(VendorLibrary&& o) noexcept {
  if (this != &o) {
    if (handle_ != nullptr) dlclose(handle_);
    handle_ = std::exchange(o.handle_, nullptr);
    name_ = std::move(o.name_);
    path_ = std::move(o.path_);
  }
  return *this;
}

VendorLibrary::~VendorLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

absl::StatusOr<void*> VendorLibrary::Symbol(const char* name) const {
  dlerror();
  void* p = dlsym(handle_, name);
  if (p == nullptr) {
    const char* why = dlerror();
    return Error(ErrorKind::kUnavailable,
                 absl::StrCat(name_, " (", path_, "): symbol ", name, " not found",
                              why != nullptr ? absl::StrCat(" (", why, ")") : std::string()));
  }
  return p;
}

void* VendorLibrary::SymbolOrNull(const char* name) const {
  dlerror();
  void* p = dlsym(handle_, name);
  dlerror();
  return p;
}

}  // namespace swapplan::runtime::internal
