// any, all (of bool tensors, over dimensions), and the whole-tensor questions
// equal(a, b) and allclose(a, b, rtol, atol), answered on the tensors' device.
#pragma once

#include <devtensor/detail/arith.hpp>
#include <devtensor/detail/math.hpp>
#include <devtensor/ops/compare.hpp>
#include <devtensor/ops/reduce.hpp>

#include <cstdint>
#include <type_traits>
#include <vector>

namespace devtensor {

namespace detail {
/// Logical or (Any) / and of bools, accumulated as int (a warp shuffles ints, not bools).
template <bool Any>
struct logical_op {
    template <class A>
    DEVTENSOR_HOST_DEVICE A identity() const {
        return Any ? A{0} : A{1};
    }
    template <class A>
    DEVTENSOR_HOST_DEVICE A operator()(A a, A b) const {
        return Any ? (a | b) : (a & b);
    }
    template <class A>
    DEVTENSOR_HOST_DEVICE bool finish(A a, std::int64_t) const {
        return a != 0;
    }
};

/// |a - b| <= atol + rtol * |b|, or a == b (equal infinities); NaN is never close (torch.isclose).
template <class T>
struct close_to {
    T rtol, atol;
    DEVTENSOR_HOST_DEVICE bool operator()(T a, T b) const {
        if (a == b) return true;
        const T diff = a > b ? detail::add(a, -b) : detail::add(b, -a);
        return diff <= detail::add(atol, detail::mul(rtol, math::abs(b)));
    }
};
}  // namespace detail

DEVTENSOR_BEGIN_TU_NAMESPACE

/// Whether any element over `dims` (all of them when empty) is true (torch.any).
template <class D>
[[nodiscard]] tensor<bool, D> any(const tensor<bool, D>& t, const std::vector<std::int64_t>& dims = {},
                                  bool keepdim = false, call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_KERNELS("any", D);
    return detail::reduce_new<bool, int>({"any", site}, detail::logical_op<true>{}, t, dims, keepdim);
}

/// Whether every element over `dims` (all of them when empty) is true (torch.all).
template <class D>
[[nodiscard]] tensor<bool, D> all(const tensor<bool, D>& t, const std::vector<std::int64_t>& dims = {},
                                  bool keepdim = false, call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_KERNELS("all", D);
    return detail::reduce_new<bool, int>({"all", site}, detail::logical_op<false>{}, t, dims, keepdim);
}

/// Same shape and the same elements (torch.equal); NaN is unequal to itself.
template <class TA, class DA, class TB, class DB>
[[nodiscard]] bool equal(const tensor<TA, DA>& a, const tensor<TB, DB>& b) {
    DEVTENSOR_STATIC_CHECK_BINARY("equal", TA, DA, TB, DB);
    detail::checked_inputs("equal", a, b);
    if (!(a.shape() == b.shape())) return false;
    return all(eq(a, b)).item();
}

/// Every |a - b| <= atol + rtol * |b|, a and b broadcast (torch.allclose); floating types.
template <class TA, class DA, class TB, class DB>
[[nodiscard]] bool allclose(const tensor<TA, DA>& a, const tensor<TB, DB>& b, double rtol = 1e-5, double atol = 1e-8) {
    DEVTENSOR_STATIC_CHECK_BINARY("allclose", TA, DA, TB, DB);
    DEVTENSOR_STATIC_CHECK_FLOATING("allclose", TA);
    const auto close = detail::map_new<bool>({"allclose", call_site{}},
                                             detail::close_to<TA>{static_cast<TA>(rtol), static_cast<TA>(atol)}, a, b);
    return all(close).item();
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor
