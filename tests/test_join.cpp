// cat and stack (values, dims, strided inputs, errors) and matmul as torch.matmul
// (1-D, batched, broadcast batch dims), on the CPU and, with a GPU, equal to it.
#include "test_support.hpp"

#include <cstring>
#include <vector>

TEST_CASE_TEMPLATE("cat and stack along any dim, strided and empty inputs included", T, float, std::int64_t, bool) {
    const auto a = dt::arange<std::int64_t>(0, 6).view({2, 3}).template to<T>();
    const auto b = dt::arange<std::int64_t>(6, 9).view({1, 3}).template to<T>();
    const auto c0 = dt::cat(std::vector{a, b});
    CHECK(c0.shape() == dt::shape{3, 3});
    CHECK(c0.to_vector() == dt::arange<std::int64_t>(0, 9).template to<T>().to_vector());
    const auto c1 = dt::cat(std::vector{a, a.narrow(1, 1, 2)}, -1);  // a strided input
    CHECK(c1.shape() == dt::shape{2, 5});
    CHECK(c1.template to<std::int64_t>().to_vector() ==
          dt::from_values<std::int64_t>({0, 1, 2, 1, 2, 3, 4, 5, 4, 5}, {2, 5}).template to<T>().template to<std::int64_t>().to_vector());
    CHECK(dt::cat(std::vector{a, dt::zeros<T>({0, 3})}).shape() == dt::shape{2, 3});
    const auto s = dt::stack(std::vector{a, a.t().t()}, 1);
    CHECK(s.shape() == dt::shape{2, 2, 3});
    CHECK(dt::stack(std::vector{a, a}, -1).shape() == dt::shape{2, 3, 2});
    CHECK(dt::stack(std::vector{a}).shape() == dt::shape{1, 2, 3});
    CHECK(dt::equal(s.select(1, 0), a));
    CHECK(c0.origin().op == std::string("cat"));
    CHECK_ERROR(dt::shape_error, (void)dt::cat(std::vector{a, b.t()}), "devtensor::cat", "tensors[1]", "[3, 1]");
    CHECK_ERROR(dt::shape_error, (void)dt::stack(std::vector{a, b}), "devtensor::stack", "tensors[1]");
    CHECK_ERROR(dt::shape_error, (void)dt::cat(std::vector<dt::tensor<T, dt::cpu_device>>{}), "devtensor::cat");
    CHECK_ERROR(dt::index_error, (void)dt::cat(std::vector{a, a}, 2), "devtensor::cat", "out of range");
    dt::tensor<T, dt::cpu_device> undefined;
    CHECK_ERROR(dt::error, (void)dt::cat(std::vector{a, undefined}), "devtensor::cat", "tensors[1]", "undefined");
}

TEST_CASE_TEMPLATE("matmul as torch.matmul: 1-D, batched, broadcast batch dims, empty", T, float, double) {
    dt::generator gen(3);
    const auto a = dt::rand<T>({4, 3, 5}, dt::cpu_device{}, gen), b = dt::rand<T>({5, 2}, dt::cpu_device{}, gen);
    const auto c = dt::matmul(a, b);
    CHECK(c.shape() == dt::shape{4, 3, 2});
    for (std::int64_t i = 0; i < 4; ++i) {
        const auto want = dt::matmul(a[i].contiguous(), b).to_vector();
        const auto got = c[i].contiguous().to_vector();
        CHECK(std::memcmp(got.data(), want.data(), want.size() * sizeof(T)) == 0);  // the same order, bit for bit
    }
    const auto v = dt::rand<T>({5}, dt::cpu_device{}, gen);
    CHECK(dt::matmul(v, v).dim() == 0);
    CHECK(dt::matmul(a, v).shape() == dt::shape{4, 3});
    CHECK(dt::matmul(v, b).shape() == dt::shape{2});
    CHECK(dt::matmul(dt::rand<T>({2, 1, 3, 5}, dt::cpu_device{}, gen), dt::rand<T>({6, 5, 4}, dt::cpu_device{}, gen)).shape() ==
          dt::shape{2, 6, 3, 4});
    CHECK(dt::matmul(a.transpose(1, 2), dt::rand<T>({3, 7}, dt::cpu_device{}, gen)).shape() == dt::shape{4, 5, 7});
    const auto z = dt::matmul(dt::ones<T>({2, 0}), dt::ones<T>({0, 3}));
    CHECK(z.to_vector() == std::vector<T>(6, T(0)));
    CHECK(dt::matmul(dt::ones<T>({0, 4, 2}), dt::ones<T>({2, 3})).shape() == dt::shape{0, 4, 3});
    CHECK_ERROR(dt::shape_error, (void)dt::matmul(a, a), "devtensor::matmul", "[4, 3, 5]");
    CHECK_ERROR(dt::shape_error, (void)dt::matmul(dt::ones<T>({2, 3, 4}), dt::ones<T>({3, 4, 2})), "devtensor::matmul");
    CHECK_ERROR(dt::shape_error, (void)dt::matmul(dt::ones<T>({}), b), "devtensor::matmul");
}

#if DEVTENSOR_HAS_CUDA
DEVTENSOR_GPU_TEST_CASE("gpu cat, stack and batched matmul match the cpu bit for bit") {
    dt::generator gen(6);
    const auto a = dt::rand<float>({3, 40, 30}, dt::cpu_device{}, gen), b = dt::rand<float>({30, 20}, dt::cpu_device{}, gen);
    CHECK(dt::matmul(a.cuda(), b.cuda()).to_vector() == dt::matmul(a, b).to_vector());
    CHECK(dt::cat(std::vector{a.cuda(), a.cuda().narrow(1, 5, 10)}, 1).to_vector() ==
          dt::cat(std::vector{a, a.narrow(1, 5, 10)}, 1).to_vector());
    CHECK(dt::stack(std::vector{b.cuda(), b.cuda()}, 2).to_vector() == dt::stack(std::vector{b, b}, 2).to_vector());
}
#endif

TEST_CASE_TEMPLATE("gather and index_select pick elements by index, strided inputs included", T, float, std::int32_t,
                   std::int8_t) {
    const auto x = dt::arange<std::int64_t>(0, 12).view({3, 4}).template to<T>();
    const auto as = [](const auto& t) { return t.template to<std::int64_t>().to_vector(); };
    const auto idx = dt::from_values<std::int64_t>({2, 0, 2}, {3});
    CHECK(as(dt::index_select(x, 0, idx)) == std::vector<std::int64_t>{8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11});
    CHECK(as(dt::index_select(x, 1, idx)) == std::vector<std::int64_t>{2, 0, 2, 6, 4, 6, 10, 8, 10});
    CHECK(dt::index_select(x, -1, idx).shape() == dt::shape{3, 3});
    CHECK(as(dt::index_select(x.t(), 0, dt::from_values<std::int64_t>({3}, {1}))) == std::vector<std::int64_t>{3, 7, 11});
    CHECK(dt::index_select(x, 0, dt::zeros<std::int64_t>({0})).shape() == dt::shape{0, 4});
    const auto g = dt::from_values<std::int64_t>({0, 3, 1, 1, 2, 0}, {3, 2});
    CHECK(as(dt::gather(x, 1, g)) == std::vector<std::int64_t>{0, 3, 5, 5, 10, 8});
    const auto g0 = dt::from_values<std::int64_t>({2, 1, 0, 0}, {1, 4});
    CHECK(as(dt::gather(x, 0, g0)) == std::vector<std::int64_t>{8, 5, 2, 3});
    CHECK(as(dt::gather(x.narrow(1, 1, 3), 1, dt::from_values<std::int64_t>({2, 0}, {1, 2}))) == std::vector<std::int64_t>{3, 1});
    CHECK(dt::gather(x, 1, g).origin().op == std::string("gather"));
    const auto b = dt::from_values<bool>({true, false, false}, {3});
    CHECK(dt::index_select(b, 0, idx).to_vector() == std::vector<bool>{false, true, false});
    CHECK_ERROR(dt::index_error, (void)dt::index_select(x, 0, dt::from_values<std::int64_t>({3}, {1})), "devtensor::index_select",
                "index 3 is out of bounds for dimension 0 with size 3");
    {  // one bad index among many, met by any of the worker threads; the record is cleared after
        const int saved = dt::get_num_threads();
        dt::set_num_threads(7);
        auto many = dt::zeros<std::int64_t>({1 << 16});
        many.data()[40000] = 3;
        CHECK_ERROR(dt::index_error, (void)dt::index_select(x, 0, many), "index 3 is out of bounds");
        many.data()[40000] = 2;
        CHECK(dt::index_select(x, 0, many).numel() == (1 << 16) * x.size(1));
        dt::set_num_threads(saved);
    }
    CHECK_ERROR(dt::index_error, (void)dt::gather(x, 1, dt::from_values<std::int64_t>({-1}, {1, 1})), "devtensor::gather",
                "index -1");
    CHECK_ERROR(dt::shape_error, (void)dt::gather(x, 1, dt::zeros<std::int64_t>({4, 1})), "devtensor::gather", "[4, 1]");
    CHECK_ERROR(dt::shape_error, (void)dt::index_select(x, 1, dt::zeros<std::int64_t>({2, 2})), "devtensor::index_select");
}

#if DEVTENSOR_HAS_CUDA
DEVTENSOR_GPU_TEST_CASE("gpu gather and index_select match the cpu") {
    dt::generator gen(2);
    const auto x = dt::rand<float>({50, 60}, dt::cpu_device{}, gen);
    const auto i = dt::randint<std::int64_t>(0, 50, {70}, dt::cpu_device{}, gen);
    const auto g = dt::randint<std::int64_t>(0, 60, {50, 80}, dt::cpu_device{}, gen);
    CHECK(dt::index_select(x.cuda(), 0, i.cuda()).to_vector() == dt::index_select(x, 0, i).to_vector());
    CHECK(dt::gather(x.cuda().t(), 0, g.t().cuda()).to_vector() == dt::gather(x.t(), 0, g.t()).to_vector());
    // found by the kernel, reported at the next synchronisation: here, the copy to the host
    const auto bad = dt::index_select(x.cuda(), 1, (i + 100).cuda());
    CHECK_ERROR(dt::index_error, (void)bad.cpu(), "devtensor::index_select", "index 1", "with size 60",
                "next synchronisation");
    CHECK(dt::index_select(x.cuda(), 0, i.cuda()).to_vector() == dt::index_select(x, 0, i).to_vector());  // cleared
}
#endif
