// One program, nvcc and g++ translation units: no ODR clash (each kind's ops
// live in their own inline namespace), the same results, and a clear
// device_error where a g++ file meets a GPU tensor.
#include "test_support.hpp"

#include "mixed_tu.hpp"

#include <vector>

TEST_CASE("host and nvcc translation units link into one program and agree") {
    CHECK(!mixed_tu::compiled_by_nvcc());
    CHECK(mixed_tu::ones_from_host_tu(5) == dt::ones<float>({5}).to_vector());
}

DEVTENSOR_GPU_TEST_CASE("a g++ translation unit refuses GPU work with device_error, copies still work") {
    CHECK_ERROR(dt::device_error, mixed_tu::add_on_gpu_from_host_tu(), "compile this file with nvcc", "add",
                "cuda:0");
}

TEST_CASE("tensor, nn::linear, nn::sequential, generator and philox are one type in both kinds of file") {
    dt::generator gen(5);
    const dt::nn::linear<float> layer(3, 2, true, gen);
    const mixed_tu::net_type net(dt::nn::linear<float>(3, 4, true, gen), dt::nn::linear<float>(4, 2, true, gen));
    const dt::tensor<float> x = dt::rand<float>({5, 3}, dt::device(), gen);
    // Each call crosses into the g++ file with this file's objects and compares with this file's result.
    CHECK(mixed_tu::forward_in_host_tu(layer, x).to_vector() == layer(x).to_vector());
    CHECK(mixed_tu::sequential_in_host_tu(net, x).to_vector() == net(x).to_vector());
    dt::generator a(11), b(11);
    CHECK(mixed_tu::rand_in_host_tu(a, 9).to_vector() == dt::rand<float>({9}, dt::device(), b).to_vector());
    CHECK(a.offset() == b.offset());
    mixed_tu::model m{dt::nn::linear<float>(3, 2, true, gen), dt::generator(4), dt::ones<float>({2})};
    mixed_tu::model twin = m;
    const auto there = mixed_tu::model_in_host_tu(m, x).to_vector();
    const auto here = (twin.layer(x) + twin.scale + dt::rand<float>({1}, dt::device(), twin.gen)).to_vector();
    CHECK(there == here);
    const dt::philox4x32_10 philox;
    CHECK(mixed_tu::philox_in_host_tu(philox) == philox({1, 2, 3, 4}, {5, 6})[0]);
}
