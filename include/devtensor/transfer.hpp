// The transfer guard and ledger (DESIGN §14), like JAX's transfer guard: a
// thread-local, nestable RAII switch that makes implicit copies between host
// and device (item(), to_vector(), printing) log or throw, and per-device
// counts of every copy, so a training loop can prove it never leaves the GPU.
// Explicit copies (to, cpu, cuda, from_values onto a device) stay allowed
// unless transfer::disallow_explicit is asked for.
#pragma once

#include <devtensor/detail/per_device.hpp>
#include <devtensor/device.hpp>
#include <devtensor/error.hpp>
#include <devtensor/origin.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <string>

namespace devtensor {

/// What a guard does with a copy: let it be, log it to std::clog, or refuse it.
/// disallow refuses implicit copies; disallow_explicit refuses explicit ones too.
enum class transfer : std::uint8_t { allow, log, disallow, disallow_explicit };

/// Which copies a guard is about (all three when none is given).
enum class transfer_direction : std::uint8_t { host_to_device, device_to_host, device_to_device };

/// Copies and bytes of one direction.
struct transfer_count {
    std::uint64_t copies = 0;
    std::uint64_t bytes = 0;
    friend bool operator==(const transfer_count&, const transfer_count&) = default;
};

/// The copies into and out of one device: transfer_stats(dev).
struct transfer_statistics {
    transfer_count host_to_device, device_to_host, device_to_device;
    friend bool operator==(const transfer_statistics&, const transfer_statistics&) = default;
};

namespace detail {

struct transfer_levels {
    std::array<transfer, 3> level{transfer::allow, transfer::allow, transfer::allow};
};

/// The levels in force on this thread.
inline transfer_levels& thread_transfer_levels() noexcept {
    thread_local transfer_levels levels;
    return levels;
}

/// Why a copy happens: the op the user called, where, whether the user asked for a
/// copy, and where the tensor copied from was made (when there is one).
struct transfer_request {
    const char* op;
    call_site site;
    bool explicit_copy;
    origin source{};
    bool non_blocking = false;  ///< to(dev, true): a copy from pinned memory does not wait
};

/// The direction of a copy from `from` to `to`; false for host to host, which is no transfer.
inline bool direction_of(const device& to, const device& from, transfer_direction& d) noexcept {
    if (to == from) return false;  // host to host, or within one device: no transfer
    d = from.is_cpu() ? transfer_direction::host_to_device
        : to.is_cpu() ? transfer_direction::device_to_host
                      : transfer_direction::device_to_device;
    return true;
}

inline const char* direction_name(transfer_direction d) noexcept {
    switch (d) {
        case transfer_direction::host_to_device: return "host-to-device";
        case transfer_direction::device_to_host: return "device-to-host";
        default: return "device-to-device";
    }
}

/// "an implicit device-to-host copy of 12 bytes (cuda:0 -> cpu) in to_vector at train.cpp:9"
inline std::string describe_transfer(const device& to, const device& from, std::size_t bytes,
                                     transfer_direction d, const transfer_request& why) {
    std::string text = std::string(why.explicit_copy ? "an explicit " : "an implicit ") + direction_name(d) +
                       " copy of " + std::to_string(bytes) + " bytes (" + to_string(from) + " -> " +
                       to_string(to) + ") in " + why.op;
    if (why.site.line() != 0) text += " at " + to_string(why.site);
    if (why.source.known()) text += " (the tensor " + to_string(why.source) + ")";
    return text;
}

/// Lets the copy through, logs it, or throws transfer_error, as this thread's guards say.
inline void admit_transfer([[maybe_unused]] const device& to, [[maybe_unused]] const device& from,
                           [[maybe_unused]] std::size_t bytes, [[maybe_unused]] const transfer_request& why) {
#if DEVTENSOR_DIAGNOSTICS
    transfer_direction d{};
    if (bytes == 0 || !direction_of(to, from, d)) return;  // nothing to copy: no transfer
    const transfer level = thread_transfer_levels().level[static_cast<std::size_t>(d)];
    if (level == transfer::allow) return;
    const bool refused = level == transfer::disallow_explicit || (level == transfer::disallow && !why.explicit_copy);
    if (refused)
        throw transfer_error(std::string("devtensor::") + why.op + ": " + describe_transfer(to, from, bytes, d, why) +
                             " is disallowed by a transfer_guard" +
                             (why.explicit_copy ? " (transfer::disallow_explicit)"
                                                : "; copy explicitly with .cpu() or .to(), or allow it"));
    if (level == transfer::log && !why.explicit_copy)
        std::clog << "devtensor: " + describe_transfer(to, from, bytes, d, why) + "\n";
#endif
}

/// Per-device copy counters: [direction] copies and bytes.
struct transfer_ledger {
    std::array<std::atomic<std::uint64_t>, 3> copies{}, bytes{};
    void add(transfer_direction d, std::size_t n) noexcept {
        copies[static_cast<std::size_t>(d)].fetch_add(1, std::memory_order_relaxed);
        bytes[static_cast<std::size_t>(d)].fetch_add(n, std::memory_order_relaxed);
    }
};

inline transfer_ledger& ledger(const device& d) {
    static per_device<transfer_ledger> all;
    return all[d];
}

/// Counts a copy that happened: on each GPU it touched, and on the CPU for host copies.
inline void count_transfer([[maybe_unused]] const device& to, [[maybe_unused]] const device& from,
                           [[maybe_unused]] std::size_t bytes) {
#if DEVTENSOR_DIAGNOSTICS
    transfer_direction d{};
    if (!direction_of(to, from, d)) return;
    if (!from.is_cpu()) ledger(from).add(d, bytes);
    if (!to.is_cpu() && to != from) ledger(to).add(d, bytes);
    if (from.is_cpu() || to.is_cpu()) ledger(device()).add(d, bytes);
#endif
}

}  // namespace detail

/// Sets how this thread treats copies while it lives, then restores the levels
/// it found (guards nest). Other threads are not affected.
///   transfer_guard g(transfer::disallow);                                  // every direction
///   transfer_guard g(transfer::log, transfer_direction::device_to_host);   // one direction
class transfer_guard {
public:
    explicit transfer_guard(transfer level) : saved_(detail::thread_transfer_levels()) {
        detail::thread_transfer_levels().level.fill(level);
    }
    transfer_guard(transfer level, transfer_direction direction) : saved_(detail::thread_transfer_levels()) {
        detail::thread_transfer_levels().level[static_cast<std::size_t>(direction)] = level;
    }
    ~transfer_guard() { detail::thread_transfer_levels() = saved_; }
    transfer_guard(const transfer_guard&) = delete;
    transfer_guard& operator=(const transfer_guard&) = delete;

private:
    detail::transfer_levels saved_;
};

/// The copies into and out of `dev` since the start or the last reset_transfer_stats:
/// for a GPU, those it sent or received; for the CPU, every copy to or from the host.
template <Device D>
transfer_statistics transfer_stats(const D& dev) {
    const auto& l = detail::ledger(device(dev));
    const auto read = [&](transfer_direction d) {
        const auto i = static_cast<std::size_t>(d);
        return transfer_count{l.copies[i].load(), l.bytes[i].load()};
    };
    return {read(transfer_direction::host_to_device), read(transfer_direction::device_to_host),
            read(transfer_direction::device_to_device)};
}

/// Starts the counts of `dev` over from zero.
template <Device D>
void reset_transfer_stats(const D& dev) {
    auto& l = detail::ledger(device(dev));
    for (std::size_t i = 0; i < 3; ++i) {
        l.copies[i].store(0);
        l.bytes[i].store(0);
    }
}

}  // namespace devtensor
