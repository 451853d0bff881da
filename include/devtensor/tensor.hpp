// tensor<T, D>: a cheap handle to shared, device-tagged storage plus a shape,
// like torch::Tensor or a Kokkos::View. Copying the handle copies no data.
#pragma once

#include <devtensor/buffer.hpp>
#include <devtensor/detail/copy.hpp>
#include <devtensor/device.hpp>
#include <devtensor/device_query.hpp>
#include <devtensor/element.hpp>
#include <devtensor/error.hpp>
#include <devtensor/origin.hpp>
#include <devtensor/shape.hpp>
#include <devtensor/transfer.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <ranges>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace devtensor {

template <class T, class D = device>
class tensor;

template <class T>
inline constexpr bool is_tensor_v = false;
template <class T, class D>
inline constexpr bool is_tensor_v<tensor<T, D>> = true;

/// A handle to `shape().numel()` contiguous elements of T (row-major) on a device
/// of type D: cpu_device or cuda_device (checked at compile time) or device
/// (checked at run time).
template <class T, class D>
class tensor {
    DEVTENSOR_STATIC_CHECK_ELEMENT("devtensor::tensor", T);
    static_assert(Device<D>, "devtensor::tensor: D must be cpu_device, cuda_device or device");

public:
    using value_type = T;
    using device_type = D;

    /// An undefined tensor: no storage, numel() == 0, data() == nullptr, defined() false.
    tensor() = default;

    /// Copies share the storage; a moved-from tensor is undefined, never a second
    /// handle to memory the new owner may free.
    tensor(const tensor&) = default;
    tensor& operator=(const tensor&) = default;
    tensor(tensor&& other) noexcept
        : storage_(std::move(other.storage_)), data_(std::exchange(other.data_, nullptr)),
          shape_(std::exchange(other.shape_, devtensor::shape{})), dev_(other.dev_),
          origin_(std::exchange(other.origin_, detail::origin_slot{})) {}
    tensor& operator=(tensor&& other) noexcept {
        if (this != &other) {
            storage_ = std::move(other.storage_);
            data_ = std::exchange(other.data_, nullptr);
            shape_ = std::exchange(other.shape_, devtensor::shape{});
            dev_ = other.dev_;
            origin_ = std::exchange(other.origin_, detail::origin_slot{});
        }
        return *this;
    }
    ~tensor() = default;

    /// Uninitialised storage for `s` on `dev` (see empty()), made by `made`.
    tensor(const devtensor::shape& s, const D& dev, const devtensor::origin& made = {})
        : shape_(s), dev_(dev), origin_(made) {
        auto storage = std::make_shared<buffer<T, devtensor::device>>(
            static_cast<std::size_t>(s.numel()), devtensor::device(dev),
            detail::allocation_info{&shape_, detail::dtype_of<T>, made});
        data_ = storage->data();
        storage_ = std::move(storage);
    }

    /// Wraps memory that `owner` keeps alive, without copying (torch::from_blob with
    /// a deleter; from_dlpack uses it): `data` holds `s.numel()` contiguous elements
    /// (row-major) on `dev`, and stays valid until the last handle and `owner` are gone.
    tensor(std::shared_ptr<void> owner, T* data, const devtensor::shape& s, const D& dev,
           const devtensor::origin& made = {})
        : storage_(std::move(owner)), data_(data), shape_(s), dev_(dev), origin_(made) {}

    /// A static-device tensor viewed through the run-time type; shares the storage.
    template <StaticDevice E>
        requires std::same_as<D, devtensor::device>
    tensor(const tensor<T, E>& other)  // NOLINT: implicit on purpose, like the devices
        : storage_(other.storage_), data_(other.data_), shape_(other.shape_), dev_(other.dev_),
          origin_(other.origin_) {}
    template <StaticDevice E>
        requires std::same_as<D, devtensor::device>
    tensor(tensor<T, E>&& other) noexcept  // NOLINT: implicit, and the source is left undefined
        : storage_(std::move(other.storage_)), data_(std::exchange(other.data_, nullptr)),
          shape_(std::exchange(other.shape_, devtensor::shape{})), dev_(other.dev_),
          origin_(std::exchange(other.origin_, detail::origin_slot{})) {}

    D device() const noexcept { return dev_; }
    const devtensor::shape& shape() const noexcept { return shape_; }
    /// Elements held: 0 for an undefined tensor.
    std::int64_t numel() const noexcept { return defined() ? shape_.numel() : 0; }
    std::int64_t dim() const noexcept { return static_cast<std::int64_t>(shape_.rank()); }
    bool defined() const noexcept { return storage_ != nullptr; }

    /// First element: a device pointer on CUDA; nullptr when the tensor holds no elements.
    T* data() const noexcept { return data_; }

    /// The op that made this tensor and the user's call that ran it (DESIGN §14).
    devtensor::origin origin() const noexcept { return detail::read(origin_); }

    /// Same storage and same view: what `is` means for PyTorch tensors.
    template <class E>
    bool is_same(const tensor<T, E>& other) const noexcept {
        return storage_ == other.storage_ && data_ == other.data_ && shape_ == other.shape_;
    }

    /// The tensor on `dev`: this very storage when it is there already, else a copy.
    template <Device E>
    [[nodiscard]] tensor<T, E> to(const E& dev, call_site site = call_site::current()) const {
        return copy_to(dev, {"to", site});
    }
    [[nodiscard]] tensor<T, cpu_device> cpu(call_site site = call_site::current()) const {
        return copy_to(cpu_device{}, {"cpu", site});
    }
    [[nodiscard]] tensor<T, cuda_device> cuda(int ordinal = 0, call_site site = call_site::current()) const {
        return copy_to(cuda_device{ordinal}, {"cuda", site});
    }

    /// The elements, copied to the host in row-major order.
    /// An implicit copy (DESIGN §14): a transfer_guard may log or refuse it.
    [[nodiscard]] std::vector<T> to_vector(call_site site = call_site::current()) const {
        require_defined("to_vector");
        const auto n = static_cast<std::size_t>(numel());
        const detail::transfer_request why{"to_vector", site, false, origin()};
        if constexpr (std::same_as<T, bool>) {  // std::vector<bool> has no data()
            const auto host = std::make_unique<bool[]>(n);
            detail::copy_bytes(host.get(), devtensor::device(), data(), devtensor::device(dev_), n, why);
            return std::vector<bool>(host.get(), host.get() + n);
        } else {
            std::vector<T> values(n);
            detail::copy_bytes(values.data(), devtensor::device(), data(), devtensor::device(dev_),
                               n * sizeof(T), why);
            return values;
        }
    }

    /// The single element, copied to the host; shape_error unless numel() == 1.
    /// An implicit copy (DESIGN §14): a transfer_guard may log or refuse it.
    [[nodiscard]] T item(call_site site = call_site::current()) const {
        require_defined("item");
        if (numel() != 1)
            throw shape_error("devtensor::tensor::item: needs exactly one element, the shape is " +
                              shape_.to_string());
        T value{};
        detail::copy_bytes(&value, devtensor::device(), data(), devtensor::device(dev_), sizeof(T),
                           {"item", site, false, origin()});
        return value;
    }

    /// Element at a multi-index (one index per dimension), by reference; host memory only.
    template <std::integral... I>
    T& operator()(I... index) const {
        static_assert(!is_static_cuda_v<D>, "devtensor::tensor: element access needs host memory; "
                                            "copy it with .cpu() first");
        require_defined("operator()");
        require_host();
        if (sizeof...(I) != shape_.rank())
            throw shape_error("devtensor::tensor: " + std::to_string(sizeof...(I)) +
                              " indices for a tensor of shape " + shape_.to_string());
        std::int64_t offset = 0;
        std::size_t d = 0;
        [[maybe_unused]] const auto step = [&](auto i) {  // each index in its own type, for the message
            check_index(i, shape_[d], d);
            offset = offset * shape_[d] + static_cast<std::int64_t>(i);
            ++d;
        };
        (step(index), ...);
        return data()[offset];
    }

    /// Element `i` in row-major order, whatever the rank; host memory only.
    T& operator[](std::int64_t i) const {
        static_assert(!is_static_cuda_v<D>, "devtensor::tensor: element access needs host memory; "
                                            "copy it with .cpu() first");
        require_defined("operator[]");
        require_host();
        check_index(i, numel(), 0);
        return data()[i];
    }

private:
    template <class, class>
    friend class tensor;
    template <Device E, class U, class F>
    friend tensor<U, E> tensor_cast(const tensor<U, F>&);

    /// This tensor on `dev` for `made` (to, cpu, cuda): a copy the user asked for.
    template <Device E>
    tensor<T, E> copy_to(const E& dev, const devtensor::origin& made) const {
        require_defined(made.op);
        if (devtensor::device(dev) == devtensor::device(dev_))  // the very tensor, made where it was
            return tensor<T, E>(storage_, data_, shape_, dev, origin());
        tensor<T, E> result(shape_, dev, made);
        detail::copy_bytes(result.data(), devtensor::device(dev), data(), devtensor::device(dev_),
                           sizeof(T) * static_cast<std::size_t>(numel()), {made.op, made.site, true, origin()});
        return result;
    }

    void require_defined(const char* op) const {
        if (!defined())
            throw error(std::string("devtensor::tensor::") + op +
                        ": the tensor is undefined (default-constructed or moved-from)");
    }
    void require_host() const {
        if (!devtensor::device(dev_).is_cpu())
            throw device_mismatch("devtensor::tensor: element access needs host memory, but the "
                                  "tensor is on " + to_string(dev_) + "; copy it with .cpu() first");
    }
    /// Checks in the index's own type, so that SIZE_MAX is reported as itself, not as -1.
    template <std::integral I>
    void check_index(I i, std::int64_t size, std::size_t dim) const {
        if (!std::in_range<std::int64_t>(i) || static_cast<std::int64_t>(i) < 0 ||
            static_cast<std::int64_t>(i) >= size)
            throw index_error("devtensor::tensor: index " + std::to_string(i) +
                                    " is out of range for dimension " + std::to_string(dim) +
                                    " of size " + std::to_string(size) + " (shape " +
                                    shape_.to_string() + ")");
    }

    std::shared_ptr<void> storage_;  ///< keeps the memory alive: a buffer, or a foreign owner
    T* data_ = nullptr;              ///< the first element, inside storage_
    devtensor::shape shape_;
    D dev_{};
    [[no_unique_address]] detail::origin_slot origin_;
};

/// The checked way from a run-time tensor to a static one: shares the storage,
/// throws device_mismatch when the tensor lives on another kind of device.
template <Device E, class T, class F>
[[nodiscard]] tensor<T, E> tensor_cast(const tensor<T, F>& t) {
    return tensor<T, E>(t.storage_, t.data_, t.shape_, device_cast<E>(devtensor::device(t.dev_)), t.origin());
}

/// Uninitialised storage for `s` on `dev` (torch.empty).
template <class T, Device D = cpu_device>
[[nodiscard]] tensor<T, D> empty(const shape& s, const D& dev = D{}, call_site site = call_site::current()) {
    return tensor<T, D>(s, dev, {"empty", site});
}

/// A tensor of shape `s` holding `values` (row-major), copied to `dev`.
/// `values` is any contiguous range of T: a braced list, std::vector, std::span.
template <class T, std::ranges::contiguous_range R, Device D = cpu_device>
    requires std::same_as<std::ranges::range_value_t<R>, T>
[[nodiscard]] tensor<T, D> from_values(const R& values, const shape& s, const D& dev = D{},
                                       call_site site = call_site::current()) {
    const auto n = static_cast<std::size_t>(std::ranges::size(values));
    if (static_cast<std::int64_t>(n) != s.numel())
        throw shape_error("devtensor::from_values: " + std::to_string(n) +
                          " values for shape " + s.to_string() + ", which holds " +
                          std::to_string(s.numel()));
    tensor<T, D> result(s, dev, {"from_values", site});
    detail::copy_bytes(result.data(), device(dev), std::ranges::data(values), device(), n * sizeof(T),
                       {"from_values", site, true});
    return result;
}

/// Braced-list form: from_values<float>({1, 2, 3, 4}, {2, 2}).
template <class T, Device D = cpu_device>
[[nodiscard]] tensor<T, D> from_values(std::initializer_list<T> values, const shape& s, const D& dev = D{},
                                       call_site site = call_site::current()) {
    return from_values<T>(std::span<const T>(values.begin(), values.size()), s, dev, site);
}

}  // namespace devtensor
