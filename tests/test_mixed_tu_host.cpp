// The g++ half of the mixed-translation-unit test: in the CUDA build this file
// is compiled by the host compiler into the same program as nvcc-compiled tests.
#include "mixed_tu.hpp"

namespace mixed_tu {
std::vector<float> ones_from_host_tu(std::int64_t n) { return dt::ones<float>({n}).to_vector(); }

/// A kernel op on a run-time GPU tensor here has no kernel to run.
void add_on_gpu_from_host_tu() {
    const dt::tensor<float> x = dt::ones<float>({2}).cuda(0);  // copies need only the runtime
    (void)(x + x);
}

bool compiled_by_nvcc() { return DEVTENSOR_HAS_CUDA; }

dt::tensor<float> forward_in_host_tu(const dt::nn::linear<float>& layer, const dt::tensor<float>& x) {
    return layer(x);
}
dt::tensor<float> sequential_in_host_tu(const net_type& net, const dt::tensor<float>& x) { return net(x); }
dt::tensor<float> rand_in_host_tu(dt::generator& gen, std::int64_t n) {
    return dt::rand<float>({n}, dt::device(), gen);
}
dt::tensor<float> model_in_host_tu(model& m, const dt::tensor<float>& x) {
    return m.layer(x) + m.scale + dt::rand<float>({1}, dt::device(), m.gen);
}
std::uint32_t philox_in_host_tu(const dt::philox4x32_10& philox) { return philox({1, 2, 3, 4}, {5, 6})[0]; }
}  // namespace mixed_tu
