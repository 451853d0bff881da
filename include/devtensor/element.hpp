// What a tensor may hold (DESIGN §5): bool, the fixed-width integers, float and
// double. long double (16 bytes on the host, 8 in device code) and the
// character types are refused with a sentence, not a wall of template errors.
#pragma once

#include <concepts>
#include <ostream>
#include <string_view>
#include <cstdint>
#include <type_traits>

namespace devtensor {

namespace detail {
template <class T>
inline constexpr bool is_character_v =
    std::same_as<T, char> || std::same_as<T, wchar_t> || std::same_as<T, char8_t> ||
    std::same_as<T, char16_t> || std::same_as<T, char32_t>;
}  // namespace detail

/// bool, an integer type of 1 to 8 bytes (int8_t ... uint64_t), float or double.
template <class T>
concept Element = std::same_as<T, std::remove_cv_t<T>> &&
                  (std::same_as<T, bool> || std::same_as<T, float> || std::same_as<T, double> ||
                   (std::is_integral_v<T> && !detail::is_character_v<T> && sizeof(T) <= 8));

}  // namespace devtensor

/// The refusals of a type that is not an Element, each a sentence naming `who`.
#define DEVTENSOR_STATIC_CHECK_ELEMENT(who, T)                                                     \
    static_assert(!std::is_same_v<std::remove_cv_t<T>, long double>,                               \
                  who ": long double is not an element type (device code has no 16-byte long "     \
                      "double); use double");                                                      \
    static_assert(!::devtensor::detail::is_character_v<std::remove_cv_t<T>>,                       \
                  who ": character types (char, wchar_t, char8_t, char16_t, char32_t) are not "    \
                      "element types; use std::int8_t or std::uint8_t for bytes");                 \
    static_assert(!std::is_const_v<T> && !std::is_volatile_v<T>,                                   \
                  who ": the element type must not be const or volatile");                         \
    static_assert(::devtensor::Element<std::remove_cv_t<T>>,                                       \
                  who ": the element type must be bool, a fixed-width integer, float or double")

// X-macro over the element types with the names messages use: X(type, "name", args...).
// Two copies, so that a pair of types can be enumerated (a macro cannot nest itself).
#define DEVTENSOR_FOR_EACH_ELEMENT(X, ...)                                                         \
    X(bool, "bool", __VA_ARGS__) X(std::int8_t, "int8", __VA_ARGS__)                               \
    X(std::uint8_t, "uint8", __VA_ARGS__) X(std::int16_t, "int16", __VA_ARGS__)                    \
    X(std::uint16_t, "uint16", __VA_ARGS__) X(std::int32_t, "int32", __VA_ARGS__)                  \
    X(std::uint32_t, "uint32", __VA_ARGS__) X(std::int64_t, "int64", __VA_ARGS__)                  \
    X(std::uint64_t, "uint64", __VA_ARGS__) X(float, "float", __VA_ARGS__)                         \
    X(double, "double", __VA_ARGS__)
#define DEVTENSOR_FOR_EACH_ELEMENT_2(X, ...)                                                       \
    X(bool, "bool", __VA_ARGS__) X(std::int8_t, "int8", __VA_ARGS__)                               \
    X(std::uint8_t, "uint8", __VA_ARGS__) X(std::int16_t, "int16", __VA_ARGS__)                    \
    X(std::uint16_t, "uint16", __VA_ARGS__) X(std::int32_t, "int32", __VA_ARGS__)                  \
    X(std::uint32_t, "uint32", __VA_ARGS__) X(std::int64_t, "int64", __VA_ARGS__)                  \
    X(std::uint64_t, "uint64", __VA_ARGS__) X(float, "float", __VA_ARGS__)                         \
    X(double, "double", __VA_ARGS__)

namespace devtensor::detail {
/// PyTorch's name of element type T ("torch.float32", "torch.int64", "torch.bool"), chosen
/// by kind, signedness and size so that long and long long map alike; a constant, so
/// that recording it costs nothing.
template <class T>
consteval const char* dtype_name_of() {
    if constexpr (std::is_same_v<T, bool>) return "torch.bool";
    else if constexpr (std::is_floating_point_v<T>) return sizeof(T) == 4 ? "torch.float32" : "torch.float64";
    else if constexpr (std::is_signed_v<T>)
        return sizeof(T) == 1 ? "torch.int8" : sizeof(T) == 2 ? "torch.int16" : sizeof(T) == 4 ? "torch.int32" : "torch.int64";
    else
        return sizeof(T) == 1 ? "torch.uint8" : sizeof(T) == 2 ? "torch.uint16" : sizeof(T) == 4 ? "torch.uint32" : "torch.uint64";
}
template <class T>
inline constexpr const char* dtype_of = dtype_name_of<T>();
}  // namespace devtensor::detail

namespace devtensor {

/// An element type as a value (torch.dtype): t.dtype() == dtype_v<float>, and it
/// prints as PyTorch prints it, "torch.float32".
class dtype {
public:
    constexpr explicit dtype(const char* name) noexcept : name_(name) {}
    constexpr const char* name() const noexcept { return name_; }
    friend constexpr bool operator==(dtype a, dtype b) noexcept {
        return std::string_view(a.name_) == std::string_view(b.name_);
    }
    friend std::ostream& operator<<(std::ostream& os, dtype d) { return os << d.name_; }

private:
    const char* name_;
};

/// The dtype of element type T.
template <class T>
inline constexpr dtype dtype_v{detail::dtype_of<T>};

}  // namespace devtensor
