// expect: devtensor::tensor: element access needs host memory; copy it with .cpu() first
#include <devtensor/devtensor.hpp>
namespace dt = devtensor;
float f(const dt::tensor<float, dt::cuda_device>& t) {
#ifdef DEVTENSOR_TWIN
    return t.cpu()(0, 1);
#else
    return t(0, 1);
#endif
}
