// expect: devtensor::add: operands live on different devices (cpu vs cuda); move one with .to()
#include <devtensor/devtensor.hpp>
namespace dt = devtensor;
void f(const dt::tensor<float, dt::cpu_device>& a, const dt::tensor<float, dt::cuda_device>& b) {
#ifdef DEVTENSOR_TWIN
    (void)dt::add(a, a);
    (void)b.cpu();
#else
    (void)dt::add(a, b);
#endif
}
