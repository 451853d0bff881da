// The x86-64 AVX2+FMA micro-kernel of the CPU GEMM: a 6 x 16 (float) or
// 6 x 8 (double) tile of C held in twelve ymm registers over packed panels.
// Compiled for AVX2 through a target attribute, so the consumer needs no
// -mavx2; gemm.hpp calls it only when the CPU reports AVX2 and FMA.
#pragma once

#include <cstdint>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__CUDA_ARCH__)
#  define DEVTENSOR_HAS_AVX2_KERNEL 1
#  include <immintrin.h>
#else
#  define DEVTENSOR_HAS_AVX2_KERNEL 0
#endif

namespace devtensor::backend_cpu::avx2 {

#if DEVTENSOR_HAS_AVX2_KERNEL

/// True when this CPU can run the kernels below (asked once).
inline bool available() noexcept {
    static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return yes;
}

/// Vector operations on one ymm register of T.
template <class T>
struct ymm;

template <>
struct ymm<float> {
    using type = __m256;
    static constexpr int lanes = 8;
    __attribute__((target("avx2,fma"))) static type zero() { return _mm256_setzero_ps(); }
    __attribute__((target("avx2,fma"))) static type load(const float* p) { return _mm256_loadu_ps(p); }
    __attribute__((target("avx2,fma"))) static type broadcast(const float* p) { return _mm256_broadcast_ss(p); }
    __attribute__((target("avx2,fma"))) static type fma(type a, type b, type c) { return _mm256_fmadd_ps(a, b, c); }
    __attribute__((target("avx2,fma"))) static void store(float* p, type v) { _mm256_storeu_ps(p, v); }
    __attribute__((target("avx2,fma"))) static type add(type a, type b) { return _mm256_add_ps(a, b); }
};

template <>
struct ymm<double> {
    using type = __m256d;
    static constexpr int lanes = 4;
    __attribute__((target("avx2,fma"))) static type zero() { return _mm256_setzero_pd(); }
    __attribute__((target("avx2,fma"))) static type load(const double* p) { return _mm256_loadu_pd(p); }
    __attribute__((target("avx2,fma"))) static type broadcast(const double* p) { return _mm256_broadcast_sd(p); }
    __attribute__((target("avx2,fma"))) static type fma(type a, type b, type c) { return _mm256_fmadd_pd(a, b, c); }
    __attribute__((target("avx2,fma"))) static void store(double* p, type v) { _mm256_storeu_pd(p, v); }
    __attribute__((target("avx2,fma"))) static type add(type a, type b) { return _mm256_add_pd(a, b); }
};

/// The 6 x NR block of C at `c` (row stride ldc), NR = 2 vectors:
/// C (+)= sum over k < kc of a[k*6 + i] * b[k*NR + j], then + bias[j] when given.
/// `accumulate` adds to what C holds (a later kc block), else C is overwritten.
template <class T>
__attribute__((target("avx2,fma"), flatten)) void micro_kernel(std::int64_t kc, const T* a, const T* b,
                                                               T* c_out, std::int64_t ldc,
                                                               bool accumulate, const T* bias) {
    using V = ymm<T>;
    constexpr int mr = 6, nr = 2 * V::lanes;
    // Each row spelled out (no loop, no lambda), so that the twelve accumulators
    // live in registers under g++ and nvcc's host pass alike.
#define DEVTENSOR_AVX2_ROWS(S) S(0) S(1) S(2) S(3) S(4) S(5)
    typename V::type c[mr][2];
#define DEVTENSOR_AVX2_ZERO(i) c[i][0] = c[i][1] = V::zero();
    DEVTENSOR_AVX2_ROWS(DEVTENSOR_AVX2_ZERO)
#if !defined(__CUDACC__)
#  pragma GCC unroll 4
#endif
    for (std::int64_t k = 0; k < kc; ++k) {
        const auto b0 = V::load(b), b1 = V::load(b + V::lanes);
#define DEVTENSOR_AVX2_FMA(i)                 \
    {                                          \
        const auto ai = V::broadcast(a + (i)); \
        c[i][0] = V::fma(ai, b0, c[i][0]);     \
        c[i][1] = V::fma(ai, b1, c[i][1]);     \
    }
        DEVTENSOR_AVX2_ROWS(DEVTENSOR_AVX2_FMA)
        a += mr;
        b += nr;
    }
    const bool add_bias = !accumulate && bias != nullptr;
    const auto bias0 = add_bias ? V::load(bias) : V::zero();
    const auto bias1 = add_bias ? V::load(bias + V::lanes) : V::zero();
#define DEVTENSOR_AVX2_STORE(i)                                                    \
    {                                                                              \
        T* row = c_out + (i) * ldc;                                                \
        const auto old0 = accumulate ? V::load(row) : bias0;                       \
        const auto old1 = accumulate ? V::load(row + V::lanes) : bias1;            \
        V::store(row, V::add(c[i][0], old0));                                      \
        V::store(row + V::lanes, V::add(c[i][1], old1));                           \
    }
    DEVTENSOR_AVX2_ROWS(DEVTENSOR_AVX2_STORE)
#undef DEVTENSOR_AVX2_STORE
#undef DEVTENSOR_AVX2_FMA
#undef DEVTENSOR_AVX2_ZERO
#undef DEVTENSOR_AVX2_ROWS
}

#else

inline bool available() noexcept { return false; }

#endif

}  // namespace devtensor::backend_cpu::avx2
