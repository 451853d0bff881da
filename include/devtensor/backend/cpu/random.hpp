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

template <class T>
void uniform(T* out, std::int64_t n, std::uint64_t seed, std::uint64_t first_block) {
    constexpr int per_block = detail::elements_per_philox_block<T>;
    const std::int64_t blocks = (n + per_block - 1) / per_block;
    detail::parallel_for(blocks, 1 << 14, [=](std::int64_t begin, std::int64_t end) {
        std::int64_t q = begin;
#if DEVTENSOR_HAS_X86_KERNELS
        if constexpr (std::is_same_v<T, float>) {
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
        for (; q < end; ++q) detail::uniform_block(out, n, seed, first_block, q);
    });
}

/// Standard normal values (detail::normal_block, Box–Muller), E per Philox block.
template <class T>
void normal(T* out, std::int64_t n, std::uint64_t seed, std::uint64_t first_block) {
    constexpr int per_block = detail::elements_per_philox_block<T>;
    const std::int64_t blocks = (n + per_block - 1) / per_block;
    detail::parallel_for(blocks, 1 << 11, [=](std::int64_t begin, std::int64_t end) {
        for (std::int64_t q = begin; q < end; ++q) detail::normal_block(out, n, seed, first_block, q);
    });
}

/// Integers in [low, low + range), two per Philox block (detail::randint_block).
template <class T>
void randint(T* out, std::int64_t n, std::int64_t low, std::uint64_t range, std::uint64_t seed,
             std::uint64_t first_block) {
    constexpr int per_block = detail::randint_per_philox_block;
    const std::int64_t blocks = (n + per_block - 1) / per_block;
    detail::parallel_for(blocks, 1 << 13, [=](std::int64_t begin, std::int64_t end) {
        for (std::int64_t q = begin; q < end; ++q) detail::randint_block(out, n, seed, first_block, low, range, q);
    });
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cpu
