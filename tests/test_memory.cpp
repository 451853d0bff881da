// memory.hpp: the allocator's statistics and out-of-memory behaviour.
#include "test_support.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

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

TEST_CASE("host small blocks: classes waste at most 25%, a freed block serves its class again") {
    using pool = dt::detail::host_pool;
    auto& host = pool::instance();
    for (std::size_t bytes = 1; bytes < pool::pooled_from; bytes = bytes * 5 / 4 + 1) {
        CAPTURE(bytes);
        const std::size_t size = pool::size_class(bytes);
        CHECK(size >= bytes);
        CHECK(size % pool::small_alignment == 0);
        CHECK(size - bytes < std::max(pool::small_alignment, bytes / 4 + 1));
        CHECK(pool::size_class(size) == size);
        void* p = host.allocate(bytes);
        REQUIRE(p != nullptr);
        CHECK(reinterpret_cast<std::uintptr_t>(p) % pool::small_alignment == 0);
        host.deallocate(p, bytes);
        const std::uint64_t before = host.system_allocations();
        void* again = host.allocate(size);  // its class: the cached block, no new malloc
        CHECK(again == p);
        CHECK(host.system_allocations() == before);
        host.deallocate(again, size);
    }
    dt::empty_cache(dt::cpu_device{});
    CHECK(host.cached() == 0);
}

TEST_CASE("memory_system_allocations counts what the cache could not serve") {
    const dt::cpu_device cpu;
    { const auto warm = dt::empty<float>({1000}); }
    const std::uint64_t before = dt::memory_system_allocations(cpu);
    for (int i = 0; i < 100; ++i) (void)dt::empty<float>({1000});  // the cached block each time
    CHECK(dt::memory_system_allocations(cpu) == before);
    dt::empty_cache(cpu);
    (void)dt::empty<float>({1000});
    CHECK(dt::memory_system_allocations(cpu) == before + 1);
}

TEST_CASE("cuda statistics on an absent device are device_unavailable, all alike") {
    for (const int index : {0, 1}) {  // cuda:0 too, on a machine without a GPU
        const dt::device absent(dt::device_kind::cuda, dt::cuda_device_count() + index);
        CAPTURE(index);
        CHECK_ERROR(dt::device_unavailable, dt::memory_allocated(absent), "memory_allocated");
        CHECK_ERROR(dt::device_unavailable, dt::max_memory_allocated(absent), "max_memory_allocated");
        CHECK_ERROR(dt::device_unavailable, dt::reset_peak_memory_stats(absent), "reset_peak_memory_stats");
        CHECK_ERROR(dt::device_unavailable, dt::memory_reserved(absent), "memory_reserved");
        CHECK_ERROR(dt::device_unavailable, dt::empty_cache(absent), "empty_cache");
        CHECK_ERROR(dt::device_unavailable, dt::memory_system_allocations(absent), "memory_system_allocations");
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

// ---- memory_snapshot and the out-of-memory explainer (DESIGN §14) ---------------------------

namespace {
/// The records of `snapshot` made in this file.
std::vector<dt::allocation_record> made_here(const std::vector<dt::allocation_record>& snapshot) {
    std::vector<dt::allocation_record> mine;
    for (const auto& r : snapshot)
        if (r.made.known() && std::string(dt::file_of(r.made.site)) == "test_memory.cpp") mine.push_back(r);
    return mine;
}
}  // namespace

TEST_CASE("memory_snapshot lists live allocations largest first: bytes, shape, dtype, site, age") {
    const dt::cpu_device cpu;
    const auto small = dt::zeros<float>({10, 10}, cpu); const int small_line = __LINE__;
    const auto big = dt::empty<double>({1000, 3}, cpu); const int big_line = __LINE__;
    const auto flags = dt::from_values<bool>({true, false, true}, {3}, cpu); const int flags_line = __LINE__;
    const auto mine = made_here(dt::memory_snapshot(cpu));
    REQUIRE(mine.size() == 3);
    CHECK(mine[0].bytes == 24000);
    CHECK(mine[0].shape == dt::shape{1000, 3});
    CHECK(mine[0].dtype == "torch.float64");
    CHECK(std::string(mine[0].made.op) == "empty");
    CHECK(mine[0].made.site.line() == static_cast<unsigned>(big_line));
    CHECK(mine[1].bytes == 400);
    CHECK(mine[1].dtype == "torch.float32");
    CHECK(mine[1].made.site.line() == static_cast<unsigned>(small_line));
    CHECK(mine[2].bytes == 3);
    CHECK(mine[2].dtype == "torch.bool");
    CHECK(mine[2].made.site.line() == static_cast<unsigned>(flags_line));
    CHECK(mine[2].age == 0);  // the youngest
    CHECK(mine[0].age == 1);
    CHECK(mine[1].age == 2);
    for (const auto& r : mine) CHECK(r.count == 1);
}

TEST_CASE("memory_snapshot by site: one record per creation site, bytes and tensors summed") {
    std::vector<dt::tensor<float, dt::cpu_device>> kept;
    int loop_line = 0;
    for (const std::int64_t n : {200, 300, 100}) {
        kept.push_back(dt::zeros<float>({n})); loop_line = __LINE__;
    }
    const auto other = dt::ones<float>({50}); const int other_line = __LINE__;
    const auto mine = made_here(dt::memory_snapshot(dt::cpu_device{}, dt::snapshot_grouping::by_site));
    REQUIRE(mine.size() == 2);
    CHECK(mine[0].count == 3);
    CHECK(mine[0].bytes == 600 * sizeof(float));
    CHECK(mine[0].shape == dt::shape{300});  // the largest of them
    CHECK(mine[0].made.site.line() == static_cast<unsigned>(loop_line));
    CHECK(mine[1].count == 1);
    CHECK(mine[1].made.site.line() == static_cast<unsigned>(other_line));
    kept.clear();
    CHECK(made_here(dt::memory_snapshot(dt::cpu_device{})).size() == 1);  // freed ones are gone
}

TEST_CASE("out_of_memory ends with the five largest live allocations by creation site and the cached bytes") {
    std::vector<dt::tensor<std::uint8_t, dt::cpu_device>> held;
    std::vector<int> lines;
    held.push_back(dt::empty<std::uint8_t>({std::int64_t{41} << 20})); lines.push_back(__LINE__);
    held.push_back(dt::empty<std::uint8_t>({std::int64_t{42} << 20})); lines.push_back(__LINE__);
    held.push_back(dt::empty<std::uint8_t>({std::int64_t{43} << 20})); lines.push_back(__LINE__);
    held.push_back(dt::empty<std::uint8_t>({std::int64_t{44} << 20})); lines.push_back(__LINE__);
    held.push_back(dt::empty<std::uint8_t>({std::int64_t{45} << 20})); lines.push_back(__LINE__);
    held.push_back(dt::empty<std::uint8_t>({std::int64_t{40} << 20})); lines.push_back(__LINE__);  // the sixth: not listed
    std::string message;
    try {
        (void)dt::empty<float>({std::int64_t{1} << 46});
    } catch (const dt::out_of_memory& e) {
        message = e.what();
    }
    INFO(message);
    CHECK(test::contains(message, "for empty at test_memory.cpp:"));
    CHECK(test::contains(message, "the largest live allocations by creation site: 45.00 MiB made by empty at test_memory.cpp:" +
                                      std::to_string(lines[4]) + " (1 tensor), 44.00 MiB made by empty at test_memory.cpp:" +
                                      std::to_string(lines[3])));
    for (std::size_t i = 0; i < 5; ++i) CHECK(test::contains(message, "test_memory.cpp:" + std::to_string(lines[i]) + " (1 tensor)"));
    CHECK(!test::contains(message, "test_memory.cpp:" + std::to_string(lines[5])));
    CHECK(test::contains(message, "; cached by the pool, free to reuse: "));
}

TEST_CASE("the small-block cache: a freed block serves its size class again, on this thread; big ones skip it") {
    namespace de = dt::detail;
    using blocks = de::small_blocks;
    void* a = blocks::allocate(100);  // the 65-128-byte class
    std::memset(a, 0x5a, 128);        // the class's whole size is the block's
    blocks::deallocate(a, 100);
    void* b = blocks::allocate(128);
    if (DEVTENSOR_SMALL_BLOCK_CACHE) CHECK(b == a);  // off under AddressSanitizer
    void* c = blocks::allocate(129);                 // the next class
    CHECK(c != b);
    void* big = blocks::allocate(blocks::granule * blocks::classes + 1);  // past the classes: the heap's
    std::memset(big, 0, blocks::granule * blocks::classes + 1);
    blocks::deallocate(big, blocks::granule * blocks::classes + 1);
    blocks::deallocate(c, 129);
    blocks::deallocate(b, 128);

    // blocks freed on other threads go to their caches (past `depth`, to the heap) and back to
    // the heap when those threads end: valgrind and LeakSanitizer see nothing lost
    std::vector<void*> made;
    for (std::size_t i = 0; i < 3 * blocks::depth; ++i) made.push_back(blocks::allocate(200));
    std::thread([&] {
        for (void* p : made) blocks::deallocate(p, 200);
        void* again = blocks::allocate(200);
        if (DEVTENSOR_SMALL_BLOCK_CACHE) CHECK(again == made[blocks::depth - 1]);  // the last one it kept
        blocks::deallocate(again, 200);
    }).join();
    // and the objects that use it: a graph made on one thread, freed on another
    auto x = dt::randn<float>({8, 4}).requires_grad_();
    auto loss = dt::sum(dt::relu(x) * 2.f);
    std::thread([moved = std::move(loss)]() mutable { moved.backward(); }).join();
    CHECK(x.grad().defined());
}
