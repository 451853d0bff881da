// expect: devtensor::tensor: the element type must be bool, a fixed-width integer, float or double
#include <devtensor/devtensor.hpp>
#include <string>
namespace dt = devtensor;
#ifdef DEVTENSOR_TWIN
dt::tensor<int> t;
#else
dt::tensor<std::string> t;
#endif
