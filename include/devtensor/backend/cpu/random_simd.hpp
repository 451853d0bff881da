// The integer-lane operations of Philox4x32-10 for the CPU's uniform float
// fill, per ISA: 8 (AVX2) or 16 (AVX-512) Philox blocks at once. The rounds
// themselves are uniform_float_blocks in isa_kernels.inl; each lane computes
// exactly what the scalar detail::uniform_block computes for its block, so the
// bits are the same as the scalar path, the CUDA kernel and any thread count.
#pragma once

#include <devtensor/backend/cpu/simd.hpp>
#include <devtensor/random.hpp>

#include <cstdint>

namespace devtensor::backend_cpu {

DEVTENSOR_BEGIN_TU_NAMESPACE

#if DEVTENSOR_HAS_X86_KERNELS

#  pragma GCC diagnostic push
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which it then
// reports as maybe uninitialised once they are inlined here.
#  if !defined(__clang__)  // clang has no -Wmaybe-uninitialized and would warn about the name
#    pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#  endif
#  pragma GCC diagnostic ignored "-Wuninitialized"

/// Integer lanes for Philox, per ISA: `lanes` 32-bit words per register.
template <simd::isa I>
struct philox_ops;

template <>
struct philox_ops<simd::isa::avx2> {
    using u32 = __m256i;
    using f32 = __m256;
    static constexpr int lanes = 8;
    DEVTENSOR_AVX2 static u32 set1(std::uint32_t x) { return _mm256_set1_epi32(static_cast<int>(x)); }
    DEVTENSOR_AVX2 static u32 iota() { return _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7); }
    DEVTENSOR_AVX2 static u32 add(u32 a, u32 b) { return _mm256_add_epi32(a, b); }
    DEVTENSOR_AVX2 static u32 sub(u32 a, u32 b) { return _mm256_sub_epi32(a, b); }
    DEVTENSOR_AVX2 static u32 bit_xor(u32 a, u32 b) { return _mm256_xor_si256(a, b); }
    DEVTENSOR_AVX2 static u32 less(u32 a, u32 b) {  // unsigned a < b: all ones, else 0
        const u32 flip = set1(0x80000000u);
        return _mm256_cmpgt_epi32(_mm256_xor_si256(b, flip), _mm256_xor_si256(a, flip));
    }
    DEVTENSOR_AVX2 static u32 mul_even(u32 a, u32 b) { return _mm256_mul_epu32(a, b); }
    DEVTENSOR_AVX2 static u32 shr64(u32 a) { return _mm256_srli_epi64(a, 32); }
    DEVTENSOR_AVX2 static u32 shl64(u32 a) { return _mm256_slli_epi64(a, 32); }
    DEVTENSOR_AVX2 static u32 odd_from(u32 even, u32 odd) { return _mm256_blend_epi32(even, odd, 0xAA); }
    DEVTENSOR_AVX2 static f32 to_unit_float(u32 x) {  // detail::uniform_float, lane by lane
        return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(x, 8)), _mm256_set1_ps(0x1p-24f));
    }
    /// out[4*q + e] = x[e] lane q: four registers of per-block words to block order.
    DEVTENSOR_AVX2 static void store_blocks(float* out, f32 x0, f32 x1, f32 x2, f32 x3) {
        const f32 a = _mm256_unpacklo_ps(x0, x1), b = _mm256_unpackhi_ps(x0, x1);
        const f32 c = _mm256_unpacklo_ps(x2, x3), d = _mm256_unpackhi_ps(x2, x3);
        const f32 u0 = _mm256_shuffle_ps(a, c, 0x44), u1 = _mm256_shuffle_ps(a, c, 0xEE);
        const f32 u2 = _mm256_shuffle_ps(b, d, 0x44), u3 = _mm256_shuffle_ps(b, d, 0xEE);
        _mm256_storeu_ps(out, _mm256_permute2f128_ps(u0, u1, 0x20));
        _mm256_storeu_ps(out + 8, _mm256_permute2f128_ps(u2, u3, 0x20));
        _mm256_storeu_ps(out + 16, _mm256_permute2f128_ps(u0, u1, 0x31));
        _mm256_storeu_ps(out + 24, _mm256_permute2f128_ps(u2, u3, 0x31));
    }
};

template <>
struct philox_ops<simd::isa::avx512> {
    using u32 = __m512i;
    using f32 = __m512;
    static constexpr int lanes = 16;
    DEVTENSOR_AVX512 static u32 set1(std::uint32_t x) { return _mm512_set1_epi32(static_cast<int>(x)); }
    DEVTENSOR_AVX512 static u32 iota() {
        return _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    }
    DEVTENSOR_AVX512 static u32 add(u32 a, u32 b) { return _mm512_add_epi32(a, b); }
    DEVTENSOR_AVX512 static u32 sub(u32 a, u32 b) { return _mm512_sub_epi32(a, b); }
    DEVTENSOR_AVX512 static u32 bit_xor(u32 a, u32 b) { return _mm512_xor_si512(a, b); }
    DEVTENSOR_AVX512 static u32 less(u32 a, u32 b) {
        return _mm512_maskz_mov_epi32(_mm512_cmplt_epu32_mask(a, b), set1(0xFFFFFFFFu));
    }
    DEVTENSOR_AVX512 static u32 mul_even(u32 a, u32 b) { return _mm512_mul_epu32(a, b); }
    DEVTENSOR_AVX512 static u32 shr64(u32 a) { return _mm512_srli_epi64(a, 32); }
    DEVTENSOR_AVX512 static u32 shl64(u32 a) { return _mm512_slli_epi64(a, 32); }
    DEVTENSOR_AVX512 static u32 odd_from(u32 even, u32 odd) { return _mm512_mask_blend_epi32(0xAAAA, even, odd); }
    DEVTENSOR_AVX512 static f32 to_unit_float(u32 x) {
        return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(x, 8)), _mm512_set1_ps(0x1p-24f));
    }
    DEVTENSOR_AVX512 static void store_blocks(float* out, f32 x0, f32 x1, f32 x2, f32 x3) {
        const f32 a = _mm512_unpacklo_ps(x0, x1), b = _mm512_unpackhi_ps(x0, x1);
        const f32 c = _mm512_unpacklo_ps(x2, x3), d = _mm512_unpackhi_ps(x2, x3);
        // u_j's 128-bit lane l holds block 4l + j ...
        const f32 u0 = _mm512_shuffle_ps(a, c, 0x44), u1 = _mm512_shuffle_ps(a, c, 0xEE);
        const f32 u2 = _mm512_shuffle_ps(b, d, 0x44), u3 = _mm512_shuffle_ps(b, d, 0xEE);
        // ... and a 4 x 4 transpose of 128-bit lanes puts blocks 4l .. 4l+3 in register l.
        const f32 v0 = _mm512_shuffle_f32x4(u0, u1, 0x44), v1 = _mm512_shuffle_f32x4(u0, u1, 0xEE);
        const f32 v2 = _mm512_shuffle_f32x4(u2, u3, 0x44), v3 = _mm512_shuffle_f32x4(u2, u3, 0xEE);
        _mm512_storeu_ps(out, _mm512_shuffle_f32x4(v0, v2, 0x88));
        _mm512_storeu_ps(out + 16, _mm512_shuffle_f32x4(v0, v2, 0xDD));
        _mm512_storeu_ps(out + 32, _mm512_shuffle_f32x4(v1, v3, 0x88));
        _mm512_storeu_ps(out + 48, _mm512_shuffle_f32x4(v1, v3, 0xDD));
    }
};

#  pragma GCC diagnostic pop

#endif

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cpu
