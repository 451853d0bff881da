// Which devices exist: cuda_device_count, try_gpu, try_all_gpus, properties.
// Needs only the CUDA runtime (or nothing, in a CPU-only program).
#pragma once

#include <devtensor/backend/cuda/runtime.hpp>
#include <devtensor/config.hpp>
#include <devtensor/device.hpp>
#include <devtensor/error.hpp>

#include <cstddef>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#if defined(__unix__)
#  include <unistd.h>  // sysconf
#endif

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
    if (r.status != cudaSuccess)
        return std::string(cudaGetErrorName(r.status)) + ": " + cudaGetErrorString(r.status);
    if (r.count == 0) return "no CUDA device found";
    return "";
#else
    return "built without the CUDA runtime (link devtensor::cuda)";
#endif
}

/// cuda:i if it exists, else cpu.
inline device try_gpu(int i = 0) {
    if (i >= 0 && i < cuda_device_count()) return device(device_kind::cuda, i);
    return device(device_kind::cpu);
}

/// Every CUDA device, or {cpu} when there is none.
inline std::vector<device> try_all_gpus() {
    std::vector<device> devices;
    for (int i = 0; i < cuda_device_count(); ++i) devices.emplace_back(device_kind::cuda, i);
    if (devices.empty()) devices.emplace_back(device_kind::cpu);
    return devices;
}

/// Throws device_unavailable unless `d` can be used in this process.
inline void require_available(const device& d) {
    if (d.is_cpu()) return;
    const int n = cuda_device_count();
    if (d.index() < n) return;
    std::string message = to_string(d) + " is not available: " + std::to_string(n) +
                          " CUDA device" + (n == 1 ? "" : "s") + " found";
    if (n == 0) message += " (" + cuda_unavailable_reason() + ")";
    throw device_unavailable(message);
}

/// What a device is: the nvidia-smi columns, and for the CPU its model, cores and RAM.
struct device_properties {
    device dev = device(device_kind::cpu);
    std::string name;
    std::size_t total_memory = 0;  ///< bytes
    std::size_t free_memory = 0;   ///< bytes, as the OS or driver sees it now
    int compute_major = 0, compute_minor = 0;
    int multiprocessors = 0;       ///< CUDA: SMs; CPU: logical cores
    int driver_version = 0, runtime_version = 0;  ///< CUDA only, e.g. 13000
    int clock_khz = 0;             ///< CUDA only
    int memory_bus_width = 0;      ///< CUDA only, bits
};

namespace detail {
/// A "key : value" line of a /proc file, or "" when absent.
inline std::string proc_field(const char* path, const std::string& key) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        if (line.compare(0, key.size(), key) != 0) continue;
        const auto colon = line.find(':');
        if (colon == std::string::npos) continue;
        auto value = line.substr(colon + 1);
        value.erase(0, value.find_first_not_of(" \t"));
        return value;
    }
    return "";
}

inline device_properties cpu_properties() {
    device_properties p;
    p.name = proc_field("/proc/cpuinfo", "model name");
    if (p.name.empty()) p.name = "CPU";
    p.multiprocessors = static_cast<int>(std::thread::hardware_concurrency());
#if defined(__unix__)
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    p.total_memory = static_cast<std::size_t>(sysconf(_SC_PHYS_PAGES)) * page;
    p.free_memory = static_cast<std::size_t>(sysconf(_SC_AVPHYS_PAGES)) * page;
    const std::string available = proc_field("/proc/meminfo", "MemAvailable");  // "123 kB"
    if (!available.empty()) p.free_memory = std::stoull(available) * 1024;
#endif
    return p;
}
}  // namespace detail

/// Properties of any device; throws device_unavailable for an absent GPU.
template <Device D>
device_properties properties(const D& d) {
    const device dev(d);
    if (dev.is_cpu()) return detail::cpu_properties();
    require_available(dev);
    device_properties p;
    p.dev = dev;
#if DEVTENSOR_CUDA_RUNTIME
    cudaDeviceProp prop{};
    DEVTENSOR_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev.index()));
    p.name = prop.name;
    p.compute_major = prop.major;
    p.compute_minor = prop.minor;
    p.multiprocessors = prop.multiProcessorCount;
    p.memory_bus_width = prop.memoryBusWidth;
    DEVTENSOR_CUDA_CHECK(cudaDeviceGetAttribute(&p.clock_khz, cudaDevAttrClockRate, dev.index()));
    DEVTENSOR_CUDA_CHECK(cudaDriverGetVersion(&p.driver_version));
    DEVTENSOR_CUDA_CHECK(cudaRuntimeGetVersion(&p.runtime_version));
    detail::cudart::device_guard guard(dev.index());
    DEVTENSOR_CUDA_CHECK(cudaMemGetInfo(&p.free_memory, &p.total_memory));
#endif
    return p;
}

}  // namespace devtensor
