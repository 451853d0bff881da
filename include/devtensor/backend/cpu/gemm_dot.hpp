// The GEMV shape of the CPU GEMM: few rows of A against B given by contiguous
// columns (linear on a small batch, where B's columns are the weight's rows).
// Each C element is a dot product of two contiguous rows, so every weight row
// is read once, straight from memory: packing it would cost more than the math.
#pragma once

#include <devtensor/backend/cpu/simd.hpp>
#include <devtensor/threads.hpp>

#include <algorithm>
#include <cstdint>

namespace devtensor::backend_cpu {

DEVTENSOR_BEGIN_TU_NAMESPACE

/// Rows of A up to which linear takes the dot-product path.
inline constexpr std::int64_t dot_path_max_rows = 16;

#if DEVTENSOR_HAS_X86_KERNELS

#  pragma GCC diagnostic push
#  pragma GCC diagnostic ignored "-Wpsabi"  // flattened into the ISA entry points below

/// C[i][j] = sum over p < k of a[i*lda + p] * b[j*ldb + p] (+ bias[j]) for an
/// MB x NB block, MB*NB vector accumulators summed across lanes at the end.
template <class V, int MB, int NB, class T>
inline void dot_block(std::int64_t k, const T* a, std::int64_t lda, const T* b, std::int64_t ldb,
                      T* c, std::int64_t ldc, const T* bias) {
    typename V::type acc[MB][NB];
    DEVTENSOR_UNROLL(8)
    for (int i = 0; i < MB; ++i)
        DEVTENSOR_UNROLL(8)
        for (int j = 0; j < NB; ++j) acc[i][j] = V::zero();
    std::int64_t p = 0;
    for (; p + V::lanes <= k; p += V::lanes) {
        typename V::type bv[NB];
        DEVTENSOR_UNROLL(8)
        for (int j = 0; j < NB; ++j) bv[j] = V::load(b + j * ldb + p);
        DEVTENSOR_UNROLL(8)
        for (int i = 0; i < MB; ++i) {
            const auto av = V::load(a + i * lda + p);
            DEVTENSOR_UNROLL(8)
            for (int j = 0; j < NB; ++j) acc[i][j] = V::fma(av, bv[j], acc[i][j]);
        }
    }
    for (int i = 0; i < MB; ++i)
        for (int j = 0; j < NB; ++j) {
            T s = V::sum(acc[i][j]);
            for (std::int64_t q = p; q < k; ++q) s += a[i * lda + q] * b[j * ldb + q];
            c[i * ldc + j] = bias ? static_cast<T>(s + bias[j]) : s;
        }
}

/// Columns [j0, j1) of C: NB columns at a time (one at a time at the edge),
/// MB_MAX rows at a time (one at a time at the edge).
template <class V, int MB_MAX, int NB, class T>
inline void dot_columns(std::int64_t m, std::int64_t j0, std::int64_t j1, std::int64_t k, const T* a,
                        std::int64_t lda, const T* b, std::int64_t ldb, T* c, std::int64_t ldc,
                        const T* bias) {
    const auto rows = [&]<int W>(std::int64_t j) {
        const T* bj = b + j * ldb;
        const T* biasj = bias ? bias + j : nullptr;
        std::int64_t i = 0;
        for (; i + MB_MAX <= m; i += MB_MAX)
            dot_block<V, MB_MAX, W>(k, a + i * lda, lda, bj, ldb, c + i * ldc + j, ldc, biasj);
        for (; i < m; ++i) dot_block<V, 1, W>(k, a + i * lda, lda, bj, ldb, c + i * ldc + j, ldc, biasj);
    };
    std::int64_t j = j0;
    for (; j + NB <= j1; j += NB) rows.template operator()<NB>(j);
    for (; j < j1; ++j) rows.template operator()<1>(j);
}

template <class T>
__attribute__((target("avx2,fma"), flatten)) void avx2_dot_columns(
    std::int64_t m, std::int64_t j0, std::int64_t j1, std::int64_t k, const T* a, std::int64_t lda,
    const T* b, std::int64_t ldb, T* c, std::int64_t ldc, const T* bias) {
    dot_columns<simd::vec<T, simd::isa::avx2>, 2, 4>(m, j0, j1, k, a, lda, b, ldb, c, ldc, bias);
}

template <class T>
__attribute__((target("avx512f"), flatten)) void avx512_dot_columns(
    std::int64_t m, std::int64_t j0, std::int64_t j1, std::int64_t k, const T* a, std::int64_t lda,
    const T* b, std::int64_t ldb, T* c, std::int64_t ldc, const T* bias) {
    dot_columns<simd::vec<T, simd::isa::avx512>, 4, 6>(m, j0, j1, k, a, lda, b, ldb, c, ldc, bias);
}

#  pragma GCC diagnostic pop

/// C[m x n] = A[m x k] (rows contiguous, stride lda) · B (column j contiguous
/// at b + j*ldb) + bias, threads over the columns. False when this CPU or T
/// has no vector kernel: the caller then takes the packed path.
template <class T>
bool gemm_dot(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, std::int64_t lda,
              const T* b, std::int64_t ldb, T* c, std::int64_t ldc, const T* bias) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        const simd::isa isa = simd::best_isa();
        if (isa == simd::isa::portable) return false;
        const std::int64_t grain = std::max<std::int64_t>(8, (1 << 18) / std::max<std::int64_t>(1, m * k));
        detail::parallel_for(n, grain, [&](std::int64_t j0, std::int64_t j1) {
            if (isa == simd::isa::avx512) avx512_dot_columns(m, j0, j1, k, a, lda, b, ldb, c, ldc, bias);
            else avx2_dot_columns(m, j0, j1, k, a, lda, b, ldb, c, ldc, bias);
        });
        return true;
    }
    return false;
}

#else

template <class T>
bool gemm_dot(std::int64_t, std::int64_t, std::int64_t, const T*, std::int64_t, const T*,
              std::int64_t, T*, std::int64_t, const T*) {
    return false;
}

#endif

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cpu
