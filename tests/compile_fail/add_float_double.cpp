// expect: devtensor::add: element types differ (float vs double); convert one explicitly
#include <devtensor/devtensor.hpp>
namespace dt = devtensor;
void f(const dt::tensor<float, dt::cpu_device>& a, const dt::tensor<double, dt::cpu_device>& b) {
#ifdef DEVTENSOR_TWIN
    (void)dt::add(a, a);
    (void)dt::add(b, b);
#else
    (void)dt::add(a, b);
#endif
}
