// devtensor's CUDA kernels: thin __global__ shells over phases.hpp, and the
// host launchers the ops call. Included only where nvcc compiles (DEVTENSOR_HAS_CUDA).
//
// Tests only: with DEVTENSOR_CUDA_EMULATED_BLOCK defined as a block context type
// declared before this header (tests/cuda_emulator.hpp's test::emulated_block), the
// shells are host functions and launch() runs every thread of every block on the
// host in turn. Against the runtime stand-in, whose device memory is host memory
// (tests/fake_cudart), a whole program's CUDA kernels then run without a GPU
// (tests/test_emulated_training.cu: a training step gives the CPU's bits).
#pragma once

#include <devtensor/config.hpp>

#if !DEVTENSOR_HAS_CUDA
#  error "devtensor/backend/cuda/kernels.cuh needs nvcc; public headers include it only when DEVTENSOR_HAS_CUDA is 1"
#endif

#ifndef DEVTENSOR_CUDA_EMULATED_BLOCK
#  include <devtensor/backend/cuda/device_block.cuh>  // the GEMM and GEMV bodies' context
#endif
#include <devtensor/backend/cuda/launch_plan.hpp>
#include <devtensor/backend/cuda/phases.hpp>
#include <devtensor/backend/cuda/runtime.hpp>
#include <devtensor/detail/per_device.hpp>
#include <devtensor/error.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>

namespace devtensor::backend_cuda {

// ---- where a thread is ------------------------------------------------------------------

#ifdef DEVTENSOR_CUDA_EMULATED_BLOCK
#  define DEVTENSOR_KERNEL inline
#  define DEVTENSOR_LAUNCH_BOUNDS(...)
#  define DEVTENSOR_IN_KERNEL inline

/// The emulated thread launch() is running: blockIdx.x, blockDim.x, gridDim.x, threadIdx.x.
struct emulated_thread {
    unsigned block = 0, threads = 0, blocks = 0, thread = 0;
};
inline emulated_thread& emulated_now() {
    static thread_local emulated_thread now;
    return now;
}
inline unsigned block_index() { return emulated_now().block; }
inline unsigned block_threads() { return emulated_now().threads; }
inline unsigned grid_blocks() { return emulated_now().blocks; }
inline unsigned thread_index() { return emulated_now().thread; }

/// body(block) for the whole block at once, from its thread 0: the block context runs
/// each thread's sections in turn and reports a race between them.
template <class Body>
void emulated_block_body(int threads, Body body) {
    if (thread_index() != 0) return;
    DEVTENSOR_CUDA_EMULATED_BLOCK block(threads, block_index());
    body(block);
    if (!block.error().empty()) throw error("devtensor: emulated CUDA block: " + block.error());
}
#else
#  define DEVTENSOR_KERNEL __global__
#  define DEVTENSOR_LAUNCH_BOUNDS(...) __launch_bounds__(__VA_ARGS__)
#  define DEVTENSOR_IN_KERNEL __device__
__device__ inline unsigned block_index() { return blockIdx.x; }
__device__ inline unsigned block_threads() { return blockDim.x; }
__device__ inline unsigned grid_blocks() { return gridDim.x; }
__device__ inline unsigned thread_index() { return threadIdx.x; }
#endif

/// This thread's index in the grid, and the grid's thread count, as I.
template <class I>
DEVTENSOR_IN_KERNEL I grid_thread() {
    return static_cast<I>(block_index()) * static_cast<I>(block_threads()) + static_cast<I>(thread_index());
}
template <class I>
DEVTENSOR_IN_KERNEL I grid_threads() {
    return static_cast<I>(grid_blocks()) * static_cast<I>(block_threads());
}

// ---- shells ----------------------------------------------------------------------------

template <class T, class I>
DEVTENSOR_KERNEL void fill_kernel(T* out, I n, T value) {
    fill_phase(out, n, value, grid_thread<I>(), grid_threads<I>());
}

template <class F, class TO, class I, class... TI>
DEVTENSOR_KERNEL void map_linear_kernel(F f, TO* out, I n, repeat_mask single, const TI*... in) {
    map_linear_phase(f, out, n, single, grid_thread<I>(), grid_threads<I>(), in...);
}

template <class F, class TO, class TF, class TR, class I>
DEVTENSOR_KERNEL void map_repeat_kernel(F f, bool repeating_first, TO* out, const TF* full, const TR* repeating, I n,
                                  I period) {
    map_repeat_phase(f, repeating_first, out, full, repeating, n, period, grid_thread<I>(), grid_threads<I>());
}

template <class F, class TO, int N, class... TI>
DEVTENSOR_KERNEL void map_strided_kernel(F f, detail::loop_plan<N> p, TO* out, const TI*... in) {
    map_strided_phase(f, p, out, grid_thread<std::int64_t>(), grid_threads<std::int64_t>(), in...);
}

template <class F, class TO, class I>
DEVTENSOR_KERNEL void generate_kernel(F f, TO* out, I n) {
    generate_phase(f, out, n, grid_thread<I>(), grid_threads<I>());
}

// rand, randn, randint: philox_phase of each distribution (one kernel name each, for the kernel report)
template <class T, class I>
DEVTENSOR_KERNEL void uniform_kernel(T* out, I n, std::uint64_t seed, std::uint64_t first_block) {
    philox_phase(detail::uniform_distribution{}, out, n, seed, first_block, grid_thread<I>(), grid_threads<I>());
}

template <class T, class I>
DEVTENSOR_KERNEL void normal_kernel(T* out, I n, std::uint64_t seed, std::uint64_t first_block) {
    philox_phase(detail::normal_distribution{}, out, n, seed, first_block, grid_thread<I>(), grid_threads<I>());
}

template <class T, class I>
DEVTENSOR_KERNEL void randint_kernel(T* out, I n, std::int64_t low, std::uint64_t range, std::uint64_t seed,
                               std::uint64_t first_block) {
    philox_phase(detail::randint_distribution{low, range}, out, n, seed, first_block, grid_thread<I>(),
                 grid_threads<I>());
}

#ifndef DEVTENSOR_CUDA_EMULATED_BLOCK
/// v from lane (this lane + w) of a group of `width` lanes in `mask`; an accumulator
/// with a position (argmax) moves both fields.
template <class A>
__device__ A shuffle_down(unsigned mask, A v, int w, int width) {
    if constexpr (requires { v.index; }) {
        v.value = __shfl_down_sync(mask, v.value, w, width);
        v.index = __shfl_down_sync(mask, v.index, w, width);
        return v;
    } else {
        return __shfl_down_sync(mask, v, w, width);
    }
}
#endif

/// A row reduction: L lanes per chunk, each one chain, folded by shuffles in
/// fold_pairwise's order (lane i takes lane i + w's value for w = L/2, ..., 1).
template <class A, class R, class TO, class TI>
DEVTENSOR_KERNEL void reduce_rows_kernel(R r, detail::reduce_plan p, TO* out, A* partials, const TI* in) {
    constexpr int L = detail::reduce_chains<A>;
    static_assert(L <= 32 && elementwise_threads % L == 0, "reduce_rows_kernel: whole groups in a warp");
    const int lane = static_cast<int>(thread_index()) % L;
    const std::int64_t items = p.outer * p.chunks();
#ifdef DEVTENSOR_CUDA_EMULATED_BLOCK
    // one lane after another: lane 0 computes the group's chains and folds them as the shuffles do
    if (lane != 0) return;
    for (std::int64_t item = grid_thread<std::int64_t>() / L; item < items; item += grid_threads<std::int64_t>() / L) {
        A c[L];
        for (int l = 0; l < L; ++l) c[l] = reduce_row_lane<A>(r, p, in, item, l);
        for (int w = L / 2; w > 0; w /= 2)
            for (int l = 0; l < w; ++l) c[l] = r(c[l], c[l + w]);
        reduce_put(r, p, item, c[0], out, partials);
    }
#else
    const unsigned group = (L == 32 ? ~0u : (1u << L) - 1u) << (static_cast<int>(threadIdx.x) % 32 / L * L);
    for (std::int64_t item = grid_thread<std::int64_t>() / L; item < items; item += grid_threads<std::int64_t>() / L) {
        A c = reduce_row_lane<A>(r, p, in, item, lane);
        for (int w = L / 2; w > 0; w /= 2) c = r(c, shuffle_down(group, c, w, L));
        if (lane == 0) reduce_put(r, p, item, c, out, partials);
    }
#endif
}

/// A column reduction: a thread per chunk of one output.
template <class A, class R, class TO, class TI>
DEVTENSOR_KERNEL void reduce_columns_kernel(R r, detail::reduce_plan p, TO* out, A* partials, const TI* in) {
    const std::int64_t items = p.outputs() * p.chunks();
    for (std::int64_t item = grid_thread<std::int64_t>(); item < items; item += grid_threads<std::int64_t>())
        reduce_put(r, p, item, reduce_column_item<A>(r, p, in, item), out, partials);
}

/// The chunk results of each output combined and finished: a thread per output.
template <class A, class R, class TO>
DEVTENSOR_KERNEL void reduce_partials_kernel(R r, detail::reduce_plan p, A* partials, TO* out) {
    for (std::int64_t k = grid_thread<std::int64_t>(); k < p.outputs(); k += grid_threads<std::int64_t>())
        reduce_partials_output(r, p, partials, out, k);
}

/// gemm_block on the GPU. Two blocks per multiprocessor (at most 128 registers a
/// thread for 256 threads), so one block computes while the other waits at a barrier.
template <class S, class T>
DEVTENSOR_KERNEL void DEVTENSOR_LAUNCH_BOUNDS(S::threads, 2) gemm_kernel(gemm_params<T> p, std::int64_t tiles_m,
                                                                        std::int64_t tiles_n) {
#ifdef DEVTENSOR_CUDA_EMULATED_BLOCK
    emulated_block_body(S::threads, [&](auto& block) { gemm_block<S>(block, p, tiles_m, tiles_n); });
#else
    device_block block;
    gemm_block<S>(block, p, tiles_m, tiles_n);
#endif
}

/// gemv_block on the GPU.
template <class G, class T>
DEVTENSOR_KERNEL void DEVTENSOR_LAUNCH_BOUNDS(G::threads) gemv_kernel(gemm_params<T> p) {
#ifdef DEVTENSOR_CUDA_EMULATED_BLOCK
    emulated_block_body(G::threads, [&](auto& block) { gemv_block<G>(block, p); });
#else
    device_block block;
    gemv_block<G>(block, p);
#endif
}

/// transpose_block on the GPU: one 32 x 32 tile per block.
template <class T>
DEVTENSOR_KERNEL void DEVTENSOR_LAUNCH_BOUNDS(transpose_threads) transpose_kernel(transpose_params<T> p) {
#ifdef DEVTENSOR_CUDA_EMULATED_BLOCK
    emulated_block_body(transpose_threads, [&](auto& block) { transpose_block(block, p); });
#else
    device_block block;
    transpose_block(block, p);
#endif
}

// ---- launchers -------------------------------------------------------------------------

/// The shape of device `ordinal`, asked once.
inline const device_shape& shape_of(int ordinal) {
    static detail::per_device<device_shape> shapes;
    return shapes.once(ordinal, [ordinal](device_shape& s) {
        DEVTENSOR_CUDA_CHECK(cudaDeviceGetAttribute(&s.multiprocessors, cudaDevAttrMultiProcessorCount, ordinal));
        DEVTENSOR_CUDA_CHECK(cudaDeviceGetAttribute(&s.threads_per_multiprocessor,
                                                    cudaDevAttrMaxThreadsPerMultiProcessor, ordinal));
    });
}

/// Blocks of `Kernel` (elementwise_threads each) resident on all of device
/// `ordinal`'s multiprocessors at once, as its registers allow; asked once.
template <auto Kernel>
std::int64_t resident_blocks(int ordinal) {
    static detail::per_device<int> per_multiprocessor;
    const int blocks = per_multiprocessor.once(ordinal, [ordinal](int& b) {
        detail::cudart::device_guard guard(ordinal);
        DEVTENSOR_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, Kernel, elementwise_threads, 0));
    });
    return std::int64_t{blocks} * shape_of(ordinal).multiprocessors;
}

/// Launches kernel `name` on device `ordinal`'s stream and checks the launch
/// (with DEVTENSOR_LAUNCH_BLOCKING=1, also the kernel's run).
template <class Kernel, class... Args>
void launch(const char* name, int ordinal, dim3 grid, dim3 block, Kernel kernel, Args... args) {
    detail::cudart::device_guard guard(ordinal);
#ifdef DEVTENSOR_CUDA_EMULATED_BLOCK
    // the last block and thread first: a kernel that relied on the order of blocks would show it
    for (unsigned b = grid.x; b-- > 0;)
        for (unsigned t = block.x; t-- > 0;) {
            emulated_now() = {b, block.x, grid.x, t};
            kernel(args...);
        }
#else
    kernel<<<grid, block, 0, detail::cudart::stream(ordinal)>>>(args...);
#endif
    detail::cudart::check_launch(ordinal, name);
}

/// A grid-stride `Kernel` over `work` items, one resident wave at most.
template <auto Kernel, class... Args>
void launch_elementwise(const char* name, int ordinal, std::int64_t work, Args... args) {
    const std::int64_t blocks = elementwise_blocks(work, resident_blocks<Kernel>(ordinal));
    launch(name, ordinal, dim3(static_cast<unsigned>(blocks)), elementwise_threads, Kernel, args...);
}

/// 16-byte packs (the last one partial) in n elements of T.
template <class T>
std::int64_t packs_of(std::int64_t n) {
    return (n + pack16<T> - 1) / pack16<T>;
}

/// Calls run(I{}) with the index type for n elements: std::int32_t where it
/// fits for any grid the device can hold, else std::int64_t.
template <class Run>
void with_index_type(int ordinal, std::int64_t n, Run run) {
    if (index_fits_int32(n, resident_limit(shape_of(ordinal)))) run(std::int32_t{});
    else run(std::int64_t{});
}

template <class T>
void fill(int ordinal, T* out, std::int64_t n, T value) {
    if (n == 0) return;
    with_index_type(ordinal, n, [&](auto index) {
        using I = decltype(index);
        launch_elementwise<fill_kernel<T, I>>("fill", ordinal, packs_of<T>(n), out,
                                             static_cast<I>(n), value);
    });
}

/// out = f(in...) over the plan (operand 0 the output), for the op `name`: the one
/// CUDA launcher of every elementwise op. A plan whose operands walk in order (or
/// repeat one element) takes the packed kernel, a bias-like binary plan the
/// repeating one, the copy of a transposed matrix the tiled transpose, anything
/// else the strided one.
template <class F, class TO, class... TI>
void map(const char* name, int ordinal, const F& f, const detail::loop_plan<1 + sizeof...(TI)>& p, TO* out,
         const TI*... in) {
    if (p.numel == 0) return;
    bool linear = p.rank == 0 || (p.rank == 1 && p.strides[0][0] == 1);
    repeat_mask single = 0;
    for (int k = 1; k <= static_cast<int>(sizeof...(TI)) && linear; ++k) {
        const std::int64_t step = p.rank == 0 ? 0 : p.strides[k][0];
        if (step == 0) single |= 1u << (k - 1);
        else linear = step == 1;
    }
    if (linear)
        return with_index_type(ordinal, p.numel, [&](auto index) {
            using I = decltype(index);
            launch_elementwise<map_linear_kernel<F, TO, I, TI...>>(name, ordinal, packs_of<TO>(p.numel), f, out,
                                                                  static_cast<I>(p.numel), single, in...);
        });
    if constexpr (sizeof...(TI) == 2) {
        const detail::repeat_pattern r = detail::find_repeat(p);
        if (r.period != 0) {
            const auto run = [&](const auto* full, const auto* repeating) {
                with_index_type(ordinal, p.numel, [&](auto index) {
                    using I = decltype(index);
                    using TF = std::remove_cvref_t<decltype(*full)>;
                    using TR = std::remove_cvref_t<decltype(*repeating)>;
                    launch_elementwise<map_repeat_kernel<F, TO, TF, TR, I>>(
                        name, ordinal, packs_of<TO>(p.numel), f, !r.b_repeats, out, full, repeating,
                        static_cast<I>(p.numel), static_cast<I>(r.period));
                });
            };
            const auto [a, b] = std::tuple<const TI*...>(in...);
            return r.b_repeats ? run(a, b) : run(b, a);
        }
    }
    // the copy of a transposed matrix (or a batch of them): tiles through shared memory
    if constexpr (copying<F> && sizeof...(TI) == 1 && (std::is_same_v<TI, TO> && ...))
        if (is_transposed_copy(p)) {
            const transpose_params<TO> t = transpose_params_of(p, out, in...);
            if (t.blocks() <= std::numeric_limits<std::int32_t>::max())
                return launch(name, ordinal, dim3(static_cast<unsigned>(t.blocks())), transpose_threads,
                              transpose_kernel<TO>, t);
        }
    launch_elementwise<map_strided_kernel<F, TO, 1 + sizeof...(TI), TI...>>(name, ordinal, p.numel, f, p, out, in...);
}

/// out[i] = f(i) over n contiguous elements.
template <class F, class TO>
void generate(const char* name, int ordinal, const F& f, TO* out, std::int64_t n) {
    if (n == 0) return;
    with_index_type(ordinal, n, [&](auto index) {
        using I = decltype(index);
        launch_elementwise<generate_kernel<F, TO, I>>(name, ordinal, n, f, out, static_cast<I>(n));
    });
}

/// out[o * inner + j] = the reduction of output (o, j) by r (detail/reduce.hpp's
/// order), for the op `name`: the one CUDA launcher of every reduction. `partials`
/// holds outputs * chunks accumulators when an output has more than one chunk.
template <class A, class R, class TO, class TI>
void reduce(const char* name, int ordinal, const R& r, const detail::reduce_plan& p, TO* out, const TI* in,
            A* partials) {
    const std::int64_t outputs = p.outputs(), chunks = p.chunks();
    if (outputs == 0) return;
    if (p.inner == 1)
        launch_elementwise<reduce_rows_kernel<A, R, TO, TI>>(name, ordinal, p.outer * chunks * detail::reduce_chains<A>,
                                                             r, p, out, partials, in);
    else
        launch_elementwise<reduce_columns_kernel<A, R, TO, TI>>(name, ordinal, outputs * chunks, r, p, out, partials,
                                                                in);
    if (chunks > 1) launch_elementwise<reduce_partials_kernel<A, R, TO>>(name, ordinal, outputs, r, p, partials, out);
}

/// Fills out[0, n) from `dist` (detail::uniform_distribution, normal_distribution,
/// randint_distribution), Philox blocks first_block, first_block + 1, ...
template <class Dist, class T>
void philox_fill(int ordinal, const Dist& dist, T* out, std::int64_t n, std::uint64_t seed,
                 std::uint64_t first_block) {
    if (n == 0) return;
    constexpr int per_block = Dist::template per_block<T>;
    const std::int64_t blocks = (n + per_block - 1) / per_block;
    with_index_type(ordinal, n, [&](auto index) {
        using I = decltype(index);
        const I ni = static_cast<I>(n);
        if constexpr (std::is_same_v<Dist, detail::uniform_distribution>)
            launch_elementwise<uniform_kernel<T, I>>("uniform", ordinal, blocks, out, ni, seed, first_block);
        else if constexpr (std::is_same_v<Dist, detail::normal_distribution>)
            launch_elementwise<normal_kernel<T, I>>("normal", ordinal, blocks, out, ni, seed, first_block);
        else
            launch_elementwise<randint_kernel<T, I>>("randint", ordinal, blocks, out, ni, dist.low, dist.range, seed,
                                                    first_block);
    });
}

/// One GEMM with block tile S over a 1-D grid of tiles.
template <class S, class T>
void gemm_tiled(int ordinal, const gemm_params<T>& p) {
    const std::int64_t tiles_m = (p.m + S::bm - 1) / S::bm, tiles_n = (p.n + S::bn - 1) / S::bn;
    if (tiles_m > std::numeric_limits<std::int32_t>::max() / tiles_n)
        throw shape_error("devtensor::matmul: a " + std::to_string(p.m) + " x " + std::to_string(p.n) +
                          " product needs more than 2^31 - 1 CUDA blocks");
    launch("gemm", ordinal, dim3(static_cast<unsigned>(tiles_m * tiles_n)), S::threads, gemm_kernel<S, T>, p,
           tiles_m, tiles_n);
}

template <class G, class T>
void gemv(int ordinal, const gemm_params<T>& p) {
    launch("gemv", ordinal, dim3(static_cast<unsigned>((p.n + G::features - 1) / G::features)), G::threads,
           gemv_kernel<G, T>, p);
}

template <class T>
void gemm(int ordinal, const gemm_params<T>& p) {
    if (p.m == 0 || p.n == 0) return;
    const gemm_kernel_choice choice = choose_gemm(p, shape_of(ordinal));
    if (choice == gemm_kernel_choice::gemv_batch_4) return gemv<gemv_tile<T, 4>>(ordinal, p);
    if (choice == gemm_kernel_choice::gemv_batch_16) return gemv<gemv_tile<T, gemv_max_batch>>(ordinal, p);
    if constexpr (sizeof(T) == 4)  // fp64 never gets the large tile (nor compiles it)
        if (choice == gemm_kernel_choice::tile_large) return gemm_tiled<gemm_block_shape_large>(ordinal, p);
    gemm_tiled<gemm_block_shape_small>(ordinal, p);
}

}  // namespace devtensor::backend_cuda
