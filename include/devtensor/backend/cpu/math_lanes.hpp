// exp, log, tanh and sigmoid on x86 vector registers: detail/math_lanes.inl, the
// text detail/math.hpp instantiates for one T, instantiated here for the lane
// family of each ISA (lanes.inl: AVX2+FMA's 32-byte and AVX-512F's 64-byte
// registers), each function carrying its ISA's target attribute (the consumer
// needs no -mavx2). Every lane gives the scalar function's bits (DESIGN §15).
// The CPU elementwise engine runs a functor's lane form (`lane_form`) on contiguous
// rows through map_row_on, in the ISA the call chose.
#pragma once

#include <devtensor/backend/cpu/simd.hpp>
#include <devtensor/detail/math.hpp>

#include <cstdint>
#include <type_traits>

namespace devtensor::backend_cpu {

DEVTENSOR_BEGIN_TU_NAMESPACE

#if DEVTENSOR_HAS_X86_KERNELS

// Every function of a lane family is always inlined (map_row, which takes pointers, is
// the only call): GCC 12 ends a function of this ISA that returns a struct of a vector
// with a vzeroupper when the translation unit itself is built without AVX, zeroing the
// upper half of the result.

// The scalar facts math_lanes.inl names, the same in every family.
#  define DEVTENSOR_LANE_MATH_SCALAR_NAMES                                                     \
    using detail::math::constants;                                                             \
    using detail::math::format;                                                                \
    using detail::math::infinity;                                                              \
    using detail::math::inverse_factorial;                                                     \
    using detail::math::quiet_nan;                                                             \
    using detail::math::sign_bit;

namespace avx2::lane_math {
DEVTENSOR_LANE_MATH_SCALAR_NAMES
#  define DEVTENSOR_ISA_BYTES 32
#  define DEVTENSOR_ISA_TARGET __attribute__((target("avx2,fma")))
#  define DEVTENSOR_ISA_FUNCTION DEVTENSOR_ISA_TARGET __attribute__((always_inline)) inline
#  define DEVTENSOR_MATH_FUNCTION DEVTENSOR_ISA_FUNCTION
#  include <devtensor/backend/cpu/lanes.inl>
#  include <devtensor/detail/math_lanes.inl>
#  include <devtensor/backend/cpu/lane_rows.inl>
#  undef DEVTENSOR_MATH_FUNCTION
#  undef DEVTENSOR_ISA_FUNCTION
#  undef DEVTENSOR_ISA_TARGET
#  undef DEVTENSOR_ISA_BYTES
}  // namespace avx2::lane_math

#  pragma GCC diagnostic push
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which it then
// reports as maybe uninitialised once they are inlined here.
#  if !defined(__clang__)  // clang has no -Wmaybe-uninitialized and would warn about the name
#    pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#  endif
#  pragma GCC diagnostic ignored "-Wuninitialized"
namespace avx512::lane_math {
DEVTENSOR_LANE_MATH_SCALAR_NAMES
#  define DEVTENSOR_ISA_BYTES 64
#  define DEVTENSOR_ISA_TARGET __attribute__((target("avx512f")))
#  define DEVTENSOR_ISA_FUNCTION DEVTENSOR_ISA_TARGET __attribute__((always_inline)) inline
#  define DEVTENSOR_MATH_FUNCTION DEVTENSOR_ISA_FUNCTION
#  include <devtensor/backend/cpu/lanes.inl>
#  include <devtensor/detail/math_lanes.inl>
#  include <devtensor/backend/cpu/lane_rows.inl>
#  undef DEVTENSOR_MATH_FUNCTION
#  undef DEVTENSOR_ISA_FUNCTION
#  undef DEVTENSOR_ISA_TARGET
#  undef DEVTENSOR_ISA_BYTES
}  // namespace avx512::lane_math
#  pragma GCC diagnostic pop

#  undef DEVTENSOR_LANE_MATH_SCALAR_NAMES

/// out[i] = f(in[i]) for a contiguous row of n elements on `isa`'s registers through
/// the functor's lane form (isa is avx2 or avx512, and this CPU runs it).
template <class F, class T>
void map_row_on(simd::isa isa, const F& f, std::int64_t n, bool stream, T* out, const T* in) {
    if (isa == simd::isa::avx512) avx512::lane_math::map_row(f, n, stream, out, in);
    else avx2::lane_math::map_row(f, n, stream, out, in);
}

#endif

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cpu
