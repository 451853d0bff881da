// device_query.hpp: counting devices, try_gpu, try_all_gpus, properties.
#include "test_support.hpp"

TEST_CASE("device count and the reason agree") {
    const int n = dt::cuda_device_count();
    CHECK(n >= 0);
    CHECK(dt::cuda_available() == (n > 0));
    CHECK(dt::cuda_unavailable_reason().empty() == (n > 0));
#if !DEVTENSOR_CUDA_RUNTIME
    CHECK(n == 0);
    CHECK(dt::cuda_unavailable_reason() == "built without the CUDA runtime (link devtensor::cuda)");
#endif
}

TEST_CASE("a machine without an NVIDIA driver is said to have none, not an old one") {
    if (dt::cuda_driver_version() != 0 || dt::cuda_runtime_version() == 0) return;  // a driver, or no runtime
    const std::string reason = dt::cuda_unavailable_reason();
    CHECK(test::contains(reason, "no NVIDIA driver is installed"));
    CHECK(!test::contains(reason, "insufficient"));
    CHECK_ERROR(dt::device_unavailable, dt::require_available(dt::device("cuda:0")), "no NVIDIA driver");
}

TEST_CASE("try_gpu falls back to the cpu, try_all_gpus to {cpu}") {
    const int n = dt::cuda_device_count();
    CHECK(dt::try_gpu(n) == dt::device("cpu"));  // one past the last GPU
    CHECK(dt::try_gpu(10 + n) == dt::device("cpu"));
    CHECK(dt::try_gpu(-1) == dt::device("cpu"));
    const auto all = dt::try_all_gpus();
    if (n == 0) {
        CHECK(dt::try_gpu() == dt::device("cpu"));
        REQUIRE(all.size() == 1);
        CHECK(all[0] == dt::device("cpu"));
    } else {
        CHECK(dt::try_gpu() == dt::device("cuda:0"));
        CHECK(all.size() == static_cast<std::size_t>(n));
        for (int i = 0; i < n; ++i) CHECK(all[static_cast<std::size_t>(i)] == dt::device(dt::device_kind::cuda, i));
    }
}

TEST_CASE("cpu properties name the processor, its cores and its memory") {
    const auto p = dt::properties(dt::cpu_device{});
    CHECK(!p.name.empty());
    CHECK(p.multiprocessors >= 1);
    CHECK(p.total_memory > (std::size_t{64} << 20));
    CHECK(p.free_memory <= p.total_memory);
    CHECK(p.dev.is_cpu());
}

TEST_CASE("an absent GPU is device_unavailable, naming it and the count") {
    const int n = dt::cuda_device_count();
    const dt::device absent(dt::device_kind::cuda, n + 6);
    CHECK_ERROR(dt::device_unavailable, dt::properties(absent), dt::to_string(absent).c_str(),
                "is not available", (std::to_string(n) + " CUDA device").c_str());
    CHECK_ERROR(dt::device_unavailable, dt::require_available(absent), "not available");
    CHECK_THROWS_AS(dt::require_available(absent), dt::device_error);  // the hierarchy of §9
}

DEVTENSOR_GPU_TEST_CASE("gpu properties look like nvidia-smi's") {
    const auto p = dt::properties(dt::cuda_device{0});
    CHECK(!p.name.empty());
    CHECK(p.compute_major >= 7);
    CHECK(p.multiprocessors > 0);
    CHECK(p.total_memory > p.free_memory);
    CHECK(p.driver_version >= p.runtime_version / 1000 * 1000);
}
