// A consumer of the Conan package: a few lines of devtensor, checked.
#include <devtensor/devtensor.hpp>

#include <iostream>
#include <vector>

namespace dt = devtensor;

int main() {
    const auto y = dt::ones<float>({2, 3}) + dt::full<float>({3}, 2.0f);
    std::cout << "devtensor " << DEVTENSOR_VERSION_STRING << " from Conan\n" << y << "\n";
    return y.to_vector() == std::vector<float>(6, 3.0f) ? 0 : 1;
}
