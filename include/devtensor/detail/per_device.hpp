// per_device<T>: one T for the CPU and for each CUDA ordinal devtensor tracks
// (memory counters, copy ledgers, default generators, streams, memory pools,
// device shapes), with the bounds check every such table needs.
#pragma once

#include <devtensor/config.hpp>  // DEVTENSOR_MAX_CUDA_DEVICES
#include <devtensor/device.hpp>  // device, device_slot
#include <devtensor/error.hpp>   // device_unavailable

#include <array>
#include <cstddef>
#include <mutex>  // once_flag, call_once

namespace devtensor::detail {

/// A fixed table of 1 + DEVTENSOR_MAX_CUDA_DEVICES entries: slot 0 the CPU,
/// slot 1 + i cuda:i (device_slot). Entries are value-initialised; lookups
/// throw device_unavailable naming the device for an index no table holds.
/// Thread-safe as a function-local static: entries are never added or moved, and
/// once() initialises each entry exactly once (std::call_once; a throwing
/// initialiser leaves the entry for the next call to try again).
template <class T>
class per_device {
public:
    static constexpr std::size_t slots = 1 + DEVTENSOR_MAX_CUDA_DEVICES;

    /// The entry of `d`.
    T& operator[](const device& d) { return entries_[device_slot(d)]; }
    /// The entry of cuda:`ordinal`.
    T& operator[](int ordinal) { return (*this)[device(cuda_device{ordinal})]; }

    /// The entry of cuda:`ordinal`, which init(entry) fills the first time it is asked for.
    template <class Init>
    T& once(int ordinal, Init&& init) {
        const std::size_t slot = device_slot(device(cuda_device{ordinal}));
        std::call_once(once_[slot], [&] { init(entries_[slot]); });
        return entries_[slot];
    }

private:
    // Value-initialised (scalars zero); `{}` would copy-list-initialise each entry,
    // which an explicit default constructor (generator's) refuses.
    std::array<T, slots> entries_ = std::array<T, slots>();
    std::array<std::once_flag, slots> once_;
};

}  // namespace devtensor::detail
