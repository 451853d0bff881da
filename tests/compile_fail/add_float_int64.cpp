// expect: devtensor::operator+: element types differ (float vs int64); convert one explicitly
#include <devtensor/devtensor.hpp>
namespace dt = devtensor;
void f(const dt::tensor<float>& a, const dt::tensor<std::int64_t>& b) {
#ifdef DEVTENSOR_TWIN
    (void)(a + a);
    (void)(b + b);
#else
    (void)(a + b);
#endif
}
