// One allocator per device kind, with PyTorch's memory statistics:
// memory_allocated, max_memory_allocated, reset_peak_memory_stats,
// memory_reserved, empty_cache, and memory_system_allocations. CUDA memory comes from devtensor's own stream-ordered pool,
// host memory from the caching host pool (detail/host_pool.hpp).
#pragma once

#include <devtensor/backend/cuda/runtime.hpp>
#include <devtensor/config.hpp>
#include <devtensor/device.hpp>
#include <devtensor/device_count.hpp>  // require_available
#include <devtensor/detail/allocation_registry.hpp>
#include <devtensor/detail/host_pool.hpp>
#include <devtensor/detail/per_device.hpp>
#include <devtensor/error.hpp>
#include <devtensor/origin.hpp>

#if defined(__unix__)
#  include <unistd.h>  // sysconf
#endif

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace devtensor {

namespace detail {

/// Live bytes and their high-water mark for one device; for CUDA, also the pool's
/// growths (the host pool counts its own system allocations).
struct memory_counters {
    std::atomic<std::size_t> allocated{0};
    std::atomic<std::size_t> peak{0};
    std::atomic<std::uint64_t> system_allocations{0};
    std::atomic<std::size_t> last_reserved{0};  // the pool's reservation when last seen

    void add(std::size_t bytes) noexcept {
        const std::size_t now = allocated.fetch_add(bytes, std::memory_order_relaxed) + bytes;
        std::size_t old = peak.load(std::memory_order_relaxed);
        while (now > old && !peak.compare_exchange_weak(old, now, std::memory_order_relaxed)) {
        }
    }
    void sub(std::size_t bytes) noexcept { allocated.fetch_sub(bytes, std::memory_order_relaxed); }
};

/// Counters of `d`.
inline memory_counters& counters(const device& d) {
    static per_device<memory_counters> all;
    return all[d];
}

/// "1.50 GiB (1610612736 bytes)"-style figure for messages.
inline std::string format_bytes(std::size_t bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double value = static_cast<double>(bytes);
    int unit = 0;
    while (value >= 1024.0 && unit < 6) {
        value /= 1024.0;
        ++unit;
    }
    char text[64];
    std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.2f %s", value, units[unit]);
    return text;
}

/// Bytes free on `d` as the system reports them (0 when it cannot say).
inline std::size_t free_bytes(const device& d) {
    if (d.is_cpu()) {  // free pages (device_query's free_memory reads /proc; a message needs less)
#if defined(__unix__)
        const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        return pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) : 0;
#else
        return 0;
#endif
    }
    std::size_t free = 0;
#if DEVTENSOR_CUDA_RUNTIME
    std::size_t total = 0;
    cudart::device_guard guard(d.index());
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
        (void)cudaGetLastError();  // a figure for a message: never left for the next call
        free = 0;
    }
#endif
    return free;
}

/// Bytes the allocator of `d` holds cached, free for reuse (0 when it cannot say).
inline std::size_t pool_cached(const device& d);

/// "; the largest live allocations by creation site: 1.00 GiB made by zeros at a.cpp:3
/// (2 tensors), ...": the five sites holding the most of `d`'s memory.
inline std::string largest_sites(const device& d);

/// Throws out_of_memory for `request` ("allocating 4.00 GiB (4294967296 bytes) for zeros at
/// a.cpp:3") on `d`, with the figures DESIGN §4 promises (free, allocated by devtensor,
/// reserved), then what holds the memory (DESIGN §14): the five largest live
/// allocations by creation site and the pool's cached bytes.
[[noreturn]] inline void throw_out_of_memory(const device& d, const std::string& request,
                                             std::size_t free, std::size_t reserved) {
    throw out_of_memory("devtensor: out of memory on " + to_string(d) + " " + request + "; free " +
                        format_bytes(free) + ", allocated by devtensor " +
                        format_bytes(counters(d).allocated.load()) + ", reserved " +
                        format_bytes(reserved) + largest_sites(d) + "; cached by the pool, free to reuse: " +
                        format_bytes(pool_cached(d)));
}

inline std::string allocating(std::size_t bytes, const origin& made = {}) {
    std::string text = "allocating " + format_bytes(bytes) + " (" + std::to_string(bytes) + " bytes)";
    if (made.known()) text += " for " + std::string(made.op);
    if (made.has_site()) text += " at " + to_string(made.site);
    return text;
}

#if DEVTENSOR_CUDA_RUNTIME
/// devtensor's own stream-ordered pool on device `ordinal`, created on first use
/// and kept for the life of the process. Not the device's default pool: its
/// settings (keep freed memory cached) and its statistics are devtensor's alone,
/// whatever other libraries do with cudaMallocAsync or cudaDeviceSetMemPool.
inline cudaMemPool_t cuda_pool(int ordinal) {
    static per_device<cudaMemPool_t> pools;
    return pools.once(ordinal, [ordinal](cudaMemPool_t& pool) {
        cudaMemPoolProps props{};
        props.allocType = cudaMemAllocationTypePinned;
        props.location.type = cudaMemLocationTypeDevice;
        props.location.id = ordinal;
        DEVTENSOR_CUDA_CHECK(cudaMemPoolCreate(&pool, &props));
        std::uint64_t keep_all = UINT64_MAX;
        DEVTENSOR_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
    });
}

inline std::size_t cuda_reserved(int ordinal) {
    std::uint64_t reserved = 0;
    DEVTENSOR_CUDA_CHECK(
        cudaMemPoolGetAttribute(cuda_pool(ordinal), cudaMemPoolAttrReservedMemCurrent, &reserved));
    return static_cast<std::size_t>(reserved);
}

inline void cuda_trim(int ordinal) {
    cudart::synchronize(ordinal);
    DEVTENSOR_CUDA_CHECK(cudaMemPoolTrimTo(cuda_pool(ordinal), 0));
    counters(cuda_device{ordinal}).last_reserved.store(cuda_reserved(ordinal));
}

inline void* cuda_allocate(const device& d, std::size_t bytes, const origin& made) {
    const int ordinal = d.index();
    cudart::device_guard guard(ordinal);
    const cudaStream_t stream = cudart::stream(ordinal);
    const cudaMemPool_t pool = cuda_pool(ordinal);
    void* p = nullptr;
    cudaError_t status = cudaMallocFromPoolAsync(&p, bytes, pool, stream);
    if (status == cudaErrorMemoryAllocation) {  // return the cache, then retry once
        (void)cudaGetLastError();
        cuda_trim(ordinal);
        status = cudaMallocFromPoolAsync(&p, bytes, pool, stream);
    }
    if (status == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        throw_out_of_memory(d, allocating(bytes, made), free_bytes(d), cuda_reserved(ordinal));
    }
    DEVTENSOR_CUDA_CHECK(status);
    // The pool grew (took memory from the driver) when its reservation went up.
    auto& c = counters(d);
    if (const std::size_t now = cuda_reserved(ordinal); now > c.last_reserved.exchange(now)) ++c.system_allocations;
    return p;
}
#endif

/// `bytes` of page-locked host memory (pin_memory), counted as host memory. The
/// CUDA runtime's own allocation: a non_blocking copy from it overlaps the host's
/// work. Freed after every device's queued work, which such a copy may still be.
inline std::shared_ptr<void> allocate_pinned(std::size_t bytes, const origin& made) {
    if (cuda_device_count() == 0)
        throw device_unavailable(std::string("devtensor::tensor::") + made.op +
                                 ": page-locked memory is for copies to a GPU, and there is no GPU here (" +
                                 cuda_unavailable_reason() + ")");
    if (bytes == 0) return std::make_shared<char>();  // an owner, so the empty tensor is defined
    void* p = nullptr;
#if DEVTENSOR_CUDA_RUNTIME
    const cudaError_t status = cudaHostAlloc(&p, bytes, cudaHostAllocPortable);
    if (status == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        throw_out_of_memory(device{}, allocating(bytes, made), free_bytes(device{}), host_pool::instance().reserved());
    }
    DEVTENSOR_CUDA_CHECK(status);
#endif
    counters(device{}).add(bytes);
    return std::shared_ptr<void>(p, [bytes](void* q) noexcept {
        counters(device{}).sub(bytes);
#if DEVTENSOR_CUDA_RUNTIME
        for (int d = 0; d < cuda_device_count(); ++d) {
            try {
                cudart::synchronize(d);
            } catch (...) {  // a dying context at exit: nothing left to wait for
            }
        }
        if (cudaFreeHost(q) != cudaSuccess) (void)cudaGetLastError();
#else
        (void)q;
#endif
    });
}

/// Fault injection for exception-safety tests: how many allocations may still
/// succeed before the next one fails as if the device were full; -1: never.
inline std::atomic<long>& allocations_until_failure() noexcept {
    static std::atomic<long> n{-1};
    return n;
}

}  // namespace detail

/// One live allocation (or, grouped by site, all those made at one call site), as
/// memory_snapshot() lists them: PyTorch's memory snapshot, without Python.
struct allocation_record {
    std::size_t bytes = 0;  ///< of all `count` tensors when grouped
    devtensor::shape shape;  ///< the tensor's (the largest one's when grouped); [] for a bare buffer
    std::string dtype;       ///< "torch.float32"; "" for a bare buffer
    devtensor::origin made;  ///< the op and the user's call that made it
    std::uint64_t age = 0;   ///< allocations on the device since this one (the youngest's when grouped)
    std::size_t count = 1;   ///< tensors in this record
};

/// How memory_snapshot() lists: each allocation, or one record per creation site.
enum class snapshot_grouping : std::uint8_t { none, by_site };

namespace detail {

inline bool same_site(const origin& a, const origin& b) noexcept {
    return a.op == b.op && a.site.line() == b.site.line() && a.site.column() == b.site.column() &&
           std::string_view(a.site.file_name()) == b.site.file_name();
}

/// The live allocations of `d`, largest first.
inline std::vector<allocation_record> live_records(const device& d, snapshot_grouping grouping) {
    const auto largest_first = [](const allocation_record& a, const allocation_record& b) { return a.bytes > b.bytes; };
    std::vector<allocation_record> records;
    allocations_of(device_slot(d)).for_each([&](const live_allocation& a, std::uint64_t now) {
        records.push_back({a.bytes, a.dims, a.dtype != nullptr ? a.dtype : "", a.made, now - a.serial, 1});
    });
    std::stable_sort(records.begin(), records.end(), largest_first);
    if (grouping == snapshot_grouping::none) return records;
    std::vector<allocation_record> sites;  // the first of a site seen is its largest: its shape stays
    for (const auto& r : records) {
        const auto same = std::find_if(sites.begin(), sites.end(), [&](const auto& s) { return same_site(s.made, r.made); });
        if (same == sites.end()) {
            sites.push_back(r);
            continue;
        }
        same->bytes += r.bytes;
        same->age = std::min(same->age, r.age);
        ++same->count;
    }
    std::stable_sort(sites.begin(), sites.end(), largest_first);
    return sites;
}

inline std::string largest_sites(const device& d) {
#if DEVTENSOR_DIAGNOSTICS
    const auto records = live_records(d, snapshot_grouping::by_site);
    if (records.empty()) return "; no live allocations";
    std::string text = "; the largest live allocations by creation site:";
    for (std::size_t i = 0; i < records.size() && i < 5; ++i) {
        const auto& r = records[i];
        text += std::string(i ? "," : "") + " " + format_bytes(r.bytes) + " " + to_string(r.made) + " (" +
                std::to_string(r.count) + (r.count == 1 ? " tensor)" : " tensors)");
    }
    return text;
#else
    (void)d;
    return "";
#endif
}

inline std::size_t pool_cached(const device& d) {
    if (d.is_cpu()) return host_pool::instance().cached();
    std::uint64_t reserved = 0, used = 0;
#if DEVTENSOR_CUDA_RUNTIME
    const cudaMemPool_t pool = cuda_pool(d.index());
    if (cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved) != cudaSuccess ||
        cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used) != cudaSuccess) {
        (void)cudaGetLastError();  // a figure for a message
        return 0;
    }
#endif
    return static_cast<std::size_t>(reserved > used ? reserved - used : 0);
}

}  // namespace detail

/// The live allocations of `dev`, largest first: bytes, shape, dtype, where each was
/// made and how many allocations ago; with snapshot_grouping::by_site, one record per
/// creation site. Empty when DEVTENSOR_DIAGNOSTICS is 0.
template <Device D>
std::vector<allocation_record> memory_snapshot(const D& dev, snapshot_grouping grouping = snapshot_grouping::none) {
    require_available(device(dev), "memory_snapshot");
    return detail::live_records(device(dev), grouping);
}

/// Allocates `bytes` on `dev` (nullptr for 0 bytes) for what `made` makes; throws
/// out_of_memory or device_unavailable.
inline void* allocate_bytes(const device& dev, std::size_t bytes, const origin& made = {}) {
    require_available(dev);
    if (bytes == 0) return nullptr;
    if (auto& left = detail::allocations_until_failure(); left.load() >= 0 && left.fetch_sub(1) == 0)
        detail::throw_out_of_memory(dev, detail::allocating(bytes, made), 0, 0);  // an injected failure
    void* p = nullptr;
    if (dev.is_cpu()) {
        p = detail::host_pool::instance().allocate(bytes);
        if (p == nullptr)
            detail::throw_out_of_memory(dev, detail::allocating(bytes, made), detail::free_bytes(dev),
                                        detail::host_pool::instance().reserved());
    } else {
#if DEVTENSOR_CUDA_RUNTIME
        p = detail::cuda_allocate(dev, bytes, made);
#endif
    }
    detail::counters(dev).add(bytes);
    return p;
}

/// Returns memory from allocate_bytes; on CUDA, ordered after the device's queued work.
inline void deallocate_bytes(const device& dev, void* p, std::size_t bytes) noexcept {
    if (p == nullptr) return;
    detail::counters(dev).sub(bytes);
    if (dev.is_cpu()) {
        detail::host_pool::instance().deallocate(p, bytes);
        return;
    }
#if DEVTENSOR_CUDA_RUNTIME
    try {
        detail::cudart::device_guard guard(dev.index());
        // Back to devtensor's pool, after the stream's queued work. A failure (a dying
        // context at exit) leaves nothing to free into; its error is not left for the next call.
        if (cudaFreeAsync(p, detail::cudart::stream(dev.index())) != cudaSuccess) (void)cudaGetLastError();
    } catch (...) {
    }
#endif
}

// The statistics follow one rule: a device that does not exist on this
// machine is device_unavailable, as every other use of it is.

/// Bytes held by live tensors on `dev`.
template <Device D>
std::size_t memory_allocated(const D& dev) {
    require_available(device(dev), "memory_allocated");
    return detail::counters(device(dev)).allocated.load();
}

/// Highest memory_allocated(dev) since the start or the last reset_peak_memory_stats.
template <Device D>
std::size_t max_memory_allocated(const D& dev) {
    require_available(device(dev), "max_memory_allocated");
    return detail::counters(device(dev)).peak.load();
}

/// Starts the peak over from what is allocated now.
template <Device D>
void reset_peak_memory_stats(const D& dev) {
    require_available(device(dev), "reset_peak_memory_stats");
    auto& c = detail::counters(device(dev));
    c.peak.store(c.allocated.load());
}

/// Bytes the device's allocator holds, live or cached (blocks rounded to their size class).
template <Device D>
std::size_t memory_reserved(const D& dev) {
    const device d(dev);
    if (d.is_cpu()) return detail::host_pool::instance().reserved();
    require_available(d, "memory_reserved");
#if DEVTENSOR_CUDA_RUNTIME
    return detail::cuda_reserved(d.index());
#else
    return 0;
#endif
}

/// How many times the device's allocator took memory from the system since the
/// program started: the host pool's mallocs, the CUDA pool's growths. Constant
/// over a loop whose every allocation the cache serves (a training step after the first).
template <Device D>
std::uint64_t memory_system_allocations(const D& dev) {
    const device d(dev);
    if (d.is_cpu()) return detail::host_pool::instance().system_allocations();
    require_available(d, "memory_system_allocations");
    return detail::counters(d).system_allocations.load();
}

/// Returns the allocator's cached, unused memory to the system.
template <Device D>
void empty_cache(const D& dev) {
    const device d(dev);
    if (d.is_cpu()) return detail::host_pool::instance().release_cached();
    require_available(d, "empty_cache");
#if DEVTENSOR_CUDA_RUNTIME
    detail::cuda_trim(d.index());
#endif
}

}  // namespace devtensor
