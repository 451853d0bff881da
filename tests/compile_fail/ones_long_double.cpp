// expect: devtensor::tensor: long double is not an element type (device code has no 16-byte long double); use double
#include <devtensor/devtensor.hpp>
namespace dt = devtensor;
void f() {
#ifdef DEVTENSOR_TWIN
    (void)dt::ones<double>({4});
#else
    (void)dt::ones<long double>({4});
#endif
}
