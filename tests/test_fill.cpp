// ops/fill.hpp: fill, ones, zeros, full on every device.
#include "test_support.hpp"

#include <vector>

TEST_CASE_TEMPLATE("ones, zeros, full", T, float, double, std::int32_t, std::int64_t, std::uint8_t) {
    CHECK(dt::ones<T>({2, 3}).to_vector() == std::vector<T>(6, T{1}));
    CHECK(dt::zeros<T>({4}, dt::device("cpu")).to_vector() == std::vector<T>(4, T{0}));
    CHECK(dt::full<T>({3, 1, 2}, T{7}).to_vector() == std::vector<T>(6, T{7}));
    auto t = dt::zeros<T>({100000});
    dt::fill(t, T{3});
    CHECK(t.to_vector() == std::vector<T>(100000, T{3}));
    CHECK(dt::ones<T>({0, 2}).numel() == 0);
    CHECK(dt::ones<T>({}).item() == T{1});
}

TEST_CASE("fill on large tensors uses every thread and misses nothing") {
    const int saved = dt::get_num_threads();
    dt::set_num_threads(3);
    const auto t = dt::full<float>({1000, 1001}, 2.5f);
    dt::set_num_threads(saved);
    const auto v = t.to_vector();
    CHECK(std::count(v.begin(), v.end(), 2.5f) == 1001000);
}

#if DEVTENSOR_HAS_CUDA
DEVTENSOR_GPU_TEST_CASE("gpu fill matches the cpu") {
    for (const std::int64_t n : {1, 7, 33, 1000, 1 << 21}) {
        CHECK(dt::ones<float>({n}, dt::cuda_device{}).to_vector() == dt::ones<float>({n}).to_vector());
        CHECK(dt::full<double>({n}, -2.0, dt::device("cuda:0")).to_vector() ==
              dt::full<double>({n}, -2.0).to_vector());
        CHECK(dt::zeros<std::int8_t>({n}, dt::cuda_device{}).to_vector() ==
              dt::zeros<std::int8_t>({n}).to_vector());
        CHECK(dt::full<std::int32_t>({n}, -3, dt::cuda_device{}).to_vector() == std::vector<std::int32_t>(static_cast<std::size_t>(n), -3));
        CHECK(dt::full<std::int64_t>({n}, 5, dt::cuda_device{}).to_vector() == std::vector<std::int64_t>(static_cast<std::size_t>(n), 5));
    }
    CHECK(dt::ones<float>({0}, dt::cuda_device{}).numel() == 0);
}
#endif
