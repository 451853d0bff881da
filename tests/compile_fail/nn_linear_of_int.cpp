// expect: devtensor::nn::linear: int32 is not served: it needs a floating-point element type (float or double)
#include <devtensor/devtensor.hpp>
namespace dt = devtensor;
void f() {
#ifdef DEVTENSOR_TWIN
    dt::nn::linear<float> layer(3, 1);
#else
    dt::nn::linear<int> layer(3, 1);
#endif
    (void)layer;
}
