// fill, ones, zeros, full: the op checks the device, then dispatches to the
// CPU loop or the CUDA kernel.
#pragma once

#include <devtensor/ops/elementwise.hpp>

#include <string>
#include <type_traits>

namespace devtensor {

namespace detail {
DEVTENSOR_BEGIN_TU_NAMESPACE

template <class T, class D>
void fill_any(const char* op, const tensor<T, D>& t, T value) {
    check_defined(op, {{"the tensor", t.defined()}});
    if (!t.is_contiguous()) {  // a view: through the engine
        if (writes_overlap(t.shape(), t.strides()))
            throw error(std::string("devtensor::") + op + ": the tensor " + t.shape().to_string() +
                        " with strides " + t.strides().to_string() +
                        " has elements that share one memory location (an expanded view); fill a "
                        "contiguous tensor");
        return map_checked(op, constant<T>{value}, t);
    }
    on_device(
        op, t.device(), [&] { backend_cpu::fill(t.data(), t.numel(), value); },
        [&]([[maybe_unused]] auto ordinal) {
#if DEVTENSOR_HAS_CUDA
            backend_cuda::fill(ordinal, t.data(), t.numel(), value);
#endif
        });
}

/// A new tensor of shape `s` on `dev` holding `value` everywhere.
template <class T, class D>
tensor<T, D> filled(const origin& made, const shape& s, T value, const D& dev) {
    tensor<T, D> t(s, dev, made);
    fill_any(made.op, t, value);
    return t;
}

DEVTENSOR_END_TU_NAMESPACE
}  // namespace detail

DEVTENSOR_BEGIN_TU_NAMESPACE

/// Sets every element of `t` to `value` (torch.Tensor.fill_).
template <class T, Device D>
void fill(const tensor<T, D>& t, std::type_identity_t<T> value) {
    DEVTENSOR_STATIC_CHECK_KERNELS("fill", D);
    detail::fill_any("fill", t, value);
}

/// A tensor of shape `s` on `dev` filled with `value` (torch.full).
template <class T, Device D = cpu_device>
[[nodiscard]] tensor<T, D> full(const shape& s, T value, const D& dev = D{}, call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_KERNELS("full", D);
    return detail::filled({"full", site}, s, value, dev);
}

/// A tensor of ones (torch.ones): ones<float>({2, 3}, try_gpu()).
template <class T, Device D = cpu_device>
[[nodiscard]] tensor<T, D> ones(const shape& s, const D& dev = D{}, call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_KERNELS("ones", D);
    return detail::filled({"ones", site}, s, T{1}, dev);
}

/// A tensor of zeros (torch.zeros).
template <class T, Device D = cpu_device>
[[nodiscard]] tensor<T, D> zeros(const shape& s, const D& dev = D{}, call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_KERNELS("zeros", D);
    return detail::filled({"zeros", site}, s, T{0}, dev);
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor
