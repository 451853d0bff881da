// exp, log, sqrt, sigmoid, tanh elementwise (floating-point types): devtensor's own
// DEVTENSOR_HOST_DEVICE functions (detail/math.hpp), so every device gives the same
// bits (DESIGN §15); sqrt is IEEE's.
#pragma once

#include <devtensor/detail/math.hpp>
#include <devtensor/ops/entry_points.hpp>

namespace devtensor {

namespace detail {
#define DEVTENSOR_DETAIL_MATH_FUNCTOR(functor, fn)                                                 \
    struct functor {                                                                               \
        template <class T>                                                                         \
        DEVTENSOR_HOST_DEVICE T operator()(T x) const {                                            \
            return math::fn(x);                                                                    \
        }                                                                                          \
    };
DEVTENSOR_DETAIL_MATH_FUNCTOR(exp_of, exp)
DEVTENSOR_DETAIL_MATH_FUNCTOR(log_of, log)
DEVTENSOR_DETAIL_MATH_FUNCTOR(sqrt_of, sqrt)
DEVTENSOR_DETAIL_MATH_FUNCTOR(sigmoid_of, sigmoid)
DEVTENSOR_DETAIL_MATH_FUNCTOR(tanh_of, tanh)
#undef DEVTENSOR_DETAIL_MATH_FUNCTOR
}  // namespace detail

DEVTENSOR_BEGIN_TU_NAMESPACE

DEVTENSOR_UNARY_OP(exp, detail::exp_of, detail::same_element, DEVTENSOR_STATIC_CHECK_FLOATING)
DEVTENSOR_UNARY_OP(log, detail::log_of, detail::same_element, DEVTENSOR_STATIC_CHECK_FLOATING)
DEVTENSOR_UNARY_OP(sqrt, detail::sqrt_of, detail::same_element, DEVTENSOR_STATIC_CHECK_FLOATING)
DEVTENSOR_UNARY_OP(sigmoid, detail::sigmoid_of, detail::same_element, DEVTENSOR_STATIC_CHECK_FLOATING)
DEVTENSOR_UNARY_OP(tanh, detail::tanh_of, detail::same_element, DEVTENSOR_STATIC_CHECK_FLOATING)

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor
