// The elementwise ops written on the engine (mul, relu): one functor each,
// broadcasting, out-variants, in place, strided operands, every element type
// the op serves, and GPU results equal to the CPU's.
#include "test_support.hpp"

#include <cmath>
#include <limits>
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

#if DEVTENSOR_HAS_CUDA
DEVTENSOR_GPU_TEST_CASE_TEMPLATE("gpu mul and relu match the cpu bit for bit", T, float, double, std::int32_t,
                                 std::int64_t) {
    const auto a = dt::rand<float>({33, 70}).to<T>(), b = dt::rand<float>({70}).to<T>();
    CHECK((a.cuda() * b.cuda()).to_vector() == (a * b).to_vector());
    CHECK((a.cuda().t() * a.cuda().t()).to_vector() == (a.t() * a.t()).to_vector());
    CHECK(dt::relu(a.cuda()).to_vector() == dt::relu(a).to_vector());
}
#endif
