// tensor<T, D>: a cheap handle to shared, device-tagged storage plus a shape,
// like torch::Tensor or a Kokkos::View. Copying the handle copies no data.
#pragma once

#include <devtensor/autograd/hooks.hpp>
#include <devtensor/buffer.hpp>
#include <devtensor/detail/copy.hpp>
#include <devtensor/detail/small_blocks.hpp>
#include <devtensor/device.hpp>
#include <devtensor/device_count.hpp>
#include <devtensor/element.hpp>
#include <devtensor/error.hpp>
#include <devtensor/origin.hpp>
#include <devtensor/shape.hpp>
#include <devtensor/transfer.hpp>

#include <algorithm>
#include <array>
#include <concepts>
#include <functional>
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

namespace detail {
/// What a tensor's storage is held by: the memory's owner, and the count of in-place
/// writes to it that autograd checks saved tensors against (shared by every view).
struct storage_block {
    virtual ~storage_block() = default;
    std::uint64_t version = 0;
};
template <class Owner>
struct held_storage final : storage_block {
    template <class... A>
    explicit held_storage(A&&... args) : owner(std::forward<A>(args)...) {}
    Owner owner;
};
}  // namespace detail

template <class T>
inline constexpr bool is_tensor_v = false;
template <class T, class D>
inline constexpr bool is_tensor_v<tensor<T, D>> = true;

namespace detail {
DEVTENSOR_BEGIN_TU_NAMESPACE
/// A contiguous copy of `t` converted to U on t's device (ops/copy.hpp): what
/// contiguous(), clone(), reshape() and to<U>() run.
template <class U, class T, class D>
tensor<U, D> copy_as(const tensor<T, D>& t, const origin& made);
DEVTENSOR_END_TU_NAMESPACE

template <class T, class D>
void read_elements(const tensor<T, D>& t, T* dst, const transfer_request& why);

/// Strides that view elements laid out by (from, from_strides) as shape `to`, when
/// they exist (PyTorch's computeStride): dimensions merge or split only within runs
/// that are contiguous among themselves.
inline bool view_strides(const shape& from, const strides& from_strides, const shape& to,
                         std::array<std::int64_t, shape::max_rank>& result) {
    if (from.numel() == 0 || from.rank() == 0) {
        const strides c = strides::contiguous(to);
        std::copy(c.begin(), c.end(), result.begin());
        return true;
    }
    auto view_d = static_cast<std::int64_t>(to.rank()) - 1;
    std::int64_t chunk_base = from_strides[from.rank() - 1], from_numel = 1, view_numel = 1;
    for (auto d = static_cast<std::int64_t>(from.rank()) - 1; d >= 0; --d) {
        const auto u = static_cast<std::size_t>(d);
        from_numel *= from[u];
        if (d == 0 || (from[u - 1] != 1 && from_strides[u - 1] != from_numel * chunk_base)) {
            while (view_d >= 0 && (view_numel < from_numel || to[static_cast<std::size_t>(view_d)] == 1)) {
                result[static_cast<std::size_t>(view_d)] = view_numel * chunk_base;
                view_numel *= to[static_cast<std::size_t>(view_d)];
                --view_d;
            }
            if (view_numel != from_numel) return false;
            if (d > 0) {
                chunk_base = from_strides[u - 1];
                from_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}

/// A shape with at most one -1, which takes what the other dimensions leave of `numel`.
inline shape infer_shape(const char* op, std::initializer_list<std::int64_t> dims, std::int64_t numel) {
    std::array<std::int64_t, shape::max_rank> out{};
    if (dims.size() > shape::max_rank) throw shape_error(std::string("devtensor::") + op + ": more than 8 dimensions");
    std::size_t n = 0, inferred = shape::max_rank;
    std::int64_t known = 1;
    for (const std::int64_t d : dims) {
        if (d == -1) {
            if (inferred != shape::max_rank)
                throw shape_error(std::string("devtensor::") + op + ": only one dimension can be inferred (-1)");
            inferred = n;
        } else if (d < 0) {
            throw shape_error(std::string("devtensor::") + op + ": invalid shape dimension " + std::to_string(d));
        } else {
            known *= d;
        }
        out[n++] = d;
    }
    if (inferred != shape::max_rank) {
        if (known == 0 || numel % known != 0)
            throw shape_error(std::string("devtensor::") + op + ": shape '" + shape(std::span(out.data(), n)).to_string() +
                              "' is invalid for input of size " + std::to_string(numel));
        out[inferred] = numel / known;
    }
    return shape(std::span<const std::int64_t>(out.data(), n));
}

/// The elements of (s, st) at `base` on the host, gathered in row-major order into `dst`.
template <class T>
void gather(const T* base, const shape& s, const strides& st, T* dst) {
    const std::int64_t n = s.numel();
    if (n == 0) return;
    std::array<std::int64_t, shape::max_rank> index{};
    std::int64_t offset = 0;
    const std::size_t rank = s.rank();
    for (std::int64_t i = 0; i < n; ++i) {
        dst[i] = base[offset];
        for (std::size_t d = rank; d-- > 0;) {  // the odometer: last dimension fastest
            offset += st[d];
            if (++index[d] < s[d]) break;
            offset -= st[d] * s[d];
            index[d] = 0;
        }
    }
}
}  // namespace detail

/// A handle to the elements of a tensor of type T on a device of type D:
/// cpu_device or cuda_device (checked at compile time) or device (checked at run
/// time). It views `shape()` elements at `data()` with `strides()` (row-major
/// contiguous unless a view op made it otherwise), in storage it shares.
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
    tensor(tensor&& other) noexcept { take(other); }
    tensor& operator=(tensor&& other) noexcept {
        if (this != &other) take(other);
        return *this;
    }
    ~tensor() = default;

    /// Uninitialised contiguous storage for `s` on `dev` (see empty()), made by `made`.
    tensor(const devtensor::shape& s, const D& dev, const devtensor::origin& made = {})
        : shape_(s), strides_(devtensor::strides::contiguous(s)), dev_(dev), origin_(made) {
        using block = detail::held_storage<buffer<T, devtensor::device>>;
        auto storage = std::allocate_shared<block>(
            detail::small_block_allocator<block>{}, static_cast<std::size_t>(s.numel()), devtensor::device(dev),
            detail::allocation_info{&shape_, detail::dtype_of<T>, made});
        data_ = storage->owner.data();
        storage_ = std::move(storage);
    }

    /// Wraps memory that `owner` keeps alive, without copying (torch::from_blob with
    /// a deleter; from_dlpack uses it): the elements of shape `s` at `data` on `dev`,
    /// row-major or with the given strides, valid until the last handle and `owner` are gone.
    tensor(std::shared_ptr<void> owner, T* data, const devtensor::shape& s, const D& dev,
           const devtensor::origin& made = {})
        : tensor(std::move(owner), data, s, devtensor::strides::contiguous(s), dev, made) {}
    tensor(std::shared_ptr<void> owner, T* data, const devtensor::shape& s, const devtensor::strides& st,
           const D& dev, const devtensor::origin& made = {})
        : tensor(std::shared_ptr<detail::storage_block>(
                     std::make_shared<detail::held_storage<std::shared_ptr<void>>>(std::move(owner))),
                 data, s, st, dev, made) {}

    /// A static-device tensor viewed through the run-time type; shares the storage.
    template <StaticDevice E>
        requires std::same_as<D, devtensor::device>
    tensor(const tensor<T, E>& other)  // NOLINT: implicit on purpose, like the devices
        : storage_(other.storage_), data_(other.data_), shape_(other.shape_), strides_(other.strides_),
          dev_(other.dev_), origin_(other.origin_), autograd_(other.autograd_) {}
    template <StaticDevice E>
        requires std::same_as<D, devtensor::device>
    tensor(tensor<T, E>&& other) noexcept {  // NOLINT: implicit, and the source is left undefined
        take(other);
    }

    // ---- inspection ---------------------------------------------------------------------

    D device() const noexcept { return dev_; }
    const devtensor::shape& shape() const noexcept { return shape_; }
    /// torch's sizes(): the shape.
    const devtensor::shape& sizes() const noexcept { return shape_; }
    /// The size of dimension `d` (negative counts from the end).
    std::int64_t size(std::int64_t d) const { return shape_[detail::wrap_dim("size", d, shape_.rank())]; }
    const devtensor::strides& strides() const noexcept { return strides_; }
    std::int64_t stride(std::int64_t d) const { return strides_[detail::wrap_dim("stride", d, shape_.rank())]; }
    /// Elements held: 0 for an undefined tensor.
    std::int64_t numel() const noexcept { return defined() ? shape_.numel() : 0; }
    std::int64_t dim() const noexcept { return static_cast<std::int64_t>(shape_.rank()); }
    bool defined() const noexcept { return storage_ != nullptr; }
    devtensor::dtype dtype() const noexcept { return dtype_v<T>; }
    static constexpr std::int64_t element_size() noexcept { return sizeof(T); }
    bool is_cpu() const noexcept { return devtensor::device(dev_).is_cpu(); }
    bool is_cuda() const noexcept { return devtensor::device(dev_).is_cuda(); }
    /// Row-major with no gaps: what the fast paths and the copies take as is.
    bool is_contiguous() const noexcept { return devtensor::is_contiguous(shape_, strides_); }

    /// First element: a device pointer on CUDA; nullptr when the tensor holds no elements.
    T* data() const noexcept { return data_; }

    /// The op that made this tensor and the user's call that ran it (DESIGN §14).
    devtensor::origin origin() const noexcept { return detail::read(origin_); }

    /// Same storage and same view: what `is` means for PyTorch tensors.
    template <class E>
    bool is_same(const tensor<T, E>& other) const noexcept {
        return storage_ == other.storage_ && data_ == other.data_ && shape_ == other.shape_ &&
               strides_ == other.strides_;
    }

    // ---- copies between devices and to the host ------------------------------------------

    /// The tensor on `dev`: this very storage when it is there already, else a
    /// contiguous copy.
    /// `non_blocking` (torch's): from pinned memory (pin_memory()) to a GPU, the copy is
    /// queued and the call returns at once, so the host's next work overlaps it; the
    /// source must then stay unchanged until the device's queued work is done (the
    /// GPU's later ops run after the copy). Other copies are complete on return.
    template <Device E>
    [[nodiscard]] tensor<T, E> to(const E& dev, bool non_blocking = false,
                                  call_site site = call_site::current()) const {
        return copy_to(dev, {"to", site}, non_blocking);
    }
    template <Device E>
    [[nodiscard]] tensor<T, E> to(const E& dev, call_site site) const {
        return copy_to(dev, {"to", site});
    }
    [[nodiscard]] tensor<T, cpu_device> cpu(call_site site = call_site::current()) const {
        return copy_to(cpu_device{}, {"cpu", site});
    }
    [[nodiscard]] tensor<T, cuda_device> cuda(int ordinal = 0, bool non_blocking = false,
                                              call_site site = call_site::current()) const {
        return copy_to(cuda_device{ordinal}, {"cuda", site}, non_blocking);
    }
    [[nodiscard]] tensor<T, cuda_device> cuda(int ordinal, call_site site) const {
        return copy_to(cuda_device{ordinal}, {"cuda", site});
    }

    /// A contiguous copy of this host tensor in page-locked memory (torch's
    /// pin_memory()), which a GPU reads directly: `to(gpu, true)` from it overlaps
    /// the host's work. Needs a GPU (device_unavailable otherwise, as in torch).
    [[nodiscard]] tensor pin_memory(call_site site = call_site::current()) const {
        static_assert(!std::same_as<D, cuda_device>,
                      "devtensor::tensor::pin_memory: pins host memory; pin the host copy (t.cpu().pin_memory())");
        require_defined("pin_memory");
        if (!devtensor::device(dev_).is_cpu())
            throw device_mismatch("devtensor::tensor::pin_memory: pins host memory, but the tensor is on " +
                                  to_string(dev_) + "; pin the host copy (t.cpu().pin_memory())");
        const devtensor::origin made{"pin_memory", site};
        std::shared_ptr<void> storage = detail::allocate_pinned(sizeof(T) * static_cast<std::size_t>(numel()), made);
        T* first = static_cast<T*>(storage.get());
        detail::read_elements(*this, first, {"pin_memory", site, true, origin()});
        return tensor(std::move(storage), first, shape_, dev_, made);
    }

    /// Whether the elements lie in page-locked host memory (pin_memory()).
    [[nodiscard]] bool is_pinned() const {
#if DEVTENSOR_CUDA_RUNTIME
        return devtensor::device(dev_).is_cpu() && data_ != nullptr && cuda_device_count() > 0 &&
               detail::cudart::is_pinned(data_);
#else
        return false;
#endif
    }

    /// The elements converted to U (PyTorch's .to(dtype)): float -> integer truncates
    /// toward zero and saturates, NaN -> 0, -> bool is != 0; the same on every device.
    /// Self when U is T. Runs a kernel: compile the file with nvcc for a GPU tensor.
    template <Element U, class Tu = detail::tu_tag>
    [[nodiscard]] tensor<U, D> to(call_site site = call_site::current()) const {
        require_defined("to");
        if constexpr (std::same_as<U, T>) return *this;
        else return detail::copy_as<U>(*this, {"to", site});
    }
    /// The elements converted to U on `dev` (.to(device, dtype)): moved, then converted there.
    template <Element U, Device E, class Tu = detail::tu_tag>
    [[nodiscard]] tensor<U, E> to(const E& dev, call_site site = call_site::current()) const {
        return copy_to(dev, {"to", site}).template to<U, Tu>(site);
    }

    /// The elements, copied to the host in row-major order.
    /// An implicit copy (DESIGN §14): a transfer_guard may log or refuse it.
    [[nodiscard]] std::vector<T> to_vector(call_site site = call_site::current()) const {
        require_defined("to_vector");
        const auto n = static_cast<std::size_t>(numel());
        const detail::transfer_request why{"to_vector", site, false, origin()};
        if constexpr (std::same_as<T, bool>) {  // std::vector<bool> has no data()
            const auto host = std::make_unique<bool[]>(n);
            detail::read_elements(*this, host.get(), why);
            return std::vector<bool>(host.get(), host.get() + n);
        } else {
            std::vector<T> values(n);
            detail::read_elements(*this, values.data(), why);
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

    // ---- element access (host memory only) ------------------------------------------------

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
            offset += static_cast<std::int64_t>(i) * strides_[d];
            ++d;
        };
        (step(index), ...);
        return data()[offset];
    }

    // ---- views: no copy, the same storage (DESIGN §11) --------------------------------------

    /// Row i (select(0, i)), a view on any device, as in PyTorch.
    tensor operator[](std::int64_t i) const { return select(0, i, call_site{}); }

    /// The elements as shape `s` without a copy; shape_error when the strides do not allow it.
    tensor view(const devtensor::shape& s, call_site site = call_site::current()) const {
        require_defined("view");
        if (s.numel() != shape_.numel())
            throw shape_error("devtensor::view: shape '" + s.to_string() + "' is invalid for input of size " +
                              std::to_string(shape_.numel()) + " (shape " + shape_.to_string() + ")");
        std::array<std::int64_t, devtensor::shape::max_rank> st{};
        if (!detail::view_strides(shape_, strides_, s, st))
            throw shape_error("devtensor::view: a tensor of shape " + shape_.to_string() + " and strides " +
                              strides_.to_string() + " cannot be viewed as " + s.to_string() +
                              ": its elements are not evenly spaced in memory for that shape; use "
                              "reshape(), which copies when it must (or contiguous() first)");
        return view_of(s, devtensor::strides(std::span<const std::int64_t>(st.data(), s.rank())), data_,
                       {"view", site}, [s](const auto& z) { return z.view(s, call_site{}); });
    }
    tensor view(std::initializer_list<std::int64_t> dims, call_site site = call_site::current()) const {
        return view(detail::infer_shape("view", dims, shape_.numel()), site);
    }

    /// A view when the strides allow one, else a contiguous copy (torch.reshape).
    template <class Tu = detail::tu_tag>
    tensor reshape(const devtensor::shape& s, call_site site = call_site::current()) const {
        require_defined("reshape");
        std::array<std::int64_t, devtensor::shape::max_rank> st{};
        if (s.numel() == shape_.numel() && detail::view_strides(shape_, strides_, s, st))
            return view_of(s, devtensor::strides(std::span<const std::int64_t>(st.data(), s.rank())), data_,
                           {"reshape", site}, [s](const auto& z) { return z.view(s, call_site{}); });
        if (s.numel() != shape_.numel())
            throw shape_error("devtensor::reshape: shape '" + s.to_string() + "' is invalid for input of size " +
                              std::to_string(shape_.numel()) + " (shape " + shape_.to_string() + ")");
        const tensor copy = detail::copy_as<T>(*this, {"reshape", site});
        tensor result(copy.storage_, copy.data_, s, devtensor::strides::contiguous(s), dev_, copy.origin());
        if (detail::recording(*this))
            detail::record_view(*this, result, "reshape", [s](const auto& z) { return z.view(s, call_site{}); });
        return result;
    }
    template <class Tu = detail::tu_tag>
    tensor reshape(std::initializer_list<std::int64_t> dims, call_site site = call_site::current()) const {
        return reshape<Tu>(detail::infer_shape("reshape", dims, shape_.numel()), site);
    }

    /// Dimensions start..end merged into one (a view when possible, like reshape).
    template <class Tu = detail::tu_tag>
    tensor flatten(std::int64_t start = 0, std::int64_t end = -1, call_site site = call_site::current()) const {
        require_defined("flatten");
        const std::size_t first = detail::wrap_dim("flatten", start, shape_.rank());
        const std::size_t last = detail::wrap_dim("flatten", end, shape_.rank());
        if (first > last)
            throw index_error("devtensor::flatten: start_dim " + std::to_string(start) +
                              " cannot come after end_dim " + std::to_string(end));
        if (shape_.rank() == 0) return reshape<Tu>(devtensor::shape{1}, site);
        if (first == last) return view_of(shape_, strides_, data_, {"flatten", site}, [](const auto& z) { return z; });  // as torch: itself
        std::vector<std::int64_t> dims;
        for (std::size_t d = 0; d < first; ++d) dims.push_back(shape_[d]);
        std::int64_t merged = 1;
        for (std::size_t d = first; d <= last; ++d) merged *= shape_[d];
        dims.push_back(merged);
        for (std::size_t d = last + 1; d < shape_.rank(); ++d) dims.push_back(shape_[d]);
        return reshape<Tu>(devtensor::shape(dims), site);
    }

    /// Without dimension `d` when its size is 1 (else the same view); without every
    /// size-1 dimension when no dimension is given.
    tensor squeeze(std::int64_t d, call_site site = call_site::current()) const {
        require_defined("squeeze");
        const std::size_t k = detail::wrap_dim("squeeze", d, shape_.rank());
        const auto redo = [d](const auto& z) { return z.squeeze(d, call_site{}); };
        if (shape_.rank() == 0 || shape_[k] != 1) return view_of(shape_, strides_, data_, {"squeeze", site}, redo);
        return without_dim(k, data_, {"squeeze", site}, redo);
    }
    tensor squeeze(call_site site = call_site::current()) const {
        require_defined("squeeze");
        std::vector<std::int64_t> dims, st;
        for (std::size_t d = 0; d < shape_.rank(); ++d)
            if (shape_[d] != 1) dims.push_back(shape_[d]), st.push_back(strides_[d]);
        return view_of(devtensor::shape(dims), devtensor::strides(st), data_, {"squeeze", site},
                       [](const auto& z) { return z.squeeze(call_site{}); });
    }

    /// A size-1 dimension inserted at `d` (0 ... dim(), negative counts from the end).
    tensor unsqueeze(std::int64_t d, call_site site = call_site::current()) const {
        require_defined("unsqueeze");
        const std::size_t k = detail::wrap_dim("unsqueeze", d, shape_.rank() + 1);
        std::vector<std::int64_t> dims(shape_.begin(), shape_.end()), st(strides_.begin(), strides_.end());
        const std::int64_t step = k < shape_.rank() ? shape_[k] * strides_[k] : 1;
        dims.insert(dims.begin() + static_cast<std::ptrdiff_t>(k), 1);
        st.insert(st.begin() + static_cast<std::ptrdiff_t>(k), step);
        return view_of(devtensor::shape(dims), devtensor::strides(st), data_, {"unsqueeze", site},
                       [d](const auto& z) { return z.unsqueeze(d, call_site{}); });
    }

    /// Dimensions d0 and d1 swapped.
    tensor transpose(std::int64_t d0, std::int64_t d1, call_site site = call_site::current()) const {
        require_defined("transpose");
        const std::size_t a = detail::wrap_dim("transpose", d0, shape_.rank());
        const std::size_t b = detail::wrap_dim("transpose", d1, shape_.rank());
        std::array<std::int64_t, devtensor::shape::max_rank> dims{}, st{};  // no allocation for a view
        std::copy(shape_.begin(), shape_.end(), dims.begin());
        std::copy(strides_.begin(), strides_.end(), st.begin());
        if (shape_.rank() > 0) std::swap(dims[a], dims[b]), std::swap(st[a], st[b]);
        const std::span<const std::int64_t> new_dims(dims.data(), shape_.rank()), new_strides(st.data(), shape_.rank());
        return view_of(devtensor::shape(new_dims), devtensor::strides(new_strides), data_, {"transpose", site},
                       [d0, d1](const auto& z) { return z.transpose(d0, d1, call_site{}); });
    }

    /// The transpose of a matrix (a tensor of rank 0 or 1 is its own); rank > 2 refused.
    tensor t(call_site site = call_site::current()) const {
        require_defined("t");
        if (shape_.rank() > 2)
            throw shape_error("devtensor::t: expects a tensor with <= 2 dimensions, but it has " +
                              std::to_string(shape_.rank()) + " (shape " + shape_.to_string() +
                              "); use transpose(d0, d1)");
        return shape_.rank() < 2 ? view_of(shape_, strides_, data_, {"t", site}, [](const auto& z) { return z; }) : transpose(0, 1, site);
    }

    /// The dimensions in the order `order` (a permutation of 0 ... dim() - 1).
    tensor permute(std::initializer_list<std::int64_t> order, call_site site = call_site::current()) const {
        return permute(std::span<const std::int64_t>(order.begin(), order.size()), site);
    }
    tensor permute(std::span<const std::int64_t> order, call_site site = call_site::current()) const {
        require_defined("permute");
        if (order.size() != shape_.rank())
            throw shape_error("devtensor::permute: " + std::to_string(order.size()) +
                              " dimensions given for a tensor of shape " + shape_.to_string());
        std::vector<std::int64_t> dims, st;
        std::array<bool, devtensor::shape::max_rank> seen{};
        for (const std::int64_t d : order) {
            const std::size_t k = detail::wrap_dim("permute", d, shape_.rank());
            if (seen[k]) throw shape_error("devtensor::permute: dimension " + std::to_string(d) + " repeats");
            seen[k] = true;
            dims.push_back(shape_[k]);
            st.push_back(strides_[k]);
        }
        return view_of(devtensor::shape(dims), devtensor::strides(st), data_, {"permute", site},
                       [o = std::vector<std::int64_t>(order.begin(), order.end())](const auto& z) {
                           return z.permute(std::span<const std::int64_t>(o), call_site{});
                       });
    }

    /// Elements start ... start + length - 1 of dimension `d`.
    tensor narrow(std::int64_t d, std::int64_t start, std::int64_t length, call_site site = call_site::current()) const {
        require_defined("narrow");
        if (shape_.rank() == 0) throw index_error("devtensor::narrow: cannot be applied to a 0-dim tensor");
        const std::size_t k = detail::wrap_dim("narrow", d, shape_.rank());
        const std::int64_t size = shape_[k];
        if (start != size) {  // the end is a valid start; anything else wraps like a dim (size 0 as 1)
            const std::int64_t r = std::max<std::int64_t>(size, 1);
            if (start < -r || start >= r)
                throw index_error("devtensor::narrow: start " + std::to_string(start) +
                                  " is out of range for dimension " + std::to_string(d) + " of size " +
                                  std::to_string(size));
            if (start < 0) start += r;
        }
        if (length < 0 || start + length > size)
            throw index_error("devtensor::narrow: start (" + std::to_string(start) + ") + length (" +
                              std::to_string(length) + ") exceeds dimension size (" + std::to_string(size) + ")");
        std::vector<std::int64_t> dims(shape_.begin(), shape_.end());
        dims[k] = length;
        return view_of(devtensor::shape(dims), strides_, length == 0 ? data_ : data_ + start * strides_[k],
                       {"narrow", site},
                       [d, start, length](const auto& z) { return z.narrow(d, start, length, call_site{}); });
    }

    /// Index i of dimension `d`, which goes away (negative i counts from the end).
    tensor select(std::int64_t d, std::int64_t i, call_site site = call_site::current()) const {
        require_defined("select");
        if (shape_.rank() == 0) throw index_error("devtensor::select: cannot be applied to a 0-dim tensor");
        const std::size_t k = detail::wrap_dim("select", d, shape_.rank());
        const std::int64_t size = shape_[k];
        if (i < -size || i >= size)
            throw index_error("devtensor::select: index " + std::to_string(i) + " is out of range for dimension " +
                              std::to_string(d) + " of size " + std::to_string(size) + " (shape " +
                              shape_.to_string() + ")");
        if (i < 0) i += size;
        return without_dim(k, data_ + i * strides_[k], {"select", site},
                           [d, i](const auto& z) { return z.select(d, i, call_site{}); });
    }

    /// This tensor broadcast to `s` without a copy: size-1 dimensions repeat (stride 0),
    /// new leading dimensions are added; -1 keeps a size.
    tensor expand(std::initializer_list<std::int64_t> dims, call_site site = call_site::current()) const {
        require_defined("expand");
        const std::size_t rank = dims.size();
        if (rank < shape_.rank() || rank > devtensor::shape::max_rank)
            throw shape_error("devtensor::expand: the number of sizes provided (" + std::to_string(rank) +
                              ") must be greater or equal to the number of dimensions in the tensor (" +
                              std::to_string(shape_.rank()) + ")");
        std::vector<std::int64_t> out(dims), st(rank, 0);
        const std::size_t lead = rank - shape_.rank();
        for (std::size_t d = rank; d-- > 0;) {  // from the last: a new dimension's stride follows the next's
            if (d < lead) {
                if (out[d] < 0)
                    throw shape_error("devtensor::expand: -1 is not allowed in a new leading dimension");
                // size 1: the stride torch gives (any would do); repeated: 0
                st[d] = out[d] != 1 ? 0 : d + 1 < rank ? out[d + 1] * st[d + 1] : 1;
                continue;
            }
            const std::int64_t have = shape_[d - lead];
            if (out[d] == -1) out[d] = have;
            if (have == out[d]) st[d] = strides_[d - lead];
            else if (have != 1 || out[d] < 0)
                throw shape_error("devtensor::expand: the expanded size of the tensor (" + std::to_string(out[d]) +
                                  ") must match the existing size (" + std::to_string(have) +
                                  ") at non-singleton dimension " + std::to_string(d) + "; target sizes " +
                                  devtensor::shape(std::vector<std::int64_t>(dims)).to_string() + ", tensor shape " +
                                  shape_.to_string());
        }
        return view_of(devtensor::shape(out), devtensor::strides(st), data_, {"expand", site}, detail::sums_back{});
    }
    tensor expand(const devtensor::shape& s, call_site site = call_site::current()) const {
        std::vector<std::int64_t> dims(s.begin(), s.end());
        if (dims.size() > devtensor::shape::max_rank) throw shape_error("devtensor::expand: more than 8 dimensions");
        std::array<std::int64_t, devtensor::shape::max_rank> a{};
        std::copy(dims.begin(), dims.end(), a.begin());
        return expand_dims(std::span<const std::int64_t>(a.data(), dims.size()), site);
    }

    /// Self when already contiguous, else a contiguous copy on the same device.
    template <class Tu = detail::tu_tag>
    [[nodiscard]] tensor contiguous(call_site site = call_site::current()) const {
        require_defined("contiguous");
        if (is_contiguous()) return *this;
        tensor result = detail::copy_as<T>(*this, {"contiguous", site});
        if (detail::recording(*this)) detail::record_view(*this, result, "contiguous", [](const auto& z) { return z; });
        return result;
    }

    /// A deep, contiguous copy on the same device (torch.clone).
    template <class Tu = detail::tu_tag>
    [[nodiscard]] tensor clone(call_site site = call_site::current()) const {
        require_defined("clone");
        tensor result = detail::copy_as<T>(*this, {"clone", site});
        if (detail::recording(*this)) detail::record_view(*this, result, "clone", [](const auto& z) { return z; });
        return result;
    }

    // ---- autograd (DESIGN §12; defined in autograd/tensor_autograd.hpp) -------------------

    /// Whether a gradient flows through this tensor: a leaf marked with requires_grad_(),
    /// or the result of an op on one while autograd recorded.
    bool requires_grad() const noexcept;
    /// Marks a leaf (floating-point) so that backward() fills its grad(). Copies of the
    /// handle made afterwards share the mark and the gradient.
    tensor& requires_grad_(bool on = true);
    /// The gradient backward() accumulated into this leaf; undefined before the first
    /// backward() and after zero_grad().
    tensor grad() const;
    /// Replaces the gradient (undefined: none, as `t.grad = None`).
    void set_grad(const tensor<T, devtensor::device>& g) const;
    /// Not made by a recorded op (torch's is_leaf).
    bool is_leaf() const noexcept;
    /// The same elements with no autograd record (torch.detach).
    tensor detach() const;
    /// Gradients of this scalar with respect to every leaf it came from, added into
    /// their grad(); the graph's saved tensors are freed unless `retain_graph`.
    template <class Tu = detail::tu_tag>
    void backward(bool retain_graph = false, call_site site = call_site::current()) const;
    /// The same from a non-scalar, with `gradient` (this tensor's shape) as its gradient.
    template <class E, class Tu = detail::tu_tag>
    void backward(const tensor<T, E>& gradient, bool retain_graph = false,
                  call_site site = call_site::current()) const;
    /// Calls `hook(grad)` each time backward() has added into this leaf's gradient
    /// (PyTorch's register_post_accumulate_grad_hook).
    void register_post_accumulate_grad_hook(std::function<void(tensor<T, devtensor::device>&)> hook) const;

private:
    template <class, class>
    friend class tensor;
    template <Device E, class U, class F>
    friend tensor<U, E> tensor_cast(const tensor<U, F>&);
    friend struct detail::autograd_access;

    template <class Other>
    void take(Other& other) noexcept {
        // The source reset from constants: built on the stack (std::exchange, `= {}`), an
        // empty shape is two 8-byte stores read back as one 16-byte load, a store-forwarding
        // stall on every move (perf put a tenth of a tiny training step's samples there).
        static constexpr devtensor::shape no_shape{};
        static constexpr devtensor::strides no_strides{};
        static constexpr detail::origin_slot no_origin{};
        storage_ = std::move(other.storage_);
        data_ = std::exchange(other.data_, nullptr);
        shape_ = other.shape_;
        other.shape_ = no_shape;
        strides_ = other.strides_;
        other.strides_ = no_strides;
        dev_ = other.dev_;
        origin_ = other.origin_;
        other.origin_ = no_origin;
        autograd_ = std::move(other.autograd_);
    }

    /// The one constructor the others end in: a view of `block`'s memory.
    tensor(std::shared_ptr<detail::storage_block> block, T* data, const devtensor::shape& s,
           const devtensor::strides& st, const D& dev, const devtensor::origin& made)
        : storage_(std::move(block)), data_(data), shape_(s), strides_(st), dev_(dev), origin_(made) {
        if (st.rank() != s.rank())
            throw shape_error("devtensor::tensor: strides " + st.to_string() + " for shape " + s.to_string());
    }

    /// A view of this storage, made by `made`; `redo` makes the same view of another
    /// tensor of this shape (autograd's backward of it), or is sums_back (expand).
    template <class Redo>
    tensor view_of(const devtensor::shape& s, const devtensor::strides& st, T* first, const devtensor::origin& made,
                   Redo redo) const {
        tensor result(storage_, first, s, st, dev_, made);
        if (detail::recording(*this)) detail::record_view(*this, result, made.op, std::move(redo));
        return result;
    }
    template <class Redo>
    tensor without_dim(std::size_t k, T* first, const devtensor::origin& made, Redo redo) const {
        std::vector<std::int64_t> dims(shape_.begin(), shape_.end()), st(strides_.begin(), strides_.end());
        dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(k));
        st.erase(st.begin() + static_cast<std::ptrdiff_t>(k));
        return view_of(devtensor::shape(dims), devtensor::strides(st), first, made, std::move(redo));
    }
    tensor expand_dims(std::span<const std::int64_t> dims, call_site site) const {
        switch (dims.size()) {  // through the braced-list form, which holds the rules
#define DEVTENSOR_EXPAND_CASE(N, ...) \
    case N: return expand({__VA_ARGS__}, site);
            DEVTENSOR_EXPAND_CASE(0)
            DEVTENSOR_EXPAND_CASE(1, dims[0])
            DEVTENSOR_EXPAND_CASE(2, dims[0], dims[1])
            DEVTENSOR_EXPAND_CASE(3, dims[0], dims[1], dims[2])
            DEVTENSOR_EXPAND_CASE(4, dims[0], dims[1], dims[2], dims[3])
            DEVTENSOR_EXPAND_CASE(5, dims[0], dims[1], dims[2], dims[3], dims[4])
            DEVTENSOR_EXPAND_CASE(6, dims[0], dims[1], dims[2], dims[3], dims[4], dims[5])
            DEVTENSOR_EXPAND_CASE(7, dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], dims[6])
            default: return expand({dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], dims[6], dims[7]}, site);
#undef DEVTENSOR_EXPAND_CASE
        }
    }

    /// This tensor on `dev` for `made` (to, cpu, cuda): a copy the user asked for.
    template <Device E>
    tensor<T, E> copy_to(const E& dev, const devtensor::origin& made, bool non_blocking = false) const {
        require_defined(made.op);
        if (devtensor::device(dev) == devtensor::device(dev_)) {  // the very tensor, made where it was
            tensor<T, E> same(storage_, data_, shape_, strides_, dev, origin());
            same.autograd_ = autograd_;
            return same;
        }
        tensor<T, E> result(shape_, dev, made);
        if (detail::recording(*this)) detail::record_transfer(*this, result, made.op);
        const detail::transfer_request why{made.op, made.site, true, origin(), non_blocking};
        if (is_contiguous()) {
            detail::copy_bytes(result.data(), devtensor::device(dev), data(), devtensor::device(dev_),
                               sizeof(T) * static_cast<std::size_t>(numel()), why);
        } else if (devtensor::device(dev).is_cpu()) {
            detail::read_elements(*this, result.data(), why);
        } else {  // gathered on the host, then copied over
            const auto host = std::make_unique<T[]>(static_cast<std::size_t>(numel()));
            detail::read_elements(*this, host.get(), why);
            detail::copy_bytes(result.data(), devtensor::device(dev), host.get(), devtensor::device(),
                               sizeof(T) * static_cast<std::size_t>(numel()), why);
        }
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
        bool in_range = false;
        if constexpr (std::same_as<I, bool>) in_range = static_cast<std::int64_t>(i) < size;
        else in_range = std::in_range<std::int64_t>(i) && static_cast<std::int64_t>(i) >= 0 &&
                        static_cast<std::int64_t>(i) < size;
        if (!in_range)
            throw index_error("devtensor::tensor: index " + std::to_string(i) +
                              " is out of range for dimension " + std::to_string(dim) + " of size " +
                              std::to_string(size) + " (shape " + shape_.to_string() + ")");
    }

    std::shared_ptr<detail::storage_block> storage_;  ///< keeps the memory alive: a buffer, or a foreign owner
    T* data_ = nullptr;              ///< the first element, inside storage_
    devtensor::shape shape_;
    devtensor::strides strides_;
    D dev_{};
    [[no_unique_address]] detail::origin_slot origin_;
    /// Autograd's record (requires_grad, grad, the op that made it); null for a tensor
    /// no gradient flows through, so recording costs one test of this pointer.
    std::shared_ptr<detail::autograd_meta<T>> autograd_;
};

namespace detail {
/// The elements of `t` in row-major order into host memory `dst`, for `why`: one
/// copy when t is contiguous; else the span it views is copied to the host and gathered.
template <class T, class D>
void read_elements(const tensor<T, D>& t, T* dst, const transfer_request& why) {
    const device from(t.device()), host;
    if (t.is_contiguous()) {
        copy_bytes(dst, host, t.data(), from, sizeof(T) * static_cast<std::size_t>(t.numel()), why);
    } else if (from.is_cpu()) {
        gather(t.data(), t.shape(), t.strides(), dst);
    } else {
        const auto span = static_cast<std::size_t>(extent(t.shape(), t.strides()));
        const auto staged = std::make_unique<T[]>(span);
        copy_bytes(staged.get(), host, t.data(), from, sizeof(T) * span, why);
        gather(staged.get(), t.shape(), t.strides(), dst);
    }
}
}  // namespace detail

/// The checked way from a run-time tensor to a static one: shares the storage,
/// throws device_mismatch when the tensor lives on another kind of device.
template <Device E, class T, class F>
[[nodiscard]] tensor<T, E> tensor_cast(const tensor<T, F>& t) {
    tensor<T, E> result(t.storage_, t.data_, t.shape_, t.strides_, device_cast<E>(devtensor::device(t.dev_)),
                        t.origin());
    result.autograd_ = t.autograd_;
    return result;
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

// The copies that contiguous(), clone(), reshape() and to<U>() run need the engine,
// which needs the tensor: included last.
#include <devtensor/ops/copy.hpp>
#include <devtensor/autograd/graph.hpp>
#include <devtensor/autograd/tensor_autograd.hpp>
