// CPU GEMM, C = A·B (+ bias per column), BLIS-style: B packed into KC x NC
// panels, A into MC x KC panels, a register-blocked micro-kernel (the widest
// this CPU has, chosen at run time) over them, threads over rows or columns of
// C (each thread its own rectangle and its own panels, one parallel region for
// the whole product), the bias fused into the last store, the next pack's
// source touched ahead while the micro-kernel computes. A and B are read
// through (row, column) strides, so transposed operands (linear's weight) cost
// nothing extra.
// Every path sums in the order of detail/gemm_order.hpp (small batches in the
// GEMV order, gemm_dot.hpp), so the bits do not depend on the ISA, the thread
// count or the device.
#pragma once

#include <devtensor/backend/cpu/gemm_dot.hpp>
#include <devtensor/backend/cpu/gemm_kernel.hpp>
#include <devtensor/backend/cpu/transpose.hpp>  // transpose_detail's kernels, for packing
#include <devtensor/detail/gemm_params.hpp>
#include <devtensor/threads.hpp>

#if defined(__unix__)
#  include <unistd.h>  // sysconf
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

namespace devtensor::backend_cpu {

DEVTENSOR_BEGIN_TU_NAMESPACE

#if DEVTENSOR_HAS_X86_KERNELS
/// transpose_piece's whole V x V blocks (in one AVX2 function, so that the kernel inlines),
/// destination rows outermost: each destination line is finished while in L1 (a packed
/// A block is larger than L1: column by column, every line came back twice; 2.9 -> 1.3 us
/// for [128, 64]).
template <class T>
DEVTENSOR_AVX2 void transpose_blocks_avx2(const T* src, std::int64_t ss, T* dst, std::int64_t ds, std::int64_t rows,
                                          std::int64_t cols) {
    constexpr std::int64_t V = 32 / sizeof(T);
    for (std::int64_t i = 0; i < rows; i += V)
        for (std::int64_t j = 0; j < cols; j += V) transpose_detail::kernel_avx2(src + j * ss + i, ss, dst + i * ds + j, ds);
}
#endif

/// dst[i * ds + j] = src[j * ss + i] for i < rows, j < cols: the packing of an
/// operand that lies transposed to its panels (linear's weight as B, Xᵀ as A).
/// With `avx2` (this CPU runs it), 8 x 8 floats (4 x 4 doubles) at a time in registers.
template <class T>
void transpose_piece(const T* src, std::int64_t ss, T* dst, std::int64_t ds, std::int64_t rows, std::int64_t cols,
                     [[maybe_unused]] bool avx2) {
    std::int64_t whole_rows = 0, whole_cols = 0;
#if DEVTENSOR_HAS_X86_KERNELS
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        if (avx2) {
            constexpr std::int64_t V = 32 / sizeof(T);
            whole_rows = rows / V * V, whole_cols = cols / V * V;
            transpose_blocks_avx2(src, ss, dst, ds, whole_rows, whole_cols);
        }
    }
#endif
    transpose_detail::scalar_tile(src + whole_cols * ss, ss, dst + whole_cols, ds, whole_rows, cols - whole_cols);
    transpose_detail::scalar_tile(src + whole_rows, ss, dst + whole_rows * ds, ds, rows - whole_rows, cols);
}

/// Packs rows [r0, r0+rows) x columns [c0, c0+cols) of `m` into panels of `W`
/// rows, each panel k-major (panel[k*W + i]), zero-padded to a whole panel: B's
/// panels, from its transposed view. `avx2`: transpose_piece's.
template <int W, class T>
void pack_panels(const matrix_view<T>& m, std::int64_t r0, std::int64_t rows, std::int64_t c0,
                 std::int64_t cols, T* out, bool avx2) {
    const std::int64_t whole = m.row == 1 ? rows / W * W : 0;
    if (whole > 0) {  // B row-major: its rows read along memory, a fixed-size copy of W per panel
        // Eight of B's rows at a time, panel by panel: each panel's eight rows are written
        // along memory (a row at a time, its W elements went to every panel in turn: 768 x
        // 1024 floats from L3, 0.188 -> 0.091 ms; a memcpy of it 0.076).
        constexpr std::int64_t rows_at_once = 8;
        for (std::int64_t k = 0; k < cols; k += rows_at_once) {
            const std::int64_t steps = std::min(rows_at_once, cols - k);
            const T* from = &m(r0, c0 + k);
#if DEVTENSOR_HAS_X86_KERNELS
            if constexpr ((std::is_same_v<T, float> || std::is_same_v<T, double>) && W * sizeof(T) % 32 == 0)
                if (avx2) {
                    avx2::copy_runs<W>(whole / W, steps, from, std::int64_t{W}, m.col, out + k * W, W * cols);
                    continue;
                }
#endif
            for (std::int64_t p = 0; p < whole; p += W)
                for (std::int64_t s = 0; s < steps; ++s)
                    std::copy_n(from + p + s * m.col, W, out + p * cols + (k + s) * W);
        }
    }
    for (std::int64_t p = whole; p < rows; p += W) {
        T* const panel = out + p * cols;
        const std::int64_t h = std::min<std::int64_t>(W, rows - p);
        if (m.col == 1 && m.row != 1) {  // B column-major (a weight's transpose): k runs along memory
            transpose_piece(&m(r0 + p, c0), m.row, panel, std::int64_t{W}, cols, h, avx2);
        } else {
            for (std::int64_t k = 0; k < cols; ++k)
                for (std::int64_t i = 0; i < h; ++i) panel[k * W + i] = m(r0 + p + i, c0 + k);
        }
        for (std::int64_t k = 0; k < cols; ++k) std::fill(panel + k * W + h, panel + (k + 1) * W, T{});
    }
}

/// Packs rows [r0, r0+rows) x columns [c0, c0+cols) of A into panels of `W`
/// rows, each row of a panel `LD` apart (panel[i*LD + k]; a panel takes W*LD),
/// rows past the end zero. Panels follow each other, so row r of the block lies
/// at out + r*LD: for a row-major A each row is a copy; a column-major one (Xᵀ)
/// is one transpose_piece of the whole block (`avx2` its), not one per panel
/// (a panel of 6 or 14 rows is not a whole number of its 8 x 8 blocks).
template <int W, std::int64_t LD, class T>
void pack_row_panels(const matrix_view<T>& m, std::int64_t r0, std::int64_t rows, std::int64_t c0,
                     std::int64_t cols, T* out, bool avx2) {
    if (m.row == 1 && m.col != 1) {
        transpose_piece(&m(r0, c0), m.col, out, LD, rows, cols, avx2);
    } else {
        for (std::int64_t i = 0; i < rows; ++i) {
            const T* from = &m(r0 + i, c0);
            if (m.col == 1) std::copy_n(from, cols, out + i * LD);
            else
                for (std::int64_t k = 0; k < cols; ++k) out[i * LD + k] = from[k * m.col];
        }
    }
    for (std::int64_t i = rows; i % W != 0; ++i) std::fill_n(out + i * LD, cols, T{});
}

/// The part of C one thread computes: rows [r0, r1), columns [c0, c1).
struct gemm_part {
    std::int64_t r0, r1, c0, c1;
};

/// Multiply-adds a packed element is counted as when split weighs its choices: a rough
/// model (packing copied about two elements a cycle in a 64 x 65536 x 64 product on Zen 4,
/// the AVX2 micro-kernel does 16 multiply-adds a cycle), not a tuned constant.
inline constexpr std::int64_t gemm_packing_weight = 8;

/// Part `p` of `parts` of C[m x n]: whole micro-tiles, along the rows or along the
/// columns, whichever gives the largest part less to do. A part packs its own panels, so
/// a split along the rows repeats B's packing in every part, one along the columns A's:
/// a part's cost is its multiply-adds per k plus its packed elements per k, weighted.
template <int MR, int NR>
gemm_part split(std::int64_t m, std::int64_t n, std::int64_t p, std::int64_t parts) {
    const std::int64_t row_tiles = (m + MR - 1) / MR, col_tiles = (n + NR - 1) / NR;
    const std::int64_t rows = std::min(m, (row_tiles + parts - 1) / parts * MR),  // the largest parts
        cols = std::min(n, (col_tiles + parts - 1) / parts * NR);
    const std::int64_t by_rows_cost = rows * n + gemm_packing_weight * (n + rows),
                       by_cols_cost = m * cols + gemm_packing_weight * (m + cols);
    // each way gives every part some work only while there are as many tiles as parts
    if (row_tiles >= parts && (col_tiles < parts || by_rows_cost <= by_cols_cost))
        return {std::min(m, row_tiles * p / parts * MR), std::min(m, row_tiles * (p + 1) / parts * MR), 0, n};
    return {0, m, std::min(n, col_tiles * p / parts * NR), std::min(n, col_tiles * (p + 1) / parts * NR)};
}

/// Multiply-adds a thread should get before one more thread pays for itself.
inline constexpr std::int64_t gemm_work_per_part = std::int64_t{1} << 20;

/// Parts split<mr, nr> cuts C[m x n] (k-deep sums) into: by work, micro-tiles and threads.
inline std::int64_t gemm_parts(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t mr,
                               std::int64_t nr, std::int64_t threads) {
    // One part per gemm_work_per_part multiply-adds, counted in double: m * n * k can
    // overflow int64, and only its size matters here.
    const double by_work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) /
                           static_cast<double>(gemm_work_per_part);
    // split gives every part some work while parts <= max(row tiles, column tiles).
    const std::int64_t tiles = std::max(m / mr + (m % mr != 0), n / nr + (n % nr != 0));
    std::int64_t parts = std::min(threads, tiles);
    if (by_work < static_cast<double>(parts)) parts = static_cast<std::int64_t>(by_work);
    return std::max<std::int64_t>(parts, 1);
}

/// Aims `next` at rows x cols of m from (r0, c0), each run along m's unit-stride side;
/// at nothing when it has none, or when its runs overlap (a broadcast's stride 0): such
/// views are left to the hardware's prefetchers.
template <class T>
void aim(prefetch_cursor& next, const matrix_view<T>& m, std::int64_t r0, std::int64_t rows, std::int64_t c0,
         std::int64_t cols) {
    const bool along_rows = m.col == 1;  // else along the columns
    if (!along_rows && m.row != 1) return;
    const std::int64_t runs = along_rows ? rows : cols, run = along_rows ? cols : rows,
                       stride = along_rows ? m.row : m.col;
    if (runs > 1 && stride < run) return;
    constexpr auto size = static_cast<std::int64_t>(sizeof(T));
    next.walk(&m(r0, c0), runs, run * size, stride * size);
}

/// Bytes of L2 that the lines touched ahead share with the panels in use: a core's L2 as
/// the CPU reports it (sysconf), kept within 512 KiB and 2 MiB (Zen 3's and Sapphire
/// Rapids'), 512 KiB where it reports none. Lines that push the packed B out of L2 cost
/// more than they save: touched ahead on a 512 KiB L2, 256 x 4096 x 1024 (a 1 MB B block)
/// ran at 0.71-0.87x OpenBLAS's speed in two runs, 0.94-0.99x without; on Zen 4's 1 MiB,
/// 64 x 65536 x 64's AVX-512 panels (384 KiB) and next packs fit, 71 -> 83-86 GFLOP/s.
/// Where SMT siblings or a cluster of E-cores share that L2, a thread gets less of it:
/// not accounted for (not measured).
inline std::int64_t gemm_prefetch_l2_bytes() noexcept {
    static const std::int64_t bytes = [] {
        constexpr std::int64_t smallest = std::int64_t{512} << 10, largest = std::int64_t{2} << 20;
        std::int64_t reported = 0;
#if defined(_SC_LEVEL2_CACHE_SIZE)
        reported = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
        return reported > 0 ? std::clamp(reported, smallest, largest) : smallest;
    }();
    return bytes;
}

/// Steps a kc block needs before its row bands pack A's panels as they go.
inline constexpr std::int64_t gemm_fused_a_min_kc = 256;

/// Whether a block of A, kc steps deep, whose row bands have tiles nc columns wide, is
/// packed band by band by each band's first tile (K's PackA form) rather than in a pass:
/// where A's rows lie along memory, the tile is whole and the chains long. 1 thread, median
/// of 9 alternated runs, ratio to oneDNN: 1024³ 0.972 -> 0.984, 512 x 4096 x 512 0.939 ->
/// 0.952. Short chains do not hide the copy (4096 x 64 x 4096: 1.04 -> 1.02).
template <class K, class T>
bool bands_pack_a(const matrix_view<T>& a, std::int64_t nc, std::int64_t kc) {
    return a.col == 1 && nc >= K::nr && kc >= gemm_fused_a_min_kc;
}

/// Aims the cursors at what the packs after row block `ic` of (jc, pc) in `part` read.
/// During its last row block: the next kc (or column) block's B and its first A, or after
/// the last block `then`'s (the next product of a batch, may be null: [64, 256, 256] on 1
/// thread 0.87 -> 0.89x oneDNN's speed). During the others: the next row block's A, where
/// its bands pack it as they go (read 14 rows at a time from memory, a batch's fresh 256 x
/// 256 matrices ran 2.6% slower than with a pass; touched ahead, 0.6%); a pass is left to
/// the hardware (touched ahead as well: 0-2%, within the noise). At nothing unless those
/// lines and the panels in use (`panel_bytes`) fit gemm_prefetch_l2_bytes().
template <class K, class T>
void aim_at_next_packs(const gemm_part& part, std::int64_t k, const matrix_view<T>& a, const matrix_view<T>& bt,
                       std::int64_t jc, std::int64_t pc, std::int64_t ic, std::int64_t panel_bytes,
                       const detail::gemm_params<T>* then, prefetch_cursor& next_a, prefetch_cursor& next_b) {
    next_a = next_b = prefetch_cursor{};
    if (ic + K::mc < part.r1) {
        const std::int64_t kc = std::min(K::kc, k - pc);
        if (bands_pack_a<K>(a, std::min(K::nc, part.c1 - jc), kc))
            aim(next_a, a, ic + K::mc, std::min(K::mc, part.r1 - ic - K::mc), pc, kc);
    } else {
        pc += K::kc;
        if (pc >= k) pc = 0, jc += K::nc;
        const std::int64_t kc = std::min(K::kc, k - pc);
        if (jc < part.c1) {
            aim(next_b, bt, jc, std::min(K::nc, part.c1 - jc), pc, kc);
            aim(next_a, a, part.r0, std::min(K::mc, part.r1 - part.r0), pc, kc);
        } else if (then) {  // the next product's first packs (the same shape, all of it this thread's)
            aim(next_b, matrix_view<T>{then->b, then->b_col, then->b_row}, 0, std::min(K::nc, then->n), 0, kc);
            aim(next_a, matrix_view<T>{then->a, then->a_row, then->a_col}, 0, std::min(K::mc, then->m), 0, kc);
        }
    }
    if ((next_a.lines + next_b.lines) * prefetch_cursor::line_bytes + panel_bytes > gemm_prefetch_l2_bytes())
        next_a = next_b = prefetch_cursor{};
}

/// One part of gemm_blocked, on the calling thread: its column blocks, kc blocks, row
/// blocks, row bands and the micro-tiles along them, its panels in this thread's working memory.
template <class K, class T>
void gemm_blocked_part(const gemm_part& part, std::int64_t k, const matrix_view<T>& a, const matrix_view<T>& bt,
                       T* c, std::int64_t ldc, const T* bias, const detail::gemm_params<T>* then) {
    constexpr int mr = K::mr, nr = K::nr;
    static_assert(K::kc * sizeof(T) % 4096 != 0,  // double at kc 512 on Zen 4: 53 -> 41 GFLOP/s
                  "the rows of A's panel, kc apart, would meet in one set of L1 (4 KiB a way)");
    T* const packed_b =
        scratch<T>(0, static_cast<std::size_t>(K::kc * std::min(K::nc, (part.c1 - part.c0 + nr - 1) / nr * nr)));
    T* const packed_a = scratch<T>(1, static_cast<std::size_t>(K::mc * K::kc));
    // Where B's rows lie along memory, the first row band is whole and a block of B fits
    // L2, that band's tiles pack B's whole panels as they read them (only a last, partial
    // panel is packed first): 1 thread, 256³ 0.97 -> 0.99x oneDNN, 512³ +1.7%, [64, 256,
    // 256] +2-3.5%. Larger blocks are packed in a pass of their own: read from L3, rows
    // a power of two apart, the band's tiles waited on them (1024³, 3 MB blocks: -1-3%).
    const bool band_packs_b = bt.row == 1 && part.r1 - part.r0 >= mr &&
                              static_cast<std::int64_t>(sizeof(T)) * std::min(K::kc, k) *
                                      std::min(K::nc, part.c1 - part.c0) <= gemm_prefetch_l2_bytes();
    for (std::int64_t jc = part.c0; jc < part.c1; jc += K::nc) {
        const std::int64_t nc = std::min(K::nc, part.c1 - jc);
        const std::int64_t band_packed = band_packs_b ? nc / nr * nr : 0;  // columns the first band packs
        for (std::int64_t pc = 0; pc < k; pc += K::kc) {
            const std::int64_t kc = std::min(K::kc, k - pc);
            // Each whole row band's first tile packs the band's panel of A as it goes, but for
            // the first band of a block whose tiles pack B's panels: a band's rows that tile
            // does not pack are packed before the band.
            const bool by_bands = bands_pack_a<K>(a, nc, kc);
            // panel p at p * nr * kc
            pack_panels<nr>(bt, jc + band_packed, nc - band_packed, pc, kc, packed_b + band_packed * kc, K::vector_isa);
            const bool resume = pc != 0, final_block = pc + kc == k;
            for (std::int64_t ic = part.r0; ic < part.r1; ic += K::mc) {
                const std::int64_t mc = std::min(K::mc, part.r1 - ic);
                if (!by_bands) pack_row_panels<mr, K::kc>(a, ic, mc, pc, kc, packed_a, K::vector_isa);
                // The lines the next packs read, spread over this row block's tiles (a tile
                // touches at most one every K::ahead_every k steps).
                prefetch_cursor next_a, next_b;
                const auto panel_bytes = static_cast<std::int64_t>(sizeof(T)) * kc * (mc + nc);
                aim_at_next_packs<K>(part, k, a, bt, jc, pc, ic, panel_bytes, then, next_a, next_b);
                const std::int64_t tiles = (mc + mr - 1) / mr * ((nc + nr - 1) / nr),
                                   per_tile = (next_a.lines + next_b.lines + tiles - 1) / tiles;
                // Along C's rows: each tile's C follows the last one's in memory (down C's
                // columns, every tile began on lines mr rows apart: a C of 64 MB written from
                // zero, 4096 x 64 x 4096 float, ran 1.25x slower), A's micro-panel stays in
                // cache (L1 for AVX2's 6 x 256) and B's micro-panels stream from the packed block.
                for (std::int64_t ir = 0; ir < mc; ir += mr) {
                    const std::int64_t h = std::min<std::int64_t>(mr, mc - ir);
                    const bool band_packs_a = by_bands && h == mr && !(ic == part.r0 && ir == 0 && band_packed > 0);
                    if (by_bands && !band_packs_a)
                        pack_row_panels<mr, K::kc>(a, ic + ir, h, pc, kc, packed_a + ir * K::kc, K::vector_isa);
                    for (std::int64_t jr = 0; jr < nc; jr += nr) {
                        const std::int64_t w = std::min<std::int64_t>(nr, nc - jr);
                        const T* tile_bias = final_block && bias ? bias + jc + jr : nullptr;
                        prefetch_cursor* const next = next_b.runs != 0   ? &next_b
                                                      : next_a.runs != 0 ? &next_a
                                                                         : nullptr;
                        if (next) next->allow(per_tile);
                        T* tile_c = c + (ic + ir) * ldc + jc + jr;
                        const T* tile_a = packed_a + ir * K::kc;
                        const T* tile_b = packed_b + jr * kc;
                        // The next tile's C (along the rows, then the next row band's first),
                        // when that tile is whole, owned before its tile reads or writes it:
                        // partial sums from memory for a large C (4096³, 1 thread: 1.29 -> 1.27
                        // s, best of 2), lines out of cache for a C written from nothing (a
                        // batch's matrices, each a fresh 256 KB: [64, 256, 256] 0.90 -> 0.93x
                        // oneDNN's speed, 1 thread).
                        const T* next_c = nullptr;
                        if (jr + 2 * nr <= nc && h == mr) next_c = tile_c + nr;
                        else if (jr + nr >= nc && ir + 2 * mr <= mc && nc >= nr)
                            next_c = c + (ic + ir + mr) * ldc + jc;
                        if (ic == part.r0 && ir == 0 && jr < band_packed) {  // packs B's panel on the way
                            K::tile(kc, tile_a, &bt(jc + jr, pc), tile_c, ldc, resume, tile_bias, next, next_c, bt.col,
                                    packed_b + jr * kc);
                        } else if (jr == 0 && band_packs_a) {  // packs A's panel on the way
                            K::tile(kc, &a(ic + ir, pc), tile_b, tile_c, ldc, resume, tile_bias, next, next_c, 0,
                                    static_cast<T*>(nullptr), a.row, packed_a + ir * K::kc);
                        } else if (h == mr && w == nr) {
                            K::tile(kc, tile_a, tile_b, tile_c, ldc, resume, tile_bias, next, next_c);
                        } else {  // an edge tile: computed aside, then its inside stored
                            T edge[static_cast<std::size_t>(mr)][static_cast<std::size_t>(nr)];
                            if (resume) load_tile(edge, tile_c, ldc, h, w);
                            K::edge_tile(h, w, kc, tile_a, tile_b, &edge[0][0], nr, resume);
                            store_tile(edge, tile_c, ldc, h, w, tile_bias);
                        }
                    }
                }
            }
        }
    }
}

/// C[m x n] (row stride ldc) = A[m x k] · B[k x n] + bias[n] with micro-kernel K, in
/// the GEMM order: each kc block continues the chains the previous one left in C,
/// and the last adds the bias. `then` (may be null): the product this thread runs next
/// (a batch's next matrix), whose first packs this one's last blocks touch ahead when it
/// has the same shape and this one runs on one thread.
template <class K, class T>
void gemm_blocked(std::int64_t m, std::int64_t n, std::int64_t k, matrix_view<T> a,
                  matrix_view<T> b, T* c, std::int64_t ldc, const T* bias,
                  const detail::gemm_params<T>* then = nullptr) {
    // B as the transposed view, so that pack_panels packs its columns into NR-wide panels.
    const matrix_view<T> bt{b.data, b.col, b.row};
    // One parallel region for the whole product: each part packs what it needs and runs
    // every block of its own rectangle of C, so no thread waits for another between kc
    // blocks (a fork and join per block cost a 64 x 65536 x 64 product its second thread).
    // Each element of C sums in the same order whatever the parts: the tile grid and the
    // kc blocks do not depend on the split.
    const std::int64_t parts = gemm_parts(m, n, k, K::mr, K::nr, detail::threads_here());
    if (parts > 1 || (then && (then->m != m || then->n != n || then->k != k))) then = nullptr;
    detail::parallel_for(parts, 1, [&](std::int64_t first, std::int64_t last) {
        for (std::int64_t p = first; p < last; ++p)
            gemm_blocked_part<K>(split<K::mr, K::nr>(m, n, p, parts), k, a, bt, c, ldc, bias, then);
    });
}

/// Multiply-adds up to which a product in the GEMM order skips packing: a tiny
/// layer's whole product costs less than packing its panels would.
inline constexpr std::int64_t gemm_direct_max_work = 512;

/// C = A·B + bias in the GEMM order without packing, element by element: the
/// elements' chains are independent, so the core overlaps them.
template <class T>
void gemm_direct(std::int64_t m, std::int64_t n, std::int64_t k, matrix_view<T> a, matrix_view<T> b, T* c,
                 std::int64_t ldc, const T* bias) {
    for (std::int64_t j = 0; j < n; ++j)  // columns outermost, as avx2::direct_elements
        for (std::int64_t i = 0; i < m; ++i)
            c[i * ldc + j] = detail::plus_bias(
                detail::gemm_order_dot(k, a.data + i * a.row, a.col, b.data + j * b.col, b.row), bias, j);
}

/// gemm_blocked with the micro-kernel of `isa`.
template <class T>
void gemm_blocked_on(simd::isa isa, std::int64_t m, std::int64_t n, std::int64_t k, matrix_view<T> a,
                     matrix_view<T> b, T* c, std::int64_t ldc, const T* bias,
                     const detail::gemm_params<T>* then = nullptr) {
#if DEVTENSOR_HAS_X86_KERNELS
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        switch (isa) {
            case simd::isa::avx512: return gemm_blocked<avx512_kernel<T>>(m, n, k, a, b, c, ldc, bias, then);
            case simd::isa::avx2: return gemm_blocked<avx2_kernel<T>>(m, n, k, a, b, c, ldc, bias, then);
            case simd::isa::portable: break;
        }
    }
#endif
    (void)isa;
    gemm_blocked<portable_kernel<T>>(m, n, k, a, b, c, ldc, bias, then);
}

/// Columns of C up to which a GEMM-order product with more rows than columns is
/// computed as Cᵀ = Bᵀ·Aᵀ (each element the same chain, so the same bits): a narrow C
/// (a classifier's 10 logits) would fill a third of each micro-tile; its transpose fills them.
inline constexpr std::int64_t gemm_transposed_max_cols = 16;

/// C[m x n] (row stride ldc) = A[m x k] · B[k x n] + bias[n] (bias may be null)
/// with the kernels of `isa`, which this CPU must run: the dispatch below, and
/// the tests, which call every ISA this CPU has. The result is the same for all.
/// `then`: gemm_blocked's.
template <class T>
void gemm_on(simd::isa isa, std::int64_t m, std::int64_t n, std::int64_t k, matrix_view<T> a,
             matrix_view<T> b, T* c, std::int64_t ldc, const T* bias,
             const detail::gemm_params<T>* then = nullptr) {
    if (m == 0 || n == 0) return;
    if (k == 0) {  // the empty sum (+0), then the bias
        for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < n; ++j) c[i * ldc + j] = detail::plus_bias(T{}, bias, j);
        return;
    }
    // Integer products are exact in any order: they keep the packed path.
    if constexpr (std::is_floating_point_v<T>)
        if (detail::uses_gemv_order(m, n, k)) return gemm_dot(isa, m, n, k, a, b, c, ldc, bias);
    if (n * k <= gemm_direct_max_work / m) {  // too small to pack
#if DEVTENSOR_HAS_X86_KERNELS
        if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
            if (isa != simd::isa::portable)
                return avx2::direct_elements(m, n, k, a.data, a.row, a.col, b.data, b.row, b.col, c, ldc, bias);
#endif
        return gemm_direct(m, n, k, a, b, c, ldc, bias);
    }
    if (n <= gemm_transposed_max_cols && m > n) {
        T* const ct = scratch<T>(3, static_cast<std::size_t>(m * n));  // Cᵀ, n x m
        gemm_blocked_on(isa, n, m, k, matrix_view<T>{b.data, b.col, b.row}, matrix_view<T>{a.data, a.col, a.row},
                        ct, m, static_cast<const T*>(nullptr));
        for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < n; ++j) c[i * ldc + j] = detail::plus_bias(ct[j * m + i], bias, j);
        return;
    }
    gemm_blocked_on(isa, m, n, k, a, b, c, ldc, bias, then);
}

/// C[m x n] (row stride ldc) = A[m x k] · B[k x n] + bias[n] (bias may be null),
/// with the widest kernels this CPU runs; `then`: gemm_blocked's.
template <class T>
void gemm(std::int64_t m, std::int64_t n, std::int64_t k, matrix_view<T> a, matrix_view<T> b,
          T* c, std::int64_t ldc, const T* bias, const detail::gemm_params<T>* then = nullptr) {
    gemm_on(simd::best_isa(), m, n, k, a, b, c, ldc, bias, then);
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cpu
