// A mutex for the locks taken on every tensor made and freed (the host pool's free
// lists, the live-allocation list), whose usual critical section is a list push or
// pop: one atomic exchange to take and a release store to leave, where std::mutex
// costs two library calls and two atomic read-modify-writes. A thread that finds it
// taken yields rather than spins (the pool's rare long section: a system allocation).
#pragma once

#include <atomic>
#include <thread>

namespace devtensor::detail {

/// Lockable (std::lock_guard, std::scoped_lock); not recursive.
class spin_mutex {
public:
    void lock() noexcept {
        while (busy_.test_and_set(std::memory_order_acquire)) std::this_thread::yield();
    }
    bool try_lock() noexcept { return !busy_.test_and_set(std::memory_order_acquire); }
    void unlock() noexcept { busy_.clear(std::memory_order_release); }

private:
    std::atomic_flag busy_ = ATOMIC_FLAG_INIT;
};

}  // namespace devtensor::detail
