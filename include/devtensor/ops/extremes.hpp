// amax, amin (the extreme values) and argmax, argmin (the first index of one), over
// dimensions, on the reduction engine. NaN counts as the maximum and as the
// minimum (it propagates, as in PyTorch); an empty reduction is refused.
#pragma once

#include <devtensor/detail/convert.hpp>  // max_of, min_of
#include <devtensor/detail/math.hpp>     // infinity
#include <devtensor/ops/reduce.hpp>

#include <cstdint>
#include <type_traits>
#include <vector>

namespace devtensor {

namespace detail {
/// NaN (x != x) wins; then the larger (Larger) or the smaller value.
template <bool Larger>
struct extreme_op {
    static constexpr bool needs_elements = true;
    static constexpr bool vectorizes = true;  // selects only: lanes of 16-byte vectors alike
    template <class A>
    DEVTENSOR_HOST_DEVICE A identity() const {
        if constexpr (std::is_floating_point_v<A>) return Larger ? -math::infinity<A>() : math::infinity<A>();
        else return Larger ? min_of<A> : max_of<A>;
    }
    template <class A>
    DEVTENSOR_HOST_DEVICE A operator()(A a, A b) const {
        return (a != a) ? a : ((b != b) || (Larger ? b > a : b < a)) ? b : a;
    }
    template <class A>
    DEVTENSOR_HOST_DEVICE A finish(A a, std::int64_t) const {
        return a;
    }
};

/// A value and its position in the reduction.
template <class T>
struct indexed {
    T value;
    std::int64_t index;
    DEVTENSOR_HOST_DEVICE static indexed of(T v, std::int64_t i) { return {v, i}; }
};

/// The first position of the extreme value (NaN first of all): argmax / argmin.
template <bool Larger>
struct arg_extreme_op {
    static constexpr bool needs_elements = true;
    template <class A>
    DEVTENSOR_HOST_DEVICE A identity() const {
        return {extreme_op<Larger>{}.template identity<decltype(A::value)>(), max_of<std::int64_t>};
    }
    template <class A>
    DEVTENSOR_HOST_DEVICE A operator()(A a, A b) const {
        const bool a_nan = a.value != a.value, b_nan = b.value != b.value;
        if (a_nan != b_nan) return a_nan ? a : b;
        if (!a_nan && a.value != b.value) return (Larger ? b.value > a.value : b.value < a.value) ? b : a;
        return b.index < a.index ? b : a;
    }
    template <class A>
    DEVTENSOR_HOST_DEVICE std::int64_t finish(A a, std::int64_t) const {
        return a.index;
    }
};

DEVTENSOR_BEGIN_TU_NAMESPACE
/// argmax (Larger) or argmin of t over `dims` (one, or all when empty): positions as int64_t.
template <bool Larger, class T, class D>
tensor<std::int64_t, D> arg_extreme(const origin& made, const tensor<T, D>& t, const std::vector<std::int64_t>& dims,
                                    bool keepdim) {
    return reduce_new<std::int64_t, indexed<T>>(made, arg_extreme_op<Larger>{}, t, dims, keepdim);
}
DEVTENSOR_END_TU_NAMESPACE
}  // namespace detail

DEVTENSOR_BEGIN_TU_NAMESPACE

/// The largest element over `dims` (all of them when empty), NaN propagating (torch.amax).
template <class T, class D>
[[nodiscard]] tensor<T, D> amax(const tensor<T, D>& t, const std::vector<std::int64_t>& dims = {}, bool keepdim = false,
                                call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_KERNELS("amax", D);
    detail::refuse_gradient("amax", t);
    return detail::reduce_new<T, T>({"amax", site}, detail::extreme_op<true>{}, t, dims, keepdim);
}

/// The smallest element over `dims` (all of them when empty), NaN propagating (torch.amin).
template <class T, class D>
[[nodiscard]] tensor<T, D> amin(const tensor<T, D>& t, const std::vector<std::int64_t>& dims = {}, bool keepdim = false,
                                call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_KERNELS("amin", D);
    detail::refuse_gradient("amin", t);
    return detail::reduce_new<T, T>({"amin", site}, detail::extreme_op<false>{}, t, dims, keepdim);
}

/// The index of the first largest element along `dim` (NaN counting as the largest).
template <class T, class D>
[[nodiscard]] tensor<std::int64_t, D> argmax(const tensor<T, D>& t, std::int64_t dim, bool keepdim = false,
                                             call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_KERNELS("argmax", D);
    return detail::arg_extreme<true>({"argmax", site}, t, {dim}, keepdim);
}

/// The index of the first largest element of the flattened tensor, a 0-dim tensor.
template <class T, class D>
[[nodiscard]] tensor<std::int64_t, D> argmax(const tensor<T, D>& t, call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_KERNELS("argmax", D);
    return detail::arg_extreme<true>({"argmax", site}, t, {}, false);
}

/// The index of the first smallest element along `dim` (NaN counting as the smallest).
template <class T, class D>
[[nodiscard]] tensor<std::int64_t, D> argmin(const tensor<T, D>& t, std::int64_t dim, bool keepdim = false,
                                             call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_KERNELS("argmin", D);
    return detail::arg_extreme<false>({"argmin", site}, t, {dim}, keepdim);
}

/// The index of the first smallest element of the flattened tensor, a 0-dim tensor.
template <class T, class D>
[[nodiscard]] tensor<std::int64_t, D> argmin(const tensor<T, D>& t, call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_KERNELS("argmin", D);
    return detail::arg_extreme<false>({"argmin", site}, t, {}, false);
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor
