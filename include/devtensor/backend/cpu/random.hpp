// CPU random fills (uniform, normal, integers): Philox blocks in parallel, in
// vector lanes where the CPU has them (uniform float); each element depends
// only on (seed, first block, index), so every thread count and every ISA
// gives the same bits, and the same as the CUDA kernels.
#pragma once

#include <devtensor/backend/cpu/isa_kernels.hpp>
#include <devtensor/random.hpp>
#include <devtensor/threads.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace devtensor::backend_cpu {

DEVTENSOR_BEGIN_TU_NAMESPACE

/// Fills out[0, n) from `dist` (detail::uniform_distribution, normal_distribution,
/// randint_distribution), Philox blocks first_block, first_block + 1, ... in
/// parallel; uniform floats in vector lanes where the CPU has them.
template <class Dist, class T>
void philox_fill(const Dist& dist, T* out, std::int64_t n, std::uint64_t seed, std::uint64_t first_block) {
    constexpr int per_block = Dist::template per_block<T>;
    const std::int64_t blocks = (n + per_block - 1) / per_block;
    // Blocks a thread takes at least: the cheaper a block, the more (normal's log, sin, cos are dear).
    constexpr std::int64_t grain = std::is_same_v<Dist, detail::normal_distribution>    ? 1 << 11
                                   : std::is_same_v<Dist, detail::randint_distribution> ? 1 << 13
                                                                                        : 1 << 14;
    detail::parallel_for(blocks, grain, [=](std::int64_t begin, std::int64_t end) {
        std::int64_t q = begin;
#if DEVTENSOR_HAS_X86_KERNELS
        if constexpr (std::is_same_v<Dist, detail::uniform_distribution> && std::is_same_v<T, float>) {
            // Whole vectors of blocks whose four floats all lie inside the output.
            const simd::isa isa = simd::best_isa();
            const int lanes = isa == simd::isa::avx512 ? philox_ops<simd::isa::avx512>::lanes
                                                       : philox_ops<simd::isa::avx2>::lanes;
            const std::int64_t vector_end = begin + (std::min(end, n / 4) - begin) / lanes * lanes;
            if (vector_end > begin && isa == simd::isa::avx512)
                avx512::uniform_float_blocks(out, seed, first_block, begin, q = vector_end);
            else if (vector_end > begin && isa == simd::isa::avx2)
                avx2::uniform_float_blocks(out, seed, first_block, begin, q = vector_end);
        }
#endif
        for (; q < end; ++q) detail::philox_fill_block(dist, out, n, seed, first_block, q);
    });
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cpu
