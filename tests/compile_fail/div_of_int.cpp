// expect: devtensor::div: int32 is not served: it needs a floating-point element type (float or double)
// nvcc: the same error (kernels are instantiated: autograd records floating-point CPU ops with run-time-device gradients)
#include <devtensor/devtensor.hpp>
namespace dt = devtensor;
void f() {
#ifdef DEVTENSOR_TWIN
    const auto a = dt::ones<float>({2});
#else
    const auto a = dt::ones<std::int32_t>({2});
#endif
    (void)dt::div(a, a);
}
