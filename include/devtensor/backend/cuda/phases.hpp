// The bodies of devtensor's CUDA kernels as DEVTENSOR_HOST_DEVICE phase
// functions. Each __global__ in kernels.cuh is a thin shell that calls these
// between barriers, so tests/test_cuda_emulator.cpp can run the very same code
// over a simulated grid on the CPU (every block, every thread, barriers as
// phase boundaries) without a GPU.
#pragma once

#include <devtensor/config.hpp>  // DEVTENSOR_HOST_DEVICE
#include <devtensor/detail/elementwise.hpp>
#include <devtensor/detail/gemm_tile.hpp>
#include <devtensor/random.hpp>

#include <cstdint>

namespace devtensor::backend_cuda {

DEVTENSOR_BEGIN_TU_NAMESPACE

// ---- elementwise: grid-stride loops over 64-bit indices -------------------------------

template <class T>
DEVTENSOR_HOST_DEVICE inline void fill_phase(T* out, std::int64_t n, T value, std::int64_t thread,
                                             std::int64_t threads) {
    for (std::int64_t i = thread; i < n; i += threads) out[i] = value;
}

template <class T>
DEVTENSOR_HOST_DEVICE inline void add_phase(const T* a, const T* b, T* out, std::int64_t n,
                                            std::int64_t thread, std::int64_t threads) {
    const detail::plus op;
    for (std::int64_t i = thread; i < n; i += threads) out[i] = op(a[i], b[i]);
}

template <class T>
DEVTENSOR_HOST_DEVICE inline void add_broadcast_phase(const T* a, const T* b, T* out, std::int64_t n,
                                                      const detail::broadcast_strides& s,
                                                      std::int64_t thread, std::int64_t threads) {
    const detail::plus op;
    for (std::int64_t i = thread; i < n; i += threads) {
        std::int64_t oa = 0, ob = 0;
        detail::broadcast_offsets(s, i, oa, ob);
        out[i] = op(a[oa], b[ob]);
    }
}

/// One thread per Philox block at a time: the same uniform_block the CPU backend calls.
template <class T>
DEVTENSOR_HOST_DEVICE inline void uniform_phase(T* out, std::int64_t n, std::uint64_t seed,
                                                std::uint64_t first_block, std::int64_t thread,
                                                std::int64_t threads) {
    constexpr int per_block = detail::elements_per_philox_block<T>;
    const std::int64_t blocks = (n + per_block - 1) / per_block;
    for (std::int64_t q = thread; q < blocks; q += threads)
        detail::uniform_block(out, n, seed, first_block, q);
}

// ---- GEMM: C = A·B + bias, a block tile in shared memory, a register tile per thread ---

/// Operands of one GEMM: A is m x k, B is k x n, both read through (row, column)
/// strides; C is m x n with row stride ldc; bias (per column) may be null.
template <class T>
struct gemm_params {
    std::int64_t m, n, k;
    const T* a;
    std::int64_t a_row, a_col;
    const T* b;
    std::int64_t b_row, b_col;
    T* c;
    std::int64_t ldc;
    const T* bias;
};

/// Tile shape: a BM x BN block of C per thread block, BK deep per stage,
/// TM x TN elements per thread, spread with stride (BM/TM, BN/TN) so that
/// neighbouring threads read neighbouring shared-memory words.
template <int BM, int BN, int BK, int TM, int TN>
struct gemm_tile {
    static constexpr int bm = BM, bn = BN, bk = BK, tm = TM, tn = TN;
    static constexpr int threads_m = BM / TM, threads_n = BN / TN;
    static constexpr int threads = threads_m * threads_n;
    static constexpr int smem_a = BK * BM, smem_b = BK * BN;  // elements
    static_assert(BM % TM == 0 && BN % TN == 0, "gemm_tile: the thread tile must divide the block tile");
};

using gemm_tile_default = gemm_tile<64, 64, 16, 4, 4>;

/// Stage k0 of block (block_m, block_n): thread `t` copies its share of the A
/// and B tiles into shared memory (as[k][i], bs[k][j]), zero outside the matrices.
template <class S, class T>
DEVTENSOR_HOST_DEVICE inline void gemm_load_phase(const gemm_params<T>& p, std::int64_t block_m,
                                                  std::int64_t block_n, std::int64_t k0, int t,
                                                  T* as, T* bs) {
    for (int e = t; e < S::smem_a; e += S::threads) {
        const int kk = e % S::bk, i = e / S::bk;  // consecutive threads walk k: row-major A
        const std::int64_t row = block_m * S::bm + i, col = k0 + kk;
        as[kk * S::bm + i] = (row < p.m && col < p.k) ? p.a[row * p.a_row + col * p.a_col] : T{};
    }
    for (int e = t; e < S::smem_b; e += S::threads) {
        const int j = e % S::bn, kk = e / S::bn;  // consecutive threads walk n: row-major B
        const std::int64_t row = k0 + kk, col = block_n * S::bn + j;
        bs[kk * S::bn + j] = (row < p.k && col < p.n) ? p.b[row * p.b_row + col * p.b_col] : T{};
    }
}

/// Thread `t` accumulates the stage's BK rank-1 updates into its register tile.
template <class S, class T>
DEVTENSOR_HOST_DEVICE inline void gemm_compute_phase(int t, const T* as, const T* bs,
                                                     T (&acc)[S::tm][S::tn]) {
    const int ty = t / S::threads_n, tx = t % S::threads_n;
    detail::gemm_micro_tile<S::tm, S::tn>(S::bk, as + ty, S::bm, S::threads_m, bs + tx, S::bn,
                                          S::threads_n, acc);
}

/// Thread `t` writes its register tile plus the bias to C, inside the matrix only.
template <class S, class T>
DEVTENSOR_HOST_DEVICE inline void gemm_store_phase(const gemm_params<T>& p, std::int64_t block_m,
                                                   std::int64_t block_n, int t,
                                                   const T (&acc)[S::tm][S::tn]) {
    const int ty = t / S::threads_n, tx = t % S::threads_n;
    for (int i = 0; i < S::tm; ++i) {
        const std::int64_t row = block_m * S::bm + ty + i * S::threads_m;
        if (row >= p.m) continue;
        for (int j = 0; j < S::tn; ++j) {
            const std::int64_t col = block_n * S::bn + tx + j * S::threads_n;
            if (col >= p.n) continue;
            p.c[row * p.ldc + col] = p.bias ? static_cast<T>(acc[i][j] + p.bias[col]) : acc[i][j];
        }
    }
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cuda
