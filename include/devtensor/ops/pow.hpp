// pow elementwise (torch.pow): tensor^tensor, tensor^scalar and scalar^tensor,
// broadcasting, with the out-variant and pow_. Floating types: devtensor's own
// math::pow (≤ 2 ulp, std::pow's special values, the same bits on every device);
// integers: repeated products that wrap, a negative exponent giving 1 / a^|b|
// truncated (torch's integer kernel). Not for bool.
#pragma once

#include <devtensor/detail/math_pow.hpp>
#include <devtensor/ops/entry_points.hpp>

#include <type_traits>

namespace devtensor {

namespace detail {
struct power {
    static constexpr bool differentiable = true;
    template <int I, class T>
    DEVTENSOR_HOST_DEVICE T partial(T g, T y, T base, T exponent) const {  // PyTorch's pow_backward
        if constexpr (I == 0)
            return exponent == T{0} ? T{0} : detail::mul(detail::mul(g, exponent), math::pow(base, exponent - T{1}));
        else
            return base == T{0} && exponent >= T{0} ? T{0} : detail::mul(detail::mul(g, y), math::log(base));
    }
    template <class T>
    DEVTENSOR_HOST_DEVICE T operator()(T base, T exponent) const {
        return math::pow(base, exponent);
    }
};
}  // namespace detail

DEVTENSOR_BEGIN_TU_NAMESPACE

// pow(a, b), pow(a, scalar), pow(a, b, out), pow_(a, b), pow_(a, scalar)
DEVTENSOR_BINARY_OP(pow, detail::power, detail::same_element, DEVTENSOR_STATIC_CHECK_NOT_BOOL)
DEVTENSOR_BINARY_OP_INPLACE(pow, detail::power, DEVTENSOR_STATIC_CHECK_NOT_BOOL)

/// base^exponent for a scalar base (torch.pow(Scalar, Tensor)); the base converts
/// to the tensor's type.
template <class S, class T, class D>
    requires std::is_arithmetic_v<S>
[[nodiscard]] tensor<T, D> pow(S base, const tensor<T, D>& exponent, call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_SCALAR("pow", T, S);
    DEVTENSOR_STATIC_CHECK_KERNELS("pow", D);
    DEVTENSOR_STATIC_CHECK_NOT_BOOL("pow", T);
    return detail::map_new<T>({"pow", site}, detail::power{}, detail::scalar_operand("pow", exponent, base), exponent);
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor
