// exp, log, sqrt, sigmoid, tanh elementwise (floating-point types): devtensor's own
// DEVTENSOR_HOST_DEVICE functions (detail/math.hpp), so every device gives the same
// bits (DESIGN §15); sqrt is IEEE's.
#pragma once

#include <devtensor/detail/math.hpp>
#include <devtensor/ops/entry_points.hpp>

namespace devtensor {

namespace detail {
// exp, log, sigmoid, tanh also have lane forms: lane_form<Functions> names the
// function object of an x86 ISA's vector registers (Functions: that ISA's,
// backend/cpu/math_lanes.hpp), which the CPU engine runs on contiguous rows. A type,
// not a function here: vector values never pass through code built for another ISA.
#define DEVTENSOR_DETAIL_MATH_FUNCTOR(functor, fn)                                                 \
    struct functor {                                                                               \
        template <class T>                                                                         \
        DEVTENSOR_HOST_DEVICE T operator()(T x) const {                                            \
            return math::fn(x);                                                                    \
        }                                                                                          \
        static constexpr bool has_lane_forms = true;                                               \
        template <class Functions>                                                                 \
        using lane_form = typename Functions::fn;                                                  \
    };
DEVTENSOR_DETAIL_MATH_FUNCTOR(exp_of, exp)
DEVTENSOR_DETAIL_MATH_FUNCTOR(log_of, log)
DEVTENSOR_DETAIL_MATH_FUNCTOR(sigmoid_of, sigmoid)
DEVTENSOR_DETAIL_MATH_FUNCTOR(tanh_of, tanh)
#undef DEVTENSOR_DETAIL_MATH_FUNCTOR
struct sqrt_of {
    template <class T>
    DEVTENSOR_HOST_DEVICE T operator()(T x) const {
        return math::sqrt(x);
    }
};
}  // namespace detail

DEVTENSOR_BEGIN_TU_NAMESPACE

DEVTENSOR_UNARY_OP(exp, detail::exp_of, detail::same_element, DEVTENSOR_STATIC_CHECK_FLOATING)
DEVTENSOR_UNARY_OP(log, detail::log_of, detail::same_element, DEVTENSOR_STATIC_CHECK_FLOATING)
DEVTENSOR_UNARY_OP(sqrt, detail::sqrt_of, detail::same_element, DEVTENSOR_STATIC_CHECK_FLOATING)
DEVTENSOR_UNARY_OP(sigmoid, detail::sigmoid_of, detail::same_element, DEVTENSOR_STATIC_CHECK_FLOATING)
DEVTENSOR_UNARY_OP(tanh, detail::tanh_of, detail::same_element, DEVTENSOR_STATIC_CHECK_FLOATING)

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor
