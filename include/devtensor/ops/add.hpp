// add, +, +=, and the out-variant, with NumPy/PyTorch broadcasting.
#pragma once

#include <devtensor/ops/entry_points.hpp>

#include <type_traits>

namespace devtensor {

namespace detail {
/// a + b in T (bool: logical or, as in PyTorch). Integers wrap as PyTorch's do:
/// the sum is taken in the unsigned type (signed overflow is undefined in C++)
/// and converted back, which C++20 defines as modular.
struct plus {
    static constexpr bool vectorizes = true;
    static constexpr bool partials_vectorize = true;
    static constexpr bool differentiable = true;
    template <int I, class T>
    DEVTENSOR_HOST_DEVICE T partial(T g, T, T, T) const {
        return g;
    }
    template <class T>
    DEVTENSOR_HOST_DEVICE T operator()(T a, T b) const {
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
            using U = std::make_unsigned_t<decltype(a + b)>;  // int for 1- and 2-byte types
            return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
        } else {
            return static_cast<T>(a + b);
        }
    }
};
}  // namespace detail

DEVTENSOR_BEGIN_TU_NAMESPACE

// add(a, b), add(a, scalar), add(a, b, out), add_, +, += (a + b, broadcast; torch.add)
DEVTENSOR_BINARY_OP(add, detail::plus, detail::same_element, DEVTENSOR_NO_TYPE_CHECK)
DEVTENSOR_BINARY_OP_INPLACE(add, detail::plus, DEVTENSOR_NO_TYPE_CHECK)
DEVTENSOR_BINARY_OPERATOR(+, detail::plus, detail::same_element, DEVTENSOR_NO_TYPE_CHECK)
DEVTENSOR_COMPOUND_OPERATOR(+, detail::plus, DEVTENSOR_NO_TYPE_CHECK)

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor
