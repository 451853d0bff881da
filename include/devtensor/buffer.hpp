// buffer<T, D>: owning, contiguous, move-only storage tagged with its device.
#pragma once

#include <devtensor/detail/allocation_registry.hpp>
#include <devtensor/detail/copy.hpp>
#include <devtensor/device.hpp>
#include <devtensor/element.hpp>  // detail::dtype_of
#include <devtensor/error.hpp>
#include <devtensor/memory.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace devtensor {

/// `size` uninitialised elements of T on one device. Moving transfers ownership;
/// copies are explicit (clone, to).
template <class T, Device D = device>
class buffer {
public:
    buffer() requires std::default_initializable<D> = default;

    /// Allocates `size` elements on `dev`; throws out_of_memory or device_unavailable.
    /// `info` (a tensor's shape, dtype and origin) is what memory_snapshot() shows of it.
    explicit buffer(std::size_t size, const D& dev = D{}, const detail::allocation_info& info = {})
        : dev_(dev), size_(size) {
        if (size > SIZE_MAX / sizeof(T)) {  // bytes not even representable: no allocator is asked
            const devtensor::device d(dev_);
            require_available(d);
            detail::throw_out_of_memory(d, "allocating " + std::to_string(size) + " elements of " +
                                               std::to_string(sizeof(T)) +
                                               " bytes, more than the address space holds",
                                        detail::free_bytes(d), memory_reserved(d));
        }
        data_ = static_cast<T*>(allocate_bytes(devtensor::device(dev_), size * sizeof(T), info.made));
        if (data_ != nullptr) tracked_.track(detail::device_slot(devtensor::device(dev_)), bytes(), info);
    }

    buffer(buffer&& other) noexcept
        : dev_(other.dev_), data_(std::exchange(other.data_, nullptr)),
          size_(std::exchange(other.size_, 0)), tracked_(std::move(other.tracked_)) {}
    buffer& operator=(buffer&& other) noexcept {
        if (this != &other) {
            release();
            dev_ = other.dev_;
            data_ = std::exchange(other.data_, nullptr);
            size_ = std::exchange(other.size_, 0);
            tracked_ = std::move(other.tracked_);
        }
        return *this;
    }
    buffer(const buffer&) = delete;
    buffer& operator=(const buffer&) = delete;
    ~buffer() { release(); }

    /// Device pointer on CUDA, host pointer on the CPU; nullptr when empty.
    T* data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }
    std::size_t bytes() const noexcept { return size_ * sizeof(T); }
    const D& device() const noexcept { return dev_; }

    /// A deep copy on the same device.
    buffer clone(call_site site = call_site::current()) const { return to(dev_, site); }

    /// A deep copy on `dev`.
    template <Device E>
    buffer<T, E> to(const E& dev, call_site site = call_site::current()) const {
        buffer<T, E> result(size_, dev, {nullptr, detail::dtype_of<T>, {"buffer::to", site}});
        detail::copy_bytes(result.data(), devtensor::device(dev), data_, devtensor::device(dev_),
                           bytes(), {"buffer::to", site, true});
        return result;
    }

private:
    void release() noexcept {
        tracked_.untrack();
        deallocate_bytes(devtensor::device(dev_), data_, size_ * sizeof(T));
        data_ = nullptr;
        size_ = 0;
    }

    D dev_{};
    T* data_ = nullptr;
    std::size_t size_ = 0;
    detail::tracked_allocation tracked_;
};

}  // namespace devtensor
