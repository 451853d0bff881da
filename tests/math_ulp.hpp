// What the two tests of detail/math.hpp share: the ulp measure, the record of the
// largest error, and the edge cases. test_math.cpp measures against glibc's long
// double functions (fast; runs under the sanitizers too), test_math_mpfr.cpp against
// MPFR's correctly rounded ones (the long sweep, main build only).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace math_test {

template <class T>
T from_bits(std::uint64_t b) {
    if constexpr (sizeof(T) == 4) return std::bit_cast<float>(static_cast<std::uint32_t>(b));
    else return std::bit_cast<double>(b);
}

/// log2 of one ulp of T at a value m 2^e, m in [0.5, 1) (frexp's and MPFR's exponent):
/// the spacing of T's numbers there; below the normal range, the subnormal spacing.
template <class T>
constexpr int ulp_exponent(int e) {
    using lim = std::numeric_limits<T>;  // 2^(min_exponent - 1): the smallest normal
    return std::max(e, lim::min_exponent) - lim::digits;
}

/// The error where ours or the reference (rounded to T) is not a finite nonzero number:
/// a NaN must meet a NaN, an infinity the same infinity (overflow must match exactly,
/// both ways), a zero the zero of the same sign; anything else is infinitely wrong.
/// nullopt where the two are to be compared in ulps.
template <class T>
std::optional<long double> special_error(T ours, T rounded_reference) {
    constexpr long double wrong = std::numeric_limits<long double>::infinity();
    if (std::isnan(ours) || std::isnan(rounded_reference))
        return std::isnan(ours) && std::isnan(rounded_reference) ? 0 : wrong;
    if (std::isinf(ours) || std::isinf(rounded_reference)) return ours == rounded_reference ? 0 : wrong;
    if (ours == 0 && rounded_reference == 0) return std::signbit(ours) == std::signbit(rounded_reference) ? 0 : wrong;
    return std::nullopt;
}

/// The largest error seen of one function (in ulps), and the argument that gave it.
template <class Arg>
struct worst {
    long double ulps = 0;
    Arg at{};
    void see(const Arg& arg, long double error) {
        if (!(error <= ulps)) {  // a NaN error is the worst
            ulps = error;
            at = arg;
        }
    }
    void merge(const worst& other) { see(other.at, other.ulps); }
};

/// Prints each function's largest error and checks it is within 2 ulps (DESIGN §15).
template <class Arg>
void report(const std::string& title, std::initializer_list<std::pair<const char*, const worst<Arg>*>> functions) {
    const auto describe = [](const char* name, const worst<Arg>& w) {
        std::ostringstream text;
        text.precision(std::numeric_limits<double>::max_digits10);
        text << name << " " << static_cast<double>(w.ulps) << " at " << w.at;
        return text.str();
    };
    std::string text = "max ulp (" + title + "):";
    for (const auto& [name, w] : functions) text += "\n  " + describe(name, *w);
    MESSAGE(text);
    for (const auto& [name, w] : functions) {
        INFO(describe(name, *w));
        CHECK(w->ulps <= 2);
    }
}

/// Arguments where the functions turn: ±0, subnormals, the ends of the range, inf and
/// NaN; ±20 ulps around 1 (log), the overflow and underflow edges of exp, the saturation
/// of tanh and sigmoid, π/4; near multiples of π/2 (the hardest reductions); all negated too.
template <class T>
std::vector<T> edge_cases() {
    using lim = std::numeric_limits<T>;
    constexpr long double ln2 = 0.693147180559945309417232121458176568L;
    constexpr long double half_pi = 1.57079632679489661923132169163975144L;
    constexpr int digits = lim::digits;
    std::vector<T> xs = {0, lim::denorm_min(), lim::min() - lim::denorm_min(), lim::min(), lim::max(),
                         lim::infinity(), lim::quiet_NaN(), lim::epsilon(), T(0.5), T(2), T(10), T(100),
                         T(700), T(1e-8), T(1e-30), T(1e30)};
    // The doubles closest to a multiple of π/2 and π/4 in the whole range (Kahan, Muller:
    // cos is 4.7e-19 at the first), and the float closest to one.
    if constexpr (sizeof(T) == 4) {
        xs.push_back(std::ldexp(T(16367173), 72));
    } else {
        xs.push_back(std::ldexp(6381956970095103.0, 797));
        xs.push_back(std::ldexp(6411027962775774.0, -48));
    }
    for (int k = 1; k < 4000; k += (k < 100 ? 1 : 37)) {
        const T m = static_cast<T>(static_cast<long double>(k) * half_pi);
        xs.push_back(m);
        xs.push_back(std::nextafter(m, T(0)));
        xs.push_back(std::nextafter(m, lim::infinity()));
    }
    // π/2 rounded to T, and its multiples and power-of-two scalings up to the largest exponent
    const T pio2 = static_cast<T>(half_pi);
    for (int k = 1; k <= 256; ++k) xs.push_back(static_cast<T>(k) * pio2);
    for (int e = 1; e <= lim::max_exponent; ++e) xs.push_back(std::ldexp(pio2, e - 1));
    const long double exp_overflow = std::log(static_cast<long double>(lim::max()));
    const long double exp_to_zero = std::log(static_cast<long double>(lim::denorm_min())) - ln2;  // e^x = half the least
    const long double tanh_to_one = (digits + 2) * ln2 / 2;  // 1 - tanh x = 2e^-2x falls below half an ulp of 1-
    const long double sigmoid_to_one = (digits + 1) * ln2;   // 1 - sigmoid x = e^-x falls below it
    for (const long double edge : {1.0L, exp_overflow, std::log(static_cast<long double>(lim::min())),
                                   std::log(static_cast<long double>(lim::denorm_min())), exp_to_zero, tanh_to_one,
                                   sigmoid_to_one, half_pi / 2, 0.5L, 2.0L}) {
        T x = static_cast<T>(edge);
        for (int i = 0; i < 20; ++i) x = std::nextafter(x, T(0));
        for (int i = 0; i < 40; ++i, x = std::nextafter(x, lim::infinity())) xs.push_back(x);
    }
    // log near 1: 1 ± 2^-j down to the last bit
    for (int j = 1; j <= digits; ++j) {
        xs.push_back(1 + std::ldexp(T(1), -j));
        xs.push_back(1 - std::ldexp(T(1), -j));
    }
    const std::size_t n = xs.size();
    for (std::size_t i = 0; i < n; ++i) xs.push_back(-xs[i]);
    return xs;
}

}  // namespace math_test
