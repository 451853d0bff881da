// ops/linear.hpp: x·Wᵀ + b over [batch..., in] inputs, and its shape errors.
// (tests/test_linear_libtorch.cpp checks it against torch::nn::Linear.)
#include "test_support.hpp"

#include <vector>

namespace {
std::vector<double> reference_linear(const dt::tensor<float, dt::cpu_device>& x,
                                     const dt::tensor<float, dt::cpu_device>& w,
                                     const dt::tensor<float, dt::cpu_device>& b) {
    const std::int64_t in = w.shape()[1], out = w.shape()[0];
    std::int64_t batch = 1;
    for (std::size_t d = 0; d + 1 < x.shape().rank(); ++d) batch *= x.shape()[d];
    std::vector<double> y(static_cast<std::size_t>(batch * out));
    for (std::int64_t r = 0; r < batch; ++r)
        for (std::int64_t o = 0; o < out; ++o) {
            double s = b.defined() ? b.data()[o] : 0.0;
            for (std::int64_t i = 0; i < in; ++i) s += static_cast<double>(x.data()[r * in + i]) * w(o, i);
            y[static_cast<std::size_t>(r * out + o)] = s;
        }
    return y;
}

void check_close(const std::vector<float>& got, const std::vector<double>& expected) {
    REQUIRE(got.size() == expected.size());
    for (std::size_t i = 0; i < got.size(); ++i)
        REQUIRE(static_cast<double>(got[i]) == doctest::Approx(expected[i]).epsilon(1e-4).scale(1));
}

struct layer_case { dt::shape x; std::int64_t in, out; };
const std::vector<layer_case> cases = {{{2, 3}, 3, 1}, {{1, 5}, 5, 7}, {{4, 2, 9}, 9, 33},
                                       {{1000, 17}, 17, 65}, {{3}, 3, 2}, {{0, 4}, 4, 3},
                                       {{2, 0}, 0, 3}, {{16, 130}, 130, 1}};
}  // namespace

TEST_CASE("linear is x·Wᵀ + b over leading batch dimensions") {
    dt::generator gen(31);
    for (const auto& [xs, in, out] : cases) {
        CAPTURE(xs);
        const auto x = dt::rand<float>(xs, dt::cpu_device{}, gen);
        const auto w = dt::rand<float>({out, in}, dt::cpu_device{}, gen);
        const auto b = dt::rand<float>({out}, dt::cpu_device{}, gen);
        const auto y = dt::linear(x, w, b);
        std::vector<std::int64_t> dims(xs.begin(), xs.end());
        dims.back() = out;
        CHECK(y.shape() == dt::shape(dims));
        check_close(y.to_vector(), reference_linear(x, w, b));
        check_close(dt::linear(x, w).to_vector(), reference_linear(x, w, {}));
    }
}

TEST_CASE("linear input width, weight rank and bias shape are checked") {
    const auto w = dt::ones<float>({1, 3});
    CHECK_ERROR(dt::shape_error, dt::linear(dt::ones<float>({2, 4}), w, dt::ones<float>({1})),
                "devtensor::linear", "in_features = 3", "[2, 4]", "[1, 3]");
    CHECK_ERROR(dt::shape_error, dt::linear(dt::ones<float>({}), w), "in_features");
    CHECK_ERROR(dt::shape_error, dt::linear(dt::ones<float>({2, 3}), dt::ones<float>({3})), "weight", "[3]");
    CHECK_ERROR(dt::shape_error, dt::linear(dt::ones<float>({2, 3}), w, dt::ones<float>({2})), "bias", "[2]");
}

TEST_CASE("linear's bias broadcasts like F.linear's: a row fused, any other shape added after, the same bits") {
    dt::generator gen(41);
    const auto x = dt::rand<float>({6, 5, 9}, dt::cpu_device{}, gen);
    const auto w = dt::rand<float>({7, 9}, dt::cpu_device{}, gen);
    const auto plain = dt::linear(x, w);
    const auto row = dt::rand<float>({7}, dt::cpu_device{}, gen);
    const auto same = [](const auto& a, const auto& b) { return a.shape() == b.shape() && a.to_vector() == b.to_vector(); };
    CHECK(same(dt::linear(x, w, row), plain + row));
    CHECK(same(dt::linear(x, w, row.view({1, 7})), plain + row));
    CHECK(same(dt::linear(x, w, dt::full<float>({}, 0.25f)), plain + 0.25f));
    CHECK(same(dt::linear(x, w, dt::full<float>({1}, 0.25f)), plain + 0.25f));
    const auto per_row = dt::rand<float>({5, 7}, dt::cpu_device{}, gen);  // [5, 7] against the output [6, 5, 7]
    CHECK(same(dt::linear(x, w, per_row), plain + per_row));
    const auto column = dt::rand<float>({5, 1}, dt::cpu_device{}, gen);
    CHECK(same(dt::linear(x, w, column), plain + column));
    CHECK(same(dt::linear(x, w, row.expand({5, 7}).t().contiguous().t()), plain + row));  // strided
    CHECK_ERROR(dt::shape_error, (void)dt::linear(x, w, dt::ones<float>({6, 7})), "devtensor::linear", "bias",
                "broadcast", "[6, 5, 7]", "[6, 7]");
    CHECK_ERROR(dt::shape_error, (void)dt::linear(x, w, dt::ones<float>({2, 6, 5, 7})), "bias");
}

#if DEVTENSOR_HAS_CUDA
DEVTENSOR_GPU_TEST_CASE("gpu linear matches the cpu") {
    dt::generator gen(37);
    for (const auto& [xs, in, out] : cases) {
        CAPTURE(xs);
        const auto x = dt::rand<float>(xs, dt::cpu_device{}, gen);
        const auto w = dt::rand<float>({out, in}, dt::cpu_device{}, gen);
        const auto b = dt::rand<float>({out}, dt::cpu_device{}, gen);
        const auto expected = reference_linear(x, w, b);
        check_close(dt::linear(x.cuda(), w.cuda(), b.cuda()).to_vector(), expected);
        const dt::tensor<float> rx = x.cuda();
        check_close(dt::linear(rx, w.cuda(), b.cuda()).to_vector(), expected);
    }
}
#endif
