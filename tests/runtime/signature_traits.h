// Compares a vendor function's declared type with a table's function type
// (src/runtime/cuda_api.h, acl_api.h), for the compile-only signature
// checks. Enums (the tables pass them as int), integers of either
// signedness and pointers to them compare by size: an enum parameter and an
// int parameter of the same position are passed alike; everything else
// (pointers to the vendor's own handle types, size_t, void*, const char*)
// must be the very same type.
//
//   static_assert(kSameSignature<decltype(&::cudaFreeAsync), cuda::FreeAsyncFn>);
#ifndef SWAPPLAN_TESTS_RUNTIME_SIGNATURE_TRAITS_H_
#define SWAPPLAN_TESTS_RUNTIME_SIGNATURE_TRAITS_H_

#include <tuple>
#include <type_traits>

namespace swapplan::runtime::testing {

template <typename T, typename = void>
struct Normalized {
  using type = T;
};
template <typename T>
struct Normalized<T, std::enable_if_t<std::is_enum_v<T>>> {
  using type = std::make_signed_t<std::underlying_type_t<T>>;
};
template <typename T>
struct Normalized<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool> &&
                                      !std::is_same_v<std::remove_cv_t<T>, char>>> {
  using type = std::make_signed_t<T>;
};
template <typename T>
struct Normalized<T*, void> {
  using type = typename Normalized<T>::type*;
};

template <typename F>
struct Signature;
template <typename R, typename... A>
struct Signature<R (*)(A...)> {
  using type = std::tuple<typename Normalized<R>::type, typename Normalized<A>::type...>;
};

template <typename Vendor, typename Table>
inline constexpr bool kSameSignature =
    std::is_same_v<typename Signature<Vendor>::type, typename Signature<Table>::type>;

}  // namespace swapplan::runtime::testing

#endif  // SWAPPLAN_TESTS_RUNTIME_SIGNATURE_TRAITS_H_
