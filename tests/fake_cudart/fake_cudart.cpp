// A recording stand-in for the CUDA runtime (libcudart), for tests that check
// the order of the runtime calls devtensor makes, on machines without a GPU.
// It defines, with C linkage and the real signatures (cuda_runtime_api.h is
// included so that the compiler checks them), the runtime functions
// devtensor's headers and tests call and the entry points nvcc's generated
// host code calls, so that g++ programs and nvcc programs (-cudart none) link
// against it instead of libcudart. What it fakes:
//  - DEVTENSOR_FAKE_CUDA_DEVICES devices (default 2) like an H100/H200 with
//    1 GiB each; allocations beyond it fail with cudaErrorMemoryAllocation;
//  - device memory is host memory (256-byte aligned), remembered with its
//    device and pool; a pool keeps freed memory reserved until cudaMemPoolTrimTo,
//    or until a synchronisation finds it above the pool's release threshold;
//  - copies and memsets happen at once; kernels are recorded and never run;
//  - streams, events and pools are handles to the structs below, kept for the
//    life of the process so that a destroyed handle is recognised as such;
//  - the per-thread current device and sticky last error.
// Where a mistake would go unnoticed with host memory standing in for device
// memory, it fails the way the real runtime does: a copy whose kind does not
// match its pointers or that runs past an allocation, an event recorded on
// another device's stream, a launch into a stream of a device other than the
// current one, a handle used after it was destroyed.
// fake_cudart.hpp is the test-side API: the log, fail_next and a few queries.
#include "fake_cudart.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <utility>

// ---- the handles: the runtime's opaque structs, defined here ----------------------------

enum class handle_kind { stream, event, pool };

struct handle {
    handle_kind kind{};
    int id = 0;      // numbers handles and allocations for printing, in creation order
    int device = 0;  // current when the handle was made; a pool's location
    bool destroyed = false;
};

struct CUstream_st : handle {};

struct CUevent_st : handle {
    unsigned flags = 0;
    bool recorded = false;
};

struct CUmemPoolHandle_st : handle {
    bool is_default = false;
    std::uint64_t release_threshold = 0;
    std::uint64_t max_size = 0;  // cudaMemPoolProps::maxSize; 0: the device's memory
    std::uint64_t reserved = 0, used = 0, reserved_high = 0, used_high = 0;
    int reuse[3] = {1, 1, 1};  // the cudaMemPoolReuse* attributes: kept and reported, no effect
};

/// What nvcc's launch code names a kernel by (__cudaGetKernel).
struct CUkern_st {
    const void* host_function = nullptr;
    std::string name;  // from __cudaRegisterFunction: the mangled device name
};

// nvcc's generated host code calls these; they are declared in crt/host_runtime.h
// and crt/device_functions.h, internal headers meant for nvcc's output only.
extern "C" {
void** __cudaRegisterFatBinary(void* fatCubin);
void __cudaRegisterFatBinaryEnd(void** fatCubinHandle);
void __cudaUnregisterFatBinary(void** fatCubinHandle);
char __cudaInitModule(void** fatCubinHandle);
void __cudaRegisterFunction(void** fatCubinHandle, const char* hostFun, char* deviceFun, const char* deviceName,
                            int thread_limit, uint3* tid, uint3* bid, dim3* bDim, dim3* gDim, int* wSize);
void __cudaRegisterVar(void** fatCubinHandle, char* hostVar, char* deviceAddress, const char* deviceName, int ext,
                       size_t size, int constant, int global);
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, struct CUstream_st* stream);
cudaError_t __cudaPopCallConfiguration(dim3* gridDim, dim3* blockDim, size_t* sharedMem, void* stream);
cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* hostFun);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,
                               cudaStream_t stream);
}

namespace {

using devtensor_fake::call;

// ---- the fake devices ------------------------------------------------------------------

constexpr std::size_t device_memory = std::size_t{1} << 30;
constexpr std::size_t alignment = 256;  // what cudaMalloc guarantees
constexpr int version = 13000;          // driver and runtime: CUDA 13.0
constexpr int max_devices = 64;
constexpr int clock_khz = 1980000;      // cudaDevAttrClockRate (no longer in cudaDeviceProp)

/// An H100/H200-like device (compute 9.0, 132 multiprocessors) with 1 GiB.
cudaDeviceProp properties(int device) {
    cudaDeviceProp p{};
    std::snprintf(p.name, sizeof p.name, "devtensor fake GPU");
    p.uuid.bytes[0] = static_cast<char>(device + 1);
    p.totalGlobalMem = device_memory;
    p.sharedMemPerBlock = 48 * 1024;
    p.regsPerBlock = 65536;
    p.warpSize = 32;
    p.memPitch = std::numeric_limits<int>::max();
    p.maxThreadsPerBlock = 1024;
    p.maxThreadsDim[0] = 1024;
    p.maxThreadsDim[1] = 1024;
    p.maxThreadsDim[2] = 64;
    p.maxGridSize[0] = std::numeric_limits<int>::max();
    p.maxGridSize[1] = 65535;
    p.maxGridSize[2] = 65535;
    p.totalConstMem = 64 * 1024;
    p.major = 9;
    p.minor = 0;
    p.textureAlignment = 512;
    p.texturePitchAlignment = 32;
    p.multiProcessorCount = 132;
    p.canMapHostMemory = 1;
    p.concurrentKernels = 1;
    p.ECCEnabled = 1;
    p.pciBusID = 0x10 + device;
    p.asyncEngineCount = 2;
    p.unifiedAddressing = 1;
    p.memoryBusWidth = 5120;
    p.l2CacheSize = 50 * 1024 * 1024;
    p.maxThreadsPerMultiProcessor = 2048;
    p.streamPrioritiesSupported = 1;
    p.globalL1CacheSupported = 1;
    p.localL1CacheSupported = 1;
    p.sharedMemPerMultiprocessor = 228 * 1024;
    p.regsPerMultiprocessor = 65536;
    p.managedMemory = 1;
    p.computePreemptionSupported = 1;
    p.cooperativeLaunch = 1;
    p.sharedMemPerBlockOptin = 227 * 1024;  // 228 KiB per multiprocessor less 1 KiB the driver reserves
    p.maxBlocksPerMultiProcessor = 32;
    p.reservedSharedMemPerBlock = 1024;
    p.hostRegisterSupported = 1;
    p.memoryPoolsSupported = 1;
    p.clusterLaunch = 1;
    p.hostNumaId = -1;
    return p;
}

/// cudaDeviceGetAttribute, from the same properties. An attribute not listed
/// fails (cudaErrorInvalidValue) rather than reading 0: add it here when code
/// under test starts asking for it.
std::optional<int> attribute(cudaDeviceAttr attr, const cudaDeviceProp& p) {
    switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: return p.maxThreadsPerBlock;
    case cudaDevAttrMaxBlockDimX: return p.maxThreadsDim[0];
    case cudaDevAttrMaxBlockDimY: return p.maxThreadsDim[1];
    case cudaDevAttrMaxBlockDimZ: return p.maxThreadsDim[2];
    case cudaDevAttrMaxGridDimX: return p.maxGridSize[0];
    case cudaDevAttrMaxGridDimY: return p.maxGridSize[1];
    case cudaDevAttrMaxGridDimZ: return p.maxGridSize[2];
    case cudaDevAttrMaxSharedMemoryPerBlock: return static_cast<int>(p.sharedMemPerBlock);
    case cudaDevAttrTotalConstantMemory: return static_cast<int>(p.totalConstMem);
    case cudaDevAttrWarpSize: return p.warpSize;
    case cudaDevAttrMaxRegistersPerBlock: return p.regsPerBlock;
    case cudaDevAttrClockRate: return clock_khz;
    case cudaDevAttrMultiProcessorCount: return p.multiProcessorCount;
    case cudaDevAttrIntegrated: return p.integrated;
    case cudaDevAttrCanMapHostMemory: return p.canMapHostMemory;
    case cudaDevAttrComputeMode: return cudaComputeModeDefault;
    case cudaDevAttrConcurrentKernels: return p.concurrentKernels;
    case cudaDevAttrEccEnabled: return p.ECCEnabled;
    case cudaDevAttrPciBusId: return p.pciBusID;
    case cudaDevAttrPciDeviceId: return p.pciDeviceID;
    case cudaDevAttrPciDomainId: return p.pciDomainID;
    case cudaDevAttrAsyncEngineCount: return p.asyncEngineCount;
    case cudaDevAttrUnifiedAddressing: return p.unifiedAddressing;
    case cudaDevAttrGlobalMemoryBusWidth: return p.memoryBusWidth;
    case cudaDevAttrL2CacheSize: return p.l2CacheSize;
    case cudaDevAttrMaxThreadsPerMultiProcessor: return p.maxThreadsPerMultiProcessor;
    case cudaDevAttrComputeCapabilityMajor: return p.major;
    case cudaDevAttrComputeCapabilityMinor: return p.minor;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: return static_cast<int>(p.sharedMemPerMultiprocessor);
    case cudaDevAttrMaxRegistersPerMultiprocessor: return p.regsPerMultiprocessor;
    case cudaDevAttrManagedMemory: return p.managedMemory;
    case cudaDevAttrCooperativeLaunch: return p.cooperativeLaunch;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: return static_cast<int>(p.sharedMemPerBlockOptin);
    case cudaDevAttrMaxBlocksPerMultiprocessor: return p.maxBlocksPerMultiProcessor;
    case cudaDevAttrHostRegisterSupported: return p.hostRegisterSupported;
    case cudaDevAttrMemoryPoolsSupported: return p.memoryPoolsSupported;
    default: return std::nullopt;
    }
}

// ---- error names and texts -------------------------------------------------------------

struct error_text {
    cudaError_t code;
    const char* name;
    const char* text;  // as the real runtime words them
};

#define DEVTENSOR_FAKE_ERROR(code, text) {code, #code, text}
constexpr error_text error_texts[] = {
    DEVTENSOR_FAKE_ERROR(cudaSuccess, "no error"),
    DEVTENSOR_FAKE_ERROR(cudaErrorInvalidValue, "invalid argument"),
    DEVTENSOR_FAKE_ERROR(cudaErrorMemoryAllocation, "out of memory"),
    DEVTENSOR_FAKE_ERROR(cudaErrorInitializationError, "initialization error"),
    DEVTENSOR_FAKE_ERROR(cudaErrorCudartUnloading, "driver shutting down"),
    DEVTENSOR_FAKE_ERROR(cudaErrorInvalidConfiguration, "invalid configuration argument"),
    DEVTENSOR_FAKE_ERROR(cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy"),
    DEVTENSOR_FAKE_ERROR(cudaErrorInsufficientDriver, "CUDA driver version is insufficient for CUDA runtime version"),
    DEVTENSOR_FAKE_ERROR(cudaErrorInvalidDeviceFunction, "invalid device function"),
    DEVTENSOR_FAKE_ERROR(cudaErrorNoDevice, "no CUDA-capable device is detected"),
    DEVTENSOR_FAKE_ERROR(cudaErrorInvalidDevice, "invalid device ordinal"),
    DEVTENSOR_FAKE_ERROR(cudaErrorDeviceUninitialized, "invalid device context"),
    DEVTENSOR_FAKE_ERROR(cudaErrorNoKernelImageForDevice, "no kernel image is available for execution on the device"),
    DEVTENSOR_FAKE_ERROR(cudaErrorPeerAccessUnsupported, "peer access is not supported between these two devices"),
    DEVTENSOR_FAKE_ERROR(cudaErrorOperatingSystem, "OS call failed or operation not supported on this OS"),
    DEVTENSOR_FAKE_ERROR(cudaErrorInvalidResourceHandle, "invalid resource handle"),
    DEVTENSOR_FAKE_ERROR(cudaErrorIllegalState, "the operation cannot be performed in the present state"),
    DEVTENSOR_FAKE_ERROR(cudaErrorNotReady, "device not ready"),
    DEVTENSOR_FAKE_ERROR(cudaErrorIllegalAddress, "an illegal memory access was encountered"),
    DEVTENSOR_FAKE_ERROR(cudaErrorLaunchOutOfResources, "too many resources requested for launch"),
    DEVTENSOR_FAKE_ERROR(cudaErrorLaunchTimeout, "the launch timed out and was terminated"),
    DEVTENSOR_FAKE_ERROR(cudaErrorPeerAccessNotEnabled, "peer access has not been enabled"),
    DEVTENSOR_FAKE_ERROR(cudaErrorAssert, "device-side assert triggered"),
    DEVTENSOR_FAKE_ERROR(cudaErrorHostMemoryAlreadyRegistered, "part or all of the requested memory range is already mapped"),
    DEVTENSOR_FAKE_ERROR(cudaErrorHostMemoryNotRegistered, "pointer does not correspond to a registered memory region"),
    DEVTENSOR_FAKE_ERROR(cudaErrorLaunchFailure, "unspecified launch failure"),
    DEVTENSOR_FAKE_ERROR(cudaErrorNotPermitted, "operation not permitted"),
    DEVTENSOR_FAKE_ERROR(cudaErrorNotSupported, "operation not supported"),
    DEVTENSOR_FAKE_ERROR(cudaErrorStreamCaptureUnsupported, "operation not permitted when stream is capturing"),
    DEVTENSOR_FAKE_ERROR(cudaErrorUnknown, "unknown error"),
};
#undef DEVTENSOR_FAKE_ERROR

const error_text* find_error(cudaError_t code) {
    for (const error_text& e : error_texts)
        if (e.code == code) return &e;
    return nullptr;
}

// ---- the state -------------------------------------------------------------------------

enum class memory_kind { device, pinned, registered };

/// Device memory, pinned host memory, or a registered host range.
struct allocation {
    memory_kind kind{};
    int id = 0;
    int device = 0;             // where device memory lives; for host memory, the device then current
    std::size_t size = 0;       // as asked: copies must stay inside it
    std::size_t footprint = 0;  // counted against the device: size rounded up to `alignment`
    CUmemPoolHandle_st* pool = nullptr;
};

struct device_state {
    std::uint64_t outside_pools = 0;  // cudaMalloc'ed bytes
    CUmemPoolHandle_st* default_pool = nullptr;
    CUmemPoolHandle_st* current_pool = nullptr;  // what cudaMallocAsync takes from
};

struct state {
    std::mutex mutex;
    int device_count = 0;
    std::vector<device_state> devices;  // grows only: allocations name their device by index
    std::deque<CUstream_st> streams;    // deques: handles keep their addresses
    std::deque<CUevent_st> events;
    std::deque<CUmemPoolHandle_st> pools;
    std::unordered_map<const void*, handle*> handles;
    std::map<std::uintptr_t, allocation> memory;  // by start address
    std::map<const void*, CUkern_st> kernels;     // by host stub
    std::deque<void*> fat_binaries;               // __cudaRegisterFatBinary's handles point here
    std::vector<call> log;
    std::vector<std::pair<std::string, cudaError_t>> failures;
    int next_id = 1;
};

thread_local int current_device = 0;
thread_local cudaError_t last_error = cudaSuccess;

struct launch_config {
    dim3 grid, block;
    std::size_t shared = 0;
    cudaStream_t stream = nullptr;
};
thread_local std::vector<launch_config> launch_configs;  // __cudaPush/PopCallConfiguration

template <class T>
T& make_handle(state& s, std::deque<T>& list, handle_kind kind, int device) {
    T& h = list.emplace_back();
    h.kind = kind;
    h.id = s.next_id++;
    h.device = device;
    s.handles.emplace(static_cast<const void*>(&h), &h);
    return h;
}

void set_devices(state& s, int count) {
    if (count < 0 || count > max_devices)
        throw std::invalid_argument("devtensor_fake: a device count from 0 to 64, not " + std::to_string(count));
    while (static_cast<int>(s.devices.size()) < count) {
        const int device = static_cast<int>(s.devices.size());
        auto& pool = make_handle(s, s.pools, handle_kind::pool, device);
        pool.is_default = true;
        s.devices.push_back({0, &pool, &pool});
    }
    s.device_count = count;
}

int devices_from_environment() {
    const char* value = std::getenv("DEVTENSOR_FAKE_CUDA_DEVICES");
    if (value == nullptr) return 2;
    char* end = nullptr;
    const long count = std::strtol(value, &end, 10);
    if (end == value || *end != '\0' || count < 0 || count > max_devices) {
        std::fprintf(stderr, "devtensor_fake: DEVTENSOR_FAKE_CUDA_DEVICES=%s is not 0 to 64; using 2\n", value);
        return 2;
    }
    return static_cast<int>(count);
}

/// The one state, never destroyed: static objects of the program under test may
/// call the runtime from their destructors, after this library's statics are gone.
state& the_state() {
    static state& s = []() -> state& {
        auto* fresh = new state;
        set_devices(*fresh, devices_from_environment());
        return *fresh;
    }();
    return s;
}

cudaError_t check_device(const state& s, int device) {
    if (s.device_count == 0) return cudaErrorNoDevice;
    return device >= 0 && device < s.device_count ? cudaSuccess : cudaErrorInvalidDevice;
}

/// The live handle of `kind` at `p`, or nullptr (unknown, or destroyed).
template <class T>
T* find_handle(const state& s, const void* p, handle_kind kind) {
    const auto it = s.handles.find(p);
    if (it == s.handles.end() || it->second->kind != kind || it->second->destroyed) return nullptr;
    return static_cast<T*>(it->second);
}

/// The device whose work `stream` orders: the current one for the default streams.
cudaError_t stream_device(const state& s, cudaStream_t stream, int& device) {
    if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread) {
        device = current_device;
        return check_device(s, device);
    }
    const auto* st = find_handle<CUstream_st>(s, stream, handle_kind::stream);
    if (st == nullptr) return cudaErrorInvalidResourceHandle;
    device = st->device;
    return cudaSuccess;
}

/// Bytes of device `device` in use: cudaMalloc'ed, and reserved by its pools.
std::uint64_t device_used(const state& s, int device) {
    std::uint64_t used = s.devices[static_cast<std::size_t>(device)].outside_pools;
    for (const auto& pool : s.pools)
        if (pool.device == device) used += pool.reserved;
    return used;
}

/// The allocation or registered range `p` lies in, or nullptr.
const std::pair<const std::uintptr_t, allocation>* containing(const state& s, const void* p) {
    const auto address = reinterpret_cast<std::uintptr_t>(p);
    auto it = s.memory.upper_bound(address);
    if (it == s.memory.begin()) return nullptr;
    --it;
    return address - it->first < it->second.size ? &*it : nullptr;
}

enum class region { device, pinned, host, past_end };

/// What [p, p + bytes) is: inside one device allocation, inside page-locked host
/// memory, other host memory, or running past the end of a known allocation.
region classify(const state& s, const void* p, std::size_t bytes) {
    const auto* entry = containing(s, p);
    if (entry == nullptr) return region::host;
    if (reinterpret_cast<std::uintptr_t>(p) - entry->first + bytes > entry->second.size) return region::past_end;
    return entry->second.kind == memory_kind::device ? region::device : region::pinned;
}

/// Whether a copy of `kind` may go from `src` to `dst`. The device reaches its
/// own memory and page-locked host memory; the host reaches all but device memory.
cudaError_t check_copy(const state& s, void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
    if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault) return cudaErrorInvalidMemcpyDirection;
    if (bytes == 0) return cudaSuccess;
    if (dst == nullptr || src == nullptr) return cudaErrorInvalidValue;
    const region to = classify(s, dst, bytes), from = classify(s, src, bytes);
    if (to == region::past_end || from == region::past_end) return cudaErrorInvalidValue;
    if (kind == cudaMemcpyDefault) return cudaSuccess;
    const bool from_host = kind == cudaMemcpyHostToHost || kind == cudaMemcpyHostToDevice;
    const bool to_host = kind == cudaMemcpyHostToHost || kind == cudaMemcpyDeviceToHost;
    const bool ok = (from_host ? from != region::device : from != region::host) &&
                    (to_host ? to != region::device : to != region::host);
    return ok ? cudaSuccess : cudaErrorInvalidValue;
}

/// Host memory standing in for `bytes` of `kind`, remembered; nullptr when the
/// host has none.
void* take_memory(state& s, memory_kind kind, std::size_t bytes, int device, CUmemPoolHandle_st* pool) {
    if (bytes > std::numeric_limits<std::size_t>::max() - alignment) return nullptr;  // no rounding past the top
    const std::size_t footprint = (bytes + alignment - 1) / alignment * alignment;
    void* p = std::aligned_alloc(alignment, footprint);
    if (p != nullptr)
        s.memory.emplace(reinterpret_cast<std::uintptr_t>(p),
                         allocation{kind, s.next_id++, device, bytes, footprint, pool});
    return p;
}

/// cudaMalloc (pool nullptr) and the pool allocations: a pool first reuses what
/// it holds reserved, then reserves more of the device.
cudaError_t allocate_device(state& s, call& c, void** out, std::size_t bytes, int device, CUmemPoolHandle_st* pool) {
    if (out == nullptr) return cudaErrorInvalidValue;
    if (bytes == 0) {
        *out = nullptr;
        return cudaSuccess;
    }
    if (bytes > device_memory) return cudaErrorMemoryAllocation;
    const std::uint64_t footprint = (bytes + alignment - 1) / alignment * alignment;
    std::uint64_t growth = footprint;
    if (pool != nullptr) {
        const std::uint64_t cached = pool->reserved - pool->used;
        growth = footprint > cached ? footprint - cached : 0;
        if (pool->max_size != 0 && pool->reserved + growth > pool->max_size) return cudaErrorMemoryAllocation;
    }
    if (device_used(s, device) + growth > device_memory) return cudaErrorMemoryAllocation;
    void* p = take_memory(s, memory_kind::device, bytes, device, pool);
    if (p == nullptr) return cudaErrorMemoryAllocation;
    if (pool != nullptr) {
        pool->reserved += growth;
        pool->used += footprint;
        pool->reserved_high = std::max(pool->reserved_high, pool->reserved);
        pool->used_high = std::max(pool->used_high, pool->used);
    } else {
        s.devices[static_cast<std::size_t>(device)].outside_pools += footprint;
    }
    *out = p;
    c.dst = p;
    return cudaSuccess;
}

/// cudaFree and cudaFreeAsync: pool memory stays reserved by its pool (unless
/// the pool was destroyed meanwhile).
cudaError_t free_device(state& s, call& c, void* p) {
    if (p == nullptr) return cudaSuccess;
    const auto it = s.memory.find(reinterpret_cast<std::uintptr_t>(p));
    if (it == s.memory.end() || it->second.kind != memory_kind::device) return cudaErrorInvalidValue;
    const allocation& a = it->second;
    c.pool = a.pool;
    c.bytes = a.size;
    if (a.pool != nullptr) {
        a.pool->used -= a.footprint;
        if (a.pool->destroyed) a.pool->reserved -= a.footprint;
    } else {
        s.devices[static_cast<std::size_t>(a.device)].outside_pools -= a.footprint;
    }
    std::free(p);
    s.memory.erase(it);
    return cudaSuccess;
}

/// At stream, event and device synchronisation the runtime hands back what the
/// device's pools hold reserved above their release thresholds.
void release_over_threshold(state& s, int device) {
    for (auto& pool : s.pools)
        if (!pool.destroyed && pool.device == device && pool.reserved > pool.release_threshold)
            pool.reserved = std::max(pool.used, pool.release_threshold);
}

/// The checks of a kernel launch; the kernel itself never runs.
cudaError_t launch(const state& s, const call& c) {
    if (c.function == nullptr) return cudaErrorInvalidDeviceFunction;
    int device = 0;
    if (const cudaError_t e = stream_device(s, static_cast<cudaStream_t>(const_cast<void*>(c.stream)), device))
        return e;
    if (device != current_device) return cudaErrorInvalidResourceHandle;  // a kernel goes to the current device
    const cudaDeviceProp p = properties(device);
    const dim3 g = c.grid, b = c.block;
    const auto within = [](unsigned value, int limit) { return value >= 1 && value <= static_cast<unsigned>(limit); };
    if (!within(b.x, p.maxThreadsDim[0]) || !within(b.y, p.maxThreadsDim[1]) || !within(b.z, p.maxThreadsDim[2]) ||
        std::uint64_t{b.x} * b.y * b.z > static_cast<std::uint64_t>(p.maxThreadsPerBlock) ||
        !within(g.x, p.maxGridSize[0]) || !within(g.y, p.maxGridSize[1]) || !within(g.z, p.maxGridSize[2]))
        return cudaErrorInvalidConfiguration;
    if (c.bytes > p.sharedMemPerBlockOptin) return cudaErrorInvalidValue;
    return cudaSuccess;
}

/// Resident blocks per multiprocessor for a kernel of 32 registers a thread.
cudaError_t occupancy(int* numBlocks, const void* func, int blockSize, size_t dynamicSMemSize) {
    if (numBlocks == nullptr || blockSize <= 0) return cudaErrorInvalidValue;
    if (func == nullptr) return cudaErrorInvalidDeviceFunction;
    const cudaDeviceProp p = properties(0);
    if (blockSize > p.maxThreadsPerBlock || dynamicSMemSize > p.sharedMemPerBlockOptin) {
        *numBlocks = 0;
        return cudaSuccess;
    }
    const int threads = (blockSize + p.warpSize - 1) / p.warpSize * p.warpSize;
    std::size_t blocks = static_cast<std::size_t>(
        std::min(p.maxBlocksPerMultiProcessor, p.maxThreadsPerMultiProcessor / threads));
    if (dynamicSMemSize > 0)
        blocks = std::min(blocks, p.sharedMemPerMultiprocessor / (dynamicSMemSize + p.reservedSharedMemPerBlock));
    *numBlocks = static_cast<int>(blocks);
    return cudaSuccess;
}

std::string registered_name(const state& s, const void* host_function) {
    const auto it = s.kernels.find(host_function);
    return it == s.kernels.end() ? std::string() : it->second.name;
}

// ---- recording -------------------------------------------------------------------------

enum class sticky { yes, no };

/// Runs `body` for call `c` under the lock, unless fail_next() asked for this
/// call to fail; logs the call with its result; a failure becomes the thread's
/// last error (cudaErrorNotReady, from the queries, does not, as in the runtime).
template <class Body>
cudaError_t record(call c, Body body, sticky sets_last_error = sticky::yes) {
    state& s = the_state();
    std::lock_guard lock(s.mutex);
    c.device = current_device;
    const auto device_at = [&s](const void* p) {
        const auto* entry = containing(s, p);
        return entry != nullptr && entry->second.kind == memory_kind::device ? entry->second.device : -1;
    };
    c.dst_device = device_at(c.dst);  // before a free
    c.src_device = device_at(c.src);
    const auto failure =
        std::find_if(s.failures.begin(), s.failures.end(), [&](const auto& f) { return f.first == c.name; });
    if (failure != s.failures.end()) {
        c.error = failure->second;
        s.failures.erase(failure);
    } else {
        c.error = body(s, c);
    }
    if (c.dst_device == -1) c.dst_device = device_at(c.dst);  // after an allocation
    if (sets_last_error == sticky::yes && c.error != cudaSuccess && c.error != cudaErrorNotReady)
        last_error = c.error;
    const cudaError_t result = c.error;
    s.log.push_back(std::move(c));
    return result;
}

/// cudaGetErrorName/String: logged, never failing.
const char* describe(const char* name, cudaError_t code, bool want_name) {
    call c{.name = name, .error = code};
    state& s = the_state();
    {
        std::lock_guard lock(s.mutex);
        c.device = current_device;
        s.log.push_back(std::move(c));
    }
    const error_text* e = find_error(code);
    if (e == nullptr) return "unrecognized error code";
    return want_name ? e->name : e->text;
}

/// How a log line names a handle or a pointer; `device`: where the pointer was
/// device memory at the call, for memory freed since.
std::string label(const state& s, const void* p, int device) {
    std::ostringstream out;
    if (const auto it = s.handles.find(p); it != s.handles.end()) {
        const handle& h = *it->second;
        out << (h.kind == handle_kind::stream ? "stream" : h.kind == handle_kind::event ? "event" : "pool") << '#'
            << h.id << "@cuda:" << h.device << (h.destroyed ? "(destroyed)" : "");
    } else if (const auto* entry = containing(s, p)) {
        const allocation& a = entry->second;
        if (a.kind == memory_kind::device) out << "mem#" << a.id << "@cuda:" << a.device;
        else out << (a.kind == memory_kind::pinned ? "pinned#" : "registered#") << a.id;
        if (const auto offset = reinterpret_cast<std::uintptr_t>(p) - entry->first) out << '+' << offset;
    } else {
        out << p;
        if (device != -1) out << "@cuda:" << device << "(freed)";
    }
    return out.str();
}

}  // namespace

// ---- the runtime API -------------------------------------------------------------------

extern "C" {

cudaError_t cudaGetLastError(void) {
    return record({.name = "cudaGetLastError"}, [](state&, call&) { return std::exchange(last_error, cudaSuccess); },
                  sticky::no);
}

cudaError_t cudaPeekAtLastError(void) {
    return record({.name = "cudaPeekAtLastError"}, [](state&, call&) { return last_error; }, sticky::no);
}

const char* cudaGetErrorName(cudaError_t error) { return describe("cudaGetErrorName", error, true); }

const char* cudaGetErrorString(cudaError_t error) { return describe("cudaGetErrorString", error, false); }

cudaError_t cudaDriverGetVersion(int* driverVersion) {
    return record({.name = "cudaDriverGetVersion"}, [=](state&, call&) {
        if (driverVersion == nullptr) return cudaErrorInvalidValue;
        *driverVersion = version;
        return cudaSuccess;
    });
}

cudaError_t cudaRuntimeGetVersion(int* runtimeVersion) {
    return record({.name = "cudaRuntimeGetVersion"}, [=](state&, call&) {
        if (runtimeVersion == nullptr) return cudaErrorInvalidValue;
        *runtimeVersion = version;
        return cudaSuccess;
    });
}

// ---- devices

cudaError_t cudaGetDeviceCount(int* count) {
    return record({.name = "cudaGetDeviceCount"}, [=](state& s, call&) {
        if (count == nullptr) return cudaErrorInvalidValue;
        *count = s.device_count;
        return s.device_count == 0 ? cudaErrorNoDevice : cudaSuccess;
    });
}

cudaError_t cudaGetDevice(int* device) {
    return record({.name = "cudaGetDevice"}, [=](state& s, call&) {
        if (device == nullptr) return cudaErrorInvalidValue;
        if (const cudaError_t e = check_device(s, current_device)) return e;
        *device = current_device;
        return cudaSuccess;
    });
}

cudaError_t cudaSetDevice(int device) {
    return record({.name = "cudaSetDevice", .ordinal = device}, [=](state& s, call&) {
        if (const cudaError_t e = check_device(s, device)) return e;
        current_device = device;
        return cudaSuccess;
    });
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
    return record({.name = "cudaGetDeviceProperties", .ordinal = device}, [=](state& s, call&) {
        if (prop == nullptr) return cudaErrorInvalidValue;
        if (const cudaError_t e = check_device(s, device)) return e;
        *prop = properties(device);
        return cudaSuccess;
    });
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
    return record({.name = "cudaDeviceGetAttribute", .ordinal = device}, [=](state& s, call&) {
        if (value == nullptr) return cudaErrorInvalidValue;
        if (const cudaError_t e = check_device(s, device)) return e;
        const std::optional<int> v = attribute(attr, properties(device));
        if (!v) return cudaErrorInvalidValue;
        *value = *v;
        return cudaSuccess;
    });
}

cudaError_t cudaDeviceGetPCIBusId(char* pciBusId, int len, int device) {
    return record({.name = "cudaDeviceGetPCIBusId", .ordinal = device}, [=](state& s, call&) {
        if (pciBusId == nullptr || len < 13) return cudaErrorInvalidValue;  // "0000:10:00.0" and its NUL
        if (const cudaError_t e = check_device(s, device)) return e;
        std::snprintf(pciBusId, static_cast<std::size_t>(len), "0000:%02X:00.0", properties(device).pciBusID);
        return cudaSuccess;
    });
}

cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
    return record({.name = "cudaMemGetInfo"}, [=](state& s, call&) {
        if (free == nullptr || total == nullptr) return cudaErrorInvalidValue;
        if (const cudaError_t e = check_device(s, current_device)) return e;
        *total = device_memory;
        *free = device_memory - device_used(s, current_device);
        return cudaSuccess;
    });
}

cudaError_t cudaDeviceSynchronize(void) {
    return record({.name = "cudaDeviceSynchronize"}, [](state& s, call&) {
        if (const cudaError_t e = check_device(s, current_device)) return e;
        release_over_threshold(s, current_device);
        return cudaSuccess;
    });
}

// ---- streams

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
    return record({.name = "cudaStreamCreateWithFlags"}, [=](state& s, call& c) {
        if (pStream == nullptr || (flags & ~unsigned{cudaStreamNonBlocking}) != 0) return cudaErrorInvalidValue;
        if (const cudaError_t e = check_device(s, current_device)) return e;
        *pStream = &make_handle(s, s.streams, handle_kind::stream, current_device);
        c.stream = *pStream;
        return cudaSuccess;
    });
}

cudaError_t cudaStreamCreate(cudaStream_t* pStream) {
    return record({.name = "cudaStreamCreate"}, [=](state& s, call& c) {
        if (pStream == nullptr) return cudaErrorInvalidValue;
        if (const cudaError_t e = check_device(s, current_device)) return e;
        *pStream = &make_handle(s, s.streams, handle_kind::stream, current_device);
        c.stream = *pStream;
        return cudaSuccess;
    });
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
    return record({.name = "cudaStreamDestroy", .stream = stream}, [=](state& s, call&) {
        auto* st = find_handle<CUstream_st>(s, stream, handle_kind::stream);
        if (st == nullptr) return cudaErrorInvalidResourceHandle;
        st->destroyed = true;
        return cudaSuccess;
    });
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
    return record({.name = "cudaStreamSynchronize", .stream = stream}, [=](state& s, call&) {
        int device = 0;
        if (const cudaError_t e = stream_device(s, stream, device)) return e;
        release_over_threshold(s, device);
        return cudaSuccess;
    });
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
    return record({.name = "cudaStreamQuery", .stream = stream}, [=](state& s, call&) {
        int device = 0;
        return stream_device(s, stream, device);  // all work is done at once: never cudaErrorNotReady
    });
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int) {
    return record({.name = "cudaStreamWaitEvent", .stream = stream, .event = event}, [=](state& s, call&) {
        int device = 0;
        if (const cudaError_t e = stream_device(s, stream, device)) return e;
        // Waiting on another device's event is allowed.
        return find_handle<CUevent_st>(s, event, handle_kind::event) ? cudaSuccess : cudaErrorInvalidResourceHandle;
    });
}

// ---- events

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
    return record({.name = "cudaEventCreateWithFlags"}, [=](state& s, call& c) {
        constexpr unsigned known = cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
        if (event == nullptr || (flags & ~known) != 0 ||
            ((flags & cudaEventInterprocess) != 0 && (flags & cudaEventDisableTiming) == 0))
            return cudaErrorInvalidValue;
        if (const cudaError_t e = check_device(s, current_device)) return e;
        auto& created = make_handle(s, s.events, handle_kind::event, current_device);
        created.flags = flags;
        *event = &created;
        c.event = *event;
        return cudaSuccess;
    });
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
    return record({.name = "cudaEventCreate"}, [=](state& s, call& c) {
        if (event == nullptr) return cudaErrorInvalidValue;
        if (const cudaError_t e = check_device(s, current_device)) return e;
        *event = &make_handle(s, s.events, handle_kind::event, current_device);
        c.event = *event;
        return cudaSuccess;
    });
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
    return record({.name = "cudaEventRecord", .stream = stream, .event = event}, [=](state& s, call&) {
        auto* ev = find_handle<CUevent_st>(s, event, handle_kind::event);
        if (ev == nullptr) return cudaErrorInvalidResourceHandle;
        int device = 0;
        if (const cudaError_t e = stream_device(s, stream, device)) return e;
        if (device != ev->device) return cudaErrorInvalidResourceHandle;  // event and stream: one device
        ev->recorded = true;
        return cudaSuccess;
    });
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
    return record({.name = "cudaEventDestroy", .event = event}, [=](state& s, call&) {
        auto* ev = find_handle<CUevent_st>(s, event, handle_kind::event);
        if (ev == nullptr) return cudaErrorInvalidResourceHandle;
        ev->destroyed = true;
        return cudaSuccess;
    });
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
    return record({.name = "cudaEventSynchronize", .event = event}, [=](state& s, call&) {
        const auto* ev = find_handle<CUevent_st>(s, event, handle_kind::event);
        if (ev == nullptr) return cudaErrorInvalidResourceHandle;
        release_over_threshold(s, ev->device);
        return cudaSuccess;
    });
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
    return record({.name = "cudaEventQuery", .event = event}, [=](state& s, call&) {
        return find_handle<CUevent_st>(s, event, handle_kind::event) ? cudaSuccess : cudaErrorInvalidResourceHandle;
    });
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
    return record({.name = "cudaEventElapsedTime", .event = end}, [=](state& s, call&) {
        if (ms == nullptr) return cudaErrorInvalidValue;
        const auto* a = find_handle<CUevent_st>(s, start, handle_kind::event);
        const auto* b = find_handle<CUevent_st>(s, end, handle_kind::event);
        const auto timed = [](const CUevent_st* e) {
            return e != nullptr && e->recorded && (e->flags & cudaEventDisableTiming) == 0;
        };
        if (!timed(a) || !timed(b) || a->device != b->device) return cudaErrorInvalidResourceHandle;
        *ms = 0.0f;  // no time passes here
        return cudaSuccess;
    });
}

// ---- memory pools

cudaError_t cudaMemPoolCreate(cudaMemPool_t* memPool, const cudaMemPoolProps* poolProps) {
    const int location = poolProps != nullptr ? poolProps->location.id : -1;
    return record({.name = "cudaMemPoolCreate", .ordinal = location}, [=](state& s, call& c) {
        if (memPool == nullptr || poolProps == nullptr || poolProps->allocType != cudaMemAllocationTypePinned ||
            poolProps->location.type != cudaMemLocationTypeDevice)  // device pools only, here
            return cudaErrorInvalidValue;
        if (const cudaError_t e = check_device(s, location)) return e;
        auto& pool = make_handle(s, s.pools, handle_kind::pool, location);
        pool.max_size = poolProps->maxSize;
        *memPool = &pool;
        c.pool = *memPool;
        return cudaSuccess;
    });
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool) {
    return record({.name = "cudaMemPoolDestroy", .pool = memPool}, [=](state& s, call&) {
        auto* pool = find_handle<CUmemPoolHandle_st>(s, memPool, handle_kind::pool);
        if (pool == nullptr || pool->is_default) return cudaErrorInvalidValue;
        // The runtime frees the cache now and the rest as its allocations come back.
        pool->destroyed = true;
        pool->reserved = pool->used;
        auto& device = s.devices[static_cast<std::size_t>(pool->device)];
        if (device.current_pool == pool) device.current_pool = device.default_pool;
        return cudaSuccess;
    });
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, cudaMemPoolAttr attr, void* value) {
    return record({.name = "cudaMemPoolSetAttribute", .pool = memPool}, [=](state& s, call&) {
        auto* pool = find_handle<CUmemPoolHandle_st>(s, memPool, handle_kind::pool);
        if (pool == nullptr || value == nullptr) return cudaErrorInvalidValue;
        const auto v = [value] { return *static_cast<const std::uint64_t*>(value); };  // the reuse flags are ints
        switch (attr) {
        case cudaMemPoolReuseFollowEventDependencies:
        case cudaMemPoolReuseAllowOpportunistic:
        case cudaMemPoolReuseAllowInternalDependencies:
            pool->reuse[attr - cudaMemPoolReuseFollowEventDependencies] = *static_cast<const int*>(value);
            return cudaSuccess;
        case cudaMemPoolAttrReleaseThreshold: pool->release_threshold = v(); return cudaSuccess;
        case cudaMemPoolAttrReservedMemHigh:  // only a reset to the current value is allowed
            if (v() != 0) return cudaErrorInvalidValue;
            pool->reserved_high = pool->reserved;
            return cudaSuccess;
        case cudaMemPoolAttrUsedMemHigh:
            if (v() != 0) return cudaErrorInvalidValue;
            pool->used_high = pool->used;
            return cudaSuccess;
        default: return cudaErrorInvalidValue;  // the current figures are read-only
        }
    });
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, cudaMemPoolAttr attr, void* value) {
    return record({.name = "cudaMemPoolGetAttribute", .pool = memPool}, [=](state& s, call&) {
        const auto* pool = find_handle<CUmemPoolHandle_st>(s, memPool, handle_kind::pool);
        if (pool == nullptr || value == nullptr) return cudaErrorInvalidValue;
        auto* out = static_cast<std::uint64_t*>(value);
        switch (attr) {
        case cudaMemPoolReuseFollowEventDependencies:
        case cudaMemPoolReuseAllowOpportunistic:
        case cudaMemPoolReuseAllowInternalDependencies:
            *static_cast<int*>(value) = pool->reuse[attr - cudaMemPoolReuseFollowEventDependencies];
            return cudaSuccess;
        case cudaMemPoolAttrReleaseThreshold: *out = pool->release_threshold; return cudaSuccess;
        case cudaMemPoolAttrReservedMemCurrent: *out = pool->reserved; return cudaSuccess;
        case cudaMemPoolAttrReservedMemHigh: *out = pool->reserved_high; return cudaSuccess;
        case cudaMemPoolAttrUsedMemCurrent: *out = pool->used; return cudaSuccess;
        case cudaMemPoolAttrUsedMemHigh: *out = pool->used_high; return cudaSuccess;
        default: return cudaErrorInvalidValue;
        }
    });
}

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep) {
    return record({.name = "cudaMemPoolTrimTo", .pool = memPool, .bytes = minBytesToKeep}, [=](state& s, call&) {
        auto* pool = find_handle<CUmemPoolHandle_st>(s, memPool, handle_kind::pool);
        if (pool == nullptr) return cudaErrorInvalidValue;
        pool->reserved = std::max<std::uint64_t>(pool->used, std::min<std::uint64_t>(pool->reserved, minBytesToKeep));
        return cudaSuccess;
    });
}

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* memPool, int device) {
    return record({.name = "cudaDeviceGetDefaultMemPool", .ordinal = device}, [=](state& s, call& c) {
        if (memPool == nullptr) return cudaErrorInvalidValue;
        if (const cudaError_t e = check_device(s, device)) return e;
        *memPool = s.devices[static_cast<std::size_t>(device)].default_pool;
        c.pool = *memPool;
        return cudaSuccess;
    });
}

cudaError_t cudaDeviceGetMemPool(cudaMemPool_t* memPool, int device) {
    return record({.name = "cudaDeviceGetMemPool", .ordinal = device}, [=](state& s, call& c) {
        if (memPool == nullptr) return cudaErrorInvalidValue;
        if (const cudaError_t e = check_device(s, device)) return e;
        *memPool = s.devices[static_cast<std::size_t>(device)].current_pool;
        c.pool = *memPool;
        return cudaSuccess;
    });
}

cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t memPool) {
    return record({.name = "cudaDeviceSetMemPool", .ordinal = device, .pool = memPool}, [=](state& s, call&) {
        if (const cudaError_t e = check_device(s, device)) return e;
        auto* pool = find_handle<CUmemPoolHandle_st>(s, memPool, handle_kind::pool);
        if (pool == nullptr || pool->device != device) return cudaErrorInvalidValue;
        s.devices[static_cast<std::size_t>(device)].current_pool = pool;
        return cudaSuccess;
    });
}

// ---- device memory

cudaError_t cudaMalloc(void** devPtr, size_t size) {
    return record({.name = "cudaMalloc", .bytes = size}, [=](state& s, call& c) {
        if (const cudaError_t e = check_device(s, current_device)) return e;
        return allocate_device(s, c, devPtr, size, current_device, nullptr);
    });
}

cudaError_t cudaFree(void* devPtr) {
    return record({.name = "cudaFree", .dst = devPtr}, [=](state& s, call& c) { return free_device(s, c, devPtr); });
}

cudaError_t cudaMallocAsync(void** devPtr, size_t size, cudaStream_t hStream) {
    return record({.name = "cudaMallocAsync", .stream = hStream, .bytes = size}, [=](state& s, call& c) {
        int device = 0;
        if (const cudaError_t e = stream_device(s, hStream, device)) return e;
        auto* pool = s.devices[static_cast<std::size_t>(device)].current_pool;
        c.pool = pool;
        return allocate_device(s, c, devPtr, size, device, pool);
    });
}

cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream) {
    return record({.name = "cudaMallocFromPoolAsync", .stream = stream, .pool = memPool, .bytes = size},
                  [=](state& s, call& c) {
                      int device = 0;
                      if (const cudaError_t e = stream_device(s, stream, device)) return e;
                      auto* pool = find_handle<CUmemPoolHandle_st>(s, memPool, handle_kind::pool);
                      if (pool == nullptr) return cudaErrorInvalidValue;
                      return allocate_device(s, c, ptr, size, pool->device, pool);
                  });
}

cudaError_t cudaFreeAsync(void* devPtr, cudaStream_t hStream) {
    return record({.name = "cudaFreeAsync", .stream = hStream, .dst = devPtr}, [=](state& s, call& c) {
        int device = 0;
        if (const cudaError_t e = stream_device(s, hStream, device)) return e;
        return free_device(s, c, devPtr);
    });
}

// ---- page-locked host memory

cudaError_t cudaMallocHost(void** ptr, size_t size) {
    return record({.name = "cudaMallocHost", .bytes = size}, [=](state& s, call& c) {
        if (ptr == nullptr) return cudaErrorInvalidValue;
        if (const cudaError_t e = check_device(s, current_device)) return e;
        *ptr = size == 0 ? nullptr : take_memory(s, memory_kind::pinned, size, current_device, nullptr);
        if (size != 0 && *ptr == nullptr) return cudaErrorMemoryAllocation;
        c.dst = *ptr;
        return cudaSuccess;
    });
}

cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
    return record({.name = "cudaHostAlloc", .bytes = size}, [=](state& s, call& c) {
        constexpr unsigned known = cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined;
        if (pHost == nullptr || (flags & ~known) != 0) return cudaErrorInvalidValue;
        if (const cudaError_t e = check_device(s, current_device)) return e;
        *pHost = size == 0 ? nullptr : take_memory(s, memory_kind::pinned, size, current_device, nullptr);
        if (size != 0 && *pHost == nullptr) return cudaErrorMemoryAllocation;
        c.dst = *pHost;
        return cudaSuccess;
    });
}

cudaError_t cudaFreeHost(void* ptr) {
    return record({.name = "cudaFreeHost", .dst = ptr}, [=](state& s, call& c) {
        if (ptr == nullptr) return cudaSuccess;
        const auto it = s.memory.find(reinterpret_cast<std::uintptr_t>(ptr));
        if (it == s.memory.end() || it->second.kind != memory_kind::pinned) return cudaErrorInvalidValue;
        c.bytes = it->second.size;
        std::free(ptr);
        s.memory.erase(it);
        return cudaSuccess;
    });
}

cudaError_t cudaHostRegister(void* ptr, size_t size, unsigned int flags) {
    return record({.name = "cudaHostRegister", .dst = ptr, .bytes = size}, [=](state& s, call&) {
        constexpr unsigned known = cudaHostRegisterPortable | cudaHostRegisterMapped | cudaHostRegisterIoMemory |
                                   cudaHostRegisterReadOnly;
        if (ptr == nullptr || size == 0 || (flags & ~known) != 0) return cudaErrorInvalidValue;
        if (const cudaError_t e = check_device(s, current_device)) return e;
        const auto address = reinterpret_cast<std::uintptr_t>(ptr);
        // The last range starting before the end is the only one that can overlap.
        if (auto it = s.memory.lower_bound(address + size); it != s.memory.begin()) {
            --it;
            if (it->first + it->second.size > address)
                return it->second.kind == memory_kind::device ? cudaErrorInvalidValue
                                                              : cudaErrorHostMemoryAlreadyRegistered;
        }
        s.memory.emplace(address, allocation{memory_kind::registered, s.next_id++, current_device, size, 0, nullptr});
        return cudaSuccess;
    });
}

cudaError_t cudaHostUnregister(void* ptr) {
    return record({.name = "cudaHostUnregister", .dst = ptr}, [=](state& s, call&) {
        const auto it = s.memory.find(reinterpret_cast<std::uintptr_t>(ptr));
        if (it == s.memory.end() || it->second.kind != memory_kind::registered)
            return cudaErrorHostMemoryNotRegistered;
        s.memory.erase(it);
        return cudaSuccess;
    });
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* ptr) {
    return record({.name = "cudaPointerGetAttributes", .src = ptr}, [=](state& s, call&) {
        if (attributes == nullptr) return cudaErrorInvalidValue;
        *attributes = {};
        auto* p = const_cast<void*>(ptr);
        const auto* entry = containing(s, ptr);
        if (entry == nullptr) {  // what the runtime reports for memory it does not know
            attributes->type = cudaMemoryTypeUnregistered;
            attributes->device = -2;
            attributes->hostPointer = p;
        } else if (entry->second.kind == memory_kind::device) {
            attributes->type = cudaMemoryTypeDevice;
            attributes->device = entry->second.device;
            attributes->devicePointer = p;
        } else {
            attributes->type = cudaMemoryTypeHost;
            attributes->device = entry->second.device;
            attributes->devicePointer = p;  // unified addressing: the same address
            attributes->hostPointer = p;
        }
        return cudaSuccess;
    });
}

// ---- copies and memsets: done at once

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
    return record({.name = "cudaMemcpy", .dst = dst, .src = src, .bytes = count}, [=](state& s, call&) {
        if (const cudaError_t e = check_copy(s, dst, src, count, kind)) return e;
        if (count != 0) std::memmove(dst, src, count);
        return cudaSuccess;
    });
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
    return record({.name = "cudaMemcpyAsync", .stream = stream, .dst = dst, .src = src, .bytes = count},
                  [=](state& s, call&) {
                      int device = 0;
                      if (const cudaError_t e = stream_device(s, stream, device)) return e;
                      if (const cudaError_t e = check_copy(s, dst, src, count, kind)) return e;
                      if (count != 0) std::memmove(dst, src, count);
                      return cudaSuccess;
                  });
}

cudaError_t cudaMemcpyPeerAsync(void* dst, int dstDevice, const void* src, int srcDevice, size_t count,
                                cudaStream_t stream) {
    return record({.name = "cudaMemcpyPeerAsync", .ordinal = dstDevice, .stream = stream, .dst = dst, .src = src,
                   .bytes = count},
                  [=](state& s, call&) {
                      int device = 0;
                      if (const cudaError_t e = stream_device(s, stream, device)) return e;
                      if (const cudaError_t e = check_device(s, dstDevice)) return e;
                      if (const cudaError_t e = check_device(s, srcDevice)) return e;
                      if (count == 0) return cudaSuccess;
                      // Each pointer must be device memory of the device named with it.
                      const auto on = [&](const void* p, int d) {
                          const auto* entry = containing(s, p);
                          return classify(s, p, count) == region::device && entry->second.device == d;
                      };
                      if (!on(dst, dstDevice) || !on(src, srcDevice)) return cudaErrorInvalidValue;
                      std::memmove(dst, src, count);
                      return cudaSuccess;
                  });
}

cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
    return record({.name = "cudaMemsetAsync", .stream = stream, .dst = devPtr, .bytes = count}, [=](state& s, call&) {
        int device = 0;
        if (const cudaError_t e = stream_device(s, stream, device)) return e;
        if (count == 0) return cudaSuccess;
        const region r = devPtr == nullptr ? region::host : classify(s, devPtr, count);
        if (r != region::device && r != region::pinned) return cudaErrorInvalidValue;
        std::memset(devPtr, value, count);
        return cudaSuccess;
    });
}

cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
    return record({.name = "cudaMemset", .dst = devPtr, .bytes = count}, [=](state& s, call&) {
        if (count == 0) return cudaSuccess;
        const region r = devPtr == nullptr ? region::host : classify(s, devPtr, count);
        if (r != region::device && r != region::pinned) return cudaErrorInvalidValue;
        std::memset(devPtr, value, count);
        return cudaSuccess;
    });
}

// ---- kernels: recorded, never run

cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func) {
    return record({.name = "cudaFuncGetAttributes", .function = func}, [=](state&, call&) {
        if (attr == nullptr) return cudaErrorInvalidValue;
        if (func == nullptr) return cudaErrorInvalidDeviceFunction;
        *attr = {};
        attr->maxThreadsPerBlock = 1024;
        attr->numRegs = 32;
        attr->ptxVersion = 90;
        attr->binaryVersion = 90;
        attr->maxDynamicSharedSizeBytes = 48 * 1024;
        attr->preferredShmemCarveout = -1;
        return cudaSuccess;
    });
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, const void* func, int blockSize,
                                                          size_t dynamicSMemSize) {
    return record({.name = "cudaOccupancyMaxActiveBlocksPerMultiprocessor", .function = func}, [=](state&, call&) {
        return occupancy(numBlocks, func, blockSize, dynamicSMemSize);
    });
}

// What the C++ template cudaOccupancyMaxActiveBlocksPerMultiprocessor(kernel, ...) of cuda_runtime.h calls.
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* numBlocks, const void* func, int blockSize,
                                                                   size_t dynamicSMemSize, unsigned int) {
    return record({.name = "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", .function = func},
                  [=](state&, call&) { return occupancy(numBlocks, func, blockSize, dynamicSMemSize); });
}

cudaError_t cudaLaunchKernel(const void* func, dim3 gridDim, dim3 blockDim, void**, size_t sharedMem,
                             cudaStream_t stream) {
    std::string kernel;
    {
        state& s = the_state();
        std::lock_guard lock(s.mutex);
        kernel = registered_name(s, func);
    }
    return record({.name = "cudaLaunchKernel", .stream = stream, .bytes = sharedMem, .function = func,
                   .kernel = std::move(kernel), .grid = gridDim, .block = blockDim},
                  [](state& s, call& c) { return launch(s, c); });
}

// ---- what nvcc's generated host code calls -----------------------------------------------

void** __cudaRegisterFatBinary(void* fatCubin) {
    state& s = the_state();
    std::lock_guard lock(s.mutex);
    return &s.fat_binaries.emplace_back(fatCubin);
}

void __cudaRegisterFatBinaryEnd(void**) {}

void __cudaUnregisterFatBinary(void**) {}

char __cudaInitModule(void**) { return 1; }

void __cudaRegisterFunction(void**, const char* hostFun, char*, const char* deviceName, int, uint3*, uint3*, dim3*,
                            dim3*, int*) {
    state& s = the_state();
    std::lock_guard lock(s.mutex);
    auto& kernel = s.kernels[hostFun];
    kernel.host_function = hostFun;
    kernel.name = deviceName;
}

void __cudaRegisterVar(void**, char*, char*, const char*, int, size_t, int, int) {}

// kernel<<<grid, block, shared, stream>>>(args) pushes its configuration, and the
// kernel's host stub pops it and launches.
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, struct CUstream_st* stream) {
    launch_configs.push_back({gridDim, blockDim, sharedMem, stream});
    return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3* gridDim, dim3* blockDim, size_t* sharedMem, void* stream) {
    if (launch_configs.empty()) return cudaErrorInvalidConfiguration;
    const launch_config config = launch_configs.back();
    launch_configs.pop_back();
    *gridDim = config.grid;
    *blockDim = config.block;
    *sharedMem = config.shared;
    *static_cast<cudaStream_t*>(stream) = config.stream;
    return cudaSuccess;
}

cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* hostFun) {
    state& s = the_state();
    std::lock_guard lock(s.mutex);
    auto& k = s.kernels[hostFun];
    k.host_function = hostFun;
    *kernel = &k;
    return cudaSuccess;
}

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void**, size_t sharedMem,
                               cudaStream_t stream) {
    std::string name;
    const void* function = nullptr;
    if (kernel != nullptr) {
        state& s = the_state();
        std::lock_guard lock(s.mutex);
        function = kernel->host_function;
        name = kernel->name;
    }
    return record({.name = "cudaLaunchKernel", .stream = stream, .bytes = sharedMem, .function = function,
                   .kernel = std::move(name), .grid = gridDim, .block = blockDim},
                  [](state& s, call& c) { return launch(s, c); });
}

}  // extern "C"

// ---- the recorder's API ----------------------------------------------------------------

namespace devtensor_fake {

std::vector<call> calls() {
    state& s = the_state();
    std::lock_guard lock(s.mutex);
    return s.log;
}

void reset() {
    state& s = the_state();
    std::lock_guard lock(s.mutex);
    s.log.clear();
    s.failures.clear();
}

void fail_next(std::string name, cudaError_t error) {
    state& s = the_state();
    std::lock_guard lock(s.mutex);
    s.failures.emplace_back(std::move(name), error);
}

void set_device_count(int count) {
    state& s = the_state();
    std::lock_guard lock(s.mutex);
    set_devices(s, count);
}

cudaError_t last_error() { return ::last_error; }

bool is_pinned(const void* p) {
    state& s = the_state();
    std::lock_guard lock(s.mutex);
    const auto* entry = containing(s, p);
    return entry != nullptr && entry->second.kind != memory_kind::device;
}

int device_of(const void* handle_or_pointer) {
    state& s = the_state();
    std::lock_guard lock(s.mutex);
    if (const auto it = s.handles.find(handle_or_pointer); it != s.handles.end()) return it->second->device;
    const auto* entry = containing(s, handle_or_pointer);
    return entry != nullptr && entry->second.kind == memory_kind::device ? entry->second.device : -1;
}

std::size_t live_allocations() {
    state& s = the_state();
    std::lock_guard lock(s.mutex);
    return static_cast<std::size_t>(std::count_if(s.memory.begin(), s.memory.end(), [](const auto& entry) {
        return entry.second.kind == memory_kind::device;
    }));
}

std::size_t live_allocations(const void* pool) {
    state& s = the_state();
    std::lock_guard lock(s.mutex);
    return static_cast<std::size_t>(std::count_if(s.memory.begin(), s.memory.end(), [pool](const auto& entry) {
        return entry.second.kind == memory_kind::device && entry.second.pool == pool;
    }));
}

std::ostream& operator<<(std::ostream& out, const call& c) {
    std::ostringstream line;  // built apart, so that a stream's flags do not change it
    {
        state& s = the_state();
        std::lock_guard lock(s.mutex);
        line << c.name << " [cuda:" << c.device << ']';
        if (c.ordinal != -1) line << " ordinal=" << c.ordinal;
        if (c.function != nullptr) {
            line << " function=" << c.function;
            if (!c.kernel.empty()) line << " (" << c.kernel << ')';
        }
        if (c.name == "cudaLaunchKernel")
            line << " grid=(" << c.grid.x << ',' << c.grid.y << ',' << c.grid.z << ") block=(" << c.block.x << ','
                 << c.block.y << ',' << c.block.z << ')';
        if (c.dst != nullptr) line << " dst=" << label(s, c.dst, c.dst_device);
        if (c.src != nullptr) line << " src=" << label(s, c.src, c.src_device);
        if (c.bytes != 0) line << " bytes=" << c.bytes;
        if (c.stream != nullptr) line << " stream=" << label(s, c.stream, -1);
        if (c.event != nullptr) line << " event=" << label(s, c.event, -1);
        if (c.pool != nullptr) line << " pool=" << label(s, c.pool, -1);
    }
    const error_text* e = find_error(c.error);
    line << " -> " << (e != nullptr ? e->name : "unrecognized error code");
    return out << line.str();
}

}  // namespace devtensor_fake
