// expect: devtensor::operator-: not for bool tensors (PyTorch refuses them too); use logical operations, or convert first
// nvcc: no kernels
#include <devtensor/devtensor.hpp>
namespace dt = devtensor;
void f() {
#ifdef DEVTENSOR_TWIN
    const auto a = dt::ones<std::int8_t>({2});
#else
    const auto a = dt::ones<bool>({2});
#endif
    (void)(a - a);
}
