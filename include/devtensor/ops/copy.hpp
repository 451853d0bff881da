// Copies on one device through the elementwise engine: what contiguous(),
// clone(), reshape() and to<U>() run (tensor.hpp declares copy_as).
#pragma once

#include <devtensor/detail/convert.hpp>
#include <devtensor/ops/elementwise.hpp>

#include <type_traits>

namespace devtensor::detail {
DEVTENSOR_BEGIN_TU_NAMESPACE

template <class U, class T, class D>
tensor<U, D> copy_as(const tensor<T, D>& t, const origin& made) {
    DEVTENSOR_STATIC_CHECK_KERNELS("to, contiguous, clone and reshape", D);
    tensor<U, D> out(t.shape(), t.device(), made);
    if constexpr (std::is_same_v<U, T>) map_checked(made.op, copy_element{}, out, t);
    else map_checked(made.op, convert_to<U>{}, out, t);
    return out;
}

/// t itself when contiguous (or undefined), else a contiguous copy: for kernels
/// that take only dense operands.
template <class T, class D>
tensor<T, D> dense(const tensor<T, D>& t, const origin& made) {
    return t.is_contiguous() ? t : copy_as<T>(t, made);
}

/// A [rows, cols] matrix as the GEMM reads it: its row and column strides when it
/// is row-major or the transpose of a row-major matrix, else a contiguous copy.
template <class T, class D>
struct gemm_operand {
    tensor<T, D> held;  ///< keeps a copy alive
    std::int64_t row, col;
    gemm_operand(const tensor<T, D>& t, const origin& made) : held(t) {
        const std::int64_t rows = t.shape()[0], cols = t.shape()[1];
        if (t.is_contiguous()) {
            row = cols, col = 1;
        } else if (t.strides()[0] == 1 && (t.strides()[1] == rows || cols == 1)) {
            row = 1, col = rows;
        } else {
            held = copy_as<T>(t, made);
            row = cols, col = 1;
        }
    }
};

DEVTENSOR_END_TU_NAMESPACE
}  // namespace devtensor::detail
