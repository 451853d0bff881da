// nn/linear.hpp and nn/sequential.hpp: initialisation, forward, to(), get<I>.
#include "test_support.hpp"

#include <cmath>
#include <vector>

TEST_CASE("nn::linear has torch.nn.Linear's shapes and initial range") {
    dt::generator gen(0);
    const dt::nn::linear<float> layer(300, 20, true, gen);
    CHECK(layer.weight.shape() == dt::shape{20, 300});
    CHECK(layer.bias.shape() == dt::shape{20});
    CHECK(layer.in_features() == 300);
    CHECK(layer.out_features() == 20);
    const float bound = 1.f / std::sqrt(300.f);
    float lo = 1, hi = -1;
    for (const float w : layer.weight.to_vector()) {
        lo = std::min(lo, w);
        hi = std::max(hi, w);
    }
    CHECK(lo >= -bound);
    CHECK(hi < bound);
    CHECK(lo < -0.9f * bound);  // 6000 draws fill the range
    CHECK(hi > 0.9f * bound);
    for (const float b : layer.bias.to_vector()) CHECK(std::abs(b) <= bound);
    CHECK(layer.parameters().size() == 2);
}

TEST_CASE("initial weights are weight-then-bias from the generator's stream") {
    dt::generator a(5), b(5);
    const dt::nn::linear<float> layer(4, 3, true, a);
    const auto u = dt::rand<float>({15}, dt::cpu_device{}, b).to_vector();
    const auto w = layer.weight.to_vector(), bias = layer.bias.to_vector();
    const float bound = 0.5f;
    for (std::size_t i = 0; i < 12; ++i) CHECK(w[i] == -bound + u[i] * (2 * bound));
    for (std::size_t i = 0; i < 3; ++i) CHECK(bias[i] == -bound + u[12 + i] * (2 * bound));
    dt::generator c(5);
    CHECK(dt::nn::linear<float>(4, 3, true, c).weight.to_vector() == w);  // reproducible
}

TEST_CASE("nn::linear forward and the no-bias layer") {
    dt::generator gen(1);
    const dt::nn::linear<double> layer(3, 2, false, gen);
    CHECK(!layer.bias.defined());
    CHECK(layer.parameters().size() == 1);
    const auto x = dt::ones<double>({4, 3});
    const auto y = layer(x);
    CHECK(y.shape() == dt::shape{4, 2});
    const auto w = layer.weight.to_vector();
    CHECK(y(0, 0) == doctest::Approx(w[0] + w[1] + w[2]));
    const auto moved = layer.to(dt::device("cpu"));
    CHECK(!moved.bias.defined());
    CHECK(moved.weight.is_same(layer.weight));  // already there: shared
}

TEST_CASE("sequential chains layers; get<I> and structured bindings reach them") {
    dt::generator gen(2);
    auto net = dt::nn::sequential(dt::nn::linear<float>(3, 4, true, gen), dt::nn::linear<float>(4, 1, true, gen));
    static_assert(std::tuple_size_v<decltype(net)> == 2);
    const auto x = dt::rand<float>({5, 3}, dt::cpu_device{}, gen);
    const auto y = net(x);
    CHECK(y.shape() == dt::shape{5, 1});
    const auto& first = get<0>(net);
    const auto& second = get<1>(net);
    CHECK(y.to_vector() == second(first(x)).to_vector());
    auto& [l0, l1] = net;
    CHECK(l0.weight.is_same(first.weight));
    CHECK(l1.out_features() == 1);
    auto moved = net.to(dt::try_gpu());
    static_assert(std::is_same_v<decltype(moved), decltype(net)>);  // linear<float, device> stays that type
    CHECK(moved(x.to(dt::try_gpu())).to_vector() == y.to_vector());
    auto on_cpu = net.to(dt::cpu_device{});
    static_assert(std::is_same_v<decltype(get<0>(on_cpu).weight), dt::tensor<float, dt::cpu_device>>);
}

TEST_CASE("the tutorial's net: sequential(linear(3, 1)) on ones(2, 3)") {
    auto net = dt::nn::sequential(dt::nn::linear<float>(3, 1));
    net = net.to(dt::try_gpu());
    const auto X = dt::ones<float>({2, 3}, dt::try_gpu());
    const auto y = net(X);
    const auto w = get<0>(net).weight.to_vector();
    const float expected = w[0] + w[1] + w[2] + get<0>(net).bias.item();
    CHECK(y.to_vector() == std::vector<float>{expected, expected});
    CHECK(get<0>(net).weight.device() == dt::try_gpu());
}

TEST_CASE("nn::linear with negative sizes blames nn::linear, not shape") {
    CHECK_ERROR(dt::shape_error, dt::nn::linear<float>(-1, 3), "devtensor::nn::linear", "in_features", "-1");
    CHECK_ERROR(dt::shape_error, dt::nn::linear<float>(3, -2), "devtensor::nn::linear", "-2");
}

TEST_CASE("an error inside sequential says which layer it came from") {
    dt::generator gen(3);
    const auto net = dt::nn::sequential(dt::nn::linear<float>(3, 4, true, gen), dt::nn::linear<float>(5, 1, true, gen));
    CHECK_ERROR(dt::shape_error, net(dt::ones<float>({2, 3})), "devtensor::linear", "in_features = 5",
                "(in nn::sequential layer 1)");
    CHECK_ERROR(dt::shape_error, net(dt::ones<float>({2, 7})), "(in nn::sequential layer 0)");
    const dt::nn::linear<float> on_cpu(3, 1, true, gen);
    const auto mixed = dt::nn::sequential(on_cpu.to(dt::device("cpu")));
    if (dt::cuda_available()) {
        CHECK_ERROR(dt::device_mismatch, mixed(dt::ones<float>({2, 3}, dt::try_gpu())), "(in nn::sequential layer 0)");
    }
}

#if DEVTENSOR_HAS_CUDA
DEVTENSOR_GPU_TEST_CASE("gpu: to(cuda) moves every parameter, with and without bias; outputs match") {
    dt::generator a(9), b(9);
    const dt::nn::linear<float> with_bias(8, 3, true, a), without(8, 3, false, b);
    const auto gb = with_bias.to(dt::cuda_device{0});
    static_assert(std::is_same_v<decltype(gb), const dt::nn::linear<float, dt::cuda_device>>);
    CHECK(gb.weight.device() == dt::cuda_device{0});
    CHECK(gb.bias.device() == dt::cuda_device{0});
    const auto gn = without.to(dt::device("cuda:0"));
    CHECK(gn.weight.device() == dt::device("cuda:0"));
    CHECK(!gn.bias.defined());
    const auto x = dt::rand<float>({6, 8}, dt::cpu_device{}, a);
    const auto y_cpu = with_bias(x).to_vector(), y_gpu = gb(x.cuda()).to_vector();
    REQUIRE(y_cpu.size() == y_gpu.size());
    for (std::size_t i = 0; i < y_cpu.size(); ++i) CHECK(y_gpu[i] == doctest::Approx(y_cpu[i]).epsilon(1e-5));
    CHECK(with_bias.weight.to_vector() == gb.weight.to_vector());  // same initial weights everywhere
    CHECK_ERROR(dt::device_mismatch, gn(dt::tensor<float>(x)), "cuda:0 and cpu (in linear)");
}
#endif

namespace {
/// A user's layer: its forward and to() take no call site.
struct scale_by_two {
    template <class X>
    auto operator()(const X& x) const { return x + x; }
    template <dt::Device E>
    scale_by_two to(const E&) const { return *this; }
};
}  // namespace

TEST_CASE("sequential takes a user's layer whose forward and to() take no call site") {
    const auto net = dt::nn::sequential(dt::nn::linear<float>(3, 2), scale_by_two{});
    const auto moved = net.to(dt::cpu_device{});
    const auto x = dt::ones<float>({1, 3});
    CHECK(moved(x).to_vector() == (get<0>(net)(x) + get<0>(net)(x)).to_vector());
}
