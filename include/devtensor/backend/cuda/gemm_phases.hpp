// Bodies of the CUDA GEMM kernel (C = A·B + bias) as phase functions: a block
// tile of C in registers, its A and B panels double-buffered in shared memory
// by cp.async, bias fused into the store; and of the small-batch GEMV kernel.
// Both sum in the order of detail/gemm_order.hpp, as the CPU does, through
// detail::fma and detail::add (nothing left for nvcc to contract).
// tests/test_cuda_emulator.cpp runs the phases in the kernels' order over every
// block and thread of a simulated grid.
#pragma once

#include <devtensor/backend/cuda/access.hpp>
#include <devtensor/detail/arith.hpp>       // fma, add
#include <devtensor/detail/gemm_order.hpp>  // the order, plus_bias
#include <devtensor/detail/gemm_params.hpp>

#include <cstdint>

namespace devtensor::backend_cuda {

DEVTENSOR_BEGIN_TU_NAMESPACE

template <class T>
using gemm_params = detail::gemm_params<T>;

/// Block tile BM x BN, BK deep per pipeline stage; each thread holds TM x TN of
/// C as (TM/4) x (TN/4) sub-tiles of 4 x 4, spaced so that a warp's 16-byte
/// shared-memory reads are contiguous or broadcast (no bank conflicts).
template <int BM, int BN, int BK, int TM, int TN>
struct gemm_block_shape {
    static constexpr int bm = BM, bn = BN, bk = BK, tm = TM, tn = TN;
    static constexpr int threads_m = BM / TM, threads_n = BN / TN;
    static constexpr int threads = threads_m * threads_n;
    // Shared rows padded by 4: rows stay 16-byte aligned, and the transposing
    // 4-byte copies of neighbouring k land in different banks.
    static constexpr int lda = BM + 4, ldb = BN + 4;
    static constexpr int stage = BK * (lda + ldb);  // elements per pipeline stage
    static constexpr int stages = 2;
    static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "gemm_block_shape: 4 x 4 sub-tiles, k in runs of 4");
    static_assert(BM % TM == 0 && BN % TN == 0, "gemm_block_shape: the thread tile must divide the block tile");
};

/// fp32 for large problems: 256 threads, 8 x 8 each, 33 KiB of shared memory.
using gemm_block_shape_large = gemm_block_shape<128, 128, 16, 8, 8>;
/// Small problems (more blocks than the large tile gives) and fp64: 256 threads, 4 x 4 each.
using gemm_block_shape_small = gemm_block_shape<64, 64, 16, 4, 4>;

/// Block `id` of a 1-D grid -> its tile (tile_m, tile_n). Tiles go in groups of
/// 8 tile-rows, column by column within a group, so the blocks resident at one
/// time share A and B panels in L2.
DEVTENSOR_HOST_DEVICE inline void gemm_tile_of(std::int64_t id, std::int64_t tiles_m,
                                               std::int64_t tiles_n, std::int64_t& tile_m,
                                               std::int64_t& tile_n) {
    constexpr std::int64_t group = 8;
    const std::int64_t per_group = group * tiles_n, first = id / per_group * group;
    const std::int64_t rows = tiles_m - first < group ? tiles_m - first : group;
    tile_m = first + id % per_group % rows;
    tile_n = id % per_group / rows;
}

/// One operand as the copy sees it: element (k, x) at base[k*sk + x*sx] for
/// k < depth, x < extent (x is m for A, n for B).
template <class T>
struct gemm_operand {
    const T* base;
    std::int64_t sk, sx, extent, depth;
};

/// Element (k, x) into shared `dst`, zero outside the matrix.
template <class T>
DEVTENSOR_HOST_DEVICE inline void copy_element(T* dst, const gemm_operand<T>& g, std::int64_t k,
                                               std::int64_t x) {
    async_copy_element(dst, g.base + k * g.sk + x * g.sx, k < g.depth && x < g.extent, g.base);
}

/// Copies the BK x BX panel at (k0, x0) of one operand into shared `s[k][x]`
/// (row length LD), in runs of 4 elements: along k when k is contiguous
/// (transposed, one element per copy), else along x, 16 bytes per copy where
/// the source allows it.
template <int BX, int BK, int LD, int THREADS, class T>
DEVTENSOR_HOST_DEVICE inline void copy_panel(const gemm_operand<T>& g, std::int64_t x0,
                                             std::int64_t k0, int t, T* s) {
    constexpr int runs = BX * BK / 4;
    static_assert(runs % THREADS == 0 && BX % 16 == 0 && BK % 8 == 0, "copy_panel: whole runs per thread");
#if defined(__CUDA_ARCH__)
#  pragma unroll 1
#endif
    for (int j = 0; j < runs / THREADS; ++j) {
        const int r = t + j * THREADS;
        if (g.sk == 1) {
            // A warp takes 16 neighbouring x and 2 runs of k: each of its 4-byte copies
            // lands in 32 different banks (LD = 4 mod 32), and each row's reads are coalesced.
            const int w = r / 32, l = r % 32;
            const int x = w % (BX / 16) * 16 + l % 16, kk = (w / (BX / 16) * 2 + l / 16) * 4;
            const std::int64_t gx = x0 + x, gk = k0 + kk;
            const T* src = g.base + gx * g.sx + gk;
            for (int e = 0; e < 4; ++e)
                async_copy_element(s + (kk + e) * LD + x, src + e, gx < g.extent && gk + e < g.depth, g.base);
            continue;
        }
        const int kk = r / (BX / 4), x = r % (BX / 4) * 4;
        const std::int64_t gk = k0 + kk, gx = x0 + x;
        const T* src = g.base + gk * g.sk + gx * g.sx;
        if (g.sx == 1 && gk < g.depth && gx < g.extent && aligned16(src)) {
            constexpr int per_copy = pack16<T>;
            for (int e = 0; e < 4; e += per_copy) {
                const int valid = valid_bytes16<T>(g.extent - gx - e);
                async_copy<16>(s + kk * LD + x + e, valid ? src + e : src, valid);  // src: aligned, readable
            }
        } else {
            for (int e = 0; e < 4; ++e) copy_element(s + kk * LD + x + e, g, gk, gx + e);
        }
    }
}

/// Thread `t` issues its copies of the A and B panels at k0 into one stage.
template <class S, class T>
DEVTENSOR_HOST_DEVICE inline void gemm_load_phase(const gemm_params<T>& p, std::int64_t tile_m,
                                                  std::int64_t tile_n, std::int64_t k0, int t,
                                                  T* stage) {
    copy_panel<S::bm, S::bk, S::lda, S::threads>(gemm_operand<T>{p.a, p.a_col, p.a_row, p.m, p.k},
                                                 tile_m * S::bm, k0, t, stage);
    copy_panel<S::bn, S::bk, S::ldb, S::threads>(gemm_operand<T>{p.b, p.b_row, p.b_col, p.n, p.k},
                                                 tile_n * S::bn, k0, t, stage + S::bk * S::lda);
}

/// Row (or column) of C, within the block tile, of element 4*sub + e of a
/// thread at position `pos` among `count` threads along that side.
DEVTENSOR_HOST_DEVICE inline int gemm_tile_index(int sub, int e, int pos, int count) {
    return sub * count * 4 + pos * 4 + e;
}

/// k rows of stage `step` that lie inside the matrix: BK but in the last stage.
template <class S>
DEVTENSOR_HOST_DEVICE inline int gemm_stage_depth(std::int64_t k, std::int64_t step) {
    const std::int64_t left = k - step * S::bk;
    return left < S::bk ? static_cast<int>(left) : S::bk;
}

/// Row kk of a stage as one rank-1 update of the thread's register tile: each
/// element's chain continues with one fma (the GEMM order).
template <class S, class T>
DEVTENSOR_HOST_DEVICE inline void gemm_rank1(int ty, int tx, const T* as, const T* bs, int kk,
                                             T (&acc)[S::tm][S::tn]) {
    T a[S::tm], b[S::tn];
    DEVTENSOR_DEVICE_UNROLL
    for (int i = 0; i < S::tm / 4; ++i) {
        const auto v = load_pack<4>(as + kk * S::lda + gemm_tile_index(i, 0, ty, S::threads_m));
        for (int e = 0; e < 4; ++e) a[4 * i + e] = v.v[e];
    }
    DEVTENSOR_DEVICE_UNROLL
    for (int j = 0; j < S::tn / 4; ++j) {
        const auto v = load_pack<4>(bs + kk * S::ldb + gemm_tile_index(j, 0, tx, S::threads_n));
        for (int e = 0; e < 4; ++e) b[4 * j + e] = v.v[e];
    }
    DEVTENSOR_DEVICE_UNROLL
    for (int i = 0; i < S::tm; ++i)
        DEVTENSOR_DEVICE_UNROLL
        for (int j = 0; j < S::tn; ++j) acc[i][j] = detail::fma(a[i], b[j], acc[i][j]);
}

/// Thread `t` continues its register tile's chains over the first `depth` rows of
/// one stage (gemm_stage_depth): the zero padding past k is never summed, so the
/// chains are the CPU's to the bit (fma(0, 0, -0) would be +0).
template <class S, class T>
DEVTENSOR_HOST_DEVICE inline void gemm_compute_phase(int t, const T* stage, T (&acc)[S::tm][S::tn],
                                                     int depth = S::bk) {
    const int ty = t / S::threads_n, tx = t % S::threads_n;
    const T* as = stage;
    const T* bs = stage + S::bk * S::lda;
    if (depth == S::bk) {
        DEVTENSOR_DEVICE_UNROLL
        for (int kk = 0; kk < S::bk; ++kk) gemm_rank1<S>(ty, tx, as, bs, kk, acc);
    } else {
        for (int kk = 0; kk < depth; ++kk) gemm_rank1<S>(ty, tx, as, bs, kk, acc);
    }
}

/// C's element in column `col`: the sum, then the bias (the last addition of the order).
template <class T>
DEVTENSOR_HOST_DEVICE inline T plus_bias(const gemm_params<T>& p, T sum, std::int64_t col) {
    return detail::plus_bias(sum, p.bias, col);
}

/// Thread `t` writes its register tile plus the bias to C, inside the matrix
/// only; 4 columns at once where they are inside and aligned.
template <class S, class T>
DEVTENSOR_HOST_DEVICE inline void gemm_store_phase(const gemm_params<T>& p, std::int64_t tile_m,
                                                   std::int64_t tile_n, int t,
                                                   const T (&acc)[S::tm][S::tn]) {
    const int ty = t / S::threads_n, tx = t % S::threads_n;
    // Every run of 4 columns starts at a multiple of 4: aligned iff C's rows are.
    const bool aligned_rows = p.ldc % 4 == 0 && reinterpret_cast<std::uintptr_t>(p.c) % sizeof(pack<T, 4>) == 0;
    DEVTENSOR_DEVICE_UNROLL  // acc is indexed by constants only: it stays in registers
    for (int i = 0; i < S::tm; ++i) {
        const std::int64_t row = tile_m * S::bm + gemm_tile_index(i / 4, i % 4, ty, S::threads_m);
        if (row >= p.m) continue;
        DEVTENSOR_DEVICE_UNROLL
        for (int j = 0; j < S::tn / 4; ++j) {
            const std::int64_t col = tile_n * S::bn + gemm_tile_index(j, 0, tx, S::threads_n);
            T* dst = p.c + row * p.ldc + col;
            if (aligned_rows && col + 4 <= p.n) {
                pack<T, 4> v;
                for (int e = 0; e < 4; ++e) v.v[e] = plus_bias(p, acc[i][4 * j + e], col + e);
                store_pack<4>(dst, v);
            } else {
                for (int e = 0; e < 4; ++e)
                    if (col + e < p.n) dst[e] = plus_bias(p, acc[i][4 * j + e], col + e);
            }
        }
    }
}

// ---- small batches: m <= 16 in the GEMV order, the weight read once -----------------------------

/// The GEMV order's gemv_chains<T> chains of one dot product (16 fp32, 8 fp64) live in a
/// quad of 4 lanes, `width` consecutive chains (one 16-byte pack) each: lane q of the quad
/// takes elements p0 + q*width + e of every step p0 = 0, L, 2L, ... Each quad owns one
/// output feature (column of C) for every batch row (at most M); a chunk of `kc`
/// elements of k is `steps` steps, the batch rows staged for it in shared memory
/// (M x 1 KiB or 512 B), the weights in registers one chunk ahead. (The chunks are
/// a schedule only: each chain runs on over k whatever their size.)
template <class T, int M>
struct gemv_tile {
    static constexpr int m = M, warps = 4, lanes = 32, threads = warps * lanes;
    static constexpr int width = pack16<T>;                      // chains per lane
    static constexpr int chains = detail::gemv_chains<T>;        // per dot product
    static constexpr int quad = chains / width;                  // lanes per dot product
    static constexpr int features = threads / quad;              // per block
    static constexpr int steps = M > 4 ? 8 : 16;                 // per chunk: registers allow
    static constexpr int kc = steps * chains;                    // elements of k per chunk
    static_assert(quad == 4, "gemv_tile: the fold below crosses lanes twice (xor 2, xor 1)");
};

/// Most batch rows the GEMV kernel takes: the rows of the GEMV order.
inline constexpr int gemv_max_batch = static_cast<int>(detail::gemv_order_max_rows);

/// The quad (output feature within the block) and the lane within it of thread `t`.
template <class G>
DEVTENSOR_HOST_DEVICE inline int gemv_quad(int t) {
    return t / G::quad;
}
template <class G>
DEVTENSOR_HOST_DEVICE inline int gemv_quad_lane(int t) {
    return t % G::quad;
}

/// Elements [k0, k0 + L) of a row whose elements are `stride` apart, zero from k on.
template <int L, class T>
DEVTENSOR_HOST_DEVICE inline pack<T, L> load_row_pack(const T* row, std::int64_t stride,
                                                      std::int64_t k0, std::int64_t k) {
    if (stride == 1 && k0 + L <= k && aligned16(row + k0)) return load_pack<L>(row + k0);
    pack<T, L> r;
    for (int e = 0; e < L; ++e) r.v[e] = k0 + e < k ? row[(k0 + e) * stride] : T{};
    return r;
}

/// Thread `t` copies batch rows [0, M) x k [k0, k0 + kc) of A into xs[i][kk],
/// zero outside, with cp.async (the caller commits and waits): 16 bytes per
/// copy where A's rows are contiguous and aligned, else one element per copy.
template <class G, class T>
DEVTENSOR_HOST_DEVICE inline void gemv_stage_phase(const gemm_params<T>& p, std::int64_t k0, int t,
                                                   T* xs) {
    constexpr int packs = G::m * G::kc / G::width;
    const bool whole_packs = p.a_col == 1 && p.a_row % G::width == 0 && aligned16(p.a);
    for (int e = t; e < packs; e += G::threads) {
        const int i = e / (G::kc / G::width), kk = e % (G::kc / G::width) * G::width;
        const std::int64_t k = k0 + kk;
        T* dst = xs + i * G::kc + kk;
        if (whole_packs) {  // p.a: an aligned, readable source for what is all zero
            const int valid = valid_bytes16<T>(i < p.m ? p.k - k : 0);
            async_copy<16>(dst, valid ? p.a + i * p.a_row + k : p.a, valid);
        } else {
            for (int v = 0; v < G::width; ++v)
                async_copy_element(dst + v, p.a + i * p.a_row + (k + v) * p.a_col, i < p.m && k + v < p.k, p.a);
        }
    }
}

/// The weight packs a lane needs for a chunk, one per step: W[feature][k0 + s*L + q*width + e].
/// Loaded one chunk early, so their latency overlaps the staging and summing of the last.
template <class G, class T>
using gemv_weights = pack<T, G::width>[G::steps];

template <class G, class T>
DEVTENSOR_HOST_DEVICE inline void gemv_weight_phase(const gemm_params<T>& p, std::int64_t feature,
                                                    std::int64_t k0, int quad_lane, gemv_weights<G, T>& w) {
    DEVTENSOR_DEVICE_UNROLL
    for (int s = 0; s < G::steps; ++s) {
        const std::int64_t kk = k0 + s * G::chains + quad_lane * G::width;
        w[s] = feature < p.n ? load_row_pack<G::width>(p.b + feature * p.b_col, p.b_row, kk, p.k)
                             : pack<T, G::width>{};
    }
}

/// Steps of the chunk at k0 that reach into k (G::steps but in the last chunk): the
/// order pads k to whole steps only, so no chain takes a step past that.
template <class G>
DEVTENSOR_HOST_DEVICE inline int gemv_chunk_steps(std::int64_t k, std::int64_t k0) {
    const std::int64_t left = (k - k0 + G::chains - 1) / G::chains;
    return left < G::steps ? static_cast<int>(left) : G::steps;
}

/// The lane's chains continue over the chunk's first `steps` steps: acc[i][e] is chain
/// q*width + e of batch row i.
template <class G, class T>
DEVTENSOR_HOST_DEVICE inline void gemv_accumulate_phase(int quad_lane, int steps, const gemv_weights<G, T>& w,
                                                        const T* xs, T (&acc)[G::m][G::width]) {
    DEVTENSOR_DEVICE_UNROLL
    for (int s = 0; s < G::steps; ++s) {
        if (s >= steps) break;
        DEVTENSOR_DEVICE_UNROLL
        for (int i = 0; i < G::m; ++i) {
            const auto x = load_pack<G::width>(xs + i * G::kc + s * G::chains + quad_lane * G::width);
            DEVTENSOR_DEVICE_UNROLL
            for (int e = 0; e < G::width; ++e) acc[i][e] = detail::fma(x.v[e], w[s].v[e], acc[i][e]);
        }
    }
}

/// One cross-lane halving of the fold: `mine` (this lane's chains) and `theirs` (the
/// chains of the lane `mask` away in the quad), lower chains first:
/// c[i] = c[i] + c[i + w] with w = width * mask. Both lanes get the same sums.
template <class G, class T>
DEVTENSOR_HOST_DEVICE inline void gemv_fold_across(int quad_lane, int mask, T (&mine)[G::width],
                                                   const T (&theirs)[G::width]) {
    const bool upper = (quad_lane & mask) != 0;
    DEVTENSOR_DEVICE_UNROLL
    for (int e = 0; e < G::width; ++e)
        mine[e] = upper ? detail::add(theirs[e], mine[e]) : detail::add(mine[e], theirs[e]);
}

/// The rest of the fold, within the lane (after the halvings with masks 2 and 1): the dot product.
template <class G, class T>
DEVTENSOR_HOST_DEVICE inline T gemv_fold_within(T (&c)[G::width]) {
    return detail::fold_chains(c);
}

/// Writes C[i][feature] = sum + bias.
template <class T>
DEVTENSOR_HOST_DEVICE inline void gemv_store(const gemm_params<T>& p, std::int64_t feature,
                                             std::int64_t i, T sum) {
    if (feature >= p.n || i >= p.m) return;
    p.c[i * p.ldc + feature] = plus_bias(p, sum, feature);
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cuda
