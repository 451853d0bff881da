// The order of devtensor's CUDA runtime calls, checked without a GPU on the
// recording stand-in (tests/fake_cudart): peer copies ordered by events, copies
// from pinned memory complete before they return, every allocation from
// devtensor's own pool, ignored errors cleared, DEVTENSOR_LAUNCH_BLOCKING, and
// the public synchronize / current_stream. Built with g++ (host code) and, in
// the CUDA build, with nvcc (kernel launches); both link the stand-in, not cudart.
#include "fake_cudart/fake_cudart.hpp"
#include "test_support.hpp"

#include <cstdlib>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace fake = devtensor_fake;

namespace {

/// The log, one call a line: shown when a check fails.
std::string text(const std::vector<fake::call>& log) {
    std::ostringstream out;
    for (const auto& c : log) out << c << '\n';
    return out.str();
}

/// A float tensor on `dev` holding `values`, made by a host-to-device copy only.
template <class D>
dt::tensor<float, D> on(const D& dev, std::initializer_list<float> values) {
    return dt::from_values<float>(values, {static_cast<std::int64_t>(values.size())}).to(dev);
}

}  // namespace

TEST_CASE("a peer copy: the source's stream waits on an event recorded after the copy, before the source is freed") {
    REQUIRE(dt::cuda_device_count() >= 2);
    fake::reset();
    const auto copy = on(dt::cuda_device{0}, {1, 2, 3}).to(dt::cuda_device{1});  // the source dies here
    const auto log = fake::calls();
    INFO(text(log));
    const std::size_t peer = fake::index_of(log, "cudaMemcpyPeerAsync");
    REQUIRE(peer != fake::npos);
    const void* target = log[peer].stream;
    CHECK(fake::device_of(target) == 1);
    // Before the copy: the target's stream waits for the source's queued work (no host wait).
    const std::size_t waits_for_source = fake::index_of(log, [&](const fake::call& c) {
        return c.name == "cudaStreamWaitEvent" && c.stream == target;
    });
    CHECK(waits_for_source < peer);
    CHECK(fake::index_of(log, "cudaStreamSynchronize") > peer);  // no host synchronisation before it
    // After the copy: an event on the target's stream, then the source's stream waits on it ...
    const std::size_t recorded = fake::index_of(log, [&](const fake::call& c) {
        return c.name == "cudaEventRecord" && c.stream == target;
    }, peer);
    REQUIRE(recorded != fake::npos);
    const std::size_t waited = fake::index_of(log, [&](const fake::call& c) {
        return c.name == "cudaStreamWaitEvent" && c.event == log[recorded].event;
    }, recorded);
    REQUIRE(waited != fake::npos);
    CHECK(fake::device_of(log[waited].stream) == 0);
    // ... before the source's memory goes back to the pool on that stream.
    const std::size_t freed = fake::index_of(log, [&](const fake::call& c) {
        return c.name == "cudaFreeAsync" && c.dst == log[peer].src;
    });
    REQUIRE(freed != fake::npos);
    CHECK(waited < freed);
    CHECK(log[freed].stream == log[waited].stream);
    CHECK(copy.cpu().to_vector() == std::vector<float>{1, 2, 3});
    CHECK(fake::last_error() == cudaSuccess);
}

TEST_CASE("a copy from pinned host memory is complete when it returns; from pageable memory it waits for nothing") {
    float* pinned = nullptr;
    REQUIRE(cudaMallocHost(reinterpret_cast<void**>(&pinned), 4 * sizeof(float)) == cudaSuccess);
    for (int i = 0; i < 4; ++i) pinned[i] = static_cast<float>(i + 1);
    fake::reset();
    const auto from_pinned = dt::from_values<float>(std::span<const float>(pinned, 4), {4}, dt::cuda_device{0});
    auto log = fake::calls();
    INFO(text(log));
    const std::size_t copied = fake::index_of(log, [&](const fake::call& c) {
        return c.name == "cudaMemcpyAsync" && c.src == pinned;
    });
    REQUIRE(copied != fake::npos);
    const std::size_t synced = fake::index_of(log, "cudaStreamSynchronize", copied);
    REQUIRE(synced != fake::npos);  // before from_values returned
    CHECK(log[synced].stream == log[copied].stream);
    REQUIRE(cudaFreeHost(pinned) == cudaSuccess);  // the caller may free it at once
    CHECK(from_pinned.cpu().to_vector() == std::vector<float>{1, 2, 3, 4});

    const std::vector<float> pageable{5, 6};
    fake::reset();
    const auto from_pageable = dt::from_values<float>(pageable, {2}, dt::cuda_device{0});
    log = fake::calls();
    CHECK(fake::index_of(log, "cudaMemcpyAsync") != fake::npos);
    CHECK(fake::index_of(log, "cudaStreamSynchronize") == fake::npos);  // staged by the runtime
    CHECK(from_pageable.cpu().to_vector() == pageable);
}

TEST_CASE("pin_memory and to(dev, non_blocking): the copy from pinned memory is queued, not waited for; freeing waits") {
    const auto host = dt::from_values<float>({1, 2, 3, 4, 5, 6}, {2, 3});
    fake::reset();
    auto pinned = host.t().pin_memory();  // strided: gathered into the page-locked copy
    auto log = fake::calls();
    INFO(text(log));
    const std::size_t allocated = fake::index_of(log, "cudaHostAlloc");
    REQUIRE(allocated != fake::npos);
    CHECK(pinned.is_pinned());
    CHECK_FALSE(host.is_pinned());
    CHECK(pinned.is_contiguous());
    CHECK(pinned.to_vector() == std::vector<float>{1, 4, 2, 5, 3, 6});
    CHECK(pinned.origin().op == std::string("pin_memory"));

    fake::reset();
    const auto queued = pinned.to(dt::cuda_device{1}, true);
    log = fake::calls();
    const std::size_t copied = fake::index_of(log, [&](const fake::call& c) {
        return c.name == "cudaMemcpyAsync" && c.src == pinned.data();
    });
    REQUIRE(copied != fake::npos);
    const void* const copy_stream = log[copied].stream;  // (log is read again below)
    CHECK(fake::device_of(copy_stream) == 1);
    CHECK(fake::index_of(log, "cudaStreamSynchronize", copied) == fake::npos);  // returned at once
    fake::reset();
    const auto waited = pinned.cuda(1);  // blocking (the default): complete on return
    CHECK(fake::index_of(fake::calls(), "cudaStreamSynchronize") != fake::npos);

    // Freeing the pinned memory first waits for the queued copy's stream.
    const void* address = pinned.data();
    fake::reset();
    pinned = {};
    log = fake::calls();
    const std::size_t freed = fake::index_of(log, [&](const fake::call& c) {
        return c.name == "cudaFreeHost" && c.dst == address;
    });
    REQUIRE(freed != fake::npos);
    const std::size_t synced = fake::index_of(log, [&](const fake::call& c) {
        return c.name == "cudaStreamSynchronize" && c.stream == copy_stream;
    });
    CHECK(synced < freed);
    CHECK(queued.cpu().to_vector() == std::vector<float>{1, 4, 2, 5, 3, 6});
    CHECK(waited.cpu().to_vector() == std::vector<float>{1, 4, 2, 5, 3, 6});
    CHECK(dt::zeros<float>({0}).pin_memory().defined());
    CHECK_ERROR(dt::device_mismatch, (void)dt::tensor<float>(waited).pin_memory(), "pin_memory", "cuda:1");
    CHECK(fake::last_error() == cudaSuccess);
}

TEST_CASE("every allocation and free goes through devtensor's own pool, never the device's default pool") {
    fake::reset();
    const auto before = fake::live_allocations();
    {
        const auto a = on(dt::cuda_device{0}, {1, 2});
        const auto b = on(dt::cuda_device{1}, {3});
        CHECK(dt::memory_reserved(dt::cuda_device{0}) > 0);
        dt::empty_cache(dt::cuda_device{1});
    }
    const auto log = fake::calls();
    INFO(text(log));
    CHECK(fake::index_of(log, "cudaMallocAsync") == fake::npos);
    CHECK(fake::index_of(log, "cudaDeviceGetDefaultMemPool") == fake::npos);
    CHECK(fake::index_of(log, "cudaDeviceSetMemPool") == fake::npos);
    cudaMemPool_t default_pool[2]{};
    for (int d = 0; d < 2; ++d) REQUIRE(cudaDeviceGetDefaultMemPool(&default_pool[d], d) == cudaSuccess);
    std::size_t allocations = 0;
    for (const auto& c : log) {
        const bool pool_call = c.name == "cudaMallocFromPoolAsync" || c.name == "cudaFreeAsync" ||
                               c.name == "cudaMemPoolSetAttribute" || c.name == "cudaMemPoolGetAttribute" ||
                               c.name == "cudaMemPoolTrimTo";
        if (!pool_call) continue;
        INFO(c);
        CHECK(c.pool != nullptr);  // a free names the pool the memory came from: never plain cudaMalloc
        CHECK(c.pool != default_pool[0]);
        CHECK(c.pool != default_pool[1]);
        if (c.name == "cudaMallocFromPoolAsync") {
            ++allocations;
            CHECK(fake::device_of(c.pool) == c.device);
        }
    }
    CHECK(allocations == 2);
    CHECK(fake::live_allocations() == before);
    CHECK(fake::last_error() == cudaSuccess);
}

TEST_CASE("devtensor's pools are created by devtensor, keep freed memory, and are the ones it allocates from") {
    // A fresh device the other cases have not touched, so its pool is created in this log.
    REQUIRE(dt::cuda_device_count() >= 3);
    fake::reset();
    { const auto t = on(dt::cuda_device{2}, {1}); }
    const auto log = fake::calls();
    INFO(text(log));
    const std::size_t created = fake::index_of(log, "cudaMemPoolCreate");
    REQUIRE(created != fake::npos);
    CHECK(log[created].ordinal == 2);
    const void* pool = log[created].pool;
    const std::size_t threshold = fake::index_of(log, [&](const fake::call& c) {
        return c.name == "cudaMemPoolSetAttribute" && c.pool == pool;
    });
    CHECK(threshold != fake::npos);
    const std::size_t allocated = fake::index_of(log, "cudaMallocFromPoolAsync");
    REQUIRE(allocated != fake::npos);
    CHECK(log[allocated].pool == pool);
    const std::size_t freed = fake::index_of(log, "cudaFreeAsync");
    REQUIRE(freed != fake::npos);
    CHECK(log[freed].pool == pool);
}

TEST_CASE("an ignored CUDA error is cleared, never thrown by the next call as its own") {
    SUBCASE("cudaFreeAsync in a tensor's destructor") {
        auto t = on(dt::cuda_device{0}, {1, 2});
        fake::reset();
        fake::fail_next("cudaFreeAsync", cudaErrorInvalidValue);
        t = {};  // the destructor's free fails; noexcept, so the error is dropped ...
        const auto log = fake::calls();
        INFO(text(log));
        const std::size_t failed = fake::index_of(log, "cudaFreeAsync");
        REQUIRE(failed != fake::npos);
        CHECK(log[failed].error == cudaErrorInvalidValue);
        CHECK(fake::index_of(log, "cudaGetLastError", failed) != fake::npos);  // ... and cleared
        CHECK(fake::last_error() == cudaSuccess);
        CHECK(on(dt::cuda_device{0}, {3}).cpu().to_vector() == std::vector<float>{3});  // the next call is fine
    }
    SUBCASE("cudaSetDevice in device_guard's destructor") {
        REQUIRE(cudaSetDevice(0) == cudaSuccess);
        fake::reset();
        // Current device 0, a copy to cuda:0: the guard's only cudaSetDevice is its restoring one.
        fake::fail_next("cudaSetDevice", cudaErrorInvalidDevice);
        const auto t = on(dt::cuda_device{0}, {1});
        const auto log = fake::calls();
        INFO(text(log));
        const std::size_t failed = fake::index_of(log, "cudaSetDevice");
        REQUIRE(failed != fake::npos);
        CHECK(log[failed].error == cudaErrorInvalidDevice);
        CHECK(fake::last_error() == cudaSuccess);
        CHECK(t.cpu().to_vector() == std::vector<float>{1});
    }
    SUBCASE("cudaMemGetInfo while reporting out of memory") {
        fake::reset();
        fake::fail_next("cudaMemGetInfo", cudaErrorInvalidValue);
        CHECK_ERROR(dt::out_of_memory, dt::empty<float>({std::int64_t{1} << 40}, dt::cuda_device{0}), "cuda:0",
                    "free 0 B");
        INFO(text(fake::calls()));
        CHECK(fake::index_of(fake::calls(), "cudaMemGetInfo") != fake::npos);
        CHECK(fake::last_error() == cudaSuccess);
        CHECK(on(dt::cuda_device{0}, {4}).cpu().to_vector() == std::vector<float>{4});
    }
}

TEST_CASE("synchronize and current_stream reach the stream devtensor orders its work on") {
    const auto t = on(dt::cuda_device{1}, {1, 2});
    fake::reset();
    dt::synchronize(dt::cuda_device{1});
    dt::synchronize(dt::cpu_device{});  // nothing to wait for
    const auto log = fake::calls();
    INFO(text(log));
    const std::size_t synced = fake::index_of(log, "cudaStreamSynchronize");
    REQUIRE(synced != fake::npos);
    CHECK(log[synced].stream == dt::current_stream(dt::cuda_device{1}));
    CHECK(dt::current_stream(dt::device("cuda:1")) == dt::current_stream(dt::cuda_device{1}));
    CHECK(dt::current_stream(dt::cuda_device{0}) != dt::current_stream(dt::cuda_device{1}));
    CHECK(fake::device_of(dt::current_stream(dt::cuda_device{0})) == 0);
    CHECK_ERROR(dt::device_mismatch, dt::current_stream(dt::device("cpu")), "current_stream", "cpu");
    CHECK_ERROR(dt::device_unavailable, dt::synchronize(dt::cuda_device{dt::cuda_device_count()}), "synchronize");
    CHECK(t.cpu().to_vector() == std::vector<float>{1, 2});
}

#if DEVTENSOR_HAS_CUDA
TEST_CASE("each kernel launch is checked; DEVTENSOR_LAUNCH_BLOCKING=1 waits for it and names a faulting kernel") {
    const bool blocking = dt::detail::cudart::launch_blocking();
    const char* env = std::getenv("DEVTENSOR_LAUNCH_BLOCKING");
    CHECK(blocking == (env != nullptr && std::string(env) == "1"));
    fake::reset();
    const auto t = dt::ones<float>({1000}, dt::cuda_device{0});
    auto log = fake::calls();
    INFO(text(log));
    const std::size_t launched = fake::index_of(log, "cudaLaunchKernel");
    REQUIRE(launched != fake::npos);
    CHECK(fake::index_of(log, "cudaGetLastError", launched) == launched + 1);
    const std::size_t synced = fake::index_of(log, "cudaStreamSynchronize", launched);
    CHECK((synced == launched + 2) == blocking);
    if (synced != fake::npos) CHECK(log[synced].stream == log[launched].stream);
    if (blocking) {  // a fault the kernel causes is reported by its launch, naming it
        fake::fail_next("cudaStreamSynchronize", cudaErrorIllegalAddress);
        CHECK_ERROR(dt::cuda_error, dt::ones<float>({8}, dt::cuda_device{0}), "devtensor kernel 'fill'", "cuda:0",
                    "cudaErrorIllegalAddress");
        CHECK(fake::last_error() == cudaSuccess);
    }
    // A launch that fails is reported by the launch, naming the kernel, whatever the switch.
    fake::fail_next("cudaLaunchKernel", cudaErrorInvalidConfiguration);
    CHECK_ERROR(dt::cuda_error, dt::rand<float>({8}, dt::cuda_device{0}), "devtensor kernel 'uniform'",
                "cudaErrorInvalidConfiguration");
    CHECK(fake::last_error() == cudaSuccess);
}
#endif

TEST_CASE("an out-of-range index a kernel recorded is thrown by the next synchronisation, once") {
    fake::reset();
    dt::detail::index_fault* record = dt::detail::cudart::device_index_fault(0);
    REQUIRE(record != nullptr);
    CHECK(dt::detail::cudart::device_index_fault(0) == record);  // one per device, made once
    CHECK(fake::is_pinned(record));  // page-locked (and mapped): the host reads it without a copy
    CHECK_NOTHROW(dt::synchronize(dt::cuda_device{0}));
    dt::detail::raise_index_fault(record, "nll_loss (class index)", 12, 10, 1);  // what the kernel does
    CHECK_ERROR(dt::index_error, dt::synchronize(dt::cuda_device{0}), "devtensor::nll_loss (class index)",
                "index 12 is out of bounds for dimension 1 with size 10", "cuda:0", "next synchronisation");
    CHECK_NOTHROW(dt::synchronize(dt::cuda_device{0}));  // reported once
    dt::detail::raise_index_fault(record, "gather", -1, 5, 0);
    CHECK_ERROR(dt::index_error, (void)on(dt::cuda_device{0}, {1, 2}).cpu(), "devtensor::gather", "index -1");
}
