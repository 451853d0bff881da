// origin.hpp: every tensor knows the op that made it and the user's call that ran
// it (DESIGN §14), and errors name both operands' creation sites. The cases on a
// GPU run on a real one, or on the stand-in runtime (test_runtime_order's build).
#include "test_support.hpp"

#include <string>

namespace {
/// "test_origin.cpp:<line>"
std::string here(int line) { return "test_origin.cpp:" + std::to_string(line); }

void check_made(const dt::origin& o, const char* op, int line) {
    INFO("origin: ", dt::to_string(o));
    REQUIRE(o.known());
    CHECK(std::string(o.op) == op);
    CHECK(o.site.line() == static_cast<unsigned>(line));
    CHECK(std::string(dt::file_of(o.site)) == "test_origin.cpp");
}
}  // namespace

TEST_CASE("factories, ops, copies and layers record the op and the user's line") {
    const auto a = dt::ones<float>({2, 3}); const int ones_line = __LINE__;
    check_made(a.origin(), "ones", ones_line);
    const auto b = dt::rand<float>({2, 3}); const int rand_line = __LINE__;
    check_made(b.origin(), "rand", rand_line);
    check_made(dt::zeros<float>({1}).origin(), "zeros", __LINE__);
    check_made(dt::full<float>({1}, 2.0f).origin(), "full", __LINE__);
    check_made(dt::empty<float>({1}).origin(), "empty", __LINE__);
    check_made(dt::from_values<int>({1, 2}, {2}).origin(), "from_values", __LINE__);
    check_made(dt::add(a, b).origin(), "add", __LINE__);
    check_made(dt::matmul(a, dt::ones<float>({3, 2})).origin(), "matmul", __LINE__);
    check_made(dt::linear(a, dt::ones<float>({4, 3})).origin(), "linear", __LINE__);
    // An operator takes no call site: the op alone.
    const auto sum = a + b;
    CHECK(std::string(sum.origin().op) == "operator+");
    CHECK(!sum.origin().has_site());
    CHECK(dt::to_string(sum.origin()) == "made by operator+ (no call site)");
    // to() on the same device is the very tensor: its origin stays; a copy is made by to / cpu.
    check_made(a.to(dt::device("cpu")).origin(), "ones", ones_line);
    check_made(a.cpu().origin(), "ones", ones_line);
    const dt::tensor<float> erased = a;
    check_made(erased.origin(), "ones", ones_line);
    check_made(dt::tensor_cast<dt::cpu_device>(erased).origin(), "ones", ones_line);
    // Layers: parameters are made by nn::linear where the layer was made; the output where it was called.
    const dt::nn::linear<float> layer(3, 2); const int layer_line = __LINE__;
    check_made(layer.weight.origin(), "nn::linear", layer_line);
    check_made(layer.bias.origin(), "nn::linear", layer_line);
    check_made(layer(a).origin(), "linear", __LINE__);
    const auto net = dt::nn::sequential(dt::nn::linear<float>(3, 4), dt::nn::linear<float>(4, 1));
    check_made(net(a).origin(), "linear", __LINE__);
    // Nothing known of an undefined tensor or of wrapped memory.
    CHECK(!dt::tensor<float>{}.origin().known());
    CHECK(dt::to_string(dt::tensor<float>{}.origin()) == "of unknown origin");
    auto moved = dt::ones<float>({1});
    const auto keep = std::move(moved);
    CHECK(!moved.origin().known());  // NOLINT(bugprone-use-after-move)
}

TEST_CASE("a shape error names each operand's creation site") {
    const auto a = dt::ones<float>({2, 3}); const int a_line = __LINE__;
    const auto b = dt::ones<float>({4}); const int b_line = __LINE__;
    CHECK_ERROR(dt::shape_error, dt::add(a, b), "devtensor::add", "[2, 3]", "[4]",
                "a made by ones at " + here(a_line), "b made by ones at " + here(b_line));
    CHECK_ERROR(dt::shape_error, a + b, "a made by ones at " + here(a_line));
    auto c = dt::ones<float>({3});
    CHECK_ERROR(dt::shape_error, c += a, "devtensor::operator+=", "a made by ones at", "b made by ones at " + here(a_line));
    CHECK_ERROR(dt::shape_error, dt::matmul(a, a), "devtensor::matmul", "a made by ones at " + here(a_line));
    const auto moved = a.to(dt::device("cpu"));
    CHECK_ERROR(dt::shape_error, dt::add(moved, b), "a made by ones at " + here(a_line));
    const auto copied = dt::tensor<float>(a).to(dt::cpu_device{});
    CHECK_ERROR(dt::shape_error, dt::add(copied, b), "a made by ones at " + here(a_line));
}

TEST_CASE("inside nn::sequential: the layer's index, the input's site and the weight's site") {
    const auto net = dt::nn::sequential(dt::nn::linear<float>(3, 4), dt::nn::linear<float>(5, 1)); const int net_line = __LINE__;
    const auto x = dt::ones<float>({2, 3}); const int x_line = __LINE__;
    // One line each: the site of net(x) and __LINE__ must be the same line.
    CHECK_ERROR(dt::shape_error, net(x), "(in nn::sequential layer 1)", "the input made by linear at " + here(__LINE__));
    CHECK_ERROR(dt::shape_error, net(x), "in_features = 5", "the weight made by nn::linear at " + here(net_line));
    const auto wide = dt::ones<float>({2, 7}); const int wide_line = __LINE__;
    CHECK_ERROR(dt::shape_error, net(wide), "(in nn::sequential layer 0)", "the input made by ones at " + here(wide_line));
    CHECK_ERROR(dt::shape_error, net(x + x), "(in nn::sequential layer 1)");
    (void)x_line;
}

DEVTENSOR_GPU_TEST_CASE("a device mismatch names both devices and both creation sites") {
    const dt::tensor<float> a = dt::from_values<float>({1, 2}, {2}, dt::cuda_device{0}); const int a_line = __LINE__;
    const dt::tensor<float> b = dt::ones<float>({2}); const int b_line = __LINE__;
    CHECK_ERROR(dt::device_mismatch, dt::add(a, b),
                "expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu "
                "(in add): a made by from_values at " + here(a_line) + ", b made by ones at " + here(b_line));
    const dt::tensor<float> moved = b.cuda(0); const int moved_line = __LINE__;
    CHECK_ERROR(dt::device_mismatch, dt::matmul(dt::ones<float>({2, 2}), moved.to(dt::device("cuda:0"))),
                "(in matmul)", "b made by cuda at " + here(moved_line));
    const dt::nn::linear<float> layer(2, 1); const int layer_line = __LINE__;
    CHECK_ERROR(dt::device_mismatch, layer(a), "(in linear)", "the input made by from_values at " + here(a_line),
                "the weight made by nn::linear at " + here(layer_line));
    const auto net = dt::nn::sequential(dt::nn::linear<float>(2, 1));
    CHECK_ERROR(dt::device_mismatch, net(a), "(in nn::sequential layer 0)", "the input made by from_values");
}
