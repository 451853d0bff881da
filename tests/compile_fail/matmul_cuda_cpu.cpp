// expect: devtensor::matmul: operands live on different devices (cuda vs cpu); move one with .to()
#include <devtensor/devtensor.hpp>
namespace dt = devtensor;
void f(const dt::tensor<float, dt::cuda_device>& a, const dt::tensor<float, dt::cpu_device>& b) {
#ifdef DEVTENSOR_TWIN
    (void)dt::matmul(a.cpu(), b);
#else
    (void)dt::matmul(a, b);
#endif
}
