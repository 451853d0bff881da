// The GEMV shape of the CPU GEMM: few rows of A against B given by contiguous
// columns (linear on a small batch, where B's columns are the weight's rows).
// Each C element is a dot product of two contiguous rows, so every weight row
// is read once, straight from memory: packing it would cost more than the math.
#pragma once

#include <devtensor/backend/cpu/isa_kernels.hpp>
#include <devtensor/threads.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace devtensor::backend_cpu {

DEVTENSOR_BEGIN_TU_NAMESPACE

/// Rows of A up to which linear takes the dot-product path.
inline constexpr std::int64_t dot_path_max_rows = 16;

#if DEVTENSOR_HAS_X86_KERNELS

/// The dot-product columns of each ISA, with their register blocking: rows x columns per block.
template <class T>
void avx2_dot_columns(std::int64_t m, std::int64_t j0, std::int64_t j1, std::int64_t k, const T* a,
                      std::int64_t lda, const T* b, std::int64_t ldb, T* c, std::int64_t ldc, const T* bias) {
    avx2::dot_columns<2, 4>(m, j0, j1, k, a, lda, b, ldb, c, ldc, bias);
}

template <class T>
void avx512_dot_columns(std::int64_t m, std::int64_t j0, std::int64_t j1, std::int64_t k, const T* a,
                        std::int64_t lda, const T* b, std::int64_t ldb, T* c, std::int64_t ldc, const T* bias) {
    avx512::dot_columns<4, 6>(m, j0, j1, k, a, lda, b, ldb, c, ldc, bias);
}

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
