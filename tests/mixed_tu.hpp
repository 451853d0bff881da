// Declarations shared by the two halves of the mixed-translation-unit test: in the
// CUDA build test_mixed_tu.cpp is compiled by nvcc and test_mixed_tu_host.cpp by
// g++, and these types must be one type in both (DESIGN §1).
#pragma once

#include <devtensor/devtensor.hpp>

#include <cstdint>
#include <vector>

namespace mixed_tu {
namespace dt = devtensor;

using net_type = dt::nn::sequential<dt::nn::linear<float>, dt::nn::linear<float>>;

/// A user's struct holding devtensor members, included by both kinds of file.
struct model {
    dt::nn::linear<float> layer;
    dt::generator gen;
    dt::tensor<float> scale;
};

std::vector<float> ones_from_host_tu(std::int64_t n);
void add_on_gpu_from_host_tu();
bool compiled_by_nvcc();

// Defined in the g++ file, called from the other one.
dt::tensor<float> forward_in_host_tu(const dt::nn::linear<float>& layer, const dt::tensor<float>& x);
dt::tensor<float> sequential_in_host_tu(const net_type& net, const dt::tensor<float>& x);
dt::tensor<float> rand_in_host_tu(dt::generator& gen, std::int64_t n);
dt::tensor<float> model_in_host_tu(model& m, const dt::tensor<float>& x);
std::uint32_t philox_in_host_tu(const dt::philox4x32_10& philox);
}  // namespace mixed_tu
