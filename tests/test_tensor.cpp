// tensor.hpp: handles, moves between devices, element access, casts, factories.
#include "test_support.hpp"

#include <numeric>
#include <span>
#include <vector>

using dt::cpu_device;
using dt::cuda_device;
using dt::device;
using dt::tensor;

// The factories' return type follows the device argument's type.
static_assert(std::is_same_v<decltype(dt::ones<float>({2, 3})), tensor<float, cpu_device>>);
static_assert(std::is_same_v<decltype(dt::ones<float>({2, 3}, dt::try_gpu())), tensor<float, device>>);
static_assert(std::is_same_v<decltype(dt::ones<float>({2, 3}, cuda_device{0})), tensor<float, cuda_device>>);
static_assert(std::is_same_v<decltype(dt::zeros<int>({2}, cpu_device{})), tensor<int, cpu_device>>);
static_assert(std::is_same_v<decltype(dt::full<double>({2}, 1.5, device("cpu"))), tensor<double, device>>);
static_assert(std::is_same_v<decltype(dt::rand<float>({2}, cuda_device{1})), tensor<float, cuda_device>>);
static_assert(std::is_same_v<decltype(dt::from_values<float>({1.f, 2.f}, {2}, cuda_device{})),
                             tensor<float, cuda_device>>);
// Moves between devices give the target's type.
static_assert(std::is_same_v<decltype(std::declval<tensor<float>>().cpu()), tensor<float, cpu_device>>);
static_assert(std::is_same_v<decltype(std::declval<tensor<float>>().cuda()), tensor<float, cuda_device>>);
static_assert(std::is_same_v<decltype(std::declval<tensor<float, cuda_device>>().to(device("cpu"))),
                             tensor<float, device>>);
// Static tensors convert to run-time ones, never the other way implicitly.
static_assert(std::is_convertible_v<tensor<float, cuda_device>, tensor<float, device>>);
static_assert(std::is_convertible_v<tensor<float, cpu_device>, tensor<float, device>>);
static_assert(!std::is_convertible_v<tensor<float, device>, tensor<float, cuda_device>>);
static_assert(!std::is_convertible_v<tensor<float, cpu_device>, tensor<float, cuda_device>>);
static_assert(!std::is_convertible_v<tensor<float, cpu_device>, tensor<double, cpu_device>>);
static_assert(dt::Element<float> && dt::Element<bool> && dt::Element<std::int8_t>);
static_assert(!dt::Element<std::string> && !dt::Element<const float> && !dt::Element<float*>);

TEST_CASE("a tensor is a handle: copies share storage") {
    auto a = dt::zeros<float>({2, 3});
    auto b = a;
    b(1, 2) = 5;
    CHECK(a(1, 2) == 5);
    CHECK(a.is_same(b));
    CHECK(a.data() == b.data());
    CHECK(!a.is_same(dt::zeros<float>({2, 3})));
    CHECK(a.numel() == 6);
    CHECK(a.dim() == 2);
    CHECK(a.shape() == dt::shape{2, 3});
    CHECK(a.device() == cpu_device{});
}

TEST_CASE("to() on the same device is the same tensor, like Z.cuda(0) is Z") {
    auto x = dt::ones<float>({2, 3});
    CHECK(x.to(cpu_device{}).is_same(x));
    CHECK(x.to(device("cpu")).is_same(x));
    CHECK(x.cpu().is_same(x));
    tensor<float> r = x;  // static -> run-time: the same storage
    CHECK(r.is_same(x));
    CHECK(r.cpu().is_same(x));
}

TEST_CASE("tensor_cast is checked") {
    tensor<float> r = dt::ones<float>({4});
    const auto c = dt::tensor_cast<cpu_device>(r);
    CHECK(c.is_same(r));
    CHECK_ERROR(dt::device_mismatch, dt::tensor_cast<cuda_device>(r), "cpu", "cuda");
}

TEST_CASE("element access: multi-index, flat index, bounds") {
    auto t = dt::from_values<int>({0, 1, 2, 3, 4, 5}, {2, 3});
    CHECK(t(0, 0) == 0);
    CHECK(t(1, 2) == 5);
    CHECK(t(1, 0) == 3);
    CHECK(t[4] == 4);
    tensor<int> r = t;
    CHECK(r(1, 1) == 4);
    CHECK_ERROR(std::out_of_range, t(2, 0), "index 2", "dimension 0", "[2, 3]");
    CHECK_ERROR(std::out_of_range, t(0, -1), "index -1");
    CHECK_ERROR(std::out_of_range, t[6], "index 6");
    CHECK_ERROR(dt::shape_error, t(1), "1 indices", "[2, 3]");
    auto s = dt::full<double>({}, 2.5);
    CHECK(s() == 2.5);
    CHECK(s.item() == 2.5);
    CHECK_ERROR(dt::shape_error, t.item(), "exactly one element", "[2, 3]");
}

TEST_CASE("from_values takes braced lists, vectors and spans, and checks the count") {
    const std::vector<float> v{1, 2, 3, 4};
    CHECK(dt::from_values<float>(v, {2, 2}).to_vector() == v);
    CHECK(dt::from_values<float>(std::span<const float>(v), {4}).to_vector() == v);
    CHECK(dt::from_values<float>({1, 2, 3, 4}, {2, 2}, device("cpu")).to_vector() == v);
    CHECK_ERROR(dt::shape_error, dt::from_values<float>(v, {3}), "devtensor::from_values", "4 values",
                "[3]");
    CHECK_ERROR(dt::shape_error, dt::from_values<float>(v, {2, 3}), "4 values", "[2, 3]", "6");
    CHECK(dt::from_values<float>(std::vector<float>{}, {0, 3}).numel() == 0);
}

TEST_CASE("bool tensors") {
    auto b = dt::from_values<bool>({true, false, true}, {3});
    CHECK(b.to_vector() == std::vector<bool>{true, false, true});
    CHECK(b[1] == false);
}

TEST_CASE("a run-time tensor on an absent GPU cannot be made or reached") {
    const device absent(dt::device_kind::cuda, dt::cuda_device_count() + 6);
    CHECK_ERROR(dt::device_unavailable, dt::from_values<float>({1.f}, {1}, absent),
                dt::to_string(absent).c_str(), "not available");
    CHECK_ERROR(dt::device_unavailable, dt::ones<float>({1}).to(absent), "not available");
    if (!dt::cuda_available()) {
        CHECK_ERROR(dt::device_unavailable, dt::ones<float>({1}).cuda(), "cuda:0 is not available");
        CHECK_ERROR(dt::device_unavailable, dt::ones<float>({2, 3}, dt::device("cuda:0")), "cuda:0");
    }
}

TEST_CASE("zero-size tensors") {
    auto e = dt::zeros<float>({0, 3});
    CHECK(e.numel() == 0);
    CHECK(e.to_vector().empty());
    CHECK(e.cpu().numel() == 0);
    CHECK(e.to(device("cpu")).shape() == dt::shape{0, 3});
    CHECK(dt::empty<float>({0}).data() == nullptr);
    tensor<float> undefined;
    CHECK(!undefined.defined());
    CHECK(undefined.numel() == 1);  // rank 0, like torch's shape []
    CHECK(undefined.data() == nullptr);
}

DEVTENSOR_GPU_TEST_CASE("gpu: cuda(0) twice is the same tensor; the data survives the round trip") {
    std::vector<float> v(1000);
    std::iota(v.begin(), v.end(), 0.f);
    const auto x = dt::from_values<float>(v, {10, 100});
    const auto z = x.cuda(0);
    CHECK(z.cuda(0).is_same(z));
    CHECK(z.to(device("cuda:0")).is_same(z));
    CHECK(!z.cpu().is_same(x));
    CHECK(z.cpu().to_vector() == v);
    CHECK(z.to_vector() == v);
    CHECK(dt::to_string(z.device()) == "cuda:0");
    tensor<float> r = z;
    CHECK(r.device() == device("cuda:0"));
    CHECK(dt::tensor_cast<cuda_device>(r).is_same(z));
    CHECK_ERROR(dt::device_mismatch, r(0, 0), "element access needs host memory", "cuda:0");
    CHECK(dt::from_values<float>({7.f}, {}, cuda_device{}).item() == 7.f);
}
