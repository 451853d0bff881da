// GPU benchmarks, each beside its reference in the same run, timed with CUDA
// events: ones vs cudaMemsetAsync, add vs a device-to-device copy, rand vs
// cuRAND's Philox, matmul vs cublasSgemm. Built as CUDA (a .cu wrapper).
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include <devtensor/devtensor.hpp>

#include <cublas_v2.h>
#include <curand.h>

#include <cstdio>
#include <functional>
#include <string>

namespace dt = devtensor;

namespace {
/// Median-free but simple: the mean of `reps` runs after a warm-up, in milliseconds.
double time_ms(const std::function<void()>& work, int reps = 20) {
    const cudaStream_t stream = dt::detail::cudart::stream(0);
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    work();
    cudaEventRecord(start, stream);
    for (int i = 0; i < reps; ++i) work();
    cudaEventRecord(stop, stream);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return ms / reps;
}

void report(const std::string& what, double ms, double reference_ms, double bytes_or_flops, const char* unit) {
    std::printf("%-44s %9.3f ms %9.1f %s   ratio to reference %.2f\n", what.c_str(), ms,
                bytes_or_flops / ms / 1e6, unit, reference_ms / ms);
}
}  // namespace

TEST_CASE("gpu ops against their references", "[gpu]") {
    if (!dt::cuda_available()) {
        WARN("no GPU: " << dt::cuda_unavailable_reason());
        return;
    }
    const cudaStream_t stream = dt::detail::cudart::stream(0);
    constexpr std::int64_t n = std::int64_t{1} << 28;  // 1 GiB of float
    auto a = dt::rand<float>({n}, dt::cuda_device{}), b = dt::rand<float>({n}, dt::cuda_device{});
    auto c = dt::empty<float>({n}, dt::cuda_device{});
    const double bytes = 4.0 * n;

    const double memset_ms = time_ms([&] { cudaMemsetAsync(c.data(), 0, bytes, stream); });
    report("fill 256M floats (cudaMemsetAsync = ref)", time_ms([&] { dt::fill(c, 1.f); }), memset_ms, bytes, "GB/s");

    const double copy_ms = time_ms([&] { cudaMemcpyAsync(c.data(), a.data(), bytes, cudaMemcpyDeviceToDevice, stream); });
    report("add 256M floats (D2D memcpy = ref, 2 vs 3 x)", time_ms([&] { dt::add(a, b, c); }), copy_ms * 1.5, 3 * bytes, "GB/s");
    const auto x = dt::rand<float>({n / 4096, 4096}, dt::cuda_device{}), bias = dt::rand<float>({4096}, dt::cuda_device{});
    auto y = dt::empty<float>({n / 4096, 4096}, dt::cuda_device{});
    report("add bias [64K, 4096] + [4096] (same-shape add = ref)", time_ms([&] { dt::add(x, bias, y); }),
           time_ms([&] { dt::add(a, b, c); }), 2 * bytes, "GB/s");

    curandGenerator_t gen;
    curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_PHILOX4_32_10);
    curandSetStream(gen, stream);
    const double curand_ms = time_ms([&] { curandGenerateUniform(gen, c.data(), n); });
    dt::generator ours(1);
    report("rand 256M floats (cuRAND Philox = ref)", time_ms([&] { dt::fill_uniform(c, ours); }), curand_ms, bytes, "GB/s");
    curandDestroyGenerator(gen);

    cublasHandle_t handle;
    cublasCreate(&handle);
    cublasSetStream(handle, stream);
    cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH);  // fp32, no TF32
    for (const std::int64_t s : {1024, 4096}) {
        const auto ma = dt::rand<float>({s, s}, dt::cuda_device{}), mb = dt::rand<float>({s, s}, dt::cuda_device{});
        auto mc = dt::empty<float>({s, s}, dt::cuda_device{});
        const float one = 1, zero = 0;
        const int si = static_cast<int>(s);
        const double cublas_ms = time_ms([&] {
            cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, si, si, si, &one, mb.data(), si, ma.data(), si, &zero, mc.data(), si);
        }, 5);
        report("matmul " + std::to_string(s) + "^3 fp32 (cublasSgemm = ref)", time_ms([&] { (void)dt::matmul(ma, mb); }, 5),
               cublas_ms, 2.0 * s * s * s / 1e3, "GFLOP/s");
    }
    cublasDestroy(handle);
}
