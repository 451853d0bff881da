// Element conversion, the same on every device (DESIGN §11): float -> integer
// truncates toward zero and saturates at the type's limits, NaN -> 0; -> bool is
// != 0; integer -> integer wraps (C++20 defines it as modular, like PyTorch).
#pragma once

#include <devtensor/config.hpp>

#include <limits>
#include <type_traits>

namespace devtensor::detail {

DEVTENSOR_BEGIN_TU_NAMESPACE

/// U's limits as constants device code may read (std::numeric_limits' functions are host-only).
template <class U>
inline constexpr U max_of = std::numeric_limits<U>::max();
template <class U>
inline constexpr U min_of = std::numeric_limits<U>::min();

/// The element as a U.
template <class U>
struct convert_to {
    /// The identity (U to U) is the copy of contiguous() and clone().
    template <class T>
    DEVTENSOR_HOST_DEVICE U operator()(T x) const {
        if constexpr (std::is_same_v<U, bool>) {
            return x != T{0};
        } else if constexpr (std::is_integral_v<U> && std::is_floating_point_v<T>) {
            if (!(x == x)) return U{0};  // NaN
            // 2^digits as T, exactly: the first value past the largest U
            constexpr T past_max = T{2} * static_cast<T>(max_of<U> / 2 + 1);
            if (x >= past_max) return max_of<U>;
            if constexpr (std::is_signed_v<U>) {
                if (x <= static_cast<T>(min_of<U>)) return min_of<U>;
            } else {
                if (x <= T{-1}) return U{0};
            }
            return static_cast<U>(x);
        } else {
            return static_cast<U>(x);
        }
    }
};

/// The copy of contiguous(), clone() and reshape(): a functor the CPU engine
/// recognises (the blocked transpose) and that works on vectors as on scalars.
/// The nullary functor of fill: `value` everywhere.
template <class T>
struct constant {
    T value;
    DEVTENSOR_HOST_DEVICE T operator()() const { return value; }
};

struct copy_element {
    static constexpr bool is_copy = true;
    static constexpr bool vectorizes = true;
    template <class T>
    DEVTENSOR_HOST_DEVICE T operator()(T x) const {
        return x;
    }
};

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::detail
