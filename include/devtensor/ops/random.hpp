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
void uniform_any(const char* op, const tensor<T, D>& t, generator& gen) {
    check_defined(op, {{"the tensor", t.defined()}});
    const std::int64_t n = t.numel();
    const std::uint64_t first_block =
        gen.reserve_blocks(static_cast<std::uint64_t>(n) * philox_words_per_element<T>);
    on_device(
        op, t.device(), [&] { backend_cpu::uniform(t.data(), n, gen.seed(), first_block); },
        [&]([[maybe_unused]] auto ordinal) {
#if DEVTENSOR_HAS_CUDA
            backend_cuda::uniform(ordinal, t.data(), n, gen.seed(), first_block);
#endif
        });
}

DEVTENSOR_END_TU_NAMESPACE
}  // namespace detail

DEVTENSOR_BEGIN_TU_NAMESPACE

/// Fills `t` with uniform [0, 1) numbers from `gen`, advancing it (torch.Tensor.uniform_).
template <class T, Device D>
void fill_uniform(const tensor<T, D>& t, generator& gen) {
    DEVTENSOR_STATIC_CHECK_FLOATING("fill_uniform", T);
    DEVTENSOR_STATIC_CHECK_KERNELS("fill_uniform", D);
    detail::uniform_any("fill_uniform", t, gen);
}

/// Uniform [0, 1) numbers of shape `s` on `dev` from `gen` (torch.rand).
/// Element i depends only on (gen.seed(), gen.offset(), i).
template <class T, Device D>
[[nodiscard]] tensor<T, D> rand(const shape& s, const D& dev, generator& gen, call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_FLOATING("rand", T);
    DEVTENSOR_STATIC_CHECK_KERNELS("rand", D);
    tensor<T, D> t(s, dev, {"rand", site});
    detail::uniform_any("rand", t, gen);
    return t;
}

/// rand from the default generator of `dev`.
template <class T, Device D = cpu_device>
[[nodiscard]] tensor<T, D> rand(const shape& s, const D& dev = D{}, call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_FLOATING("rand", T);
    DEVTENSOR_STATIC_CHECK_KERNELS("rand", D);
    tensor<T, D> t(s, dev, {"rand", site});
    detail::uniform_any("rand", t, default_generator(dev));
    return t;
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor
