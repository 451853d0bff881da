// The g++ side of a CUDA consumer: the CUDA runtime is there (copies, device
// query), kernel ops run on the CPU.
#include <devtensor/devtensor.hpp>

#include <vector>

namespace dt = devtensor;

std::vector<float> sum_on_cpu() {
    const auto on_gpu = dt::ones<float>({2, 3}).cuda(0);  // a copy needs only the runtime
    return (on_gpu.cpu() + dt::full<float>({3}, 2.0f)).to_vector();
}
