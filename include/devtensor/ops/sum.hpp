// sum and mean, of all elements or over dimensions (keepdim as in PyTorch), in
// the order of detail/reduce.hpp: the same bits on every thread count, ISA and device.
#pragma once

#include <devtensor/ops/reduce.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <span>
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

/// g / count (mean's backward divides, as PyTorch's).
template <class T>
struct divided_by {
    T count;
    DEVTENSOR_HOST_DEVICE T operator()(T g) const { return static_cast<T>(g / count); }
};

DEVTENSOR_BEGIN_TU_NAMESPACE

/// The backward of sum and mean: the gradient repeated over the reduced dimensions
/// (divided by their count for mean).
template <class T>
struct sum_node final : node<T> {
    shape input_shape, kept_shape;  ///< kept_shape: the result with keepdim
    device input_device;
    bool is_mean = false;
    void backward(const grad_t<T>& g, std::span<grad_t<T>> grads) override {
        grad_t<T>& result = grads[0] = grad_t<T>(input_shape, input_device, {this->op, call_site{}});
        if (result.numel() == 0) return;
        const grad_t<T> spread = g.view(kept_shape, call_site{});
        if (is_mean) map_checked(this->op, divided_by<T>{static_cast<T>(input_shape.numel() / kept_shape.numel())},
                                 result, spread);
        else map_checked(this->op, copy_element{}, result, spread);
    }
};

template <class T, class D>
tensor<T, D> reduced_recorded(tensor<T, D> out, const tensor<T, D>& in, std::span<const std::int64_t> dims,
                              bool is_mean, const char* op) {
    if (recording(in)) {
        auto n = make_node<sum_node<T>>();
        n->input_shape = in.shape();
        n->kept_shape = reduced_shape(in.shape(), reduced_dims(op, dims, in.shape().rank()), true);
        n->input_device = device(in.device());
        n->is_mean = is_mean;
        record(out, std::move(n), op, in);
    }
    return out;
}

DEVTENSOR_END_TU_NAMESPACE
}  // namespace detail

DEVTENSOR_BEGIN_TU_NAMESPACE

/// The sum over `dims` (all of them when empty), dropping them or keeping them as
/// size 1 (torch.sum(t, dims, keepdim)); bool and integers sum to int64_t.
template <class T, class D>
[[nodiscard]] tensor<detail::sum_t<T>, D> sum(const tensor<T, D>& t, const std::vector<std::int64_t>& dims,
                                              bool keepdim = false, call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_KERNELS("sum", D);
    using A = detail::sum_t<T>;
    auto out = detail::reduce_new<A, A>({"sum", site}, detail::sum_op{}, t, dims, keepdim);
    if constexpr (std::is_floating_point_v<T>) return detail::reduced_recorded(std::move(out), t, dims, false, "sum");
    else return out;
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
    return detail::reduced_recorded(detail::reduce_new<T, T>({"mean", site}, detail::mean_op{}, t, dims, keepdim), t,
                                    dims, true, "mean");
}

/// The mean of all elements, a 0-dim tensor.
template <class T, class D>
[[nodiscard]] tensor<T, D> mean(const tensor<T, D>& t, call_site site = call_site::current()) {
    return mean(t, {}, false, site);
}

/// t summed over the dimensions broadcasting stretched `s` into (Tensor.sum_to_size):
/// the gradient of a broadcast operand. t itself when it has shape `s`.
template <class T, class D>
[[nodiscard]] tensor<T, D> sum_to_size(const tensor<T, D>& t, const shape& s, call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_KERNELS("sum_to_size", D);
    if (t.shape() == s) return t;
    if (!detail::broadcasts_to(s, t.shape()))
        throw shape_error("devtensor::sum_to_size: size " + s.to_string() + " is not expandable to " +
                          t.shape().to_string());
    const std::size_t lead = t.shape().rank() - s.rank();
    std::array<std::int64_t, shape::max_rank> dims{};  // no vector: a gradient's sum allocates only its result
    std::size_t n = 0;
    for (std::size_t d = 0; d < t.shape().rank(); ++d)
        if (d < lead || (s[d - lead] == 1 && t.shape()[d] != 1)) dims[n++] = static_cast<std::int64_t>(d);
    const tensor<T, D> summed = detail::reduce_new<T, T>({"sum_to_size", site}, detail::sum_op{}, t,
                                                         std::span<const std::int64_t>(dims.data(), n), true);
    return summed.view(s, site);
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor
