// Which devices exist: cuda_device_count, try_gpu, try_all_gpus, properties.
// Needs only the CUDA runtime (or nothing, in a CPU-only program). Utilisation,
// temperature and power come from NVML, the driver's libnvidia-ml.so.1, loaded
// at run time where it is present: never a link dependency.
#pragma once

#include <devtensor/backend/cuda/runtime.hpp>
#include <devtensor/device_count.hpp>
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
#if DEVTENSOR_CUDA_RUNTIME && defined(__linux__)
#  include <dlfcn.h>  // dlopen: NVML is optional at run time
#endif

namespace devtensor {

/// The CUDA runtime's version (13000 for 13.0); 0 without the CUDA runtime.
inline int cuda_runtime_version() noexcept {
    int version = 0;
#if DEVTENSOR_CUDA_RUNTIME
    if (cudaRuntimeGetVersion(&version) != cudaSuccess) {
        (void)cudaGetLastError();  // an ignored error is never left for the next call
        version = 0;
    }
#endif
    return version;
}

/// The newest CUDA version the installed driver supports (13000 for 13.0); 0 without a
/// driver or without the CUDA runtime.
inline int cuda_driver_version() noexcept {
    int version = 0;
#if DEVTENSOR_CUDA_RUNTIME
    if (cudaDriverGetVersion(&version) != cudaSuccess) {
        (void)cudaGetLastError();  // an ignored error is never left for the next call
        version = 0;
    }
#endif
    return version;
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
    // From NVML where it is loaded (see nvml_unavailable_reason()); -1 / "" otherwise.
    int utilization_gpu = -1;      ///< percent of the last sample period a kernel ran
    int utilization_memory = -1;   ///< percent of the last sample period memory was read or written
    int temperature_c = -1;        ///< GPU core, degrees Celsius
    int power_mw = -1;             ///< power draw, milliwatts
    int power_limit_mw = -1;       ///< enforced power limit, milliwatts
    std::string driver_release;    ///< the driver's own version, e.g. "580.65.06"
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

#if DEVTENSOR_CUDA_RUNTIME && defined(__linux__)
/// NVML's entry points, resolved once from libnvidia-ml.so.1 when it is present.
/// Declared here rather than taken from nvml.h, which not every toolkit installs.
class nvml_library {
public:
    using device_t = struct nvml_device_st*;
    struct utilization_t {
        unsigned gpu, memory;
    };

    static const nvml_library& instance() {
        static const nvml_library lib;
        return lib;
    }
    bool loaded() const noexcept { return reason_.empty(); }
    const std::string& reason() const noexcept { return reason_; }

    /// Fills p's NVML fields for the GPU at `pci_bus_id`; leaves them at -1 where
    /// NVML says "not supported" (a MIG slice, a board without a power sensor).
    void fill(device_properties& p, const char* pci_bus_id) const {
        if (!loaded()) return;
        p.driver_release = driver_release_;
        device_t dev{};
        if (get_handle_(pci_bus_id, &dev) != 0) return;
        utilization_t u{};
        if (get_utilization_(dev, &u) == 0) {
            p.utilization_gpu = static_cast<int>(u.gpu);
            p.utilization_memory = static_cast<int>(u.memory);
        }
        unsigned value = 0;
        if (get_temperature_(dev, 0 /* NVML_TEMPERATURE_GPU */, &value) == 0)
            p.temperature_c = static_cast<int>(value);
        if (get_power_(dev, &value) == 0) p.power_mw = static_cast<int>(value);
        if (get_power_limit_(dev, &value) == 0) p.power_limit_mw = static_cast<int>(value);
    }

private:
    nvml_library() {
        void* handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (handle == nullptr) {
            const char* why = dlerror();
            reason_ = std::string("NVML not loaded: ") + (why ? why : "libnvidia-ml.so.1 not found");
            return;
        }
        const bool resolved = resolve(handle, "nvmlInit_v2", init_) &&
                              resolve(handle, "nvmlSystemGetDriverVersion", driver_version_) &&
                              resolve(handle, "nvmlDeviceGetHandleByPciBusId_v2", get_handle_) &&
                              resolve(handle, "nvmlDeviceGetUtilizationRates", get_utilization_) &&
                              resolve(handle, "nvmlDeviceGetTemperature", get_temperature_) &&
                              resolve(handle, "nvmlDeviceGetPowerUsage", get_power_) &&
                              resolve(handle, "nvmlDeviceGetEnforcedPowerLimit", get_power_limit_);
        if (!resolved) {
            reason_ = "libnvidia-ml.so.1 lacks an NVML function devtensor uses";
            return;
        }
        if (const int status = init_(); status != 0) {
            reason_ = "nvmlInit_v2 failed with NVML error " + std::to_string(status);
            return;
        }
        char version[96] = {};
        if (driver_version_(version, sizeof version) == 0) driver_release_ = version;
        // never unloaded nor shut down: other threads may still ask, up to exit
    }

    template <class F>
    static bool resolve(void* handle, const char* name, F*& f) {
        f = reinterpret_cast<F*>(dlsym(handle, name));
        return f != nullptr;
    }

    int (*init_)() = nullptr;
    int (*driver_version_)(char*, unsigned) = nullptr;
    int (*get_handle_)(const char*, device_t*) = nullptr;
    int (*get_utilization_)(device_t, utilization_t*) = nullptr;
    int (*get_temperature_)(device_t, int, unsigned*) = nullptr;
    int (*get_power_)(device_t, unsigned*) = nullptr;
    int (*get_power_limit_)(device_t, unsigned*) = nullptr;
    std::string reason_, driver_release_;
};
#endif

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

/// "" when NVML (the driver's libnvidia-ml.so.1) is loaded, so that properties() of a
/// GPU include utilisation, temperature and power; otherwise why not.
inline std::string nvml_unavailable_reason() {
#if DEVTENSOR_CUDA_RUNTIME && defined(__linux__)
    return detail::nvml_library::instance().reason();
#elif DEVTENSOR_CUDA_RUNTIME
    return "devtensor loads NVML on Linux only";
#else
    return "built without the CUDA runtime (link devtensor::cuda)";
#endif
}

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
#  if defined(__linux__)
    char pci_bus_id[32] = {};  // NVML numbers GPUs its own way: match them by PCI address
    if (cudaDeviceGetPCIBusId(pci_bus_id, sizeof pci_bus_id, dev.index()) == cudaSuccess)
        detail::nvml_library::instance().fill(p, pci_bus_id);
    else
        (void)cudaGetLastError();
#  endif
#endif
    return p;
}

}  // namespace devtensor
