// The test-side API of the recording CUDA runtime stand-in (fake_cudart.cpp,
// library devtensor_fake_cudart). A test program linked against the stand-in
// instead of libcudart runs devtensor's CUDA host code on a machine without a
// GPU: device memory is host memory, copies happen at once, kernels are
// recorded and never run. Every runtime call lands in a log, which tests read
// to assert the ORDER of calls that matters (a copy before the synchronize
// that makes its result readable, an event recorded before a stream waits on
// it, an ignored error cleared by cudaGetLastError, ...).
#pragma once

#include <cuda_runtime_api.h>

#include <concepts>
#include <cstddef>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace devtensor_fake {

/// One runtime call as it was made. Fields that do not apply to a call keep
/// their defaults (-1, nullptr, 0).
struct call {
    std::string name;                // "cudaMemcpyAsync"; nvcc's <<<>>> launches read "cudaLaunchKernel"
    int device = -1;                 // the calling thread's current device when the call was made
    int ordinal = -1;                // the device the call names by argument: cudaSetDevice,
                                     // cudaDeviceGetAttribute, cudaMemPoolCreate (location.id), ...;
                                     // cudaMemcpyPeerAsync: the destination device
    const void* stream = nullptr;    // the stream argument (nullptr: the legacy default stream)
    const void* event = nullptr;     // the event argument, or the event created
    const void* pool = nullptr;      // the pool argument or the pool created; frees: the pool the
                                     // memory returned to (nullptr: it came from cudaMalloc)
    const void* dst = nullptr;       // memory written, allocated, freed or registered
    const void* src = nullptr;       // memory read (cudaPointerGetAttributes: the pointer asked about)
    int dst_device = -1;             // the device whose memory dst was in at the call; -1: host memory
    int src_device = -1;             // the same for src (the memory may be freed by the time a test looks)
    std::size_t bytes = 0;           // bytes copied, set, allocated or registered;
                                     // launches: the dynamic shared memory
    const void* function = nullptr;  // launches, cudaFuncGetAttributes, occupancy: the kernel's host stub
    std::string kernel{};            // launches from nvcc code: the kernel's (mangled) device name
    dim3 grid{0, 0, 0};              // launches
    dim3 block{0, 0, 0};             // launches
    cudaError_t error = cudaSuccess; // what the call returned; cudaGetErrorName/String: the code asked about
};

/// The log since the last reset(), in the order the calls were made (calls from
/// several threads are serialised). The nvcc entry points the runtime uses
/// internally (__cudaRegisterFatBinary, __cudaPushCallConfiguration, ...) are
/// not logged: only the launch they lead to, as "cudaLaunchKernel".
std::vector<call> calls();

/// Clears the log and any fail_next() not yet used; streams, events, pools,
/// allocations and the current device stay as they are.
void reset();

/// The next call named `name` (one that returns cudaError_t) does nothing but
/// return `error`, which it also leaves as the thread's last error. Several
/// fail_next() for one name fail that many calls.
void fail_next(std::string name, cudaError_t error);

/// How many fake devices there are (default: DEVTENSOR_FAKE_CUDA_DEVICES, or 2).
/// Call it before the code under test first asks: devtensor asks once per process.
/// 0 devices makes cudaGetDeviceCount fail with cudaErrorNoDevice, as on a machine
/// without a GPU.
void set_device_count(int count);

/// The calling thread's last error, without clearing it and without a log entry.
cudaError_t last_error();

/// Whether `p` lies in page-locked host memory (cudaMallocHost, cudaHostAlloc, cudaHostRegister).
bool is_pinned(const void* p);

/// The device of a stream, event or pool handle (the device current when it was
/// made; a pool's location), or of the device allocation `p` lies in; -1 for
/// anything else.
int device_of(const void* handle_or_pointer);

/// Device allocations not yet freed: all of them, or those from `pool` (nullptr:
/// those made by cudaMalloc, outside any pool). For leak checks and "allocates
/// from devtensor's own pool only".
std::size_t live_allocations();
std::size_t live_allocations(const void* pool);

/// Prints a call on one line, naming handles as stream#N@cuda:D, event#N@cuda:D,
/// pool#N@cuda:D and memory, as it is when printed, as mem#N@cuda:D, pinned#N,
/// registered#N (+offset), or its address.
std::ostream& operator<<(std::ostream& out, const call& c);

inline constexpr std::size_t npos = static_cast<std::size_t>(-1);

/// The index of the first call at or after `from` that satisfies `pred`, or npos.
template <std::predicate<const call&> Pred>
std::size_t index_of(const std::vector<call>& log, Pred pred, std::size_t from = 0) {
    for (std::size_t i = from; i < log.size(); ++i)
        if (pred(log[i])) return i;
    return npos;
}

/// The index of the first call named `name` at or after `from`, or npos.
inline std::size_t index_of(const std::vector<call>& log, std::string_view name, std::size_t from = 0) {
    return index_of(log, [name](const call& c) { return c.name == name; }, from);
}

}  // namespace devtensor_fake
