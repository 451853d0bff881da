// x86-64 vector registers for the CPU kernels: one traits struct per register
// width and element type, each operation compiled for its ISA through a target
// attribute, so the consumer needs no -mavx2 / -mavx512f. Callers ask
// best_isa() at run time and only then call code built for that ISA.
#pragma once

#include <atomic>

#include <cstdint>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__CUDA_ARCH__)
#  define DEVTENSOR_HAS_X86_KERNELS 1
#  include <immintrin.h>
#else
#  define DEVTENSOR_HAS_X86_KERNELS 0
#endif

// Loop unrolling hint for the kernels; nvcc's front end rejects the pragma under -Werror.
#if defined(__CUDACC__) || !defined(__GNUC__) || defined(__clang__)
#  define DEVTENSOR_UNROLL(n)
#else
#  define DEVTENSOR_UNROLL_PRAGMA(x) _Pragma(#x)
#  define DEVTENSOR_UNROLL(n) DEVTENSOR_UNROLL_PRAGMA(GCC unroll n)
#endif

namespace devtensor::backend_cpu::simd {

/// The widest vector ISA of this CPU that the kernels use.
enum class isa { portable, avx2, avx512 };

#if DEVTENSOR_HAS_X86_KERNELS

/// The widest ISA the kernels may use from now on (limit_isa): all by default.
inline std::atomic<isa>& isa_cap() noexcept {
    static std::atomic<isa> cap{isa::avx512};
    return cap;
}

/// Keeps every kernel to `limit` or narrower from now on (as oneDNN's
/// ONEDNN_MAX_CPU_ISA): for tests that compare whole runs across ISA paths.
inline void limit_isa(isa limit) noexcept { isa_cap().store(limit, std::memory_order_relaxed); }

/// Asked once: AVX-512F beats AVX2+FMA beats plain C++; then capped by limit_isa.
inline isa best_isa() noexcept {
    static const isa best = [] {
        if (__builtin_cpu_supports("avx512f")) return isa::avx512;
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return isa::avx2;
        return isa::portable;
    }();
    const isa cap = isa_cap().load(std::memory_order_relaxed);
    return cap < best ? cap : best;
}

/// 16-byte vectors of float or double with streaming stores, for the
/// elementwise loops: SSE2 is in every x86-64 CPU, so no run-time check, and
/// memory-bound loops gain nothing from wider registers.
template <class T>
struct sse2;

template <>
struct sse2<float> {
    using type = __m128;
    static constexpr int lanes = 4;
    static type set1(float x) { return _mm_set1_ps(x); }
    static type load(const float* p) { return _mm_loadu_ps(p); }
    static type add(type a, type b) { return _mm_add_ps(a, b); }
    static void store(float* p, type v) { _mm_storeu_ps(p, v); }
    /// Past the caches, straight to memory; p 16-byte aligned.
    static void stream(float* p, type v) { _mm_stream_ps(p, v); }
    /// p[0, count) in lanes [0, count) (count 1 to 4), nothing read past them.
    static type load_first(const float* p, int count) {
        const auto two = [](const float* q) {  // 8 bytes through the unaligned integer type (not a double*)
            return _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i_u*>(q)));
        };
        switch (count) {
            case 1: return _mm_load_ss(p);
            case 2: return two(p);
            case 3: return _mm_movelh_ps(two(p), _mm_load_ss(p + 2));
            default: return load(p);
        }
    }
    /// Lanes [0, count) of `chosen`, the others of `other`.
    static type first_lanes(int count, type chosen, type other) {
        const type mask = _mm_castsi128_ps(_mm_cmpgt_epi32(_mm_set1_epi32(count), _mm_setr_epi32(0, 1, 2, 3)));
        return _mm_or_ps(_mm_and_ps(mask, chosen), _mm_andnot_ps(mask, other));
    }
    /// Lanes 2, 3 moved to 0, 1; then lane 1 to 0: the steps of a pairwise fold.
    static type upper_half(type v) { return _mm_movehl_ps(v, v); }
    static type lane_one(type v) { return _mm_shuffle_ps(v, v, 1); }
    static float first(type v) { return _mm_cvtss_f32(v); }
};

template <>
struct sse2<double> {
    using type = __m128d;
    static constexpr int lanes = 2;
    static type set1(double x) { return _mm_set1_pd(x); }
    static type load(const double* p) { return _mm_loadu_pd(p); }
    static type add(type a, type b) { return _mm_add_pd(a, b); }
    static void store(double* p, type v) { _mm_storeu_pd(p, v); }
    static void stream(double* p, type v) { _mm_stream_pd(p, v); }
    static type load_first(const double* p, int count) { return count == 1 ? _mm_load_sd(p) : load(p); }
    static type first_lanes(int count, type chosen, type other) {
        const type mask = _mm_castsi128_pd(_mm_cmpgt_epi32(_mm_set1_epi32(count), _mm_setr_epi32(0, 0, 1, 1)));
        return _mm_or_pd(_mm_and_pd(mask, chosen), _mm_andnot_pd(mask, other));
    }
    static type upper_half(type v) { return _mm_unpackhi_pd(v, v); }
    static double first(type v) { return _mm_cvtsd_f64(v); }
};

/// Orders streaming stores before whatever the thread does next.
inline void stream_fence() { _mm_sfence(); }

#  define DEVTENSOR_AVX2 __attribute__((target("avx2,fma")))
#  define DEVTENSOR_AVX512 __attribute__((target("avx512f")))

/// Operations on one register of T; `lanes` elements wide.
template <class T, isa I>
struct vec;

template <>
struct vec<float, isa::avx2> {
    using type = __m256;
    static constexpr int lanes = 8;
    DEVTENSOR_AVX2 static type zero() { return _mm256_setzero_ps(); }
    DEVTENSOR_AVX2 static type load(const float* p) { return _mm256_loadu_ps(p); }
    DEVTENSOR_AVX2 static type broadcast(const float* p) { return _mm256_broadcast_ss(p); }
    DEVTENSOR_AVX2 static type fma(type a, type b, type c) { return _mm256_fmadd_ps(a, b, c); }
    DEVTENSOR_AVX2 static type add(type a, type b) { return _mm256_add_ps(a, b); }
    DEVTENSOR_AVX2 static void store(float* p, type v) { _mm256_storeu_ps(p, v); }
};

template <>
struct vec<double, isa::avx2> {
    using type = __m256d;
    static constexpr int lanes = 4;
    DEVTENSOR_AVX2 static type zero() { return _mm256_setzero_pd(); }
    DEVTENSOR_AVX2 static type load(const double* p) { return _mm256_loadu_pd(p); }
    DEVTENSOR_AVX2 static type broadcast(const double* p) { return _mm256_broadcast_sd(p); }
    DEVTENSOR_AVX2 static type fma(type a, type b, type c) { return _mm256_fmadd_pd(a, b, c); }
    DEVTENSOR_AVX2 static type add(type a, type b) { return _mm256_add_pd(a, b); }
    DEVTENSOR_AVX2 static void store(double* p, type v) { _mm256_storeu_pd(p, v); }
};

template <>
struct vec<float, isa::avx512> {
    using type = __m512;
    static constexpr int lanes = 16;
    DEVTENSOR_AVX512 static type zero() { return _mm512_setzero_ps(); }
    DEVTENSOR_AVX512 static type load(const float* p) { return _mm512_loadu_ps(p); }
    DEVTENSOR_AVX512 static type broadcast(const float* p) { return _mm512_set1_ps(*p); }
    DEVTENSOR_AVX512 static type fma(type a, type b, type c) { return _mm512_fmadd_ps(a, b, c); }
    DEVTENSOR_AVX512 static type add(type a, type b) { return _mm512_add_ps(a, b); }
    DEVTENSOR_AVX512 static void store(float* p, type v) { _mm512_storeu_ps(p, v); }
};

template <>
struct vec<double, isa::avx512> {
    using type = __m512d;
    static constexpr int lanes = 8;
    DEVTENSOR_AVX512 static type zero() { return _mm512_setzero_pd(); }
    DEVTENSOR_AVX512 static type load(const double* p) { return _mm512_loadu_pd(p); }
    DEVTENSOR_AVX512 static type broadcast(const double* p) { return _mm512_set1_pd(*p); }
    DEVTENSOR_AVX512 static type fma(type a, type b, type c) { return _mm512_fmadd_pd(a, b, c); }
    DEVTENSOR_AVX512 static type add(type a, type b) { return _mm512_add_pd(a, b); }
    DEVTENSOR_AVX512 static void store(double* p, type v) { _mm512_storeu_pd(p, v); }
};

#else

inline isa best_isa() noexcept { return isa::portable; }
inline void limit_isa(isa) noexcept {}
inline void stream_fence() {}
template <class T>
struct sse2;  // named by code that `if constexpr` discards here (nvcc's device pass)

#endif

}  // namespace devtensor::backend_cpu::simd
