// The arithmetic that both backends share, with its rounding spelled out
// (DESIGN §15): detail::fma rounds once, detail::mul and detail::add round each
// step and are never contracted into an fma — not by nvcc's --fmad (the device
// intrinsics forbid it) and not by GCC's -ffp-contract=fast (the host product
// passes through an empty asm, which no optimiser fuses across).
#pragma once

#include <devtensor/config.hpp>

#include <cmath>
#include <cstddef>
#include <type_traits>

namespace devtensor::detail {

/// A GCC vector of floating-point lanes (__m128, __m128d): what the CPU's vector
/// loops hand a functor that `vectorizes`; mul and add keep their rounding on it too.
template <class T>
concept float_vector = requires(T v) {
    requires !std::is_arithmetic_v<T>;
    requires std::is_floating_point_v<std::remove_cvref_t<decltype(v[0])>>;
};

/// x in every lane of V (x itself when V is a scalar): a functor's scalar parameter
/// beside its vector operands.
template <class V, class T>
DEVTENSOR_HOST_DEVICE inline V splat(T x) {
    if constexpr (std::is_same_v<V, T>) {
        return x;
    } else {
        return x - V{};  // the scalar broadcast (x - +0 is x, -0 and NaN included): one shuffle, hoisted
    }
}

/// An opaque copy of a host value: the optimiser must materialise it, so a
/// product stays a product (no fma) and a sum a sum.
template <class T>
inline T opaque(T value) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    if constexpr (std::is_floating_point_v<T> || float_vector<T>) __asm__("" : "+x"(value));
#elif defined(__GNUC__) && defined(__aarch64__)
    if constexpr (std::is_floating_point_v<T> || float_vector<T>) __asm__("" : "+w"(value));
#else
    volatile T copy = value;
    value = copy;
#endif
    return value;
}

/// a * b + c rounded once, on every device.
template <class T>
DEVTENSOR_HOST_DEVICE inline T fma(T a, T b, T c) {
    if constexpr (std::is_floating_point_v<T>) {
#ifdef __CUDA_ARCH__
        if constexpr (sizeof(T) == 4) return __fmaf_rn(a, b, c);
        else return __fma_rn(a, b, c);
#else
        return std::fma(a, b, c);
#endif
    } else {
        return static_cast<T>(a * b + c);
    }
}

/// a * b rounded, never fused with a later addition.
template <class T>
DEVTENSOR_HOST_DEVICE inline T mul(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
#ifdef __CUDA_ARCH__
        if constexpr (sizeof(T) == 4) return __fmul_rn(a, b);
        else return __dmul_rn(a, b);
#else
        return opaque(a * b);
#endif
    } else if constexpr (float_vector<T>) {
        return opaque(a * b);  // the CPU's vector loops: each lane as the scalar
    } else {
        return static_cast<T>(a * b);
    }
}

/// a + b rounded, never fused with an earlier product.
template <class T>
DEVTENSOR_HOST_DEVICE inline T add(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
#ifdef __CUDA_ARCH__
        if constexpr (sizeof(T) == 4) return __fadd_rn(a, b);
        else return __dadd_rn(a, b);
#else
        return opaque(a + b);
#endif
    } else if constexpr (float_vector<T>) {
        return opaque(a + b);
    } else {
        return static_cast<T>(a + b);
    }
}

}  // namespace devtensor::detail
