// The everyday elementwise ops on the entry-point macros (ops/entry_points.hpp):
// sub, div, maximum, minimum, pow, neg, abs, clamp, exp, log, sqrt, sigmoid, tanh, the
// comparisons and where — values, scalars, in place, out-variants, NaN, integer
// wrap, errors, thread counts, and GPU results equal to the CPU's.
#include "test_support.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace {
constexpr float nan_f = std::numeric_limits<float>::quiet_NaN();
}  // namespace

TEST_CASE_TEMPLATE("sub, with scalars, in place, out-variant and the operators", T, float, double, std::int32_t,
                   std::int64_t, std::int8_t) {
    const auto a = dt::arange<T>(0, 6).view({2, 3});
    const auto b = dt::arange<T>(1, 4);
    CHECK(dt::sub(a, b).to_vector() == std::vector<T>{-1, -1, -1, 2, 2, 2});
    CHECK((a - b).to_vector() == std::vector<T>{-1, -1, -1, 2, 2, 2});
    CHECK((a - 1).to_vector() == std::vector<T>{-1, 0, 1, 2, 3, 4});
    CHECK((10 - a).to_vector() == std::vector<T>{10, 9, 8, 7, 6, 5});
    CHECK(dt::sub(a, 2).to_vector() == std::vector<T>{-2, -1, 0, 1, 2, 3});
    auto c = a.clone();
    c -= b;
    CHECK(c.to_vector() == std::vector<T>{-1, -1, -1, 2, 2, 2});
    c -= 1;
    dt::sub_(c, a);
    CHECK(c.to_vector() == std::vector<T>{-2, -3, -4, -2, -3, -4});
    auto out = dt::empty<T>({2, 3});
    dt::sub(a, b, out);
    CHECK(out.to_vector() == std::vector<T>{-1, -1, -1, 2, 2, 2});
    CHECK((-a).to_vector() == std::vector<T>{0, -1, -2, -3, -4, -5});
    CHECK(dt::neg(a).origin().op == std::string("neg"));
    CHECK_ERROR(dt::shape_error, (void)dt::sub(a, dt::ones<T>({2})), "devtensor::sub", "[2, 3]", "[2]");
}

TEST_CASE("integers wrap in sub, neg and abs, as PyTorch's do") {
    const auto i8 = dt::from_values<std::int8_t>({-128, 127, -5}, {3});
    CHECK(dt::neg(i8).to_vector() == std::vector<std::int8_t>{-128, -127, 5});
    CHECK(dt::abs(i8).to_vector() == std::vector<std::int8_t>{-128, 127, 5});
    CHECK((i8 - 1).to_vector() == std::vector<std::int8_t>{127, 126, -6});
    const auto i32 = dt::from_values<std::int32_t>({std::numeric_limits<std::int32_t>::min()}, {1});
    CHECK((i32 - 1).item() == std::numeric_limits<std::int32_t>::max());
    const auto u = dt::from_values<std::uint8_t>({0, 200}, {2});
    CHECK((u - 1).to_vector() == std::vector<std::uint8_t>{255, 199});
    CHECK(dt::abs(u).to_vector() == std::vector<std::uint8_t>{0, 200});
}

TEST_CASE_TEMPLATE("div, maximum, minimum, abs and clamp follow IEEE and keep NaN", T, float, double) {
    constexpr T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
    const auto a = dt::from_values<T>({1, -2, 0, nan, inf, -0.0}, {6});
    const auto b = dt::from_values<T>({4, 4, 0, 1, 2, 3}, {6});
    const auto q = dt::div(a, b).to_vector();
    CHECK(q[0] == T(0.25));
    CHECK(q[1] == T(-0.5));
    CHECK(std::isnan(q[2]));
    CHECK(std::isnan(q[3]));
    CHECK(q[4] == inf);
    CHECK((a / 2).to_vector()[1] == T(-1));
    CHECK((1 / b).to_vector()[0] == T(0.25));
    auto d = b.clone();
    d /= b;
    CHECK(std::isnan(d.to_vector()[2]));  // 0/0
    CHECK(d.to_vector()[0] == 1);
    CHECK(dt::div_(d, 2).to_vector()[0] == T(0.5));
    const auto mx = dt::maximum(a, b).to_vector(), mn = dt::minimum(a, b).to_vector();
    CHECK(mx[0] == 4);
    CHECK(mx[1] == 4);
    CHECK(std::isnan(mx[3]));
    CHECK(std::isnan(mn[3]));
    CHECK(mn[4] == 2);
    CHECK(std::isnan(dt::maximum(b, a).to_vector()[3]));  // NaN on either side
    CHECK(dt::maximum(a, T(0.5)).to_vector()[1] == T(0.5));
    const auto ab = dt::abs(a).to_vector();
    CHECK(ab[1] == 2);
    CHECK(std::isnan(ab[3]));
    CHECK(!std::signbit(ab[5]));
    auto cl = dt::clamp(a, -1, 1).to_vector();
    CHECK(std::isnan(cl[3]));
    cl[3] = 7;
    CHECK(cl == std::vector<T>{1, -1, 0, 7, 1, -0.0});
    CHECK(dt::clamp(b, 5, 3).to_vector() == std::vector<T>{3, 3, 3, 3, 3, 3});  // lo > hi: hi, as torch
    auto e = b.clone();
    dt::clamp_(e, 1, 3);
    CHECK(e.to_vector() == std::vector<T>{3, 3, 1, 1, 2, 3});
}

TEST_CASE_TEMPLATE("exp, log, sqrt, sigmoid, tanh: within an ulp of the libm, NaN kept, in place", T, float, double) {
    const auto x = dt::linspace<T>(-20, 20, 1001);
    const auto xs = x.to_vector();
    const auto check = [&](const auto& got, auto ref, bool positive_only) {
        const auto g = got.to_vector();
        for (std::size_t i = 0; i < xs.size(); ++i) {
            if (positive_only && xs[i] <= 0) continue;
            const long double want = ref(static_cast<long double>(xs[i]));
            const long double ulp = std::nextafter(static_cast<T>(std::abs(want)), std::numeric_limits<T>::infinity()) -
                                    static_cast<T>(std::abs(want));
            CHECK(std::abs(static_cast<long double>(g[i]) - want) <= ulp);
        }
    };
    check(dt::exp(x), [](long double v) { return std::exp(v); }, false);
    check(dt::log(x), [](long double v) { return std::log(v); }, true);
    check(dt::sqrt(x), [](long double v) { return std::sqrt(v); }, true);
    check(dt::sigmoid(x), [](long double v) { return 1 / (1 + std::exp(-v)); }, false);
    check(dt::tanh(x), [](long double v) { return std::tanh(v); }, false);
    CHECK(std::isnan(dt::log(dt::full<T>({1}, -1)).item()));
    CHECK(std::isnan(dt::exp(dt::full<T>({1}, std::numeric_limits<T>::quiet_NaN())).item()));
    auto y = x.clone();
    dt::exp_(y);
    CHECK(same_bits(y.to_vector(), dt::exp(x).to_vector()));
    auto out = dt::empty<T>({1001});
    dt::tanh(x, out);
    CHECK(same_bits(out.to_vector(), dt::tanh(x).to_vector()));
}

TEST_CASE_TEMPLATE("pow: within 2 ulp, std::pow's special values, broadcasting, scalar forms, in place", T, float,
                   double) {
    dt::generator gen(21);
    const auto base = dt::rand<T>({200, 30}, dt::cpu_device{}, gen) * T(8);
    const auto exponent = dt::randn<T>({30}, dt::cpu_device{}, gen) * T(6);
    const auto got = dt::pow(base, exponent).to_vector();
    const auto bs = base.to_vector(), es = exponent.to_vector();
    for (std::size_t i = 0; i < got.size(); ++i) {
        const long double want = std::pow(static_cast<long double>(bs[i]), static_cast<long double>(es[i % 30]));
        const T w = static_cast<T>(want);
        const long double ulp = std::nextafter(std::abs(w), std::numeric_limits<T>::infinity()) - std::abs(w);
        CHECK(std::abs(static_cast<long double>(got[i]) - want) <= 2 * ulp);
    }
    // Every special pair of C99 Annex F, as std::pow gives it (bit for bit, NaN as NaN).
    const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
    const std::vector<T> specials = {0, -T(0), 1, -1, 2, -2, T(0.5), T(-0.5), 3, -3, T(2.5), T(-2.5), inf, -inf, nan,
                                     std::numeric_limits<T>::denorm_min(), std::numeric_limits<T>::max()};
    const auto n = static_cast<std::int64_t>(specials.size());
    const auto x = dt::from_values<T>(specials, {n, 1}), y = dt::from_values<T>(specials, {1, n});
    const auto table = dt::pow(x, y).to_vector();
    for (std::size_t i = 0; i < specials.size(); ++i)
        for (std::size_t j = 0; j < specials.size(); ++j) {
            const T want = std::pow(specials[i], specials[j]), g = table[i * specials.size() + j];
            CAPTURE(specials[i]);
            CAPTURE(specials[j]);
            if (std::isnan(want)) CHECK(std::isnan(g));
            else CHECK(same_bits(std::vector<T>{g}, std::vector<T>{want}));
        }
    CHECK(same_bits(dt::pow(base, T(2)).to_vector(), dt::pow(base, dt::full<T>({1}, 2)).to_vector()));
    CHECK(same_bits(dt::pow(T(2), exponent).to_vector(), dt::pow(dt::full<T>({30}, 2), exponent).to_vector()));
    CHECK(dt::pow(T(2), exponent).origin().op == std::string("pow"));
    auto b = base.clone();
    dt::pow_(b, exponent);
    CHECK(same_bits(b.to_vector(), got));
    auto out = dt::empty<T>({200, 30});
    dt::pow(base, exponent, out);
    CHECK(same_bits(out.to_vector(), got));
    CHECK_ERROR(dt::shape_error, (void)dt::pow(base, dt::ones<T>({7})), "devtensor::pow");
}

TEST_CASE_TEMPLATE("integer pow wraps like a repeated product; negative exponents truncate as torch's do", T,
                   std::int32_t, std::int64_t, std::uint8_t) {
    const auto a = dt::from_values<T>({2, 3, 1, 0, 7}, {5});
    CHECK(dt::pow(a, 3).to_vector() == std::vector<T>{8, 27, 1, 0, static_cast<T>(343)});
    CHECK(dt::pow(a, 0).to_vector() == std::vector<T>{1, 1, 1, 1, 1});
    CHECK(dt::pow(2, dt::from_values<T>({0, 1, 7}, {3})).to_vector() == std::vector<T>{1, 2, static_cast<T>(128)});
    // 3^41 wraps as the product does in the unsigned type
    using U = std::make_unsigned_t<T>;
    U wrapped = 1;
    for (int i = 0; i < 41; ++i) wrapped = static_cast<U>(wrapped * 3u);
    CHECK(dt::pow(dt::full<T>({1}, 3), 41).item() == static_cast<T>(wrapped));
    if constexpr (std::is_signed_v<T>) {
        const auto s = dt::from_values<T>({1, -1, -1, 2, -2, 0}, {6});
        const auto e = dt::from_values<T>({-3, -3, -2, -1, -1, 2}, {6});
        CHECK(dt::pow(s, e).to_vector() == std::vector<T>{1, -1, 1, 0, 0, 0});
        CHECK(dt::pow(dt::full<T>({1}, -2), 3).item() == T(-8));
    }
}

TEST_CASE_TEMPLATE("comparisons give bool tensors, broadcast, take scalars, and NaN is unequal", T, float, std::int32_t) {
    const auto a = dt::from_values<T>({1, 2, 3, 4}, {2, 2});
    const auto b = dt::from_values<T>({2, 2}, {2});
    const dt::tensor<bool, dt::cpu_device> lt = a < b;
    CHECK(lt.to_vector() == std::vector<bool>{true, false, false, false});
    CHECK((a <= b).to_vector() == std::vector<bool>{true, true, false, false});
    CHECK((a > b).to_vector() == std::vector<bool>{false, false, true, true});
    CHECK((a >= 3).to_vector() == std::vector<bool>{false, false, true, true});
    CHECK((a == b).to_vector() == std::vector<bool>{false, true, false, false});
    CHECK((2 != a).to_vector() == std::vector<bool>{true, false, true, true});
    CHECK(dt::eq(a, 4).to_vector() == std::vector<bool>{false, false, false, true});
    CHECK(dt::ge(a, b).origin().op == std::string("ge"));
    auto out = dt::empty<bool>({2, 2});
    dt::gt(a, b, out);
    CHECK(out.to_vector() == std::vector<bool>{false, false, true, true});
    if constexpr (std::is_floating_point_v<T>) {
        const auto n = dt::from_values<float>({nan_f, 1.f}, {2});
        CHECK((n == n).to_vector() == std::vector<bool>{false, true});
        CHECK((n != n).to_vector() == std::vector<bool>{true, false});
        CHECK((n < 2.f).to_vector() == std::vector<bool>{false, true});
    }
    const auto w = dt::where(a > b, a, b);
    CHECK(w.to_vector() == std::vector<T>{2, 2, 3, 4});
    CHECK(dt::where(dt::from_values<bool>({true, false}, {2}), a, b).to_vector() == std::vector<T>{1, 2, 3, 2});
    CHECK_ERROR(dt::shape_error, (void)dt::where(dt::ones<bool>({3}), a, b), "devtensor::where");
}

TEST_CASE("the new ops refuse undefined and empty-mismatched operands with a sentence; empty ones give empty results") {
    dt::tensor<float, dt::cpu_device> undefined;
    const auto a = dt::ones<float>({2});
    CHECK_ERROR(dt::error, (void)dt::sub(undefined, a), "devtensor::sub", "undefined");
    CHECK_ERROR(dt::error, (void)dt::div(a, undefined), "devtensor::div", "undefined");
    CHECK_ERROR(dt::error, (void)(undefined - 1.f), "devtensor::operator-", "undefined");
    CHECK_ERROR(dt::error, (void)dt::exp(undefined), "devtensor::exp", "undefined");
    CHECK_ERROR(dt::error, (void)(undefined < a), "devtensor::operator<", "undefined");
    const auto e = dt::zeros<float>({3, 0});
    CHECK(dt::exp(e).shape() == dt::shape{3, 0});
    CHECK((e - e).shape() == dt::shape{3, 0});
    CHECK((e < 1.f).shape() == dt::shape{3, 0});
    CHECK(dt::where(e > 0.f, e, e).numel() == 0);
}

TEST_CASE("elementwise math gives the same bits on 1, 2 and 7 threads and on strided operands") {
    const int before = dt::get_num_threads();
    dt::generator gen(4);
    const auto x = dt::randn<float>({1024, 1500}, dt::cpu_device{}, gen);
    dt::set_num_threads(1);
    const auto e1 = dt::exp(x).to_vector(), t1 = dt::tanh(x).to_vector(), d1 = (x / (x * x + 1.f)).to_vector();
    const auto p1 = dt::pow(dt::abs(x), x).to_vector();
    for (const int threads : {2, 7}) {
        dt::set_num_threads(threads);
        CHECK(same_bits(dt::exp(x).to_vector(), e1));
        CHECK(same_bits(dt::tanh(x).to_vector(), t1));
        CHECK(same_bits((x / (x * x + 1.f)).to_vector(), d1));
        CHECK(same_bits(dt::pow(dt::abs(x), x).to_vector(), p1));
    }
    dt::set_num_threads(before);
    CHECK(same_bits(dt::exp(x.t()).t().contiguous().to_vector(), e1));
}

#if DEVTENSOR_HAS_CUDA
DEVTENSOR_GPU_TEST_CASE_TEMPLATE("gpu arithmetic, math, comparisons and where match the cpu bit for bit", T, float,
                                 double) {
    dt::generator gen(8);
    const auto a = dt::randn<T>({300, 70}, dt::cpu_device{}, gen), b = dt::randn<T>({70}, dt::cpu_device{}, gen);
    const auto ga = a.cuda(), gb = b.cuda();
    CHECK(same_bits((ga - gb).to_vector(), (a - b).to_vector()));
    CHECK(same_bits((ga / gb).to_vector(), (a / b).to_vector()));
    CHECK(same_bits((2 - ga.t()).to_vector(), (2 - a.t()).to_vector()));
    CHECK(same_bits(dt::maximum(ga, gb).to_vector(), dt::maximum(a, b).to_vector()));
    CHECK(same_bits(dt::minimum(ga, T(0)).to_vector(), dt::minimum(a, T(0)).to_vector()));
    CHECK(same_bits(dt::abs(-ga).to_vector(), dt::abs(-a).to_vector()));
    CHECK(same_bits(dt::clamp(ga, -1, 1).to_vector(), dt::clamp(a, -1, 1).to_vector()));
    CHECK(same_bits(dt::exp(ga).to_vector(), dt::exp(a).to_vector()));
    CHECK(same_bits(dt::log(dt::abs(ga)).to_vector(), dt::log(dt::abs(a)).to_vector()));
    CHECK(same_bits(dt::sqrt(dt::abs(ga)).to_vector(), dt::sqrt(dt::abs(a)).to_vector()));
    CHECK(same_bits(dt::sigmoid(ga).to_vector(), dt::sigmoid(a).to_vector()));
    CHECK(same_bits(dt::tanh(ga).to_vector(), dt::tanh(a).to_vector()));
    CHECK(same_bits(dt::pow(dt::abs(ga), gb).to_vector(), dt::pow(dt::abs(a), b).to_vector()));
    CHECK(same_bits(dt::pow(ga, T(3)).to_vector(), dt::pow(a, T(3)).to_vector()));
    CHECK((ga < gb).to_vector() == (a < b).to_vector());
    CHECK(same_bits(dt::where(ga > gb, ga, gb).to_vector(), dt::where(a > b, a, b).to_vector()));
}
#endif
