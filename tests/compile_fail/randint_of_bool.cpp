// expect: devtensor::randint: bool is not served: it needs an integral or floating-point element type other than bool
// nvcc: no kernels
#include <devtensor/devtensor.hpp>
namespace dt = devtensor;
void f() {
#ifdef DEVTENSOR_TWIN
    (void)dt::randint<std::uint8_t>(0, 2, {4});
#else
    (void)dt::randint<bool>(0, 2, {4});
#endif
}
