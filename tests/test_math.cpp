// detail/math.hpp: devtensor's own exp, log, sin, cos, tanh and sigmoid against
// glibc's long double functions (64-bit significands), in ulps of the result
// type: the fast check, which also runs under the sanitizers. The correctly
// rounded reference is MPFR, in test_math_mpfr.cpp (main build only, many
// millions of arguments). float: every `stride`-th bit pattern of all 2^32 plus
// the edge cases; double: a million random values per function across every
// exponent range, plus the edge cases. The long double reference is good to
// ~2^-11 ulp of a double, far below the 2-ulp bound (DESIGN §15). Set
// DEVTENSOR_MATH_STRIDE=1 to check all 2^32 floats (a few minutes).
// Then exp, log, tanh and sigmoid on AVX2 and AVX-512 registers (their lane forms,
// backend/cpu/math_lanes.hpp) against the scalar functions, bit for bit: every 61st
// float bit pattern, ~2M doubles, the edges, and through the ops at 1, 2 and 7 threads.
#include "math_ulp.hpp"
#include "test_support.hpp"

#include <devtensor/backend/cpu/math_lanes.hpp>
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

// ---- the lane forms: exp, log, tanh, sigmoid on x86 vector registers ----------------------
// backend/cpu/math_lanes.hpp instantiates the text of these functions for AVX2 and
// AVX-512 registers; each lane must give the scalar function's bits, for every input.

namespace {
namespace cpu = dt::backend_cpu;

/// Every value where the functions turn, for the lane forms: zeros, subnormals,
/// the extremes, infinities, NaNs with payloads, the overflow and underflow
/// thresholds, tanh's rounding to 1, log around 1, each ±1 ulp and both signs.
template <class T>
std::vector<T> lane_edge_cases() {
    using lim = std::numeric_limits<T>;
    using bits = typename math::format<T>::bits;
    std::vector<T> xs = math_test::edge_cases<T>();
    const T one_ulp_around[] = {lim::denorm_min(), lim::min(), lim::max(), T(1), T(2), T(0.5),
                                std::log(lim::max()),          // exp overflows past it
                                std::log(lim::min()),          // exp turns subnormal
                                std::log(lim::denorm_min()),   // exp underflows to 0 around here
                                math::constants<T>::exp_clamp, math::constants<T>::tanh_one,
                                std::atanh(T(1) - lim::epsilon() / 4),  // tanh rounds to 1 from about here
                                std::nextafter(lim::min(), T(0)),        // the largest subnormal
                                T(0.70710678118654752440L), T(1.41421356237309504880L)};  // log's reduction edges
    for (const T edge : one_ulp_around) {
        T x = edge;
        for (int i = 0; i < 3; ++i) x = std::nextafter(x, T(0));
        for (int i = 0; i < 7; ++i, x = std::nextafter(x, lim::infinity())) xs.push_back(x);
    }
    for (const T special : {lim::infinity(), lim::quiet_NaN(), lim::signaling_NaN(), T(0)}) xs.push_back(special);
    // NaNs with payloads, quiet and signalling
    const bits exponent = math::exponent_mask<T>();
    const bits all_payload = (bits{1} << (math::format<T>::precision - 1)) - 1;
    const bits quiet_bit = bits{1} << (math::format<T>::precision - 2);
    for (const bits payload : {bits{1}, bits{2}, bits{0x12345}, all_payload, quiet_bit, quiet_bit | 1})
        xs.push_back(math::from_bits<T>(exponent | payload));
    const std::size_t n = xs.size();
    for (std::size_t i = 0; i < n; ++i) xs.push_back(-xs[i]);
    return xs;
}

/// The ISA paths with lane forms this CPU runs; the others are named in a MESSAGE.
std::vector<cpu::simd::isa> lane_isas() {
    std::vector<cpu::simd::isa> isas;
#if DEVTENSOR_HAS_X86_KERNELS
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) isas.push_back(cpu::simd::isa::avx2);
    else MESSAGE("this CPU has no AVX2+FMA: that lane path is not checked here");
    if (__builtin_cpu_supports("avx512f")) isas.push_back(cpu::simd::isa::avx512);
    else MESSAGE("this CPU has no AVX-512F: that lane path is not checked here");
#else
    MESSAGE("no x86 vector kernels in this build: no lane path to check");
#endif
    return isas;
}

template <class T>
bool same_bits(T a, T b) {
    return std::memcmp(&a, &b, sizeof(T)) == 0;
}

/// Each lane path of each function against the scalar function over xs, element by
/// element; the row starts one element off the register alignment every other call
/// (a scalar head), and streams every third call. Returns the number of differences.
template <class T>
long lane_differences(const std::vector<T>& xs, const std::vector<cpu::simd::isa>& isas, int call) {
    [[maybe_unused]] long differences = 0;
#if DEVTENSOR_HAS_X86_KERNELS
    const auto n = static_cast<std::int64_t>(xs.size());
    std::vector<T> expected(xs.size()), got(xs.size() + 16);
    const auto check = [&](const auto& functor, const std::string& name) {
        for (std::size_t i = 0; i < xs.size(); ++i) expected[i] = functor(xs[i]);
        for (const cpu::simd::isa isa : isas) {
            T* out = got.data() + (call % 2);
            cpu::map_row_on(isa, functor, n, call % 3 == 0, out, xs.data());
            if (call % 3 == 0) cpu::simd::stream_fence();
            for (std::size_t i = 0; i < xs.size(); ++i)
                if (!same_bits(out[i], expected[i]) && differences++ < 10)
                    FAIL_CHECK(name, std::string(isa == cpu::simd::isa::avx512 ? " avx512" : " avx2"), " differs at ",
                               static_cast<double>(xs[i]), ": ", static_cast<double>(out[i]), " vs ",
                               static_cast<double>(expected[i]));
        }
    };
    check(dt::detail::exp_of{}, "exp");
    check(dt::detail::log_of{}, "log");
    check(dt::detail::tanh_of{}, "tanh");
    check(dt::detail::sigmoid_of{}, "sigmoid");
#else
    (void)xs, (void)isas, (void)call;
#endif
    return differences;
}

/// ~2M doubles: every exponent range (random bits, NaN and inf included), each
/// binade's edges, and the ranges where the functions turn.
std::vector<double> double_sweep() {
    std::vector<double> xs;
    std::mt19937_64 rng(20240612);
    const auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
    for (int i = 0; i < 330000; ++i) {
        xs.push_back(math_test::from_bits<double>(rng()));
        xs.push_back(uniform(-750, 750));
        xs.push_back(uniform(-25, 25));
        xs.push_back(uniform(-1, 1));
        xs.push_back(1 + uniform(-1e-3, 1e-3));
        xs.push_back(std::ldexp(uniform(1, 2), static_cast<int>(rng() % 2100) - 1075));
    }
    for (int e = -1075; e <= 1024; ++e)
        for (const double m : {1.0, 1.5, 2 - 0x1p-52})
            for (const double s : {1.0, -1.0}) {
                const double x = s * std::ldexp(m, e);
                xs.insert(xs.end(), {x, std::nextafter(x, 0.0), std::nextafter(x, s * INFINITY)});
            }
    return xs;
}

}  // namespace

// The name holds "elementwise math gives the same bits": the sanitizer builds skip it (scripts/test.sh).
TEST_CASE("elementwise math gives the same bits on every lane path: float, every 61st bit pattern and the edges") {
    const auto isas = lane_isas();
    if (isas.empty()) return;
    constexpr std::uint64_t stride = 61, chunk = std::uint64_t{1} << 20;
    std::vector<float> xs;
    long differences = 0;
    int call = 0;
    for (std::uint64_t b = 0; b < (std::uint64_t{1} << 32); b += stride) {
        xs.push_back(math_test::from_bits<float>(b));
        if (xs.size() == chunk) {
            differences += lane_differences(xs, isas, call++);
            xs.clear();
        }
    }
    differences += lane_differences(xs, isas, call++);
    differences += lane_differences(lane_edge_cases<float>(), isas, call++);
    differences += lane_differences(lane_edge_cases<float>(), isas, call++);  // the other alignment
    MESSAGE("float lane paths checked: ", isas.size(), " ISA(s), ", (std::uint64_t{1} << 32) / stride + 1,
            " bit patterns and the edges, 4 functions");
    CHECK(differences == 0);
}

TEST_CASE("elementwise math gives the same bits on every lane path: double, ~2M values and the edges") {
    const auto isas = lane_isas();
    if (isas.empty()) return;
    const std::vector<double> xs = double_sweep();
    long differences = lane_differences(xs, isas, 0);
    differences += lane_differences(xs, isas, 1);
    differences += lane_differences(lane_edge_cases<double>(), isas, 2);
    differences += lane_differences(lane_edge_cases<double>(), isas, 3);
    MESSAGE("double lane paths checked: ", isas.size(), " ISA(s), ", xs.size(), " values and the edges, 4 functions");
    CHECK(differences == 0);
}

TEST_CASE_TEMPLATE("elementwise math gives the same bits through the ops: exp, log, tanh, sigmoid, 1, 2, 7 threads", T,
                   float, double) {
    // the edges, then a sweep long enough for 7 threads to split (contiguous: the lane paths)
    std::vector<T> xs = lane_edge_cases<T>();
    std::mt19937_64 rng(99);
    while (xs.size() < 1000003) {
        xs.push_back(math_test::from_bits<T>(rng()));
        xs.push_back(static_cast<T>(std::uniform_real_distribution<double>(-30, 30)(rng)));
    }
    const auto n = static_cast<std::int64_t>(xs.size());
    const auto x = dt::from_values<T>(xs, {n});
    const int before = dt::get_num_threads();
    const auto check = [&](const auto& op, [[maybe_unused]] const auto& op_functor, const auto& scalar,
                           const std::string& name) {
        CAPTURE(name);
        std::vector<T> expected(xs.size());
        for (std::size_t i = 0; i < xs.size(); ++i) expected[i] = scalar(xs[i]);
        for (const int threads : {1, 2, 7}) {
            CAPTURE(threads);
            dt::set_num_threads(threads);
            const std::vector<T> got = op(x).to_vector();
            REQUIRE(got.size() == expected.size());
            CHECK(std::memcmp(got.data(), expected.data(), sizeof(T) * xs.size()) == 0);
            auto out = dt::empty<T>({n});
            op(x, out);
            CHECK(std::memcmp(out.to_vector().data(), expected.data(), sizeof(T) * xs.size()) == 0);
        }
#if DEVTENSOR_HAS_X86_KERNELS
        // the engine with each ISA forced (threads, rows and streaming as the ops run them)
        auto forced = dt::empty<T>({n});
        const auto plan =
            dt::detail::make_loop_plan<2>(x.shape(), {&x.shape(), &x.shape()}, {&forced.strides(), &x.strides()});
        std::vector<cpu::simd::isa> isas = lane_isas();
        isas.push_back(cpu::simd::isa::portable);
        for (const cpu::simd::isa isa : isas) {
            CAPTURE(static_cast<int>(isa));
            cpu::map_on(isa, op_functor, plan, forced.data(), x.data());
            CHECK(std::memcmp(forced.to_vector().data(), expected.data(), sizeof(T) * xs.size()) == 0);
        }
#endif
        // a transposed operand (not a contiguous row: the scalar path)
        const auto m = dt::from_values<T>(std::vector<T>(xs.begin(), xs.begin() + 2 * (n / 2)), {2, n / 2});
        const std::vector<T> through_transpose = op(m.t()).t().contiguous().to_vector();
        CHECK(std::memcmp(through_transpose.data(), expected.data(), sizeof(T) * through_transpose.size()) == 0);
    };
    check([](const auto& t, auto&&... out) { return dt::exp(t, out...); }, dt::detail::exp_of{},
          [](T v) { return math::exp(v); }, "exp");
    check([](const auto& t, auto&&... out) { return dt::log(t, out...); }, dt::detail::log_of{},
          [](T v) { return math::log(v); }, "log");
    check([](const auto& t, auto&&... out) { return dt::tanh(t, out...); }, dt::detail::tanh_of{},
          [](T v) { return math::tanh(v); }, "tanh");
    check([](const auto& t, auto&&... out) { return dt::sigmoid(t, out...); }, dt::detail::sigmoid_of{},
          [](T v) { return math::sigmoid(v); }, "sigmoid");
    dt::set_num_threads(before);
}
