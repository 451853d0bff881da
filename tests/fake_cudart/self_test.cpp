// The recording CUDA runtime stand-in checked on its own, through the runtime
// API (CTest fake_cudart_self_test): what tests of devtensor rely on it for.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "fake_cudart.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace fake = devtensor_fake;

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

/// Two devices, cuda:0 current, no error left, an empty log.
void fresh() {
    fake::set_device_count(2);
    REQUIRE(cudaSetDevice(0) == cudaSuccess);
    (void)cudaGetLastError();
    fake::reset();
}

std::uint64_t pool_figure(cudaMemPool_t pool, cudaMemPoolAttr attr) {
    std::uint64_t value = 0;
    REQUIRE(cudaMemPoolGetAttribute(pool, attr, &value) == cudaSuccess);
    return value;
}

cudaMemPool_t make_pool(int device) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t pool{};
    REQUIRE(cudaMemPoolCreate(&pool, &props) == cudaSuccess);
    return pool;
}

void kernel_stub() {}  // stands for a kernel's host stub: launches only record it

}  // namespace

TEST_CASE("devices: count, properties, the current device, a machine without any") {
    fresh();
    int count = 0;
    CHECK(cudaGetDeviceCount(&count) == cudaSuccess);
    CHECK(count == 2);
    cudaDeviceProp prop{};
    REQUIRE(cudaGetDeviceProperties(&prop, 1) == cudaSuccess);
    CHECK(std::strcmp(prop.name, "devtensor fake GPU") == 0);
    CHECK(prop.major == 9);
    CHECK(prop.multiProcessorCount == 132);
    int sms = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 1) == cudaSuccess);
    CHECK(sms == 132);
    int version = 0;
    CHECK((cudaDriverGetVersion(&version) == cudaSuccess && version == 13000));
    CHECK(cudaSetDevice(2) == cudaErrorInvalidDevice);
    CHECK(cudaSetDevice(1) == cudaSuccess);
    int current = -1;
    CHECK((cudaGetDevice(&current) == cudaSuccess && current == 1));
    const auto log = fake::calls();
    const auto set = fake::index_of(log, "cudaSetDevice");
    REQUIRE(set != fake::npos);
    CHECK((log[set].ordinal == 2 && log[set].device == 0 && log[set].error == cudaErrorInvalidDevice));
    CHECK(log.back().device == 1);  // cudaGetDevice, made with cuda:1 current

    fake::set_device_count(0);
    CHECK(cudaGetDeviceCount(&count) == cudaErrorNoDevice);
    CHECK(count == 0);
    fake::set_device_count(2);
}

TEST_CASE("pools: allocations and frees, memory kept reserved until trimmed, the device's limit") {
    fresh();
    const cudaMemPool_t pool = make_pool(0);
    cudaStream_t stream{};
    REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
    std::uint64_t keep_all = UINT64_MAX;
    REQUIRE(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all) == cudaSuccess);

    void* p = nullptr;
    REQUIRE(cudaMallocFromPoolAsync(&p, 1000, pool, stream) == cudaSuccess);
    CHECK(reinterpret_cast<std::uintptr_t>(p) % 256 == 0);
    CHECK(fake::device_of(p) == 0);
    CHECK(fake::live_allocations(pool) == 1);
    CHECK(pool_figure(pool, cudaMemPoolAttrUsedMemCurrent) == 1024);
    CHECK(pool_figure(pool, cudaMemPoolAttrReservedMemCurrent) == 1024);
    REQUIRE(cudaFreeAsync(p, stream) == cudaSuccess);
    CHECK(fake::live_allocations(pool) == 0);
    CHECK(pool_figure(pool, cudaMemPoolAttrUsedMemCurrent) == 0);
    CHECK(pool_figure(pool, cudaMemPoolAttrReservedMemCurrent) == 1024);  // cached
    CHECK(cudaStreamSynchronize(stream) == cudaSuccess);
    CHECK(pool_figure(pool, cudaMemPoolAttrReservedMemCurrent) == 1024);  // below the threshold: kept

    const auto log = fake::calls();
    const auto alloc = fake::index_of(log, "cudaMallocFromPoolAsync");
    const auto free = fake::index_of(log, "cudaFreeAsync");
    REQUIRE(alloc != fake::npos);
    REQUIRE(free != fake::npos);
    CHECK((log[alloc].pool == pool && log[alloc].stream == stream && log[alloc].dst == p && log[alloc].bytes == 1000));
    CHECK((log[free].pool == pool && log[free].dst == p));  // the pool the memory went back to

    SUBCASE("memory a pool keeps reserved is not free for cudaMalloc until trimmed") {
        void* big = nullptr;
        REQUIRE(cudaMallocFromPoolAsync(&big, 600 * MiB, pool, stream) == cudaSuccess);
        REQUIRE(cudaFreeAsync(big, stream) == cudaSuccess);
        std::size_t free_bytes = 0, total = 0;
        REQUIRE(cudaMemGetInfo(&free_bytes, &total) == cudaSuccess);
        CHECK(total == 1024 * MiB);
        CHECK(free_bytes == 424 * MiB);
        void* other = nullptr;
        CHECK(cudaMalloc(&other, 600 * MiB) == cudaErrorMemoryAllocation);
        CHECK(fake::last_error() == cudaErrorMemoryAllocation);
        CHECK(cudaGetLastError() == cudaErrorMemoryAllocation);
        REQUIRE(cudaMemPoolTrimTo(pool, 0) == cudaSuccess);
        CHECK(pool_figure(pool, cudaMemPoolAttrReservedMemCurrent) == 0);
        REQUIRE(cudaMalloc(&other, 600 * MiB) == cudaSuccess);
        CHECK(fake::live_allocations(nullptr) == 1);
        REQUIRE(cudaFree(other) == cudaSuccess);
    }
    SUBCASE("the default pool of each device, released at a synchronisation") {
        cudaMemPool_t default0{}, default1{};
        REQUIRE(cudaDeviceGetDefaultMemPool(&default0, 0) == cudaSuccess);
        REQUIRE(cudaDeviceGetDefaultMemPool(&default1, 1) == cudaSuccess);
        CHECK(default0 != default1);
        CHECK(default0 != pool);
        CHECK(fake::device_of(default1) == 1);
        REQUIRE(cudaSetDevice(1) == cudaSuccess);
        cudaStream_t stream1{};
        REQUIRE(cudaStreamCreate(&stream1) == cudaSuccess);
        void* q = nullptr;
        REQUIRE(cudaMallocAsync(&q, 100, stream1) == cudaSuccess);
        CHECK(fake::device_of(q) == 1);
        CHECK(fake::live_allocations(default1) == 1);
        REQUIRE(cudaFreeAsync(q, stream1) == cudaSuccess);
        CHECK(pool_figure(default1, cudaMemPoolAttrReservedMemCurrent) == 256);
        REQUIRE(cudaStreamSynchronize(stream1) == cudaSuccess);  // threshold 0: all handed back
        CHECK(pool_figure(default1, cudaMemPoolAttrReservedMemCurrent) == 0);
        REQUIRE(cudaDeviceSetMemPool(1, pool) == cudaErrorInvalidValue);  // pool is cuda:0's
    }
    CHECK(cudaFreeAsync(p, stream) == cudaErrorInvalidValue);  // freed twice
    CHECK(cudaGetLastError() == cudaErrorInvalidValue);
    CHECK(cudaMemPoolDestroy(pool) == cudaSuccess);
    CHECK(cudaMallocFromPoolAsync(&p, 1, pool, stream) == cudaErrorInvalidValue);
    CHECK(cudaGetLastError() == cudaErrorInvalidValue);
}

TEST_CASE("copies move bytes, and fail where the kind does not match the memory") {
    fresh();
    const std::vector<int> values{1, 2, 3, 4};
    std::vector<int> back(4);
    const std::size_t bytes = sizeof(int) * 4;
    void* a = nullptr;
    void* b = nullptr;
    REQUIRE(cudaMalloc(&a, bytes) == cudaSuccess);
    REQUIRE(cudaSetDevice(1) == cudaSuccess);
    REQUIRE(cudaMalloc(&b, bytes) == cudaSuccess);
    cudaStream_t stream{};
    REQUIRE(cudaStreamCreate(&stream) == cudaSuccess);

    REQUIRE(cudaMemcpy(a, values.data(), bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    REQUIRE(cudaMemcpyPeerAsync(b, 1, a, 0, bytes, stream) == cudaSuccess);
    REQUIRE(cudaMemsetAsync(a, 0, bytes, stream) == cudaSuccess);
    REQUIRE(cudaMemcpyAsync(back.data(), b, bytes, cudaMemcpyDeviceToHost, stream) == cudaSuccess);
    CHECK(back == values);
    REQUIRE(cudaMemcpy(back.data(), a, bytes, cudaMemcpyDefault) == cudaSuccess);
    CHECK(back == std::vector<int>(4, 0));

    const auto log = fake::calls();
    const auto peer = fake::index_of(log, "cudaMemcpyPeerAsync");
    REQUIRE(peer != fake::npos);
    CHECK((log[peer].dst == b && log[peer].src == a && log[peer].bytes == bytes && log[peer].stream == stream &&
           log[peer].ordinal == 1 && log[peer].device == 1));

    CHECK(cudaMemcpy(back.data(), values.data(), bytes, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
    CHECK(cudaMemcpy(back.data(), a, bytes, cudaMemcpyHostToHost) == cudaErrorInvalidValue);
    CHECK(cudaMemcpy(back.data(), a, bytes + 1, cudaMemcpyDeviceToHost) == cudaErrorInvalidValue);  // past the end
    CHECK(cudaMemcpyPeerAsync(b, 0, a, 0, bytes, stream) == cudaErrorInvalidValue);  // b is cuda:1's
    CHECK(cudaGetLastError() == cudaErrorInvalidValue);
    CHECK(cudaFree(a) == cudaSuccess);
    CHECK(cudaFree(b) == cudaSuccess);
}

TEST_CASE("the last error sticks until cudaGetLastError, which the log shows") {
    fresh();
    CHECK(cudaSetDevice(7) == cudaErrorInvalidDevice);
    CHECK(cudaGetDeviceCount(nullptr) == cudaErrorInvalidValue);
    CHECK(cudaPeekAtLastError() == cudaErrorInvalidValue);  // the latest, kept
    CHECK(fake::last_error() == cudaErrorInvalidValue);
    CHECK(cudaGetLastError() == cudaErrorInvalidValue);     // taken
    CHECK(cudaGetLastError() == cudaSuccess);
    CHECK(cudaPeekAtLastError() == cudaSuccess);
    CHECK(std::strcmp(cudaGetErrorName(cudaErrorInvalidDevice), "cudaErrorInvalidDevice") == 0);
    CHECK(std::strcmp(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory") == 0);

    const auto log = fake::calls();
    const auto failed = fake::index_of(log, [](const fake::call& c) { return c.error == cudaErrorInvalidValue; });
    const auto cleared = fake::index_of(log, "cudaGetLastError", failed);
    REQUIRE(cleared != fake::npos);
    CHECK(log[cleared].error == cudaErrorInvalidValue);
    CHECK(log[cleared + 1].name == "cudaGetLastError");
    CHECK(log[cleared + 1].error == cudaSuccess);
    CHECK(log.back().name == "cudaGetErrorString");
    CHECK(log.back().error == cudaErrorMemoryAllocation);  // the code described
}

TEST_CASE("fail_next fails the next call of that name, once, and sets the last error") {
    fresh();
    cudaStream_t stream{};
    REQUIRE(cudaStreamCreate(&stream) == cudaSuccess);
    fake::fail_next("cudaStreamSynchronize", cudaErrorIllegalAddress);
    CHECK(cudaStreamQuery(stream) == cudaSuccess);  // another name: unaffected
    CHECK(cudaStreamSynchronize(stream) == cudaErrorIllegalAddress);
    CHECK(fake::last_error() == cudaErrorIllegalAddress);
    CHECK(cudaStreamSynchronize(stream) == cudaSuccess);
    const auto log = fake::calls();
    const auto failed = fake::index_of(log, "cudaStreamSynchronize");
    REQUIRE(failed != fake::npos);
    CHECK((log[failed].error == cudaErrorIllegalAddress && log[failed].stream == stream));
    (void)cudaGetLastError();

    void* p = nullptr;
    fake::fail_next("cudaMallocFromPoolAsync", cudaErrorMemoryAllocation);
    fake::fail_next("cudaMallocFromPoolAsync", cudaErrorMemoryAllocation);
    cudaMemPool_t pool{};
    REQUIRE(cudaDeviceGetDefaultMemPool(&pool, 0) == cudaSuccess);
    CHECK(cudaMallocFromPoolAsync(&p, 64, pool, stream) == cudaErrorMemoryAllocation);
    CHECK(cudaMallocFromPoolAsync(&p, 64, pool, stream) == cudaErrorMemoryAllocation);
    CHECK(p == nullptr);
    fake::fail_next("cudaMallocFromPoolAsync", cudaErrorMemoryAllocation);
    fake::reset();  // drops the failure not yet used
    REQUIRE(cudaMallocFromPoolAsync(&p, 64, pool, stream) == cudaSuccess);
    CHECK(cudaFreeAsync(p, stream) == cudaSuccess);
    (void)cudaGetLastError();
}

TEST_CASE("pointer attributes: pinned, registered, device and unregistered memory") {
    fresh();
    const auto attributes = [](const void* p) {
        cudaPointerAttributes a{};
        REQUIRE(cudaPointerGetAttributes(&a, p) == cudaSuccess);
        return a;
    };
    void* pinned = nullptr;
    void* mapped = nullptr;
    void* device = nullptr;
    REQUIRE(cudaMallocHost(&pinned, 100) == cudaSuccess);
    REQUIRE(cudaHostAlloc(&mapped, 100, cudaHostAllocMapped) == cudaSuccess);
    REQUIRE(cudaSetDevice(1) == cudaSuccess);
    REQUIRE(cudaMalloc(&device, 100) == cudaSuccess);
    std::vector<char> pageable(4096);

    CHECK(attributes(pinned).type == cudaMemoryTypeHost);
    CHECK(attributes(static_cast<char*>(mapped) + 99).type == cudaMemoryTypeHost);
    CHECK(attributes(device).type == cudaMemoryTypeDevice);
    CHECK(attributes(device).device == 1);
    CHECK(attributes(static_cast<char*>(device) + 50).devicePointer == static_cast<char*>(device) + 50);
    CHECK(attributes(pageable.data()).type == cudaMemoryTypeUnregistered);
    CHECK(fake::is_pinned(pinned));
    CHECK(!fake::is_pinned(device));
    CHECK(!fake::is_pinned(pageable.data()));

    REQUIRE(cudaHostRegister(pageable.data(), pageable.size(), cudaHostRegisterDefault) == cudaSuccess);
    CHECK(attributes(pageable.data() + 4095).type == cudaMemoryTypeHost);
    CHECK(fake::is_pinned(pageable.data()));
    CHECK(cudaHostRegister(pageable.data() + 10, 10, 0) == cudaErrorHostMemoryAlreadyRegistered);
    REQUIRE(cudaHostUnregister(pageable.data()) == cudaSuccess);
    CHECK(attributes(pageable.data()).type == cudaMemoryTypeUnregistered);
    CHECK(cudaHostUnregister(pageable.data()) == cudaErrorHostMemoryNotRegistered);

    CHECK(cudaFreeHost(device) == cudaErrorInvalidValue);
    CHECK(cudaFreeHost(pinned) == cudaSuccess);
    CHECK(cudaFreeHost(mapped) == cudaSuccess);
    CHECK(cudaFree(device) == cudaSuccess);
    CHECK(attributes(device).type == cudaMemoryTypeUnregistered);  // freed: no longer known
    (void)cudaGetLastError();
}

TEST_CASE("streams and events are distinct handles of their device, recorded with the calls") {
    fresh();
    cudaStream_t s0{}, s1{};
    cudaEvent_t e0{}, e1{};
    REQUIRE(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking) == cudaSuccess);
    REQUIRE(cudaEventCreateWithFlags(&e0, cudaEventDisableTiming) == cudaSuccess);
    REQUIRE(cudaSetDevice(1) == cudaSuccess);
    REQUIRE(cudaStreamCreate(&s1) == cudaSuccess);
    REQUIRE(cudaEventCreate(&e1) == cudaSuccess);
    CHECK(static_cast<const void*>(s0) != static_cast<const void*>(s1));
    CHECK(static_cast<const void*>(e0) != static_cast<const void*>(s0));
    CHECK((fake::device_of(s0) == 0 && fake::device_of(e0) == 0 && fake::device_of(s1) == 1));

    REQUIRE(cudaEventRecord(e1, s1) == cudaSuccess);
    REQUIRE(cudaStreamWaitEvent(s0, e1, 0) == cudaSuccess);  // across devices: allowed
    CHECK(cudaEventRecord(e0, s1) == cudaErrorInvalidResourceHandle);  // event and stream on different devices
    const auto log = fake::calls();
    const auto recorded = fake::index_of(log, "cudaEventRecord");
    const auto waited = fake::index_of(log, "cudaStreamWaitEvent");
    REQUIRE(recorded != fake::npos);
    REQUIRE(waited != fake::npos);
    CHECK(recorded < waited);
    CHECK((log[recorded].event == e1 && log[recorded].stream == s1));
    CHECK((log[waited].event == e1 && log[waited].stream == s0));
    CHECK(log[fake::index_of(log, "cudaEventCreate")].event == e1);

    float ms = -1;
    REQUIRE(cudaEventRecord(e1, s1) == cudaSuccess);
    CHECK((cudaEventElapsedTime(&ms, e1, e1) == cudaSuccess && ms == 0.0f));
    REQUIRE(cudaEventDestroy(e1) == cudaSuccess);
    CHECK(cudaEventSynchronize(e1) == cudaErrorInvalidResourceHandle);  // destroyed
    REQUIRE(cudaStreamDestroy(s1) == cudaSuccess);
    CHECK(cudaStreamSynchronize(s1) == cudaErrorInvalidResourceHandle);
    (void)cudaGetLastError();
}

TEST_CASE("a launch is recorded with its configuration and stream, and runs nothing") {
    fresh();
    cudaStream_t s0{}, s1{};
    REQUIRE(cudaStreamCreate(&s0) == cudaSuccess);
    REQUIRE(cudaSetDevice(1) == cudaSuccess);
    REQUIRE(cudaStreamCreate(&s1) == cudaSuccess);
    REQUIRE(cudaSetDevice(0) == cudaSuccess);
    const auto* stub = reinterpret_cast<const void*>(&kernel_stub);
    CHECK(cudaLaunchKernel(stub, dim3(8), dim3(256), nullptr, 0, s0) == cudaSuccess);
    CHECK(cudaLaunchKernel(stub, dim3(8), dim3(256), nullptr, 0, s1) == cudaErrorInvalidResourceHandle);
    CHECK(cudaLaunchKernel(stub, dim3(8), dim3(2048), nullptr, 0, s0) == cudaErrorInvalidConfiguration);
    CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
    const auto log = fake::calls();
    const auto first = fake::index_of(log, "cudaLaunchKernel");
    REQUIRE(first != fake::npos);
    const auto& launch = log[first];
    CHECK((launch.function == stub && launch.stream == s0 && launch.device == 0));
    CHECK((launch.grid.x == 8 && launch.block.x == 256 && launch.block.y == 1));
    int blocks = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, stub, 256, 0) == cudaSuccess);
    CHECK(blocks == 8);
}
