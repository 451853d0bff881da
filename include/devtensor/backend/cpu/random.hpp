// CPU uniform fill: Philox blocks in parallel; each element depends only on
// (seed, first block, index), so every thread count gives the same bits.
#pragma once

#include <devtensor/random.hpp>
#include <devtensor/threads.hpp>

#include <cstdint>

namespace devtensor::backend_cpu {

DEVTENSOR_BEGIN_TU_NAMESPACE

template <class T>
void uniform(T* out, std::int64_t n, std::uint64_t seed, std::uint64_t first_block) {
    constexpr int per_block = detail::elements_per_philox_block<T>;
    const std::int64_t blocks = (n + per_block - 1) / per_block;
    detail::parallel_for(blocks, 1 << 14, [=](std::int64_t begin, std::int64_t end) {
        for (std::int64_t q = begin; q < end; ++q) detail::uniform_block(out, n, seed, first_block, q);
    });
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cpu
