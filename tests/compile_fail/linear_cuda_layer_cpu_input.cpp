// expect: devtensor::linear: operands live on different devices (cpu vs cuda); move one with .to()
#include <devtensor/devtensor.hpp>
namespace dt = devtensor;
void f(const dt::nn::linear<float, dt::cuda_device>& layer, const dt::nn::linear<float, dt::cpu_device>& cpu_layer) {
    const auto x = dt::ones<float>({2, 3});
#ifdef DEVTENSOR_TWIN
    (void)cpu_layer(x);
    (void)layer.to(dt::cpu_device{})(x);
#else
    (void)cpu_layer;
    (void)layer(x);
#endif
}
