// Device descriptors: the static cpu_device and cuda_device, the run-time
// device (torch.device), the concepts that say where data lives, and parsing.
#pragma once

#include <devtensor/config.hpp>  // DEVTENSOR_MAX_CUDA_DEVICES
#include <devtensor/error.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>

namespace devtensor {

/// What kind of memory and processor a device is.
enum class device_kind : std::uint8_t { cpu, cuda };

/// "cpu" or "cuda".
constexpr std::string_view kind_name(device_kind k) noexcept {
    return k == device_kind::cpu ? "cpu" : "cuda";
}

/// The host: its kind is known at compile time, its index is always 0.
struct cpu_device {
    static constexpr device_kind kind() noexcept { return device_kind::cpu; }
    static constexpr int index() noexcept { return 0; }
    friend constexpr bool operator==(cpu_device, cpu_device) noexcept { return true; }
};

/// An NVIDIA GPU: kind known at compile time, ordinal chosen at run time.
struct cuda_device {
    int ordinal = 0;
    static constexpr device_kind kind() noexcept { return device_kind::cuda; }
    constexpr int index() const noexcept { return ordinal; }
    friend constexpr bool operator==(cuda_device, cuda_device) noexcept = default;
};

/// A device chosen at run time: kind and index, the torch.device analogue.
/// A descriptor is only a name: "cuda:7" is valid anywhere, using it is not.
class device {
public:
    /// The CPU, so that run-time device handles can be declared before they are chosen.
    constexpr device() noexcept : kind_(device_kind::cpu), index_(0) {}
    /// cuda:index or cpu (whose only index is 0); a bad index throws invalid_device.
    constexpr device(device_kind kind, int index = 0) : kind_(kind), index_(index) {
        if (index < 0 || (kind == device_kind::cpu && index != 0))
            throw invalid_device("devtensor::device: invalid index " + std::to_string(index) +
                                 " for " + std::string(kind_name(kind)) +
                                 (kind == device_kind::cpu ? " (the cpu's only index is 0)"
                                                           : " (it must be >= 0)"));
    }
    /// Parses "cpu", "cpu:0", "cuda" (= cuda:0) or "cuda:N"; anything else throws invalid_device.
    explicit device(std::string_view text);

    constexpr device(cpu_device) noexcept : kind_(device_kind::cpu), index_(0) {}
    constexpr device(cuda_device d) noexcept : kind_(device_kind::cuda), index_(d.ordinal) {}

    constexpr device_kind kind() const noexcept { return kind_; }
    constexpr int index() const noexcept { return index_; }
    constexpr bool is_cpu() const noexcept { return kind_ == device_kind::cpu; }
    constexpr bool is_cuda() const noexcept { return kind_ == device_kind::cuda; }

    friend constexpr bool operator==(device, device) noexcept = default;

private:
    device_kind kind_;
    int index_;
};

/// Anything that names a device: cpu_device, cuda_device, device.
template <class D>
concept Device = std::copy_constructible<D> && std::convertible_to<D, device> &&
                 requires(const D& d) {
                     { d.kind() } -> std::same_as<device_kind>;
                     { d.index() } -> std::convertible_to<int>;
                 };

/// A device whose kind is part of its type, so the compiler can check it.
template <class D>
concept StaticDevice = Device<D> && requires { typename std::integral_constant<device_kind, D::kind()>; };

/// A device whose memory host code may read and write: the static cpu_device only.
template <class D>
concept HostAccessible = StaticDevice<D> && (D::kind() == device_kind::cpu);

/// A CUDA device known at compile time: cuda_device.
template <class D>
concept StaticCudaDevice = StaticDevice<D> && (D::kind() == device_kind::cuda);

template <class D>
inline constexpr bool is_static_cuda_v = StaticCudaDevice<D>;

/// "cpu", or "cuda:N" always with its index.
template <Device D>
std::string to_string(const D& d) {
    const device dev(d);
    if (dev.is_cpu()) return "cpu";
    return "cuda:" + std::to_string(dev.index());
}

/// Python's print(dev): "cpu", "cuda:0".
template <Device D>
std::ostream& operator<<(std::ostream& os, const D& d) {
    return os << to_string(d);
}

/// Python's repr(dev): "device(type='cuda', index=0)", "device(type='cpu')".
template <Device D>
std::string repr(const D& d) {
    const device dev(d);
    if (dev.is_cpu()) return "device(type='cpu')";
    return "device(type='cuda', index=" + std::to_string(dev.index()) + ")";
}

namespace detail {
/// `text` quoted for a message: bytes that are not printable ASCII (a NUL would cut
/// what() short, an escape sequence would garble a terminal) as \xNN, and at most
/// 64 characters of it.
inline std::string quoted(std::string_view text) {
    constexpr std::size_t shown = 64;
    std::string out = "'";
    for (std::size_t i = 0; i < text.size() && i < shown; ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            out += static_cast<char>(c);
        } else {
            const char* hex = "0123456789abcdef";
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    out += "'";
    if (text.size() > shown) out += " (" + std::to_string(text.size()) + " characters, first 64 shown)";
    return out;
}

[[noreturn]] inline void throw_bad_device_string(std::string_view text) {
    throw invalid_device("devtensor::device: invalid device string " + quoted(text) +
                         "; expected \"cpu\", \"cpu:0\", \"cuda\" or \"cuda:N\" with N a "
                         "non-negative integer without leading zeros");
}
}  // namespace detail

inline device::device(std::string_view text) : kind_(device_kind::cpu), index_(0) {
    const auto colon = text.find(':');
    const std::string_view name = text.substr(0, colon);
    if (name == "cpu") kind_ = device_kind::cpu;
    else if (name == "cuda") kind_ = device_kind::cuda;
    else detail::throw_bad_device_string(text);
    if (colon == std::string_view::npos) return;

    const std::string_view digits = text.substr(colon + 1);
    if (digits.empty() || (digits.size() > 1 && digits[0] == '0'))  // "cuda:007", as PyTorch
        detail::throw_bad_device_string(text);
    int value = 0;
    for (const char c : digits) {
        if (c < '0' || c > '9') detail::throw_bad_device_string(text);
        if (value > (std::numeric_limits<int>::max() - (c - '0')) / 10)  // past INT_MAX
            detail::throw_bad_device_string(text);
        value = value * 10 + (c - '0');
    }
    if (kind_ == device_kind::cpu && value != 0) detail::throw_bad_device_string(text);
    index_ = value;
}

/// The checked way from a run-time device to a static one (or to itself):
/// throws device_mismatch when the kinds differ.
template <Device To>
To device_cast(const device& d) {
    if constexpr (std::same_as<To, device>) {
        return d;
    } else {
        if (d.kind() != To::kind())
            throw device_mismatch("devtensor::device_cast: " + to_string(d) + " is not a " +
                                  std::string(kind_name(To::kind())) + " device");
        if constexpr (std::same_as<To, cuda_device>) return cuda_device{d.index()};
        else return To{};
    }
}

namespace detail {
/// The slot of `d` in per-device tables (memory counters, default generators):
/// 0 is the CPU, 1 + i is cuda:i. An index no table holds is device_unavailable:
/// past DEVTENSOR_MAX_CUDA_DEVICES, or negative (cuda_device{-1} converts unchecked).
inline std::size_t device_slot(const device& d) {
    if (d.is_cpu()) return 0;
    if (d.index() < 0 || d.index() >= DEVTENSOR_MAX_CUDA_DEVICES)
        throw device_unavailable("devtensor: " + to_string(d) +
                                 " is not a CUDA device devtensor tracks (a negative index, or past "
                                 "DEVTENSOR_MAX_CUDA_DEVICES)");
    return 1 + static_cast<std::size_t>(d.index());
}
}  // namespace detail

}  // namespace devtensor
