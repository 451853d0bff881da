// stream.hpp and the CUDA runtime layer under it, on the CPU and (GPU cases) on a
// real GPU: synchronize and current_stream, copies from pinned memory, peer
// copies, devtensor's own memory pool, DEVTENSOR_LAUNCH_BLOCKING. The order of
// the runtime calls behind these is checked without a GPU in test_runtime_order.cpp.
#include "test_support.hpp"

#include <cstdlib>
#include <span>
#include <string>
#include <vector>

TEST_CASE("synchronize on the cpu waits for nothing; a GPU that is not there is device_unavailable") {
    dt::synchronize(dt::cpu_device{});
    dt::synchronize(dt::device("cpu"));
    CHECK_ERROR(dt::device_unavailable, dt::synchronize(dt::cuda_device{dt::cuda_device_count()}), "synchronize",
                "is not available");
#if DEVTENSOR_CUDA_RUNTIME
    CHECK_ERROR(dt::device_mismatch, dt::current_stream(dt::device("cpu")), "current_stream", "no CUDA stream");
    CHECK_ERROR(dt::device_unavailable, dt::current_stream(dt::device("cuda:63")), "current_stream");
#endif
}

#if DEVTENSOR_HAS_CUDA
namespace {
__global__ void add_one(float* data, int n) {
    const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (i < n) data[i] += 1.0f;
}
}  // namespace

DEVTENSOR_GPU_TEST_CASE("gpu: a kernel of the user's on current_stream runs in order with devtensor's ops") {
    const auto t = dt::ones<float>({1000}, dt::cuda_device{0});  // queued on devtensor's stream
    add_one<<<4, 256, 0, dt::current_stream(dt::cuda_device{0})>>>(t.data(), 1000);
    REQUIRE(cudaGetLastError() == cudaSuccess);
    const auto doubled = t + t;  // after the user's kernel
    dt::synchronize(t.device());
    CHECK(cudaStreamQuery(dt::current_stream(t.device())) == cudaSuccess);
    CHECK(doubled.cpu().to_vector() == std::vector<float>(1000, 4.0f));
}

DEVTENSOR_GPU_TEST_CASE("gpu: a copy from pinned memory is complete when it returns, so the memory may be reused") {
    constexpr int n = 1 << 20;
    float* pinned = nullptr;
    REQUIRE(cudaMallocHost(reinterpret_cast<void**>(&pinned), n * sizeof(float)) == cudaSuccess);
    for (int i = 0; i < n; ++i) pinned[i] = static_cast<float>(i);
    const auto on_gpu = dt::from_values<float>(std::span<const float>(pinned, n), {n}, dt::cuda_device{0});
    for (int i = 0; i < n; ++i) pinned[i] = -1.0f;  // overwritten at once, then freed
    REQUIRE(cudaFreeHost(pinned) == cudaSuccess);
    const auto values = on_gpu.cpu().to_vector();
    bool all = true;
    for (int i = 0; i < n; ++i) all = all && values[static_cast<std::size_t>(i)] == static_cast<float>(i);
    CHECK(all);
}

DEVTENSOR_GPU_TEST_CASE("gpu: devtensor allocates from its own pool, not the device's default pool") {
    cudaMemPool_t default_pool{};
    REQUIRE(cudaDeviceGetDefaultMemPool(&default_pool, 0) == cudaSuccess);
    std::uint64_t before = 0, after = 0;
    REQUIRE(cudaMemPoolGetAttribute(default_pool, cudaMemPoolAttrReservedMemCurrent, &before) == cudaSuccess);
    const auto big = dt::zeros<float>({std::int64_t{16} << 20}, dt::cuda_device{0});  // 64 MiB
    REQUIRE(cudaMemPoolGetAttribute(default_pool, cudaMemPoolAttrReservedMemCurrent, &after) == cudaSuccess);
    CHECK(after == before);  // another library's pool (the default one) is untouched
    CHECK(dt::memory_reserved(dt::cuda_device{0}) >= (std::size_t{64} << 20));
    std::uint64_t threshold = 0;
    REQUIRE(cudaMemPoolGetAttribute(default_pool, cudaMemPoolAttrReleaseThreshold, &threshold) == cudaSuccess);
    CHECK(threshold != UINT64_MAX);  // its release threshold is not devtensor's to change
}

DEVTENSOR_GPU_TEST_CASE("gpu: a peer copy's source may die at once; the copy still reads it whole") {
    if (dt::cuda_device_count() < 2) {
        MESSAGE("one GPU: the peer copy needs two");
        return;
    }
    for (int round = 0; round < 20; ++round) {
        dt::generator a(static_cast<std::uint64_t>(round)), b(static_cast<std::uint64_t>(round));
        const auto copy = dt::rand<float>({1 << 22}, dt::cuda_device{0}, a).to(dt::cuda_device{1});
        const auto reuse = dt::zeros<float>({1 << 22}, dt::cuda_device{0});  // may take the source's block
        CHECK(copy.cpu().to_vector() == dt::rand<float>({1 << 22}, dt::cpu_device{}, b).to_vector());
    }
}

DEVTENSOR_GPU_TEST_CASE("gpu: with DEVTENSOR_LAUNCH_BLOCKING=1 an op returns after its kernels have run") {
    const char* env = std::getenv("DEVTENSOR_LAUNCH_BLOCKING");
    CHECK(dt::detail::cudart::launch_blocking() == (env != nullptr && std::string(env) == "1"));
    const auto big = dt::rand<float>({std::int64_t{1} << 26}, dt::cuda_device{0});
    if (dt::detail::cudart::launch_blocking()) CHECK(cudaStreamQuery(dt::current_stream(big.device())) == cudaSuccess);
}
#endif
