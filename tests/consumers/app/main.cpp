// What every consumer project builds: a few lines of devtensor, checked.
#include <devtensor/devtensor.hpp>

#include <iostream>
#include <vector>

namespace dt = devtensor;

int main() {
    const auto x = dt::ones<float>({2, 3});
    const auto y = x + dt::full<float>({3}, 2.0f);  // broadcasting
    std::cout << "devtensor " << DEVTENSOR_VERSION_STRING << " from a consumer project\n" << y << "\n";
    return y.to_vector() == std::vector<float>(6, 3.0f) ? 0 : 1;
}
