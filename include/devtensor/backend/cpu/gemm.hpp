// CPU GEMM, C = A·B (+ bias per column), BLIS-style: B packed into KC x NC
// panels, A into MC x KC panels, an MR x NR register micro-tile (shared with
// the CUDA kernel) over them, threads over the MC blocks, the bias fused into
// the first store. A and B are read through (row, column) strides, so
// transposed operands (linear's weight) cost nothing extra.
#pragma once

#include <devtensor/backend/cpu/gemm_avx2.hpp>
#include <devtensor/detail/gemm_tile.hpp>
#include <devtensor/threads.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>

namespace devtensor::backend_cpu {

DEVTENSOR_BEGIN_TU_NAMESPACE

/// Blocking for element type T: NR spans 64 bytes of B (two AVX2 registers of float).
template <class T>
struct gemm_blocking {
    static constexpr int mr = 6;
    static constexpr int nr = std::clamp<int>(64 / static_cast<int>(sizeof(T)), 4, 16);
    static constexpr std::int64_t kc = 384;  // a B micro-panel (kc x nr) fits L1
    static constexpr std::int64_t mc = 16 * mr;  // an A block (mc x kc) fits L2
    static constexpr std::int64_t nc = 128 * nr;  // a B block (kc x nc) fits L3
};

/// A strided matrix operand: element (r, c) is data[r * row + c * col].
template <class T>
struct matrix_view {
    const T* data;
    std::int64_t row, col;
    const T& operator()(std::int64_t r, std::int64_t c) const { return data[r * row + c * col]; }
};

/// Packs rows [r0, r0+rows) x columns [c0, c0+cols) of `m` into panels of `w`
/// rows, each panel k-major (panel[k*w + i]), zero-padded to a whole panel.
/// With `transpose`, the view is read as its transpose (for B's columns).
template <int W, class T>
void pack_panels(const matrix_view<T>& m, std::int64_t r0, std::int64_t rows, std::int64_t c0,
                 std::int64_t cols, T* out) {
    for (std::int64_t p = 0; p < rows; p += W) {
        const std::int64_t h = std::min<std::int64_t>(W, rows - p);
        for (std::int64_t k = 0; k < cols; ++k) {
            for (std::int64_t i = 0; i < h; ++i) out[k * W + i] = m(r0 + p + i, c0 + k);
            for (std::int64_t i = h; i < W; ++i) out[k * W + i] = T{};
        }
        out += W * cols;
    }
}

/// Whether the AVX2 kernel has a version for T with this tile (the CPU is asked at run time).
template <int MR, int NR, class T>
inline constexpr bool avx2_tile = DEVTENSOR_HAS_AVX2_KERNEL && MR == 6 && NR == 64 / sizeof(T) &&
                                  (std::is_same_v<T, float> || std::is_same_v<T, double>);

/// Writes the h x w part of a computed tile into C: C += tile, or C = tile (+ bias).
template <int MR, int NR, class T>
void store_tile(const T (&tile)[MR][NR], T* c, std::int64_t ldc, std::int64_t h, std::int64_t w,
                bool accumulate, const T* bias) {
    for (std::int64_t i = 0; i < h; ++i) {
        T* row = c + i * ldc;
        for (std::int64_t j = 0; j < w; ++j) {
            if (accumulate) row[j] += tile[i][j];
            else row[j] = bias ? static_cast<T>(tile[i][j] + bias[j]) : tile[i][j];
        }
    }
}

/// One MR x NR tile of C from an A panel and a B panel, kc deep: C (+)= A·B (+ bias).
/// h x w is the part of the tile inside C; full tiles on AVX2 go straight to C.
template <int MR, int NR, class T>
void compute_tile(std::int64_t kc, const T* a, const T* b, T* c, std::int64_t ldc, std::int64_t h,
                  std::int64_t w, bool accumulate, const T* bias) {
#if DEVTENSOR_HAS_AVX2_KERNEL
    if constexpr (avx2_tile<MR, NR, T>) {
        if (avx2::available()) {
            if (h == MR && w == NR) return avx2::micro_kernel(kc, a, b, c, ldc, accumulate, bias);
            T tile[MR][NR];
            avx2::micro_kernel(kc, a, b, &tile[0][0], std::int64_t{NR}, false, static_cast<const T*>(nullptr));
            return store_tile(tile, c, ldc, h, w, accumulate, bias);
        }
    }
#endif
    T acc[MR][NR] = {};
    detail::gemm_micro_tile<MR, NR>(kc, a, std::int64_t{MR}, std::int64_t{1}, b, std::int64_t{NR},
                                    std::int64_t{1}, acc);
    store_tile(acc, c, ldc, h, w, accumulate, bias);
}

/// C[m x n] (row stride ldc) = A[m x k] · B[k x n] + bias[n] (bias may be null).
template <class T>
void gemm(std::int64_t m, std::int64_t n, std::int64_t k, matrix_view<T> a, matrix_view<T> b,
          T* c, std::int64_t ldc, const T* bias) {
    using blk = gemm_blocking<T>;
    constexpr int mr = blk::mr, nr = blk::nr;
    if (m == 0 || n == 0) return;
    if (k == 0) {
        for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < n; ++j) c[i * ldc + j] = bias ? bias[j] : T{};
        return;
    }
    // B as the transposed view, so that pack_panels packs its columns into NR-wide panels.
    const matrix_view<T> bt{b.data, b.col, b.row};
    // Scratch panels are written before they are read: no zero-initialisation.
    const auto packed_b = std::make_unique_for_overwrite<T[]>(
        static_cast<std::size_t>(blk::kc * std::min(blk::nc, (n + nr - 1) / nr * nr)));
    for (std::int64_t jc = 0; jc < n; jc += blk::nc) {
        const std::int64_t nc = std::min(blk::nc, n - jc);
        for (std::int64_t pc = 0; pc < k; pc += blk::kc) {
            const std::int64_t kc = std::min(blk::kc, k - pc);
            pack_panels<nr>(bt, jc, nc, pc, kc, packed_b.get());
            const std::int64_t m_blocks = (m + blk::mc - 1) / blk::mc;
            const std::int64_t grain = std::max<std::int64_t>(1, (1 << 18) / (kc * nc));
            detail::parallel_for(m_blocks, grain, [&](std::int64_t first, std::int64_t last) {
                const auto packed_a = std::make_unique_for_overwrite<T[]>(static_cast<std::size_t>(blk::mc * kc));
                for (std::int64_t block = first; block < last; ++block) {
                    const std::int64_t ic = block * blk::mc;
                    const std::int64_t mc = std::min(blk::mc, m - ic);
                    pack_panels<mr>(a, ic, mc, pc, kc, packed_a.get());
                    for (std::int64_t jr = 0; jr < nc; jr += nr) {
                        for (std::int64_t ir = 0; ir < mc; ir += mr) {
                            compute_tile<mr, nr>(kc, packed_a.get() + ir * kc, packed_b.get() + jr * kc,
                                                 c + (ic + ir) * ldc + jc + jr, ldc,
                                                 std::min<std::int64_t>(mr, mc - ir),
                                                 std::min<std::int64_t>(nr, nc - jr), pc != 0,
                                                 bias ? bias + jc + jr : nullptr);
                        }
                    }
                }
            });
        }
    }
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cpu
