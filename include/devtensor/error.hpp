// The exception hierarchy (DESIGN §9) and DEVTENSOR_CUDA_CHECK, through which
// every CUDA runtime call goes.
#pragma once

#include <devtensor/config.hpp>

#include <stdexcept>
#include <string>

#if DEVTENSOR_CUDA_RUNTIME
#  include <cuda_runtime_api.h>
#endif

namespace devtensor {

/// Base of every error devtensor throws, except invalid_device.
class error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Something is wrong with a device: absent, mismatched, or failing.
class device_error : public error {
public:
    using error::error;
};

/// A device that does not exist on this machine, or a CUDA device without the CUDA runtime.
class device_unavailable : public device_error {
public:
    using device_error::device_error;
};

/// Tensors of one operation live on different devices, or data is not where the access needs it.
class device_mismatch : public device_error {
public:
    using device_error::device_error;
};

/// A CUDA runtime call failed: its code, the code's name and message, and where the call was.
class cuda_error : public device_error {
public:
    cuda_error(int code, std::string name, std::string message, const char* call,
               const char* file, int line)
        : device_error(std::string(call) + " failed: " + name + " (" + message + ") at " + file +
                       ":" + std::to_string(line)),
          code_(code), name_(std::move(name)), message_(std::move(message)), file_(file),
          line_(line) {}

    int code() const noexcept { return code_; }
    const std::string& name() const noexcept { return name_; }
    const std::string& message() const noexcept { return message_; }
    const char* file() const noexcept { return file_; }
    int line() const noexcept { return line_; }

private:
    int code_;
    std::string name_, message_;
    const char* file_;
    int line_;
};

/// An allocation failed even after the device's cache was returned.
class out_of_memory : public error {
public:
    using error::error;
};

/// Shapes that do not fit the operation: no broadcast, a wrong width, a bad dimension.
class shape_error : public error {
public:
    using error::error;
};

/// An index outside the dimension it indexes.
class index_error : public error {
public:
    using error::error;
};

/// A copy between host and device that a transfer_guard forbids (DESIGN §14).
class transfer_error : public error {
public:
    using error::error;
};

/// A device descriptor that cannot be parsed or is out of range ("gpu", "cuda:-1").
class invalid_device : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

#if DEVTENSOR_CUDA_RUNTIME
namespace detail {
/// Throws cuda_error for a failed runtime call, after clearing the sticky last error.
inline void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
    (void)cudaGetLastError();
    throw cuda_error(static_cast<int>(code), cudaGetErrorName(code), cudaGetErrorString(code),
                     call, file, line);
}
}  // namespace detail

/// Wraps every CUDA runtime call: a failure throws cuda_error naming the call and its place.
#  define DEVTENSOR_CUDA_CHECK(call)                                                 \
      do {                                                                           \
          const cudaError_t devtensor_status_ = (call);                              \
          if (devtensor_status_ != cudaSuccess)                                      \
              ::devtensor::detail::throw_cuda_error(devtensor_status_, #call, __FILE__, \
                                                    __LINE__);                       \
      } while (0)
#endif

}  // namespace devtensor
