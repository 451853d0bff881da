// A CPU block emulator for the CUDA kernels: runs the phase functions of
// backend/cuda/phases.hpp over a simulated grid (every block, every thread,
// barriers as phase boundaries) and checks them against the CPU backend for odd
// sizes and odd grids, without a GPU.
#include "test_support.hpp"

#include <devtensor/backend/cuda/phases.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace cu = devtensor::backend_cuda;

namespace {
struct grid { int blocks, threads; };
const std::vector<grid> grids = {{1, 1}, {1, 32}, {3, 32}, {7, 256}, {2, 100}};
const std::vector<std::int64_t> sizes = {1, 7, 33, 1000, 4099};

/// Runs `phase(thread, threads)` for every thread of the grid, one after the
/// other, and checks that every element of `out` is written by exactly one thread.
template <class T, class Phase>
void run_elementwise(const grid& g, std::vector<T>& out, Phase phase) {
    const T sentinel = std::numeric_limits<T>::quiet_NaN();
    std::vector<int> writes(out.size());
    std::fill(out.begin(), out.end(), sentinel);
    const std::int64_t threads = std::int64_t{g.blocks} * g.threads;
    for (std::int64_t t = 0; t < threads; ++t) {
        const std::vector<T> before = out;
        phase(t, threads);
        for (std::size_t i = 0; i < out.size(); ++i)
            if (std::memcmp(&before[i], &out[i], sizeof(T)) != 0) ++writes[i];
    }
    for (std::size_t i = 0; i < out.size(); ++i) REQUIRE(writes[i] == 1);
}
}  // namespace

TEST_CASE("emulated fill, add and broadcast add match the cpu backend") {
    for (const auto& g : grids)
        for (const std::int64_t n : sizes) {
            CAPTURE(g.blocks);
            CAPTURE(g.threads);
            CAPTURE(n);
            const auto a = dt::rand<float>({n}), b = dt::rand<float>({n});
            std::vector<float> out(static_cast<std::size_t>(n));
            run_elementwise(g, out, [&](std::int64_t t, std::int64_t T) { cu::fill_phase(out.data(), n, 2.5f, t, T); });
            CHECK(out == dt::full<float>({n}, 2.5f).to_vector());
            run_elementwise(g, out, [&](std::int64_t t, std::int64_t T) { cu::add_phase(a.data(), b.data(), out.data(), n, t, T); });
            CHECK(out == (a + b).to_vector());

            const auto bias = dt::rand<float>({7});  // [n, 7] + [7] and [n, 1] + [7]
            const auto rows = dt::rand<float>({n, 7}), column = dt::rand<float>({n, 1});
            std::vector<float> wide(static_cast<std::size_t>(n * 7));
            auto s = dt::detail::make_broadcast_strides({n, 7}, rows.shape(), bias.shape());
            run_elementwise(g, wide, [&](std::int64_t t, std::int64_t T) {
                cu::add_broadcast_phase(rows.data(), bias.data(), wide.data(), n * 7, s, t, T);
            });
            CHECK(wide == (rows + bias).to_vector());
            s = dt::detail::make_broadcast_strides({n, 7}, column.shape(), bias.shape());
            run_elementwise(g, wide, [&](std::int64_t t, std::int64_t T) {
                cu::add_broadcast_phase(column.data(), bias.data(), wide.data(), n * 7, s, t, T);
            });
            CHECK(wide == (column + bias).to_vector());
        }
}

TEST_CASE("emulated rand is bit-identical to the cpu backend for every grid") {
    for (const auto& g : grids)
        for (const std::int64_t n : sizes) {
            CAPTURE(n);
            dt::generator cpu_gen(77);
            cpu_gen.set_offset(40);
            const auto expected_f = dt::rand<float>({n}, dt::cpu_device{}, cpu_gen).to_vector();
            const auto expected_d = dt::rand<double>({n}, dt::cpu_device{}, cpu_gen).to_vector();
            std::vector<float> f(static_cast<std::size_t>(n));
            std::vector<double> d(static_cast<std::size_t>(n));
            run_elementwise(g, f, [&](std::int64_t t, std::int64_t T) { cu::uniform_phase(f.data(), n, 77, 10, t, T); });
            const std::uint64_t double_first = 10 + (static_cast<std::uint64_t>(n) + 3) / 4;
            run_elementwise(g, d, [&](std::int64_t t, std::int64_t T) { cu::uniform_phase(d.data(), n, 77, double_first, t, T); });
            CHECK(f == expected_f);
            CHECK(d == expected_d);
        }
}

namespace {
/// Runs gemm_kernel's phases for every block: load (every thread), barrier,
/// compute (every thread), barrier, ..., store. Checks that each load stage
/// writes every shared-memory slot, and (when asked) exactly once.
template <class S, class T>
void emulate_gemm(const cu::gemm_params<T>& p, bool check_exactly_once) {
    const std::int64_t grid_m = (p.m + S::bm - 1) / S::bm, grid_n = (p.n + S::bn - 1) / S::bn;
    std::vector<T> as(S::smem_a), bs(S::smem_b);
    std::vector<std::array<std::array<T, S::tn>, S::tm>> acc(S::threads);
    for (std::int64_t bm = 0; bm < grid_m; ++bm)
        for (std::int64_t bn = 0; bn < grid_n; ++bn) {
            for (auto& a : acc) a = {};
            for (std::int64_t k0 = 0; k0 < p.k; k0 += S::bk) {
                std::fill(as.begin(), as.end(), std::numeric_limits<T>::quiet_NaN());
                std::fill(bs.begin(), bs.end(), std::numeric_limits<T>::quiet_NaN());
                std::vector<int> writes(as.size() + bs.size());
                for (int t = 0; t < S::threads; ++t) {
                    const auto before_a = as, before_b = bs;
                    cu::gemm_load_phase<S>(p, bm, bn, k0, t, as.data(), bs.data());
                    if (!check_exactly_once) continue;
                    for (std::size_t i = 0; i < as.size(); ++i) writes[i] += std::memcmp(&as[i], &before_a[i], sizeof(T)) != 0;
                    for (std::size_t i = 0; i < bs.size(); ++i) writes[as.size() + i] += std::memcmp(&bs[i], &before_b[i], sizeof(T)) != 0;
                }
                for (const T v : as) REQUIRE(!std::isnan(v));  // the barrier sees a full tile
                for (const T v : bs) REQUIRE(!std::isnan(v));
                if (check_exactly_once)
                    for (const int w : writes) REQUIRE(w <= 1);  // a slot written twice is a race
                for (int t = 0; t < S::threads; ++t) {
                    T (&tile)[S::tm][S::tn] = *reinterpret_cast<T (*)[S::tm][S::tn]>(acc[static_cast<std::size_t>(t)].data());
                    cu::gemm_compute_phase<S>(t, as.data(), bs.data(), tile);
                }
            }
            for (int t = 0; t < S::threads; ++t) {
                const T (&tile)[S::tm][S::tn] = *reinterpret_cast<const T (*)[S::tm][S::tn]>(acc[static_cast<std::size_t>(t)].data());
                cu::gemm_store_phase<S>(p, bm, bn, t, tile);
            }
        }
}

struct mnk { std::int64_t m, n, k; };
}  // namespace

TEST_CASE("emulated gemm kernel matches the cpu gemm, bias fused, for sizes off the tile") {
    using S = cu::gemm_tile_default;
    const std::vector<mnk> cases = {{1, 1, 1}, {7, 7, 7}, {33, 65, 17}, {64, 64, 16}, {100, 3, 1000},
                                    {3, 130, 31}, {129, 1, 2}, {5, 4, 0}};
    dt::generator gen(4);
    bool first = true;
    for (const auto [m, n, k] : cases) {
        CAPTURE(m);
        CAPTURE(n);
        CAPTURE(k);
        const auto a = dt::rand<float>({m, k}, dt::cpu_device{}, gen);
        const auto b = dt::rand<float>({k, n}, dt::cpu_device{}, gen);
        const auto w = dt::rand<float>({n, k}, dt::cpu_device{}, gen);  // linear's weight, read transposed
        const auto bias = dt::rand<float>({n}, dt::cpu_device{}, gen);
        std::vector<float> c(static_cast<std::size_t>(m * n), -1.f);
        emulate_gemm<S>(cu::gemm_params<float>{m, n, k, a.data(), k, 1, b.data(), n, 1, c.data(), n, nullptr}, first);
        first = false;
        const auto expected = dt::matmul(a, b).to_vector();
        for (std::size_t i = 0; i < c.size(); ++i) REQUIRE(c[i] == doctest::Approx(expected[i]).epsilon(1e-5));
        emulate_gemm<S>(cu::gemm_params<float>{m, n, k, a.data(), k, 1, w.data(), 1, k, c.data(), n, bias.data()}, false);
        const auto expected_linear = dt::linear(a, w, bias).to_vector();
        for (std::size_t i = 0; i < c.size(); ++i) REQUIRE(c[i] == doctest::Approx(expected_linear[i]).epsilon(1e-5));
    }
}
