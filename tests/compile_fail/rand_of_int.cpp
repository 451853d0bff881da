// expect: devtensor::rand: int32 is not served: it needs a floating-point element type (float or double)
#include <devtensor/devtensor.hpp>
namespace dt = devtensor;
void f() {
#ifdef DEVTENSOR_TWIN
    (void)dt::rand<float>({4});
#else
    (void)dt::rand<int>({4});
#endif
}
