// Copies on one device through the elementwise engine: what contiguous(),
// clone(), reshape() and to<U>() run (tensor.hpp declares copy_as).
#pragma once

#include <devtensor/detail/convert.hpp>
#include <devtensor/ops/elementwise.hpp>

#include <type_traits>

namespace devtensor::detail {
DEVTENSOR_BEGIN_TU_NAMESPACE

template <class U, class T, class D>
tensor<U, D> copy_as(const tensor<T, D>& t, const origin& made) {
    DEVTENSOR_STATIC_CHECK_KERNELS("to, contiguous, clone and reshape", D);
    tensor<U, D> out(t.shape(), t.device(), made);
    if constexpr (std::is_same_v<U, T>) map_checked(made.op, copy_element{}, out, t);
    else map_checked(made.op, convert_to<U>{}, out, t);
    return out;
}

DEVTENSOR_END_TU_NAMESPACE
}  // namespace devtensor::detail
