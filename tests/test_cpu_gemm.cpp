// backend/cpu/gemm*.hpp: every micro-kernel this CPU can run (not only the one
// matmul picks), the dot-product path, edge tiles, several k and n blocks,
// bias, transposed B and the thread splits, against a plain loop in double.
#include "test_support.hpp"

#include <vector>

namespace {
namespace cpu = dt::backend_cpu;

struct problem {
    std::int64_t m, n, k;
    bool transposed_b;  // B read through its columns, as linear reads its weight
};

/// Runs `gemm(m, n, k, a, b, c, ldc, bias)` on random data and compares with the plain loop.
template <class T, class Gemm>
void check_gemm(const problem& p, Gemm&& gemm) {
    CAPTURE(p.m);
    CAPTURE(p.n);
    CAPTURE(p.k);
    CAPTURE(p.transposed_b);
    dt::generator gen(static_cast<std::uint64_t>(p.m * 131 + p.n * 7 + p.k));
    const auto a = dt::rand<T>({p.m, p.k}, dt::cpu_device{}, gen).to_vector();
    const auto b = dt::rand<T>({p.k, p.n}, dt::cpu_device{}, gen).to_vector();  // [k, n] or [n, k]
    const auto bias = dt::rand<T>({p.n}, dt::cpu_device{}, gen).to_vector();
    const std::int64_t b_row = p.transposed_b ? 1 : p.n, b_col = p.transposed_b ? p.k : 1;
    std::vector<T> c(static_cast<std::size_t>(p.m * p.n), T(-7));
    gemm(p.m, p.n, p.k, cpu::matrix_view<T>{a.data(), p.k, 1}, cpu::matrix_view<T>{b.data(), b_row, b_col},
         c.data(), p.n, bias.data());
    const double tolerance = (std::is_same_v<T, float> ? 2e-6 : 1e-14) * static_cast<double>(p.k + 1);
    for (std::int64_t i = 0; i < p.m; ++i)
        for (std::int64_t j = 0; j < p.n; ++j) {
            double expected = bias[static_cast<std::size_t>(j)];
            for (std::int64_t q = 0; q < p.k; ++q)
                expected += static_cast<double>(a[static_cast<std::size_t>(i * p.k + q)]) *
                            b[static_cast<std::size_t>(q * b_row + j * b_col)];
            REQUIRE(static_cast<double>(c[static_cast<std::size_t>(i * p.n + j)]) ==
                    doctest::Approx(expected).epsilon(tolerance).scale(1));
        }
}

/// Edge tiles in both directions, k spanning several kc blocks, n spanning two nc blocks.
const std::vector<problem> problems = {
    {1, 1, 1, false},    {5, 17, 3, true},     {14, 32, 384, false}, {15, 33, 385, true},
    {29, 47, 800, false}, {97, 129, 257, true}, {3, 4100, 20, false}, {40, 4100, 9, true}};

template <class K, class T>
void check_kernel() {
    for (const int threads : {1, 2, 3}) {
        CAPTURE(threads);
        dt::set_num_threads(threads);
        for (const problem& p : problems)
            check_gemm<T>(p, [](auto... args) { cpu::gemm_blocked<K>(args...); });
    }
}
}  // namespace

TEST_CASE_TEMPLATE("every CPU GEMM micro-kernel matches the plain loop", T, float, double) {
    const int saved = dt::get_num_threads();
    check_kernel<cpu::portable_kernel<T>, T>();
#if DEVTENSOR_HAS_X86_KERNELS
    if (cpu::simd::best_isa() >= cpu::simd::isa::avx2) check_kernel<cpu::avx2_kernel<T>, T>();
    else MESSAGE("this CPU has no AVX2+FMA: that kernel is not tested here");
    if (cpu::simd::best_isa() >= cpu::simd::isa::avx512) check_kernel<cpu::avx512_kernel<T>, T>();
    else MESSAGE("this CPU has no AVX-512F: that kernel is not tested here");
#endif
    dt::set_num_threads(saved);
}

TEST_CASE_TEMPLATE("the dot-product path (linear on a small batch) matches the plain loop", T, float, double) {
#if DEVTENSOR_HAS_X86_KERNELS
    const int saved = dt::get_num_threads();
    for (const int threads : {1, 2}) {
        dt::set_num_threads(threads);
        for (const std::int64_t m : {1, 2, 3, 4, 5, 16})
            for (const problem& p : {problem{m, 7, 5, true}, problem{m, 100, 33, true}, problem{m, 1030, 300, true}}) {
                const auto run = [&](auto dot_columns) {
                    check_gemm<T>(p, [&](std::int64_t m_, std::int64_t n, std::int64_t k, auto a, auto b,
                                         T* c, std::int64_t ldc, const T* bias) {
                        dot_columns(m_, std::int64_t{0}, n, k, a.data, a.row, b.data, b.col, c, ldc, bias);
                    });
                };
                if (cpu::simd::best_isa() >= cpu::simd::isa::avx2)
                    run([](auto... args) { cpu::avx2_dot_columns<T>(args...); });
                if (cpu::simd::best_isa() >= cpu::simd::isa::avx512)
                    run([](auto... args) { cpu::avx512_dot_columns<T>(args...); });
                check_gemm<T>(p, [](auto... args) { cpu::gemm<T>(args...); });  // the dispatch
            }
    }
    dt::set_num_threads(saved);
#else
    MESSAGE("no x86 vector kernels in this build");
#endif
}
