// A CPU block emulator for the CUDA kernels: runs the phase functions of
// backend/cuda/phases.hpp over a simulated grid (every block, every thread,
// barriers as phase boundaries, in the order the __global__ shells in
// kernels.cuh call them) and checks them against the CPU backend for sizes and
// alignments that reach every tail path, without a GPU.
#include "cuda_emulator.hpp"  // emulate_gemm, emulate_gemv
#include "test_support.hpp"

#include <devtensor/backend/cuda/kernel_registry.hpp>
#include <devtensor/backend/cuda/launch_plan.hpp>
#include <devtensor/backend/cuda/phases.hpp>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

namespace cu = devtensor::backend_cuda;
using test::emulate_gemm;
using test::emulate_gemv;
using test::emulated_block;

TEST_CASE("every kernel of the registry names an emulator test that exists") {
    std::set<std::string> here;  // the emulator tests of this binary (their names say "emulat")
    for (const auto& tc : doctest::detail::getRegisteredTests())
        if (std::string(tc.m_name).find("emulat") != std::string::npos) here.insert(tc.m_name);
    REQUIRE_FALSE(here.empty());
    for (const auto& k : cu::kernel_registry) {
        CAPTURE(k.name);
        CAPTURE(k.arguments);
        CHECK_FALSE(k.types.empty());
        CHECK_MESSAGE(here.count(std::string(k.emulator_test)) == 1,
                      "kernel_registry.hpp: this kernel's emulator test is missing: ", k.emulator_test);
    }
}

namespace {
struct grid { int blocks, threads; };
const std::vector<grid> grids = {{1, 1}, {1, 32}, {3, 32}, {7, 256}, {2, 100}};
// Around the 16-byte pack (4 floats, 2 doubles) and the 4-pack unrolled round.
const std::vector<std::int64_t> sizes = {1, 3, 4, 5, 7, 16, 17, 33, 1000, 4099};

/// Runs `phase(thread, threads)` for every thread of the grid, one after the
/// other, and checks that every element of `out` is written by exactly one thread.
template <class T, class Phase>
void run_elementwise(const grid& g, T* out, std::int64_t n, Phase phase) {
    std::vector<int> writes(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) out[i] = std::numeric_limits<T>::quiet_NaN();
    const std::int64_t threads = std::int64_t{g.blocks} * g.threads;
    std::vector<T> before(static_cast<std::size_t>(n));
    for (std::int64_t t = 0; t < threads; ++t) {
        std::memcpy(before.data(), out, sizeof(T) * static_cast<std::size_t>(n));
        phase(t, threads);
        for (std::int64_t i = 0; i < n; ++i)
            if (std::memcmp(&before[static_cast<std::size_t>(i)], &out[i], sizeof(T)) != 0) ++writes[static_cast<std::size_t>(i)];
    }
    for (const int w : writes) REQUIRE(w == 1);
}

template <class T>
std::vector<T> values_of(const T* p, std::int64_t n) {
    return std::vector<T>(p, p + n);
}

/// `n` elements starting `shift` elements past a 16-byte boundary.
template <class T>
struct shifted {
    std::vector<T> storage;
    T* data;
    shifted(std::int64_t n, int shift) : storage(static_cast<std::size_t>(n) + 8) {
        data = storage.data();
        while (!cu::aligned16(data)) ++data;
        data += shift;
    }
};

/// The phases take 32- or 64-bit indices: both are run.
template <class Check>
void for_index_types(Check check) {
    check(std::int32_t{});
    check(std::int64_t{});
}
}  // namespace

TEST_CASE("emulated fill and add match the cpu backend, aligned or not, both index types") {
    for_index_types([](auto index) {
        using I = decltype(index);
        for (const auto& g : grids)
            for (const std::int64_t n : sizes)
                for (const int shift : {0, 1}) {  // 1: scalar path throughout
                    CAPTURE(g.blocks);
                    CAPTURE(g.threads);
                    CAPTURE(n);
                    CAPTURE(shift);
                    const auto a = dt::rand<float>({n}), b = dt::rand<float>({n});
                    shifted<float> out(n, shift), sa(n, shift);
                    // Not memcpy with n * sizeof(float): GCC 12 at -O3 takes n for negative there
                    // and stops a Release build with a false -Wstringop-overflow.
                    const std::vector<float> a_values = a.to_vector();
                    std::copy(a_values.begin(), a_values.end(), sa.data);
                    const I ni = static_cast<I>(n);
                    run_elementwise(g, out.data, n, [&](I t, I T) { cu::fill_phase(out.data, ni, 2.5f, t, T); });
                    CHECK(values_of(out.data, n) == dt::full<float>({n}, 2.5f).to_vector());
                    run_elementwise(g, out.data, n, [&](I t, I T) { cu::map_linear_phase(dt::detail::plus{}, out.data, ni, 0u, t, T, static_cast<const float*>(sa.data), b.data()); });
                    CHECK(values_of(out.data, n) == (a + b).to_vector());
                }
    });
}

TEST_CASE_TEMPLATE("emulated map of exp, log, tanh, sigmoid and pow gives the cpu backend's bits, specials included",
                   T, float, double) {
    // randn values, then the edges: ±0, ±inf, NaN, subnormals, the largest finite values
    dt::generator gen(5);
    auto values = dt::randn<T>({1000}, dt::cpu_device{}, gen).to_vector();
    for (const T v : {T(0), -T(0), std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity(),
                      std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::denorm_min(),
                      -std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), T(1), T(-1), T(100)})
        values.push_back(v);
    const auto n = static_cast<std::int64_t>(values.size());
    const auto x = dt::from_values<T>(values, {n});
    const auto y = dt::from_values<T>(std::vector<T>(values.rbegin(), values.rend()), {n});
    const auto check = [&](auto f, const dt::tensor<T, dt::cpu_device>& want, auto... in) {
        std::vector<T> out(values.size());
        const std::int64_t threads = 3 * 32;  // (NaN results: run_elementwise's write count cannot see them)
        for (std::int64_t t = 0; t < threads; ++t) cu::map_linear_phase(f, out.data(), n, 0u, t, threads, in...);
        CHECK(std::memcmp(out.data(), want.data(), out.size() * sizeof(T)) == 0);
    };
    check(dt::detail::exp_of{}, dt::exp(x), x.data());
    check(dt::detail::log_of{}, dt::log(x), x.data());
    check(dt::detail::tanh_of{}, dt::tanh(x), x.data());
    check(dt::detail::sigmoid_of{}, dt::sigmoid(x), x.data());
    check(dt::detail::power{}, dt::pow(x, y), x.data(), y.data());
}

namespace {
/// The loop plan of a binary op on contiguous operands.
dt::detail::loop_plan<3> plan_of(const dt::shape& out, const dt::shape& a, const dt::shape& b) {
    const dt::strides so = dt::strides::contiguous(out), sa = dt::strides::contiguous(a), sb = dt::strides::contiguous(b);
    return dt::detail::make_loop_plan<3>(out, {&out, &a, &b}, {&so, &sa, &sb});
}
}  // namespace

TEST_CASE("a broadcast is recognised as a repeating operand only when it is one") {
    const auto repeat = [](dt::shape out, dt::shape a, dt::shape b) {
        return dt::detail::find_repeat(plan_of(out, a, b));
    };
    CHECK(repeat({5, 7}, {5, 7}, {7}).period == 7);
    CHECK(repeat({5, 7}, {5, 7}, {7}).b_repeats);
    CHECK(repeat({5, 7}, {1, 7}, {5, 7}).period == 7);
    CHECK_FALSE(repeat({5, 7}, {1, 7}, {5, 7}).b_repeats);
    CHECK(repeat({2, 3, 4}, {2, 3, 4}, {3, 4}).period == 12);
    CHECK(repeat({2, 3, 4}, {2, 3, 4}, {1}).period == 1);
    CHECK(repeat({5, 7}, {5, 1}, {7}).period == 0);        // both stretch
    CHECK(repeat({5, 7}, {5, 7}, {5, 1}).period == 0);     // a column: not a period
    CHECK(repeat({2, 3, 4}, {2, 3, 4}, {3, 1}).period == 0);
}

TEST_CASE("emulated repeating add (bias) and general broadcast add match the cpu backend") {
    for_index_types([](auto index) {
        using I = decltype(index);
        for (const auto& g : grids)
            for (const std::int64_t rows : {1, 3, 33})
                for (const std::int64_t period : {1, 4, 7, 8, 12, 1000}) {  // 4, 8, 12: packs
                    CAPTURE(g.blocks);
                    CAPTURE(g.threads);
                    CAPTURE(rows);
                    CAPTURE(period);
                    const auto x = dt::rand<float>({rows, period}), bias = dt::rand<float>({period});
                    const std::int64_t n = rows * period;
                    std::vector<float> out(static_cast<std::size_t>(n));
                    run_elementwise(g, out.data(), n, [&](I t, I T) {
                        cu::map_repeat_phase(dt::detail::plus{}, false, out.data(), x.data(), bias.data(), static_cast<I>(n),
                                             static_cast<I>(period), t, T);
                    });
                    CHECK(out == (x + bias).to_vector());
                }
    });
    for (const auto& g : grids)
        for (const std::int64_t n : sizes) {
            const auto bias = dt::rand<float>({7});  // [n, 1] + [7]: the general path
            const auto column = dt::rand<float>({n, 1});
            std::vector<float> wide(static_cast<std::size_t>(n * 7));
            const auto plan = plan_of({n, 7}, column.shape(), bias.shape());
            run_elementwise(g, wide.data(), n * 7, [&](std::int64_t t, std::int64_t T) {
                cu::map_strided_phase(dt::detail::plus{}, plan, wide.data(), t, T, static_cast<const float*>(column.data()),
                                      static_cast<const float*>(bias.data()));
            });
            CHECK(wide == (column + bias).to_vector());
        }
    // a transposed operand, a scalar repeated over the output (the linear path's splat)
    for (const auto& g : grids)
        for (const std::int64_t n : sizes) {
            const auto m = dt::rand<float>({7, n}), k = dt::rand<float>({n, 7}), one = dt::rand<float>({1});
            const auto mt = m.t();
            const dt::shape out_shape{n, 7};
            const dt::strides so = dt::strides::contiguous(out_shape);
            const auto plan = dt::detail::make_loop_plan<3>(out_shape, {&out_shape, &mt.shape(), &k.shape()},
                                                           {&so, &mt.strides(), &k.strides()});
            std::vector<float> out(static_cast<std::size_t>(n * 7));
            run_elementwise(g, out.data(), n * 7, [&](std::int64_t t, std::int64_t T) {
                cu::map_strided_phase(dt::detail::plus{}, plan, out.data(), t, T, static_cast<const float*>(mt.data()),
                                      static_cast<const float*>(k.data()));
            });
            CHECK(out == (mt + k).to_vector());
            run_elementwise(g, out.data(), n * 7, [&](std::int64_t t, std::int64_t T) {
                cu::map_linear_phase(dt::detail::plus{}, out.data(), n * 7, 2u, t, T, static_cast<const float*>(k.data()),
                                     static_cast<const float*>(one.data()));
            });
            CHECK(out == (k + one).to_vector());
        }
}

TEST_CASE("emulated rand is bit-identical to the cpu backend for every grid and alignment") {
    for_index_types([](auto index) {
        using I = decltype(index);
        for (const auto& g : grids)
            for (const std::int64_t n : sizes)
                for (const int shift : {0, 1}) {
                    CAPTURE(n);
                    CAPTURE(shift);
                    dt::generator cpu_gen(77);
                    cpu_gen.set_offset(40);
                    const auto expected_f = dt::rand<float>({n}, dt::cpu_device{}, cpu_gen).to_vector();
                    const auto expected_d = dt::rand<double>({n}, dt::cpu_device{}, cpu_gen).to_vector();
                    shifted<float> f(n, shift);
                    shifted<double> d(n, shift);
                    const I ni = static_cast<I>(n);
                    run_elementwise(g, f.data, n, [&](I t, I T) { cu::uniform_phase(f.data, ni, 77, 10, t, T); });
                    const std::uint64_t double_first = 10 + (static_cast<std::uint64_t>(n) + 3) / 4;
                    run_elementwise(g, d.data, n, [&](I t, I T) { cu::uniform_phase(d.data, ni, 77, double_first, t, T); });
                    CHECK(values_of(f.data, n) == expected_f);
                    CHECK(values_of(d.data, n) == expected_d);
                }
    });
}

TEST_CASE("emulated randn and randint are bit-identical to the cpu backend for every grid and alignment") {
    for_index_types([](auto index) {
        using I = decltype(index);
        for (const auto& g : grids)
            for (const std::int64_t n : sizes)
                for (const int shift : {0, 1}) {
                    CAPTURE(g.blocks);
                    CAPTURE(g.threads);
                    CAPTURE(n);
                    CAPTURE(shift);
                    dt::generator cpu_gen(78);
                    cpu_gen.set_offset(40);
                    const auto expected_f = dt::randn<float>({n}, dt::cpu_device{}, cpu_gen).to_vector();
                    const auto expected_d = dt::randn<double>({n}, dt::cpu_device{}, cpu_gen).to_vector();
                    const auto expected_i = dt::randint<std::int32_t>(1, 1008, {n}, dt::cpu_device{}, cpu_gen).to_vector();
                    shifted<float> f(n, shift);
                    shifted<double> d(n, shift);
                    shifted<std::int32_t> r(n, shift);
                    const I ni = static_cast<I>(n);
                    const std::uint64_t first_f = 10, first_d = first_f + (static_cast<std::uint64_t>(n) + 3) / 4,
                                        first_i = first_d + (static_cast<std::uint64_t>(n) + 1) / 2;
                    run_elementwise(g, f.data, n, [&](I t, I T) { cu::normal_phase(f.data, ni, 78, first_f, t, T); });
                    run_elementwise(g, d.data, n, [&](I t, I T) { cu::normal_phase(d.data, ni, 78, first_d, t, T); });
                    run_elementwise(g, r.data, n, [&](I t, I T) {
                        cu::randint_phase(r.data, ni, 1, 1007, 78, first_i, t, T);  // no 0: run_elementwise sees a write as a change from 0
                    });
                    CHECK(std::memcmp(f.data, expected_f.data(), sizeof(float) * static_cast<std::size_t>(n)) == 0);
                    CHECK(std::memcmp(d.data, expected_d.data(), sizeof(double) * static_cast<std::size_t>(n)) == 0);
                    CHECK(values_of(r.data, n) == expected_i);
                    CHECK(cpu_gen.offset() == 4 * (first_i + (static_cast<std::uint64_t>(n) + 1) / 2));
                }
    });
}

TEST_CASE("emulated arange and linspace (generate kernel) match the cpu backend") {
    for (const auto& g : grids) {
        const auto arange = dt::arange<double>(3, 40, 0.7).to_vector();
        const auto n = static_cast<std::int64_t>(arange.size());
        std::vector<double> out(arange.size());
        run_elementwise(g, out.data(), n, [&](std::int64_t t, std::int64_t T) {
            cu::generate_phase(dt::detail::arange_value<double>{3, 0.7}, out.data(), n, t, T);
        });
        CHECK(out == arange);
        const auto linspace = dt::linspace<float>(-3, 11, 1001).to_vector();
        std::vector<float> lin(linspace.size());
        run_elementwise(g, lin.data(), 1001, [&](std::int32_t t, std::int32_t T) {
            cu::generate_phase(dt::detail::linspace_value<float>{-3, 11, 14.f / 1000, 1001}, lin.data(), 1001, t, T);
        });
        CHECK(lin == linspace);
    }
}

// ---- the block emulator's race checks ----------------------------------------------------

namespace {
/// A body in the shape of the GEMV staging: each thread copies one float into shared
/// memory, then reads its neighbour's. `wait`, `barrier`: whether it waits for its
/// cp.async group and passes a barrier in between, as it must.
template <class Ctx>
float* neighbour_body(Ctx& ctx, const float* src, float* dst, bool wait, bool barrier) {
    float* s = ctx.template shared<float, 64, 16>();
    ctx.each_thread([&](int t) { cu::async_copy_element(s + t, src + t, true, src); });
    ctx.commit();
    if (wait) ctx.template wait<0>();
    if (barrier) ctx.barrier();
    ctx.each_thread([&](int t) { dst[t] = cu::load_pack<1>(s + (t + 1) % 64).v[0]; });
    return s;
}
}  // namespace

TEST_CASE("the block emulator flags a shared read before the barrier or the wait that publishes it") {
    std::vector<float> src(64), dst(64);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i);
    {
        emulated_block right(64, 0);
        neighbour_body(right, src.data(), dst.data(), true, true);
        CHECK(right.error().empty());
        CHECK(right.barriers() == 1);
        CHECK(right.commits() == 1);
        CHECK(dst[63] == 0.f);
    }
    {
        emulated_block no_barrier(64, 0);
        neighbour_body(no_barrier, src.data(), dst.data(), true, false);
        CHECK(no_barrier.error().find("before the barrier that publishes it") != std::string::npos);
    }
    {
        emulated_block no_wait(64, 0);
        neighbour_body(no_wait, src.data(), dst.data(), false, true);
        CHECK(no_wait.error().find("before its cp.async group was waited for") != std::string::npos);
    }
    {
        emulated_block overwrite(64, 0);  // the next copy, with no barrier after the reads
        float* s = neighbour_body(overwrite, src.data(), dst.data(), true, true);
        overwrite.each_thread([&](int t) { cu::async_copy_element(s + t, src.data(), true, src.data()); });
        CHECK(overwrite.error().find("overwrites shared word 0 that another thread read") != std::string::npos);
    }
}

TEST_CASE("the emulated gemm and gemv bodies pass their barriers and cp.async groups in the kernels' order") {
    // small tile, k = 33: three stages of 16 (the last one row deep): two barriers and one commit a stage, plus the first
    std::vector<float> a(64 * 33, 1.f), b(33 * 64, 1.f), c(64 * 64);
    const cu::gemm_params<float> p{64, 64, 33, a.data(), 33, 1, b.data(), 64, 1, c.data(), 64, nullptr};
    emulated_block gemm(cu::gemm_block_shape_small::threads, 0);
    cu::gemm_block<cu::gemm_block_shape_small>(gemm, p, 1, 1);
    CHECK(gemm.error().empty());
    CHECK(gemm.barriers() == 6);
    CHECK(gemm.commits() == 4);
    CHECK(c[0] == 33.f);
    // gemv, k = 600 fp32 (chunks of 256): three chunks of two barriers and one commit
    using G = cu::gemv_tile<float, 4>;
    std::vector<float> x(4 * 600, 1.f), w(8 * 600, 1.f), y(4 * 8);
    emulated_block gemv(G::threads, 0);
    cu::gemv_block<G>(gemv, cu::gemm_params<float>{4, 8, 600, x.data(), 600, 1, w.data(), 1, 600, y.data(), 8, nullptr});
    CHECK(gemv.error().empty());
    CHECK(gemv.barriers() == 6);
    CHECK(gemv.commits() == 3);
    CHECK(y[0] == 600.f);
}

// ---- GEMM ----------------------------------------------------------------------------------

TEST_CASE("the gemm block order visits every tile exactly once") {
    for (const std::int64_t tiles_m : {1, 3, 8, 9, 17})
        for (const std::int64_t tiles_n : {1, 2, 5, 33}) {
            std::vector<int> seen(static_cast<std::size_t>(tiles_m * tiles_n));
            for (std::int64_t id = 0; id < tiles_m * tiles_n; ++id) {
                std::int64_t tm = -1, tn = -1;
                cu::gemm_tile_of(id, tiles_m, tiles_n, tm, tn);
                REQUIRE(tm >= 0);
                REQUIRE(tm < tiles_m);
                REQUIRE(tn >= 0);
                REQUIRE(tn < tiles_n);
                ++seen[static_cast<std::size_t>(tm * tiles_n + tn)];
            }
            for (const int s : seen) REQUIRE(s == 1);
        }
}

namespace {
struct mnk { std::int64_t m, n, k; };

/// The same bits.
template <class T>
void check_bits(const std::vector<T>& got, const std::vector<T>& expected) {
    REQUIRE(got.size() == expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        CAPTURE(i);
        REQUIRE(std::memcmp(&got[i], &expected[i], sizeof(T)) == 0);
    }
}

/// C = A·B + bias in the order of detail/gemm_order.hpp, element by element.
template <class T>
std::vector<T> reference(const cu::gemm_params<T>& p, bool gemv_order) {
    std::vector<T> c(static_cast<std::size_t>(p.m * p.n));
    for (std::int64_t i = 0; i < p.m; ++i)
        for (std::int64_t j = 0; j < p.n; ++j) {
            const T* a = p.a + i * p.a_row;
            const T* b = p.b + j * p.b_col;
            const T sum = gemv_order ? dt::detail::gemv_order_dot(p.k, a, p.a_col, b, p.b_row)
                                     : dt::detail::gemm_order_dot(p.k, a, p.a_col, b, p.b_row);
            c[static_cast<std::size_t>(i * p.n + j)] = dt::detail::plus_bias(sum, p.bias, j);
        }
    return c;
}

/// matmul (B n-contiguous: 16-byte copies where aligned), linear (B
/// transposed) and a column-major A through tile S, C packed or with a padded,
/// misaligned row stride: the bits of the GEMM order, and of the CPU's matmul
/// and linear where they take it (m > 16).
template <class S, class T>
void check_gemm_block_shape(const std::vector<mnk>& cases) {
    dt::generator gen(4);
    for (const auto [m, n, k] : cases) {
        CAPTURE(m);
        CAPTURE(n);
        CAPTURE(k);
        const auto a = dt::rand<T>({m, k}, dt::cpu_device{}, gen);
        const auto b = dt::rand<T>({k, n}, dt::cpu_device{}, gen);
        const auto w = dt::rand<T>({n, k}, dt::cpu_device{}, gen);  // linear's weight, read transposed
        const auto bias = dt::rand<T>({n}, dt::cpu_device{}, gen);
        const bool cpu_same_order = !dt::detail::uses_gemv_order(m, n, k);
        std::vector<T> c(static_cast<std::size_t>(m * n), T{-1});
        const cu::gemm_params<T> mm{m, n, k, a.data(), k, 1, b.data(), n, 1, c.data(), n, nullptr};
        emulate_gemm<S>(mm);
        check_bits(c, reference(mm, false));
        if (cpu_same_order) check_bits(c, dt::matmul(a, b).to_vector());
        const cu::gemm_params<T> lin{m, n, k, a.data(), k, 1, w.data(), 1, k, c.data(), n, bias.data()};
        emulate_gemm<S>(lin);
        check_bits(c, reference(lin, false));
        if (cpu_same_order) check_bits(c, dt::linear(a, w, bias).to_vector());
        std::vector<T> a_columns(static_cast<std::size_t>(m * k));  // A column-major: copies along m
        for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t p = 0; p < k; ++p) a_columns[static_cast<std::size_t>(p * m + i)] = a.data()[i * k + p];
        emulate_gemm<S>(cu::gemm_params<T>{m, n, k, a_columns.data(), 1, m, b.data(), n, 1, c.data(), n, nullptr});
        check_bits(c, reference(mm, false));
        const std::int64_t ldc = n + 1;  // C rows not 16-byte aligned: scalar stores
        std::vector<T> padded(static_cast<std::size_t>(m * ldc), T{-1});
        const cu::gemm_params<T> mm_bias{m, n, k, a.data(), k, 1, b.data(), n, 1, padded.data(), ldc, bias.data()};
        emulate_gemm<S>(mm_bias);
        const auto expected = reference(mm_bias, false);
        std::vector<T> inside(static_cast<std::size_t>(m * n));
        for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < n; ++j)
                inside[static_cast<std::size_t>(i * n + j)] = padded[static_cast<std::size_t>(i * ldc + j)];
        check_bits(inside, expected);
    }
}
}  // namespace

TEST_CASE("emulated gemm kernel, large fp32 tile, matches the cpu gemm for sizes off the tile") {
    // n = 130: the last run of 4 columns holds 2 (a partial 16-byte copy); n = 66: rows misaligned.
    check_gemm_block_shape<cu::gemm_block_shape_large, float>({{1, 1, 1}, {129, 130, 33}, {5, 66, 16}, {130, 4, 0}, {17, 40, 300}});
}

TEST_CASE("emulated gemm kernel with operands and output off 16-byte boundaries") {
    // One element past a 16-byte boundary: 16-byte copies are refused for such rows, and a
    // zero-filled copy must still name an aligned source (the emulator's cp.async checks).
    const auto run = [](auto zero, std::int64_t m, std::int64_t n, std::int64_t k) {
        using T = decltype(zero);
        CAPTURE(sizeof(T));
        CAPTURE(n);
        const auto a = dt::rand<T>({m, k}), b = dt::rand<T>({k, n}), bias = dt::rand<T>({n});
        shifted<T> sa(m * k, 1), sb(k * n, 1), sc(m * n, 1);
        std::copy(a.data(), a.data() + m * k, sa.data);
        std::copy(b.data(), b.data() + k * n, sb.data);
        const cu::gemm_params<T> p{m, n, k, sa.data, k, 1, sb.data, n, 1, sc.data, n, bias.data()};
        emulate_gemm<cu::gemm_block_shape_small>(p);
        check_bits(values_of(sc.data, m * n), reference(p, false));
    };
    for (const std::int64_t n : {4, 5, 66}) {
        run(0.f, 9, n, 21);
        run(0.0, 9, n, 21);
    }
}

TEST_CASE("emulated gemm kernel, small tile, matches the cpu gemm in fp32 and fp64") {
    const std::vector<mnk> cases = {{1, 1, 1},    {7, 7, 7},     {33, 65, 17}, {64, 64, 16}, {100, 3, 70},
                                    {3, 130, 31}, {129, 1, 2},   {5, 4, 0},    {65, 68, 48}, {20, 9, 513}};
    check_gemm_block_shape<cu::gemm_block_shape_small, float>(cases);
    check_gemm_block_shape<cu::gemm_block_shape_small, double>(cases);
}

namespace {
template <class G, class T>
void check_gemv(std::int64_t m) {
    dt::generator gen(5);
    // k = 1030: several chunks (256 fp32, 128 fp64) and a ragged last step; 4100: more than
    // two chunks in flight; n = 33: a block and one feature
    for (const auto& [n, k] : std::vector<std::pair<std::int64_t, std::int64_t>>{
             {1, 1}, {17, 1030}, {33, 512}, {8, 0}, {5, 4100}, {3, 17}}) {
        CAPTURE(m);
        CAPTURE(n);
        CAPTURE(k);
        const auto x = dt::rand<T>({m, k}, dt::cpu_device{}, gen);
        const auto w = dt::rand<T>({n, k}, dt::cpu_device{}, gen);
        const auto b = dt::rand<T>({k, n}, dt::cpu_device{}, gen);
        const auto bias = dt::rand<T>({n}, dt::cpu_device{}, gen);
        std::vector<T> out(static_cast<std::size_t>(m * n), T{-1});
        const cu::gemm_params<T> lin{m, n, k, x.data(), k, 1, w.data(), 1, k, out.data(), n, bias.data()};
        emulate_gemv<G>(lin);
        check_bits(out, reference(lin, true));
        check_bits(out, dt::linear(x, w, bias).to_vector());
        emulate_gemv<G>(cu::gemm_params<T>{m, n, k, x.data(), k, 1, w.data(), 1, k, out.data(), n, nullptr});
        check_bits(out, dt::linear(x, w).to_vector());
        // matmul (B n-contiguous): the GEMV kernel too, since m <= 16
        emulate_gemv<G>(cu::gemm_params<T>{m, n, k, x.data(), k, 1, b.data(), n, 1, out.data(), n, nullptr});
        check_bits(out, dt::matmul(x, b).to_vector());
    }
}
}  // namespace

TEST_CASE("emulated small-batch linear and matmul (gemv kernel) give the cpu's bits") {
    for (const std::int64_t m : {1, 3, 4}) {
        check_gemv<cu::gemv_tile<float, 4>, float>(m);
        check_gemv<cu::gemv_tile<double, 4>, double>(m);
    }
    for (const std::int64_t m : {5, 16}) {
        check_gemv<cu::gemv_tile<float, cu::gemv_max_batch>, float>(m);
        check_gemv<cu::gemv_tile<double, cu::gemv_max_batch>, double>(m);
    }
}

// ---- transpose ---------------------------------------------------------------------------------

namespace {
/// Runs transpose_kernel's body for every block of its grid with context Ctx
/// (emulated_block, or a wrapper of it); returns the first race found ("" if none).
template <class Ctx = emulated_block, class T>
std::string emulate_transpose(const cu::transpose_params<T>& p) {
    for (std::int64_t id = 0; id < p.blocks(); ++id) {
        emulated_block block(cu::transpose_threads, id);
        if constexpr (std::is_same_v<Ctx, emulated_block>) {
            cu::transpose_block(block, p);
            REQUIRE(block.barriers() == 1);
        } else {
            Ctx wrapped{block};
            cu::transpose_block(wrapped, p);
        }
        if (!block.error().empty()) return block.error();
    }
    return "";
}

/// An emulated block that forgets its barriers: what the body would be without its one.
struct barrier_forgetting_block {
    emulated_block& b;
    std::int64_t block() const { return b.block(); }
    template <class F>
    void each_thread(F&& f) { b.each_thread(f); }
    void barrier() {}
    template <class T, int N, int Align>
    T* shared() { return b.shared<T, N, Align>(); }
};

/// The copy plan of `in` into a fresh contiguous tensor of its shape.
template <class T>
dt::detail::loop_plan<2> copy_plan(const dt::tensor<T, dt::cpu_device>& out, const dt::tensor<T, dt::cpu_device>& in) {
    return dt::detail::make_loop_plan<2>(out.shape(), {&out.shape(), &in.shape()}, {&out.strides(), &in.strides()});
}

/// A [rows, cols] matrix of T (all values differ where T allows).
template <class T>
dt::tensor<T, dt::cpu_device> matrix_of(std::int64_t rows, std::int64_t cols) {
    if constexpr (std::is_floating_point_v<T>) return dt::rand<T>({rows, cols});
    else if constexpr (std::is_same_v<T, bool>) return dt::rand<float>({rows, cols}) > 0.5f;
    else return dt::randint<T>(sizeof(T) < 4 ? -30000 : -1000000, sizeof(T) < 4 ? 30000 : 1000000, {rows, cols});
}

/// x.t().contiguous() through the emulated transpose kernel, compared bit for bit with the CPU's.
template <class T>
void check_transpose(std::int64_t rows, std::int64_t cols) {
    CAPTURE(rows);
    CAPTURE(cols);
    const auto x = matrix_of<T>(cols, rows);
    const auto xt = x.t();
    const auto want = xt.contiguous();
    auto out = dt::empty<T>({rows, cols});
    std::memset(static_cast<void*>(out.data()), 0xab, sizeof(T) * static_cast<std::size_t>(rows * cols));
    // the kernel's parameters as the launcher derives them; a vector's copy plan is 1-D (no transpose)
    const cu::transpose_params<T> p{out.data(), xt.data(), rows, cols, 1, cols, rows, 0, 0};
    const auto plan = copy_plan(out, xt);
    REQUIRE(cu::is_transposed_copy(plan) == (rows > 1 && cols > 1));
    if (cu::is_transposed_copy(plan)) {
        const auto q = cu::transpose_params_of(plan, out.data(), static_cast<const T*>(xt.data()));
        CHECK((q.out == p.out && q.in == p.in && q.rows == rows && q.cols == cols && q.batch == 1 &&
               q.out_row == cols && q.in_column == rows));
    }
    CHECK(p.blocks() == (rows + 31) / 32 * ((cols + 31) / 32));
    const std::string race = emulate_transpose(p);
    CHECK_MESSAGE(race.empty(), race);
    CHECK(std::memcmp(out.data(), want.data(), sizeof(T) * static_cast<std::size_t>(rows * cols)) == 0);
}
}  // namespace

TEST_CASE("emulated transpose kernel copies transposed matrices off the tile as the cpu does") {
    const std::vector<std::array<std::int64_t, 2>> shapes = {{1, 1},   {31, 33}, {33, 31}, {64, 64},
                                                             {100, 7}, {7, 100}, {257, 129}, {2, 1000}};
    for (const auto& [rows, cols] : shapes) {
        check_transpose<float>(rows, cols);
        check_transpose<double>(rows, cols);
    }
    for (const auto& [rows, cols] : {std::array<std::int64_t, 2>{33, 31}, {64, 64}}) {
        check_transpose<std::int64_t>(rows, cols);
        check_transpose<bool>(rows, cols);  // 1-byte elements, 4-byte tile slots
        check_transpose<std::int16_t>(rows, cols);
    }
    SUBCASE("a batch of planes, and an output with a row stride of its own") {
        const auto x = dt::rand<float>({3, 33, 70});
        const auto xt = x.transpose(1, 2);  // [3, 70, 33]
        auto out = dt::empty<float>({3, 70, 33});
        const auto plan = copy_plan(out, xt);
        REQUIRE(plan.rank == 3);
        REQUIRE(cu::is_transposed_copy(plan));
        const auto p = cu::transpose_params_of(plan, out.data(), static_cast<const float*>(xt.data()));
        CHECK(p.blocks() == 3 * 3 * 2);
        CHECK(emulate_transpose(p).empty());
        CHECK(out.to_vector() == xt.contiguous().to_vector());

        auto wide = dt::zeros<float>({70, 40});
        auto window = wide.narrow(1, 5, 33);  // rows 40 apart
        const auto plane = xt[1];
        const auto window_plan = copy_plan(window, plane);
        REQUIRE(cu::is_transposed_copy(window_plan));
        CHECK(emulate_transpose(cu::transpose_params_of(window_plan, window.data(), static_cast<const float*>(plane.data())))
                  .empty());
        for (std::int64_t i = 0; i < 70; ++i)
            for (std::int64_t j = 0; j < 40; ++j) {
                const float want = j >= 5 && j < 38 ? plane(i, j - 5) : 0.f;
                if (wide(i, j) != want) FAIL_CHECK("element (", i, ", ", j, ") is ", wide(i, j), ", not ", want);
            }
    }
    SUBCASE("other copies keep their kernels") {
        const auto x = dt::rand<float>({8, 6});
        auto out6 = dt::empty<float>({8, 6});
        auto out3 = dt::empty<float>({8, 3});
        CHECK_FALSE(cu::is_transposed_copy(copy_plan(out6, x)));                  // contiguous: 1-D
        CHECK_FALSE(cu::is_transposed_copy(copy_plan(out3, x.narrow(1, 1, 3))));  // rows apart, not transposed
        CHECK_FALSE(cu::is_transposed_copy(copy_plan(out6, x.narrow(0, 0, 1).expand({8, 6}))));  // a broadcast row
        CHECK(cu::is_transposed_copy(copy_plan(out6, x.t().contiguous().t())));
    }
    SUBCASE("the emulator sees the tile: without the barrier a read is flagged") {
        const auto x = dt::rand<float>({40, 40});
        auto out = dt::empty<float>({40, 40});
        const auto xt = x.t();
        const auto p = cu::transpose_params_of(copy_plan(out, xt), out.data(), static_cast<const float*>(xt.data()));
        CHECK(emulate_transpose<barrier_forgetting_block>(p).find("before the barrier that publishes it") !=
              std::string::npos);
    }
}

// ---- the launchers' decisions, for an H200 (132 multiprocessors of 2048 threads) ---------------

TEST_CASE("launch plan: grids fill one wave, 32-bit indices where they fit, a kernel per gemm shape") {
    const cu::device_shape h200{132, 2048};
    const std::int64_t limit = cu::resident_limit(h200);  // 8 blocks of 256 on each
    CHECK(limit == 132 * 8);
    CHECK(cu::elementwise_blocks(1, limit) == 1);
    CHECK(cu::elementwise_blocks(257, limit) == 2);
    CHECK(cu::elementwise_blocks(std::int64_t{1} << 40, limit) == limit);    // one resident wave
    CHECK(cu::elementwise_blocks(std::int64_t{1} << 40, 132 * 6) == 132 * 6);  // as registers allow
    CHECK(cu::elementwise_blocks(1000, 0) == 1);                             // never an empty grid
    CHECK(cu::resident_limit(cu::device_shape{}) == 1);

    CHECK(cu::index_fits_int32(std::int64_t{1} << 30, 132 * 8));
    CHECK_FALSE(cu::index_fits_int32(std::numeric_limits<std::int32_t>::max() - 1000, 132 * 8));
    CHECK_FALSE(cu::index_fits_int32(std::int64_t{1} << 31, 1));

    using choice = cu::gemm_kernel_choice;
    const auto matmul = [](std::int64_t m, std::int64_t n, std::int64_t k) {
        return cu::gemm_params<float>{m, n, k, nullptr, k, 1, nullptr, n, 1, nullptr, n, nullptr};
    };
    const auto linear = [](std::int64_t m, std::int64_t n, std::int64_t k) {
        return cu::gemm_params<float>{m, n, k, nullptr, k, 1, nullptr, 1, k, nullptr, n, nullptr};
    };
    CHECK(cu::choose_gemm(matmul(4096, 4096, 4096), h200) == choice::tile_large);
    CHECK(cu::choose_gemm(matmul(8192, 8192, 1024), h200) == choice::tile_large);
    CHECK(cu::choose_gemm(linear(4096, 4096, 4096), h200) == choice::tile_large);
    CHECK(cu::choose_gemm(matmul(1024, 1024, 1024), h200) == choice::tile_small);  // 64 large tiles < 132
    for (const std::int64_t batch : {1, 2, 4})
        CHECK(cu::choose_gemm(linear(batch, 4096, 4096), h200) == choice::gemv_batch_4);
    for (const std::int64_t batch : {5, 8, 16})
        CHECK(cu::choose_gemm(linear(batch, 4096, 4096), h200) == choice::gemv_batch_16);
    CHECK(cu::choose_gemm(linear(17, 4096, 4096), h200) == choice::tile_small);
    CHECK(cu::choose_gemm(matmul(16, 4096, 4096), h200) == choice::gemv_batch_16);  // the GEMV order, any layout
    CHECK(cu::choose_gemm(matmul(17, 4096, 4096), h200) == choice::tile_small);
    const cu::gemm_params<double> fp64{4096, 4096, 4096, nullptr, 4096, 1, nullptr, 4096, 1, nullptr, 4096, nullptr};
    CHECK(cu::choose_gemm(fp64, h200) == choice::tile_small);
}
