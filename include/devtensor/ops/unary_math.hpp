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
// `derivative` is g·f'(x) from g, y = f(x) and x, as PyTorch's backward computes it.
#define DEVTENSOR_DETAIL_MATH_FUNCTOR(functor, fn, derivative)                                     \
    struct functor {                                                                               \
        static constexpr bool differentiable = true;                                               \
        template <int I, class T>                                                                  \
        DEVTENSOR_HOST_DEVICE T partial([[maybe_unused]] T g, [[maybe_unused]] T y,                \
                                        [[maybe_unused]] T x) const {                              \
            return derivative;                                                                     \
        }                                                                                          \
        template <class T>                                                                         \
        DEVTENSOR_HOST_DEVICE T operator()(T x) const {                                            \
            return math::fn(x);                                                                    \
        }                                                                                          \
        static constexpr bool has_lane_forms = true;                                               \
        template <class Functions>                                                                 \
        using lane_form = typename Functions::fn;                                                  \
    };
DEVTENSOR_DETAIL_MATH_FUNCTOR(exp_of, exp, detail::mul(g, y))
DEVTENSOR_DETAIL_MATH_FUNCTOR(log_of, log, static_cast<T>(g / x))
DEVTENSOR_DETAIL_MATH_FUNCTOR(sigmoid_of, sigmoid, detail::mul(detail::mul(g, detail::add(T{1}, -y)), y))
DEVTENSOR_DETAIL_MATH_FUNCTOR(tanh_of, tanh, detail::mul(g, detail::add(T{1}, -detail::mul(y, y))))
#undef DEVTENSOR_DETAIL_MATH_FUNCTOR
struct sqrt_of {
    static constexpr bool differentiable = true;
    template <int I, class T>
    DEVTENSOR_HOST_DEVICE T partial(T g, T y, T) const {
        return static_cast<T>(g / detail::mul(T{2}, y));
    }
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
