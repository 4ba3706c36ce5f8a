// Checked integer arithmetic for values derived from input: sizes, durations,
// counts and clock values read from traces, policies, baselines and flags.
// Each sum, difference, product or narrowing conversion of such values goes
// through one of these helpers, so an input whose numbers each fit in 64 bits
// but whose combination does not is refused with a message naming the record
// instead of wrapping around (undefined behaviour for signed integers).
//
// Two forms of every operation:
//
//   * bool with an out-parameter, for loops that report the failure
//     themselves (or treat it as "larger than any budget"):
//
//       int64_t total;
//       if (!CheckedAdd(a, b, &total)) return ...;
//
//   * absl::StatusOr, whose error names the record: `where` is either a
//     string or a callable returning one (built only on failure, so hot loops
//     pay nothing for the message):
//
//       SWAPPLAN_ASSIGN_OR_RETURN(int64_t bytes,
//           MulOrError(numel, itemsize, [&] { return absl::StrCat(src, ": tensor ", id); }));
//       // error: "run.trace: tensor 7: 4611686018427387904 * 4 overflows a 64-bit
//       //         integer [overflow]"  (ErrorKind::kMalformedInput, rule "overflow")
//
// Every error is Error(ErrorKind::kMalformedInput, ...) with the rule tag
// "overflow" attached (WithRule), so the CLI exits with status 2.
//
// All operations are O(1) except the sums (O(n)); none allocates unless it
// fails. Integer types only (signed or unsigned, any width), plus
// double -> integer conversions in CheckedCast / CastOrError.
#ifndef SWAPPLAN_UTIL_CHECKED_H_
#define SWAPPLAN_UTIL_CHECKED_H_

#include <cmath>
#include <concepts>
#include <cstddef>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "swapplan/util/error.h"

namespace swapplan {

// The rule tag of every overflow error.
inline constexpr absl::string_view kOverflowRule = "overflow";

// --- bool forms --------------------------------------------------------------
// Each returns true and stores the exact result in *out, or returns false
// (leaving *out unspecified) when the result does not fit in T.

template <std::integral T>
[[nodiscard]] constexpr bool CheckedAdd(T a, T b, T* out) {
  return !__builtin_add_overflow(a, b, out);
}

template <std::integral T>
[[nodiscard]] constexpr bool CheckedSub(T a, T b, T* out) {
  return !__builtin_sub_overflow(a, b, out);
}

template <std::integral T>
[[nodiscard]] constexpr bool CheckedMul(T a, T b, T* out) {
  return !__builtin_mul_overflow(a, b, out);
}

// Conversion to the integer type To: from another integer type (exact when
// the value is in range), or from a floating-point value (truncated toward
// zero, as static_cast does, when finite and in range; NaN and infinities
// fail).
template <std::integral To, typename From>
  requires std::integral<From> || std::floating_point<From>
[[nodiscard]] bool CheckedCast(From v, To* out) {
  if constexpr (std::integral<From>) {
    if (!std::in_range<To>(v)) return false;
    *out = static_cast<To>(v);
    return true;
  } else {
    if (!std::isfinite(v)) return false;
    // Powers of two are exact in every floating-point type: the valid range
    // is (min - 1, max + 1) = [min, 2^digits) after truncation.
    constexpr long double kUpper =
        static_cast<long double>(std::numeric_limits<To>::max() / 2 + 1) * 2;  // 2^digits
    constexpr long double kLower = std::is_signed_v<To>
                                       ? static_cast<long double>(std::numeric_limits<To>::min())
                                       : 0.0L;
    const long double t = std::trunc(static_cast<long double>(v));
    if (!(t >= kLower && t < kUpper)) return false;
    *out = static_cast<To>(t);
    return true;
  }
}

// Sum of `values`. On overflow returns false and, when `index` is given,
// stores the index of the element whose addition overflowed.
template <std::integral T>
[[nodiscard]] constexpr bool CheckedSum(absl::Span<const T> values, T* out,
                                        size_t* index = nullptr) {
  T total = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    if (__builtin_add_overflow(total, values[i], &total)) {
      if (index != nullptr) *index = i;
      return false;
    }
  }
  *out = total;
  return true;
}

// A running checked sum: add values one at a time, test ok() at the end
// (or after each Add). After the first overflow the sum stays failed and
// failed_at() says which Add (0-based) overflowed.
//
//   CheckedAccumulator<int64_t> total;
//   for (const Op& op : ops) total.Add(op.duration_ns);
//   if (!total.ok()) return OverflowError(where_of(total.failed_at()), "...");
template <std::integral T>
class CheckedAccumulator {
 public:
  explicit constexpr CheckedAccumulator(T start = 0) : value_(start) {}
  // Returns false once the sum has overflowed (now or earlier).
  constexpr bool Add(T v) {
    if (ok_ && __builtin_add_overflow(value_, v, &value_)) {
      ok_ = false;
      failed_at_ = count_;
    }
    ++count_;
    return ok_;
  }
  constexpr bool ok() const { return ok_; }
  // The sum; meaningful only while ok().
  constexpr T value() const { return value_; }
  // Index of the Add that overflowed; meaningful only when !ok().
  constexpr size_t failed_at() const { return failed_at_; }

 private:
  T value_;
  bool ok_ = true;
  size_t count_ = 0;
  size_t failed_at_ = 0;
};

// --- Status forms ------------------------------------------------------------

// "<where>: <what> [overflow]", kMalformedInput, rule "overflow". `what`
// says which operation overflowed, e.g. "9223372036854775807 + 1 overflows a
// 64-bit integer".
absl::Status OverflowError(absl::string_view where, absl::string_view what);

namespace checked_internal {

template <typename W>
std::string Describe(const W& where) {
  if constexpr (std::is_invocable_v<const W&>) {
    return std::string(where());
  } else {
    return std::string(absl::string_view(where));
  }
}

template <typename T>
constexpr absl::string_view TypeWords() {
  if constexpr (std::is_signed_v<T>) {
    switch (sizeof(T) * 8) {
      case 8: return "an 8-bit integer";
      case 16: return "a 16-bit integer";
      case 32: return "a 32-bit integer";
      default: return "a 64-bit integer";
    }
  } else {
    switch (sizeof(T) * 8) {
      case 8: return "an 8-bit unsigned integer";
      case 16: return "a 16-bit unsigned integer";
      case 32: return "a 32-bit unsigned integer";
      default: return "a 64-bit unsigned integer";
    }
  }
}

// Widens 8-bit integers so StrCat prints numbers, not characters.
template <typename T>
auto Printable(T v) {
  if constexpr (std::integral<T> && sizeof(T) == 1) {
    return static_cast<int>(v);
  } else {
    return v;
  }
}

}  // namespace checked_internal

// a + b, or an overflow error "<where>: a + b overflows a 64-bit integer".
// `where` is a string or a callable returning one.
template <std::integral T, typename W>
absl::StatusOr<T> AddOrError(T a, T b, const W& where) {
  T r;
  if (CheckedAdd(a, b, &r)) return r;
  return OverflowError(checked_internal::Describe(where),
                       absl::StrCat(checked_internal::Printable(a), " + ",
                                    checked_internal::Printable(b), " overflows ",
                                    checked_internal::TypeWords<T>()));
}

// a - b, or an overflow error "<where>: a - b overflows ...".
template <std::integral T, typename W>
absl::StatusOr<T> SubOrError(T a, T b, const W& where) {
  T r;
  if (CheckedSub(a, b, &r)) return r;
  return OverflowError(checked_internal::Describe(where),
                       absl::StrCat(checked_internal::Printable(a), " - ",
                                    checked_internal::Printable(b), " overflows ",
                                    checked_internal::TypeWords<T>()));
}

// a * b, or an overflow error "<where>: a * b overflows ...".
template <std::integral T, typename W>
absl::StatusOr<T> MulOrError(T a, T b, const W& where) {
  T r;
  if (CheckedMul(a, b, &r)) return r;
  return OverflowError(checked_internal::Describe(where),
                       absl::StrCat(checked_internal::Printable(a), " * ",
                                    checked_internal::Printable(b), " overflows ",
                                    checked_internal::TypeWords<T>()));
}

// The sum of `values`, or an overflow error naming the element: `where` is
// called with the index of the element whose addition overflowed (a
// callable taking size_t and returning a string).
//
//   SumOrError<int64_t>(durations, [&](size_t i) { return OpWhere(i); });
template <std::integral T, typename W>
  requires std::is_invocable_v<const W&, size_t>
absl::StatusOr<T> SumOrError(absl::Span<const T> values, const W& where) {
  T total = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    T next;
    if (!CheckedAdd(total, values[i], &next)) {
      return OverflowError(std::string(where(i)),
                           absl::StrCat("the running sum ", checked_internal::Printable(total),
                                        " + ", checked_internal::Printable(values[i]),
                                        " overflows ", checked_internal::TypeWords<T>()));
    }
    total = next;
  }
  return total;
}

// `v` converted to To, or an overflow error "<where>: <v> does not fit in
// a 32-bit integer" (NaN and infinities: "<where>: nan is not a finite
// number").
template <std::integral To, typename From, typename W>
  requires std::integral<From> || std::floating_point<From>
absl::StatusOr<To> CastOrError(From v, const W& where) {
  To r;
  if (CheckedCast(v, &r)) return r;
  if constexpr (std::floating_point<From>) {
    if (!std::isfinite(v)) {
      return OverflowError(checked_internal::Describe(where),
                           absl::StrCat(v, " is not a finite number"));
    }
  }
  return OverflowError(checked_internal::Describe(where),
                       absl::StrCat(checked_internal::Printable(v), " does not fit in ",
                                    checked_internal::TypeWords<To>()));
}

}  // namespace swapplan

#endif  // SWAPPLAN_UTIL_CHECKED_H_
