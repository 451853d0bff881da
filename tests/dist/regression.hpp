// The two-rank data-parallel regression of tests/dist: the same net on every rank
// (6 -> 16 -> tanh -> 1, float64, seed 5) and the whole batch (24 rows, seed 11; 2 and
// 4 ranks take 12 and 6 rows each). test_mpi.cpp and the libtorch reference
// (test_gloo.cpp) train it.
#pragma once

#include <devtensor/devtensor.hpp>

#include <utility>

namespace dist_tests {

inline auto regression_net() {
    devtensor::generator gen(5);
    return devtensor::nn::sequential(devtensor::nn::linear<double>(6, 16, true, gen), devtensor::nn::tanh{},
                                     devtensor::nn::linear<double>(16, 1, true, gen));
}

inline std::pair<devtensor::tensor<double, devtensor::cpu_device>, devtensor::tensor<double, devtensor::cpu_device>>
regression_data() {
    devtensor::generator gen(11);
    auto X = devtensor::randn<double>({24, 6}, devtensor::cpu_device{}, gen);
    auto y = devtensor::randn<double>({24, 1}, devtensor::cpu_device{}, gen);
    return {X, y};
}

}  // namespace dist_tests
