// detail/math.hpp: devtensor's own exp, log, sin, cos, tanh and sigmoid against
// glibc's long double functions (64-bit significands), in ulps of the result
// type. float: every `stride`-th bit pattern of all 2^32 plus the edge cases;
// double: a million random values per function across every exponent range,
// plus the edge cases. The long double reference is good to ~2^-11 ulp of a
// double, far below the 2-ulp bound (DESIGN §15). Set DEVTENSOR_MATH_STRIDE=1
// to check all 2^32 floats (a few minutes).
#include "test_support.hpp"

#include <devtensor/detail/math.hpp>

#include <array>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace math = devtensor::detail::math;

namespace {

// A Debug or sanitized build checks a sparser sample (the ASan build runs at -O0).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || !defined(NDEBUG)
constexpr std::uint32_t default_float_stride = 9973;
constexpr int doubles_per_function = 20000;
#else
constexpr std::uint32_t default_float_stride = 997;
constexpr int doubles_per_function = 300000;
#endif

std::uint32_t float_stride() {
    if (const char* s = std::getenv("DEVTENSOR_MATH_STRIDE")) return static_cast<std::uint32_t>(std::strtoul(s, nullptr, 10));
    return default_float_stride;
}

template <class T>
T from_bits(std::uint64_t b) {
    if constexpr (sizeof(T) == 4) {
        const auto w = static_cast<std::uint32_t>(b);
        T x;
        std::memcpy(&x, &w, 4);
        return x;
    } else {
        T x;
        std::memcpy(&x, &b, 8);
        return x;
    }
}

/// One ulp of T at the (exact) value y: the spacing of T's numbers around |y|.
template <class T>
long double ulp_at(long double y) {
    constexpr int digits = std::numeric_limits<T>::digits;
    constexpr int min_exp = std::numeric_limits<T>::min_exponent;  // 2^(min_exp - 1) = smallest normal
    int e = 0;
    (void)std::frexp(std::fabs(y), &e);  // |y| = m 2^e, m in [0.5, 1)
    if (y == 0 || e < min_exp) e = min_exp;
    return std::ldexp(1.0L, e - digits);
}

/// |ours - reference| in ulps of T; inf counts as 2^(max_exp) (one ulp past the largest
/// finite), a NaN where none belongs, or a missing one, as infinitely wrong.
template <class T>
long double ulp_error(T ours, long double reference) {
    if (std::isnan(reference) || std::isnan(ours)) return std::isnan(reference) && std::isnan(ours) ? 0 : INFINITY;
    const long double big = std::ldexp(1.0L, std::numeric_limits<T>::max_exponent);
    const long double rounded = static_cast<T>(reference);
    if (std::isinf(rounded) && rounded == ours) return 0;  // overflowed the same way
    const long double o = std::isinf(ours) ? std::copysign(big, static_cast<long double>(ours)) : ours;
    long double r = reference;
    if (std::isinf(r)) r = std::copysign(big, r);
    return std::fabs(o - r) / ulp_at<T>(r);
}

/// The largest error seen of one function, and where.
template <class T>
struct worst {
    long double ulps = 0;
    T at = 0;
    void see(T x, T ours, long double reference) {
        const long double e = ulp_error(ours, reference);
        if (!(e <= ulps)) {
            ulps = e;
            at = x;
        }
    }
};

/// The six functions on one argument, against their references.
template <class T>
struct checker {
    worst<T> exp, log, sin, cos, tanh, sigmoid;
    void check(T x) {
        const long double lx = x, e = std::exp(lx);
        long double s = 0, c = 0;
        ::sincosl(lx, &s, &c);
        T ours_s = 0, ours_c = 0;
        math::sincos(x, ours_s, ours_c);
        exp.see(x, math::exp(x), e);
        log.see(x, math::log(x), std::log(lx));
        sin.see(x, ours_s, s);
        cos.see(x, ours_c, c);
        tanh.see(x, math::tanh(x), std::tanh(lx));
        sigmoid.see(x, math::sigmoid(x), 1.0L / (1.0L + 1.0L / e));  // e = inf gives 1, e = 0 gives 0
    }
    void report(const char* type) const {
        std::ostringstream text;
        text.precision(std::numeric_limits<T>::max_digits10);
        text << "max ulp (" << type << "):";
        const auto one = [&](const char* name, const worst<T>& w) {
            text << "\n  " << name << " " << static_cast<double>(w.ulps) << " at " << w.at;
        };
        one("exp", exp);
        one("log", log);
        one("sin", sin);
        one("cos", cos);
        one("tanh", tanh);
        one("sigmoid", sigmoid);
        MESSAGE(text.str());
        for (const auto* w : {&exp, &log, &sin, &cos, &tanh, &sigmoid}) {
            CAPTURE(w->at);
            CHECK(w->ulps <= 2);
        }
    }
};

/// Arguments where the functions turn: 0, the overflow and underflow edges, near
/// multiples of π/2 (the hardest reductions), around 1, the tanh and sigmoid saturation.
template <class T>
std::vector<T> edge_cases() {
    using lim = std::numeric_limits<T>;
    std::vector<T> xs = {0, -T(0), lim::denorm_min(), lim::min(), lim::max(), lim::epsilon(),
                         T(1), T(0.5), T(2), T(10), T(100), T(700), T(709.78), T(745.13), T(88.72), T(103.97),
                         T(87.33), T(19.06), T(9.01), T(0.55), T(1e-8), T(1e-30), T(1e30)};
    // the float closest to a multiple of π/2 (worst case of float reduction) and the double one
    if constexpr (sizeof(T) == 4) xs.push_back(std::ldexp(T(16367173), 72));
    else xs.push_back(std::ldexp(T(6381956970095103), 797));
    for (int k = 1; k < 4000; k += (k < 100 ? 1 : 37)) {
        const T m = static_cast<T>(static_cast<long double>(k) * 1.5707963267948966192313216916397514L);
        xs.push_back(m);
        xs.push_back(std::nextafter(m, T(0)));
        xs.push_back(std::nextafter(m, lim::infinity()));
    }
    for (const T edge : {T(1), std::log(lim::max()), std::log(lim::min()), std::log(lim::denorm_min()),
                         T(0.78539816339744830962L), T(19.06), T(9.01), T(0.5), T(2)}) {
        T x = edge;
        for (int i = 0; i < 20; ++i) x = std::nextafter(x, T(0));
        for (int i = 0; i < 40; ++i, x = std::nextafter(x, lim::infinity())) xs.push_back(x);
    }
    const std::size_t n = xs.size();
    for (std::size_t i = 0; i < n; ++i) xs.push_back(-xs[i]);
    return xs;
}

}  // namespace

TEST_CASE("math: special values") {
    using dbl = std::numeric_limits<double>;
    using flt = std::numeric_limits<float>;
    const double inf = dbl::infinity(), nan = dbl::quiet_NaN();
    const float finf = flt::infinity(), fnan = flt::quiet_NaN();
    CHECK(math::exp(-inf) == 0);
    CHECK(math::exp(inf) == inf);
    CHECK(math::exp(1000.) == inf);
    CHECK(math::exp(-1000.) == 0);
    CHECK(math::exp(709.79) == inf);
    CHECK(math::exp(-745.1) == dbl::denorm_min());
    CHECK(math::exp(-746.) == 0);
    CHECK(math::exp(0.) == 1);
    CHECK(math::exp(-0.) == 1);
    CHECK(math::exp(88.73f) == finf);
    CHECK(math::exp(-103.9f) == flt::denorm_min());
    CHECK(math::exp(-104.f) == 0);
    CHECK(math::log(0.) == -inf);
    CHECK(math::log(-0.) == -inf);
    CHECK(math::log(0.f) == -finf);
    CHECK(math::log(inf) == inf);
    CHECK(math::log(finf) == finf);
    CHECK(math::log(1.) == 0);
    CHECK(!std::signbit(math::log(1.f)));
    CHECK(std::isnan(math::log(-1.)));
    CHECK(std::isnan(math::log(-dbl::denorm_min())));
    CHECK(std::isnan(math::log(-finf)));
    CHECK(math::log(dbl::denorm_min()) == doctest::Approx(-744.44007192138126));
    for (const double x : {inf, -inf, nan}) {
        CHECK(std::isnan(math::sin(x)));
        CHECK(std::isnan(math::cos(x)));
    }
    CHECK(std::isnan(math::sin(-finf)));
    CHECK(std::signbit(math::sin(-0.)));
    CHECK(std::signbit(math::sin(-0.f)));
    CHECK(math::sin(dbl::denorm_min()) == dbl::denorm_min());
    CHECK(math::cos(-0.) == 1);
    CHECK(math::tanh(inf) == 1);
    CHECK(math::tanh(-inf) == -1);
    CHECK(math::tanh(-finf) == -1.f);
    CHECK(std::signbit(math::tanh(-0.)));
    CHECK(math::tanh(dbl::denorm_min()) == dbl::denorm_min());
    CHECK(math::sigmoid(inf) == 1);
    CHECK(math::sigmoid(-inf) == 0);
    CHECK(math::sigmoid(0.) == 0.5);
    CHECK(math::sigmoid(-0.f) == 0.5f);
    CHECK(math::sigmoid(-800.) == 0);
    CHECK(math::sigmoid(-740.) > 0);  // e^-740, a subnormal
    // NaN in, the one quiet NaN out: the same bits on every device
    const std::uint64_t nan_bits = 0x7ff8000000000000ull;
    const std::uint32_t fnan_bits = 0x7fc00000u;
    const double negative_nan = -nan;
    for (const double x : {nan, negative_nan, -1.0}) {
        CHECK(std::isnan(math::log(x)));
        CHECK(math::bits_of(math::log(x)) == nan_bits);
    }
    for (const double r : {math::exp(nan), math::sin(negative_nan), math::cos(inf), math::tanh(nan),
                           math::sigmoid(negative_nan)})
        CHECK(math::bits_of(r) == nan_bits);
    for (const float r : {math::exp(fnan), math::log(-2.f), math::sin(finf), math::cos(fnan), math::tanh(fnan),
                          math::sigmoid(fnan)})
        CHECK(math::bits_of(r) == fnan_bits);
}

TEST_CASE("math: float, every stride-th bit pattern and the edge cases, within 2 ulp") {
    checker<float> c;
    const std::uint32_t stride = float_stride();
    for (std::uint64_t b = 0; b < (std::uint64_t{1} << 32); b += stride) c.check(from_bits<float>(b));
    for (const float x : edge_cases<float>()) c.check(x);
    // every float in [-2π, 2π] near the turning points is checked more densely
    for (float x = -6.3f; x < 6.3f; x = std::nextafter(x, 7.f) + 1e-4f) c.check(x);
    c.report("float");
}

TEST_CASE("math: double, random values across every exponent range and the edge cases, within 2 ulp") {
    checker<double> c;
    std::mt19937_64 rng(20240611);
    const auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
    const auto any_bits = [&] { return from_bits<double>(rng()); };  // every exponent, NaN and inf included
    for (int i = 0; i < doubles_per_function; ++i) {
        c.check(any_bits());
        c.check(uniform(-750, 750));
        c.check(uniform(-25, 25));
        c.check(uniform(-4, 4));
        c.check(1 + uniform(-1e-3, 1e-3));
    }
    for (const double x : edge_cases<double>()) c.check(x);
    c.report("double");
}
