// expect: devtensor::tensor: character types (char, wchar_t, char8_t, char16_t, char32_t) are not element types
#include <devtensor/devtensor.hpp>
namespace dt = devtensor;
#ifdef DEVTENSOR_TWIN
dt::tensor<std::int8_t> t;
#else
dt::tensor<char> t;
#endif
