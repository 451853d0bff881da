// The caching host allocator: freed blocks are kept and handed out again, so a
// loop that allocates, fills and drops a big tensor stops paying for page
// faults (a fresh 256 MiB costs ~200 ms of first touches; a reused one costs
// nothing), and a training step's many small tensors cost a free-list pop
// instead of an aligned malloc (DESIGN §12: after the first step nothing new is
// taken from the system). Like the CUDA stream-ordered pool: freed blocks are
// cached, empty_cache() returns them, and an allocation that fails returns the
// cache to the system and retries once.
#pragma once

#include <devtensor/detail/spin_mutex.hpp>

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>  // std::lock_guard
#include <new>
#include <vector>

#if defined(__linux__)
#  include <sys/mman.h>  // madvise(MADV_HUGEPAGE)
#  include <unistd.h>    // sysconf
#endif

namespace devtensor::detail {

class host_pool {
public:
    /// Requests from this size on are large blocks (whole pages); smaller ones share small classes.
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
        if (bytes > SIZE_MAX / 2) return nullptr;
        const std::size_t size = size_class(bytes);
        std::lock_guard lock(mutex_);
        if (bytes < pooled_from) {
            if (auto& list = small_free_[small_index(size)]; !list.empty()) {
                void* p = list.back();
                list.pop_back();
                cached_ -= size;
                return p;
            }
        } else if (const auto it = free_.find(size); it != free_.end()) {
            void* p = it->second;
            free_.erase(it);
            cached_ -= size;
            return p;
        }
        void* p = allocate_system(size);
        if (p == nullptr && cached_ > 0) {  // give the cache back, then try once more
            release_cached_locked();
            p = allocate_system(size);
        }
        if (p != nullptr) {
            reserved_ += size;
            ++system_allocations_;
        }
        return p;
    }

    /// Returns a block from allocate(bytes), with the same `bytes`, to the cache.
    void deallocate(void* p, std::size_t bytes) noexcept {
        const std::size_t size = size_class(bytes);
        std::lock_guard lock(mutex_);
        try {
            if (bytes < pooled_from) {
                if (cached_ + size > cache_limit()) return release_block(p, size);
                small_free_[small_index(size)].push_back(p);
            } else {
                free_.emplace(size, p);
            }
            cached_ += size;
        } catch (...) {  // no memory for the bookkeeping: hand the block back instead
            release_block(p, size);
        }
        while (cached_ > cache_limit() && !free_.empty()) release_cached_block(std::prev(free_.end()));
    }

    /// Bytes taken from the system: live blocks (rounded to their class) and the cache.
    std::size_t reserved() const noexcept {
        std::lock_guard lock(mutex_);
        return reserved_;
    }

    /// Blocks taken from the system since the start (each a malloc the cache did not spare).
    std::uint64_t system_allocations() const noexcept {
        std::lock_guard lock(mutex_);
        return system_allocations_;
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

    /// The size a request is rounded to. Small: 64-byte lines up to 256 bytes, then
    /// quarters of the power of two below (at most 25% more than asked). Large:
    /// whole 2 MiB pages up to 64 MiB, then eighths of the power of two below (at
    /// most 12.5% more). A freed block is reused only for requests of its own
    /// class, so a large block is never spent on a much smaller request.
    static std::size_t size_class(std::size_t bytes) noexcept {
        constexpr std::size_t fine_up_to = std::size_t{64} << 20;
        const std::size_t step = bytes <= 4 * small_alignment ? small_alignment
                                 : bytes < pooled_from        ? std::bit_floor(bytes - 1) / 4
                                 : bytes <= fine_up_to        ? granule
                                                              : std::bit_floor(bytes) / 8;
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

    /// The free list of a small class: 4 line-sized classes, then 4 per power of two.
    static std::size_t small_index(std::size_t size) noexcept {
        if (size <= 4 * small_alignment) return size / small_alignment - 1;
        const std::size_t low = std::bit_floor(size - 1), quarter = low / 4;  // size in (low, 2 low]
        return 4 + 4 * static_cast<std::size_t>(std::countr_zero(low / (4 * small_alignment))) +
               (size - low) / quarter - 1;
    }
    static constexpr std::size_t small_classes = 4 + 4 * 12;  // (256 B, 1 MiB): 12 powers of two

    static void* allocate_system(std::size_t size) noexcept {
        if (size < granule) return std::aligned_alloc(small_alignment, size);  // a small class
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
        for (std::size_t i = 0; i < small_classes; ++i) {
            for (void* p : small_free_[i]) {
                const std::size_t size = small_size(i);
                cached_ -= size;
                release_block(p, size);
            }
            small_free_[i] = {};
        }
    }

    /// The size of small class i (small_index's inverse).
    static std::size_t small_size(std::size_t i) noexcept {
        if (i < 4) return (i + 1) * small_alignment;
        const std::size_t low = (4 * small_alignment) << ((i - 4) / 4);
        return low + ((i - 4) % 4 + 1) * (low / 4);
    }

    // All guarded by mutex_.
    mutable spin_mutex mutex_;
    std::multimap<std::size_t, void*> free_;                  // cached large blocks by size class
    std::array<std::vector<void*>, small_classes> small_free_;  // cached small blocks, per class
    std::size_t cached_ = 0, reserved_ = 0;
    std::uint64_t system_allocations_ = 0;
};

}  // namespace devtensor::detail
