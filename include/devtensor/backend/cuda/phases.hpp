// The bodies of devtensor's CUDA kernels as DEVTENSOR_HOST_DEVICE phase
// functions. Each __global__ in kernels.cuh is a thin shell that calls these
// between barriers, so tests/test_cuda_emulator.cpp can run the very same code
// over a simulated grid on the CPU (every block, every thread, barriers as
// phase boundaries) without a GPU.
#pragma once

#include <devtensor/backend/cuda/elementwise_phases.hpp>
#include <devtensor/backend/cuda/gemm_blocks.hpp>  // gemm_phases.hpp and the bodies that call them
#include <devtensor/backend/cuda/reduce_phases.hpp>
#include <devtensor/backend/cuda/transpose_blocks.hpp>  // the transpose kernel's body
