// expect: ignoring return value of
// A discarded `net.to(try_gpu());` would be a silent no-op: [[nodiscard]] makes it a warning.
#pragma GCC diagnostic error "-Wunused-result"
#include <devtensor/devtensor.hpp>
namespace dt = devtensor;
void f(const dt::nn::linear<float>& layer, const dt::tensor<float>& t) {
#ifdef DEVTENSOR_TWIN
    auto moved = layer.to(dt::try_gpu());
    auto copy = t.cpu();
    (void)moved;
    (void)copy;
#else
    layer.to(dt::try_gpu());
    (void)t;
#endif
}
