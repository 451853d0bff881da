// CPU benchmarks: each op beside its ceiling, measured in the same run
// (a plain loop doing the same memory traffic, or the same FLOPs).
// Read them as ratios: this machine is shared and noisy.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include <devtensor/devtensor.hpp>

#include <algorithm>
#include <vector>

namespace dt = devtensor;

TEST_CASE("fill: ones into a fresh tensor vs std::fill in place", "[cpu][fill]") {
    constexpr std::int64_t n = 1 << 24;
    std::vector<float> ceiling(n);
    BENCHMARK("std::fill 16M floats (ceiling)") {
        std::fill(ceiling.begin(), ceiling.end(), 1.f);
        return ceiling[7];
    };
    BENCHMARK("ones<float>(16M)") { return dt::ones<float>({n}).data(); };
    auto t = dt::empty<float>({n});
    BENCHMARK("fill(t, 1) 16M in place") {
        dt::fill(t, 1.f);
        return t.data();
    };
}

TEST_CASE("add: same shape and broadcast bias vs a plain loop", "[cpu][add]") {
    constexpr std::int64_t n = 1 << 24;
    const auto a = dt::rand<float>({n}), b = dt::rand<float>({n});
    auto c = dt::empty<float>({n});
    BENCHMARK("c[i] = a[i] + b[i] 16M (ceiling)") {
        const float *pa = a.data(), *pb = b.data();
        float* pc = c.data();
        for (std::int64_t i = 0; i < n; ++i) pc[i] = pa[i] + pb[i];
        return pc[3];
    };
    BENCHMARK("add(a, b, c) 16M") {
        dt::add(a, b, c);
        return c.data();
    };
    const auto x = dt::rand<float>({n / 1024, 1024}), bias = dt::rand<float>({1024});
    auto y = dt::empty<float>({n / 1024, 1024});
    BENCHMARK("add(x [16K, 1024], bias [1024], y)") {
        dt::add(x, bias, y);
        return y.data();
    };
}

TEST_CASE("rand", "[cpu][rand]") {
    auto t = dt::empty<float>({1 << 24});
    dt::generator gen(1);
    BENCHMARK("fill_uniform 16M floats") {
        dt::fill_uniform(t, gen);
        return t.data();
    };
}

TEST_CASE("matmul and linear", "[cpu][gemm]") {
    for (const std::int64_t size : {256, 1024}) {
        const auto a = dt::rand<float>({size, size}), b = dt::rand<float>({size, size});
        BENCHMARK("matmul " + std::to_string(size)) { return dt::matmul(a, b).data(); };
    }
    const auto x = dt::rand<float>({1024, 1024});
    const dt::nn::linear<float, dt::cpu_device> layer(1024, 1024);
    BENCHMARK("linear(1024 -> 1024), batch 1024") { return layer(x).data(); };
    const auto v = dt::rand<float>({1, 1024});
    BENCHMARK("linear(1024 -> 1024), batch 1") { return layer(v).data(); };
}
