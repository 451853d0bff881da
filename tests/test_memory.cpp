// memory.hpp: the allocator's statistics and out-of-memory behaviour.
#include "test_support.hpp"

#include <cstdint>

TEST_CASE("memory_allocated counts live tensors; the peak remembers") {
    const dt::cpu_device cpu;
    const std::size_t before = dt::memory_allocated(cpu);
    dt::reset_peak_memory_stats(cpu);
    {
        auto a = dt::zeros<float>({1000}, cpu);
        CHECK(dt::memory_allocated(cpu) == before + 4000);
        {
            auto b = a;  // a handle: no new memory
            CHECK(dt::memory_allocated(cpu) == before + 4000);
            auto c = dt::zeros<double>({500}, cpu);
            CHECK(dt::memory_allocated(cpu) == before + 8000);
        }
        CHECK(dt::memory_allocated(cpu) == before + 4000);
        CHECK(dt::max_memory_allocated(cpu) == before + 8000);
    }
    CHECK(dt::memory_allocated(cpu) == before);
    CHECK(dt::memory_allocated(dt::device("cpu")) == before);  // any Device names the same counters
    dt::reset_peak_memory_stats(cpu);
    CHECK(dt::max_memory_allocated(cpu) == before);
    CHECK(dt::memory_reserved(cpu) >= dt::memory_allocated(cpu));
    dt::empty_cache(cpu);
}

TEST_CASE("a huge allocation is out_of_memory naming the device and the sizes; work goes on") {
    const dt::cpu_device cpu;
    const std::size_t before = dt::memory_allocated(cpu);
    // 2^46 floats = 256 TiB: more than any machine here has
    CHECK_ERROR(dt::out_of_memory, dt::zeros<float>({std::int64_t{1} << 46}, cpu), "cpu",
                "out of memory", "281474976710656 bytes", "free", "allocated");
    CHECK_THROWS_AS((void)dt::empty<float>({std::int64_t{1} << 46}), dt::error);  // the hierarchy of §9
    CHECK(dt::memory_allocated(cpu) == before);
    const auto t = dt::ones<float>({3});
    CHECK(t.to_vector() == std::vector<float>{1, 1, 1});
}

TEST_CASE("byte counts that overflow the address space are out_of_memory, not a wrap-around") {
    // 2^62 doubles: the element count fits int64, the byte count overflows size_t
    CHECK_ERROR(dt::out_of_memory, dt::buffer<double>(std::size_t{1} << 62), "on cpu",
                "4611686018427387904 elements of 8 bytes", "address space", "free ", "allocated by devtensor",
                "reserved");
    // The same through a factory: 2^62 floats are 2^64 bytes.
    CHECK_ERROR(dt::out_of_memory, dt::empty<float>({std::int64_t{1} << 62}), "on cpu", "free ", "reserved");
}

TEST_CASE("allocate_bytes of 0 bytes is nullptr and counts nothing") {
    const std::size_t before = dt::memory_allocated(dt::cpu_device{});
    void* p = dt::allocate_bytes(dt::device("cpu"), 0);
    CHECK(p == nullptr);
    dt::deallocate_bytes(dt::device("cpu"), p, 0);
    CHECK(dt::memory_allocated(dt::cpu_device{}) == before);
}

TEST_CASE("host memory is aligned for vector loads") {
    for (int i = 1; i < 50; i += 7) {
        const auto t = dt::empty<float>({i});
        CHECK(reinterpret_cast<std::uintptr_t>(t.data()) % 64 == 0);
    }
}

TEST_CASE("the host pool reuses a freed large block; empty_cache returns it") {
    const dt::cpu_device cpu;
    dt::empty_cache(cpu);
    const std::size_t reserved = dt::memory_reserved(cpu), allocated = dt::memory_allocated(cpu);
    constexpr std::int64_t n = 3 << 20;  // 12 MiB of floats: pooled
    const void* first = nullptr;
    {
        const auto t = dt::ones<float>({n});
        first = t.data();
        CHECK(dt::memory_reserved(cpu) == reserved + 12u * 1024 * 1024);
    }
    CHECK(dt::memory_allocated(cpu) == allocated);
    CHECK(dt::memory_reserved(cpu) == reserved + 12u * 1024 * 1024);  // cached, not returned
    {
        const auto again = dt::empty<float>({n - 1000});  // same size class: the same block
        CHECK(again.data() == first);
        CHECK(dt::memory_reserved(cpu) == reserved + 12u * 1024 * 1024);
        const auto small = dt::empty<float>({n / 4});  // another class: not the cached block
        CHECK(small.data() != first);
    }
    dt::empty_cache(cpu);
    CHECK(dt::memory_reserved(cpu) == reserved);
    CHECK(dt::memory_allocated(cpu) == allocated);
}

TEST_CASE("host size classes waste at most 12.5% above 64 MiB and whole 2 MiB pages below") {
    using pool = dt::detail::host_pool;
    for (std::size_t bytes = pool::pooled_from; bytes < (std::size_t{1} << 40); bytes = bytes * 3 / 2 + 12345) {
        const std::size_t size = pool::size_class(bytes);
        CHECK(size >= bytes);
        CHECK(size % pool::granule == 0);
        CHECK(size - bytes < std::max(pool::granule, bytes / 8));
        CHECK(pool::size_class(size) == size);  // a class is its own class
    }
}

TEST_CASE("a failing host allocation returns the cache before it gives up") {
    { const auto t = dt::empty<float>({4 << 20}); }  // leaves 16 MiB cached
    CHECK(dt::detail::host_pool::instance().cached() >= (16u << 20));
    CHECK_THROWS_AS((void)dt::empty<float>({std::int64_t{1} << 46}), dt::out_of_memory);
    CHECK(dt::detail::host_pool::instance().cached() == 0);
}

TEST_CASE("cuda statistics on an absent device are device_unavailable, all five alike") {
    for (const int index : {0, 1}) {  // cuda:0 too, on a machine without a GPU
        const dt::device absent(dt::device_kind::cuda, dt::cuda_device_count() + index);
        CAPTURE(index);
        CHECK_ERROR(dt::device_unavailable, dt::memory_allocated(absent), "memory_allocated");
        CHECK_ERROR(dt::device_unavailable, dt::max_memory_allocated(absent), "max_memory_allocated");
        CHECK_ERROR(dt::device_unavailable, dt::reset_peak_memory_stats(absent), "reset_peak_memory_stats");
        CHECK_ERROR(dt::device_unavailable, dt::memory_reserved(absent), "memory_reserved");
        CHECK_ERROR(dt::device_unavailable, dt::empty_cache(absent), "empty_cache");
    }
    const dt::device absent(dt::device_kind::cuda, dt::cuda_device_count() + 1);
    CHECK_THROWS_AS((void)dt::memory_reserved(absent), dt::device_unavailable);
    CHECK_THROWS_AS(dt::empty_cache(absent), dt::device_unavailable);
    CHECK_THROWS_AS((void)dt::empty<float>({2}, absent), dt::device_unavailable);
}

DEVTENSOR_GPU_TEST_CASE("gpu: out of memory, then memory_allocated is back and work continues") {
    const dt::cuda_device gpu{0};
    const std::size_t before = dt::memory_allocated(gpu);
    for (int i = 0; i < 3; ++i)
        CHECK_ERROR(dt::out_of_memory, dt::empty<float>({std::int64_t{1} << 46}, gpu), "cuda:0",
                    "out of memory", "free", "reserved");
    CHECK(dt::memory_allocated(gpu) == before);
    {
        auto t = dt::empty<float>({1 << 20}, gpu);
        CHECK(dt::memory_allocated(gpu) == before + (4u << 20));
        CHECK(dt::memory_reserved(gpu) >= (4u << 20));
    }
    CHECK(dt::memory_allocated(gpu) == before);
    dt::empty_cache(gpu);
}
