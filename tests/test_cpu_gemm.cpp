// backend/cpu/gemm*.hpp: every micro-kernel this CPU can run (not only the one
// matmul picks), the dot-product path (portable too) and, for B n-contiguous, the
// kernels that vectorise across the columns, edge tiles, several k and n blocks,
// bias, transposed B and the thread splits, against a plain loop in double;
// how many parts gemm_parts picks, and the same bits whatever that number; the
// lines the micro-kernels touch ahead for the next pack.
#include "test_support.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>
#include <utility>
#include <vector>

namespace {
namespace cpu = dt::backend_cpu;

struct problem {
    std::int64_t m, n, k;
    bool transposed_b;          // B read through its columns, as linear reads its weight
    bool transposed_a = false;  // A read through its columns, as a weight gradient reads Xᵀ
};

/// A problem's random operands and bias, and C = A·B + bias computed by `gemm`.
template <class T>
struct operands {
    std::vector<T> a, b, bias, c;
    std::int64_t a_row, a_col, b_row, b_col;

    template <class Gemm>
    operands(const problem& p, Gemm&& gemm) {
        dt::generator gen(static_cast<std::uint64_t>(p.m * 131 + p.n * 7 + p.k));
        a = dt::rand<T>({p.m, p.k}, dt::cpu_device{}, gen).to_vector();  // [m, k] or [k, m]
        b = dt::rand<T>({p.k, p.n}, dt::cpu_device{}, gen).to_vector();  // [k, n] or [n, k]
        bias = dt::rand<T>({p.n}, dt::cpu_device{}, gen).to_vector();
        a_row = p.transposed_a ? 1 : p.k, a_col = p.transposed_a ? p.m : 1;
        b_row = p.transposed_b ? 1 : p.n, b_col = p.transposed_b ? p.k : 1;
        c.assign(static_cast<std::size_t>(p.m * p.n), T(-7));
        gemm(p.m, p.n, p.k, cpu::matrix_view<T>{a.data(), a_row, a_col}, cpu::matrix_view<T>{b.data(), b_row, b_col},
             c.data(), p.n, bias.data());
    }
};

/// Runs `gemm(m, n, k, a, b, c, ldc, bias)` on random data and compares with the plain loop.
template <class T, class Gemm>
void check_gemm(const problem& p, Gemm&& gemm) {
    CAPTURE(p.m);
    CAPTURE(p.n);
    CAPTURE(p.k);
    CAPTURE(p.transposed_b);
    CAPTURE(p.transposed_a);
    const operands<T> o(p, gemm);
    const double tolerance = (std::is_same_v<T, float> ? 2e-6 : 1e-14) * static_cast<double>(p.k + 1);
    for (std::int64_t i = 0; i < p.m; ++i)
        for (std::int64_t j = 0; j < p.n; ++j) {
            double expected = o.bias[static_cast<std::size_t>(j)];
            for (std::int64_t q = 0; q < p.k; ++q)
                expected += static_cast<double>(o.a[static_cast<std::size_t>(i * o.a_row + q * o.a_col)]) *
                            o.b[static_cast<std::size_t>(q * o.b_row + j * o.b_col)];
            REQUIRE(static_cast<double>(o.c[static_cast<std::size_t>(i * p.n + j)]) ==
                    doctest::Approx(expected).epsilon(tolerance).scale(1));
        }
}

/// Edge tiles in both directions, k spanning several kc blocks (three of AVX-512's 768),
/// n spanning two nc blocks, m two of AVX-512's mc (140; at 1 thread);
/// A transposed (packed through 8 x 8 transposes and their ragged edges) with either B.
const std::vector<problem> problems = {
    {1, 1, 1, false},     {5, 17, 3, true},      {14, 32, 384, false},       {15, 33, 385, true},
    {29, 47, 800, false}, {97, 129, 257, true},  {3, 4100, 20, false},       {40, 4100, 9, true},
    {15, 33, 1537, true}, {150, 70, 770, false},
    {5, 17, 3, false, true}, {15, 33, 385, true, true}, {97, 129, 257, false, true}, {29, 47, 800, true, true}};

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
                run([](auto... args) { cpu::portable_dot_columns<T>(args...); });
                if (cpu::simd::best_isa() >= cpu::simd::isa::avx2)
                    run([](auto... args) { cpu::avx2_dot_columns<T>(args...); });
                if (cpu::simd::best_isa() >= cpu::simd::isa::avx512)
                    run([](auto... args) { cpu::avx512_dot_columns<T>(args...); });
                // matmul's B (rows contiguous): the kernels across the columns
                const problem rows{p.m, p.n, p.k, false};
                const auto run_rows = [&](auto gemv_rows) {
                    check_gemm<T>(rows, [&](std::int64_t m_, std::int64_t n, std::int64_t k, auto a, auto b, T* c,
                                            std::int64_t ldc, const T* bias) {
                        gemv_rows(m_, std::int64_t{0}, n, k, a.data, a.row, b.data, b.row, c, ldc, bias);
                    });
                };
                run_rows([](auto... args) { cpu::portable_gemv_rows<T>(args...); });
                if (cpu::simd::best_isa() >= cpu::simd::isa::avx2)
                    run_rows([](auto... args) { cpu::avx2_gemv_rows<T>(args...); });
                if (cpu::simd::best_isa() >= cpu::simd::isa::avx512)
                    run_rows([](auto... args) { cpu::avx512_gemv_rows<T>(args...); });
                check_gemm<T>(p, [](auto... args) { cpu::gemm<T>(args...); });  // the dispatch
                check_gemm<T>(problem{p.m, p.n, p.k, false}, [](auto... args) { cpu::gemm<T>(args...); });  // matmul's B
            }
    }
    dt::set_num_threads(saved);
#else
    MESSAGE("no x86 vector kernels in this build");
#endif
}

TEST_CASE("gemm_parts: threads by the work, never more than the micro-tiles or the threads") {
    constexpr std::int64_t mr = 6, nr = 16;  // the AVX2 float tile
    for (const std::int64_t threads : {2, 4, 64}) {
        CAPTURE(threads);
        // m * n < 2^20: truncating m * n / 2^20 before multiplying by k gave 1 here.
        CHECK(cpu::gemm_parts(512, 4096, 512, mr, nr, threads) == threads);
        CHECK(cpu::gemm_parts(1023, 1024, 1024, mr, nr, threads) == threads);
        CHECK(cpu::gemm_parts(4, 4, 4, mr, nr, threads) == 1);
        CHECK(cpu::gemm_parts(1, 1, 1, mr, nr, threads) == 1);
        // m * n * k = 2^120 would overflow int64.
        const std::int64_t huge = std::int64_t{1} << 40;
        CHECK(cpu::gemm_parts(huge, huge, huge, mr, nr, threads) == threads);
        CHECK(cpu::gemm_parts(huge, 1, huge, mr, nr, threads) == threads);
        // A single micro-tile (however deep): nothing to hand to a second thread.
        CHECK(cpu::gemm_parts(mr, nr, huge, mr, nr, threads) == 1);
        CHECK(cpu::gemm_parts(1, 1, huge, mr, nr, threads) == 1);
    }
    // About gemm_work_per_part multiply-adds per part: 3.5 parts' worth gives 3.
    CHECK(cpu::gemm_parts(64, 64, 7 * cpu::gemm_work_per_part / (2 * 64 * 64), mr, nr, 64) == 3);
    // At most one part per tile row or column: 3 row tiles, 2 column tiles.
    CHECK(cpu::gemm_parts(3 * mr, 2 * nr, std::int64_t{1} << 30, mr, nr, 64) == 3);
    CHECK(cpu::gemm_parts(mr, 5 * nr - 1, std::int64_t{1} << 30, mr, nr, 64) == 5);
    // split: the way whose largest part computes and packs less. A 64 x 64 C in two:
    // rows 36 x 64 (+ B's 64 columns and 36 rows packed) against columns 64 x 32 (+ 96).
    CHECK(cpu::split<mr, nr>(64, 64, 0, 2).r1 == 64);  // by columns
    CHECK(cpu::split<mr, nr>(64, 64, 0, 2).c1 == 32);
    CHECK(cpu::split<mr, nr>(4096, 256, 0, 2).c1 == 256);  // tall: by rows
    CHECK(cpu::split<mr, nr>(256, 4096, 0, 2).r1 == 256);  // wide: by columns
    CHECK(cpu::split<mr, nr>(5 * mr, 4096, 0, 7).r1 == 5 * mr);  // fewer row tiles than parts
    // Never more than the threads, nor fewer than 1, and every part gets work from split.
    for (const std::int64_t m : {1, 5, 6, 7, 40, 300, 1023, 4096})
        for (const std::int64_t n : {1, 15, 16, 17, 100, 700, 4096})
            for (const std::int64_t k : {1, 64, 600, 100000})
                for (const std::int64_t threads : {1, 2, 3, 7, 64}) {
                    const std::int64_t parts = cpu::gemm_parts(m, n, k, mr, nr, threads);
                    CAPTURE(m);
                    CAPTURE(n);
                    CAPTURE(k);
                    CAPTURE(threads);
                    REQUIRE(parts >= 1);
                    REQUIRE(parts <= threads);
                    for (std::int64_t p = 0; p < parts; ++p) {
                        const cpu::gemm_part part = cpu::split<mr, nr>(m, n, p, parts);
                        REQUIRE(part.r0 < part.r1);
                        REQUIRE(part.c0 < part.c1);
                    }
                }
}

namespace {
/// The lines a cursor touches, `per_tile` at a time, until it has none left.
std::vector<std::uintptr_t> touched_lines(cpu::prefetch_cursor cursor, std::int64_t per_tile) {
    std::vector<std::uintptr_t> lines;
    for (int tile = 0; cursor.runs != 0 && tile < 100000; ++tile) {  // bounded: a stuck walk fails, not hangs
        cursor.allow(per_tile);
        for (std::int64_t s = 0; s < per_tile + 3; ++s) {  // steps past the budget touch nothing
            if (cursor.budget != 0) lines.push_back(cursor.line);
            cursor.step();
        }
    }
    CHECK(cursor.runs == 0);
    return lines;
}

std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }
}  // namespace

TEST_CASE("prefetch_cursor: every line of each run once, in order, within each tile's budget") {
    alignas(64) static char memory[4096];
    // Three runs of 100 bytes, 1000 apart, from byte 60: lines 0-2 (bytes 60-159), 16-18 (1060-1159)
    // and 32-33 (2060-2159).
    cpu::prefetch_cursor cursor;
    cursor.walk(memory + 60, 3, 100, 1000);
    CHECK(cursor.lines >= 8);  // the budgets' estimate: at most, never fewer
    std::vector<std::uintptr_t> expected;
    for (const int line : {0, 1, 2, 16, 17, 18, 32, 33}) expected.push_back(address(memory + 64 * line));
    for (const std::int64_t per_tile : {1, 2, 5, 100}) {
        CAPTURE(per_tile);
        CHECK(touched_lines(cursor, per_tile) == expected);
    }
    // Runs that all start at one offset in their line: the estimate is exact.
    cursor.walk(memory, 4, 256, 512);
    CHECK(cursor.lines == 16);
    CHECK(touched_lines(cursor, 7).size() == 16);
    cursor.walk(memory + 32, 4, 64, 512);
    CHECK(cursor.lines == 8);
    CHECK(touched_lines(cursor, 3).size() == 8);
    cursor.walk(memory, 4, 0, 512);  // empty runs, or none: nothing
    CHECK(touched_lines(cursor, 7).empty());
    cursor.walk(memory, -1, 64, 512);
    CHECK(touched_lines(cursor, 7).empty());
}

namespace {
/// The blocking aim_at_next_packs reads (mc, kc, nc; nr), small enough for several blocks of
/// each, its chains too short for row bands to pack A as they go.
struct small_blocks {
    static constexpr std::int64_t mc = 24, kc = 32, nc = 64;
    static constexpr int nr = 16;
    static_assert(kc < cpu::gemm_fused_a_min_kc);
};

/// The lines holding rows x cols of m from (r0, c0): what a pack of that block reads.
template <class T>
std::set<std::uintptr_t> lines_of(const cpu::matrix_view<T>& m, std::int64_t r0, std::int64_t rows,
                                  std::int64_t c0, std::int64_t cols) {
    std::set<std::uintptr_t> lines;
    for (std::int64_t r = r0; r < r0 + rows; ++r)
        for (std::int64_t c = c0; c < c0 + cols; ++c) lines.insert(address(&m(r, c)) / 64 * 64);
    return lines;
}

std::set<std::uintptr_t> walked(const cpu::prefetch_cursor& cursor) {
    const std::vector<std::uintptr_t> lines = touched_lines(cursor, 1000);
    return {lines.begin(), lines.end()};
}
}  // namespace

TEST_CASE("the GEMM touches ahead the lines the next kc or column block packs, or the next product's first, while they fit in L2") {
    // The L2 it counts on: what the CPU reports, within Zen 3's 512 KiB and 2 MiB.
    CHECK(cpu::gemm_prefetch_l2_bytes() >= std::int64_t{512} << 10);
    CHECK(cpu::gemm_prefetch_l2_bytes() <= std::int64_t{2} << 20);
    using K = small_blocks;
    const std::int64_t m = 100, n = 150, k = 70;  // 3 kc blocks (32, 32, 6), 3 column blocks (64, 64, 22)
    std::vector<float> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(k * n));
    const cpu::gemm_part part{6, 90, 16, n};  // a part that starts inside C: 4 row blocks, the last of 12 rows
    // The product a batch runs next on this thread: its own operands, A read as it lies and B row-major.
    std::vector<float> then_a(a.size()), then_b(b.size());
    const devtensor::detail::gemm_params<float> then{m, n, k, then_a.data(), k, 1, then_b.data(), n, 1,
                                                     nullptr, n, nullptr};
    const auto no_then = static_cast<const devtensor::detail::gemm_params<float>*>(nullptr);
    for (const bool a_transposed : {false, true})
        for (const bool b_transposed : {false, true}) {
            CAPTURE(a_transposed);
            CAPTURE(b_transposed);
            const cpu::matrix_view<float> av = a_transposed ? cpu::matrix_view<float>{a.data(), 1, m}
                                                            : cpu::matrix_view<float>{a.data(), k, 1};
            // B's transposed view, as gemm_blocked packs it: B row-major, or B = Wᵀ of a W [n, k].
            const cpu::matrix_view<float> bt = b_transposed ? cpu::matrix_view<float>{b.data(), k, 1}
                                                            : cpu::matrix_view<float>{b.data(), 1, n};
            // The (jc, pc) blocks in the order gemm_blocked_part packs them.
            std::vector<std::pair<std::int64_t, std::int64_t>> blocks;
            for (std::int64_t jc = part.c0; jc < part.c1; jc += K::nc)
                for (std::int64_t pc = 0; pc < k; pc += K::kc) blocks.emplace_back(jc, pc);
            for (std::size_t i = 0; i < blocks.size(); ++i) {
                const std::int64_t jc = blocks[i].first, pc = blocks[i].second;
                CAPTURE(jc);
                CAPTURE(pc);
                cpu::prefetch_cursor next_a, next_b;
                for (std::int64_t ic = part.r0; ic + K::mc < part.r1; ic += K::mc) {  // not the last row block
                    cpu::aim_at_next_packs<K>(part, k, av, bt, jc, pc, ic, 0, &then, next_a, next_b);
                    CHECK(next_a.runs + next_b.runs == 0);
                }
                cpu::aim_at_next_packs<K>(part, k, av, bt, jc, pc, std::int64_t{78}, 0, no_then, next_a, next_b);
                if (i + 1 == blocks.size()) {  // the part's last block: nothing follows, or the next product's first packs
                    CHECK(next_a.runs + next_b.runs == 0);
                    cpu::aim_at_next_packs<K>(part, k, av, bt, jc, pc, std::int64_t{78}, 0, &then, next_a, next_b);
                    const cpu::matrix_view<float> then_bt{then_b.data(), 1, n};
                    CHECK(walked(next_b) == lines_of(then_bt, 0, K::nc, 0, K::kc));
                    CHECK(walked(next_a) == lines_of(cpu::matrix_view<float>{then_a.data(), k, 1}, 0, K::mc, 0, K::kc));
                    continue;
                }
                const std::int64_t next_jc = blocks[i + 1].first, next_pc = blocks[i + 1].second;
                const std::int64_t kc = std::min(K::kc, k - next_pc);
                cpu::aim_at_next_packs<K>(part, k, av, bt, jc, pc, std::int64_t{78}, 0, &then, next_a, next_b);
                CHECK(walked(next_b) == lines_of(bt, next_jc, std::min(K::nc, part.c1 - next_jc), next_pc, kc));
                CHECK(walked(next_a) == lines_of(av, part.r0, K::mc, next_pc, kc));
                // The same lines beside panels that fill L2 already: nothing.
                cpu::aim_at_next_packs<K>(part, k, av, bt, jc, pc, std::int64_t{78}, cpu::gemm_prefetch_l2_bytes(),
                                          &then, next_a, next_b);
                CHECK(next_a.runs + next_b.runs == 0);
            }
        }
    // A broadcast operand (stride 0 along its runs): left to the hardware.
    const cpu::matrix_view<float> broadcast{a.data(), 0, 1};
    cpu::prefetch_cursor next_a, next_b;
    cpu::aim_at_next_packs<K>(part, k, broadcast, cpu::matrix_view<float>{b.data(), 1, n}, part.c0, 0,
                              std::int64_t{78}, 0, no_then, next_a, next_b);
    CHECK(next_a.runs == 0);
    CHECK(next_b.runs != 0);
}

TEST_CASE("the GEMM touches ahead the next row block's A where its row bands pack A as they go") {
    using K = cpu::portable_kernel<float>;
    const std::int64_t m = 2 * K::mc + 10, k = cpu::gemm_fused_a_min_kc + 44, n = 40;  // kc blocks 256, 44
    std::vector<float> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(k * n));
    const cpu::matrix_view<float> av{a.data(), k, 1}, bt{b.data(), 1, n};
    const cpu::gemm_part part{0, m, 0, n};
    const auto no_then = static_cast<const devtensor::detail::gemm_params<float>*>(nullptr);
    cpu::prefetch_cursor next_a, next_b;
    REQUIRE(cpu::bands_pack_a<K>(av, n, K::kc));
    // The first kc block: during each row block but the last, the next one's rows (the last has 10)
    for (const std::int64_t ic : {std::int64_t{0}, K::mc}) {
        CAPTURE(ic);
        cpu::aim_at_next_packs<K>(part, k, av, bt, 0, 0, ic, 0, no_then, next_a, next_b);
        CHECK(walked(next_a) == lines_of(av, ic + K::mc, std::min(K::mc, m - ic - K::mc), 0, K::kc));
        CHECK(next_b.runs == 0);
    }
    // Packed in a pass instead: the second kc block's 44 steps, A transposed (its rows across
    // memory), a part narrower than a tile. Nothing.
    const std::vector<float> at(a.size());
    CHECK_FALSE(cpu::bands_pack_a<K>(av, n, k - K::kc));
    CHECK_FALSE(cpu::bands_pack_a<K>(cpu::matrix_view<float>{at.data(), 1, m}, n, K::kc));
    CHECK_FALSE(cpu::bands_pack_a<K>(av, K::nr - 1, K::kc));
    cpu::aim_at_next_packs<K>(part, k, av, bt, 0, K::kc, 0, 0, no_then, next_a, next_b);
    CHECK(next_a.runs + next_b.runs == 0);
    cpu::aim_at_next_packs<K>(part, k, cpu::matrix_view<float>{at.data(), 1, m}, bt, 0, 0, 0, 0, no_then, next_a,
                              next_b);
    CHECK(next_a.runs + next_b.runs == 0);
    cpu::aim_at_next_packs<K>(cpu::gemm_part{0, m, 0, K::nr - 1}, k, av, bt, 0, 0, 0, 0, no_then, next_a, next_b);
    CHECK(next_a.runs + next_b.runs == 0);
    // Beside panels that fill L2 already: nothing.
    cpu::aim_at_next_packs<K>(part, k, av, bt, 0, 0, 0, cpu::gemm_prefetch_l2_bytes(), no_then, next_a, next_b);
    CHECK(next_a.runs + next_b.runs == 0);
}

TEST_CASE_TEMPLATE("a micro-kernel that packs B's panel as it reads B's rows gives the same bits and the same panel", T,
                   float, double) {
    const auto check = [](auto kernel, const char* name) {
        using K = decltype(kernel);
        CAPTURE(name);
        const std::int64_t kc = 37, ldb = K::nr + 3;  // B's rows with a gap between them
        std::vector<T> a(static_cast<std::size_t>(K::mr * K::kc)), b(static_cast<std::size_t>(ldb * kc));
        for (std::size_t i = 0; i < a.size(); ++i) a[i] = T(0.25) * static_cast<T>(i % 7) - T(0.5);
        for (std::size_t i = 0; i < b.size(); ++i) b[i] = T(0.125) * static_cast<T>(i % 5) + T(0.1);
        std::vector<T> panel(static_cast<std::size_t>(K::nr * kc)), copied(panel.size(), T(-7));
        for (std::int64_t k = 0; k < kc; ++k)
            for (std::int64_t j = 0; j < K::nr; ++j)
                panel[static_cast<std::size_t>(k * K::nr + j)] = b[static_cast<std::size_t>(k * ldb + j)];
        const std::vector<T> bias(static_cast<std::size_t>(K::nr), T(0.75));
        for (const bool resume : {false, true}) {
            CAPTURE(resume);
            std::vector<T> from_panel(static_cast<std::size_t>(K::mr * K::nr), T(1)), from_rows = from_panel;
            K::tile(kc, a.data(), panel.data(), from_panel.data(), K::nr, resume, bias.data(), nullptr, nullptr);
            K::tile(kc, a.data(), b.data(), from_rows.data(), K::nr, resume, bias.data(), nullptr, nullptr, ldb,
                    copied.data());
            CHECK(std::memcmp(from_panel.data(), from_rows.data(), from_panel.size() * sizeof(T)) == 0);
            CHECK(copied == panel);
        }
    };
    check(cpu::portable_kernel<T>{}, "portable");
#if DEVTENSOR_HAS_X86_KERNELS
    if (cpu::simd::best_isa() >= cpu::simd::isa::avx2) check(cpu::avx2_kernel<T>{}, "avx2");
    if (cpu::simd::best_isa() >= cpu::simd::isa::avx512) check(cpu::avx512_kernel<T>{}, "avx512");
#endif
}

TEST_CASE_TEMPLATE("a micro-kernel that packs A's panel as it reads A's rows gives the same bits and the same panel", T,
                   float, double) {
    const auto check = [](auto kernel, const char* name) {
        using K = decltype(kernel);
        CAPTURE(name);
        const std::int64_t lda = K::kc + 3;  // A's rows with a gap between them
        std::vector<T> a(static_cast<std::size_t>(K::mr * lda)), b(static_cast<std::size_t>(K::nr * K::kc));
        for (std::size_t i = 0; i < a.size(); ++i) a[i] = T(0.25) * static_cast<T>(i % 7) - T(0.5);
        for (std::size_t i = 0; i < b.size(); ++i) b[i] = T(0.125) * static_cast<T>(i % 5) + T(0.1);
        const std::vector<T> bias(static_cast<std::size_t>(K::nr), T(0.75));
        alignas(64) static char memory[1 << 16];  // lines a cursor touches ahead
        // less than a register of steps, a partial last register, whole registers, a whole kc block
        for (const std::int64_t kc : {std::int64_t{3}, std::int64_t{37}, std::int64_t{64}, K::kc}) {
            CAPTURE(kc);
            std::vector<T> panel(static_cast<std::size_t>(K::mr * K::kc), T(-7)), copied = panel;
            for (std::int64_t i = 0; i < K::mr; ++i)
                std::copy_n(a.begin() + i * lda, kc, panel.begin() + i * K::kc);
            for (const bool resume : {false, true})
                for (const bool ahead : {false, true}) {
                    CAPTURE(resume);
                    CAPTURE(ahead);
                    std::vector<T> from_panel(static_cast<std::size_t>(K::mr * K::nr), T(1)), from_rows = from_panel;
                    K::tile(kc, panel.data(), b.data(), from_panel.data(), K::nr, resume, bias.data(), nullptr, nullptr);
                    cpu::prefetch_cursor cursor;
                    cursor.walk(memory, 1, sizeof memory, 0);
                    cursor.allow(1000);
                    std::fill(copied.begin(), copied.end(), T(-7));
                    K::tile(kc, a.data(), b.data(), from_rows.data(), K::nr, resume, bias.data(),
                            ahead ? &cursor : nullptr, nullptr, 0, static_cast<T*>(nullptr), lda, copied.data());
                    CHECK(std::memcmp(from_panel.data(), from_rows.data(), from_panel.size() * sizeof(T)) == 0);
                    CHECK(copied == panel);  // the rows' first kc steps, and nothing past them
                }
        }
    };
    check(cpu::portable_kernel<T>{}, "portable");
#if DEVTENSOR_HAS_X86_KERNELS
    if (cpu::simd::best_isa() >= cpu::simd::isa::avx2) check(cpu::avx2_kernel<T>{}, "avx2");
    if (cpu::simd::best_isa() >= cpu::simd::isa::avx512) check(cpu::avx512_kernel<T>{}, "avx512");
#endif
}

#if DEVTENSOR_HAS_X86_KERNELS
TEST_CASE_TEMPLATE("a micro-kernel that touches ahead (the next pack, the next C) gives the same bits and moves its cursor", T,
                   float, double) {
    const auto check = [](auto kernel) {
        using K = decltype(kernel);
        const std::int64_t kc = 10;  // steps 0, 4 and 8 touch a line each (AVX2), or every step
        std::vector<T> a(static_cast<std::size_t>(K::mr * K::kc)), b(static_cast<std::size_t>(K::nr * kc));
        for (std::size_t i = 0; i < a.size(); ++i) a[i] = T(0.25) * static_cast<T>(i % 7) - T(0.5);
        for (std::size_t i = 0; i < b.size(); ++i) b[i] = T(0.125) * static_cast<T>(i % 5) + T(0.1);
        std::vector<T> plain(static_cast<std::size_t>(K::mr * K::nr), T(1)), ahead = plain;
        K::tile(kc, a.data(), b.data(), plain.data(), K::nr, true, nullptr, nullptr, nullptr);
        alignas(64) static char memory[4096];
        for (const std::int64_t budget : {2, 100}) {
            CAPTURE(budget);
            std::fill(ahead.begin(), ahead.end(), T(1));
            cpu::prefetch_cursor cursor;
            cursor.walk(memory, 1, sizeof memory, 0);
            cursor.allow(budget);
            const std::vector<T> next_c(plain.size());  // the next tile's C, touched ahead
            K::tile(kc, a.data(), b.data(), ahead.data(), K::nr, true, nullptr, &cursor, next_c.data());
            CHECK(std::memcmp(plain.data(), ahead.data(), plain.size() * sizeof(T)) == 0);
            const std::int64_t touched = std::min<std::int64_t>(budget, (kc + K::ahead_every - 1) / K::ahead_every);
            CHECK(cursor.line == address(memory + 64 * touched));  // written back to the caller's cursor
            CHECK(cursor.budget == budget - touched);
        }
    };
    if (cpu::simd::best_isa() >= cpu::simd::isa::avx2) check(cpu::avx2_kernel<T>{});
    else MESSAGE("this CPU has no AVX2+FMA: that kernel is not tested here");
    if (cpu::simd::best_isa() >= cpu::simd::isa::avx512) check(cpu::avx512_kernel<T>{});
    else MESSAGE("this CPU has no AVX-512F: that kernel is not tested here");
}
#endif

namespace {
/// C of `gemm` (gemm_blocked<K> or the dispatch) for m x n x k with `threads`: bytes to compare.
template <class T, class Gemm>
std::vector<T> gemm_with_threads(const problem& p, int threads, Gemm&& gemm) {
    dt::set_num_threads(threads);
    return operands<T>(p, gemm).c;
}

/// The same bits with 1, 2 and 7 threads, on shapes that split along rows (700 x 300)
/// and along columns (30 x 3000), k over several of AVX2's kc blocks (one of AVX-512's);
/// K's tiles decide the parts. 100 x 40 x 3000: small panels, so each part touches its
/// next kc block ahead, and k over four of AVX-512's kc blocks.
template <class K, class T, class Gemm>
void check_bit_identical(const char* name, Gemm gemm) {
    CAPTURE(name);
    for (const problem& p :
         {problem{700, 300, 600, false}, problem{30, 3000, 500, true}, problem{100, 40, 3000, false}}) {
        CAPTURE(p.m);
        CAPTURE(p.n);
        REQUIRE(cpu::gemm_parts(p.m, p.n, p.k, K::mr, K::nr, 7) == 7);  // it splits
        const cpu::gemm_part first = cpu::split<K::mr, K::nr>(p.m, p.n, 0, 7);
        CHECK((p.m > p.n ? first.c1 == p.n : first.r1 == p.m));  // along the rows, or the columns
        const std::vector<T> one = gemm_with_threads<T>(p, 1, gemm);
        for (const int threads : {2, 7}) {
            CAPTURE(threads);
            const std::vector<T> many = gemm_with_threads<T>(p, threads, gemm);
            REQUIRE(many.size() == one.size());
            CHECK(std::memcmp(many.data(), one.data(), one.size() * sizeof(T)) == 0);
        }
    }
}
}  // namespace

#if DEVTENSOR_HAS_X86_KERNELS
TEST_CASE_TEMPLATE("every edge of a vector GEMM (1 to MR - 1 rows, at most one or two registers wide: each its own "
                   "micro-kernel) gives the portable kernel's bits",
                   T, float, double) {
    const int saved = dt::get_num_threads();
    const auto check = [](auto kernel, const char* name) {
        using K = decltype(kernel);
        CAPTURE(name);
        for (std::int64_t rows = 0; rows < K::mr; ++rows)
            for (const std::int64_t k : {std::int64_t{40}, K::kc + 9})  // one kc block, or a second that resumes
                for (const std::int64_t cols : {std::int64_t{5}, std::int64_t{K::nr / 2 + 3}}) {  // a right edge: corner tiles too
                const problem p{2 * K::mr + rows, 2 * K::nr + cols, k, rows % 2 == 1};
                CAPTURE(p.m);
                CAPTURE(p.n);
                CAPTURE(p.k);
                const std::vector<T> portable =
                    gemm_with_threads<T>(p, 1, [](auto... args) { cpu::gemm_blocked<cpu::portable_kernel<T>>(args...); });
                const std::vector<T> vector = gemm_with_threads<T>(p, 1, [](auto... args) { cpu::gemm_blocked<K>(args...); });
                CHECK(std::memcmp(portable.data(), vector.data(), portable.size() * sizeof(T)) == 0);
            }
    };
    if (cpu::simd::best_isa() >= cpu::simd::isa::avx2) check(cpu::avx2_kernel<T>{}, "avx2");
    else MESSAGE("this CPU has no AVX2+FMA: that kernel is not tested here");
    if (cpu::simd::best_isa() >= cpu::simd::isa::avx512) check(cpu::avx512_kernel<T>{}, "avx512");
    else MESSAGE("this CPU has no AVX-512F: that kernel is not tested here");
    dt::set_num_threads(saved);
}
#endif

TEST_CASE_TEMPLATE("a split GEMM gives the same bits whatever the number of threads", T, float, double) {
    const int saved = dt::get_num_threads();
    check_bit_identical<cpu::portable_kernel<T>, T>(
        "portable", [](auto... args) { cpu::gemm_blocked<cpu::portable_kernel<T>>(args...); });
#if DEVTENSOR_HAS_X86_KERNELS
    if (cpu::simd::best_isa() >= cpu::simd::isa::avx2)
        check_bit_identical<cpu::avx2_kernel<T>, T>(
            "avx2", [](auto... args) { cpu::gemm_blocked<cpu::avx2_kernel<T>>(args...); });
    if (cpu::simd::best_isa() >= cpu::simd::isa::avx512)
        check_bit_identical<cpu::avx512_kernel<T>, T>(
            "avx512", [](auto... args) { cpu::gemm_blocked<cpu::avx512_kernel<T>>(args...); });
#endif
    // The dispatch (the widest kernel); the portable kernel's tiles are the finest, so it splits too.
    check_bit_identical<cpu::portable_kernel<T>, T>("dispatch", [](auto... args) { cpu::gemm<T>(args...); });
    dt::set_num_threads(saved);
}

TEST_CASE_TEMPLATE("a tiny product skips packing and keeps the GEMM order's bits", T, float, double) {
    // Shapes under gemm_direct_max_work, in the GEMM order (more than 16 rows): the direct
    // loop must give the packed kernels' bits on every ISA, bias and transposed B included,
    // and A transposed or of one column (its rows side by side: vectors across rows, then a tail).
    for (const problem& p : {problem{64, 1, 1, false}, problem{17, 3, 5, true}, problem{20, 4, 6, false},
                             problem{33, 1, 15, true}, problem{37, 2, 1, true}, problem{33, 1, 15, true, true},
                             problem{20, 4, 6, false, true}, problem{19, 3, 8, true, true}}) {
        REQUIRE(p.m * p.n * p.k <= cpu::gemm_direct_max_work);
        check_gemm<T>(p, [](auto... args) { cpu::gemm_direct<T>(args...); });
        const std::vector<T> packed = gemm_with_threads<T>(
            p, 1, [](auto... args) { cpu::gemm_blocked<cpu::portable_kernel<T>>(args...); });
        for (const auto isa : {cpu::simd::isa::portable, cpu::simd::isa::avx2, cpu::simd::isa::avx512}) {
            if (isa > cpu::simd::best_isa()) continue;
            CAPTURE(static_cast<int>(isa));
            const std::vector<T> direct =
                gemm_with_threads<T>(p, 1, [isa](auto... args) { cpu::gemm_on<T>(isa, args...); });
            CHECK(std::memcmp(direct.data(), packed.data(), direct.size() * sizeof(T)) == 0);
        }
    }
}

TEST_CASE_TEMPLATE("a narrow C (few columns, more rows) is computed transposed with the GEMM order's bits", T, float,
                   double) {
    // C = A·B + bias as Cᵀ = Bᵀ·Aᵀ (a classifier's logits, its input gradient): each element the
    // same chain, so the packed kernels' bits on C as it lies, at every thread count.
    const int saved = dt::get_num_threads();
    for (const problem& p : {problem{64, 10, 128, true}, problem{17, 1, 600, false}, problem{100, 16, 33, true, true},
                             problem{40, 3, 700, false, true}, problem{300, 7, 500, true}}) {
        REQUIRE(p.n <= cpu::gemm_transposed_max_cols);
        check_gemm<T>(p, [](auto... args) { cpu::gemm<T>(args...); });
        const std::vector<T> plain = gemm_with_threads<T>(
            p, 1, [](auto... args) { cpu::gemm_blocked<cpu::portable_kernel<T>>(args...); });
        for (const int threads : {1, 2, 7}) {
            CAPTURE(threads);
            const std::vector<T> transposed = gemm_with_threads<T>(p, threads, [](auto... args) { cpu::gemm<T>(args...); });
            CHECK(std::memcmp(transposed.data(), plain.data(), plain.size() * sizeof(T)) == 0);
        }
    }
    dt::set_num_threads(saved);
}

TEST_CASE_TEMPLATE("a small batch's product with B row-major and a short k gives the GEMV order's bits", T, float,
                   double) {
    // A weight gradient Gᵀ·X on a batch of 10 (k = the batch): AVX-512 keeps each row's chains
    // in registers where k is short, the strips take the ragged columns and longer k; each
    // element must be detail::gemm_order_element's, at any thread count.
    const int saved = dt::get_num_threads();
    for (const std::int64_t m : {1, 7, 10, 16})  // (7: AVX-512's groups of four, two and one rows)
        for (const std::int64_t k : {1, 15, 16, 17, 64, 256, 257})
            for (const std::int64_t n : {16, 48, 130}) {
                const problem p{m, n, k, false};
                CAPTURE(m);
                CAPTURE(k);
                CAPTURE(n);
                for (const int threads : {1, 3}) {
                    dt::set_num_threads(threads);
                    const operands<T> o(p, [](auto... args) { cpu::gemm<T>(args...); });
                    std::vector<T> want(o.c.size());
                    for (std::int64_t i = 0; i < m; ++i)
                        for (std::int64_t j = 0; j < n; ++j)
                            want[static_cast<std::size_t>(i * n + j)] = dt::detail::gemm_order_element(
                                m, n, k, o.a.data(), o.a_row, o.a_col, o.b.data(), o.b_row, o.b_col, o.bias.data(), i, j);
                    CHECK(std::memcmp(want.data(), o.c.data(), want.size() * sizeof(T)) == 0);
                }
            }
    dt::set_num_threads(saved);
}
