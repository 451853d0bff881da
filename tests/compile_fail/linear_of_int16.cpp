// expect: devtensor::linear: int16 is not served: matrix products take float, double or 32- and 64-bit integers
// nvcc: a run-time device: refused by the op, before any kernel is instantiated
#include <devtensor/devtensor.hpp>
namespace dt = devtensor;
void f(const dt::tensor<std::int16_t>& x, const dt::tensor<std::int64_t>& y) {
#ifdef DEVTENSOR_TWIN
    (void)dt::linear(y, y);
    (void)x;
#else
    (void)dt::linear(x, x);
    (void)y;
#endif
}
