// The g++ half of the mixed-translation-unit test: in the CUDA build this file
// is compiled by the host compiler into the same program as nvcc-compiled tests.
#include <devtensor/devtensor.hpp>

#include <vector>

namespace mixed_tu {
std::vector<float> ones_from_host_tu(std::int64_t n) { return devtensor::ones<float>({n}).to_vector(); }

/// A kernel op on a run-time GPU tensor here has no kernel to run.
void add_on_gpu_from_host_tu() {
    const devtensor::tensor<float> x = devtensor::ones<float>({2}).cuda(0);  // copies need only the runtime
    (void)(x + x);
}

bool compiled_by_nvcc() { return DEVTENSOR_HAS_CUDA; }
}  // namespace mixed_tu
