// rand: uniform [0, 1) from a generator's Philox stream, bit-identical on
// every device and thread count.
#pragma once

#include <devtensor/backend/cpu/random.hpp>
#include <devtensor/detail/op_checks.hpp>
#include <devtensor/random.hpp>
#include <devtensor/tensor.hpp>
#if DEVTENSOR_HAS_CUDA
#  include <devtensor/backend/cuda/kernels.cuh>
#endif

#include <concepts>

namespace devtensor {

namespace detail {
DEVTENSOR_BEGIN_TU_NAMESPACE

template <class T, class D>
void uniform_any([[maybe_unused]] const char* op, const tensor<T, D>& t, generator& gen) {
    const std::int64_t n = t.numel();
    const std::uint64_t first_block =
        gen.reserve_blocks(static_cast<std::uint64_t>(n) * philox_words_per_element<T>);
    const device dev(t.device());
    if (dev.is_cpu()) {
        backend_cpu::uniform(t.data(), n, gen.seed(), first_block);
    } else {
#if DEVTENSOR_HAS_CUDA
        backend_cuda::uniform(dev.index(), t.data(), n, gen.seed(), first_block);
#else
        throw_no_kernels(op, dev);
#endif
    }
}

DEVTENSOR_END_TU_NAMESPACE
}  // namespace detail

DEVTENSOR_BEGIN_TU_NAMESPACE

/// Fills `t` with uniform [0, 1) numbers from `gen`, advancing it (torch.Tensor.uniform_).
template <std::floating_point T, Device D>
void fill_uniform(const tensor<T, D>& t, generator& gen) {
    DEVTENSOR_STATIC_CHECK_KERNELS("fill_uniform", D);
    detail::uniform_any("fill_uniform", t, gen);
}

/// Uniform [0, 1) numbers of shape `s` on `dev` from `gen` (torch.rand).
/// Element i depends only on (gen.seed(), gen.offset(), i).
template <std::floating_point T, Device D>
tensor<T, D> rand(const shape& s, const D& dev, generator& gen) {
    DEVTENSOR_STATIC_CHECK_KERNELS("rand", D);
    tensor<T, D> t(s, dev);
    detail::uniform_any("rand", t, gen);
    return t;
}

/// rand from the default generator of `dev`.
template <std::floating_point T, Device D = cpu_device>
tensor<T, D> rand(const shape& s, const D& dev = D{}) {
    DEVTENSOR_STATIC_CHECK_KERNELS("rand", D);
    tensor<T, D> t(s, dev);
    detail::uniform_any("rand", t, default_generator(dev));
    return t;
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor
