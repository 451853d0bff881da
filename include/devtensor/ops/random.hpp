// rand, randn, randint: uniform [0, 1), standard normal and uniform integers
// from a generator's Philox stream, bit-identical on every device and thread count.
#pragma once

#include <devtensor/backend/cpu/random.hpp>
#include <devtensor/detail/op_checks.hpp>
#include <devtensor/random.hpp>
#include <devtensor/ops/copy.hpp>
#include <devtensor/tensor.hpp>
#if DEVTENSOR_HAS_CUDA
#  include <devtensor/backend/cuda/kernels.cuh>
#endif

#include <concepts>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

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

template <class T, class D>
void normal_any(const char* op, const tensor<T, D>& t, generator& gen) {
    check_defined(op, {{"the tensor", t.defined()}});
    const std::int64_t n = t.numel();
    const std::uint64_t first_block =
        gen.reserve_blocks(static_cast<std::uint64_t>(n) * philox_words_per_element<T>);
    on_device(
        op, t.device(), [&] { backend_cpu::normal(t.data(), n, gen.seed(), first_block); },
        [&]([[maybe_unused]] auto ordinal) {
#if DEVTENSOR_HAS_CUDA
            backend_cuda::normal(ordinal, t.data(), n, gen.seed(), first_block);
#endif
        });
}

template <class T, class D>
void randint_any(const char* op, const tensor<T, D>& t, std::int64_t low, std::int64_t high, generator& gen) {
    check_defined(op, {{"the tensor", t.defined()}});
    const std::int64_t n = t.numel();
    const std::uint64_t range = static_cast<std::uint64_t>(high) - static_cast<std::uint64_t>(low);
    // two Philox words per element (randint_per_philox_block), whatever T
    const std::uint64_t first_block = gen.reserve_blocks(static_cast<std::uint64_t>(n) * 2);
    on_device(
        op, t.device(), [&] { backend_cpu::randint(t.data(), n, low, range, gen.seed(), first_block); },
        [&]([[maybe_unused]] auto ordinal) {
#if DEVTENSOR_HAS_CUDA
            backend_cuda::randint(ordinal, t.data(), n, low, range, gen.seed(), first_block);
#endif
        });
}

DEVTENSOR_END_TU_NAMESPACE

/// randint serves integers and floating types (holding integer values, as PyTorch), not bool.
template <class T>
inline constexpr bool randint_refused_v = std::is_same_v<T, bool>;

/// The values randint<T> can produce: T's range, or for a floating T the
/// integers it holds exactly (±2^24 for float, ±2^53 for double).
template <class T>
void check_randint_bounds(std::int64_t low, std::int64_t high) {
    const auto fail = [&](const std::string& why) {
        throw error("devtensor::randint: " + why + " (low = " + std::to_string(low) + ", high = " +
                    std::to_string(high) + ")");
    };
    if (high <= low) fail("expects low < high, but got low >= high; values are drawn from [low, high)");
    std::int64_t min = 0, max = 0;
    if constexpr (std::is_floating_point_v<T>) {
        max = std::int64_t{1} << std::numeric_limits<T>::digits;
        min = -max;
    } else if constexpr (std::is_same_v<T, std::uint64_t>) {
        max = std::numeric_limits<std::int64_t>::max();  // low and high are int64, as in PyTorch
    } else {
        min = static_cast<std::int64_t>(std::numeric_limits<T>::min());
        max = static_cast<std::int64_t>(std::numeric_limits<T>::max());
    }
    if (low < min || high - 1 > max)
        fail("[low, high) does not fit " + std::string(dtype_of<T>) + ", whose values are " +
             std::to_string(min) + " .. " + std::to_string(max) + (std::is_floating_point_v<T> ? " as integers" : ""));
}

}  // namespace detail

#define DEVTENSOR_DETAIL_STATIC_CHECK_RANDINT(T)                                                   \
    DEVTENSOR_FOR_EACH_ELEMENT(DEVTENSOR_DETAIL_REFUSE_IF, "randint", T, randint_refused_v,         \
                               "is not served: it needs an integral or floating-point element "    \
                               "type other than bool")                                             \
    static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>,                             \
                  "devtensor::randint: needs an integral or floating-point element type other "    \
                  "than bool")

DEVTENSOR_BEGIN_TU_NAMESPACE

/// Fills `t` with uniform [0, 1) numbers from `gen`, advancing it (torch.Tensor.uniform_).
template <class T, Device D>
void fill_uniform(const tensor<T, D>& t, generator& gen) {
    DEVTENSOR_STATIC_CHECK_FLOATING("fill_uniform", T);
    DEVTENSOR_STATIC_CHECK_KERNELS("fill_uniform", D);
    if (t.defined() && !t.is_contiguous()) {  // a view: drawn in its element order, then copied in
        const tensor<T, D> drawn(t.shape(), t.device(), {"fill_uniform", call_site{}});
        detail::uniform_any("fill_uniform", drawn, gen);
        return detail::map_out("fill_uniform", detail::copy_element{}, t, drawn);
    }
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

/// Standard normal numbers (mean 0, variance 1) of shape `s` on `dev` from `gen`
/// (torch.randn): Box–Muller on the Philox stream rand uses, 16 bytes of output
/// per Philox block. Element i depends only on (gen.seed(), gen.offset(), i):
/// the same bits on the CPU at any thread count and on every GPU.
template <class T, Device D>
[[nodiscard]] tensor<T, D> randn(const shape& s, const D& dev, generator& gen, call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_FLOATING("randn", T);
    DEVTENSOR_STATIC_CHECK_KERNELS("randn", D);
    tensor<T, D> t(s, dev, {"randn", site});
    detail::normal_any("randn", t, gen);
    return t;
}

/// randn from the default generator of `dev`.
template <class T, Device D = cpu_device>
[[nodiscard]] tensor<T, D> randn(const shape& s, const D& dev = D{}, call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_FLOATING("randn", T);
    DEVTENSOR_STATIC_CHECK_KERNELS("randn", D);
    tensor<T, D> t(s, dev, {"randn", site});
    detail::normal_any("randn", t, default_generator(dev));
    return t;
}

/// Uniform integers in [low, high) of shape `s` on `dev` from `gen` (torch.randint);
/// T integral (int64 by default) or floating (integer values). Each element takes
/// 64 random bits, low + floor(u (high - low) / 2^64), and depends only on
/// (gen.seed(), gen.offset(), i). Throws devtensor::error when high <= low or
/// [low, high) does not fit T.
template <class T = std::int64_t, Device D>
[[nodiscard]] tensor<T, D> randint(std::int64_t low, std::int64_t high, const shape& s, const D& dev,
                                   generator& gen, call_site site = call_site::current()) {
    DEVTENSOR_DETAIL_STATIC_CHECK_RANDINT(T);
    DEVTENSOR_STATIC_CHECK_KERNELS("randint", D);
    detail::check_randint_bounds<T>(low, high);
    tensor<T, D> t(s, dev, {"randint", site});
    detail::randint_any("randint", t, low, high, gen);
    return t;
}

/// randint from the default generator of `dev`.
template <class T = std::int64_t, Device D = cpu_device>
[[nodiscard]] tensor<T, D> randint(std::int64_t low, std::int64_t high, const shape& s, const D& dev = D{},
                                   call_site site = call_site::current()) {
    DEVTENSOR_DETAIL_STATIC_CHECK_RANDINT(T);
    DEVTENSOR_STATIC_CHECK_KERNELS("randint", D);
    detail::check_randint_bounds<T>(low, high);
    tensor<T, D> t(s, dev, {"randint", site});
    detail::randint_any("randint", t, low, high, default_generator(dev));
    return t;
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor
