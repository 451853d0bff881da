// detail/math.hpp against MPFR, the correctly rounded reference: exp, log, sin, cos,
// tanh, sigmoid and pow (detail/math_pow.hpp) for float and double,
// each within 2 ulp over millions of arguments and the edge cases. MPFR computes each
// reference correctly rounded to 64 (float) or 128 (double) bits, so the error in ulps
// of the result type is measured to ~2^-40 ulp, far below the bound. The sweep runs on
// every core. Its own executable, in the main build only (tests/CMakeLists.txt): the
// sanitizer builds run the fast check against long double, test_math.cpp.
#include "math_ulp.hpp"

#include <devtensor/detail/math.hpp>
#include <devtensor/detail/math_pow.hpp>

#include <mpfr.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <mutex>
#include <ostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace math = devtensor::detail::math;

namespace {

constexpr std::uint32_t float_stride = 1021;  // 4.2M of the 2^32 patterns (test_math.cpp takes every 997th)
constexpr int doubles_of_any_bits = 3'000'000;  // per function, plus 1M where the functions turn
constexpr std::size_t pow_pairs = 3'000'000;    // per type

/// Bits of the references: correctly rounded there, far more than the type's 24 or 53.
template <class T>
constexpr mpfr_prec_t working_precision = sizeof(T) == 4 ? 64 : 128;

/// An mpfr_t of a fixed precision, owned by one worker thread.
class big {
public:
    explicit big(mpfr_prec_t precision) { mpfr_init2(value_, precision); }
    ~big() { mpfr_clear(value_); }
    big(const big&) = delete;
    big& operator=(const big&) = delete;
    operator mpfr_ptr() { return value_; }

private:
    mpfr_t value_;
};

void set(mpfr_ptr to, float x) { mpfr_set_flt(to, x, MPFR_RNDN); }  // exact: the precision holds x
void set(mpfr_ptr to, double x) { mpfr_set_d(to, x, MPFR_RNDN); }
template <class T>
T rounded(mpfr_srcptr x) {
    if constexpr (sizeof(T) == 4) return mpfr_get_flt(x, MPFR_RNDN);
    else return mpfr_get_d(x, MPFR_RNDN);
}

/// |ours - reference| in ulps of T at the (high-precision) reference, ulp computed from
/// the reference's own exponent, so a subnormal result is measured in subnormal spacing.
template <class T>
class ulp_meter {
public:
    long double error(T ours, mpfr_srcptr reference) {
        if (const auto special = math_test::special_error(ours, rounded<T>(reference))) return *special;
        const int e = mpfr_zero_p(reference) ? std::numeric_limits<int>::min() : static_cast<int>(mpfr_get_exp(reference));
        set(difference_, ours);
        mpfr_sub(difference_, difference_, reference, MPFR_RNDN);
        mpfr_mul_2si(difference_, difference_, -math_test::ulp_exponent<T>(e), MPFR_RNDN);
        return std::fabs(mpfr_get_ld(difference_, MPFR_RNDN));
    }

private:
    big difference_{working_precision<T>};
};

/// Runs a Checker over all inputs on every core: each worker has its own Checker (its own
/// MPFR numbers), takes chunks in turn, and merges its records into the result at the end.
template <class Checker, class Input>
auto sweep(const std::vector<Input>& inputs) {
    using records = decltype(Checker::records);
    records total;
    std::mutex total_mutex;
    std::atomic<std::size_t> next{0};
    constexpr std::size_t chunk = 4096;  // the cost per argument varies (sin of 1e300): share out small pieces
    const auto work = [&] {
        {
            Checker checker;
            for (std::size_t begin; (begin = next.fetch_add(chunk)) < inputs.size();)
                for (std::size_t i = begin; i < std::min(begin + chunk, inputs.size()); ++i) checker.check(inputs[i]);
            const std::lock_guard lock(total_mutex);
            total.merge(checker.records);
        }
        mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);  // this thread's π and friends
    };
    std::vector<std::thread> workers(std::max(1u, std::thread::hardware_concurrency()));
    for (auto& worker : workers) worker = std::thread(work);
    for (auto& worker : workers) worker.join();
    return total;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// ---- exp, log, sin, cos, tanh, sigmoid ----------------------------------------------------

template <class T>
struct unary_records {
    math_test::worst<T> exp, log, sin, cos, tanh, sigmoid;
    void merge(const unary_records& o) {
        exp.merge(o.exp);
        log.merge(o.log);
        sin.merge(o.sin);
        cos.merge(o.cos);
        tanh.merge(o.tanh);
        sigmoid.merge(o.sigmoid);
    }
    void report(const std::string& title) const {
        math_test::report<T>(title, {{"exp", &exp}, {"log", &log}, {"sin", &sin}, {"cos", &cos}, {"tanh", &tanh},
                                     {"sigmoid", &sigmoid}});
    }
};

template <class T>
struct unary_checker {
    static constexpr mpfr_prec_t precision = working_precision<T>;
    unary_records<T> records;
    big x{precision}, exp_x{precision}, result{precision}, sin_x{precision}, cos_x{precision};
    ulp_meter<T> meter;

    void check(T arg) {
        set(x, arg);
        mpfr_exp(exp_x, x, MPFR_RNDN);
        records.exp.see(arg, meter.error(math::exp(arg), exp_x));
        mpfr_log(result, x, MPFR_RNDN);
        records.log.see(arg, meter.error(math::log(arg), result));
        mpfr_sin_cos(sin_x, cos_x, x, MPFR_RNDN);  // one reduction for both
        records.sin.see(arg, meter.error(math::sin(arg), sin_x));
        records.cos.see(arg, meter.error(math::cos(arg), cos_x));
        mpfr_tanh(result, x, MPFR_RNDN);
        records.tanh.see(arg, meter.error(math::tanh(arg), result));
        // 1 / (1 + 1/e^x): three more roundings at the working precision, a few of its ulps in
        // all, still far below the ulp of T; e^x = inf gives 1, e^x = 0 gives 0
        mpfr_ui_div(result, 1, exp_x, MPFR_RNDN);
        mpfr_add_ui(result, result, 1, MPFR_RNDN);
        mpfr_ui_div(result, 1, result, MPFR_RNDN);
        records.sigmoid.see(arg, meter.error(math::sigmoid(arg), result));
    }
};

template <class T>
void check_unary(const std::vector<T>& inputs, const char* type) {
    const auto start = std::chrono::steady_clock::now();
    const unary_records<T> records = sweep<unary_checker<T>>(inputs);
    records.report(std::string(type) + ", " + std::to_string(inputs.size()) + " arguments, " +
                   std::to_string(seconds_since(start)) + " s");
}

// ---- pow ----------------------------------------------------------------------------------

template <class T>
struct pow_args {
    T x, y;
};
template <class T>
std::ostream& operator<<(std::ostream& out, const pow_args<T>& a) {
    return out << "x = " << a.x << ", y = " << a.y;
}

/// Pairs for pow(x, y) (C99 Annex F for the special ones):
/// - x over every exponent range with y = t / ln x, |t| up to past the overflow and the
///   underflow to 0, and the same with x near 1 (y large);
/// - negative x with integer y (odd and even: the sign) and with non-integer y (NaN);
/// - integer y small and large, with x of either sign that keeps the result in range;
/// - both random bits (NaN and inf included); the grid of special values, each with each.
template <class T>
std::vector<pow_args<T>> pow_inputs() {
    using lim = std::numeric_limits<T>;
    constexpr T span = sizeof(T) == 4 ? 112 : 800;  // ln max: 88.7, 709.8; ln of half the least: -103.9, -745.1
    constexpr T two_to_digits = T(std::uint64_t{1} << lim::digits);  // from here every T is an even integer
    std::mt19937_64 rng(20240612);
    const auto uniform = [&](T lo, T hi) { return std::uniform_real_distribution<T>(lo, hi)(rng); };
    const auto any_bits = [&] { return math_test::from_bits<T>(rng()); };
    const auto positive_finite = [&] {  // every exponent range, 1 excluded (ln 1 = 0)
        for (;;)
            if (const T x = std::fabs(any_bits()); std::isfinite(x) && x != 1) return x;
    };
    const auto near_one = [&] {  // 1 ± (random) 2^-k, k = 1 ... digits
        for (;;) {
            const auto k = static_cast<int>(rng() % lim::digits) + 1;
            if (const T x = 1 + std::ldexp(uniform(-1, 1), -k); x != 1) return x;
        }
    };
    const auto random_sign = [&](T x) { return rng() & 1 ? -x : x; };
    const auto integer_below = [&](T bound) {  // a random integer in (-bound, bound), odd or even
        return std::trunc(uniform(-bound, bound));
    };

    std::vector<pow_args<T>> pairs;
    pairs.reserve(pow_pairs);
    while (pairs.size() < pow_pairs) {
        const T t = uniform(-span, span);
        switch (rng() % 8) {
            case 0:
            case 1: {
                const T x = positive_finite();
                pairs.push_back({x, t / std::log(x)});
                break;
            }
            case 2: {
                const T x = near_one();
                pairs.push_back({x, t / std::log(x)});
                break;
            }
            case 3: {  // negative x, integer y: the sign follows y's parity
                const T x = positive_finite();
                const T y = std::round(t / std::log(x));
                pairs.push_back({-x, std::fabs(y) < two_to_digits ? y + T(rng() & 1) : y});
                break;
            }
            case 4: {  // negative x, non-integer y: NaN
                const T y = uniform(-span, span);
                pairs.push_back({-positive_finite(), y == std::trunc(y) ? y + T(0.5) : y});
                break;
            }
            case 5: {  // small integer y
                const T y = integer_below(65);
                pairs.push_back({random_sign(std::exp(t / std::max(std::fabs(y), T(1)))), y});
                break;
            }
            case 6: {  // large integer y (up to 2^(digits + 8): odd below 2^digits, even above)
                const T y = integer_below(std::ldexp(T(1), static_cast<int>(rng() % (lim::digits + 8)) + 1));
                pairs.push_back({random_sign(std::exp(t / std::max(std::fabs(y), T(1)))), y});
                break;
            }
            default:
                pairs.push_back({any_bits(), any_bits()});
        }
    }
    std::vector<T> specials = {0,          lim::denorm_min(), lim::min(),        T(0.5), 1 - lim::epsilon() / 2,
                               1,          1 + lim::epsilon(), T(1.5),           2,      3,
                               lim::max(), lim::infinity(),   two_to_digits - 1, two_to_digits};
    const std::size_t n = specials.size();
    for (std::size_t i = 0; i < n; ++i) specials.push_back(-specials[i]);
    specials.push_back(lim::quiet_NaN());
    for (const T x : specials)
        for (const T y : specials) pairs.push_back({x, y});
    return pairs;
}

template <class T>
struct pow_records {
    math_test::worst<pow_args<T>> pow;
    void merge(const pow_records& o) { pow.merge(o.pow); }
};

template <class T>
struct pow_checker {
    static constexpr mpfr_prec_t precision = working_precision<T>;
    pow_records<T> records;
    big x{precision}, y{precision}, result{precision};
    ulp_meter<T> meter;

    void check(const pow_args<T>& args) {
        set(x, args.x);
        set(y, args.y);
        mpfr_pow(result, x, y, MPFR_RNDN);  // MPFR follows C99 Annex F for the special pairs
        records.pow.see(args, meter.error(math::pow(args.x, args.y), result));
    }
};

template <class T>
void check_pow(const char* type) {
    const auto start = std::chrono::steady_clock::now();
    const std::vector<pow_args<T>> inputs = pow_inputs<T>();
    const pow_records<T> records = sweep<pow_checker<T>>(inputs);
    math_test::report<pow_args<T>>(std::string(type) + ", " + std::to_string(inputs.size()) + " pairs, " +
                                       std::to_string(seconds_since(start)) + " s",
                                   {{"pow", &records.pow}});
}

}  // namespace

TEST_CASE("math vs MPFR: float, every 1021st bit pattern and the edge cases, within 2 ulp") {
    std::vector<float> inputs;
    for (std::uint64_t b = 0; b < (std::uint64_t{1} << 32); b += float_stride) inputs.push_back(math_test::from_bits<float>(b));
    const std::vector<float> edges = math_test::edge_cases<float>();
    inputs.insert(inputs.end(), edges.begin(), edges.end());
    check_unary(inputs, "float");
}

TEST_CASE("math vs MPFR: double, random bits of every exponent range and the edge cases, within 2 ulp") {
    std::mt19937_64 rng(20240611);
    std::vector<double> inputs;
    for (int i = 0; i < doubles_of_any_bits; ++i) inputs.push_back(math_test::from_bits<double>(rng()));
    // where the functions turn: the range of exp, the reductions of sin and cos, around 1 for log
    for (const double range : {750., 25., 4.})
        for (int i = 0; i < 250'000; ++i) inputs.push_back(std::uniform_real_distribution<double>(-range, range)(rng));
    for (int i = 0; i < 250'000; ++i) inputs.push_back(1 + std::uniform_real_distribution<double>(-1e-3, 1e-3)(rng));
    const std::vector<double> edges = math_test::edge_cases<double>();
    inputs.insert(inputs.end(), edges.begin(), edges.end());
    check_unary(inputs, "double");
}

TEST_CASE("math vs MPFR: pow, float, within 2 ulp") { check_pow<float>("float"); }
TEST_CASE("math vs MPFR: pow, double, within 2 ulp") { check_pow<double>("double"); }
