// Every configuration macro of devtensor, each 0/1 valued and #ifndef-overridable.
// Build with -Wundef: a mistyped macro is then an error, not a silent 0.
#pragma once

// DEVTENSOR_CUDA_RUNTIME: the program links the CUDA runtime (device query,
// allocation, copies). A program-wide setting: the CMake target devtensor::cuda
// defines it for every translation unit, g++- or nvcc-compiled.
#ifndef DEVTENSOR_CUDA_RUNTIME
#  define DEVTENSOR_CUDA_RUNTIME 0
#endif

// DEVTENSOR_HAS_CUDA: this translation unit is compiled by nvcc, so kernels exist here.
#ifndef DEVTENSOR_HAS_CUDA
#  if defined(__CUDACC__)
#    define DEVTENSOR_HAS_CUDA 1
#  else
#    define DEVTENSOR_HAS_CUDA 0
#  endif
#endif

#if DEVTENSOR_HAS_CUDA && !DEVTENSOR_CUDA_RUNTIME
#  error "devtensor: this file is compiled by nvcc but the CUDA runtime is off; link devtensor::cuda (or define DEVTENSOR_CUDA_RUNTIME=1 in every translation unit)"
#endif

// Bit-identical results (DESIGN §15) need IEEE arithmetic without -ffast-math's
// reassociation and flush-to-zero; define DEVTENSOR_ALLOW_FAST_MATH to build anyway
// (the contract is then void).
#if defined(__FAST_MATH__) && !defined(DEVTENSOR_ALLOW_FAST_MATH)
#  error "devtensor: -ffast-math (or --use_fast_math) breaks the determinism contract (DESIGN §15); define DEVTENSOR_ALLOW_FAST_MATH to build anyway, without it"
#endif

#if DEVTENSOR_HAS_CUDA
#  define DEVTENSOR_HOST_DEVICE __host__ __device__
#else
#  define DEVTENSOR_HOST_DEVICE
#endif

// Code whose body depends on DEVTENSOR_HAS_CUDA lives in an inline namespace
// named after the kind of translation unit, so that nvcc and g++ translation
// units of one program never define the same function differently (ODR).
#if DEVTENSOR_HAS_CUDA
#  define DEVTENSOR_TU_NAMESPACE nvcc_tu
#else
#  define DEVTENSOR_TU_NAMESPACE host_tu
#endif
#define DEVTENSOR_BEGIN_TU_NAMESPACE inline namespace DEVTENSOR_TU_NAMESPACE {
#define DEVTENSOR_END_TU_NAMESPACE }

// Public class types stay the same type in every translation unit; a member
// function whose body reaches kernel code takes a defaulted template parameter
// `class Tu = detail::tu_tag`, a different type in nvcc and g++ translation
// units, so each kind instantiates its own member (no ODR clash).
namespace devtensor::detail {
DEVTENSOR_BEGIN_TU_NAMESPACE
struct tu_tag {};
DEVTENSOR_END_TU_NAMESPACE
}  // namespace devtensor::detail

// Largest number of CUDA devices one process tracks memory statistics for.
#ifndef DEVTENSOR_MAX_CUDA_DEVICES
#  define DEVTENSOR_MAX_CUDA_DEVICES 64
#endif
