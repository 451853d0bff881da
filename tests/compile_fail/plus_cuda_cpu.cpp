// expect: devtensor::operator+: operands live on different devices (cuda vs cpu); move one with .to()
#include <devtensor/devtensor.hpp>
namespace dt = devtensor;
void f(const dt::tensor<float, dt::cuda_device>& x, const dt::tensor<float, dt::cpu_device>& y) {
#ifdef DEVTENSOR_TWIN
    (void)(x.cpu() + y);
#else
    (void)(x + y);  // PyTorch finds this at run time; here it does not compile
#endif
}
