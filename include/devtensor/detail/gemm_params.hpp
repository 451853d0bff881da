// The operands of one GEMM as both backends' entry points take them.
#pragma once

#include <cstdint>

namespace devtensor::detail {

/// A is m x k, B is k x n, both read through (row, column) strides; C is m x n
/// with row stride ldc; bias (per column) may be null.
template <class T>
struct gemm_params {
    std::int64_t m, n, k;
    const T* a;
    std::int64_t a_row, a_col;
    const T* b;
    std::int64_t b_row, b_col;
    T* c;
    std::int64_t ldc;
    const T* bias;
};

}  // namespace devtensor::detail
