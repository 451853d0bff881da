// detail/math.hpp: devtensor's own exp, log, sin, cos, tanh and sigmoid against
// glibc's long double functions (64-bit significands), in ulps of the result
// type: the fast check, which also runs under the sanitizers. The correctly
// rounded reference is MPFR, in test_math_mpfr.cpp (main build only, many
// millions of arguments). float: every `stride`-th bit pattern of all 2^32 plus
// the edge cases; double: a million random values per function across every
// exponent range, plus the edge cases. The long double reference is good to
// ~2^-11 ulp of a double, far below the 2-ulp bound (DESIGN §15). Set
// DEVTENSOR_MATH_STRIDE=1 to check all 2^32 floats (a few minutes).
#include "math_ulp.hpp"
#include "test_support.hpp"

#include <devtensor/detail/math.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>

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

/// |ours - reference| in ulps of T at the reference.
template <class T>
long double ulp_error(T ours, long double reference) {
    if (const auto special = math_test::special_error(ours, static_cast<T>(reference))) return *special;
    int e = std::numeric_limits<int>::min();
    if (reference != 0) (void)std::frexp(reference, &e);
    return std::fabs(ours - reference) / std::ldexp(1.0L, math_test::ulp_exponent<T>(e));
}

/// The largest error of one function against the long double reference.
template <class T>
struct worst : math_test::worst<T> {
    void see(T x, T ours, long double reference) { math_test::worst<T>::see(x, ulp_error(ours, reference)); }
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
        math_test::report<T>(type, {{"exp", &exp}, {"log", &log}, {"sin", &sin}, {"cos", &cos}, {"tanh", &tanh},
                                    {"sigmoid", &sigmoid}});
    }
};

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
    for (std::uint64_t b = 0; b < (std::uint64_t{1} << 32); b += stride) c.check(math_test::from_bits<float>(b));
    for (const float x : math_test::edge_cases<float>()) c.check(x);
    // every float in [-2π, 2π] near the turning points is checked more densely
    for (float x = -6.3f; x < 6.3f; x = std::nextafter(x, 7.f) + 1e-4f) c.check(x);
    c.report("float");
}

TEST_CASE("math: double, random values across every exponent range and the edge cases, within 2 ulp") {
    checker<double> c;
    std::mt19937_64 rng(20240611);
    const auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
    const auto any_bits = [&] { return math_test::from_bits<double>(rng()); };  // every exponent, NaN and inf included
    for (int i = 0; i < doubles_per_function; ++i) {
        c.check(any_bits());
        c.check(uniform(-750, 750));
        c.check(uniform(-25, 25));
        c.check(uniform(-4, 4));
        c.check(1 + uniform(-1e-3, 1e-3));
    }
    for (const double x : math_test::edge_cases<double>()) c.check(x);
    c.report("double");
}
