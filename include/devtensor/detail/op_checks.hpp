// The device and element-type rules every op with tensor operands follows
// (DESIGN §6): compile-time checks where the types know, run-time otherwise.
#pragma once

#include <devtensor/device.hpp>
#include <devtensor/error.hpp>

#include <string>
#include <type_traits>

/// Two static operands of different device kinds do not compile.
#define DEVTENSOR_STATIC_CHECK_SAME_DEVICE(op, DA, DB)                                             \
    static_assert(!(::devtensor::HostAccessible<DA> && ::devtensor::StaticCudaDevice<DB>),         \
                  "devtensor::" op ": operands live on different devices (cpu vs cuda); move one " \
                  "with .to()");                                                                   \
    static_assert(!(::devtensor::StaticCudaDevice<DA> && ::devtensor::HostAccessible<DB>),         \
                  "devtensor::" op ": operands live on different devices (cuda vs cpu); move one " \
                  "with .to()")

/// Element types must match exactly: conversions are explicit.
#define DEVTENSOR_STATIC_CHECK_SAME_ELEMENT(op, TA, TB)                                            \
    static_assert(!(std::is_same_v<TA, float> && std::is_same_v<TB, double>),                      \
                  "devtensor::" op ": element types differ (float vs double); convert one "        \
                  "explicitly");                                                                   \
    static_assert(!(std::is_same_v<TA, double> && std::is_same_v<TB, float>),                      \
                  "devtensor::" op ": element types differ (double vs float); convert one "        \
                  "explicitly");                                                                   \
    static_assert(std::is_same_v<TA, TB>,                                                          \
                  "devtensor::" op ": element types differ; convert one explicitly")

/// A kernel op on a static CUDA operand needs an nvcc-compiled translation unit.
#define DEVTENSOR_STATIC_CHECK_KERNELS(op, D)                                                      \
    static_assert(DEVTENSOR_HAS_CUDA || !::devtensor::StaticCudaDevice<D>,                         \
                  "devtensor::" op ": CUDA kernels are not compiled into this translation unit; "  \
                  "compile this file with nvcc")

namespace devtensor::detail {

/// PyTorch's wording for operands on different devices.
inline void check_same_device(const char* op, const device& a, const device& b) {
    if (a != b)
        throw device_mismatch("expected all tensors to be on the same device, but found at least "
                              "two devices, " + to_string(a) + " and " + to_string(b) + " (in " +
                              op + ")");
}

/// A run-time tensor on a GPU reached an op in a translation unit without kernels.
[[noreturn]] inline void throw_no_kernels(const char* op, const device& d) {
    throw device_error(std::string("devtensor::") + op + ": the tensor is on " + to_string(d) +
                       ", but this translation unit was not compiled by nvcc and has no CUDA "
                       "kernels; compile this file with nvcc");
}

/// The static type of an op's result: the static operand's device type when there is one.
template <class DA, class DB>
using common_device_t = std::conditional_t<StaticDevice<DA>, DA, DB>;

}  // namespace devtensor::detail
