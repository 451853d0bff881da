// The GEMV shape of the CPU GEMM: a few rows of A (m <= 16, a small batch),
// each C element a dot product of a row of A and a column of B, summed in the
// GEMV order of detail/gemm_order.hpp (interleaved chains, folded pairwise),
// as the CUDA GEMV kernel sums it. Threads take whole columns of C. Where B's
// columns are contiguous (linear's weight rows), every weight row is read once,
// straight from memory, and the kernels vectorise across k (a dot's chains in
// registers). Where B's rows are (matmul's B), they vectorise across the columns
// instead (a register per chain, a lane per column): the same sums lane by
// lane, B copied a block of whole row pieces at a time (no transposing copy,
// which cost matmul 0.5x). Any other B is copied a block of columns at a time.
#pragma once

#include <devtensor/backend/cpu/isa_kernels.hpp>
#include <devtensor/detail/gemm_order.hpp>
#include <devtensor/threads.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

namespace devtensor::backend_cpu {

DEVTENSOR_BEGIN_TU_NAMESPACE

/// A strided matrix operand: element (r, c) is data[r * row + c * col].
template <class T>
struct matrix_view {
    const T* data;
    std::int64_t row, col;
    const T& operator()(std::int64_t r, std::int64_t c) const { return data[r * row + c * col]; }
};

/// Grow-only working memory of the calling thread (slot 0: B's panels, slot 1:
/// A's, slot 2: the dot path's columns or B's rows, slot 3: the dot path's rows of A or a
/// narrow C's transpose), so repeated GEMMs neither allocate nor page-fault. Written
/// before it is read.
template <class T>
T* scratch(int slot, std::size_t count) {
    struct block {
        std::unique_ptr<T[]> data;
        std::size_t size = 0;
    };
    thread_local block blocks[4];
    block& b = blocks[slot];
    if (b.size < count) {
        b.data = std::make_unique_for_overwrite<T[]>(count);
        b.size = count;
    }
    return b.data.get();
}

/// Rows of A up to which the GEMV order (and so this path) applies.
inline constexpr std::int64_t dot_path_max_rows = detail::gemv_order_max_rows;

/// Columns [j0, j1) of C = A·B + bias in the GEMV order, plain C++ (detail::gemv_order_dot).
template <class T>
void portable_dot_columns(std::int64_t m, std::int64_t j0, std::int64_t j1, std::int64_t k, const T* a,
                          std::int64_t lda, const T* b, std::int64_t ldb, T* c, std::int64_t ldc, const T* bias) {
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = j0; j < j1; ++j)
            c[i * ldc + j] = detail::plus_bias(detail::gemv_order_dot(k, a + i * lda, std::int64_t{1}, b + j * ldb,
                                                                      std::int64_t{1}),
                                               bias, j);
}

#if DEVTENSOR_HAS_X86_KERNELS

/// The dot-product columns of each ISA, with their register blocking: rows x columns per
/// block (AVX2 holds a dot's 16 float or 8 double chains in two registers, AVX-512 in one).
/// AVX2 takes four columns a block for a single row (batch 1: ten loads a step for eight
/// fmas, not six for four; 4096 -> 4096 from memory 0.86x -> 0.97-1.04x cblas_sgemv),
/// two rows by three columns otherwise (ten loads for twelve fmas, twelve of the sixteen
/// registers accumulating; two by two was eight for eight: batch 16 ran 14% slower).
template <class T>
void avx2_dot_columns(std::int64_t m, std::int64_t j0, std::int64_t j1, std::int64_t k, const T* a,
                      std::int64_t lda, const T* b, std::int64_t ldb, T* c, std::int64_t ldc, const T* bias) {
    if (m == 1) return avx2::dot_columns<1, 4>(m, j0, j1, k, a, lda, b, ldb, c, ldc, bias);
    avx2::dot_columns<2, 3>(m, j0, j1, k, a, lda, b, ldb, c, ldc, bias);
}

template <class T>
void avx512_dot_columns(std::int64_t m, std::int64_t j0, std::int64_t j1, std::int64_t k, const T* a,
                        std::int64_t lda, const T* b, std::int64_t ldb, T* c, std::int64_t ldc, const T* bias) {
    avx512::dot_columns<4, 6>(m, j0, j1, k, a, lda, b, ldb, c, ldc, bias);
}

#endif

/// Columns [j0, j1) with the kernel of `isa` (one this CPU runs); b's column j at b + j*ldb.
template <class T>
void dot_columns_on(simd::isa isa, std::int64_t m, std::int64_t j0, std::int64_t j1, std::int64_t k,
                    const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T* c, std::int64_t ldc,
                    const T* bias) {
#if DEVTENSOR_HAS_X86_KERNELS
    if (isa == simd::isa::avx512) return avx512_dot_columns(m, j0, j1, k, a, lda, b, ldb, c, ldc, bias);
    if (isa == simd::isa::avx2) return avx2_dot_columns(m, j0, j1, k, a, lda, b, ldb, c, ldc, bias);
#endif
    (void)isa;
    portable_dot_columns(m, j0, j1, k, a, lda, b, ldb, c, ldc, bias);
}

/// Columns [j0, j1) of C = A·B + bias in the GEMV order, B row-major (row p at b + p*ldb),
/// plain C++: 16 columns at a time, chain by chain as detail::gemv_order_dot sums them.
template <class T>
void portable_gemv_rows(std::int64_t m, std::int64_t j0, std::int64_t j1, std::int64_t k, const T* a,
                        std::int64_t lda, const T* b, std::int64_t ldb, T* c, std::int64_t ldc, const T* bias) {
    constexpr int L = detail::gemv_chains<T>;
    constexpr std::int64_t W = 16;
    for (std::int64_t j = j0; j < j1; j += W) {
        const std::int64_t w = std::min(W, j1 - j);
        for (std::int64_t i = 0; i < m; ++i) {
            T chains[static_cast<std::size_t>(L)][static_cast<std::size_t>(W)] = {};
            const T* ai = a + i * lda;
            for (std::int64_t p0 = 0; p0 < k; p0 += L)
                for (int l = 0; l < L; ++l) {
                    const std::int64_t p = p0 + l;
                    if (p < k) {
                        const T* bp = b + p * ldb + j;
                        for (std::int64_t x = 0; x < w; ++x) chains[l][x] = detail::fma(ai[p], bp[x], chains[l][x]);
                    } else {  // the zero-padded last step
                        for (std::int64_t x = 0; x < w; ++x) chains[l][x] = detail::fma(T{}, T{}, chains[l][x]);
                    }
                }
            for (std::int64_t x = 0; x < w; ++x) {
                T column[static_cast<std::size_t>(L)];
                for (int l = 0; l < L; ++l) column[l] = chains[l][x];
                c[i * ldc + j + x] = detail::plus_bias(detail::fold_chains(column), bias, j + x);
            }
        }
    }
}

/// Columns [j0, j1) in strips of W columns with `strip` (an ISA's gemv_strip), which
/// copies B a block of KC rows at a time into this thread's working memory.
template <std::int64_t W, std::int64_t KC, class T, class Strip>
void gemv_strips(Strip strip, std::int64_t m, std::int64_t j0, std::int64_t j1, std::int64_t k, const T* a,
                 std::int64_t lda, const T* b, std::int64_t ldb, T* c, std::int64_t ldc, const T* bias) {
    constexpr std::int64_t L = detail::gemv_chains<T>;  // a block holds whole steps
    T* const packed = scratch<T>(2, static_cast<std::size_t>(std::min(KC, (k + L - 1) / L * L) * W));
    for (std::int64_t j = j0; j < j1; j += W) {
        strip(m, k, a, lda, b + j, ldb, c + j, ldc, bias ? bias + j : nullptr, std::min(W, j1 - j), packed);
    }
}

#if DEVTENSOR_HAS_X86_KERNELS

/// The across-columns kernels of each ISA, with their blocking: rows x registers x chains
/// per register block (AVX2: 4 x 2 x 1 of 16 ymm, AVX-512: 4 x 2 x 2 of 32 zmm), strips
/// of two registers of columns, B's rows in blocks of 128 KiB of the strip (L2).
template <class T>
void avx2_gemv_rows(std::int64_t m, std::int64_t j0, std::int64_t j1, std::int64_t k, const T* a,
                    std::int64_t lda, const T* b, std::int64_t ldb, T* c, std::int64_t ldc, const T* bias) {
    constexpr int NV = 2;
    constexpr std::int64_t W = avx2::row_chain_columns<T, NV>,
                           KC = (128 << 10) / (W * static_cast<std::int64_t>(sizeof(T)));
    gemv_strips<W, KC>(&avx2::gemv_strip<4, NV, 1, KC, T>, m, j0, j1, k, a, lda, b, ldb, c, ldc, bias);
}

/// k up to which AVX-512 keeps a row's chains in registers and reads B from cache
/// (avx512::gemv_rows_in_registers; B's rows of a register of columns: 16 KiB of floats).
inline constexpr std::int64_t gemv_in_registers_max_k = 256;

template <class T>
void avx512_gemv_rows(std::int64_t m, std::int64_t j0, std::int64_t j1, std::int64_t k, const T* a,
                      std::int64_t lda, const T* b, std::int64_t ldb, T* c, std::int64_t ldc, const T* bias) {
    if (k <= gemv_in_registers_max_k) {  // whole registers of columns here, the rest in a strip below
        constexpr std::int64_t lanes = simd::vec<T, simd::isa::avx512>::lanes;
        const std::int64_t whole = j0 + (j1 - j0) / lanes * lanes;
        avx512::gemv_rows_in_registers(m, j0, whole, k, a, lda, b, ldb, c, ldc, bias);
        if (whole == j1) return;
        j0 = whole;
    }
    constexpr int NV = 2;
    constexpr std::int64_t W = avx512::row_chain_columns<T, NV>,
                           KC = (128 << 10) / (W * static_cast<std::int64_t>(sizeof(T)));
    gemv_strips<W, KC>(&avx512::gemv_strip<4, NV, 2, KC, T>, m, j0, j1, k, a, lda, b, ldb, c, ldc, bias);
}

#endif

/// Columns [j0, j1) with the across-columns kernel of `isa` (one this CPU runs); B row-major.
template <class T>
void gemv_rows_on(simd::isa isa, std::int64_t m, std::int64_t j0, std::int64_t j1, std::int64_t k, const T* a,
                  std::int64_t lda, const T* b, std::int64_t ldb, T* c, std::int64_t ldc, const T* bias) {
#if DEVTENSOR_HAS_X86_KERNELS
    if (isa == simd::isa::avx512) return avx512_gemv_rows(m, j0, j1, k, a, lda, b, ldb, c, ldc, bias);
    if (isa == simd::isa::avx2) return avx2_gemv_rows(m, j0, j1, k, a, lda, b, ldb, c, ldc, bias);
#endif
    (void)isa;
    portable_gemv_rows(m, j0, j1, k, a, lda, b, ldb, c, ldc, bias);
}

/// Columns a thread's share of a row-major B starts on a multiple of: whole strips of every kernel.
inline constexpr std::int64_t gemv_rows_unit = 32;

/// Columns of B a thread copies contiguous at a time when they are not.
inline constexpr std::int64_t dot_column_block = 64;

/// C[m x n] = A[m x k] · B[k x n] + bias (bias may be null) in the GEMV order,
/// with the dot kernel of `isa`, threads over the columns of C.
template <class T>
void gemm_dot(simd::isa isa, std::int64_t m, std::int64_t n, std::int64_t k, matrix_view<T> a,
              matrix_view<T> b, T* c, std::int64_t ldc, const T* bias) {
    static_assert(std::is_floating_point_v<T>, "gemm_dot: the GEMV order is for float and double");
    // A's rows contiguous: copied when they are not (at most 16 rows), into the calling
    // thread's working memory (slot 3: the threads below use slot 2 only).
    const T* a_data = a.data;
    std::int64_t lda = a.row;
    if (a.col != 1) {
        T* const a_rows = scratch<T>(3, static_cast<std::size_t>(m * k));
        for (std::int64_t p = 0; p < k; ++p)  // along A's columns, as a transposed A lies
            for (std::int64_t i = 0; i < m; ++i) a_rows[i * k + p] = a(i, p);
        a_data = a_rows;
        lda = k;
    }
    const std::int64_t grain = std::max<std::int64_t>(8, (1 << 18) / std::max<std::int64_t>(1, m * k));
    if (b.col == 1 && b.row != 1) {  // B's rows contiguous: across the columns, threads on whole strips
        const std::int64_t units = (n + gemv_rows_unit - 1) / gemv_rows_unit;
        detail::parallel_for(units, (grain + gemv_rows_unit - 1) / gemv_rows_unit, [&](std::int64_t u0, std::int64_t u1) {
            gemv_rows_on(isa, m, u0 * gemv_rows_unit, std::min(n, u1 * gemv_rows_unit), k, a_data, lda, b.data, b.row,
                         c, ldc, bias);
        });
        return;
    }
    detail::parallel_for(n, grain, [&](std::int64_t j0, std::int64_t j1) {
        if (b.row == 1) return dot_columns_on(isa, m, j0, j1, k, a_data, lda, b.data, b.col, c, ldc, bias);
        // Column j at columns + j*ld; ld one cache line past a multiple of 64 bytes, so
        // that the block's columns do not all fall into one L1 set (4 KiB aliasing).
        const std::int64_t ld = (k + 15) / 16 * 16 + 64 / static_cast<std::int64_t>(sizeof(T));
        T* const columns = scratch<T>(2, static_cast<std::size_t>(dot_column_block * ld));
        for (std::int64_t jb = j0; jb < j1; jb += dot_column_block) {
            const std::int64_t w = std::min(dot_column_block, j1 - jb);
            // In tiles of 64 k: the tile's rows of B stay in cache while each column is written.
            for (std::int64_t p0 = 0; p0 < k; p0 += 64) {
                const std::int64_t p1 = std::min(k, p0 + 64);
                for (std::int64_t j = 0; j < w; ++j)
                    for (std::int64_t p = p0; p < p1; ++p) columns[j * ld + p] = b(p, jb + j);
            }
            dot_columns_on(isa, m, std::int64_t{0}, w, k, a_data, lda, columns, ld, c + jb, ldc,
                           bias ? bias + jb : nullptr);
        }
    });
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cpu
