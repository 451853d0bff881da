// The launchers' decisions as plain functions of the problem and the device's
// shape: grid sizes, the index type, which GEMM kernel. No CUDA API here, so
// the CPU test suite checks them for an H200-like device without a GPU.
#pragma once

#include <devtensor/backend/cuda/elementwise_phases.hpp>  // elementwise_unroll
#include <devtensor/backend/cuda/gemm_phases.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>

namespace devtensor::backend_cuda {

DEVTENSOR_BEGIN_TU_NAMESPACE

inline constexpr int elementwise_threads = 256;

/// What grids are sized by (cudaDevAttrMultiProcessorCount, ...MaxThreadsPerMultiProcessor).
struct device_shape {
    int multiprocessors = 0;
    int threads_per_multiprocessor = 0;
};

/// The most blocks of elementwise_threads that can be resident on the device at once.
inline std::int64_t resident_limit(const device_shape& d) {
    return std::max<std::int64_t>(std::int64_t{d.multiprocessors} * d.threads_per_multiprocessor / elementwise_threads, 1);
}

/// Blocks for a grid-stride loop over `work` items: one thread per item up to
/// one wave of the blocks that fit (`resident`: multiprocessors times what the
/// kernel's registers allow on each), no more.
inline std::int64_t elementwise_blocks(std::int64_t work, std::int64_t resident) {
    const std::int64_t wanted = (work + elementwise_threads - 1) / elementwise_threads;
    return std::clamp<std::int64_t>(wanted, 1, std::max<std::int64_t>(resident, 1));
}

/// Whether every index a grid-stride loop over n elements with up to `blocks`
/// blocks forms (up to an unrolled round past the end) fits in 32 bits.
inline bool index_fits_int32(std::int64_t n, std::int64_t blocks) {
    return n + (elementwise_unroll + 1) * blocks * elementwise_threads <=
           std::numeric_limits<std::int32_t>::max();
}

enum class gemm_kernel_choice {
    gemv_batch_4,   // m <= 4: gemv_tile<T, 4>
    gemv_batch_16,  // m <= 16: gemv_tile<T, gemv_max_batch>
    tile_large,     // fp32 with a block of 128 x 128 for every multiprocessor
    tile_small,     // everything else
};

/// A small batch (m <= 16) sums in the GEMV order (detail/gemm_order.hpp), so it
/// takes the GEMV kernel whatever B's layout (linear's weight is read once, k
/// contiguous); fp32 takes the large tile when that still fills the device; fp64
/// never does (its large tile would not fit in 48 KiB of static shared memory).
template <class T>
gemm_kernel_choice choose_gemm(const gemm_params<T>& p, const device_shape& d) {
    if (detail::uses_gemv_order(p.m, p.n, p.k))
        return p.m <= 4 ? gemm_kernel_choice::gemv_batch_4 : gemm_kernel_choice::gemv_batch_16;
    using L = gemm_block_shape_large;
    const std::int64_t large_tiles = (p.m + L::bm - 1) / L::bm * ((p.n + L::bn - 1) / L::bn);
    return sizeof(T) == 4 && large_tiles >= d.multiprocessors ? gemm_kernel_choice::tile_large
                                                               : gemm_kernel_choice::tile_small;
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cuda
