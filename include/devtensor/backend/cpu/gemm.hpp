// CPU GEMM, C = A·B (+ bias per column), BLIS-style: B packed into KC x NC
// panels, A into MC x KC panels, an MR x NR register micro-tile (shared with
// the CUDA kernel) over them, threads over the MC blocks, the bias fused into
// the first store. A and B are read through (row, column) strides, so
// transposed operands (linear's weight) cost nothing extra.
#pragma once

#include <devtensor/detail/gemm_tile.hpp>
#include <devtensor/threads.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace devtensor::backend_cpu {

DEVTENSOR_BEGIN_TU_NAMESPACE

/// Blocking for element type T: NR spans 64 bytes of B (two AVX2 registers of float).
template <class T>
struct gemm_blocking {
    static constexpr int mr = 6;
    static constexpr int nr = std::clamp<int>(64 / static_cast<int>(sizeof(T)), 4, 16);
    static constexpr std::int64_t kc = 256;             // A and B micro-panels stay in L1/L2
    static constexpr std::int64_t mc = 16 * mr;         // A block in L2
    static constexpr std::int64_t nc = 128 * nr;        // B block in L3
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
    std::vector<T> packed_b(static_cast<std::size_t>(blk::kc * ((blk::nc + nr - 1) / nr * nr)));
    for (std::int64_t jc = 0; jc < n; jc += blk::nc) {
        const std::int64_t nc = std::min(blk::nc, n - jc);
        for (std::int64_t pc = 0; pc < k; pc += blk::kc) {
            const std::int64_t kc = std::min(blk::kc, k - pc);
            pack_panels<nr>(bt, jc, nc, pc, kc, packed_b.data());
            const std::int64_t m_blocks = (m + blk::mc - 1) / blk::mc;
            const std::int64_t grain = std::max<std::int64_t>(1, (1 << 18) / (kc * nc));
            detail::parallel_for(m_blocks, grain, [&](std::int64_t first, std::int64_t last) {
                std::vector<T> packed_a(static_cast<std::size_t>(blk::mc * kc));
                for (std::int64_t block = first; block < last; ++block) {
                    const std::int64_t ic = block * blk::mc;
                    const std::int64_t mc = std::min(blk::mc, m - ic);
                    pack_panels<mr>(a, ic, mc, pc, kc, packed_a.data());
                    for (std::int64_t jr = 0; jr < nc; jr += nr) {
                        for (std::int64_t ir = 0; ir < mc; ir += mr) {
                            T acc[mr][nr] = {};
                            detail::gemm_micro_tile<mr, nr>(kc, packed_a.data() + ir * kc,
                                                            std::int64_t{mr}, std::int64_t{1},
                                                            packed_b.data() + jr * kc,
                                                            std::int64_t{nr}, std::int64_t{1}, acc);
                            const std::int64_t h = std::min<std::int64_t>(mr, mc - ir);
                            const std::int64_t w = std::min<std::int64_t>(nr, nc - jr);
                            for (std::int64_t i = 0; i < h; ++i) {
                                T* row = c + (ic + ir + i) * ldc + jc + jr;
                                for (std::int64_t j = 0; j < w; ++j) {
                                    if (pc != 0) row[j] += acc[i][j];
                                    else row[j] = bias ? static_cast<T>(acc[i][j] + bias[jc + jr + j])
                                                       : acc[i][j];
                                }
                            }
                        }
                    }
                }
            });
        }
    }
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cpu
