// Thin wrappers over the CUDA runtime's host API: device count, the current
// device, one stream per device, copies. Compiled by g++ and nvcc alike; empty
// unless the program links the runtime (DEVTENSOR_CUDA_RUNTIME).
#pragma once

#include <devtensor/config.hpp>
#include <devtensor/device.hpp>
#include <devtensor/error.hpp>  // DEVTENSOR_CUDA_CHECK

#if DEVTENSOR_CUDA_RUNTIME
#  include <cuda_runtime_api.h>

#  include <array>
#  include <cstddef>
#  include <mutex>

namespace devtensor::detail::cudart {

/// What cudaGetDeviceCount said, asked once per process.
struct device_count_result {
    int count = 0;
    cudaError_t status = cudaSuccess;
};

inline const device_count_result& device_count() noexcept {
    static const device_count_result result = [] {
        device_count_result r;
        r.status = cudaGetDeviceCount(&r.count);
        if (r.status != cudaSuccess) {
            (void)cudaGetLastError();
            r.count = 0;
        }
        return r;
    }();
    return result;
}

/// Makes `ordinal` the current device for a scope, restoring the previous one.
class device_guard {
public:
    explicit device_guard(int ordinal) {
        DEVTENSOR_CUDA_CHECK(cudaGetDevice(&previous_));
        if (previous_ != ordinal) DEVTENSOR_CUDA_CHECK(cudaSetDevice(ordinal));
    }
    ~device_guard() { (void)cudaSetDevice(previous_); }
    device_guard(const device_guard&) = delete;
    device_guard& operator=(const device_guard&) = delete;

private:
    int previous_ = 0;
};

/// The stream all of devtensor's work on device `ordinal` is ordered on.
/// Created on first use and kept for the life of the process (destroying
/// streams after the driver has shut down at exit is an error).
inline cudaStream_t stream(int ordinal) {
    static std::array<cudaStream_t, DEVTENSOR_MAX_CUDA_DEVICES> streams{};
    static std::array<std::once_flag, DEVTENSOR_MAX_CUDA_DEVICES> once;
    if (ordinal < 0 || ordinal >= DEVTENSOR_MAX_CUDA_DEVICES)
        throw device_unavailable("devtensor: cuda:" + std::to_string(ordinal) +
                                 " is beyond DEVTENSOR_MAX_CUDA_DEVICES");
    std::call_once(once[static_cast<std::size_t>(ordinal)], [ordinal] {
        device_guard guard(ordinal);
        DEVTENSOR_CUDA_CHECK(cudaStreamCreateWithFlags(&streams[static_cast<std::size_t>(ordinal)],
                                                       cudaStreamNonBlocking));
    });
    return streams[static_cast<std::size_t>(ordinal)];
}

/// Waits for all of devtensor's queued work on device `ordinal`.
inline void synchronize(int ordinal) {
    DEVTENSOR_CUDA_CHECK(cudaStreamSynchronize(stream(ordinal)));
}

/// Copies `bytes` between any two devices; returns once the destination may
/// be read by its owner (a copy to the host waits for the device).
inline void copy(void* dst, const device& to, const void* src, const device& from,
                 std::size_t bytes) {
    if (bytes == 0) return;
    if (from.is_cpu() && to.is_cpu()) {
        DEVTENSOR_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToHost));
    } else if (from.is_cpu()) {  // pageable source: safe to reuse once the call returns
        device_guard guard(to.index());
        DEVTENSOR_CUDA_CHECK(
            cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream(to.index())));
    } else if (to.is_cpu()) {
        device_guard guard(from.index());
        DEVTENSOR_CUDA_CHECK(
            cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream(from.index())));
        synchronize(from.index());
    } else if (from.index() == to.index()) {
        device_guard guard(to.index());
        DEVTENSOR_CUDA_CHECK(
            cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream(to.index())));
    } else {  // peer copy: order it after the source's work, then let the target's stream wait
        synchronize(from.index());
        device_guard guard(to.index());
        DEVTENSOR_CUDA_CHECK(cudaMemcpyPeerAsync(dst, to.index(), src, from.index(), bytes,
                                                 stream(to.index())));
    }
}

}  // namespace devtensor::detail::cudart

#endif  // DEVTENSOR_CUDA_RUNTIME
