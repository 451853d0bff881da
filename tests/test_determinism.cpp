// DESIGN §15, the determinism contract, for matmul, linear and rand: the same
// bits at 1, 2 and 7 CPU threads, on every ISA path this CPU has (each called
// directly), from the CUDA kernels (run by the block emulator), and from a plain
// loop written here that follows the order detail/gemm_order.hpp documents:
//  - m > 16: one fma chain over all of k in order, then + bias;
//  - m <= 16: L = 64 / sizeof(T) interleaved fma chains (chain l takes p = l mod L,
//    k zero-padded to a multiple of L), folded c[i] += c[i + w] for w = L/2 .. 1,
//    then + bias.
#include "cuda_emulator.hpp"  // emulate_launch
#include "test_support.hpp"

#include <algorithm>
#include <initializer_list>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace {
namespace cpu = dt::backend_cpu;
namespace cu = dt::backend_cuda;

/// The documented order, element by element, with std::fma: the reference.
template <class T>
std::vector<T> plain_loop(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, const T* b,
                          std::int64_t b_row, std::int64_t b_col, const T* bias) {
    std::vector<T> c(static_cast<std::size_t>(m * n));
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
            const auto av = [&](std::int64_t p) { return a[i * k + p]; };
            const auto bv = [&](std::int64_t p) { return b[p * b_row + j * b_col]; };
            T sum{};
            if (m <= 16) {
                constexpr int L = 64 / static_cast<int>(sizeof(T));
                T chain[L] = {};
                for (std::int64_t p0 = 0; p0 < k; p0 += L)
                    for (int l = 0; l < L; ++l)
                        chain[l] = p0 + l < k ? std::fma(av(p0 + l), bv(p0 + l), chain[l]) : std::fma(T{}, T{}, chain[l]);
                for (int w = L / 2; w > 0; w /= 2)
                    for (int l = 0; l < w; ++l) chain[l] = chain[l] + chain[l + w];
                sum = chain[0];
            } else {
                for (std::int64_t p = 0; p < k; ++p) sum = std::fma(av(p), bv(p), sum);
            }
            c[static_cast<std::size_t>(i * n + j)] = bias ? sum + bias[j] : sum;
        }
    return c;
}

/// The first element whose bits differ, for the failure message.
template <class T>
std::string first_difference(const std::vector<T>& got, const std::vector<T>& expected) {
    for (std::size_t i = 0; i < got.size() && i < expected.size(); ++i)
        if (std::memcmp(&got[i], &expected[i], sizeof(T)) != 0)
            return "element " + std::to_string(i) + ": " + std::to_string(got[i]) + " vs " + std::to_string(expected[i]);
    return got.size() == expected.size() ? "none" : "sizes differ";
}

#define REQUIRE_SAME_BITS(got, expected)                         \
    do {                                                         \
        INFO("first difference: ", first_difference(got, expected)); \
        REQUIRE(same_bits(got, expected));                       \
    } while (0)

struct mnk {
    std::int64_t m, n, k;
};

// GEMM shapes (k across the AVX2 and AVX-512 cache blocks of 256 and 768, enough work
// to split over 7 threads), odd shapes, and GEMV shapes (m <= 16) up to k = 5000.
const std::vector<mnk> shapes = {
    {64, 96, 300}, {7, 1000, 513}, {200, 300, 700}, {40, 50, 1600}, {17, 33, 385},
    {1, 1, 1},     {1, 2, 3},      {2, 3, 1},       {3, 3, 3},      {3, 1, 2},     {5, 4, 0},
    {1, 300, 5000}, {4, 129, 4097}, {16, 70, 1000}, {1, 33, 17},    {4, 7, 15},    {16, 20, 16}};

class saved_threads {
    int saved_ = dt::get_num_threads();

public:
    ~saved_threads() { dt::set_num_threads(saved_); }
};

/// The ISA paths this CPU runs; the others are named in a MESSAGE.
std::vector<cpu::simd::isa> isa_paths() {
    std::vector<cpu::simd::isa> paths = {cpu::simd::isa::portable};
#if DEVTENSOR_HAS_X86_KERNELS
    if (cpu::simd::best_isa() >= cpu::simd::isa::avx2) paths.push_back(cpu::simd::isa::avx2);
    else MESSAGE("this CPU has no AVX2+FMA: that path is not checked here");
    if (cpu::simd::best_isa() >= cpu::simd::isa::avx512) paths.push_back(cpu::simd::isa::avx512);
    else MESSAGE("this CPU has no AVX-512F: that path is not checked here");
#else
    MESSAGE("no x86 vector kernels in this build: the portable path only");
#endif
    return paths;
}

const char* name_of(cpu::simd::isa isa) {
    return isa == cpu::simd::isa::avx512 ? "avx512" : isa == cpu::simd::isa::avx2 ? "avx2" : "portable";
}

/// The operands of one shape: A [m, k], B [k, n] (matmul), W [n, k] (linear's weight), bias [n].
template <class T>
struct operands {
    dt::tensor<T, dt::cpu_device> a, b, w, bias;
    explicit operands(const mnk& s) {
        dt::generator gen(static_cast<std::uint64_t>(s.m * 1009 + s.n * 31 + s.k));
        a = signed_rand({s.m, s.k}, gen);
        b = dt::rand<T>({s.k, s.n}, dt::cpu_device{}, gen);
        w = signed_rand({s.n, s.k}, gen);
        bias = dt::rand<T>({s.n}, dt::cpu_device{}, gen);
    }
    /// Uniform in [-0.5, 0.5): sums that cancel, where the order shows most.
    static dt::tensor<T, dt::cpu_device> signed_rand(const dt::shape& sh, dt::generator& gen) {
        auto t = dt::rand<T>(sh, dt::cpu_device{}, gen);
        for (std::int64_t i = 0; i < t.numel(); ++i) t.data()[i] -= T(0.5);
        return t;
    }
};
}  // namespace

TEST_CASE_TEMPLATE("matmul and linear: the same bits at 1, 2 and 7 threads as the documented order", T, float,
                   double) {
    saved_threads saved;
    for (const mnk& s : shapes) {
        CAPTURE(s.m);
        CAPTURE(s.n);
        CAPTURE(s.k);
        const operands<T> o(s);
        const auto mm = plain_loop<T>(s.m, s.n, s.k, o.a.data(), o.b.data(), s.n, 1, nullptr);
        const auto lin = plain_loop<T>(s.m, s.n, s.k, o.a.data(), o.w.data(), 1, s.k, nullptr);
        const auto lin_bias = plain_loop<T>(s.m, s.n, s.k, o.a.data(), o.w.data(), 1, s.k, o.bias.data());
        for (const int threads : {1, 2, 7}) {
            CAPTURE(threads);
            dt::set_num_threads(threads);
            REQUIRE_SAME_BITS(dt::matmul(o.a, o.b).to_vector(), mm);
            REQUIRE_SAME_BITS(dt::linear(o.a, o.w).to_vector(), lin);
            REQUIRE_SAME_BITS(dt::linear(o.a, o.w, o.bias).to_vector(), lin_bias);
        }
    }
}

TEST_CASE_TEMPLATE("batched matmul: each matrix the bits of its own 2-D matmul, split by matrices or within them",
                   T, float, double) {
    saved_threads saved;
    // batch counts that take both paths at 2, 3 and 7 threads (whole matrices to a
    // thread, or each GEMM over the threads); both GEMV-order and GEMM-order matrices.
    for (const mnk& s : std::vector<mnk>{{20, 30, 40}, {5, 70, 300}, {33, 17, 385}}) {
        for (const std::int64_t batch : {1, 2, 3, 6, 14, 28}) {
            CAPTURE(s.m);
            CAPTURE(batch);
            dt::generator gen(static_cast<std::uint64_t>(batch * 7 + s.m));
            const auto a = operands<T>::signed_rand({batch, s.m, s.k}, gen);
            // B transposed (strided, read as it lies) and broadcast over the batch
            const auto b = operands<T>::signed_rand({s.n, s.k}, gen).transpose(0, 1);
            std::vector<T> expected;
            dt::set_num_threads(1);
            for (std::int64_t i = 0; i < batch; ++i) {
                const auto one = dt::matmul(a.select(0, i).contiguous(), b.contiguous()).to_vector();
                expected.insert(expected.end(), one.begin(), one.end());
            }
            for (const int threads : {1, 2, 3, 7}) {
                CAPTURE(threads);
                dt::set_num_threads(threads);
                REQUIRE_SAME_BITS(dt::matmul(a, b).to_vector(), expected);
            }
        }
    }
    // Both operands one tensor (x · xᵀ, batch by batch), and an empty batch.
    dt::generator gen(5);
    const auto x = operands<T>::signed_rand({8, 20, 30}, gen);
    std::vector<T> expected;
    dt::set_num_threads(1);
    for (std::int64_t i = 0; i < 8; ++i) {
        const auto one = dt::matmul(x.select(0, i).contiguous(), x.select(0, i).t().contiguous()).to_vector();
        expected.insert(expected.end(), one.begin(), one.end());
    }
    for (const int threads : {1, 2, 7}) {
        CAPTURE(threads);
        dt::set_num_threads(threads);
        REQUIRE_SAME_BITS(dt::matmul(x, x.transpose(1, 2)).to_vector(), expected);
        const auto none = dt::matmul(x.narrow(0, 0, 0), x.select(0, 0).t());
        CHECK(none.shape() == dt::shape{0, 20, 20});
    }
}

TEST_CASE_TEMPLATE("every CPU ISA path, called directly, gives the bits of the documented order", T, float,
                   double) {
    saved_threads saved;
    for (const cpu::simd::isa isa : isa_paths()) {
        CAPTURE(name_of(isa));
        for (const mnk& s : shapes) {
            CAPTURE(s.m);
            CAPTURE(s.n);
            CAPTURE(s.k);
            const operands<T> o(s);
            const auto mm_bias = plain_loop<T>(s.m, s.n, s.k, o.a.data(), o.b.data(), s.n, 1, o.bias.data());
            const auto lin = plain_loop<T>(s.m, s.n, s.k, o.a.data(), o.w.data(), 1, s.k, nullptr);
            for (const int threads : {1, 2, 7}) {
                CAPTURE(threads);
                dt::set_num_threads(threads);
                std::vector<T> c(static_cast<std::size_t>(s.m * s.n), T(-7));
                cpu::gemm_on<T>(isa, s.m, s.n, s.k, {o.a.data(), s.k, 1}, {o.b.data(), s.n, 1}, c.data(), s.n,
                                o.bias.data());
                REQUIRE_SAME_BITS(c, mm_bias);
                cpu::gemm_on<T>(isa, s.m, s.n, s.k, {o.a.data(), s.k, 1}, {o.w.data(), 1, s.k}, c.data(), s.n,
                                nullptr);
                REQUIRE_SAME_BITS(c, lin);
            }
        }
    }
}

// matmul's B (row-major) on a small batch: the kernels that vectorise across the columns
// of C, called directly (portable, AVX2, AVX-512) and through gemm_on at 1, 2 and 7
// threads: m <= 16 across the row blocks, n off the register widths (edge strips), k off
// the chain count and across the kernels' k blocks, B with a row stride wider than n,
// A transposed, column ranges that start inside a strip, with and without the bias.
TEST_CASE_TEMPLATE("the across-columns GEMV kernels (B row-major) give the bits of the documented order", T, float,
                   double) {
    saved_threads saved;
    const std::vector<mnk> gemv_shapes = {{1, 1, 1},     {2, 7, 15},     {3, 33, 17},    {4, 50, 100},
                                          {5, 100, 33},  {7, 31, 1000},  {8, 64, 2050},  {13, 129, 4097},
                                          {16, 47, 2063}, {16, 96, 64},  {9, 200, 3},    {16, 1, 40}};
    for (const mnk& s : gemv_shapes) {
        CAPTURE(s.m);
        CAPTURE(s.n);
        CAPTURE(s.k);
        const operands<T> o(s);
        // B with rows 5 elements wider than n, A transposed (column p of an [k, m] matrix).
        const std::int64_t ldb = s.n + 5;
        std::vector<T> wide_b(static_cast<std::size_t>(s.k * ldb), T(99)), a_t(static_cast<std::size_t>(s.k * s.m));
        for (std::int64_t p = 0; p < s.k; ++p) {
            std::copy(o.b.data() + p * s.n, o.b.data() + (p + 1) * s.n, wide_b.begin() + p * ldb);
            for (std::int64_t i = 0; i < s.m; ++i) a_t[static_cast<std::size_t>(p * s.m + i)] = o.a.data()[i * s.k + p];
        }
        for (const bool with_bias : {false, true}) {
            CAPTURE(with_bias);
            const T* bias = with_bias ? o.bias.data() : nullptr;
            const auto expected = plain_loop<T>(s.m, s.n, s.k, o.a.data(), o.b.data(), s.n, 1, bias);
            // each kernel directly, on all columns and on [j0, n) from inside a strip
            using kernel = void (*)(std::int64_t, std::int64_t, std::int64_t, std::int64_t, const T*, std::int64_t,
                                    const T*, std::int64_t, T*, std::int64_t, const T*);
            std::vector<std::pair<const char*, kernel>> kernels = {{"portable", &cpu::portable_gemv_rows<T>}};
#if DEVTENSOR_HAS_X86_KERNELS
            if (cpu::simd::best_isa() >= cpu::simd::isa::avx2) kernels.push_back({"avx2", &cpu::avx2_gemv_rows<T>});
            if (cpu::simd::best_isa() >= cpu::simd::isa::avx512) kernels.push_back({"avx512", &cpu::avx512_gemv_rows<T>});
#endif
            for (const auto& [name, run] : kernels) {
                CAPTURE(name);
                for (const std::int64_t j0 : {std::int64_t{0}, s.n / 3}) {
                    CAPTURE(j0);
                    std::vector<T> c(static_cast<std::size_t>(s.m * s.n), T(-7));
                    run(s.m, j0, s.n, s.k, o.a.data(), s.k, wide_b.data(), ldb, c.data(), s.n, bias);
                    auto want = expected;  // columns before j0 untouched
                    for (std::size_t x = 0; x < want.size(); ++x)
                        if (static_cast<std::int64_t>(x) % s.n < j0) want[x] = T(-7);
                    REQUIRE_SAME_BITS(c, want);
                }
            }
            // through gemm_on: every ISA path, any thread count, A read through its strides
            for (const cpu::simd::isa isa : isa_paths()) {
                CAPTURE(name_of(isa));
                for (const int threads : {1, 2, 7}) {
                    CAPTURE(threads);
                    dt::set_num_threads(threads);
                    std::vector<T> c(static_cast<std::size_t>(s.m * s.n), T(-7));
                    cpu::gemm_on<T>(isa, s.m, s.n, s.k, {o.a.data(), s.k, 1}, {wide_b.data(), ldb, 1}, c.data(), s.n,
                                    bias);
                    REQUIRE_SAME_BITS(c, expected);
                    std::fill(c.begin(), c.end(), T(-7));
                    cpu::gemm_on<T>(isa, s.m, s.n, s.k, {a_t.data(), 1, s.m}, {wide_b.data(), ldb, 1}, c.data(), s.n,
                                    bias);
                    REQUIRE_SAME_BITS(c, expected);
                }
            }
        }
        // the public call, A and B transposed views
        const auto at = dt::matmul(o.a.t().contiguous().t(), o.b.t().contiguous().t()).to_vector();
        REQUIRE_SAME_BITS(at, plain_loop<T>(s.m, s.n, s.k, o.a.data(), o.b.data(), s.n, 1, nullptr));
    }
}

TEST_CASE_TEMPLATE("the GEMV order's padded last step turns a -0 chain into +0 on every path", T, float, double) {
    // Every product underflows to -0, so every chain is -0 until the zero-padded step
    // (k not a multiple of L) adds +0 to the chains past the end: then the sum is +0;
    // with k a multiple of L there is no padded step and the sum stays -0.
    constexpr std::int64_t L = 64 / static_cast<std::int64_t>(sizeof(T));
    const T tiny = std::is_same_v<T, float> ? T(1e-30) : T(1e-200);
    for (const std::int64_t k : {L, L + 1, 3 * L - 1, 3 * L}) {
        CAPTURE(k);
        for (const std::int64_t m : {std::int64_t{1}, std::int64_t{5}, std::int64_t{16}}) {
            CAPTURE(m);
            const std::int64_t n = 37;
            const std::vector<T> a(static_cast<std::size_t>(m * k), -tiny), b(static_cast<std::size_t>(k * n), tiny);
            const auto expected = plain_loop<T>(m, n, k, a.data(), b.data(), n, 1, nullptr);
            REQUIRE(std::signbit(expected[0]) == (k % L == 0));
            for (const cpu::simd::isa isa : isa_paths()) {
                CAPTURE(name_of(isa));
                std::vector<T> c(static_cast<std::size_t>(m * n), T(-7));
                cpu::gemm_on<T>(isa, m, n, k, {a.data(), k, 1}, {b.data(), n, 1}, c.data(), n, nullptr);
                REQUIRE_SAME_BITS(c, expected);
                cpu::gemm_on<T>(isa, m, n, k, {a.data(), k, 1}, {b.data(), 1, k}, c.data(), n, nullptr);  // B as Wᵀ
                REQUIRE_SAME_BITS(c, expected);
            }
        }
    }
}

TEST_CASE_TEMPLATE("the CUDA kernels (emulated) give the bits of the cpu", T, float, double) {
    for (const mnk& s : shapes) {
        CAPTURE(s.m);
        CAPTURE(s.n);
        CAPTURE(s.k);
        const operands<T> o(s);
        std::vector<T> c(static_cast<std::size_t>(s.m * s.n), T(-7));
        test::emulate_launch(
            cu::gemm_params<T>{s.m, s.n, s.k, o.a.data(), s.k, 1, o.b.data(), s.n, 1, c.data(), s.n, nullptr});
        REQUIRE_SAME_BITS(c, dt::matmul(o.a, o.b).to_vector());
        test::emulate_launch(cu::gemm_params<T>{s.m, s.n, s.k, o.a.data(), s.k, 1, o.w.data(), 1, s.k, c.data(),
                                                s.n, o.bias.data()});
        REQUIRE_SAME_BITS(c, dt::linear(o.a, o.w, o.bias).to_vector());
    }
}

TEST_CASE("the order's corner cases: the bias last, k = 0 and -0") {
    // bias last: (big + -big) + 1 = 1, where big + (-big + 1) = 0 in float
    const auto of = [](std::initializer_list<float> values, dt::shape sh) {
        dt::tensor<float, dt::cpu_device> t(sh, dt::cpu_device{});
        std::copy(values.begin(), values.end(), t.data());
        return t;
    };
    const auto x = of({1.f, 1.f}, {1, 2}), w = of({1e8f, -1e8f}, {1, 2}), b = of({1.f}, {1});
    CHECK(dt::linear(x, w, b).to_vector() == std::vector<float>{1.f});
    const auto x20 = of(std::initializer_list<float>{}, {20, 0});  // m > 16: the GEMM order
    // k = 0: the empty sum is +0, and +0 + -0 is +0, in either order
    const auto no_in = of({}, {2, 0}), minus_zero = of({-0.f, -0.f}, {2});
    for (const float v : dt::linear(of({}, {3, 0}), no_in, minus_zero).to_vector()) CHECK_FALSE(std::signbit(v));
    for (const float v : dt::linear(x20, no_in, minus_zero).to_vector()) CHECK_FALSE(std::signbit(v));
    // An underflowing product makes a chain -0: the GEMM order (m > 16) keeps it, the GEMV
    // order's fold with the other chains' +0 gives +0.
    const auto tiny_w = of({1e-30f}, {1, 1});
    for (const std::int64_t m : {1, 17}) {
        dt::tensor<float, dt::cpu_device> tiny({m, 1}, dt::cpu_device{});
        std::fill(tiny.data(), tiny.data() + m, -1e-30f);
        for (const float v : dt::linear(tiny, tiny_w).to_vector()) {
            CHECK(v == 0.f);
            CHECK(std::signbit(v) == (m > 16));
        }
    }
}

TEST_CASE_TEMPLATE("rand gives the same bits at 1, 2 and 7 threads", T, float, double) {
    saved_threads saved;
    std::vector<std::vector<T>> runs;
    for (const int threads : {1, 2, 7}) {
        dt::set_num_threads(threads);
        dt::generator gen(2024);
        gen.set_offset(3);
        runs.push_back(dt::rand<T>({(std::int64_t{1} << 20) + 5}, dt::cpu_device{}, gen).to_vector());
        auto more = dt::rand<T>({1000, 7}, dt::cpu_device{}, gen).to_vector();  // the generator moved on alike
        runs.back().insert(runs.back().end(), more.begin(), more.end());
    }
    CHECK(same_bits(runs[1], runs[0]));
    CHECK(same_bits(runs[2], runs[0]));
}
