// error.hpp: the hierarchy of DESIGN §9 and cuda_error's fields.
#include "test_support.hpp"

#include <stdexcept>
#include <type_traits>

static_assert(std::is_base_of_v<std::runtime_error, dt::error>);
static_assert(std::is_base_of_v<dt::error, dt::device_error>);
static_assert(std::is_base_of_v<dt::device_error, dt::device_unavailable>);
static_assert(std::is_base_of_v<dt::device_error, dt::device_mismatch>);
static_assert(std::is_base_of_v<dt::device_error, dt::cuda_error>);
static_assert(std::is_base_of_v<dt::error, dt::out_of_memory>);
static_assert(std::is_base_of_v<dt::error, dt::shape_error>);
static_assert(!std::is_base_of_v<dt::device_error, dt::out_of_memory>);
static_assert(std::is_base_of_v<std::invalid_argument, dt::invalid_device>);
static_assert(!std::is_base_of_v<dt::error, dt::invalid_device>);

TEST_CASE("cuda_error carries the code, its name and message, and the failing call's place") {
    const dt::cuda_error e(2, "cudaErrorMemoryAllocation", "out of memory", "cudaMalloc(&p, n)", "file.cpp", 42);
    CHECK(e.code() == 2);
    CHECK(e.name() == "cudaErrorMemoryAllocation");
    CHECK(e.message() == "out of memory");
    CHECK(e.line() == 42);
    CHECK(std::string(e.file()) == "file.cpp");
    CHECK(std::string(e.what()) == "cudaMalloc(&p, n) failed: cudaErrorMemoryAllocation (out of memory) at file.cpp:42");
}

#if DEVTENSOR_CUDA_RUNTIME
TEST_CASE("DEVTENSOR_CUDA_CHECK throws cuda_error naming the call and clears the sticky error") {
    // an invalid device ordinal fails the same way with or without a GPU
    CHECK_ERROR(dt::cuda_error, [] { DEVTENSOR_CUDA_CHECK(cudaSetDevice(-1)); }(), "cudaSetDevice(-1)", "test_errors.cpp");
    if (dt::cuda_available()) CHECK(cudaGetLastError() == cudaSuccess);  // without a driver every call fails
}
#endif
