// The CPU's vector kernels for each x86 ISA: isa_kernels.inl compiled in
// namespace avx2 (AVX2+FMA) and in namespace avx512 (AVX-512F). Callers ask
// simd::best_isa() at run time and call only the namespace this CPU can run.
#pragma once

#include <devtensor/backend/cpu/prefetch_cursor.hpp>
#include <devtensor/backend/cpu/random_simd.hpp>  // philox_ops
#include <devtensor/backend/cpu/simd.hpp>         // vec, DEVTENSOR_UNROLL
#include <devtensor/detail/gemm_order.hpp>        // gemv_chains, fold_chains, plus_bias

#include <cstddef>
#include <cstdint>

namespace devtensor::backend_cpu {

DEVTENSOR_BEGIN_TU_NAMESPACE

#if DEVTENSOR_HAS_X86_KERNELS

// DEVTENSOR_GEMM_K_UNROLL: k steps a GEMM micro-kernel loop iteration takes. AVX2 on
// Zen 4: 85 GFLOP/s in L1 with 2, 90.7 (the FMA peak loop's) with 1 or 4.
namespace avx2 {
#  define DEVTENSOR_ISA simd::isa::avx2
#  define DEVTENSOR_ISA_FUNCTION __attribute__((target("avx2,fma"))) inline
#  define DEVTENSOR_GEMM_K_UNROLL 4
#  include <devtensor/backend/cpu/isa_kernels.inl>
#  undef DEVTENSOR_GEMM_K_UNROLL
#  undef DEVTENSOR_ISA_FUNCTION
#  undef DEVTENSOR_ISA
}  // namespace avx2

#  pragma GCC diagnostic push
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which it then
// reports as maybe uninitialised once they are inlined into these kernels.
#  if !defined(__clang__)  // clang has no -Wmaybe-uninitialized and would warn about the name
#    pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#  endif
#  pragma GCC diagnostic ignored "-Wuninitialized"
namespace avx512 {
#  define DEVTENSOR_ISA simd::isa::avx512
#  define DEVTENSOR_ISA_FUNCTION __attribute__((target("avx512f"))) inline
#  define DEVTENSOR_GEMM_K_UNROLL 2  // as tuned on Sapphire Rapids (no AVX-512 machine to remeasure on)
#  include <devtensor/backend/cpu/isa_kernels.inl>
#  undef DEVTENSOR_GEMM_K_UNROLL
#  undef DEVTENSOR_ISA_FUNCTION
#  undef DEVTENSOR_ISA
}  // namespace avx512
#  pragma GCC diagnostic pop

#endif

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cpu
