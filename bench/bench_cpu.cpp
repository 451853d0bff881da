// CPU benchmarks: every row runs devtensor beside its ceiling (bench_ceilings.cpp)
// and its peers (OpenBLAS, oneDNN, BLIS, libtorch, Random123) one after another in the same
// run, so the report can divide times measured under the same conditions.
//
// A benchmark's name carries what bench/report.py needs:
//   op|size|implementation|bytes=N   (or flops=N, numbers=N)
// and the scaling runs use op "scale/<op>". Threads: DEVTENSOR_BENCH_THREADS
// (default 1) is given to devtensor and every peer library before any benchmark;
// DEVTENSOR_BENCH_INFO names a file that receives the run's configuration.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "bench_common.hpp"

#include <devtensor/backend/cpu/transpose.hpp>  // the kernel under transpose(0, 1).contiguous()
#include <devtensor/devtensor.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#include <immintrin.h>  // _mm_stream_ps: the transpose row's copy ceiling

namespace dt = devtensor;

namespace bench {

int threads() {
    static const int n = [] {
        const char* env = std::getenv("DEVTENSOR_BENCH_THREADS");
        const int v = env ? std::atoi(env) : 1;
        if (v < 1) {
            std::cerr << "DEVTENSOR_BENCH_THREADS must be a positive integer, got '" << env << "'\n";
            std::exit(2);
        }
        return v;
    }();
    return n;
}

namespace {

constexpr std::int64_t Ki = 1024, Mi = Ki * Ki;

// ---- devtensor: the public API only -------------------------------------------------------

/// What the op returns is dropped at once, as a loop of `ones(...)` calls would.
template <class Tensor>
void drop(const Tensor& t) {
    Catch::Benchmark::keep_memory(t.data());
}

/// p.steps training steps (op::train_*): forward, loss, zero_grad, backward, SGD's step, as
/// examples/train_digits.cpp writes it; each step records and frees a fresh graph. The
/// parameters drift from step to step, slowly (train_lr).
template <class Net, class Target>
workload devtensor_training(const problem& p, Net net, const dt::tensor<float, dt::cpu_device>& x,
                            const Target& target) {
    auto model = std::make_shared<Net>(std::move(net));
    auto opt = std::make_shared<dt::optim::sgd<float>>(*model, dt::optim::sgd_options{.lr = train_lr});
    return [=, steps = p.steps] {
        for (std::int64_t s = 0; s < steps; ++s) {
            const auto out = (*model)(x);
            auto loss = [&] {
                if constexpr (std::is_same_v<Target, dt::tensor<std::int64_t, dt::cpu_device>>)
                    return dt::nn::cross_entropy(out, target);
                else
                    return dt::nn::mse_loss(out, target);
            }();
            opt->zero_grad();
            loss.backward();
            opt->step();
        }
    };
}

workload devtensor_training(const problem& p) {
    using layer = dt::nn::linear<float, dt::cpu_device>;
    dt::generator gen(1);
    const auto x = dt::randn<float>({p.m, p.k}, dt::cpu_device{}, gen);
    if (p.kind == op::train_linear)
        return devtensor_training(p, layer(p.k, p.n, true, gen), x, dt::randn<float>({p.m, p.n}, dt::cpu_device{}, gen));
    auto mlp = dt::nn::sequential(layer(p.k, p.hidden, true, gen), dt::nn::relu{}, layer(p.hidden, p.n, true, gen));
    if (p.kind == op::train_mlp_ce)
        return devtensor_training(p, std::move(mlp), x, dt::randint<std::int64_t>(0, p.n, {p.m}, dt::cpu_device{}, gen));
    return devtensor_training(p, std::move(mlp), x, dt::randn<float>({p.m, p.n}, dt::cpu_device{}, gen));
}

workload devtensor_workload(const problem& p) {
    switch (p.kind) {
    case op::add: {
        auto a = dt::rand<float>({p.m}), b = dt::rand<float>({p.m}), c = dt::empty<float>({p.m});
        return [=]() mutable { dt::add(a, b, c); };
    }
    case op::add_bias: {
        const std::int64_t rows = p.m / bias_cols;
        auto x = dt::rand<float>({rows, bias_cols}), bias = dt::rand<float>({bias_cols});
        auto y = dt::empty<float>({rows, bias_cols});
        return [=]() mutable { dt::add(x, bias, y); };
    }
    case op::ones: return [n = p.m] { drop(dt::ones<float>({n})); };
    case op::zeros: return [n = p.m] { drop(dt::zeros<float>({n})); };
    case op::full: return [n = p.m] { drop(dt::full<float>({n}, value_of(op::full))); };
    case op::rand: return [n = p.m] { drop(dt::rand<float>({n})); };
    case op::matmul: {
        auto a = dt::rand<float>({p.m, p.k}), b = dt::rand<float>({p.k, p.n});
        return [=] { drop(dt::matmul(a, b)); };
    }
    case op::linear: {
        auto layer = std::make_shared<dt::nn::linear<float, dt::cpu_device>>(p.k, p.n);
        auto x = dt::rand<float>({p.m, p.k});
        return [=] { drop((*layer)(x)); };
    }
    case op::exp:
    case op::log:
    case op::tanh:
    case op::sigmoid: {
        auto x = dt::rand<float>({p.m}) * math_input_width(p.kind) + math_input_low(p.kind);
        auto y = dt::empty<float>({p.m});
        switch (p.kind) {
        case op::exp: return [=]() mutable { dt::exp(x, y); };
        case op::log: return [=]() mutable { dt::log(x, y); };
        case op::tanh: return [=]() mutable { dt::tanh(x, y); };
        default: return [=]() mutable { dt::sigmoid(x, y); };
        }
    }
    case op::train_linear:
    case op::train_mlp_ce:
    case op::train_mlp_mse: return devtensor_training(p);
    default: return {};
    }
}

/// ones / zeros / full / rand into an existing tensor: what the fresh-tensor rows
/// would cost without the allocation.
workload devtensor_inplace_workload(const problem& p) {
    auto t = dt::empty<float>({p.m});
    if (p.kind == op::rand) {
        auto gen = std::make_shared<dt::generator>(1);
        return [=]() mutable { dt::fill_uniform(t, *gen); };
    }
    if (p.kind != op::ones && p.kind != op::zeros && p.kind != op::full) return {};
    return [=, v = value_of(p.kind)]() mutable { dt::fill(t, v); };
}

/// The broadcast-bias row's reference: devtensor's same-shape add on as many elements.
problem same_shape_add(const problem& p) { return {op::add, p.m}; }

workload same_shape_workload(const problem& p) {
    return p.kind == op::add_bias ? devtensor_workload(same_shape_add(p)) : workload{};
}

// ---- every implementation, in the order each row runs them ---------------------------------

struct implementation {
    const char* name;
    workload (*make)(const problem&);  ///< an empty workload where it has no such op
    /// The problem whose work (bytes, FLOPs) it does, where that is not the row's own.
    problem (*does)(const problem&) = nullptr;
};

/// The FMA peak is measured in every square GEMM row, right beside the GEMMs, so a
/// busy neighbour on the shared machine slows both alike.
problem peak_loop(const problem&) { return {op::fma_peak, 1 << 20}; }

workload peak_beside_gemm(const problem& p) {
    const bool square_gemm = (p.kind == op::matmul || p.kind == op::linear) && p.m == p.n && p.n == p.k;
    return square_gemm ? fma_peak_workload(peak_loop(p)) : workload{};
}

constexpr implementation implementations[] = {
    {"devtensor", devtensor_workload},
    {"devtensor_inplace", devtensor_inplace_workload},
    {"same_shape", same_shape_workload, same_shape_add},  // 12 bytes an element, not 8: compare GB/s
    {"plain_loop", plain_loop_workload},
    {"nontemporal", nontemporal_workload},
    {"std_fill", std_fill_workload},
    {"fma_peak", peak_beside_gemm, peak_loop},
    {"random123", random123_workload},
    {"openblas", openblas_sgemm_workload},
    {"onednn", onednn_sgemm_workload},
    {"blis", blis_sgemm_workload},
    {"openblas_sgemv", openblas_sgemv_workload},
    {"torch", torch_workload},
};

const char* op_name(op kind) {
    switch (kind) {
    case op::add: return "add";
    case op::add_bias: return "add_bias";
    case op::ones: return "ones";
    case op::zeros: return "zeros";
    case op::full: return "full";
    case op::rand: return "rand";
    case op::matmul: return "matmul";
    case op::linear: return "linear";
    case op::fma_peak: return "fma_peak";
    case op::exp: return "exp";
    case op::log: return "log";
    case op::tanh: return "tanh";
    case op::sigmoid: return "sigmoid";
    case op::train_linear: return "train_linear";
    case op::train_mlp_ce: return "train_mlp_ce";
    case op::train_mlp_mse: return "train_mlp_mse";
    }
    return "?";
}

/// 16M, 8K, ... for element counts; 1024 for a square matmul; b4:1024->1024 for linear
/// and its training step; b64:64->128->10 for an MLP's.
std::string size_label(const problem& p) {
    const auto count = [](std::int64_t n) {
        return n % Mi == 0 ? std::to_string(n / Mi) + "M" : n % Ki == 0 ? std::to_string(n / Ki) + "K" : std::to_string(n);
    };
    switch (p.kind) {
    case op::matmul:
        return p.m == p.n && p.n == p.k ? std::to_string(p.m)
                                        : std::to_string(p.m) + "x" + std::to_string(p.k) + "x" + std::to_string(p.n);
    case op::linear:
    case op::train_linear:
        return "b" + std::to_string(p.m) + ":" + std::to_string(p.k) + "->" + std::to_string(p.n);
    case op::train_mlp_ce:
    case op::train_mlp_mse:
        return "b" + std::to_string(p.m) + ":" + std::to_string(p.k) + "->" + std::to_string(p.hidden) + "->" +
               std::to_string(p.n);
    case op::fma_peak: return fma_isa();
    default: return count(p.m);
    }
}

/// The work one call does, in the unit the report divides by time.
std::string work_label(const problem& p) {
    const auto n = static_cast<double>(p.m);
    switch (p.kind) {
    case op::add: return "bytes=" + std::to_string(12 * p.m);  // read a, b; write c
    case op::add_bias: return "bytes=" + std::to_string(8 * p.m + 4 * bias_cols);
    case op::ones:
    case op::zeros:
    case op::full: return "bytes=" + std::to_string(4 * p.m);
    case op::rand: return "numbers=" + std::to_string(p.m);
    case op::matmul:
    case op::linear: return "flops=" + std::to_string(static_cast<std::int64_t>(2 * n * p.n * p.k));
    case op::fma_peak: return "flops=" + std::to_string(static_cast<std::int64_t>(fma_peak_flops(p)));
    case op::exp:
    case op::log:
    case op::tanh:
    case op::sigmoid: return "bytes=" + std::to_string(8 * p.m);  // read x, write y
    case op::train_linear:
    case op::train_mlp_ce:
    case op::train_mlp_mse: return "steps=" + std::to_string(p.steps);
    }
    return "";
}

/// The scaling runs time devtensor and what its growth is judged against: loops
/// that meet the same caches (the ceilings), or OpenBLAS for GEMM.
bool in_scaling_run(const std::string& name) {
    for (const char* n : {"devtensor", "same_shape", "plain_loop", "nontemporal", "std_fill", "random123", "openblas"})
        if (name == n) return true;
    return false;
}

enum class run_kind { row, scaling };

/// Worker threads that the previous implementation left spinning (OpenBLAS's spin
/// for ~2^28 cycles, libgomp's for GOMP_SPINCOUNT) would take the cores from the
/// next one: wait until they sleep.
void let_workers_sleep() {
    if (threads() > 1) std::this_thread::sleep_for(std::chrono::milliseconds(200));
}

/// Runs a problem with every implementation that has it, one at a time: each
/// one's buffers are freed before the next one allocates.
void bench_row(const problem& p, run_kind kind = run_kind::row) {
    const std::string prefix = std::string(kind == run_kind::scaling ? "scale/" : "") + op_name(p.kind);
    for (const auto& impl : implementations) {
        if (kind == run_kind::scaling && !in_scaling_run(impl.name)) continue;
        workload run = impl.make(p);
        if (!run) continue;
        const std::string work = work_label(impl.does ? impl.does(p) : p);
        let_workers_sleep();
        BENCHMARK(prefix + "|" + size_label(p) + "|" + impl.name + "|" + work) { run(); };
    }
}

problem square(op kind, std::int64_t n) { return {kind, n, n, n}; }

/// Before main: every library gets the same thread count, and the run says what it ran on.
const bool configured = [] {
    torch_set_threads(threads());  // first: it also sets OpenMP's default
    openblas_set_threads(threads());
    onednn_set_threads(threads());
    blis_set_threads(threads());
    dt::set_num_threads(threads());
    if (const char* path = std::getenv("DEVTENSOR_BENCH_INFO")) {
        std::ofstream info(path);
        info << "threads: " << threads() << "\n"
             << "devtensor: " << DEVTENSOR_VERSION_STRING << ", get_num_threads() = " << dt::get_num_threads() << "\n"
             << "openblas: " << openblas_config() << "\n"
             << "onednn: " << onednn_config() << "\n"
             << "blis: " << blis_config() << "\n"
             << "torch: " << torch_version() << "\n"
             << "fma_isa: " << fma_isa() << "\n"
             << "compiler: g++ " << __VERSION__ << "\n"
             << "OpenMP: OMP_WAIT_POLICY=" << env_or_unset("OMP_WAIT_POLICY")
             << " GOMP_SPINCOUNT=" << env_or_unset("GOMP_SPINCOUNT") << "\n";
    }
    return true;
}();

}  // namespace

// ---- the rows of the table ----------------------------------------------------------

TEST_CASE("add, same shape", "[add]") {
    for (const std::int64_t n : {16 * Mi, 64 * Mi}) bench_row({op::add, n});
}

TEST_CASE("add, broadcast bias [N, 1024] + [1024]", "[add]") {
    for (const std::int64_t n : {16 * Mi, 64 * Mi}) bench_row({op::add_bias, n});
}

TEST_CASE("ones / zeros / full into fresh tensors", "[fill]") {
    for (const op kind : {op::ones, op::zeros, op::full}) bench_row({kind, 64 * Mi});
}

TEST_CASE("rand", "[rand]") { bench_row({op::rand, 64 * Mi}); }

// exp, log, tanh, sigmoid into an existing output (devtensor's out-variant, torch's
// exp_out etc.) on ONE thread, both libraries: the function's own speed (devtensor's
// lane forms against libtorch's vectorised ones), not the memory system's. Run in the
// one-thread run only, so that the report's thread column stays true.
TEST_CASE("exp, log, tanh, sigmoid on one thread (out-variants)", "[math]") {
    if (threads() != 1) return;
    torch_set_threads(1);  // at::set_num_threads(1)
    dt::set_num_threads(1);
    for (const op kind : {op::exp, op::log, op::tanh, op::sigmoid}) bench_row({kind, 64 * Mi});
}

TEST_CASE("matmul and linear, M = N = K", "[gemm]") {
    for (const std::int64_t n : {256, 512, 1024, 2048, 4096}) bench_row(square(op::matmul, n));
    // linear at 1024 is the linear(1024 -> 1024) on batch 1024
    for (const std::int64_t n : {256, 1024, 2048}) bench_row(square(op::linear, n));
}

TEST_CASE("linear(1024 -> 1024) and linear(4096 -> 4096) on batch 1-16 (GEMV shape)", "[gemm][gemv]") {
    for (const std::int64_t n : {1024, 4096})
        for (const std::int64_t batch : {1, 2, 4, 8, 16}) bench_row({op::linear, batch, n, n});
}

// The skinny and large-k shapes, m x k x n: a 512 x 512 C from k = 4096, a 64 x 64 C
// from k = 65536 (one long chain an element), a 4096 x 4096 C from k = 64 (C's writes weigh).
TEST_CASE("matmul, skinny and large-k shapes", "[gemm][skinny]") {
    for (const auto& [m, k, n] : {std::array<std::int64_t, 3>{512, 4096, 512}, {64, 65536, 64}, {4096, 64, 4096}})
        bench_row({.kind = op::matmul, .m = m, .n = n, .k = k});
}

// ---- matmul on a small batch beside linear of the same shape -------------------------------
// Both sum in the GEMV order (m <= 16): linear reads its weight [n, k] a row (a dot) at a
// time, matmul reads B [k, n] a row (a step of every column's chains) at a time. The
// report divides the two; "linear" here is dt::linear(x, w) without a bias.

namespace {

template <class T>
void matmul_beside_linear(std::int64_t m, const std::string& op) {
    constexpr std::int64_t n = 4096, k = 4096;
    const auto x = dt::rand<T>({m, k}), b = dt::rand<T>({k, n}), w = dt::rand<T>({n, k});
    const std::string row = op + "|" + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n) + "|";
    const std::string work = "|flops=" + std::to_string(2 * m * n * k);
    let_workers_sleep();
    BENCHMARK(row + "devtensor" + work) { return dt::matmul(x, b); };
    let_workers_sleep();
    BENCHMARK(row + "linear" + work) { return dt::linear(x, w); };
}

}  // namespace

TEST_CASE("matmul beside linear on a small batch, [m, 4096] x [4096, 4096]", "[gemm][gemv]") {
    matmul_beside_linear<float>(16, "matmul_gemv_f32");
    matmul_beside_linear<double>(4, "matmul_gemv_f64");
}

// ---- training steps: forward, loss, zero_grad, backward, SGD's step ----------------------------
// The three problems, a fresh graph each step on both sides: a tiny linear
// regression (a step of a few small ops: what it measures is the per-op overhead), the
// digits MLP, and an MLP large enough for the GEMMs to dominate. The two small ones time
// many steps back to back, as a training loop runs them: Catch2 would time a digits step
// alone (one call a sample), right after its own bookkeeping, 20-30% above the loop's
// steps on both sides. The tiny one times 256: on the shared VMs here a core runs short
// calls slowly for the first few milliseconds after any pause (Catch2's warm-up reads the
// clock for 100 ms: 16-step calls of a 3 us step then took 4-6 us a step for ~30 calls, a
// plain map walk 25% more for ~10), so 16 steps (~50 us) a call timed that ramp.

TEST_CASE("training step: forward, loss, zero_grad, backward, sgd", "[train]") {
    bench_row({.kind = op::train_linear, .m = 64, .n = 1, .k = 1, .steps = 256});
    bench_row({.kind = op::train_mlp_ce, .m = 64, .n = 10, .k = 64, .hidden = 128, .steps = 16});
    bench_row({.kind = op::train_mlp_mse, .m = 256, .n = 1024, .k = 1024, .hidden = 4096});
}

// ---- scaling: each op at 5 sizes ---------------------------------------------------------------
// Elementwise from L1 (8K floats = 32 KiB) up by 16x steps to 128M floats: 512 MiB an
// operand, the largest this suite allocates (VMs report L3 sizes that are not real).

TEST_CASE("scaling", "[scaling]") {
    for (const op kind : {op::add, op::add_bias, op::ones, op::zeros, op::full, op::rand})
        for (const std::int64_t n : {8 * Ki, 128 * Ki, 2 * Mi, 32 * Mi, 128 * Mi})
            bench_row({kind, n}, run_kind::scaling);
    for (const op kind : {op::matmul, op::linear})
        for (const std::int64_t n : {64, 128, 256, 512, 1024}) bench_row(square(kind, n), run_kind::scaling);
}

// ---- transpose: the strided elementwise engine's copy kernel -------------------------------
// transpose(0, 1).contiguous() of 8192^2 floats: devtensor's blocked transpose beside two
// copies of the same 256 MiB, between the same two tensors (devtensor's allocator, so the
// same pages): memcpy, and a loop of non-temporal stores. The report divides by the faster.

namespace {

/// dst[i] = src[i] with 16-byte non-temporal stores (the vectors of SSE2; wider ones
/// move no more bytes from memory), plain copies at the ragged ends.
void stream_copy(const float* src, float* dst, std::int64_t n) {
    std::int64_t i = 0;
    for (; i < n && reinterpret_cast<std::uintptr_t>(dst + i) % 16 != 0; ++i) dst[i] = src[i];
    for (; i + 4 <= n; i += 4) _mm_stream_ps(dst + i, _mm_loadu_ps(src + i));
    for (; i < n; ++i) dst[i] = src[i];
    _mm_sfence();
}

}  // namespace

TEST_CASE("transpose 8192^2 float", "[transpose]") {
    constexpr std::int64_t n = 8192;
    const auto a = dt::rand<float>({n, n});
    auto b = dt::empty<float>({n, n});
    const float* src = a.data();
    float* dst = b.data();
    const std::string row = "transpose|8192x8192|", work = "|bytes=" + std::to_string(2 * 4 * n * n);
    const auto chunks = [&](auto copy) {  // one chunk per thread, on devtensor's threads
        dt::detail::parallel_for(n * n, 1 << 16, [&](std::int64_t begin, std::int64_t end) {
            copy(src + begin, dst + begin, end - begin);
        });
    };

    let_workers_sleep();
    BENCHMARK(row + "devtensor" + work) { return a.t().contiguous(); };  // the public call, allocation included
    BENCHMARK(row + "kernel" + work) { dt::backend_cpu::transpose(src, n, dst, n, n, n); };
    const float probe = dst[5 * n + 3];  // b = aᵀ: b[5, 3] = a[3, 5]
    if (probe != src[3 * n + 5]) FAIL("transpose 8192^2: b[5, 3] = " << probe << ", a[3, 5] = " << src[3 * n + 5]);
    let_workers_sleep();
    BENCHMARK(row + "memcpy" + work) {
        chunks([](const float* s, float* d, std::int64_t k) { std::memcpy(d, s, static_cast<std::size_t>(k) * 4); });
    };
    let_workers_sleep();
    BENCHMARK(row + "nontemporal" + work) { chunks(stream_copy); };
}

// ---- add on strided operands, beside the same add on contiguous ones -------------------------
// 16M floats an operand: contiguous; every other column of a twice-as-wide matrix (rows
// with gaps); transposed (the tiled gather). The issue asks strided >= 0.5x contiguous.

TEST_CASE("add, strided operands [4096, 4096]", "[add][strided]") {
    constexpr std::int64_t n = 4096;
    const std::string work = "|bytes=" + std::to_string(3 * 4 * n * n);
    const auto x = dt::rand<float>({n, n}), y = dt::rand<float>({n, n});
    const auto wide_x = dt::rand<float>({n, 2 * n}), wide_y = dt::rand<float>({n, 2 * n});
    const auto gx = wide_x.view({n, n, 2}).select(2, 0), gy = wide_y.view({n, n, 2}).select(2, 0);
    const auto nx = wide_x.narrow(1, 0, n), ny = wide_y.narrow(1, n, n);
    const auto tx = x.t(), ty = y.t();
    // each row: devtensor on the strided operands, then the contiguous reference right beside it
    for (const auto& [layout, a, b] : {std::tuple{"every_other_column", gx, gy}, std::tuple{"narrowed_rows", nx, ny},
                                       std::tuple{"transposed", tx, ty}}) {
        const std::string row = std::string("add_") + layout + "|4096x4096|";
        let_workers_sleep();
        BENCHMARK(row + "devtensor" + work) { return a + b; };
        let_workers_sleep();
        BENCHMARK(row + "contiguous" + work) { return x + y; };
    }
}

}  // namespace bench

namespace bench {

// ---- reductions over the last dim of [16384, 1024] floats (64 MiB), beside a read ceiling ---
// The ceiling: the same bytes summed by four 16-byte accumulators a thread (no order kept),
// on devtensor's threads. The issue asks sum, amax, argmax, softmax >= 0.9x read bandwidth.

TEST_CASE("reductions over the last dim [16384, 1024]", "[reduce]") {
    constexpr std::int64_t rows = 16384, cols = 1024;
    const auto x = dt::rand<float>({rows, cols});
    const float* p = x.data();
    const std::string size = "|16384x1024|", bytes = "|bytes=" + std::to_string(4 * rows * cols);
    float sink = 0;
    const auto read = [&] {
        std::atomic<float> total{0};
        dt::detail::parallel_for(rows * cols, 1 << 16, [&](std::int64_t begin, std::int64_t end) {
            __m128 a0 = _mm_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
            std::int64_t i = begin;
            for (; i + 16 <= end; i += 16) {
                a0 = _mm_add_ps(a0, _mm_loadu_ps(p + i));
                a1 = _mm_add_ps(a1, _mm_loadu_ps(p + i + 4));
                a2 = _mm_add_ps(a2, _mm_loadu_ps(p + i + 8));
                a3 = _mm_add_ps(a3, _mm_loadu_ps(p + i + 12));
            }
            float lanes[4];
            _mm_storeu_ps(lanes, _mm_add_ps(_mm_add_ps(a0, a1), _mm_add_ps(a2, a3)));
            total = total + lanes[0] + lanes[1] + lanes[2] + lanes[3];
        });
        return total.load();
    };
    for (const char* op : {"sum", "amax", "argmax", "softmax"}) {
        const std::string row = std::string(op) + "_rows" + size;
        const std::string op_name = op;
        let_workers_sleep();
        BENCHMARK(row + "devtensor" + bytes) {
            if (op_name == "sum") return dt::sum(x, {1}).numel();
            if (op_name == "amax") return dt::amax(x, {1}).numel();
            if (op_name == "argmax") return dt::argmax(x, 1).numel();
            return dt::softmax(x, 1).numel();
        };
        let_workers_sleep();
        BENCHMARK(row + "read" + bytes) { sink += read(); };
        if (workload torch = torch_rows_out(op_name, rows, cols)) {
            let_workers_sleep();
            BENCHMARK(row + "torch" + bytes) { torch(); };
        }
    }
    if (sink < 0) FAIL("a sum of uniform [0, 1) values came out negative");
}

// ---- the everyday binary ops, contiguous, beside the add loop's bandwidth and torch's _out ---
// The ceiling is c[i] = a[i] + b[i] (plain or streaming, the faster): the same traffic for sub,
// mul and div; lt writes 1 byte an element instead of 4, so the report compares GB/s.

TEST_CASE("sub, mul, div, lt on contiguous floats", "[arith]") {
    for (const std::int64_t n : {16 * Mi, 64 * Mi}) {
        const auto a = dt::rand<float>({n}), b = dt::rand<float>({n}) + 0.5f;
        auto c = dt::empty<float>({n});
        auto flags = dt::empty<bool>({n});
        const std::string size = "|" + std::to_string(n / Mi) + "M|";
        const std::string bytes = "bytes=" + std::to_string(12 * n), lt_bytes = "bytes=" + std::to_string(9 * n);
        for (const std::string fn : {"sub", "mul", "div", "lt"}) {
            const std::string& work = fn == "lt" ? lt_bytes : bytes;
            let_workers_sleep();
            BENCHMARK(fn + size + "devtensor|" + work) {
                if (fn == "sub") dt::sub(a, b, c);
                else if (fn == "mul") dt::mul(a, b, c);
                else if (fn == "div") dt::div(a, b, c);
                else dt::lt(a, b, flags);
            };
            for (const implementation& ceiling : {implementation{"plain_loop", plain_loop_workload},
                                                  implementation{"nontemporal", nontemporal_workload}}) {
                workload run = ceiling.make({op::add, n});
                let_workers_sleep();
                BENCHMARK(fn + size + ceiling.name + "|" + bytes) { run(); };
            }
            if (workload torch = torch_binary_out(fn, n)) {
                let_workers_sleep();
                BENCHMARK(fn + size + "torch|" + work) { torch(); };
            }
        }
    }
}

// ---- matmul in double beside OpenBLAS's and BLIS's dgemm (oneDNN 2.6 has no dgemm) -------------

TEST_CASE("matmul, M = N = K, double", "[gemm][dgemm]") {
    for (const std::int64_t n : {256, 512, 1024, 2048}) {
        const auto a = dt::full<double>({n, n}, 0.5), b = dt::full<double>({n, n}, 0.5);
        const std::string row = "matmul_f64|" + std::to_string(n) + "|", flops = "|flops=" + std::to_string(2 * n * n * n);
        let_workers_sleep();
        BENCHMARK(row + "devtensor" + flops) { return dt::matmul(a, b).numel(); };
        for (const auto& [name, peer] :
             {std::pair{"openblas", openblas_dgemm_workload(n)}, std::pair{"blis", blis_dgemm_workload(n)}})
            if (peer) {
                let_workers_sleep();
                BENCHMARK(row + name + flops) { peer(); };
            }
    }
}

// ---- batched matmul [64, 256, 256] beside the 2-D GEMM of the same FLOPs [16384, 256]·[256, 256]

TEST_CASE("batched matmul [64, 256, 256]", "[gemm][bmm]") {
    constexpr std::int64_t batch = 64, n = 256;
    const auto a = dt::rand<float>({batch, n, n}), b = dt::rand<float>({batch, n, n});
    const auto folded = dt::rand<float>({batch * n, n}), w = dt::rand<float>({n, n});
    const std::string row = "bmm|64x256x256|", flops = "|flops=" + std::to_string(2 * batch * n * n * n);
    let_workers_sleep();
    BENCHMARK(row + "devtensor" + flops) { return dt::matmul(a, b).numel(); };
    let_workers_sleep();
    BENCHMARK(row + "gemm_2d" + flops) { return dt::matmul(folded, w).numel(); };
    if (workload torch = torch_bmm_out(batch, n)) {
        let_workers_sleep();
        BENCHMARK(row + "torch" + flops) { torch(); };
    }
    // the GEMM peers, each looping over the batch (none has a batched row-major sgemm)
    const problem looped{.kind = op::matmul, .m = n, .n = n, .k = n, .batch = batch};
    for (const auto& [name, peer] : {std::pair{"openblas", openblas_sgemm_workload(looped)},
                                     std::pair{"onednn", onednn_sgemm_workload(looped)},
                                     std::pair{"blis", blis_sgemm_workload(looped)}})
        if (peer) {
            let_workers_sleep();
            BENCHMARK(row + name + flops) { peer(); };
        }
}

}  // namespace bench
