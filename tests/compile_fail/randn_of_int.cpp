// expect: devtensor::randn: int32 is not served: it needs a floating-point element type (float or double)
// nvcc: no kernels
#include <devtensor/devtensor.hpp>
namespace dt = devtensor;
void f() {
#ifdef DEVTENSOR_TWIN
    (void)dt::randn<float>({4});
#else
    (void)dt::randn<int>({4});
#endif
}
