// DLPack interop: to_dlpack lends a tensor's memory to PyTorch, NumPy, CuPy,
// JAX...; from_dlpack wraps theirs. Zero copy both ways, on the CPU and CUDA.
//
// Optional: devtensor.hpp does not include this header, so programs that don't
// use DLPack don't need it. It needs <dlpack/dlpack.h> (DLPack 0.6 or later;
// Debian: libdlpack-dev, or github.com/dmlc/dlpack's include/ folder).
//
// DLPack's C interface carries no stream, so for CUDA memory devtensor waits at
// both ends of an exchange: to_dlpack and from_dlpack return once the device's
// queued work is done, and neither side frees memory the other may still use.
#pragma once

#if !__has_include(<dlpack/dlpack.h>)
#  error "devtensor/dlpack.hpp needs <dlpack/dlpack.h>: install libdlpack-dev (Debian) or put dmlc/dlpack's include/ folder on the include path"
#endif

#include <dlpack/dlpack.h>

#include <devtensor/backend/cuda/runtime.hpp>  // cudart::synchronize, device_guard
#include <devtensor/config.hpp>
#include <devtensor/device.hpp>
#include <devtensor/device_count.hpp>  // require_available
#include <devtensor/error.hpp>
#include <devtensor/shape.hpp>
#include <devtensor/tensor.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>

// DLPack 0.8 added kDLBool; 0.6 (Debian 12, libtorch 1.13) writes bool as uint8.
// Defined here rather than in config.hpp because it depends on dlpack.h.
#ifndef DEVTENSOR_DLPACK_HAS_BOOL
#  if defined(DLPACK_MAJOR_VERSION) || (defined(DLPACK_VERSION) && DLPACK_VERSION >= 80)
#    define DEVTENSOR_DLPACK_HAS_BOOL 1
#  else
#    define DEVTENSOR_DLPACK_HAS_BOOL 0
#  endif
#endif

namespace devtensor {

namespace detail {

/// The DLPack type of element type T: {kDLFloat, 32, 1} for float, and so on.
template <class T>
constexpr DLDataType dlpack_dtype() noexcept {
    static_assert(!std::same_as<T, long double>,
                  "devtensor::dlpack: long double has no DLPack type; convert to double first");
    DLDataType t{};
    t.bits = static_cast<std::uint8_t>(sizeof(T) * 8);
    t.lanes = 1;
    if constexpr (std::same_as<T, bool>) {
#if DEVTENSOR_DLPACK_HAS_BOOL
        t.code = static_cast<std::uint8_t>(kDLBool);
#else
        t.code = static_cast<std::uint8_t>(kDLUInt);
#endif
    } else if constexpr (std::is_floating_point_v<T>) {
        t.code = static_cast<std::uint8_t>(kDLFloat);
    } else if constexpr (std::is_signed_v<T>) {
        t.code = static_cast<std::uint8_t>(kDLInt);
    } else {
        t.code = static_cast<std::uint8_t>(kDLUInt);
    }
    return t;
}

/// "float32", "int64", "uint8", "bfloat16", "float32x4", "code 9 with 8 bits" ...
inline std::string dlpack_dtype_name(DLDataType t) {
    std::string name;
    switch (t.code) {
        case kDLInt: name = "int"; break;
        case kDLUInt: name = "uint"; break;
        case kDLFloat: name = "float"; break;
        case kDLBfloat: name = "bfloat"; break;
        case kDLComplex: name = "complex"; break;
        case kDLOpaqueHandle: name = "opaque"; break;
#if DEVTENSOR_DLPACK_HAS_BOOL
        case kDLBool: name = "bool"; break;
#endif
        default: return "type code " + std::to_string(t.code) + " with " + std::to_string(t.bits) + " bits";
    }
    name += std::to_string(t.bits);
    if (t.lanes != 1) name += "x" + std::to_string(t.lanes);
    return name;
}

/// "kDLCPU", "kDLCUDA", ... for messages.
inline std::string dlpack_device_name(DLDeviceType type) {
    switch (type) {
        case kDLCPU: return "kDLCPU";
        case kDLCUDA: return "kDLCUDA";
        case kDLCUDAHost: return "kDLCUDAHost";
        case kDLCUDAManaged: return "kDLCUDAManaged";
        case kDLOpenCL: return "kDLOpenCL";
        case kDLVulkan: return "kDLVulkan";
        case kDLMetal: return "kDLMetal";
        case kDLVPI: return "kDLVPI";
        case kDLROCM: return "kDLROCM";
        case kDLROCMHost: return "kDLROCMHost";
        case kDLExtDev: return "kDLExtDev";
        default: return "device type " + std::to_string(static_cast<int>(type));
    }
}

/// Waits for every stream of cuda:ordinal (the other side's work included); never throws,
/// since it also runs in deleters, possibly at exit after the driver has shut down.
inline void dlpack_wait_for_device([[maybe_unused]] int ordinal) noexcept {
#if DEVTENSOR_CUDA_RUNTIME
    try {
        cudart::device_guard guard(ordinal);
        (void)cudaDeviceSynchronize();
        (void)cudaGetLastError();
    } catch (...) {
    }
#endif
}

/// What to_dlpack hands out: the DLManagedTensor, the tensor handle that keeps
/// the memory alive, and the shape and strides arrays it points to.
template <class T, class D>
struct dlpack_export {
    DLManagedTensor managed{};
    tensor<T, D> handle;
    std::array<std::int64_t, shape::max_rank> sizes{};
    std::array<std::int64_t, shape::max_rank> strides{};
    /// Where `data` points for a tensor without elements, which has no memory: some
    /// consumers (libtorch 1.13) never call the deleter of a null data pointer.
    alignas(std::max_align_t) std::byte no_elements[1]{};

    /// The DLManagedTensor's deleter: drops devtensor's handle.
    static void release(DLManagedTensor* self) noexcept {
        auto* ctx = static_cast<dlpack_export*>(self->manager_ctx);
        const devtensor::device dev(ctx->handle.device());
        // devtensor frees in order on its own stream only; the consumer may still have
        // work queued on its streams that reads this memory.
        if (dev.is_cuda()) dlpack_wait_for_device(dev.index());
        delete ctx;
    }
};

/// Owner of memory from from_dlpack: calls the producer's deleter with the last handle.
struct dlpack_import_deleter {
    devtensor::device dev;
    void operator()(DLManagedTensor* m) const noexcept {
#if DEVTENSOR_CUDA_RUNTIME
        if (dev.is_cuda()) {  // devtensor's queued work may still use the memory
            try {
                cudart::synchronize(dev.index());
            } catch (...) {
            }
        }
#endif
        if (m->deleter != nullptr) m->deleter(m);
    }
};

}  // namespace detail

/// Lends `t`'s memory to a DLPack consumer without copying (torch::utils::to_dlpack).
/// The caller owns the result and passes it on (at::fromDLPack, a "dltensor" capsule);
/// its deleter drops the handle it holds, so the memory lives until both sides are done.
/// A CUDA tensor's queued work is finished first. Throws devtensor::error for an
/// undefined tensor.
template <class T, class D>
DLManagedTensor* to_dlpack(const tensor<T, D>& t) {
    if (!t.defined())
        throw error("devtensor::to_dlpack: the tensor is undefined (default-constructed), so "
                    "there is no memory to share");
    const device dev(t.device());
    auto ctx = std::make_unique<detail::dlpack_export<T, D>>();
    ctx->handle = t;
    const auto& s = t.shape();
    for (std::size_t i = 0; i < s.rank(); ++i) {  // the view's own strides
        ctx->sizes[i] = s[i];
        ctx->strides[i] = t.strides()[i];
    }
    DLTensor& dl = ctx->managed.dl_tensor;
    dl.data = t.numel() == 0 ? static_cast<void*>(ctx->no_elements) : t.data();
    dl.device = DLDevice{dev.is_cuda() ? kDLCUDA : kDLCPU, dev.index()};
    dl.ndim = static_cast<int>(s.rank());
    dl.dtype = detail::dlpack_dtype<T>();
    dl.shape = ctx->sizes.data();
    dl.strides = ctx->strides.data();
    dl.byte_offset = 0;
    ctx->managed.manager_ctx = ctx.get();
    ctx->managed.deleter = &detail::dlpack_export<T, D>::release;
#if DEVTENSOR_CUDA_RUNTIME
    if (dev.is_cuda()) detail::cudart::synchronize(dev.index());  // the consumer reads on its own stream
#endif
    return &ctx.release()->managed;
}

/// Wraps a DLPack tensor's memory as a tensor<T, D> without copying
/// (torch::utils::from_dlpack). On success devtensor owns `m` and calls its deleter
/// when the last handle is gone; when it throws, `m` is untouched and still the
/// caller's. D = device (the default) takes any supported device; cpu_device or
/// cuda_device require that kind.
///
/// Accepts kDLCPU and kDLCUDAHost (host memory: the CPU), kDLCUDA and kDLCUDAManaged
/// (cuda:device_id); T's type (float32 for float, int64 for std::int64_t, ...; bool
/// also from uint8, as DLPack 0.6 producers write it); row-major contiguous strides
/// (or none), where dimensions of size 1 may have any stride. Throws devtensor::error
/// for another element type, shape_error for other strides or more than 8 dimensions,
/// device_error for another device type, device_unavailable for an absent GPU, and
/// device_mismatch when D is of another kind.
template <Element T, Device D = device>
tensor<T, D> from_dlpack(DLManagedTensor* m) {
    if (m == nullptr) throw error("devtensor::from_dlpack: got a null DLManagedTensor");
    const DLTensor& dl = m->dl_tensor;

    // the device
    device dev;
    switch (dl.device.device_type) {
        case kDLCPU:
        case kDLCUDAHost: dev = device(device_kind::cpu); break;
        case kDLCUDA:
        case kDLCUDAManaged:
            if (dl.device.device_id < 0)
                throw device_error("devtensor::from_dlpack: invalid CUDA device_id " +
                                   std::to_string(dl.device.device_id));
            dev = device(device_kind::cuda, dl.device.device_id);
            break;
        default:
            throw device_error("devtensor::from_dlpack: unsupported device " +
                               detail::dlpack_device_name(dl.device.device_type) +
                               "; devtensor takes kDLCPU, kDLCUDAHost, kDLCUDA and kDLCUDAManaged");
    }
    try {
        require_available(dev);
    } catch (const device_unavailable& e) {
        throw device_unavailable(std::string("devtensor::from_dlpack: ") + e.what());
    }
    if constexpr (StaticDevice<D>) {
        if (dev.kind() != D::kind())
            throw device_mismatch("devtensor::from_dlpack: the DLPack tensor is on " + to_string(dev) +
                                  ", not on a " + std::string(kind_name(D::kind())) +
                                  " device as the requested tensor type requires");
    }
    const D target = device_cast<D>(dev);

    // the element type
    const DLDataType want = detail::dlpack_dtype<T>();
    const bool bool_as_uint8 = std::same_as<T, bool> && dl.dtype.code == kDLUInt &&
                               dl.dtype.bits == 8 && dl.dtype.lanes == 1;
    if (!bool_as_uint8 &&
        (dl.dtype.code != want.code || dl.dtype.bits != want.bits || dl.dtype.lanes != want.lanes))
        throw error("devtensor::from_dlpack: the DLPack tensor holds " +
                    detail::dlpack_dtype_name(dl.dtype) + ", not " + detail::dlpack_dtype_name(want) +
                    " (the element type asked for); ask for the matching type or convert it first");

    // the shape and strides
    if (dl.ndim < 0 || static_cast<std::size_t>(dl.ndim) > shape::max_rank)
        throw shape_error("devtensor::from_dlpack: the DLPack tensor has " + std::to_string(dl.ndim) +
                          " dimensions; devtensor tensors have 0 to 8");
    const auto ndim = static_cast<std::size_t>(dl.ndim);
    if (ndim > 0 && dl.shape == nullptr)
        throw shape_error("devtensor::from_dlpack: the DLPack tensor has " + std::to_string(ndim) +
                          " dimensions but no shape array");
    const std::span<const std::int64_t> sizes(dl.shape, ndim);
    const shape s(sizes);  // shape_error for negative sizes or an overflowing count
    // DLPack's NULL strides mean row-major; devtensor views take any non-negative strides.
    const strides st = dl.strides == nullptr ? strides::contiguous(s) : strides(std::span<const std::int64_t>(dl.strides, ndim));
    for (std::size_t i = 0; i < ndim; ++i)
        if (st[i] < 0)
            throw shape_error("devtensor::from_dlpack: the DLPack tensor of shape " + s.to_string() +
                              " has strides " + st.to_string() +
                              ", with a negative stride, which devtensor views do not take (as in PyTorch); "
                              "make it contiguous first");

    // the data
    if (s.numel() > 0 && dl.data == nullptr)
        throw error("devtensor::from_dlpack: the DLPack tensor of shape " + s.to_string() +
                    " has no data pointer");
    T* data = dl.data == nullptr
                  ? nullptr
                  : reinterpret_cast<T*>(static_cast<char*>(dl.data) + dl.byte_offset);
    if (reinterpret_cast<std::uintptr_t>(data) % alignof(T) != 0)
        throw error("devtensor::from_dlpack: the data (byte_offset " +
                    std::to_string(dl.byte_offset) + ") is not aligned for " +
                    detail::dlpack_dtype_name(want));

    if (dev.is_cuda()) detail::dlpack_wait_for_device(dev.index());  // the producer's writes
    // From here on devtensor owns m (should this allocation fail, the deleter runs).
    std::shared_ptr<void> owner(m, detail::dlpack_import_deleter{dev});
    return tensor<T, D>(std::move(owner), data, s, st, target);
}

}  // namespace devtensor
