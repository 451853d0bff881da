// expect: devtensor::matmul: bool is not served: matrix products take float, double or 32- and 64-bit integers
// nvcc: the same error (kernels are instantiated: autograd records floating-point CPU ops with run-time-device gradients)
#include <devtensor/devtensor.hpp>
namespace dt = devtensor;
void f(const dt::tensor<bool, dt::cpu_device>& a, const dt::tensor<std::int32_t, dt::cpu_device>& b,
       const dt::tensor<std::int8_t, dt::cpu_device>& c) {
#ifdef DEVTENSOR_TWIN
    (void)dt::matmul(b, b);
    (void)(a + a);  // every element type adds
    (void)(c + c);
#else
    (void)dt::matmul(a, a);
    (void)c;
    (void)b;
#endif
}
