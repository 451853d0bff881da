// When a CPU loop goes to threads and when it streams its output past the caches:
// shared by the elementwise engine and the transpose kernel.
#pragma once

#include <devtensor/config.hpp>

#include <cstdint>

namespace devtensor::backend_cpu {

DEVTENSOR_BEGIN_TU_NAMESPACE

/// Elements below which an elementwise loop stays on one thread.
inline constexpr std::int64_t elementwise_grain = 1 << 16;

/// Outputs from this size on are written with non-temporal stores: past a
/// core's share of the last-level cache, keeping them cached only evicts the inputs.
inline constexpr std::int64_t streaming_bytes = std::int64_t{8} << 20;

template <class T>
bool streams(std::int64_t n) {
    return n * static_cast<std::int64_t>(sizeof(T)) >= streaming_bytes;
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cpu
