// The nvcc side of a CUDA consumer: kernel ops on the GPU when there is one.
#include <devtensor/devtensor.hpp>

#include <iostream>
#include <vector>

namespace dt = devtensor;

std::vector<float> sum_on_cpu();  // host.cpp, compiled by g++

int main() {
    if (!dt::cuda_available()) {
        std::cout << "no GPU (" << dt::cuda_unavailable_reason() << "): built, not run\n";
        return 0;
    }
    const auto x = dt::ones<float>({2, 3}, dt::cuda_device{0});  // a kernel: this file is nvcc's
    const auto y = x + dt::full<float>({3}, 2.0f, dt::cuda_device{0});
    std::cout << y << "\n";
    return y.to_vector() == sum_on_cpu() ? 0 : 1;
}
