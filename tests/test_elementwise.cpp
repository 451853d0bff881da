// The elementwise ops written on the engine (mul, relu): one functor each,
// broadcasting, out-variants, in place, strided operands, every element type
// the op serves, and GPU results equal to the CPU's.
#include "test_support.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

TEST_CASE_TEMPLATE("mul broadcasts, with the out-variant and *=", T, float, double, std::int32_t, std::int64_t,
                   std::int16_t) {
    const auto a = dt::arange<T>(0, 12).view({3, 4});
    const auto b = dt::arange<T>(1, 5);
    const auto c = dt::mul(a, b);
    std::vector<T> want;
    for (int i = 0; i < 12; ++i) want.push_back(static_cast<T>(i * (i % 4 + 1)));
    CHECK(c.to_vector() == want);
    CHECK((a * b).to_vector() == want);
    CHECK((b * a).to_vector() == want);
    auto out = dt::empty<T>({3, 4});
    dt::mul(a, b, out);
    CHECK(out.to_vector() == want);
    auto d = a.clone();
    d *= b;
    CHECK(d.to_vector() == want);
    CHECK((a.t() * a.t()).to_vector() == (a * a).t().contiguous().to_vector());
    CHECK_ERROR(dt::shape_error, dt::mul(a, dt::ones<T>({3})), "devtensor::mul", "[3, 4]", "[3]");
    CHECK(c.origin().op == std::string("mul"));
}

TEST_CASE("mul: integers wrap, bool is logical and, floats follow IEEE") {
    const auto big = dt::from_values<std::int32_t>({65536, -7}, {2});
    CHECK((big * big).to_vector() == std::vector<std::int32_t>{0, 49});
    const auto i8 = dt::from_values<std::int8_t>({100, -128}, {2});
    CHECK((i8 * i8).to_vector() == std::vector<std::int8_t>{16, 0});
    const auto b = dt::from_values<bool>({true, true, false}, {3});
    CHECK((b * dt::from_values<bool>({true, false, false}, {3})).to_vector() == std::vector<bool>{true, false, false});
    constexpr float inf = std::numeric_limits<float>::infinity();
    const auto f = dt::from_values<float>({inf, 0.f, -0.f}, {3});
    const auto p = (f * dt::from_values<float>({0.f, -1.f, -1.f}, {3})).to_vector();
    CHECK(std::isnan(p[0]));
    CHECK(std::signbit(p[1]));
    CHECK(!std::signbit(p[2]));
}

TEST_CASE_TEMPLATE("relu keeps NaN and signed zeros like torch.relu", T, float, double) {
    constexpr T nan = std::numeric_limits<T>::quiet_NaN();
    const auto x = dt::from_values<T>({-2, -0.0, 0, 3, nan}, {5});
    const auto y = dt::relu(x).to_vector();
    CHECK(y[0] == 0);
    CHECK(y[3] == 3);
    CHECK(std::isnan(y[4]));
    auto z = x.clone();
    dt::relu_(z);
    CHECK(z.to_vector()[3] == 3);
    CHECK(dt::relu(dt::from_values<int>({-5, 5}, {2})).to_vector() == std::vector<int>{0, 5});
    const auto big = dt::arange<T>(-500, 500).view({10, 100}).t();
    CHECK(dt::relu(big).to_vector() == dt::relu(big.contiguous()).to_vector());
}

TEST_CASE_TEMPLATE("relu, its gradient and the gradients of add, sub and mul: the vector loops give the scalar bits",
                   T, float, double) {
    // 203 elements: the 16-byte vectors, their aligned head and scalar tail; NaN, ±0, ±inf and
    // negatives spread over every lane. Each result is checked against the scalar rule.
    constexpr T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
    auto x = dt::randn<T>({203});
    const T specials[] = {nan, T(-0.0), T(0), inf, -inf, T(-1)};
    for (std::int64_t i = 0; i < 203; i += 5) x(i) = specials[i / 5 % 6];
    const auto g = dt::randn<T>({203});
    const auto xs = x.to_vector(), gs = g.to_vector();
    const auto bits_equal = [](const std::vector<T>& got, auto rule) {
        bool same = true;
        for (std::size_t i = 0; i < got.size(); ++i) {
            const T want = rule(i);
            same &= std::memcmp(&got[i], &want, sizeof(T)) == 0;
        }
        return same;
    };
    const auto xr = x.detach().requires_grad_(true);
    const auto y = dt::relu(xr);
    const auto ys = y.detach().to_vector();
    CHECK(bits_equal(ys, [&](std::size_t i) { return xs[i] < T(0) ? T(0) : xs[i]; }));
    auto in_place = x.clone();
    dt::relu_(in_place);
    CHECK(bits_equal(in_place.to_vector(), [&](std::size_t i) { return ys[i]; }));
    y.backward(g);
    CHECK(bits_equal(xr.grad().to_vector(), [&](std::size_t i) { return ys[i] > T(0) ? gs[i] : T(0); }));
    const auto b = dt::randn<T>({203}).requires_grad_(true);
    const auto a = x.detach().requires_grad_(true);
    (a * b).backward(g);
    const auto bs = b.detach().to_vector();
    CHECK(bits_equal(a.grad().to_vector(), [&](std::size_t i) { return gs[i] * bs[i]; }));
    CHECK(bits_equal(b.grad().to_vector(), [&](std::size_t i) { return gs[i] * xs[i]; }));
    const auto c = x.detach().requires_grad_(true), d = dt::randn<T>({203}).requires_grad_(true);
    (c - d).backward(g);
    CHECK(bits_equal(c.grad().to_vector(), [&](std::size_t i) { return gs[i]; }));
    CHECK(bits_equal(d.grad().to_vector(), [&](std::size_t i) { return -gs[i]; }));
    const auto e = x.detach().requires_grad_(true), f = dt::randn<T>({203}).requires_grad_(true);
    (e + f).backward(g);
    CHECK(bits_equal(e.grad().to_vector(), [&](std::size_t i) { return gs[i]; }));
    CHECK(bits_equal(f.grad().to_vector(), [&](std::size_t i) { return gs[i]; }));
}

TEST_CASE("large elementwise ops agree on every thread count (vector, streaming and tiled paths)") {
    const auto a = dt::rand<float>({3000, 1000}), b = dt::rand<float>({1000});
    std::vector<float> first;
    const int threads_before = dt::get_num_threads();
    for (const int threads : {1, 2, 7}) {
        dt::set_num_threads(threads);
        const auto c = dt::relu(a * b + a.t().contiguous().t());
        if (first.empty()) first = c.to_vector();
        else CHECK(c.to_vector() == first);
    }
    dt::set_num_threads(threads_before);
}

// ---- undefined and empty operands, conversions -----------------------------------------------

TEST_CASE("mul and relu refuse an undefined operand with a sentence") {
    const dt::tensor<float, dt::cpu_device> undefined;
    const dt::tensor<float> undefined_any;
    const auto real = dt::ones<float>({2});
    CHECK_ERROR(dt::error, dt::mul(real, undefined), "devtensor::mul", "undefined");
    CHECK_ERROR(dt::error, dt::mul(undefined, real), "devtensor::mul", "undefined");
    CHECK_ERROR(dt::error, dt::mul(undefined_any, undefined_any), "devtensor::mul", "undefined");
    CHECK_ERROR(dt::error, real * undefined, "undefined");
    auto out = dt::empty<float>({2});
    CHECK_ERROR(dt::error, dt::mul(real, real, undefined), "devtensor::mul", "out", "undefined");
    CHECK_ERROR(dt::error, dt::mul(real, undefined, out), "devtensor::mul", "undefined");
    CHECK_ERROR(dt::error, dt::relu(undefined), "devtensor::relu", "undefined");
    CHECK_ERROR(dt::error, dt::relu(undefined_any), "devtensor::relu", "undefined");
    auto in_place = undefined;
    CHECK_ERROR(dt::error, dt::relu_(in_place), "devtensor::relu_", "undefined");
}

TEST_CASE_TEMPLATE("mul, relu and to<U>() of empty tensors give empty tensors", T, float, double, std::int32_t) {
    for (const dt::shape& s : {dt::shape{0}, dt::shape{3, 0}}) {
        CAPTURE(s);
        const auto a = dt::ones<T>(s), b = dt::ones<T>(s);
        const auto c = dt::mul(a, b);
        CHECK(c.shape() == s);
        CHECK(c.numel() == 0);
        CHECK(c.to_vector().empty());
        CHECK((a * dt::ones<T>({0})).shape() == s);  // broadcast against an empty row
        auto out = dt::empty<T>(s);
        dt::mul(a, b, out);
        CHECK(out.numel() == 0);
        auto d = a.clone();
        d *= b;
        CHECK(d.shape() == s);
        const auto r = dt::relu(a);
        CHECK(r.shape() == s);
        CHECK(r.numel() == 0);
        auto z = a.clone();
        dt::relu_(z);
        CHECK(z.shape() == s);
        const auto i = a.template to<std::int64_t>();
        CHECK(i.shape() == s);
        CHECK(i.to_vector().empty());
        const auto f = a.template to<float>();
        CHECK(f.shape() == s);
        CHECK(f.numel() == 0);
        CHECK(a.template to<bool>().shape() == s);
    }
    CHECK_ERROR(dt::shape_error, dt::mul(dt::ones<T>({3, 0}), dt::ones<T>({2})), "devtensor::mul", "[3, 0]", "[2]");
}

namespace {
/// The bytes of a tensor's elements, for bit-for-bit comparisons (NaN and -0 included).
template <class T, class D>
std::vector<unsigned char> bytes_of(const dt::tensor<T, D>& t) {
    const auto values = t.contiguous().cpu().to_vector();
    std::vector<unsigned char> result(sizeof(T) * values.size());
    if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> has no data()
        for (std::size_t i = 0; i < values.size(); ++i) result[i] = values[i] ? 1 : 0;
    } else if (!values.empty()) {
        std::memcpy(result.data(), values.data(), result.size());
    }
    return result;
}

/// n values in about [-3000, 3000) with fractions, negative zeros and exact halves.
std::vector<double> conversion_inputs(std::int64_t n) {
    std::vector<double> v(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < v.size(); ++i) {
        const double x = static_cast<double>((i * 2654435761u) % 600000u) / 100.0 - 3000.0;
        v[i] = i % 97 == 0 ? -0.0 : i % 89 == 0 ? static_cast<double>(i % 300) + 0.5 : x;
    }
    return v;
}

/// Every conversion of x (double) and of its float copy, as bytes, in one list.
template <class D>
std::vector<std::vector<unsigned char>> conversions_of(const dt::tensor<double, D>& x) {
    const auto xf = x.template to<float>();
    const auto strided = x.view({x.numel() / 7, 7}).t();  // a view: the strided path
    return {bytes_of(x.template to<int>()),          bytes_of(x.template to<float>()),
            bytes_of(x.template to<std::int64_t>()), bytes_of(x.template to<std::int16_t>()),
            bytes_of(x.template to<bool>()),         bytes_of(xf.template to<int>()),
            bytes_of(xf.template to<double>()),      bytes_of(xf.template to<std::int64_t>()),
            bytes_of(xf.template to<bool>()),        bytes_of(strided.template to<float>()),
            bytes_of(strided.template to<int>())};
}
}  // namespace

TEST_CASE("conversions give the same bits on 1, 2 and 7 threads (large enough to be split)") {
    const std::int64_t n = 7 * 180001;  // > 1M elements, not a multiple of any vector width
    const auto x = dt::from_values<double>(conversion_inputs(n), {n});
    std::vector<std::vector<unsigned char>> first;
    const int threads_before = dt::get_num_threads();
    for (const int threads : {1, 2, 7}) {
        CAPTURE(threads);
        dt::set_num_threads(threads);
        const auto got = conversions_of(x);
        if (first.empty()) {
            first = got;
        } else {
            REQUIRE(got.size() == first.size());
            for (std::size_t k = 0; k < got.size(); ++k) {
                CAPTURE(k);
                CHECK(got[k] == first[k]);
            }
        }
    }
    dt::set_num_threads(threads_before);
    // spot checks of the values themselves: truncation toward zero, as PyTorch
    const auto i = x.to<int>();
    const auto xs = x.to_vector();
    const auto is = i.to_vector();
    for (std::size_t k = 0; k < xs.size(); k += 4099) CHECK(is[k] == static_cast<int>(xs[k]));
}

#if DEVTENSOR_HAS_CUDA
DEVTENSOR_GPU_TEST_CASE_TEMPLATE("gpu mul and relu match the cpu bit for bit", T, float, double, std::int32_t,
                                 std::int64_t) {
    const auto a = dt::rand<float>({33, 70}).to<T>(), b = dt::rand<float>({70}).to<T>();
    CHECK((a.cuda() * b.cuda()).to_vector() == (a * b).to_vector());
    CHECK((a.cuda().t() * a.cuda().t()).to_vector() == (a.t() * a.t()).to_vector());
    CHECK(dt::relu(a.cuda()).to_vector() == dt::relu(a).to_vector());
}
DEVTENSOR_GPU_TEST_CASE("gpu mul and relu refuse an undefined operand; empty operands give empty results") {
    const dt::tensor<float, dt::cuda_device> undefined;
    const auto real = dt::ones<float>({2}, dt::cuda_device{});
    CHECK_ERROR(dt::error, dt::mul(real, undefined), "devtensor::mul", "undefined");
    CHECK_ERROR(dt::error, dt::mul(undefined, real), "devtensor::mul", "undefined");
    CHECK_ERROR(dt::error, dt::relu(undefined), "devtensor::relu", "undefined");
    for (const dt::shape& s : {dt::shape{0}, dt::shape{3, 0}}) {
        CAPTURE(s);
        const auto a = dt::ones<float>(s, dt::cuda_device{});
        CHECK(dt::mul(a, a).shape() == s);
        CHECK((a * dt::ones<float>({0}, dt::cuda_device{})).shape() == s);
        CHECK(dt::relu(a).shape() == s);
        CHECK(a.to<int>().shape() == s);
        CHECK(a.to<double>().to_vector().empty());
    }
}

DEVTENSOR_GPU_TEST_CASE("gpu conversions match the cpu bit for bit") {
    const std::int64_t n = 7 * 180001;
    const auto x = dt::from_values<double>(conversion_inputs(n), {n});
    CHECK(conversions_of(x.cuda()) == conversions_of(x));
}
#endif
