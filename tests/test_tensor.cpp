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
    CHECK(t[1](1) == 4);  // t[1] is row 1, a view (select(0, 1))
    tensor<int> r = t;
    CHECK(r(1, 1) == 4);
    CHECK_ERROR(dt::index_error, t(2, 0), "index 2", "dimension 0", "[2, 3]");
    CHECK_ERROR(dt::index_error, t(0, -1), "index -1");
    CHECK_ERROR(dt::index_error, t[6], "index 6");
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
    CHECK(b(1) == false);
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
    CHECK(undefined.numel() == 0);  // DESIGN §5: nothing to read
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

// ---- undefined tensors (DESIGN §5): default-constructed and moved-from ----------------------

TEST_CASE_TEMPLATE("a default-constructed tensor is undefined: no elements, no pointer, every use throws",
                   D, dt::cpu_device, dt::device) {
    const dt::tensor<float, D> t;
    CHECK(!t.defined());
    CHECK(t.numel() == 0);
    CHECK(t.data() == nullptr);
    CHECK(dt::to_string(t) == "[ Tensor (undefined) ]");
    CHECK_ERROR(dt::error, t.to_vector(), "to_vector", "undefined");
    CHECK_ERROR(dt::error, t.item(), "item", "undefined");
    CHECK_ERROR(dt::error, t(), "undefined");
    CHECK_ERROR(dt::error, t[0], "undefined");
    CHECK_ERROR(dt::error, t.cpu(), "undefined");
    CHECK_ERROR(dt::error, t + t, "devtensor::operator+", "undefined");
    CHECK_ERROR(dt::error, dt::fill(t, 1), "devtensor::fill", "undefined");
    CHECK_ERROR(dt::error, dt::fill_uniform(t, dt::default_generator(dt::device())), "fill_uniform", "undefined");
    CHECK_ERROR(dt::error, dt::matmul(t, t), "devtensor::matmul", "undefined");
    CHECK_ERROR(dt::error, dt::linear(t, t), "devtensor::linear", "undefined");
    const auto real = dt::ones<float>({2});
    CHECK_ERROR(dt::error, dt::add(real, real, t), "devtensor::add", "out", "undefined");
    CHECK_ERROR(dt::error, dt::add(real, t), "devtensor::add", "b ", "undefined");
}

TEST_CASE("a moved-from tensor is undefined and never reaches the new owner's memory") {
    auto t = dt::from_values<float>({1, 2, 3}, {3});
    const float* const storage = t.data();
    auto keep = std::move(t);
    CHECK(keep.data() == storage);
    CHECK(!t.defined());  // NOLINT(bugprone-use-after-move): that is the point
    CHECK(t.numel() == 0);
    CHECK(t.data() == nullptr);
    CHECK_ERROR(dt::error, t + t, "undefined");
    CHECK(keep.to_vector() == std::vector<float>{1, 2, 3});

    // Move assignment, and the move into a run-time tensor, leave the source undefined too.
    dt::tensor<float, dt::cpu_device> target;
    target = std::move(keep);
    CHECK(!keep.defined());
    CHECK(target.data() == storage);
    dt::tensor<float> erased = std::move(target);
    CHECK(!target.defined());
    CHECK(erased.data() == storage);
}

TEST_CASE("a moved-from 1 MiB tensor cannot write into the block the host pool hands on") {
    const dt::shape big{1 << 18};  // 1 MiB of float: a pooled size class
    auto t = dt::zeros<float>(big);
    {
        auto keep = std::move(t);
    }  // keep's block goes back to the pool ...
    const auto next = dt::zeros<float>(big);  // ... and to this tensor
    CHECK_ERROR(dt::error, t(0) = 123, "undefined");
    CHECK(next.to_vector()[0] == 0.0f);
}

TEST_CASE("element access past the index range names the index in its own type") {
    const auto m = dt::zeros<float>({2, 3});
    CHECK_ERROR(dt::index_error, m(SIZE_MAX, 0), "index 18446744073709551615", "dimension 0");
    CHECK_ERROR(dt::index_error, m(0u, 3u), "index 3", "dimension 1", "[2, 3]");
    CHECK_ERROR(dt::index_error, m(0, -1), "index -1");
}

TEST_CASE("element types: bool, the fixed-width integers, float and double; not long double or chars") {
    static_assert(dt::Element<bool> && dt::Element<float> && dt::Element<double>);
    static_assert(dt::Element<std::int8_t> && dt::Element<std::uint8_t> && dt::Element<std::int16_t> &&
                  dt::Element<std::uint16_t> && dt::Element<std::int32_t> && dt::Element<std::uint32_t> &&
                  dt::Element<std::int64_t> && dt::Element<std::uint64_t>);
    static_assert(!dt::Element<long double>);
    static_assert(!dt::Element<char> && !dt::Element<wchar_t> && !dt::Element<char8_t> &&
                  !dt::Element<char16_t> && !dt::Element<char32_t>);
    static_assert(!dt::Element<const float> && !dt::Element<float*> && !dt::Element<__int128>);
}
