// The CUDA GEMM and GEMV kernels run on the CPU: their phase functions
// (backend/cuda/gemm_phases.hpp) called for every block and thread of a
// simulated grid, in the order the __global__ shells in kernels.cuh call them,
// barriers as phase boundaries. Used by test_cuda_emulator.cpp (every tail
// path) and test_determinism.cpp (the same bits as the CPU).
#pragma once

#include <devtensor/backend/cuda/launch_plan.hpp>
#include <devtensor/backend/cuda/phases.hpp>
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace test {
namespace cu = devtensor::backend_cuda;

/// Runs gemm_kernel's phases for every block in the kernel's order: load stage
/// 0; then per step: load the next stage into the other buffer, barrier,
/// compute this stage (its rows inside k), barrier; then store. Checks that
/// each load fills every slot of the tile the compute phase reads, each exactly once.
template <class S, class T>
void emulate_gemm(const cu::gemm_params<T>& p) {
    const std::int64_t tiles_m = (p.m + S::bm - 1) / S::bm, tiles_n = (p.n + S::bn - 1) / S::bn;
    std::vector<T> smem(S::stages * S::stage);
    std::vector<std::array<T, S::tm * S::tn>> acc(S::threads);
    const auto load = [&](std::int64_t tile_m, std::int64_t tile_n, std::int64_t k0, T* stage) {
        std::fill(stage, stage + S::stage, std::numeric_limits<T>::quiet_NaN());
        std::vector<int> writes(S::stage);
        std::vector<T> before(S::stage);
        for (int t = 0; t < S::threads; ++t) {
            std::copy(stage, stage + S::stage, before.begin());
            cu::gemm_load_phase<S>(p, tile_m, tile_n, k0, t, stage);
            for (int i = 0; i < S::stage; ++i) writes[static_cast<std::size_t>(i)] += std::memcmp(&before[static_cast<std::size_t>(i)], &stage[i], sizeof(T)) != 0;
        }
        for (int k = 0; k < S::bk; ++k) {  // the rows the compute phase reads, not the padding
            for (int x = 0; x < S::bm; ++x) REQUIRE(writes[static_cast<std::size_t>(k * S::lda + x)] == 1);
            for (int x = 0; x < S::bn; ++x) REQUIRE(writes[static_cast<std::size_t>(S::bk * S::lda + k * S::ldb + x)] == 1);
        }
    };
    for (std::int64_t id = 0; id < tiles_m * tiles_n; ++id) {
        std::int64_t tile_m = 0, tile_n = 0;
        cu::gemm_tile_of(id, tiles_m, tiles_n, tile_m, tile_n);
        for (auto& a : acc) a = {};
        const std::int64_t steps = (p.k + S::bk - 1) / S::bk;
        if (steps > 0) load(tile_m, tile_n, 0, smem.data());
        for (std::int64_t step = 0; step < steps; ++step) {
            if (step + 1 < steps) load(tile_m, tile_n, (step + 1) * S::bk, smem.data() + (step + 1) % 2 * S::stage);
            for (int t = 0; t < S::threads; ++t)
                cu::gemm_compute_phase<S>(t, smem.data() + step % 2 * S::stage,
                                          *reinterpret_cast<T (*)[S::tm][S::tn]>(acc[static_cast<std::size_t>(t)].data()),
                                          cu::gemm_stage_depth<S>(p.k, step));
        }
        for (int t = 0; t < S::threads; ++t)
            cu::gemm_store_phase<S>(p, tile_m, tile_n, t,
                                    *reinterpret_cast<const T (*)[S::tm][S::tn]>(acc[static_cast<std::size_t>(t)].data()));
    }
}

/// Runs gemv_kernel's phases in its order: every lane loads chunk 0's weights;
/// then per chunk: every lane loads the next chunk's weights into its other
/// buffer, barrier, every thread stages the batch rows, barrier, every lane
/// continues its chains with the current buffer; then each quad's fold (the
/// two shuffles, emulated on copies of the lanes' chains, then within the
/// lane) and the stores.
template <class G, class T>
void emulate_gemv(const cu::gemm_params<T>& p) {
    using chains = std::array<std::array<T, G::width>, G::m>;
    const auto as_acc = [](chains& c) -> T (&)[G::m][G::width] { return *reinterpret_cast<T (*)[G::m][G::width]>(c.data()); };
    const std::int64_t blocks = (p.n + G::features - 1) / G::features;
    std::vector<T> xs(G::m * G::kc);
    for (std::int64_t block = 0; block < blocks; ++block) {
        std::vector<chains> acc(G::threads);  // zeroed
        const auto feature = [&](int t) { return block * G::features + cu::gemv_quad<G>(t); };
        std::vector<cu::gemv_weights<G, T>> buffer[2] = {std::vector<cu::gemv_weights<G, T>>(G::threads),
                                                         std::vector<cu::gemv_weights<G, T>>(G::threads)};
        if (p.k > 0)
            for (int t = 0; t < G::threads; ++t)
                cu::gemv_weight_phase<G>(p, feature(t), 0, cu::gemv_quad_lane<G>(t), buffer[0][static_cast<std::size_t>(t)]);
        int current = 0;
        for (std::int64_t k0 = 0; k0 < p.k; k0 += G::kc, current = 1 - current) {
            if (k0 + G::kc < p.k)
                for (int t = 0; t < G::threads; ++t)
                    cu::gemv_weight_phase<G>(p, feature(t), k0 + G::kc, cu::gemv_quad_lane<G>(t),
                                             buffer[1 - current][static_cast<std::size_t>(t)]);
            std::fill(xs.begin(), xs.end(), std::numeric_limits<T>::quiet_NaN());
            for (int t = 0; t < G::threads; ++t) cu::gemv_stage_phase<G>(p, k0, t, xs.data());
            for (const T v : xs) REQUIRE(!std::isnan(v));  // every staged slot written
            for (int t = 0; t < G::threads; ++t)
                cu::gemv_accumulate_phase<G>(cu::gemv_quad_lane<G>(t), cu::gemv_chunk_steps<G>(p.k, k0),
                                             buffer[current][static_cast<std::size_t>(t)], xs.data(),
                                             as_acc(acc[static_cast<std::size_t>(t)]));
        }
        for (int mask = 2; mask > 0; mask /= 2) {  // __shfl_xor_sync: every lane reads before any writes
            const std::vector<chains> before = acc;
            for (int t = 0; t < G::threads; ++t)
                for (int i = 0; i < G::m; ++i) {
                    T theirs[G::width];
                    for (int e = 0; e < G::width; ++e)
                        theirs[e] = before[static_cast<std::size_t>(t ^ mask)][static_cast<std::size_t>(i)][static_cast<std::size_t>(e)];
                    cu::gemv_fold_across<G>(cu::gemv_quad_lane<G>(t), mask, as_acc(acc[static_cast<std::size_t>(t)])[i], theirs);
                }
        }
        for (int t = 0; t < G::threads; ++t)
            for (int i = 0; i < G::m; ++i) {
                const T sum = cu::gemv_fold_within<G>(as_acc(acc[static_cast<std::size_t>(t)])[i]);
                if (i % G::quad == cu::gemv_quad_lane<G>(t)) cu::gemv_store(p, feature(t), i, sum);
            }
    }
}

/// What cu::gemm launches for p on an H200-like device (132 multiprocessors), emulated.
template <class T>
void emulate_launch(const cu::gemm_params<T>& p) {
    if (p.m == 0 || p.n == 0) return;
    switch (cu::choose_gemm(p, cu::device_shape{132, 2048})) {
        case cu::gemm_kernel_choice::gemv_batch_4: return emulate_gemv<cu::gemv_tile<T, 4>>(p);
        case cu::gemm_kernel_choice::gemv_batch_16: return emulate_gemv<cu::gemv_tile<T, cu::gemv_max_batch>>(p);
        case cu::gemm_kernel_choice::tile_large:
            if constexpr (sizeof(T) == 4) return emulate_gemm<cu::gemm_tile_large>(p);
            [[fallthrough]];
        case cu::gemm_kernel_choice::tile_small: return emulate_gemm<cu::gemm_tile_small>(p);
    }
}

}  // namespace test
