// Every __global__ kernel of kernels.cuh, once: the instantiations the CUDA test
// binary holds, and the emulator test (a doctest case whose name says "emulat") that runs its
// body on the CPU. scripts/kernel-report.py parses this list to compile and check
// the kernels and fails when kernels.cuh defines a kernel it does not name;
// test_cuda_emulator.cpp fails when a line names no emulator test. A new kernel is
// one more line (or one per family of template arguments).
//
// X(kernel, element types, template arguments, emulator test):
//   template arguments: T stands for each element type, I for each index type
//   (std::int32_t and std::int64_t), names relative to devtensor::backend_cuda.
#pragma once

#include <string_view>

// clang-format off
#define DEVTENSOR_CUDA_KERNELS(X)                                                                                     \
    X(fill_kernel, "float double std::int32_t std::int64_t", "<T, I>",                                                \
      "emulated fill and add match the cpu backend, aligned or not, both index types")                                \
    X(map_linear_kernel, "float double std::int32_t std::int64_t", "<detail::plus, T, I, T, T>",                      \
      "emulated fill and add match the cpu backend, aligned or not, both index types")                                \
    X(map_linear_kernel, "float double std::int32_t std::int64_t", "<detail::multiplies, T, I, T, T>",                \
      "emulated fill and add match the cpu backend, aligned or not, both index types")                                \
    X(map_linear_kernel, "float double", "<detail::copy_element, T, I, T>",                                           \
      "emulated fill and add match the cpu backend, aligned or not, both index types")                                \
    X(map_repeat_kernel, "float double std::int32_t std::int64_t", "<detail::plus, T, T, T, I>",                      \
      "emulated repeating add (bias) and general broadcast add match the cpu backend")                                \
    X(map_repeat_kernel, "float double std::int32_t std::int64_t", "<detail::multiplies, T, T, T, I>",                \
      "emulated repeating add (bias) and general broadcast add match the cpu backend")                                \
    X(map_strided_kernel, "float double std::int32_t std::int64_t", "<detail::plus, T, 3, T, T>",                     \
      "emulated repeating add (bias) and general broadcast add match the cpu backend")                                \
    X(map_strided_kernel, "float double", "<detail::copy_element, T, 2, T>",                                          \
      "emulated repeating add (bias) and general broadcast add match the cpu backend")                                \
    X(transpose_kernel, "float double std::int64_t bool", "<T>",                                                      \
      "emulated transpose kernel copies transposed matrices off the tile as the cpu does")                            \
    X(generate_kernel, "double", "<detail::arange_value<T>, T, I>",                                                   \
      "emulated arange and linspace (generate kernel) match the cpu backend")                                         \
    X(generate_kernel, "float", "<detail::linspace_value<T>, T, I>",                                                  \
      "emulated arange and linspace (generate kernel) match the cpu backend")                                         \
    X(uniform_kernel, "float double", "<T, I>",                                                                       \
      "emulated rand is bit-identical to the cpu backend for every grid and alignment")                               \
    X(normal_kernel, "float double", "<T, I>",                                                                        \
      "emulated randn and randint are bit-identical to the cpu backend for every grid and alignment")                 \
    X(randint_kernel, "std::int32_t double", "<T, I>",                                                                \
      "emulated randn and randint are bit-identical to the cpu backend for every grid and alignment")                 \
    X(reduce_rows_kernel, "float double", "<T, detail::sum_op, T, T>",                                                \
      "the emulated kernels give the cpu's bits for multi-chunk rows and columns, sum and mean")                     \
    X(reduce_columns_kernel, "float double", "<T, detail::mean_op, T, T>",                                            \
      "the emulated kernels give the cpu's bits for multi-chunk rows and columns, sum and mean")                     \
    X(reduce_partials_kernel, "float double", "<T, detail::sum_op, T>",                                               \
      "the emulated kernels give the cpu's bits for multi-chunk rows and columns, sum and mean")                     \
    X(gemm_kernel, "float double", "<gemm_block_shape_small, T>",                                                            \
      "emulated gemm kernel, small tile, matches the cpu gemm in fp32 and fp64")                                      \
    X(gemm_kernel, "float", "<gemm_block_shape_large, T>",                                                                   \
      "emulated gemm kernel, large fp32 tile, matches the cpu gemm for sizes off the tile")                           \
    X(gemv_kernel, "float double", "<gemv_tile<T, 4>, T>",                                                            \
      "emulated small-batch linear and matmul (gemv kernel) give the cpu's bits")                                     \
    X(gemv_kernel, "float double", "<gemv_tile<T, gemv_max_batch>, T>",                                               \
      "emulated small-batch linear and matmul (gemv kernel) give the cpu's bits")
// clang-format on

namespace devtensor::backend_cuda {

/// One line of DEVTENSOR_CUDA_KERNELS.
struct registered_kernel {
    std::string_view name, types, arguments, emulator_test;
};

#define DEVTENSOR_REGISTERED_KERNEL(name, types, arguments, test) registered_kernel{#name, types, arguments, test},
inline constexpr registered_kernel kernel_registry[] = {DEVTENSOR_CUDA_KERNELS(DEVTENSOR_REGISTERED_KERNEL)};
#undef DEVTENSOR_REGISTERED_KERNEL

}  // namespace devtensor::backend_cuda
