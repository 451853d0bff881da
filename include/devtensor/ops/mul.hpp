// mul, *, *=, and the out-variant, with NumPy/PyTorch broadcasting.
#pragma once

#include <devtensor/detail/arith.hpp>
#include <devtensor/ops/entry_points.hpp>

#include <type_traits>

namespace devtensor {

namespace detail {
/// a * b in T (bool: logical and, as in PyTorch); integers wrap (the product is
/// taken in the unsigned type, where overflow is defined).
struct multiplies {
    static constexpr bool vectorizes = true;
    static constexpr bool partials_vectorize = true;
    static constexpr bool differentiable = true;
    template <int I, class T>
    DEVTENSOR_HOST_DEVICE T partial(T g, T, T a, T b) const {
        return detail::mul(g, I == 0 ? b : a);
    }
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

// mul(a, b), mul(a, scalar), mul(a, b, out), mul_, *, *= (a * b, broadcast; torch.mul)
DEVTENSOR_BINARY_OP(mul, detail::multiplies, detail::same_element, DEVTENSOR_NO_TYPE_CHECK)
DEVTENSOR_BINARY_OP_INPLACE(mul, detail::multiplies, DEVTENSOR_NO_TYPE_CHECK)
DEVTENSOR_BINARY_OPERATOR(*, detail::multiplies, detail::same_element, DEVTENSOR_NO_TYPE_CHECK)
DEVTENSOR_COMPOUND_OPERATOR(*, detail::multiplies, DEVTENSOR_NO_TYPE_CHECK)

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor
