// expect: devtensor::operator+: a floating-point scalar with an integral tensor; convert the tensor first (t.to<double>())
// nvcc: no kernels
#include <devtensor/devtensor.hpp>
namespace dt = devtensor;
void f() {
    const auto a = dt::ones<std::int64_t>({2});
#ifdef DEVTENSOR_TWIN
    (void)(a + 2);
#else
    (void)(a + 2.5);
#endif
}
