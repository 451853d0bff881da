// random.hpp and ops/random.hpp: Philox4x32-10 against Random123, the
// generator, and the promise of rand, randn and randint: element i depends
// only on (seed, offset, i).
#include "test_support.hpp"

#include <Random123/philox.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <type_traits>
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
                cpu::philox_fill(dt::detail::uniform_distribution{}, dispatched.data(), n, seed,
                                 first_block);  // what rand runs here
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

// ---- randn -----------------------------------------------------------------------------------

namespace {
/// Sample moments of a draw, in double.
struct moments {
    double mean = 0, variance = 0, beyond_two = 0, pair_correlation = 0, largest = 0;
    template <class T>
    explicit moments(const std::vector<T>& v) {
        const auto n = static_cast<double>(v.size());
        for (const T x : v) mean += static_cast<double>(x);
        mean /= n;
        for (std::size_t i = 0; i < v.size(); ++i) {
            const double x = static_cast<double>(v[i]);
            variance += (x - mean) * (x - mean);
            beyond_two += std::abs(x) > 2 ? 1 : 0;
            largest = std::max(largest, std::abs(x));
            if (i % 2 == 0 && i + 1 < v.size()) pair_correlation += x * static_cast<double>(v[i + 1]);
        }
        variance /= n - 1;
        beyond_two /= n;
        pair_correlation /= n / 2;
    }
};
}  // namespace

TEST_CASE_TEMPLATE("randn: mean 0, variance 1, normal tails, within 5 sigma over 10^6 samples", T, float, double) {
    dt::generator gen(31337);
    const std::int64_t n = 1000000;
    const auto v = dt::randn<T>({n}, dt::cpu_device{}, gen).to_vector();
    const moments m(v);
    const double sn = std::sqrt(static_cast<double>(n));
    CHECK(std::abs(m.mean) < 5 / sn);                        // sd of the mean: 1/sqrt(n)
    CHECK(std::abs(m.variance - 1) < 5 * std::sqrt(2.) / sn);  // sd of the variance: sqrt(2/n)
    const double p2 = 0.04550026389635842;                      // P(|z| > 2)
    CHECK(std::abs(m.beyond_two - p2) < 5 * std::sqrt(p2 * (1 - p2)) / sn);
    CHECK(std::abs(m.pair_correlation) < 5 * std::sqrt(2.) / sn);  // z0, z1 of one pair are independent
    CHECK(m.largest < (sizeof(T) == 4 ? 5.8 : 8.6));                 // sqrt(-2 ln 2^-24), sqrt(-2 ln 2^-53)
    CHECK(m.largest > 4);
    CHECK(gen.offset() == static_cast<std::uint64_t>(n) * dt::detail::philox_words_per_element<T>);
}

TEST_CASE("randn is Box–Muller on Philox: element i from block offset/4 + i/E") {
    dt::generator gen(42);
    gen.set_offset(8);
    const auto f = dt::randn<float>({13}, dt::cpu_device{}, gen).to_vector();
    const auto d = dt::randn<double>({5}, dt::cpu_device{}, gen).to_vector();
    CHECK(gen.offset() == 8 + 16 + 12);
    const dt::philox4x32_10 philox;
    const long double two_pi = 6.283185307179586476925286766559L;
    for (std::uint32_t i = 0; i < 13; ++i) {
        const auto r = philox({2 + i / 4, 0, 0, 0}, {42, 0});
        const std::uint32_t pair = i % 4 / 2;
        const long double u1 = ((r[2 * pair] >> 8) + 1) * 0x1p-24L, u2 = (r[2 * pair + 1] >> 8) * 0x1p-24L;
        const long double radius = std::sqrt(-2 * std::log(u1));
        const long double z = radius * (i % 2 == 0 ? std::cos(two_pi * u2) : std::sin(two_pi * u2));
        CAPTURE(i);
        CHECK(std::abs(f[i] - z) <= 4e-7L * std::max(1.0L, std::abs(z)));
    }
    for (std::uint32_t i = 0; i < 5; ++i) {
        const auto r = philox({6 + i / 2, 0, 0, 0}, {42, 0});
        const long double u1 = ((((std::uint64_t{r[0]} << 32) | r[1]) >> 11) + 1) * 0x1p-53L;
        const long double u2 = (((std::uint64_t{r[2]} << 32) | r[3]) >> 11) * 0x1p-53L;
        const long double radius = std::sqrt(-2 * std::log(u1));
        const long double z = radius * (i % 2 == 0 ? std::cos(two_pi * u2) : std::sin(two_pi * u2));
        CAPTURE(i);
        CHECK(std::abs(d[i] - z) <= 1e-15L * std::max(1.0L, std::abs(z)));
    }
}

TEST_CASE("randn: the same state gives the same bits, any thread count; the stream advances") {
    const int saved = dt::get_num_threads();
    std::vector<std::vector<float>> floats;
    std::vector<std::vector<double>> doubles;
    for (const int threads : {1, 2, 7}) {
        dt::set_num_threads(threads);
        dt::generator gen(5);
        floats.push_back(dt::randn<float>({3, 100003}, dt::cpu_device{}, gen).to_vector());
        doubles.push_back(dt::randn<double>({100001, 3}, dt::cpu_device{}, gen).to_vector());
    }
    dt::set_num_threads(saved);
    for (const auto& f : floats) CHECK(std::memcmp(f.data(), floats.front().data(), f.size() * 4) == 0);
    for (const auto& d : doubles) CHECK(std::memcmp(d.data(), doubles.front().data(), d.size() * 8) == 0);

    dt::generator a(7), b(7);
    const auto x = dt::randn<double>({5, 7}, dt::cpu_device{}, a).to_vector();
    CHECK(dt::randn<double>({5, 7}, dt::cpu_device{}, b).to_vector() == x);
    CHECK(dt::randn<double>({5, 7}, dt::cpu_device{}, a).to_vector() != x);
    // a prefix of a larger draw is the smaller draw
    dt::generator c(99), e(99);
    const auto small = dt::randn<float>({7}, dt::cpu_device{}, c).to_vector();
    const auto large = dt::randn<float>({1000, 1000}, dt::cpu_device{}, e).to_vector();
    CHECK(std::equal(small.begin(), small.end(), large.begin()));
    // the default generator, reseeded
    dt::manual_seed(3);
    const auto y = dt::randn<float>({9});
    dt::manual_seed(3);
    CHECK(dt::randn<float>({9}, dt::device("cpu")).to_vector() == y.to_vector());
    dt::generator z(1);
    CHECK(dt::randn<float>({0, 3}, dt::cpu_device{}, z).numel() == 0);
    CHECK(z.offset() == 0);
}

// ---- randint ---------------------------------------------------------------------------------

TEST_CASE_TEMPLATE("randint: values in [low, high), every value drawn, near-uniform counts", T, std::int8_t,
                   std::uint8_t, std::int16_t, std::int32_t, std::int64_t, std::uint64_t, float, double) {
    dt::generator gen(11);
    const std::int64_t low = std::is_signed_v<T> ? -3 : 2, high = low + 7, n = 70000;
    const auto v = dt::randint<T>(low, high, {n}, dt::cpu_device{}, gen).to_vector();
    CHECK(gen.offset() == static_cast<std::uint64_t>(2 * n));
    std::vector<std::int64_t> counts(7);
    for (const T x : v) {
        const auto i = static_cast<std::int64_t>(x);
        REQUIRE(static_cast<T>(i) == x);  // an integer value
        REQUIRE(i >= low);
        REQUIRE(i < high);
        ++counts[static_cast<std::size_t>(i - low)];
    }
    const double expected = static_cast<double>(n) / 7, sd = std::sqrt(expected * 6 / 7);
    for (const std::int64_t c : counts) CHECK(std::abs(static_cast<double>(c) - expected) < 5 * sd);
}

TEST_CASE("randint: the widest ranges, the same bits for any thread count, and the stream") {
    dt::generator gen(12);
    constexpr auto min = std::numeric_limits<std::int64_t>::min(), max = std::numeric_limits<std::int64_t>::max();
    const auto wide = dt::randint(min, max, {1000}, dt::cpu_device{}, gen).to_vector();
    CHECK(std::count_if(wide.begin(), wide.end(), [](std::int64_t x) { return x < 0; }) > 400);
    CHECK(std::count_if(wide.begin(), wide.end(), [](std::int64_t x) { return x > 0; }) > 400);
    const auto one = dt::randint<std::int32_t>(5, 6, {100}, dt::cpu_device{}, gen).to_vector();
    CHECK(std::all_of(one.begin(), one.end(), [](std::int32_t x) { return x == 5; }));
    const auto bytes = dt::randint<std::uint8_t>(0, 256, {10000}).to_vector();
    CHECK(*std::max_element(bytes.begin(), bytes.end()) == 255);
    CHECK(*std::min_element(bytes.begin(), bytes.end()) == 0);
    const auto floats = dt::randint<float>(-(1 << 24), 1 << 24, {1000}).to_vector();
    CHECK(std::all_of(floats.begin(), floats.end(), [](float x) { return x == std::floor(x); }));

    const int saved = dt::get_num_threads();
    std::vector<std::vector<std::int64_t>> draws;
    for (const int threads : {1, 2, 7}) {
        dt::set_num_threads(threads);
        dt::generator g(5);
        draws.push_back(dt::randint(-1000, 1000, {3, 100001}, dt::cpu_device{}, g).to_vector());
    }
    dt::set_num_threads(saved);
    for (const auto& d : draws) CHECK(d == draws.front());

    dt::generator a(7), b(7);
    const auto x = dt::randint(0, 100, {33}, dt::cpu_device{}, a).to_vector();
    CHECK(a.offset() == 68);  // 66 words, rounded up to whole blocks
    CHECK(dt::randint(0, 100, {33}, dt::cpu_device{}, b).to_vector() == x);
    CHECK(dt::randint(0, 100, {33}, dt::cpu_device{}, a).to_vector() != x);
    // element i: low + high 64 bits of (words 2(i%2), 2(i%2)+1 of block i/2) * range
    dt::generator c(42);
    const auto y = dt::randint(10, 20, {5}, dt::cpu_device{}, c).to_vector();
    const dt::philox4x32_10 philox;
    for (std::uint32_t i = 0; i < 5; ++i) {
        const auto r = philox({i / 2, 0, 0, 0}, {42, 0});
        const std::uint64_t u = std::uint64_t{r[2 * (i % 2)]} << 32 | r[2 * (i % 2) + 1];
        using u128 = unsigned __int128;
        CHECK(y[i] == 10 + static_cast<std::int64_t>(static_cast<u128>(u) * 10 >> 64));
    }
    dt::generator z(1);
    CHECK(dt::randint(0, 3, {0}, dt::cpu_device{}, z).numel() == 0);
    CHECK(z.offset() == 0);
}

TEST_CASE("randint refuses an empty range and one that does not fit the type, naming the values") {
    CHECK_THROWS_WITH_AS((void)dt::randint(5, 5, {3}), doctest::Contains("low = 5, high = 5"), dt::error);
    CHECK_THROWS_WITH_AS((void)dt::randint(5, 2, {3}), doctest::Contains("devtensor::randint: expects low < high"), dt::error);
    CHECK_THROWS_WITH_AS((void)dt::randint<std::int8_t>(0, 1000, {3}), doctest::Contains("does not fit torch.int8"),
                         dt::error);
    CHECK_THROWS_WITH_AS((void)dt::randint<std::uint8_t>(-1, 10, {3}), doctest::Contains("torch.uint8"), dt::error);
    CHECK_THROWS_WITH_AS((void)dt::randint<float>(0, (1 << 24) + 2, {3}), doctest::Contains("torch.float32"), dt::error);
    CHECK_NOTHROW((void)dt::randint<std::int8_t>(-128, 128, {3}));
    dt::generator gen(1);
    CHECK_THROWS((void)dt::randint(1, 0, {3}, dt::cpu_device{}, gen));
    CHECK(gen.offset() == 0);  // nothing drawn
}

#if DEVTENSOR_HAS_CUDA
DEVTENSOR_GPU_TEST_CASE("gpu randn and randint are bit-identical to the cpu's, any size") {
    for (const std::int64_t n : {1, 3, 4, 7, 33, 1000, 1 << 20, (1 << 20) + 5}) {
        CAPTURE(n);
        dt::generator cpu_gen(2024), gpu_gen(2024);
        const auto gf = dt::randn<float>({n}, dt::cuda_device{0}, gpu_gen).to_vector();
        const auto cf = dt::randn<float>({n}, dt::cpu_device{}, cpu_gen).to_vector();
        CHECK(std::memcmp(gf.data(), cf.data(), gf.size() * sizeof(float)) == 0);
        const auto gd = dt::randn<double>({n}, dt::device("cuda:0"), gpu_gen).to_vector();
        const auto cd = dt::randn<double>({n}, dt::cpu_device{}, cpu_gen).to_vector();
        CHECK(std::memcmp(gd.data(), cd.data(), gd.size() * sizeof(double)) == 0);
        CHECK(dt::randint<std::int32_t>(-5, 1000, {n}, dt::cuda_device{0}, gpu_gen).to_vector() ==
              dt::randint<std::int32_t>(-5, 1000, {n}, dt::cpu_device{}, cpu_gen).to_vector());
        CHECK(dt::randint<double>(0, 1 << 20, {n}, dt::device("cuda:0"), gpu_gen).to_vector() ==
              dt::randint<double>(0, 1 << 20, {n}, dt::cpu_device{}, cpu_gen).to_vector());
        CHECK(cpu_gen.offset() == gpu_gen.offset());
    }
}
#endif
