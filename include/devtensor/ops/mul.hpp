// mul, *, *=, and the out-variant, with NumPy/PyTorch broadcasting.
#pragma once

#include <devtensor/ops/elementwise.hpp>

#include <type_traits>

namespace devtensor {

namespace detail {
/// a * b in T (bool: logical and, as in PyTorch); integers wrap (the product is
/// taken in the unsigned type, where overflow is defined).
struct multiplies {
    static constexpr bool vectorizes = true;
    template <class T>
    DEVTENSOR_HOST_DEVICE T operator()(T a, T b) const {
        if constexpr (std::is_same_v<T, bool>) {
            return a && b;
        } else if constexpr (std::is_integral_v<T>) {
            using U = std::make_unsigned_t<decltype(a * b)>;  // int for 1- and 2-byte types
            return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
        } else {
            return static_cast<T>(a * b);
        }
    }
};
}  // namespace detail

DEVTENSOR_BEGIN_TU_NAMESPACE

/// out = a * b, where a and b broadcast to out's shape exactly.
template <class TA, class DA, class TB, class DB, class TO, class DO>
void mul(const tensor<TA, DA>& a, const tensor<TB, DB>& b, const tensor<TO, DO>& out) {
    DEVTENSOR_STATIC_CHECK_BINARY("mul", TA, DA, TB, DB);
    DEVTENSOR_STATIC_CHECK_BINARY("mul", TA, DA, TO, DO);
    detail::map_out("mul", detail::multiplies{}, out, a, b);
}

/// a * b broadcast, on the operands' device (torch.mul).
template <class TA, class DA, class TB, class DB>
[[nodiscard]] tensor<TA, detail::common_device_t<DA, DB>> mul(const tensor<TA, DA>& a, const tensor<TB, DB>& b,
                                                              call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_BINARY("mul", TA, DA, TB, DB);
    return detail::map_new<TA>({"mul", site}, detail::multiplies{}, a, b);
}

template <class TA, class DA, class TB, class DB>
[[nodiscard]] tensor<TA, detail::common_device_t<DA, DB>> operator*(const tensor<TA, DA>& a,
                                                                    const tensor<TB, DB>& b) {
    DEVTENSOR_STATIC_CHECK_BINARY("operator*", TA, DA, TB, DB);
    return detail::map_new<TA>({"operator*", call_site{}}, detail::multiplies{}, a, b);
}

/// a *= b in place; b must broadcast to a's shape.
template <class TA, class DA, class TB, class DB>
tensor<TA, DA>& operator*=(tensor<TA, DA>& a, const tensor<TB, DB>& b) {
    DEVTENSOR_STATIC_CHECK_BINARY("operator*=", TA, DA, TB, DB);
    detail::map_out("operator*=", detail::multiplies{}, a, a, b);
    return a;
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor
