// expect: devtensor::add: CUDA kernels are not compiled into this translation unit; compile this file with nvcc
#include <devtensor/devtensor.hpp>
namespace dt = devtensor;
// The static CUDA operand is the second one: every operand is checked, not just the first.
void f(const dt::tensor<float>& a, const dt::tensor<float, dt::cuda_device>& b) {
#ifdef DEVTENSOR_TWIN
    (void)dt::add(a, a);  // run-time operands: checked at run time
    (void)b.cpu();
#else
    (void)dt::add(a, b);
#endif
}
