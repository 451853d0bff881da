// How many CUDA devices this process can use, and the check every device op
// makes first: the small part of device_query.hpp that tensors, copies and
// memory statistics need (no NVML, no /proc parsing).
#pragma once

#include <devtensor/backend/cuda/runtime.hpp>
#include <devtensor/config.hpp>
#include <devtensor/device.hpp>
#include <devtensor/error.hpp>

#include <string>

namespace devtensor {

/// Number of CUDA devices: 0 when there is no driver, no GPU, or no CUDA runtime.
inline int cuda_device_count() noexcept {
#if DEVTENSOR_CUDA_RUNTIME
    return detail::cudart::device_count().count;
#else
    return 0;
#endif
}

/// True when at least one CUDA device can be used.
inline bool cuda_available() noexcept { return cuda_device_count() > 0; }

/// "" when CUDA is available; otherwise why not, in the runtime's words.
inline std::string cuda_unavailable_reason() {
#if DEVTENSOR_CUDA_RUNTIME
    const auto& r = detail::cudart::device_count();
    // With no driver at all the runtime says cudaErrorInsufficientDriver, whose text
    // ("driver version is insufficient") sends users to upgrade a driver they lack.
    int driver = 0;
    if (r.status != cudaSuccess && (cudaDriverGetVersion(&driver) != cudaSuccess || driver == 0)) {
        (void)cudaGetLastError();
        return "no NVIDIA driver is installed (libcuda.so.1 was not found; " +
               std::string(cudaGetErrorName(r.status)) + ")";
    }
    if (r.status != cudaSuccess)
        return std::string(cudaGetErrorName(r.status)) + ": " + cudaGetErrorString(r.status);
    if (r.count == 0) return "no CUDA device found";
    return "";
#else
    return "built without the CUDA runtime (link devtensor::cuda)";
#endif
}

/// Throws device_unavailable unless `d` can be used in this process.
inline void require_available(const device& d, const char* op = nullptr) {
    if (d.is_cpu()) return;
    const int n = cuda_device_count();
    if (d.index() >= 0 && d.index() < n) return;  // cuda_device{-1} converts unchecked
    std::string message = (op ? std::string("devtensor::") + op + ": " : std::string()) +
                          to_string(d) + " is not available: " + std::to_string(n) +
                          " CUDA device" + (n == 1 ? "" : "s") + " found";
    if (n == 0) message += " (" + cuda_unavailable_reason() + ")";
    throw device_unavailable(message);
}

}  // namespace devtensor
