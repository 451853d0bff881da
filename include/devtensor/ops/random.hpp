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

/// Fills `t` from `dist` (detail::uniform_distribution, ...; random.hpp): reserves
/// the Philox numbers its elements take from `gen`, then runs t's device's backend.
/// The one path of every random op (and of nn::linear's initialisation).
template <class Dist, class T, class D>
void philox_any(const char* op, const Dist& dist, const tensor<T, D>& t, generator& gen) {
    check_defined(op, {{"the tensor", t.defined()}});
    const std::int64_t n = t.numel();
    const std::uint64_t first_block =
        gen.reserve_blocks(static_cast<std::uint64_t>(n) * Dist::template words_per_element<T>);
    on_device(
        op, t.device(), [&] { backend_cpu::philox_fill(dist, t.data(), n, gen.seed(), first_block); },
        [&]([[maybe_unused]] auto ordinal) {
#if DEVTENSOR_HAS_CUDA
            backend_cuda::philox_fill(ordinal, dist, t.data(), n, gen.seed(), first_block);
#endif
        });
}

/// A new tensor of shape `s` on `dev` filled from `dist`, drawing from `gen`, or
/// from dev's default generator when `gen` is null (looked up once the tensor exists).
template <class T, class Dist, class D>
tensor<T, D> philox_tensor(const char* op, const Dist& dist, const shape& s, const D& dev, generator* gen,
                           call_site site) {
    tensor<T, D> t(s, dev, {op, site});
    philox_any(op, dist, t, gen != nullptr ? *gen : default_generator(dev));
    return t;
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

DEVTENSOR_BEGIN_TU_NAMESPACE
/// randint's distribution for [low, high), once check_randint_bounds<T> accepts it.
template <class T>
randint_distribution randint_distribution_of(std::int64_t low, std::int64_t high) {
    check_randint_bounds<T>(low, high);
    return {low, static_cast<std::uint64_t>(high) - static_cast<std::uint64_t>(low)};
}
DEVTENSOR_END_TU_NAMESPACE

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
        const auto drawn = detail::philox_tensor<T>("fill_uniform", detail::uniform_distribution{}, t.shape(),
                                                    t.device(), &gen, call_site{});
        return detail::map_out("fill_uniform", detail::copy_element{}, t, drawn);
    }
    detail::philox_any("fill_uniform", detail::uniform_distribution{}, t, gen);
}

/// Uniform [0, 1) numbers of shape `s` on `dev` from `gen` (torch.rand).
/// Element i depends only on (gen.seed(), gen.offset(), i).
template <class T, Device D>
[[nodiscard]] tensor<T, D> rand(const shape& s, const D& dev, generator& gen, call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_FLOATING("rand", T);
    DEVTENSOR_STATIC_CHECK_KERNELS("rand", D);
    return detail::philox_tensor<T>("rand", detail::uniform_distribution{}, s, dev, &gen, site);
}

/// rand from the default generator of `dev`.
template <class T, Device D = cpu_device>
[[nodiscard]] tensor<T, D> rand(const shape& s, const D& dev = D{}, call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_FLOATING("rand", T);
    DEVTENSOR_STATIC_CHECK_KERNELS("rand", D);
    return detail::philox_tensor<T>("rand", detail::uniform_distribution{}, s, dev, nullptr, site);
}

/// Standard normal numbers (mean 0, variance 1) of shape `s` on `dev` from `gen`
/// (torch.randn): Box–Muller on the Philox stream rand uses, 16 bytes of output
/// per Philox block. Element i depends only on (gen.seed(), gen.offset(), i):
/// the same bits on the CPU at any thread count and on every GPU.
template <class T, Device D>
[[nodiscard]] tensor<T, D> randn(const shape& s, const D& dev, generator& gen, call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_FLOATING("randn", T);
    DEVTENSOR_STATIC_CHECK_KERNELS("randn", D);
    return detail::philox_tensor<T>("randn", detail::normal_distribution{}, s, dev, &gen, site);
}

/// randn from the default generator of `dev`.
template <class T, Device D = cpu_device>
[[nodiscard]] tensor<T, D> randn(const shape& s, const D& dev = D{}, call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_FLOATING("randn", T);
    DEVTENSOR_STATIC_CHECK_KERNELS("randn", D);
    return detail::philox_tensor<T>("randn", detail::normal_distribution{}, s, dev, nullptr, site);
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
    return detail::philox_tensor<T>("randint", detail::randint_distribution_of<T>(low, high), s, dev, &gen, site);
}

/// randint from the default generator of `dev`.
template <class T = std::int64_t, Device D = cpu_device>
[[nodiscard]] tensor<T, D> randint(std::int64_t low, std::int64_t high, const shape& s, const D& dev = D{},
                                   call_site site = call_site::current()) {
    DEVTENSOR_DETAIL_STATIC_CHECK_RANDINT(T);
    DEVTENSOR_STATIC_CHECK_KERNELS("randint", D);
    return detail::philox_tensor<T>("randint", detail::randint_distribution_of<T>(low, high), s, dev, nullptr, site);
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor
