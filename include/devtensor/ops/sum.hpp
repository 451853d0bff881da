// sum and mean, of all elements or over dimensions (keepdim as in PyTorch), in
// the order of detail/reduce.hpp: the same bits on every thread count, ISA and device.
#pragma once

#include <devtensor/ops/reduce.hpp>

#include <cstdint>
#include <type_traits>
#include <vector>

namespace devtensor {

namespace detail {
/// a + b; integers wrap (summed as unsigned, where overflow is defined). No
/// product precedes the sum, so nothing can contract it.
struct sum_op {
    static constexpr bool vectorizes = true;
    template <class A>
    DEVTENSOR_HOST_DEVICE A identity() const {
        return A{};
    }
    template <class A>
    DEVTENSOR_HOST_DEVICE A operator()(A a, A b) const {
        if constexpr (std::is_integral_v<A>) {
            using U = std::make_unsigned_t<A>;
            return static_cast<A>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
        } else {
            return a + b;
        }
    }
    template <class A>
    DEVTENSOR_HOST_DEVICE A finish(A sum, std::int64_t) const {
        return sum;
    }
};

/// The sum divided by the count (NaN for none, as 0 / 0).
struct mean_op : sum_op {
    template <class A>
    DEVTENSOR_HOST_DEVICE A finish(A sum, std::int64_t n) const {
        return sum / static_cast<A>(n);
    }
};

/// sum's element type: int64_t for bool and integers (as torch.sum), else T.
template <class T>
using sum_t = std::conditional_t<std::is_integral_v<T>, std::int64_t, T>;
}  // namespace detail

DEVTENSOR_BEGIN_TU_NAMESPACE

/// The sum over `dims` (all of them when empty), dropping them or keeping them as
/// size 1 (torch.sum(t, dims, keepdim)); bool and integers sum to int64_t.
template <class T, class D>
[[nodiscard]] tensor<detail::sum_t<T>, D> sum(const tensor<T, D>& t, const std::vector<std::int64_t>& dims,
                                              bool keepdim = false, call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_KERNELS("sum", D);
    using A = detail::sum_t<T>;
    return detail::reduce_new<A, A>({"sum", site}, detail::sum_op{}, t, dims, keepdim);
}

/// The sum of all elements, a 0-dim tensor.
template <class T, class D>
[[nodiscard]] tensor<detail::sum_t<T>, D> sum(const tensor<T, D>& t, call_site site = call_site::current()) {
    return sum(t, {}, false, site);
}

/// The mean over `dims` (all of them when empty); floating-point types only.
template <class T, class D>
[[nodiscard]] tensor<T, D> mean(const tensor<T, D>& t, const std::vector<std::int64_t>& dims, bool keepdim = false,
                                call_site site = call_site::current()) {
    static_assert(std::is_floating_point_v<T>,
                  "devtensor::mean: needs a floating-point tensor (convert first: t.to<double>())");
    DEVTENSOR_STATIC_CHECK_KERNELS("mean", D);
    return detail::reduce_new<T, T>({"mean", site}, detail::mean_op{}, t, dims, keepdim);
}

/// The mean of all elements, a 0-dim tensor.
template <class T, class D>
[[nodiscard]] tensor<T, D> mean(const tensor<T, D>& t, call_site site = call_site::current()) {
    return mean(t, {}, false, site);
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor
