// GPU benchmarks (the goals of issue 4). Each row times devtensor and its
// reference in the same run, on devtensor's own stream, with CUDA events, and
// prints a human line and a machine-readable one for bench/report_gpu.py:
//
//   ROW|op|shape|ours_ms|reference|ref_ms|ratio|goal|met|ours_rate|ref_rate|unit|note
//
// ratio = devtensor's throughput ÷ the reference's, each counting its own work
// (add moves 3 arrays, a device-to-device copy 2), so ratio ≥ goal is met; goal
// 0 marks a row that is there for information. Each op's result is checked once
// against the reference or the CPU: CHECK|op|shape|detail when right,
// FAIL|op|shape|detail (and a failed test case) when wrong. Also printed once:
// DEVICE|name|... and CONFIG|....
//
// Without a GPU every case warns and passes. Built as CUDA (a .cu wrapper).
#include <catch2/catch.hpp>

#include <devtensor/devtensor.hpp>

#include <cublas_v2.h>
#include <curand.h>
#include <thrust/device_ptr.h>
#include <thrust/execution_policy.h>
#include <thrust/fill.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace dt = devtensor;

namespace {

using gpu_tensor = dt::tensor<float, dt::cuda_device>;
using work = std::function<void()>;

constexpr dt::cuda_device gpu{0};
constexpr int samples = 15;            // per side; the median is reported
constexpr double min_sample_ms = 2.0;  // small ops repeat within a sample until this much GPU time
constexpr std::int64_t elementwise_n = std::int64_t{1} << 28;  // 256M floats: 1 GiB an array

// ---- errors ------------------------------------------------------------------------------

void check(cudaError_t s, const char* call) {
    if (s != cudaSuccess) throw std::runtime_error(std::string(call) + ": " + cudaGetErrorString(s));
}
void check(cublasStatus_t s, const char* call) {
    if (s != CUBLAS_STATUS_SUCCESS)
        throw std::runtime_error(std::string(call) + ": " + cublasGetStatusString(s));
}
void check(curandStatus_t s, const char* call) {
    if (s != CURAND_STATUS_SUCCESS)
        throw std::runtime_error(std::string(call) + ": curandStatus " + std::to_string(static_cast<int>(s)));
}
#define CHECKED(call) check((call), #call)

cudaStream_t stream() { return dt::detail::cudart::stream(gpu.index()); }

/// True where there is a GPU (and says which, once); otherwise warns once, and every case passes.
bool gpu_ready() {
    static const bool ready = [] {
        if (!dt::cuda_available()) {
            WARN("no GPU, every benchmark is skipped: " << dt::cuda_unavailable_reason());
            return false;
        }
        cudaDeviceProp p{};
        CHECKED(cudaGetDeviceProperties(&p, gpu.index()));
        int blas[3] = {}, curand_version = 0;
        for (const auto part : {MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL})
            CHECKED(cublasGetProperty(part, &blas[part]));
        CHECKED(curandGetVersion(&curand_version));
        std::printf(
            "DEVICE|%s|sm_%d%d|%d SMs|%.1f GiB|CUDA runtime %d, driver %d, cuBLAS %d.%d.%d, cuRAND %d\n",
            p.name, p.major, p.minor, p.multiProcessorCount,
            static_cast<double>(p.totalGlobalMem) / (1u << 30), dt::cuda_runtime_version(),
            dt::cuda_driver_version(), blas[0], blas[1], blas[2], curand_version);
        std::printf(
            "CONFIG|median of %d samples a side, ours and the reference alternating; a sample queues "
            "the call back to back until it holds %.0f ms of GPU work (so a call whose host work "
            "outlasts its kernel is timed by its host work); times are per call; cuBLAS in "
            "CUBLAS_DEFAULT_MATH (fp32, no TF32)\n",
            samples, min_sample_ms);
        return true;
    }();
    return ready;
}

// ---- timing ------------------------------------------------------------------------------

/// GPU time per call of `reps` calls queued back to back on devtensor's stream.
class event_timer {
public:
    event_timer() {
        CHECKED(cudaEventCreate(&start_));
        CHECKED(cudaEventCreate(&stop_));
    }
    ~event_timer() {
        (void)cudaEventDestroy(start_);
        (void)cudaEventDestroy(stop_);
    }
    event_timer(const event_timer&) = delete;
    event_timer& operator=(const event_timer&) = delete;

    double ms_per_call(const work& w, int reps) {
        CHECKED(cudaEventRecord(start_, stream()));
        for (int i = 0; i < reps; ++i) w();
        CHECKED(cudaEventRecord(stop_, stream()));
        CHECKED(cudaEventSynchronize(stop_));
        float ms = 0;
        CHECKED(cudaEventElapsedTime(&ms, start_, stop_));
        return ms / reps;
    }

private:
    cudaEvent_t start_{}, stop_{};
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// Median ms per call of ours and of the reference. Their samples alternate, so
/// clock and temperature drift weigh on both alike.
std::pair<double, double> time_pair(const work& ours, const work& ref) {
    event_timer timer;
    const auto reps_for = [&](const work& w) {
        w();  // warm-up: the memory pool, cuBLAS's heuristics, cuRAND's state
        w();
        const double once = std::max(timer.ms_per_call(w, 1), 1e-4);
        return static_cast<int>(std::clamp(std::ceil(min_sample_ms / once), 1.0, 1000.0));
    };
    const int ours_reps = reps_for(ours), ref_reps = reps_for(ref);
    std::vector<double> o, r;
    for (int s = 0; s < samples; ++s) {
        o.push_back(timer.ms_per_call(ours, ours_reps));
        r.push_back(timer.ms_per_call(ref, ref_reps));
    }
    return {median(o), median(r)};
}

// ---- rows and checks ---------------------------------------------------------------------

/// One goal row. Work is per call, counted for each side on its own: bytes for GB/s,
/// FLOPs for GFLOP/s, numbers or elements for G…/s (rate = work / ms / 1e6).
struct row {
    std::string op, shape, reference;
    double ours_work, ref_work;
    const char* unit;
    double goal;  // the least ratio that meets it; 0: for information only
    std::string note;
};

void measure(const row& r, const work& ours, const work& ref) {
    const auto [ours_ms, ref_ms] = time_pair(ours, ref);
    const double ours_rate = r.ours_work / ours_ms / 1e6, ref_rate = r.ref_work / ref_ms / 1e6;
    const double ratio = ours_rate / ref_rate;
    const char* met = r.goal <= 0 ? "info" : ratio >= r.goal ? "yes" : "no";
    std::printf("%-7s %-24s %9.4f ms %8.1f %-11s | %-36s %9.4f ms %8.1f | ratio %.3f, goal %.2f: %s%s%s\n",
                r.op.c_str(), r.shape.c_str(), ours_ms, ours_rate, r.unit, r.reference.c_str(), ref_ms,
                ref_rate, ratio, r.goal, met, r.note.empty() ? "" : "; ", r.note.c_str());
    std::printf("ROW|%s|%s|%.6f|%s|%.6f|%.4f|%.2f|%s|%.2f|%.2f|%s|%s\n", r.op.c_str(), r.shape.c_str(),
                ours_ms, r.reference.c_str(), ref_ms, ratio, r.goal, met, ours_rate, ref_rate, r.unit,
                r.note.c_str());
    std::fflush(stdout);
}

/// Prints CHECK|… or FAIL|…; a failure also fails the test case (which goes on).
void expect(bool ok, const std::string& op, const std::string& shape, const std::string& detail) {
    std::printf("%s|%s|%s|%s\n", ok ? "CHECK" : "FAIL", op.c_str(), shape.c_str(), detail.c_str());
    std::fflush(stdout);
    INFO(op << " " << shape << ": " << detail);
    CHECK(ok);
}

std::string sci(double x) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2e", x);
    return text;
}

/// Where `got` differs from `want` bit for bit: the first index and the count, or "" when equal.
std::string bit_differences(const std::vector<float>& got, const std::vector<float>& want) {
    std::size_t first = got.size(), count = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
        if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0 && count++ == 0) first = i;
    if (count == 0) return "";
    return std::to_string(count) + " elements differ, the first at " + std::to_string(first) + " (" +
           std::to_string(got[first]) + " instead of " + std::to_string(want[first]) + ")";
}

void expect_bit_identical(const std::string& op, const std::string& shape, const std::vector<float>& got,
                          const std::vector<float>& want, const std::string& against) {
    const std::string diff = bit_differences(got, want);
    expect(diff.empty(), op, shape,
           diff.empty() ? "bit-identical to " + against : diff + " against " + against);
}

// ---- fill --------------------------------------------------------------------------------

TEST_CASE("gpu ones, zeros, full against cudaMemsetAsync and thrust::fill", "[gpu][fill]") {
    if (!gpu_ready()) return;
    const std::int64_t n = elementwise_n;
    const double bytes = 4.0 * static_cast<double>(n);
    const std::string shape = dt::shape{n}.to_string();
    const gpu_tensor target = dt::empty<float>({n}, gpu);  // the references write here
    const work memset_ref = [&] { CHECKED(cudaMemsetAsync(target.data(), 0, 4 * n, stream())); };
    const auto thrust_ref = [&](float value) -> work {
        // par_nosync: thrust would otherwise wait for the stream after each fill.
        return [&target, n, value] {
            const auto first = thrust::device_pointer_cast(target.data());
            thrust::fill(thrust::cuda::par_nosync.on(stream()), first, first + n, value);
        };
    };
    struct factory {
        const char* op;
        float value;
        std::function<gpu_tensor()> make;
    };
    const factory factories[] = {
        {"ones", 1.f, [&] { return dt::ones<float>({n}, gpu); }},
        {"zeros", 0.f, [&] { return dt::zeros<float>({n}, gpu); }},
        {"full", 0.5f, [&] { return dt::full<float>({n}, 0.5f, gpu); }},
    };
    const std::string note = "allocates and frees its output each call (stream-ordered pool, cached), timed";
    for (const auto& f : factories) {
        const work ours = [&] { (void)f.make(); };
        measure({f.op, shape, "cudaMemsetAsync", bytes, bytes, "GB/s", 0.95, note}, ours, memset_ref);
        measure({f.op, shape, "thrust::fill", bytes, bytes, "GB/s", 0.95, note}, ours, thrust_ref(f.value));
        thrust_ref(f.value)();
        expect_bit_identical(f.op, shape, f.make().to_vector(), target.to_vector(), "thrust::fill");
    }
    // The factories less their allocation: tells a slow kernel from a slow allocator.
    measure(
        {"fill", shape, "cudaMemsetAsync", bytes, bytes, "GB/s", 0, "dt::fill in place"},
        [&] { dt::fill(target, 1.f); }, memset_ref);
}

// ---- add ---------------------------------------------------------------------------------

TEST_CASE("gpu add against a device-to-device copy, bias add against same-shape add", "[gpu][add]") {
    if (!gpu_ready()) return;
    dt::generator gen(11);
    {
        const std::int64_t n = elementwise_n;
        const std::string shape = dt::shape{n}.to_string();
        const gpu_tensor a = dt::rand<float>({n}, gpu, gen), b = dt::rand<float>({n}, gpu, gen);
        const gpu_tensor c = dt::empty<float>({n}, gpu);
        const double bytes = 4.0 * static_cast<double>(n);
        measure(
            {"add", shape, "cudaMemcpyAsync device to device", 3 * bytes, 2 * bytes, "GB/s", 0.9,
             "bytes read + written: add moves 3 arrays, the copy 2"},
            [&] { dt::add(a, b, c); },
            [&] { CHECKED(cudaMemcpyAsync(c.data(), a.data(), 4 * n, cudaMemcpyDeviceToDevice, stream())); });
        dt::add(a, b, c);
        const auto ha = a.to_vector(), hb = b.to_vector();
        std::vector<float> want(ha.size());
        for (std::size_t i = 0; i < want.size(); ++i) want[i] = ha[i] + hb[i];
        expect_bit_identical("add", shape, c.to_vector(), want, "the host's a + b");
    }
    for (const std::int64_t cols : {4096, 1000}) {  // 1000: rows that do not start on a 16-byte edge
        const std::int64_t rows = elementwise_n / cols;
        const std::string shape = dt::shape{rows, cols}.to_string() + " + [" + std::to_string(cols) + "]";
        const gpu_tensor x = dt::rand<float>({rows, cols}, gpu, gen),
                         x2 = dt::rand<float>({rows, cols}, gpu, gen);
        const gpu_tensor bias = dt::rand<float>({cols}, gpu, gen), y = dt::empty<float>({rows, cols}, gpu);
        const double elements = static_cast<double>(rows * cols);
        measure(
            {"add", shape, "same-shape add", elements, elements, "G elements/s", 0.95,
             "elements per second: the bias row is read from cache"},
            [&] { dt::add(x, bias, y); }, [&] { dt::add(x, x2, y); });
        dt::add(x, bias, y);
        const auto hx = x.to_vector(), hbias = bias.to_vector();
        std::vector<float> want(hx.size());
        for (std::size_t i = 0; i < want.size(); ++i)
            want[i] = hx[i] + hbias[i % static_cast<std::size_t>(cols)];
        expect_bit_identical("add", shape, y.to_vector(), want, "the host's x + bias");
    }
}

// ---- transposed copy ---------------------------------------------------------------------

TEST_CASE("gpu transposed copy against a device-to-device copy", "[gpu][transpose]") {
    if (!gpu_ready()) return;
    dt::generator gen(12);
    // 16384²: whole tiles; 8191 x 32771: ragged edges, rows off 16-byte edges
    for (const auto& dims : {std::pair<std::int64_t, std::int64_t>{16384, 16384}, {8191, 32771}}) {
        const std::int64_t rows = dims.first, cols = dims.second;
        const std::string shape = dt::shape{cols, rows}.to_string() + ".t()";
        const gpu_tensor x = dt::rand<float>({cols, rows}, gpu, gen), c = dt::empty<float>({rows, cols}, gpu);
        const double bytes = 4.0 * static_cast<double>(rows * cols);
        measure(
            {"transpose", shape, "cudaMemcpyAsync device to device", 2 * bytes, 2 * bytes, "GB/s", 0,
             "bytes read + written; allocates its output each call (stream-ordered pool, cached)"},
            [&] { (void)x.t().contiguous(); },
            [&] { CHECKED(cudaMemcpyAsync(c.data(), x.data(), 4 * rows * cols, cudaMemcpyDeviceToDevice, stream())); });
        expect_bit_identical("transpose", shape, x.t().contiguous().to_vector(),
                             x.cpu().t().contiguous().to_vector(), "the cpu's t().contiguous()");
    }
}

// ---- rand --------------------------------------------------------------------------------

TEST_CASE("gpu rand against cuRAND's Philox", "[gpu][rand]") {
    if (!gpu_ready()) return;
    const std::int64_t n = elementwise_n;
    const std::string shape = dt::shape{n}.to_string();
    const gpu_tensor out = dt::empty<float>({n}, gpu);
    curandGenerator_t curand{};
    CHECKED(curandCreateGenerator(&curand, CURAND_RNG_PSEUDO_PHILOX4_32_10));
    CHECKED(curandSetPseudoRandomGeneratorSeed(curand, 2024));
    CHECKED(curandSetStream(curand, stream()));
    dt::generator ours(2024);
    measure(
        {"rand", shape, "curandGenerateUniform (Philox4x32-10)", static_cast<double>(n),
         static_cast<double>(n), "G numbers/s", 1.0, "float32; in place (fill_uniform), as cuRAND"},
        [&] { dt::fill_uniform(out, ours); },
        [&] { CHECKED(curandGenerateUniform(curand, out.data(), static_cast<std::size_t>(n))); });
    CHECKED(curandDestroyGenerator(curand));

    // The promise: the CUDA stream is the CPU's, bit for bit, from any offset.
    dt::generator on_gpu(99);
    on_gpu.set_offset(1000004);
    dt::generator on_cpu = on_gpu;
    dt::fill_uniform(out, on_gpu);
    expect_bit_identical("rand", shape, out.to_vector(),
                         dt::rand<float>({n}, dt::cpu_device{}, on_cpu).to_vector(),
                         "the CPU's rand from the same seed and offset");
}

// ---- matmul and linear -------------------------------------------------------------------

/// A cuBLAS handle on devtensor's stream, in plain fp32: CUBLAS_DEFAULT_MATH never
/// uses TF32 for cublasSgemm (only CUBLAS_TF32_TENSOR_OP_MATH would).
class cublas {
public:
    cublas() {
        CHECKED(cublasCreate(&handle_));
        CHECKED(cublasSetStream(handle_, stream()));
        CHECKED(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH));
    }
    ~cublas() { (void)cublasDestroy(handle_); }
    cublas(const cublas&) = delete;
    cublas& operator=(const cublas&) = delete;

    /// Row-major c [m, n] = a [m, k] · b, where b is [k, n], or [n, k] used transposed
    /// (linear's weight). cuBLAS is column-major, and a row-major matrix is its
    /// transpose there, so it computes cᵀ = bᵀ · aᵀ from the same buffers.
    void sgemm(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, const float* b,
               bool b_transposed, float* c) const {
        const float one = 1, zero = 0;
        const int mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
        CHECKED(cublasSgemm(handle_, b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, ni, mi, ki, &one,
                            b, b_transposed ? ki : ni, a, ki, &zero, c, ni));
    }

    /// Row-major c [m, n] = op(a) · op(b): a is [m, k], or [k, m] used transposed; b as in sgemm.
    void sgemm(bool a_transposed, std::int64_t m, std::int64_t n, std::int64_t k, const float* a, const float* b,
               bool b_transposed, float* c) const {
        const float one = 1, zero = 0;
        const int mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
        CHECKED(cublasSgemm(handle_, b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N, a_transposed ? CUBLAS_OP_T : CUBLAS_OP_N,
                            ni, mi, ki, &one, b, b_transposed ? ki : ni, a, a_transposed ? mi : ki, &zero, c, ni));
    }

    /// y [n] = w [n, k] · x [k] (row-major w is its column-major transpose).
    void sgemv(std::int64_t n, std::int64_t k, const float* w, const float* x, float* y) const {
        const float one = 1, zero = 0;
        CHECKED(cublasSgemv(handle_, CUBLAS_OP_T, static_cast<int>(k), static_cast<int>(n), &one, w,
                            static_cast<int>(k), x, 1, &zero, y, 1));
    }

private:
    cublasHandle_t handle_{};
};

/// One product c [m, n] = a [m, k] · b (+ bias), b as in cublas::sgemm.
struct gemm_case {
    std::string op, shape;
    std::int64_t m, n, k;
    gpu_tensor a, b, bias;  // bias undefined for matmul
    bool b_transposed;
};

/// Checks devtensor's product against cuBLAS's (plus the bias, which the reference
/// leaves out) everywhere, and both against the exact product at a few places.
/// With inputs in [0, 1) nothing cancels, so each is within γ_k ≈ k·ε/2 of exact
/// (relative), and the two within k·ε of each other; a wrong index is off by far more.
void check_gemm(const gemm_case& g, const gpu_tensor& ours, const gpu_tensor& ref) {
    const auto o = ours.to_vector(), r = ref.to_vector(), a = g.a.to_vector(), b = g.b.to_vector();
    const auto bias =
        g.bias.defined() ? g.bias.to_vector() : std::vector<float>(static_cast<std::size_t>(g.n), 0.f);
    const auto at = [](std::int64_t row, std::int64_t col, std::int64_t cols) {
        return static_cast<std::size_t>(row * cols + col);
    };
    double worst = 0;
    for (std::int64_t i = 0; i < g.m; ++i)
        for (std::int64_t j = 0; j < g.n; ++j) {
            const double want = static_cast<double>(r[at(i, j, g.n)]) + bias[static_cast<std::size_t>(j)];
            worst = std::max(worst, std::abs(o[at(i, j, g.n)] - want) / std::max(std::abs(want), 1e-30));
        }
    double worst_ours = 0, worst_ref = 0;
    for (std::int64_t s = 0; s < 16; ++s) {
        const std::int64_t i = (s * 7919 + 3) % g.m, j = (s * 104729 + 5) % g.n;
        double exact = 0;
        for (std::int64_t l = 0; l < g.k; ++l)
            exact += static_cast<double>(a[at(i, l, g.k)]) *
                     (g.b_transposed ? b[at(j, l, g.k)] : b[at(l, j, g.n)]);
        worst_ref = std::max(worst_ref, std::abs(r[at(i, j, g.n)] - exact) / exact);
        exact += bias[static_cast<std::size_t>(j)];
        worst_ours = std::max(worst_ours, std::abs(o[at(i, j, g.n)] - exact) / exact);
    }
    const double tolerance = static_cast<double>(g.k + 1) * FLT_EPSILON;
    const bool ok = worst <= tolerance && worst_ours <= tolerance / 2 && worst_ref <= tolerance / 2;
    expect(ok, g.op, g.shape,
           "max relative error against cuBLAS " + sci(worst) + " (tolerance (k+1)ε = " + sci(tolerance) +
               "); at 16 places against the exact product: ours " + sci(worst_ours) + ", cuBLAS " +
               sci(worst_ref) + " (tolerance half that)");
}

gemm_case make_matmul(std::int64_t m, std::int64_t n, std::int64_t k, dt::generator& gen) {
    return {.op = "matmul",
            .shape = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k),
            .m = m, .n = n, .k = k,
            .a = dt::rand<float>({m, k}, gpu, gen), .b = dt::rand<float>({k, n}, gpu, gen), .bias = {},
            .b_transposed = false};
}

/// linear(x [batch, in], weight [out, in], bias [out]); shape "b<batch>:<in>-><out>" as in RESULTS.md.
gemm_case make_linear(std::int64_t batch, std::int64_t in, std::int64_t out, dt::generator& gen) {
    return {.op = "linear",
            .shape = "b" + std::to_string(batch) + ":" + std::to_string(in) + "->" + std::to_string(out),
            .m = batch, .n = out, .k = in,
            .a = dt::rand<float>({batch, in}, gpu, gen), .b = dt::rand<float>({out, in}, gpu, gen),
            .bias = dt::rand<float>({out}, gpu, gen),
            .b_transposed = true};
}

/// Times ours against cublasSgemm (and, for a single row, cublasSgemv), then checks it.
/// An exception (a shape devtensor refuses, say) becomes a FAIL line, not the end of the
/// test case, so the shapes after it are still measured.
void measure_gemm(const gemm_case& g, const cublas& blas, double goal) try {
    const gpu_tensor ref = dt::empty<float>({g.m, g.n}, gpu);
    const auto ours_product = [&] {
        return g.op == "matmul" ? dt::matmul(g.a, g.b) : dt::linear(g.a, g.b, g.bias);
    };
    const work ours = [&] { (void)ours_product(); };
    const double flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
    const std::string note = g.op == "matmul"
                                 ? "fp32; allocates its output each call (pool), timed"
                                 : "fp32; ours adds the bias, cuBLAS does not; ours allocates its output";
    const std::string sgemm_name = g.b_transposed ? "cublasSgemm (weight transposed)" : "cublasSgemm";
    measure({g.op, g.shape, sgemm_name, flops, flops, "GFLOP/s", goal, note}, ours,
            [&] { blas.sgemm(g.m, g.n, g.k, g.a.data(), g.b.data(), g.b_transposed, ref.data()); });
    if (g.m == 1) {
        measure({g.op, g.shape, "cublasSgemv", flops, flops, "GFLOP/s", goal, note}, ours,
                [&] { blas.sgemv(g.n, g.k, g.b.data(), g.a.data(), ref.data()); });
    }
    check_gemm(g, ours_product(), ref);  // ref holds cuBLAS's product from its timed calls
} catch (const std::exception& e) {
    expect(false, g.op, g.shape, std::string("threw: ") + e.what());
}

TEST_CASE("gpu matmul and linear against cublasSgemm", "[gpu][gemm]") {
    if (!gpu_ready()) return;
    const cublas blas;
    dt::generator gen(5);
    // m x n x k; linear's batch is m, in_features k, out_features n.
    measure_gemm(make_matmul(4096, 4096, 4096, gen), blas, 0.8);
    measure_gemm(make_matmul(8192, 8192, 1024, gen), blas, 0.8);
    measure_gemm(make_linear(4096, 4096, 4096, gen), blas, 0.8);
    measure_gemm(make_linear(8192, 1024, 8192, gen), blas, 0.8);
}

// ---- training -----------------------------------------------------------------------------

/// One SGD step of the MLP 1024 → 4096 → ReLU → 1024 on a batch of 4096 (forward, mse_loss,
/// zero_grad, backward, step) against the five cuBLAS products the same step needs and
/// nothing else: a lower bound, since libtorch here has no CUDA. The ratio is the share
/// of the step that is those products.
TEST_CASE("gpu training step against its products in cuBLAS", "[gpu][train]") {
    if (!gpu_ready()) return;
    try {
        const cublas blas;
        constexpr std::int64_t batch = 4096, in = 1024, hidden = 4096, out = 1024;
        dt::generator gen(9);
        using layer = dt::nn::linear<float, dt::cpu_device>;
        auto net = dt::nn::sequential(layer(in, hidden, true, gen), dt::nn::relu{}, layer(hidden, out, true, gen)).to(gpu);
        auto opt = dt::optim::sgd(net, {.lr = 1e-4});
        const gpu_tensor X = dt::randn<float>({batch, in}, gpu, gen), Y = dt::randn<float>({batch, out}, gpu, gen);
        float last_loss = 0;
        const work ours = [&] {
            auto loss = dt::nn::mse_loss(net(X), Y);
            opt.zero_grad();
            loss.backward();
            opt.step();
        };
        // the reference's operands: weights, activations and gradients of the same shapes
        const gpu_tensor w1 = dt::rand<float>({hidden, in}, gpu, gen), w2 = dt::rand<float>({out, hidden}, gpu, gen);
        const gpu_tensor h = dt::empty<float>({batch, hidden}, gpu), y = dt::empty<float>({batch, out}, gpu);
        const gpu_tensor gw1 = dt::empty<float>({hidden, in}, gpu), gw2 = dt::empty<float>({out, hidden}, gpu);
        const gpu_tensor gh = dt::empty<float>({batch, hidden}, gpu);
        const work ref = [&] {
            blas.sgemm(false, batch, hidden, in, X.data(), w1.data(), true, h.data());       // h = X·W1ᵀ
            blas.sgemm(false, batch, out, hidden, h.data(), w2.data(), true, y.data());      // y = h·W2ᵀ
            blas.sgemm(true, out, hidden, batch, y.data(), h.data(), false, gw2.data());     // gW2 = gyᵀ·h
            blas.sgemm(false, batch, hidden, out, y.data(), w2.data(), false, gh.data());    // gh = gy·W2
            blas.sgemm(true, hidden, in, batch, gh.data(), X.data(), false, gw1.data());     // gW1 = ghᵀ·X
        };
        // Both sides counted by the products' FLOPs (5 products of 4096·4096·1024 multiply-adds).
        const double flops = 5 * 2.0 * static_cast<double>(batch) * static_cast<double>(hidden) * static_cast<double>(in);
        measure({"train", "b4096:1024->4096->1024", "its 5 products in cublasSgemm", flops, flops, "GFLOP/s", 0,
                 "fp32; ours: a whole sgd step of the MLP (mse_loss), allocations from the pool"},
                ours, ref);
        {
            const dt::no_grad off;
            last_loss = dt::nn::mse_loss(net(X), Y).item();
        }
        expect(std::isfinite(last_loss), "train", "b4096:1024->4096->1024",
               "loss after the timed steps " + sci(static_cast<double>(last_loss)) + " (finite)");
    } catch (const std::exception& e) {
        expect(false, "train", "b4096:1024->4096->1024", std::string("threw: ") + e.what());
    }
}

TEST_CASE("gpu linear on a batch of 1 to 16 (the GEMV shape) against cuBLAS", "[gpu][gemv]") {
    if (!gpu_ready()) return;
    const cublas blas;
    dt::generator gen(7);
    for (const std::int64_t features : {4096, 8192})
        for (const std::int64_t batch : {1, 2, 4, 8, 16})
            measure_gemm(make_linear(batch, features, features, gen), blas, 0.9);
}

}  // namespace
