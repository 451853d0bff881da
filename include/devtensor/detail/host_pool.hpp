// The caching host allocator: large blocks are kept when freed and handed out
// again, so a loop that allocates, fills and drops a big tensor stops paying
// for page faults (a fresh 256 MiB costs ~200 ms of first touches; a reused
// one costs nothing). Small blocks go straight to operator new, whose own free
// lists already serve them well. Like the CUDA stream-ordered pool: freed
// blocks are cached, empty_cache() returns them, and an allocation that fails
// returns the cache to the system and retries once.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <new>

#if defined(__linux__)
#  include <sys/mman.h>  // madvise(MADV_HUGEPAGE)
#  include <unistd.h>    // sysconf
#endif

namespace devtensor::detail {

class host_pool {
public:
    /// Requests from this size on are pooled; smaller ones go to operator new.
    static constexpr std::size_t pooled_from = std::size_t{1} << 20;
    /// Pooled blocks are whole 2 MiB pages, so the kernel can back them with huge pages.
    static constexpr std::size_t granule = std::size_t{2} << 20;
    /// Alignment of small blocks: the widest vector loads and cache lines.
    static constexpr std::size_t small_alignment = 64;

    static host_pool& instance() {
        // Never destroyed: static tensors may be freed after every static destructor ran.
        static host_pool& pool = *new host_pool;
        return pool;
    }

    /// `bytes` (> 0) of host memory, 64-byte aligned; nullptr when the system has none.
    void* allocate(std::size_t bytes) noexcept {
        if (bytes < pooled_from) return allocate_small(bytes);
        if (bytes > SIZE_MAX / 2) return nullptr;
        const std::size_t size = size_class(bytes);
        std::lock_guard lock(mutex_);
        if (const auto it = free_.find(size); it != free_.end()) {
            void* p = it->second;
            free_.erase(it);
            cached_ -= size;
            return p;
        }
        void* p = allocate_large(size);
        if (p == nullptr && cached_ > 0) {  // give the cache back, then try once more
            release_cached_locked();
            p = allocate_large(size);
        }
        if (p != nullptr) reserved_ += size;
        return p;
    }

    /// Returns a block from allocate(bytes), with the same `bytes`; large blocks are cached.
    void deallocate(void* p, std::size_t bytes) noexcept {
        if (bytes < pooled_from) {
            ::operator delete(p, std::align_val_t{small_alignment});
            reserved_small_ -= bytes;
            return;
        }
        const std::size_t size = size_class(bytes);
        std::lock_guard lock(mutex_);
        try {
            free_.emplace(size, p);
            cached_ += size;
        } catch (...) {  // no memory for the bookkeeping: hand the block back instead
            release_block(p, size);
        }
        while (cached_ > cache_limit()) release_cached_block(std::prev(free_.end()));
    }

    /// Bytes taken from the system: live blocks (pooled ones rounded to their class) and the cache.
    std::size_t reserved() const noexcept {
        std::lock_guard lock(mutex_);
        return reserved_ + reserved_small_;
    }

    /// Bytes cached for reuse, held by no tensor.
    std::size_t cached() const noexcept {
        std::lock_guard lock(mutex_);
        return cached_;
    }

    /// Returns every cached block to the system (empty_cache).
    void release_cached() noexcept {
        std::lock_guard lock(mutex_);
        release_cached_locked();
    }

    /// The size a pooled request is rounded to: whole 2 MiB pages up to 64 MiB,
    /// then eighths of the power of two below (at most 12.5% more than asked).
    /// A freed block is reused only for requests of its own class, so a large
    /// block is never spent on a much smaller request.
    static std::size_t size_class(std::size_t bytes) noexcept {
        constexpr std::size_t fine_up_to = std::size_t{64} << 20;
        const std::size_t step = bytes <= fine_up_to ? granule : std::bit_floor(bytes) / 8;
        return (bytes + step - 1) / step * step;
    }

private:
    host_pool() = default;

    /// The cache never holds more than a quarter of the machine's memory.
    static std::size_t cache_limit() noexcept {
        static const std::size_t limit = [] {
#if defined(__linux__)
            const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
            if (pages > 0 && page > 0)
                return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) / 4;
#endif
            return std::size_t{1} << 30;
        }();
        return limit;
    }

    void* allocate_small(std::size_t bytes) noexcept {
        void* p = ::operator new(bytes, std::align_val_t{small_alignment}, std::nothrow);
        if (p != nullptr) reserved_small_ += bytes;
        return p;
    }

    static void* allocate_large(std::size_t size) noexcept {
        void* p = std::aligned_alloc(granule, size);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
        if (p != nullptr) (void)madvise(p, size, MADV_HUGEPAGE);  // ~4x faster first touch
#endif
        return p;
    }

    void release_block(void* p, std::size_t size) noexcept {
        std::free(p);
        reserved_ -= size;
    }

    void release_cached_block(std::multimap<std::size_t, void*>::iterator it) noexcept {
        cached_ -= it->first;
        release_block(it->second, it->first);
        free_.erase(it);
    }

    void release_cached_locked() noexcept {
        while (!free_.empty()) release_cached_block(free_.begin());
    }

    mutable std::mutex mutex_;
    std::multimap<std::size_t, void*> free_;  // cached blocks by size class
    std::size_t cached_ = 0, reserved_ = 0;   // pooled bytes, guarded by mutex_
    std::atomic<std::size_t> reserved_small_{0};
};

}  // namespace devtensor::detail
