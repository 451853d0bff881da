// random.hpp and ops/random.hpp: Philox4x32-10 against Random123, the
// generator, and rand's promise: element i depends only on (seed, offset, i).
#include "test_support.hpp"

#include <Random123/philox.h>

#include <cstdint>
#include <numeric>
#include <vector>

TEST_CASE("philox4x32_10 is bit for bit Random123's Philox4x32-10") {
    r123::Philox4x32_R<10> reference;
    const dt::philox4x32_10 ours;
    std::uint32_t state = 12345;  // a small LCG picks counters and keys
    const auto next = [&] { return state = state * 1664525u + 1013904223u; };
    for (int trial = 0; trial < 2000; ++trial) {
        const r123::Philox4x32_R<10>::ctr_type c = {{next(), next(), next(), next()}};
        const r123::Philox4x32_R<10>::key_type k = {{next(), next()}};
        const auto expected = reference(c, k);
        const auto got = ours({c[0], c[1], c[2], c[3]}, {k[0], k[1]});
        for (int i = 0; i < 4; ++i) CHECK(got[static_cast<std::size_t>(i)] == expected[i]);
    }
    // the known-answer vector of the Random123 distribution (kat_vectors: philox4x32 10 zeros)
    const auto zero = ours({0, 0, 0, 0}, {0, 0});
    CHECK(zero == dt::philox4x32_10::counter_type{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u});
}

TEST_CASE("uniform floats are in [0, 1) on a 2^-24 grid, doubles in [0, 1)") {
    CHECK(dt::detail::uniform_float(0) == 0.f);
    CHECK(dt::detail::uniform_float(0xffffffffu) < 1.f);
    CHECK(dt::detail::uniform_float(0xffffffffu) == 1.f - 0x1p-24f);
    CHECK(dt::detail::uniform_double(0xffffffffu, 0xffffffffu) < 1.0);
    const auto t = dt::rand<float>({10000});
    for (const float x : t.to_vector()) {
        CHECK(x >= 0.f);
        CHECK(x < 1.f);
    }
    const auto v = t.to_vector();
    const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
    CHECK(mean == doctest::Approx(0.5).epsilon(0.02));
}

TEST_CASE("element i of rand is Philox(counter = offset/4 + i/4, key = seed) lane i%4") {
    dt::generator gen(42);
    gen.set_offset(8);
    const auto t = dt::rand<float>({13}, dt::cpu_device{}, gen);
    const dt::philox4x32_10 philox;
    for (std::uint32_t i = 0; i < 13; ++i) {
        const auto r = philox({2 + i / 4, 0, 0, 0}, {42, 0});
        CHECK(t.data()[i] == dt::detail::uniform_float(r[i % 4]));
    }
    CHECK(gen.offset() == 8 + 16);  // 13 numbers rounded up to whole blocks
}

TEST_CASE("the same generator state gives the same numbers; the stream advances") {
    dt::generator a(7), b(7);
    const auto x = dt::rand<float>({5, 7}, dt::cpu_device{}, a);
    const auto y = dt::rand<float>({5, 7}, dt::cpu_device{}, b);
    CHECK(x.to_vector() == y.to_vector());
    const auto z = dt::rand<float>({5, 7}, dt::cpu_device{}, a);
    CHECK(z.to_vector() != x.to_vector());
    dt::generator c(8);
    CHECK(dt::rand<float>({5, 7}, dt::cpu_device{}, c).to_vector() != x.to_vector());
    a.manual_seed(7);
    CHECK(dt::rand<float>({5, 7}, dt::cpu_device{}, a).to_vector() == x.to_vector());
    dt::generator copy = a;
    CHECK(copy.offset() == a.offset());
    CHECK(dt::rand<double>({3}, dt::cpu_device{}, copy).to_vector() ==
          dt::rand<double>({3}, dt::cpu_device{}, a).to_vector());
}

TEST_CASE("a prefix of a larger draw is the smaller draw: element i depends on i only") {
    dt::generator a(99), b(99);
    const auto small = dt::rand<float>({7}, dt::cpu_device{}, a).to_vector();
    const auto large = dt::rand<float>({1000, 1000}, dt::cpu_device{}, b).to_vector();
    CHECK(std::equal(small.begin(), small.end(), large.begin()));
}

TEST_CASE("manual_seed seeds the default generator of every device") {
    dt::manual_seed(123);
    const auto x = dt::rand<float>({4});
    dt::manual_seed(123);
    CHECK(dt::rand<float>({4}).to_vector() == x.to_vector());
    CHECK(dt::default_generator(dt::device("cuda:3")).seed() == 123);
    CHECK(dt::default_generator(dt::device("cuda:3")).offset() == 0);
    CHECK(&dt::default_generator(dt::cpu_device{}) == &dt::default_generator(dt::device("cpu")));
}

TEST_CASE("rand is the same for every thread count") {
    const int saved = dt::get_num_threads();
    std::vector<std::vector<double>> draws;
    for (const int threads : {1, 2, 3, 8}) {
        dt::set_num_threads(threads);
        dt::generator gen(5);
        draws.push_back(dt::rand<double>({3, 100001}, dt::cpu_device{}, gen).to_vector());
    }
    dt::set_num_threads(saved);
    for (const auto& d : draws) CHECK(d == draws.front());
}

TEST_CASE("zero-size rand consumes nothing") {
    dt::generator gen(1);
    CHECK(dt::rand<float>({0, 4}, dt::cpu_device{}, gen).numel() == 0);
    CHECK(gen.offset() == 0);
}

#if DEVTENSOR_HAS_CUDA
DEVTENSOR_GPU_TEST_CASE("gpu rand is bit-identical to cpu rand, any size") {
    for (const std::int64_t n : {1, 3, 4, 7, 33, 1000, 1 << 20, (1 << 20) + 5}) {
        CAPTURE(n);
        dt::generator cpu_gen(2024), gpu_gen(2024);
        CHECK(dt::rand<float>({n}, dt::cuda_device{0}, gpu_gen).to_vector() ==
              dt::rand<float>({n}, dt::cpu_device{}, cpu_gen).to_vector());
        CHECK(dt::rand<double>({n}, dt::device("cuda:0"), gpu_gen).to_vector() ==
              dt::rand<double>({n}, dt::cpu_device{}, cpu_gen).to_vector());
        CHECK(cpu_gen.offset() == gpu_gen.offset());
    }
}
#endif

TEST_CASE("the vector Philox paths give the scalar bits, across the 32-bit counter carry") {
    namespace cpu = dt::backend_cpu;
    for (const std::uint64_t seed : {std::uint64_t{1}, std::uint64_t{0xFFFFFFFFFF}})
        for (const std::uint64_t first_block : {std::uint64_t{0}, std::uint64_t{0xFFFFFFFF} - 5})
            for (const std::int64_t n : {1, 37, 1000, 4099, 100003}) {
                CAPTURE(seed);
                CAPTURE(first_block);
                CAPTURE(n);
                std::vector<float> scalar(static_cast<std::size_t>(n));
                for (std::int64_t q = 0; q < (n + 3) / 4; ++q)
                    dt::detail::uniform_block(scalar.data(), n, seed, first_block, q);
                std::vector<float> dispatched(scalar.size());
                cpu::uniform(dispatched.data(), n, seed, first_block);  // what rand runs here
                CHECK(dispatched == scalar);
#if DEVTENSOR_HAS_X86_KERNELS
                const std::int64_t whole = n / 4 / 16 * 16;  // blocks both vector widths cover
                std::vector<float> vector(scalar.begin(), scalar.end());
                std::fill(vector.begin(), vector.begin() + whole * 4, -1.f);
                if (cpu::simd::best_isa() >= cpu::simd::isa::avx2) {
                    cpu::avx2::uniform_float_blocks(vector.data(), seed, first_block, 0, whole);
                    CHECK(vector == scalar);
                }
                std::fill(vector.begin(), vector.begin() + whole * 4, -1.f);
                if (cpu::simd::best_isa() >= cpu::simd::isa::avx512) {
                    cpu::avx512::uniform_float_blocks(vector.data(), seed, first_block, 0, whole);
                    CHECK(vector == scalar);
                }
#endif
            }
}
