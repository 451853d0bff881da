// A thread's cache of freed small heap blocks, for the objects every op makes and
// frees: a storage's control block, a graph node, an autograd record. At a training
// step's rate glibc's malloc and free cost ~140 instructions a pair (its per-thread
// cache keeps 7 blocks a size; a step frees more of one size than that); a pop and a
// push here cost ~10. Blocks go back to the cache of the thread that frees them, up to
// `depth` a size class, and to the heap past that or once that thread has ended.
// Off under AddressSanitizer, which then sees every block's use after free.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>

#if defined(__SANITIZE_ADDRESS__)
#  define DEVTENSOR_SMALL_BLOCK_CACHE 0
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define DEVTENSOR_SMALL_BLOCK_CACHE 0
#  endif
#endif
#ifndef DEVTENSOR_SMALL_BLOCK_CACHE
#  define DEVTENSOR_SMALL_BLOCK_CACHE 1
#endif

namespace devtensor::detail {

class small_blocks {
public:
    static constexpr std::size_t granule = 64;  ///< size classes 64, 128, ... 1024 bytes
    static constexpr std::size_t classes = 16;
    static constexpr std::size_t depth = 32;  ///< blocks a thread keeps a class

    static void* allocate(std::size_t bytes) {
        const std::size_t c = class_of(bytes);
        if (c < classes) {
            if (lists* mine = this_thread())
                if (free_block* b = mine->head[c]) {
                    mine->head[c] = b->next;
                    --mine->count[c];
                    return b;
                }
            return ::operator new((c + 1) * granule);  // the class's full size: any of its requests fits
        }
        return ::operator new(bytes);
    }

    static void deallocate(void* p, std::size_t bytes) noexcept {
        const std::size_t c = class_of(bytes);
        if (c < classes)
            if (lists* mine = this_thread(); mine != nullptr && mine->count[c] < depth) {
                mine->head[c] = ::new (p) free_block{mine->head[c]};
                ++mine->count[c];
                return;
            }
        ::operator delete(p);
    }

private:
    struct free_block {
        free_block* next;
    };
    struct lists {
        std::array<free_block*, classes> head{};
        std::array<std::uint8_t, classes> count{};
        ~lists() {
            ended() = true;
            for (free_block* b : head)
                while (b != nullptr) ::operator delete(std::exchange(b, b->next));
        }
    };

    static std::size_t class_of(std::size_t bytes) noexcept { return bytes == 0 ? 0 : (bytes - 1) / granule; }
    /// Whether this thread's lists are gone (a block freed by a thread_local destructor after them).
    static bool& ended() noexcept {
        thread_local bool gone = false;  // trivially destructible: readable to the thread's very end
        return gone;
    }
    static lists* this_thread() noexcept {
        if (!DEVTENSOR_SMALL_BLOCK_CACHE || ended()) return nullptr;
        thread_local lists mine;
        return &mine;
    }
};

/// An allocator for std::allocate_shared whose blocks come from small_blocks.
template <class T>
struct small_block_allocator {
    using value_type = T;
    static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__, "small_blocks hands out operator new's alignment");

    small_block_allocator() noexcept = default;
    template <class U>
    small_block_allocator(const small_block_allocator<U>&) noexcept {}  // NOLINT: rebinding converts implicitly

    T* allocate(std::size_t n) { return static_cast<T*>(small_blocks::allocate(n * sizeof(T))); }
    void deallocate(T* p, std::size_t n) noexcept { small_blocks::deallocate(p, n * sizeof(T)); }
    template <class U>
    bool operator==(const small_block_allocator<U>&) const noexcept {
        return true;
    }
};

}  // namespace devtensor::detail
