// Placeholder, replaced by the blocked kernel.
#pragma once
#include <devtensor/threads.hpp>
#include <cstdint>
namespace devtensor::backend_cpu {
DEVTENSOR_BEGIN_TU_NAMESPACE
template <class T>
void transpose(const T* src, std::int64_t src_stride, T* dst, std::int64_t dst_stride, std::int64_t rows,
               std::int64_t cols) {
    for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j) dst[i * dst_stride + j] = src[j * src_stride + i];
}
DEVTENSOR_END_TU_NAMESPACE
}  // namespace devtensor::backend_cpu
