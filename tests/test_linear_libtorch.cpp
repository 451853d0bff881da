// linear and nn::linear against libtorch's torch::nn::Linear with the same
// weights, several shapes. (libtorch's headers are slow to compile: the three
// libtorch test files build as one unity file, tests/CMakeLists.txt.)
#include "test_support.hpp"

#include <torch/torch.h>

#include <vector>

namespace {
torch::Tensor to_torch(const dt::tensor<float, dt::cpu_device>& t) {
    std::vector<std::int64_t> dims(t.shape().begin(), t.shape().end());
    return torch::from_blob(t.data(), dims, torch::kFloat32).clone();
}
}  // namespace

TEST_CASE("linear equals torch::nn::Linear with the same weights") {
    struct layer_case { std::vector<std::int64_t> x; std::int64_t in, out; };
    const std::vector<layer_case> cases = {{{2, 3}, 3, 1},     {{1, 1}, 1, 1},        {{7, 33}, 33, 5},
                                           {{4, 3, 17}, 17, 9}, {{256, 300}, 300, 129}, {{3, 1000}, 1000, 2}};
    torch::NoGradGuard no_grad;
    dt::generator gen(8);
    for (const auto& [xs, in, out] : cases) {
        CAPTURE(in);
        CAPTURE(out);
        const dt::nn::linear<float, dt::cpu_device> ours(in, out, true, gen);
        torch::nn::Linear theirs(torch::nn::LinearOptions(in, out).bias(true));
        theirs->weight.copy_(to_torch(ours.weight));
        theirs->bias.copy_(to_torch(ours.bias));
        const auto x = dt::rand<float>(dt::shape(xs), dt::cpu_device{}, gen);
        const auto expected = theirs->forward(to_torch(x)).contiguous();
        const auto got = ours(x);
        REQUIRE(std::vector<std::int64_t>(got.shape().begin(), got.shape().end()) == expected.sizes().vec());
        const float* e = expected.data_ptr<float>();
        for (std::int64_t i = 0; i < got.numel(); ++i)
            REQUIRE(got.data()[i] == doctest::Approx(e[i]).epsilon(1e-5).scale(1));
        // and the functional form, without bias, against torch::nn::functional::linear
        const auto plain = torch::nn::functional::linear(to_torch(x), to_torch(ours.weight)).contiguous();
        const auto ours_plain = dt::linear(x, ours.weight);
        for (std::int64_t i = 0; i < ours_plain.numel(); ++i)
            REQUIRE(ours_plain.data()[i] == doctest::Approx(plain.data_ptr<float>()[i]).epsilon(1e-5).scale(1));
        // and with a bias that broadcasts ([], and every leading dimension of the output but the first)
        std::vector<std::int64_t> bias_dims(xs.begin() + 1, xs.end());
        bias_dims.back() = out;
        for (const dt::shape bias_shape : {dt::shape{}, dt::shape(bias_dims)}) {
            const auto b = dt::rand<float>(bias_shape, dt::cpu_device{}, gen);
            const auto want = torch::nn::functional::linear(to_torch(x), to_torch(ours.weight), to_torch(b)).contiguous();
            const auto ours_b = dt::linear(x, ours.weight, b);
            REQUIRE(std::vector<std::int64_t>(ours_b.shape().begin(), ours_b.shape().end()) == want.sizes().vec());
            for (std::int64_t i = 0; i < ours_b.numel(); ++i)
                REQUIRE(ours_b.data()[i] == doctest::Approx(want.data_ptr<float>()[i]).epsilon(1e-5).scale(1));
        }
    }
}

TEST_CASE("nn::linear's initial range is torch's: uniform in ±1/sqrt(in_features)") {
    torch::nn::Linear theirs(torch::nn::LinearOptions(50, 40));
    const float torch_bound = theirs->weight.abs().max().item<float>();
    const dt::nn::linear<float> ours(50, 40);
    float our_bound = 0;
    for (const float w : ours.weight.to_vector()) our_bound = std::max(our_bound, std::abs(w));
    const float bound = 1.f / std::sqrt(50.f);
    CHECK(torch_bound <= bound);
    CHECK(our_bound <= bound);
    CHECK(our_bound == doctest::Approx(torch_bound).epsilon(0.05));  // both fill the range
}
