// devtensor's own elementary functions, for float and double (DESIGN §15):
// exp, log, sin, cos, tanh, sigmoid, and sincos_2pi (sin and cos of 2πu, the
// angle of randn's Box–Muller). The platform libms differ between glibc and
// CUDA, so these are written once as DEVTENSOR_HOST_DEVICE code from IEEE
// +, -, *, /, detail::fma / mul / add (arith.hpp: no contraction left to the
// compilers) and integer bit manipulation only: each result is a function of
// the input bits alone, the same on the host and on any GPU.
//
// exp, log, tanh and sigmoid are written once over a lane type (math_lanes.inl):
// instantiated here for T itself, and by backend/cpu/math_lanes.hpp for x86 vector
// registers, whose lanes thus give these functions' bits. Their special cases are
// selects, not branches, for that.
//
// Accuracy: under 1 ulp against the correctly rounded result over the whole
// domain (tests/test_math_mpfr.cpp measures it against MPFR); every NaN result is the one quiet
// NaN `quiet_nan<T>()` (x86 and CUDA would otherwise give different NaN bits).
//
// The names live in devtensor::detail::math and are meant to be called
// qualified (`math::exp(x)`): arguments are floating-point values, so no ADL
// reaches std:: or ::exp, and inside this namespace the names hide libm's.
#pragma once

#include <devtensor/config.hpp>        // DEVTENSOR_HOST_DEVICE, DEVTENSOR_BEGIN_TU_NAMESPACE
#include <devtensor/detail/arith.hpp>  // detail::fma, detail::mul, detail::add

#include <bit>
#include <cmath>  // std::sqrt: IEEE, correctly rounded everywhere
#include <cstdint>
#include <type_traits>

namespace devtensor::detail::math {
DEVTENSOR_BEGIN_TU_NAMESPACE

template <class T>
concept real = std::is_same_v<T, float> || std::is_same_v<T, double>;

// ---- bits --------------------------------------------------------------------------------

/// The IEEE layout of T: `precision` significand bits (the hidden one included).
template <class T>
struct format;
template <>
struct format<float> {
    using bits = std::uint32_t;
    using signed_bits = std::int32_t;
    static constexpr int precision = 24, bias = 127, min_exponent = -126, max_exponent = 127;
};
template <>
struct format<double> {
    using bits = std::uint64_t;
    using signed_bits = std::int64_t;
    static constexpr int precision = 53, bias = 1023, min_exponent = -1022, max_exponent = 1023;
};
template <class T>
using bits_t = typename format<T>::bits;

// std::bit_cast is not usable in device code under every nvcc; the intrinsics are.
DEVTENSOR_HOST_DEVICE inline std::uint32_t bits_of(float x) {
#ifdef __CUDA_ARCH__
    return __float_as_uint(x);
#else
    return std::bit_cast<std::uint32_t>(x);
#endif
}
DEVTENSOR_HOST_DEVICE inline std::uint64_t bits_of(double x) {
#ifdef __CUDA_ARCH__
    return static_cast<std::uint64_t>(__double_as_longlong(x));
#else
    return std::bit_cast<std::uint64_t>(x);
#endif
}
template <real T>
DEVTENSOR_HOST_DEVICE inline T from_bits(bits_t<T> b) {
#ifdef __CUDA_ARCH__
    if constexpr (sizeof(T) == 4) return __uint_as_float(b);
    else return __longlong_as_double(static_cast<long long>(b));
#else
    return std::bit_cast<T>(b);
#endif
}

/// Leading zero bits of a 64-bit word (64 for 0).
DEVTENSOR_HOST_DEVICE inline int leading_zeros(std::uint64_t x) {
#ifdef __CUDA_ARCH__
    return __clzll(static_cast<long long>(x));
#else
    return std::countl_zero(x);
#endif
}

template <real T>
DEVTENSOR_HOST_DEVICE constexpr bits_t<T> exponent_mask() {
    return ((bits_t<T>{1} << (sizeof(T) * 8 - format<T>::precision)) - 1) << (format<T>::precision - 1);
}

/// The one quiet NaN every NaN result of these functions is (positive, payload 0).
template <real T>
DEVTENSOR_HOST_DEVICE inline T quiet_nan() {
    return from_bits<T>(exponent_mask<T>() | bits_t<T>{1} << (format<T>::precision - 2));
}

template <real T>
DEVTENSOR_HOST_DEVICE inline T infinity() {
    return from_bits<T>(exponent_mask<T>());
}

/// IEEE division and square root, spelled so that no fast-math flag of nvcc changes them.
template <real T>
DEVTENSOR_HOST_DEVICE inline T div(T a, T b) {
#ifdef __CUDA_ARCH__
    if constexpr (sizeof(T) == 4) return __fdiv_rn(a, b);
    else return __ddiv_rn(a, b);
#else
    return a / b;
#endif
}
template <real T>
DEVTENSOR_HOST_DEVICE inline T sqrt(T x) {
#ifdef __CUDA_ARCH__
    if constexpr (sizeof(T) == 4) return __fsqrt_rn(x);
    else return __dsqrt_rn(x);
#else
    return std::sqrt(x);
#endif
}

/// 1 / n!, correctly rounded to double (n! is exact in double up to 22!); a
/// variable, so device code needs no constexpr function call.
template <int N>
inline constexpr double factorial = N * factorial<N - 1>;
template <>
inline constexpr double factorial<0> = 1;
template <int N>
inline constexpr double inverse_factorial = 1 / factorial<N>;

// ---- constants -----------------------------------------------------------------------------

template <class T>
struct constants;
template <>
struct constants<float> {
    static constexpr float log2e = 0x1.715476p+0f;
    static constexpr float shifter = 0x1.8p23f;     // x + shifter - shifter rounds x to an integer
    static constexpr float ln2_hi = 0x1.62e4p-1f;   // 15 bits: k * ln2_hi is exact for |k| < 2^9
    static constexpr float ln2_lo = 0x1.7f7d1cp-20f;
    static constexpr float exp_clamp = 104.f;       // exp(±104) is inf / 0 in float
    static constexpr float tanh_one = 9.5f;         // tanh rounds to 1 from 9.02 on
    static constexpr float pio2_hi = 0x1.921fb6p+0f;
    static constexpr float pio2_lo = -0x1.777a5cp-25f;
    static constexpr float pio4 = 0x1.921fb6p-1f;
    static constexpr float sin_is_x = 0x1p-12f;     // below it sin(x) rounds to x
    static constexpr std::uint32_t sqrt_half_bits = 0x3f3504f3u;
};
template <>
struct constants<double> {
    static constexpr double log2e = 0x1.71547652b82fep+0;
    static constexpr double shifter = 0x1.8p52;
    static constexpr double ln2_hi = 0x1.62e42feep-1;  // 32 bits: k * ln2_hi exact for |k| < 2^21
    static constexpr double ln2_lo = 0x1.a39ef35793c76p-33;
    static constexpr double exp_clamp = 746.;
    static constexpr double tanh_one = 20.;          // tanh rounds to 1 from 19.07 on
    static constexpr double pio2_hi = 0x1.921fb54442d18p+0;
    static constexpr double pio2_lo = 0x1.1a62633145c07p-54;
    static constexpr double pio4 = 0x1.921fb54442d18p-1;
    static constexpr double sin_is_x = 0x1p-27;
    static constexpr std::uint64_t sqrt_half_bits = 0x3fe6a09e667f3bcdull;
};

/// The sign bit of T, as T's signed integer.
template <real T>
DEVTENSOR_HOST_DEVICE constexpr typename format<T>::signed_bits sign_bit() {
    return static_cast<typename format<T>::signed_bits>(bits_t<T>{1} << (sizeof(T) * 8 - 1));
}

// ---- exp, log, tanh, sigmoid: the lane-generic text on one T ------------------------------
// math_lanes.inl is written over a lane type V; here V is T itself, and its lane
// operations are the scalar ones. backend/cpu/math_lanes.hpp instantiates the same
// text for x86 vector registers, so a vector lane gives these functions' bits.

template <class V>
concept lane_type = real<V>;
template <real T>
using element_t = T;
template <real T>
using ints_t = typename format<T>::signed_bits;

using detail::fma;
using detail::mul;

/// mask ? a : b.
template <class T>
DEVTENSOR_HOST_DEVICE inline T select(bool mask, T a, T b) {
    return mask ? a : b;
}

/// The bits of x as T's signed integer, and back.
template <real T>
DEVTENSOR_HOST_DEVICE inline ints_t<T> to_ints(T x) {
    return static_cast<ints_t<T>>(bits_of(x));
}
template <real T>
DEVTENSOR_HOST_DEVICE inline T from_ints(ints_t<T> i) {
    return from_bits<T>(static_cast<bits_t<T>>(i));
}

#define DEVTENSOR_MATH_FUNCTION DEVTENSOR_HOST_DEVICE inline
#include <devtensor/detail/math_lanes.inl>
#undef DEVTENSOR_MATH_FUNCTION

// ---- sin, cos ------------------------------------------------------------------------------

/// 2/π in 32-bit words, most significant first: 2/π = Σ word(j) 2^(-32 (j + 1)).
/// 40 words reach the last bit a double's reduction needs (exponent 1023 + 53 + 128 bits).
#define DEVTENSOR_TWO_OVER_PI_WORDS                                                                \
    0xA2F9836Eu, 0x4E441529u, 0xFC2757D1u, 0xF534DDC0u, 0xDB629599u, 0x3C439041u, 0xFE5163ABu,     \
        0xDEBBC561u, 0xB7246E3Au, 0x424DD2E0u, 0x06492EEAu, 0x09D1921Cu, 0xFE1DEB1Cu, 0xB129A73Eu, \
        0xE88235F5u, 0x2EBB4484u, 0xE99C7026u, 0xB45F7E41u, 0x3991D639u, 0x835339F4u, 0x9C845F8Bu, \
        0xBDF9283Bu, 0x1FF897FFu, 0xDE05980Fu, 0xEF2F118Bu, 0x5A0A6D1Fu, 0x6D367ECFu, 0x27CB09B7u, \
        0x4F463F66u, 0x9E5FEA2Du, 0x7527BAC7u, 0xEBE5F17Bu, 0x3D0739F7u, 0x8A5292EAu, 0x6BFB5FB1u, \
        0x1F8D5D08u, 0x56033046u, 0xFC7B6BABu, 0xF0CFBC20u, 0x9AF4361Du
inline constexpr std::uint32_t two_over_pi_host[40] = {DEVTENSOR_TWO_OVER_PI_WORDS};
#if DEVTENSOR_HAS_CUDA
// Device code cannot index a host constexpr array at run time; one copy per
// translation unit (internal linkage, as whole-program nvcc requires).
static __device__ constexpr std::uint32_t two_over_pi_device[40] = {DEVTENSOR_TWO_OVER_PI_WORDS};
#endif
#undef DEVTENSOR_TWO_OVER_PI_WORDS

DEVTENSOR_HOST_DEVICE inline std::uint32_t two_over_pi_word(int j) {
#ifdef __CUDA_ARCH__
    return two_over_pi_device[j];
#else
    return two_over_pi_host[j];
#endif
}

/// Bits [pos, pos + 64) of the little-endian number p[0..n) (bits outside are 0).
DEVTENSOR_HOST_DEVICE inline std::uint64_t bits_at(const std::uint32_t* p, int n, int pos) {
    const int w = pos >= 0 ? pos / 32 : -((31 - pos) / 32);
    const int shift = pos - 32 * w;  // 0 .. 31
    std::uint64_t words[3];
    for (int i = 0; i < 3; ++i) words[i] = w + i >= 0 && w + i < n ? p[w + i] : 0u;
    const std::uint64_t low = words[0] | words[1] << 32;
    return shift == 0 ? low : low >> shift | words[2] << (64 - shift);
}

/// |x| = (q + f) π/2 with f in [-½, ½), for finite |x| >= π/4 (Payne–Hanek):
/// the exact product of x's integer significand with a 224-bit window of 2/π,
/// q mod 4 from its integer bits, f from 128 fraction bits, then r = f π/2 as
/// the pair (r_hi, r_lo). Exact integer arithmetic: the same on every device,
/// for every x, and f keeps more than p + 60 bits even for the doubles closest
/// to a multiple of π/2. Returns q mod 4.
template <real T>
DEVTENSOR_HOST_DEVICE inline int reduce_pio2(T a, T& r_hi, T& r_lo) {
    using c = constants<T>;
    constexpr int P = format<T>::precision;
    constexpr int K = 7;  // window words
    const bits_t<T> ia = bits_of(a);
    const int e = static_cast<int>(ia >> (P - 1)) - format<T>::bias - (P - 1);  // a = M 2^e
    const std::uint64_t m = (ia & ((bits_t<T>{1} << (P - 1)) - 1)) | bits_t<T>{1} << (P - 1);
    // Words before j0 contribute multiples of 4 to a 2/π: they leave q mod 4 alone.
    const int j0 = e >= 2 ? (e - 2) / 32 : 0;
    std::uint32_t w[K];
    for (int t = 0; t < K; ++t) w[t] = two_over_pi_word(j0 + K - 1 - t);
    std::uint32_t p[K + 2] = {};
    const std::uint32_t m_part[2] = {static_cast<std::uint32_t>(m), static_cast<std::uint32_t>(m >> 32)};
    for (int i = 0; i < 2; ++i) {
        std::uint64_t carry = 0;
        for (int t = 0; t < K; ++t) {
            const std::uint64_t cur = std::uint64_t{w[t]} * m_part[i] + p[t + i] + carry;
            p[t + i] = static_cast<std::uint32_t>(cur);
            carry = cur >> 32;
        }
        p[K + i] = static_cast<std::uint32_t>(carry);
    }
    const int point = 32 * (j0 + K) - e;  // p / 2^point = a 2/π mod 4 (and less than 2^-130 short)
    int q = static_cast<int>(bits_at(p, K + 2, point) & 3u);
    std::uint64_t f_hi = bits_at(p, K + 2, point - 64), f_lo = bits_at(p, K + 2, point - 128);
    const bool negative = f_hi >> 63 != 0;  // f >= ½: the next quadrant, f - 1
    if (negative) {
        q += 1;
        f_lo = ~f_lo + 1;
        f_hi = ~f_hi + (f_lo == 0 ? 1u : 0u);
    }
    const int lz = f_hi != 0 ? leading_zeros(f_hi) : 64 + leading_zeros(f_lo);
    if (lz >= 128) {  // not reached (2/π is irrational), but defined
        r_hi = r_lo = 0;
        return q & 3;
    }
    // The fraction's bits from its leading one: the first P bits and the next P.
    std::uint64_t g_hi = f_hi, g_lo = f_lo;
    if (lz >= 64) {
        g_hi = f_lo << (lz - 64);
        g_lo = 0;
    } else if (lz > 0) {
        g_hi = f_hi << lz | f_lo >> (64 - lz);
        g_lo = f_lo << lz;
    }
    const std::uint64_t top = g_hi >> (64 - P);
    const std::uint64_t next = (g_hi << P | g_lo >> (64 - P)) >> (64 - P);
    const T f1 = scale(static_cast<T>(top), -P - lz);  // both exact
    const T f2 = scale(static_cast<T>(next), -2 * P - lz);
    // r = (f1 + f2) π/2 to ~2p bits
    const T h = detail::mul(f1, c::pio2_hi);
    const T l = detail::fma(f2, c::pio2_hi, detail::fma(f1, c::pio2_lo, detail::fma(f1, c::pio2_hi, -h)));
    fast_two_sum(h, l, r_hi, r_lo);
    if (negative) {
        r_hi = -r_hi;
        r_lo = -r_lo;
    }
    return q & 3;
}

/// sin(r_hi + r_lo) for |r| <= π/4 (a bit more is fine): r + r³ S(r²) + r_lo (1 - r²/2),
/// S the Taylor series.
template <real T>
DEVTENSOR_HOST_DEVICE inline T sin_kernel(T r_hi, T r_lo) {
    const T z = detail::mul(r_hi, r_hi);
    T s;
    if constexpr (sizeof(T) == 4) {
        s = poly(z, static_cast<T>(-inverse_factorial<3>), inverse_factorial<5>, -inverse_factorial<7>,
                 inverse_factorial<9>);
    } else {
        s = poly(z, -inverse_factorial<3>, inverse_factorial<5>, -inverse_factorial<7>, inverse_factorial<9>,
                 -inverse_factorial<11>, inverse_factorial<13>, -inverse_factorial<15>, inverse_factorial<17>);
    }
    const T tail = detail::fma(detail::mul(z, r_hi), s, detail::fma(detail::mul(T(-0.5), z), r_lo, r_lo));
    return r_hi + tail;
}

/// cos(r_hi + r_lo) for |r| <= π/4: 1 - r²/2 with its rounding error kept, plus
/// r⁴ C(r²) - r r_lo, C the Taylor series.
template <real T>
DEVTENSOR_HOST_DEVICE inline T cos_kernel(T r_hi, T r_lo) {
    const T z = detail::mul(r_hi, r_hi);
    const T z_lo = detail::fma(r_hi, r_hi, -z);
    T cz;
    if constexpr (sizeof(T) == 4) {
        cz = poly(z, static_cast<T>(inverse_factorial<4>), -inverse_factorial<6>, inverse_factorial<8>,
                  -inverse_factorial<10>);
    } else {
        cz = poly(z, inverse_factorial<4>, -inverse_factorial<6>, inverse_factorial<8>, -inverse_factorial<10>,
                  inverse_factorial<12>, -inverse_factorial<14>, inverse_factorial<16>, -inverse_factorial<18>);
    }
    const T hz = detail::mul(T(0.5), z);  // exact
    const T w = T(1) - hz;
    const T w_err = (T(1) - w) - hz;  // exact: 1 - hz = w + w_err
    const T tail = detail::fma(detail::mul(z, z), cz,
                               detail::fma(-r_hi, r_lo, detail::fma(T(-0.5), z_lo, w_err)));
    return w + tail;
}

/// r = x - q π/2 as a pair, q mod 4 returned; |r| <= π/4.
template <real T>
DEVTENSOR_HOST_DEVICE inline int reduce(T x, T& r_hi, T& r_lo) {
    if (abs(x) <= constants<T>::pio4) {
        r_hi = x;
        r_lo = 0;
        return 0;
    }
    const int q = reduce_pio2(abs(x), r_hi, r_lo);
    if (x > 0) return q;
    r_hi = -r_hi;
    r_lo = -r_lo;
    return (4 - q) & 3;
}

/// sin and cos of the reduced pair in quadrant q.
template <real T>
DEVTENSOR_HOST_DEVICE inline void sincos_quadrant(int q, T r_hi, T r_lo, T& s, T& c) {
    const T sr = sin_kernel(r_hi, r_lo), cr = cos_kernel(r_hi, r_lo);
    s = (q & 1) ? cr : sr;
    c = (q & 1) ? sr : cr;
    if (q == 1 || q == 2) c = -c;
    if (q >= 2) s = -s;
}

/// sin x and cos x; inf and NaN give NaN.
template <real T>
DEVTENSOR_HOST_DEVICE inline void sincos(T x, T& s, T& c) {
    if (!(abs(x) < infinity<T>())) {
        s = c = quiet_nan<T>();
        return;
    }
    T r_hi, r_lo;
    const int q = reduce(x, r_hi, r_lo);
    sincos_quadrant(q, r_hi, r_lo, s, c);
    if (abs(x) < constants<T>::sin_is_x) s = x;  // sin x = x (and -0 stays -0)
}

template <real T>
DEVTENSOR_HOST_DEVICE inline T sin(T x) {
    T s, c;
    sincos(x, s, c);
    return s;
}

template <real T>
DEVTENSOR_HOST_DEVICE inline T cos(T x) {
    T s, c;
    sincos(x, s, c);
    return c;
}

/// sin(2πu) and cos(2πu) for finite u, the reduction exact: 4u = q + f with q the
/// nearest integer, r = f π/2. Box–Muller's angle, without rounding 2πu first.
template <real T>
DEVTENSOR_HOST_DEVICE inline void sincos_2pi(T u, T& s, T& c) {
    using k = constants<T>;
    const T y = detail::mul(T(4), u);  // exact
    const T t = y + k::shifter;  // rounds 4u to the nearest integer q
    const T f = y - (t - k::shifter);  // exact, in [-½, ½]
    const auto qi = static_cast<typename format<T>::signed_bits>(bits_of(t) - bits_of(k::shifter));
    const T h = detail::mul(f, k::pio2_hi);
    const T l = detail::fma(f, k::pio2_lo, detail::fma(f, k::pio2_hi, -h));
    T r_hi, r_lo;
    fast_two_sum(h, l, r_hi, r_lo);
    sincos_quadrant(static_cast<int>(qi & 3), r_hi, r_lo, s, c);
}

DEVTENSOR_END_TU_NAMESPACE
}  // namespace devtensor::detail::math
