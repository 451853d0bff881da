// The GEMM and GEMV kernels' orchestration, written once: which phase of
// gemm_phases.hpp runs when, between which barriers and cp.async groups. Each
// body takes a block context `Ctx`:
//   ctx.block()                   this block's index in the grid
//   ctx.each_thread(f)            f(t) for this block's threads (on the GPU: once, t = threadIdx.x)
//   ctx.barrier()                 __syncthreads()
//   ctx.commit(), ctx.wait<N>()   cp.async commit_group / wait_group N
//   ctx.shared<T, N, Align>()     the block's shared array of N T
//   ctx.registers<X>()            an X per thread, r(t) thread t's (zeroed_registers: zeroed)
//   ctx.shuffle_xor(mask, get, use)  use(t, get(t ^ mask)'s values): a warp shuffle
// The __global__ shells in kernels.cuh run them with device_block (device_block.cuh,
// all inline: the same code as a hand-written kernel); tests/cuda_emulator.hpp runs
// them with a context that loops over the threads and checks the barriers.
#pragma once

#include <devtensor/backend/cuda/gemm_phases.hpp>

#include <cstdint>

// A body run with the emulator's host-only context never runs on the device: nvcc is
// told not to check that instantiation's calls (as Thrust does for its callables).
#if defined(__CUDACC__)
#  define DEVTENSOR_ANY_CONTEXT _Pragma("nv_exec_check_disable")
#else
#  define DEVTENSOR_ANY_CONTEXT
#endif

namespace devtensor::backend_cuda {

DEVTENSOR_BEGIN_TU_NAMESPACE

/// Two-stage pipeline: the copies of stage k+1 are in flight while stage k is computed.
DEVTENSOR_ANY_CONTEXT
template <class S, class Ctx, class T>
DEVTENSOR_HOST_DEVICE inline void gemm_block(Ctx& ctx, const gemm_params<T>& p, std::int64_t tiles_m,
                                             std::int64_t tiles_n) {
    static_assert(S::stages == 2, "gemm_block: the loop below is written for two stages");
    T* smem = ctx.template shared<T, S::stages * S::stage, 32>();
    std::int64_t tile_m = 0, tile_n = 0;
    gemm_tile_of(ctx.block(), tiles_m, tiles_n, tile_m, tile_n);
    auto acc = ctx.template zeroed_registers<T[S::tm][S::tn]>();
    const std::int64_t steps = (p.k + S::bk - 1) / S::bk;
    if (steps > 0) ctx.each_thread([&](int t) { gemm_load_phase<S>(p, tile_m, tile_n, 0, t, smem); });
    ctx.commit();
    for (std::int64_t step = 0; step < steps; ++step) {
        if (step + 1 < steps)  // the other stage: its last reader passed the barrier below
            ctx.each_thread([&](int t) {
                gemm_load_phase<S>(p, tile_m, tile_n, (step + 1) * S::bk, t, smem + (step + 1) % 2 * S::stage);
            });
        ctx.commit();
        ctx.template wait<1>();  // this thread's copies of `step` have landed ...
        ctx.barrier();           // ... and everyone's
        ctx.each_thread([&](int t) {
            gemm_compute_phase<S>(t, smem + step % 2 * S::stage, acc(t), gemm_stage_depth<S>(p.k, step));
        });
        ctx.barrier();
    }
    ctx.each_thread([&](int t) { gemm_store_phase<S>(p, tile_m, tile_n, t, acc(t)); });
}

/// One chunk of gemv_block: the next chunk's weights are requested first, so
/// two chunks' loads are in flight while this one is staged and summed.
DEVTENSOR_ANY_CONTEXT
template <class G, class Ctx, class T, class Feature, class Weights, class Acc>
DEVTENSOR_HOST_DEVICE inline void gemv_chunk(Ctx& ctx, const gemm_params<T>& p, const Feature& feature,
                                             std::int64_t k0, T* xs, Weights& current, Weights& next, Acc& acc) {
    if (k0 + G::kc < p.k)
        ctx.each_thread([&](int t) { gemv_weight_phase<G>(p, feature(t), k0 + G::kc, gemv_quad_lane<G>(t), next(t)); });
    ctx.barrier();  // the previous chunk is consumed
    ctx.each_thread([&](int t) { gemv_stage_phase<G>(p, k0, t, xs); });
    ctx.commit();
    ctx.template wait<0>();
    ctx.barrier();
    ctx.each_thread([&](int t) {
        gemv_accumulate_phase<G>(gemv_quad_lane<G>(t), gemv_chunk_steps<G>(p.k, k0), current(t), xs, acc(t));
    });
}

/// C for m <= G::m in the GEMV order: each quad of lanes owns one output feature.
DEVTENSOR_ANY_CONTEXT
template <class G, class Ctx, class T>
DEVTENSOR_HOST_DEVICE inline void gemv_block(Ctx& ctx, const gemm_params<T>& p) {
    T* xs = ctx.template shared<T, G::m * G::kc, 16>();
    const std::int64_t first = ctx.block() * G::features;
    const auto feature = [first](int t) { return first + gemv_quad<G>(t); };
    auto acc = ctx.template zeroed_registers<T[G::m][G::width]>();
    // two named buffers: an index would put them in local memory
    auto even = ctx.template registers<gemv_weights<G, T>>(), odd = ctx.template registers<gemv_weights<G, T>>();
    if (p.k > 0) ctx.each_thread([&](int t) { gemv_weight_phase<G>(p, feature(t), 0, gemv_quad_lane<G>(t), even(t)); });
    for (std::int64_t k0 = 0; k0 < p.k; k0 += 2 * G::kc) {
        gemv_chunk<G>(ctx, p, feature, k0, xs, even, odd, acc);
        if (k0 + G::kc < p.k) gemv_chunk<G>(ctx, p, feature, k0 + G::kc, xs, odd, even, acc);
    }
    // The fold of the order: two halvings across the quad's lanes (shuffles), then within the lane.
    DEVTENSOR_DEVICE_UNROLL  // acc is indexed by constants only: it stays in registers
    for (int i = 0; i < G::m; ++i) {
        DEVTENSOR_DEVICE_UNROLL
        for (int mask = 2; mask > 0; mask /= 2)
            ctx.shuffle_xor(
                mask, [&](int t) -> T(&)[G::width] { return acc(t)[i]; },
                [&](int t, const T(&theirs)[G::width]) { gemv_fold_across<G>(gemv_quad_lane<G>(t), mask, acc(t)[i], theirs); });
        ctx.each_thread([&](int t) {
            const T sum = gemv_fold_within<G>(acc(t)[i]);
            if (i % G::quad == gemv_quad_lane<G>(t)) gemv_store(p, feature(t), i, sum);
        });
    }
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cuda
