// Thin wrappers over the CUDA runtime's host API: device count, the current
// device, one stream per device, copies. Compiled by g++ and nvcc alike; empty
// unless the program links the runtime (DEVTENSOR_CUDA_RUNTIME).
#pragma once

#include <devtensor/config.hpp>
#include <devtensor/device.hpp>
#include <devtensor/detail/index_fault.hpp>
#include <devtensor/detail/per_device.hpp>
#include <devtensor/error.hpp>  // DEVTENSOR_CUDA_CHECK

#if DEVTENSOR_CUDA_RUNTIME
#  include <cuda_runtime_api.h>

#  include <atomic>
#  include <cstddef>
#  include <cstdlib>  // getenv
#  include <new>
#  include <string>
#  include <string_view>

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
    ~device_guard() {
        if (cudaSetDevice(previous_) != cudaSuccess) (void)cudaGetLastError();  // never left for the next call
    }
    device_guard(const device_guard&) = delete;
    device_guard& operator=(const device_guard&) = delete;

private:
    int previous_ = 0;
};

/// The stream all of devtensor's work on device `ordinal` is ordered on.
/// Created on first use and kept for the life of the process (destroying
/// streams after the driver has shut down at exit is an error).
inline cudaStream_t stream(int ordinal) {
    static per_device<cudaStream_t> streams;
    return streams.once(ordinal, [ordinal](cudaStream_t& s) {
        device_guard guard(ordinal);
        DEVTENSOR_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    });
}

/// The index-fault records of the devices, made when a checked gather first runs there.
inline per_device<std::atomic<index_fault*>>& index_fault_records() {
    static per_device<std::atomic<index_fault*>> records;
    return records;
}

/// Device `ordinal`'s index-fault record: page-locked and mapped (under unified
/// addressing its host address is valid in kernels), so the host reads what a
/// kernel wrote once the stream is synchronised, without a copy.
inline index_fault* device_index_fault(int ordinal) {
    static per_device<char> made;
    made.once(ordinal, [ordinal](char&) {
        device_guard guard(ordinal);
        void* p = nullptr;
        DEVTENSOR_CUDA_CHECK(cudaHostAlloc(&p, sizeof(index_fault), cudaHostAllocMapped | cudaHostAllocPortable));
        index_fault_records()[ordinal].store(new (p) index_fault{});  // kept for the process's life
    });
    return index_fault_records()[ordinal].load();
}

/// Waits for all of devtensor's queued work on device `ordinal`; an out-of-range
/// index a kernel met since the last synchronisation is thrown here (index_error).
inline void synchronize(int ordinal) {
    DEVTENSOR_CUDA_CHECK(cudaStreamSynchronize(stream(ordinal)));
    if (index_fault* f = index_fault_records()[ordinal].load())
        throw_index_fault(*f, " (found by a kernel on cuda:" + std::to_string(ordinal) +
                                  ", reported at the next synchronisation)");
}

/// DEVTENSOR_LAUNCH_BLOCKING=1 (like CUDA_LAUNCH_BLOCKING): every kernel launch
/// waits for its kernel, so a fault is reported by the launch that caused it.
inline bool launch_blocking() noexcept {
    static const bool on = [] {
        const char* value = std::getenv("DEVTENSOR_LAUNCH_BLOCKING");
        return value != nullptr && std::string_view(value) == "1";
    }();
    return on;
}

/// Checks the launch of devtensor kernel `kernel` on device `ordinal` and, with
/// DEVTENSOR_LAUNCH_BLOCKING=1, waits for it: a failure names the kernel.
inline void check_launch(int ordinal, const char* kernel) {
    cudaError_t status = cudaGetLastError();
    if (status == cudaSuccess && launch_blocking()) status = cudaStreamSynchronize(stream(ordinal));
    if (status != cudaSuccess) {
        (void)cudaGetLastError();
        throw cuda_error(static_cast<int>(status), cudaGetErrorName(status), cudaGetErrorString(status),
                         ("devtensor kernel '" + std::string(kernel) + "' on cuda:" +
                          std::to_string(ordinal))
                             .c_str(),
                         __FILE__, __LINE__);
    }
}

/// Makes `waiter` wait for the work queued on `signaller` so far, through an
/// event, without the host waiting. The current device must be the signaller's.
inline void order_after(cudaStream_t waiter, cudaStream_t signaller) {
    cudaEvent_t event{};
    DEVTENSOR_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    cudaError_t status = cudaEventRecord(event, signaller);
    if (status == cudaSuccess) status = cudaStreamWaitEvent(waiter, event, 0);
    if (cudaEventDestroy(event) != cudaSuccess) (void)cudaGetLastError();  // freed once it completes
    DEVTENSOR_CUDA_CHECK(status);
}

/// Whether host memory at `p` is page-locked (or managed): copies from it run
/// asynchronously, reading it after the call returns.
inline bool is_pinned(const void* p) {
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
        (void)cudaGetLastError();  // memory the runtime does not know: pageable
        return false;
    }
    return attributes.type == cudaMemoryTypeHost || attributes.type == cudaMemoryTypeManaged;
}

/// Copies `bytes` between any two devices; returns once the destination may
/// be read by its owner (a copy to the host waits for the device) and the
/// source may be reused or freed by the caller (host memory) or by its device's
/// stream (device memory). `non_blocking` (torch's): a copy from page-locked host
/// memory to a device returns at once, still reading the source.
inline void copy(void* dst, const device& to, const void* src, const device& from,
                 std::size_t bytes, bool non_blocking = false) {
    if (bytes == 0) return;
    if (from.is_cpu() && to.is_cpu()) {
        DEVTENSOR_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToHost));
    } else if (from.is_cpu()) {
        device_guard guard(to.index());
        DEVTENSOR_CUDA_CHECK(
            cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream(to.index())));
        // From pageable memory the runtime has staged the bytes when it returns; from
        // pinned memory the copy still reads the source, which the caller may free
        // or change as soon as we return.
        if (!non_blocking && is_pinned(src)) synchronize(to.index());
    } else if (to.is_cpu()) {
        device_guard guard(from.index());
        DEVTENSOR_CUDA_CHECK(
            cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream(from.index())));
        synchronize(from.index());
    } else if (from.index() == to.index()) {
        device_guard guard(to.index());
        DEVTENSOR_CUDA_CHECK(
            cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream(to.index())));
    } else {
        // A peer copy runs on the target's stream, after the source's queued work;
        // then the source's stream waits for the copy, so that a later
        // cudaFreeAsync of the source on it cannot recycle memory still being read.
        const cudaStream_t source = stream(from.index()), target = stream(to.index());
        {
            device_guard guard(from.index());
            order_after(target, source);
        }
        device_guard guard(to.index());
        DEVTENSOR_CUDA_CHECK(cudaMemcpyPeerAsync(dst, to.index(), src, from.index(), bytes, target));
        order_after(source, target);
    }
}

}  // namespace devtensor::detail::cudart

#endif  // DEVTENSOR_CUDA_RUNTIME
