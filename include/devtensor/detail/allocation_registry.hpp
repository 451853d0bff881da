// The live allocations of each device (DESIGN §14): every buffer links a small
// record (bytes, shape, dtype, creation site, a serial number) into its device's
// list while it lives, so memory_snapshot() and the out_of_memory message can say
// what holds the memory and where it was made. The list is intrusive and guarded
// by a spin lock held for a few pointer writes: no allocation, no string work.
#pragma once

#include <devtensor/config.hpp>  // DEVTENSOR_MAX_CUDA_DEVICES
#include <devtensor/detail/spin_mutex.hpp>
#include <devtensor/origin.hpp>   // DEVTENSOR_DIAGNOSTICS
#include <devtensor/shape.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>  // std::lock_guard

namespace devtensor::detail {

/// What a tensor tells its storage about itself when it allocates it.
struct allocation_info {
    const shape* dims = nullptr;  ///< null: a bare buffer
    const char* dtype = nullptr;
    origin made{};
};

/// One live allocation, linked into its device's list from allocation to release.
struct live_allocation {
    std::size_t bytes = 0;
    std::uint64_t serial = 0;  ///< the device's allocation count when it was made
    shape dims;
    const char* dtype = nullptr;
    origin made{};
    live_allocation* prev = nullptr;
    live_allocation* next = nullptr;
};

/// The live allocations of one device.
class allocation_list {
public:
    void link(live_allocation& a) noexcept {
        const std::lock_guard lock(busy_);
        a.serial = ++serial_;
        a.prev = nullptr;
        a.next = head_;
        if (head_ != nullptr) head_->prev = &a;
        head_ = &a;
    }
    void unlink(live_allocation& a) noexcept {
        const std::lock_guard lock(busy_);
        (a.prev != nullptr ? a.prev->next : head_) = a.next;
        if (a.next != nullptr) a.next->prev = a.prev;
    }
    /// Moves the link of `from` to `to` (a buffer that moved), keeping its place.
    void relink(live_allocation& from, live_allocation& to) noexcept {
        const std::lock_guard lock(busy_);
        to = from;
        (to.prev != nullptr ? to.prev->next : head_) = &to;
        if (to.next != nullptr) to.next->prev = &to;
    }
    /// Calls f(record, serial now) for each live allocation, with the list held still.
    template <class F>
    void for_each(F f) const {
        const std::lock_guard lock(busy_);
        for (const live_allocation* a = head_; a != nullptr; a = a->next) f(*a, serial_);
    }

private:
    mutable spin_mutex busy_;
    live_allocation* head_ = nullptr;
    std::uint64_t serial_ = 0;
};

/// The list of the device in table slot `slot` (device_slot()).
inline allocation_list& allocations_of(std::size_t slot) {
    static std::array<allocation_list, 1 + DEVTENSOR_MAX_CUDA_DEVICES> lists;
    return lists[slot];
}

/// A buffer's membership in its device's list: linked while the memory lives,
/// following the buffer when it moves. Empty when diagnostics are compiled out.
class tracked_allocation {
public:
    tracked_allocation() = default;
#if DEVTENSOR_DIAGNOSTICS
    void track(std::size_t slot, std::size_t bytes, const allocation_info& info) noexcept {
        record_.bytes = bytes;
        if (info.dims != nullptr) record_.dims = *info.dims;
        record_.dtype = info.dtype;
        record_.made = info.made;
        slot_ = slot;
        allocations_of(slot).link(record_);
        linked_ = true;
    }
    void untrack() noexcept {
        if (linked_) allocations_of(slot_).unlink(record_);
        linked_ = false;
    }
    tracked_allocation(tracked_allocation&& other) noexcept { take(other); }
    tracked_allocation& operator=(tracked_allocation&& other) noexcept {
        if (this != &other) {
            untrack();
            take(other);
        }
        return *this;
    }

private:
    void take(tracked_allocation& other) noexcept {
        if (!other.linked_) return;
        slot_ = other.slot_;
        allocations_of(slot_).relink(other.record_, record_);
        linked_ = true;
        other.linked_ = false;
    }

    live_allocation record_;
    std::size_t slot_ = 0;
    bool linked_ = false;
#else
    void track(std::size_t, std::size_t, const allocation_info&) noexcept {}
    void untrack() noexcept {}
#endif
};

}  // namespace devtensor::detail
