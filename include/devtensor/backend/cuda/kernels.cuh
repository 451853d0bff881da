// devtensor's CUDA kernels: thin __global__ shells over phases.hpp, and the
// host launchers the ops call. Included only where nvcc compiles (DEVTENSOR_HAS_CUDA).
#pragma once

#include <devtensor/config.hpp>

#if !DEVTENSOR_HAS_CUDA
#  error "devtensor/backend/cuda/kernels.cuh needs nvcc; public headers include it only when DEVTENSOR_HAS_CUDA is 1"
#endif

#include <devtensor/backend/cuda/phases.hpp>
#include <devtensor/backend/cuda/runtime.hpp>
#include <devtensor/error.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>

namespace devtensor::backend_cuda {

// ---- shells ----------------------------------------------------------------------------

template <class T>
__global__ void fill_kernel(T* out, std::int64_t n, T value) {
    fill_phase(out, n, value, std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x,
               std::int64_t{gridDim.x} * blockDim.x);
}

template <class T>
__global__ void add_kernel(const T* a, const T* b, T* out, std::int64_t n) {
    add_phase(a, b, out, n, std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x,
              std::int64_t{gridDim.x} * blockDim.x);
}

template <class T>
__global__ void add_broadcast_kernel(const T* a, const T* b, T* out, std::int64_t n,
                                     detail::broadcast_strides s) {
    add_broadcast_phase(a, b, out, n, s, std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x,
                        std::int64_t{gridDim.x} * blockDim.x);
}

template <class T>
__global__ void uniform_kernel(T* out, std::int64_t n, std::uint64_t seed, std::uint64_t first_block) {
    uniform_phase(out, n, seed, first_block, std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x,
                  std::int64_t{gridDim.x} * blockDim.x);
}

template <class S, class T>
__global__ void __launch_bounds__(S::threads) gemm_kernel(gemm_params<T> p) {
    __shared__ T as[S::smem_a];
    __shared__ T bs[S::smem_b];
    T acc[S::tm][S::tn] = {};
    const int t = static_cast<int>(threadIdx.x);
    for (std::int64_t k0 = 0; k0 < p.k; k0 += S::bk) {
        gemm_load_phase<S>(p, blockIdx.x, blockIdx.y, k0, t, as, bs);
        __syncthreads();
        gemm_compute_phase<S>(t, as, bs, acc);
        __syncthreads();
    }
    gemm_store_phase<S>(p, blockIdx.x, blockIdx.y, t, acc);
}

// ---- launchers -------------------------------------------------------------------------

inline constexpr int elementwise_threads = 256;

/// Multiprocessors of device `ordinal`, asked once.
inline int multiprocessor_count(int ordinal) {
    static std::array<int, DEVTENSOR_MAX_CUDA_DEVICES> counts{};
    static std::array<std::once_flag, DEVTENSOR_MAX_CUDA_DEVICES> once;
    std::call_once(once[static_cast<std::size_t>(ordinal)], [ordinal] {
        DEVTENSOR_CUDA_CHECK(cudaDeviceGetAttribute(&counts[static_cast<std::size_t>(ordinal)],
                                                    cudaDevAttrMultiProcessorCount, ordinal));
    });
    return counts[static_cast<std::size_t>(ordinal)];
}

/// Blocks for a grid-stride loop over `work` items: enough to fill every SM, no more.
inline unsigned elementwise_blocks(int ordinal, std::int64_t work) {
    const std::int64_t wanted = (work + elementwise_threads - 1) / elementwise_threads;
    const std::int64_t cap = std::int64_t{multiprocessor_count(ordinal)} * 16;
    return static_cast<unsigned>(std::clamp<std::int64_t>(wanted, 1, cap));
}

/// Launches on device `ordinal`'s stream and checks the launch.
template <class Kernel, class... Args>
void launch(int ordinal, dim3 grid, dim3 block, Kernel kernel, Args... args) {
    detail::cudart::device_guard guard(ordinal);
    kernel<<<grid, block, 0, detail::cudart::stream(ordinal)>>>(args...);
    DEVTENSOR_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void fill(int ordinal, T* out, std::int64_t n, T value) {
    if (n == 0) return;
    launch(ordinal, elementwise_blocks(ordinal, n), elementwise_threads, fill_kernel<T>, out, n, value);
}

template <class T>
void add(int ordinal, const T* a, const T* b, T* out, std::int64_t n) {
    if (n == 0) return;
    launch(ordinal, elementwise_blocks(ordinal, n), elementwise_threads, add_kernel<T>, a, b, out, n);
}

template <class T>
void add_broadcast(int ordinal, const T* a, const T* b, T* out, std::int64_t n,
                   const detail::broadcast_strides& s) {
    if (n == 0) return;
    launch(ordinal, elementwise_blocks(ordinal, n), elementwise_threads, add_broadcast_kernel<T>, a,
           b, out, n, s);
}

template <class T>
void uniform(int ordinal, T* out, std::int64_t n, std::uint64_t seed, std::uint64_t first_block) {
    if (n == 0) return;
    const std::int64_t blocks = (n + detail::elements_per_philox_block<T> - 1) /
                                detail::elements_per_philox_block<T>;
    launch(ordinal, elementwise_blocks(ordinal, blocks), elementwise_threads, uniform_kernel<T>, out,
           n, seed, first_block);
}

template <class T>
void gemm(int ordinal, const gemm_params<T>& p) {
    using S = gemm_tile_default;
    if (p.m == 0 || p.n == 0) return;
    const std::int64_t grid_m = (p.m + S::bm - 1) / S::bm, grid_n = (p.n + S::bn - 1) / S::bn;
    if (grid_n > 65535)
        throw shape_error("devtensor::matmul: " + std::to_string(p.n) +
                          " output columns exceed the CUDA grid (65535 tiles of " +
                          std::to_string(S::bn) + ")");
    launch(ordinal, dim3(static_cast<unsigned>(grid_m), static_cast<unsigned>(grid_n)), S::threads,
           gemm_kernel<S, T>, p);
}

}  // namespace devtensor::backend_cuda
