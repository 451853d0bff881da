// relu and relu_: max(x, 0) elementwise, NaN kept (as torch.relu keeps it).
#pragma once

#include <devtensor/ops/elementwise.hpp>

namespace devtensor {

namespace detail {
struct rectify {
    static constexpr bool vectorizes = true;  // the selects below work lane by lane on 16-byte vectors
    static constexpr bool partials_vectorize = true;
    static constexpr bool differentiable = true;
    template <int I, class T>
    DEVTENSOR_HOST_DEVICE T partial(T g, T y, T) const {  // PyTorch's threshold_backward: 0 where y <= 0
        return y > T{0} ? g : T{0};
    }
    template <class T>
    DEVTENSOR_HOST_DEVICE T operator()(T x) const {
        return x < T{0} ? T{0} : x;  // NaN < 0 is false: NaN stays
    }
};
}  // namespace detail

DEVTENSOR_BEGIN_TU_NAMESPACE

/// max(x, 0) in a new tensor (torch.relu); not for bool or unsigned types.
template <class T, class D>
[[nodiscard]] tensor<T, D> relu(const tensor<T, D>& x, call_site site = call_site::current()) {
    static_assert(std::is_signed_v<T>, "devtensor::relu: needs a signed element type (an unsigned or bool tensor is its own relu)");
    DEVTENSOR_STATIC_CHECK_KERNELS("relu", D);
    return detail::map_new<T>({"relu", site}, detail::rectify{}, x);
}

/// x = max(x, 0) in place (torch.relu_).
template <class T, class D>
tensor<T, D>& relu_(tensor<T, D>& x) {
    static_assert(std::is_signed_v<T>, "devtensor::relu_: needs a signed element type (an unsigned or bool tensor is its own relu)");
    DEVTENSOR_STATIC_CHECK_KERNELS("relu_", D);
    detail::map_out("relu_", detail::rectify{}, x, x);
    return x;
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor
