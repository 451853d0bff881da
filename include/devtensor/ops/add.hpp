// add, +, +=, and the out-variant, with NumPy/PyTorch broadcasting.
#pragma once

#include <devtensor/backend/cpu/elementwise.hpp>
#include <devtensor/detail/elementwise.hpp>
#include <devtensor/detail/op_checks.hpp>
#include <devtensor/tensor.hpp>
#if DEVTENSOR_HAS_CUDA
#  include <devtensor/backend/cuda/kernels.cuh>
#endif

namespace devtensor {

namespace detail {
DEVTENSOR_BEGIN_TU_NAMESPACE

/// out = a + b once devices and shapes are known to agree.
template <class T, class DA, class DB, class DO>
void add_checked(const tensor<T, DA>& a, const tensor<T, DB>& b, const tensor<T, DO>& out) {
    const std::int64_t n = out.numel();
    if (n == 0) return;
    const device dev(out.device());
    const bool same_shape = a.shape() == out.shape() && b.shape() == out.shape();
    const broadcast_strides strides =
        same_shape ? broadcast_strides{} : make_broadcast_strides(out.shape(), a.shape(), b.shape());
    if (dev.is_cpu()) {
        if (same_shape) backend_cpu::add(a.data(), b.data(), out.data(), n);
        else backend_cpu::add_broadcast(a.data(), b.data(), out.data(), n, strides);
    } else {
#if DEVTENSOR_HAS_CUDA
        if (same_shape) backend_cuda::add(dev.index(), a.data(), b.data(), out.data(), n);
        else backend_cuda::add_broadcast(dev.index(), a.data(), b.data(), out.data(), n, strides);
#else
        throw_no_kernels("add", dev);
#endif
    }
}

DEVTENSOR_END_TU_NAMESPACE
}  // namespace detail

DEVTENSOR_BEGIN_TU_NAMESPACE

/// out = a + b, where a and b broadcast to out's shape exactly; out may alias a or b.
template <class TA, class DA, class TB, class DB, class TO, class DO>
void add(const tensor<TA, DA>& a, const tensor<TB, DB>& b, const tensor<TO, DO>& out) {
    DEVTENSOR_STATIC_CHECK_SAME_DEVICE("add", DA, DB);
    DEVTENSOR_STATIC_CHECK_SAME_DEVICE("add", DA, DO);
    DEVTENSOR_STATIC_CHECK_SAME_ELEMENT("add", TA, TB);
    DEVTENSOR_STATIC_CHECK_SAME_ELEMENT("add", TA, TO);
    DEVTENSOR_STATIC_CHECK_KERNELS("add", DA);
    detail::check_same_device("add", a.device(), b.device());
    detail::check_same_device("add", a.device(), out.device());
    const shape s = broadcast_shapes(a.shape(), b.shape(), "add");
    if (!(s == out.shape()))
        throw shape_error("devtensor::add: the output has shape " + out.shape().to_string() +
                          ", but " + a.shape().to_string() + " and " + b.shape().to_string() +
                          " broadcast to " + s.to_string());
    detail::add_checked(a, b, out);
}

/// a + b broadcast, on the operands' device (torch.add).
template <class TA, class DA, class TB, class DB>
tensor<TA, detail::common_device_t<DA, DB>> add(const tensor<TA, DA>& a, const tensor<TB, DB>& b) {
    DEVTENSOR_STATIC_CHECK_SAME_DEVICE("add", DA, DB);
    DEVTENSOR_STATIC_CHECK_SAME_ELEMENT("add", TA, TB);
    DEVTENSOR_STATIC_CHECK_KERNELS("add", DA);
    detail::check_same_device("add", a.device(), b.device());
    using result_device = detail::common_device_t<DA, DB>;
    const shape s = broadcast_shapes(a.shape(), b.shape(), "add");
    tensor<TA, result_device> out(s, device_cast<result_device>(device(a.device())));
    detail::add_checked(a, b, out);
    return out;
}

template <class TA, class DA, class TB, class DB>
tensor<TA, detail::common_device_t<DA, DB>> operator+(const tensor<TA, DA>& a,
                                                      const tensor<TB, DB>& b) {
    DEVTENSOR_STATIC_CHECK_SAME_DEVICE("operator+", DA, DB);
    DEVTENSOR_STATIC_CHECK_SAME_ELEMENT("operator+", TA, TB);
    return add(a, b);
}

/// a += b in place; b must broadcast to a's shape.
template <class TA, class DA, class TB, class DB>
tensor<TA, DA>& operator+=(tensor<TA, DA>& a, const tensor<TB, DB>& b) {
    DEVTENSOR_STATIC_CHECK_SAME_DEVICE("operator+=", DA, DB);
    DEVTENSOR_STATIC_CHECK_SAME_ELEMENT("operator+=", TA, TB);
    add(a, b, a);
    return a;
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor
