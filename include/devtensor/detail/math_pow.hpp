// devtensor's own pow(x, y) for float and double (DESIGN §15), with C99 Annex F's
// special cases (those of std::pow and torch.pow), and integer powers that wrap.
//
// x^y = e^(y ln x): an error δ in y ln x becomes a relative error δ in the
// result, and |y ln x| reaches 745 before the result underflows, so ln x must be
// good to about 2^-62 relative for a 2-ulp double. double: ln x as a pair
// (log_pair), y ln x as a pair, e^(hi + lo) = e^hi (1 + lo). float: the same in
// double precision (ln x and e^z good to 1 ulp of a double, |y ln x| < 104), one
// rounding to float at the end.
#pragma once

#include <devtensor/detail/math.hpp>

#include <cstdint>
#include <type_traits>

namespace devtensor::detail::math {
DEVTENSOR_BEGIN_TU_NAMESPACE

/// ln x = hi + lo to about 2^-63 relative, for finite x > 0 (double). x = 2^k m,
/// m in [√½, √2), s = (m - 1) / (m + 1) as a pair, ln m = 2 atanh s =
/// 2s + (2/3)s³ + s⁵ R(s²): the first two terms as pairs, R's Taylor series
/// (2 / (2j + 5)) in double, where its rounding is below 2^-64 of the sum.
DEVTENSOR_HOST_DEVICE inline void log_pair(double x, double& hi, double& lo) {
    using c = constants<double>;
    constexpr int P = format<double>::precision;
    int k = 0;
    if (x < pow2<double>(format<double>::min_exponent)) {  // subnormal: into the normal range
        x = detail::mul(x, pow2<double>(P));
        k = -P;
    }
    const std::uint64_t ix = bits_of(x);
    const std::uint64_t tmp = ix - c::sqrt_half_bits;
    k += static_cast<int>(static_cast<std::int64_t>(tmp) >> (P - 1));
    const double m = from_bits<double>(ix - (tmp & (~std::uint64_t{0} << (P - 1))));
    const double f = m - 1.0;  // exact
    double d_hi, d_lo;
    fast_two_sum(2.0, f, d_hi, d_lo);  // m + 1 = 2 + f
    const double s_hi = div(f, d_hi);
    const double s_lo = div(detail::fma(-s_hi, d_lo, detail::fma(-s_hi, d_hi, f)), d_hi);
    // s³ = c_hi + c_lo, then (2/3) s³ = t_hi + t_lo
    const double z = detail::mul(s_hi, s_hi);
    const double z_lo = detail::fma(s_hi, s_hi, -z);
    const double c_hi = detail::mul(z, s_hi);
    const double c_lo = detail::fma(z, s_hi, -c_hi) + detail::fma(z_lo, s_hi, detail::mul(detail::mul(3.0, z), s_lo));
    constexpr double two_thirds_hi = 2.0 / 3.0;
    constexpr double two_thirds_lo = 0x1.5555555555555p-55;  // 2/3 - two_thirds_hi
    const double t_hi = detail::mul(two_thirds_hi, c_hi);
    const double t_lo = detail::fma(two_thirds_hi, c_hi, -t_hi) +
                        detail::fma(two_thirds_hi, c_lo, detail::mul(two_thirds_lo, c_hi));
    const double r = poly(z, 2. / 5, 2. / 7, 2. / 9, 2. / 11, 2. / 13, 2. / 15, 2. / 17, 2. / 19, 2. / 21,
                          2. / 23, 2. / 25);
    const double tail = detail::mul(detail::mul(c_hi, z), r);  // s⁵ R(s²)
    // ln m = 2 s_hi + t_hi + (2 s_lo + t_lo + tail): the first sum exactly
    double h, e;
    two_sum(detail::mul(2.0, s_hi), t_hi, h, e);
    e = e + ((detail::mul(2.0, s_lo) + t_lo) + tail);
    // + k ln 2: k ln2_hi exact (|k| < 2^11, ln2_hi has 32 bits)
    const double kf = static_cast<double>(k);
    double H, E;
    two_sum(detail::mul(kf, c::ln2_hi), h, H, E);
    E = E + (e + detail::mul(kf, c::ln2_lo));
    fast_two_sum(H, E, hi, lo);
}

/// e^(z_hi + z_lo) for |z_lo| <= ulp(z_hi), either part clamped like exp's argument.
DEVTENSOR_HOST_DEVICE inline double exp_pair(double z_hi, double z_lo) {
    using c = constants<double>;
    if (!(abs(z_hi) <= c::exp_clamp)) {  // overflow or underflow in any case (or an infinite y)
        z_hi = z_hi > 0 ? c::exp_clamp : -c::exp_clamp;
        z_lo = 0;
    }
    ints_t<double> k = 0;
    double hi, lo, s, e;
    exp_reduced(z_hi, k, hi, lo);
    // e^z_hi e^z_lo = 2^k (1 + hi + lo) (1 + z_lo), z_lo² below 2^-86
    const double tail = lo + detail::fma(hi, z_lo, z_lo);
    fast_two_sum(1.0, hi, s, e);
    return scale(s + (e + tail), k);
}

/// Whether the finite y is an integer, and whether an odd one.
template <real T>
DEVTENSOR_HOST_DEVICE inline void integer_kind(T y, bool& integer, bool& odd) {
    constexpr int P = format<T>::precision;
    const int e = static_cast<int>((bits_of(y) & exponent_mask<T>()) >> (P - 1)) - format<T>::bias;
    if (e < 0) {  // |y| < 1
        integer = y == 0;
        odd = false;
    } else if (e >= P - 1) {  // no fraction bits; odd only at e == P - 1
        integer = true;
        odd = e == P - 1 && (bits_of(y) & 1u) != 0;
    } else {
        const int fraction_bits = P - 1 - e;
        const bits_t<T> unit = bits_t<T>{1} << fraction_bits;
        integer = (bits_of(y) & (unit - 1)) == 0;
        odd = integer && (bits_of(y) & unit) != 0;
    }
}

/// x^y for x > 0 finite, y finite.
DEVTENSOR_HOST_DEVICE inline float pow_positive(float x, float y) {
    const double z = detail::mul(static_cast<double>(y), log(static_cast<double>(x)));
    return static_cast<float>(exp(z));
}
DEVTENSOR_HOST_DEVICE inline double pow_positive(double x, double y) {
    double l_hi, l_lo;
    log_pair(x, l_hi, l_lo);
    const double z_hi = detail::mul(y, l_hi);
    if (!(abs(z_hi) <= constants<double>::exp_clamp)) return exp_pair(z_hi, 0);
    return exp_pair(z_hi, detail::fma(y, l_lo, detail::fma(y, l_hi, -z_hi)));
}

/// x^y with std::pow's special values: pow(x, ±0) = 1 and pow(1, y) = 1 even for
/// NaN, pow(-1, ±inf) = 1, a negative base needs an integer exponent (else NaN),
/// and an odd integer exponent keeps the base's sign.
template <real T>
DEVTENSOR_HOST_DEVICE inline T pow(T x, T y) {
    if (y == 0 || x == 1) return 1;
    if (x != x || y != y) return quiet_nan<T>();
    const T ax = abs(x);
    if (!(abs(y) < infinity<T>())) {
        if (ax == 1) return 1;
        return (ax < 1) == (y < 0) ? infinity<T>() : T(0);
    }
    bool integer, odd;
    integer_kind(y, integer, odd);
    const bool negate = x < 0 && odd;  // -0 < 0 is false: the sign of -0 is taken below
    if (ax == 0) {
        const T r = y < 0 ? infinity<T>() : T(0);
        return odd ? copysign(r, x) : r;
    }
    if (ax == infinity<T>()) {
        const T r = y < 0 ? T(0) : infinity<T>();
        return negate ? -r : r;
    }
    if (x < 0 && !integer) return quiet_nan<T>();
    const T r = pow_positive(ax, y);
    return negate ? -r : r;
}

/// a^b for integers, wrapping like a repeated product; a negative b gives 1 / a^|b|
/// truncated (0 unless a is ±1), as torch.pow's integer kernel does.
template <class T>
    requires std::is_integral_v<T>
DEVTENSOR_HOST_DEVICE inline T pow(T a, T b) {
    using U = std::make_unsigned_t<decltype(a * b)>;
    if constexpr (std::is_signed_v<T>) {
        if (b < 0) {
            if (a == 1) return 1;
            if (a == -1) return (b & 1) != 0 ? T(-1) : T(1);
            return 0;
        }
    }
    U result = 1, base = static_cast<U>(a);
    for (auto e = static_cast<std::make_unsigned_t<T>>(b); e != 0; e >>= 1) {
        if ((e & 1u) != 0) result = static_cast<U>(result * base);
        base = static_cast<U>(base * base);
    }
    return static_cast<T>(result);
}

DEVTENSOR_END_TU_NAMESPACE
}  // namespace devtensor::detail::math
