// expect: devtensor::add: CUDA kernels are not compiled into this translation unit; compile this file with nvcc
#include <devtensor/devtensor.hpp>
namespace dt = devtensor;
void f(const dt::tensor<float, dt::cuda_device>& a, const dt::tensor<float, dt::cuda_device>& b) {
#ifdef DEVTENSOR_TWIN
    (void)a.cpu();  // copies need only the runtime: fine in a g++ file
    (void)b.to(dt::cuda_device{1});
#else
    (void)dt::add(a, b);
#endif
}
