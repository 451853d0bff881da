// One program, nvcc and g++ translation units: no ODR clash (each kind's ops
// live in their own inline namespace), the same results, and a clear
// device_error where a g++ file meets a GPU tensor.
#include "test_support.hpp"

#include <vector>

namespace mixed_tu {
std::vector<float> ones_from_host_tu(std::int64_t n);
void add_on_gpu_from_host_tu();
bool compiled_by_nvcc();
}  // namespace mixed_tu

TEST_CASE("host and nvcc translation units link into one program and agree") {
    CHECK(!mixed_tu::compiled_by_nvcc());
    CHECK(mixed_tu::ones_from_host_tu(5) == dt::ones<float>({5}).to_vector());
}

DEVTENSOR_GPU_TEST_CASE("a g++ translation unit refuses GPU work with device_error, copies still work") {
    CHECK_ERROR(dt::device_error, mixed_tu::add_on_gpu_from_host_tu(), "compile this file with nvcc", "add",
                "cuda:0");
}
