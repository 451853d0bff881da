// The rules every op with tensor operands follows (DESIGN §5, §6): compile-time
// checks where the types know, run-time checks otherwise, and the one place an
// op picks its backend (on_device).
#pragma once

#include <devtensor/device.hpp>
#include <devtensor/element.hpp>  // DEVTENSOR_FOR_EACH_ELEMENT
#include <devtensor/error.hpp>
#include <devtensor/origin.hpp>
#include <devtensor/shape.hpp>  // extent

#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>

/// Two static operands of different device kinds do not compile.
#define DEVTENSOR_STATIC_CHECK_SAME_DEVICE(op, DA, DB)                                             \
    static_assert(!(::devtensor::HostAccessible<DA> && ::devtensor::StaticCudaDevice<DB>),         \
                  "devtensor::" op ": operands live on different devices (cpu vs cuda); move one " \
                  "with .to()");                                                                   \
    static_assert(!(::devtensor::StaticCudaDevice<DA> && ::devtensor::HostAccessible<DB>),         \
                  "devtensor::" op ": operands live on different devices (cuda vs cpu); move one " \
                  "with .to()")

// One refusal per pair of element types, so that the message names both.
#define DEVTENSOR_DETAIL_DIFFER_CELL(U, u_name, op, TA, TB, V, v_name)                             \
    static_assert(!(std::is_same_v<TA, V> && std::is_same_v<TB, U>),                               \
                  "devtensor::" op ": element types differ (" v_name " vs " u_name                 \
                  "); convert one explicitly");
#define DEVTENSOR_DETAIL_DIFFER_ROW(V, v_name, op, TA, TB)                                         \
    DEVTENSOR_FOR_EACH_ELEMENT_2(DEVTENSOR_DETAIL_DIFFER_CELL, op, TA, TB, V, v_name)

/// Element types must match exactly: conversions are explicit. The message names
/// both types; the pairwise refusals are only looked at when the types differ.
#define DEVTENSOR_STATIC_CHECK_SAME_ELEMENT(op, TA, TB)                                            \
    if constexpr (!std::is_same_v<TA, TB>) {                                                       \
        DEVTENSOR_FOR_EACH_ELEMENT(DEVTENSOR_DETAIL_DIFFER_ROW, op, TA, TB)                        \
    }                                                                                              \
    static_assert(std::is_same_v<TA, TB>,                                                          \
                  "devtensor::" op ": element types differ; convert one explicitly")

/// A kernel op on any static CUDA operand needs an nvcc-compiled translation unit.
#define DEVTENSOR_STATIC_CHECK_KERNELS(op, ...)                                                    \
    static_assert(DEVTENSOR_HAS_CUDA || !::devtensor::detail::any_static_cuda_v<__VA_ARGS__>,      \
                  "devtensor::" op ": CUDA kernels are not compiled into this translation unit; "  \
                  "compile this file with nvcc")

// An op that serves only some element types refuses the others by name.
// `refused` names a detail:: variable template, true for the types the op refuses.
#define DEVTENSOR_DETAIL_REFUSE_IF(U, u_name, op, T, refused, why)                                 \
    static_assert(!(std::is_same_v<T, U> && ::devtensor::detail::refused<U>),                      \
                  "devtensor::" op ": " u_name " " why);

/// Floating-point element types only (rand, nn::linear).
#define DEVTENSOR_STATIC_CHECK_FLOATING(op, T)                                                     \
    DEVTENSOR_FOR_EACH_ELEMENT(DEVTENSOR_DETAIL_REFUSE_IF, op, T, not_floating_v,                  \
                               "is not served: it needs a floating-point element type (float or "  \
                               "double)")                                                          \
    static_assert(std::is_floating_point_v<T>,                                                     \
                  "devtensor::" op ": needs a floating-point element type (float or double)")

/// What the GEMM kernels serve: 4- and 8-byte elements (float, double, 32- and
/// 64-bit integers). bool and 1- or 2-byte integers are refused on every device,
/// so a program means the same under g++ and nvcc.
#define DEVTENSOR_STATIC_CHECK_GEMM_ELEMENT(op, T)                                                 \
    DEVTENSOR_FOR_EACH_ELEMENT(DEVTENSOR_DETAIL_REFUSE_IF, op, T, not_gemm_element_v,              \
                               "is not served: matrix products take float, double or 32- and "     \
                               "64-bit integers; convert first")                                   \
    static_assert(!::devtensor::detail::not_gemm_element_v<T>,                                     \
                  "devtensor::" op ": matrix products take float, double or 32- and 64-bit "       \
                  "integers; convert first")

namespace devtensor {
// Declared, not included: tensor.hpp includes the copies, which include these checks.
template <class T, class D>
class tensor;
}  // namespace devtensor

namespace devtensor::detail {

template <class T>
inline constexpr bool not_floating_v = !std::is_floating_point_v<T>;
template <class T>
inline constexpr bool not_gemm_element_v = sizeof(T) < 4;

template <class... D>
inline constexpr bool any_static_cuda_v = (StaticCudaDevice<D> || ...);

/// An operand as messages name it: "a made by rand at train.cpp:14" (DESIGN §14).
struct operand {
    const char* name;
    device dev;
    origin made;
};

template <class T, class D>
operand operand_of(const char* name, const tensor<T, D>& t) {
    return {name, device(t.device()), t.origin()};
}

/// ": a made by rand at train.cpp:14, b made by ones at train.cpp:9"
inline std::string made_where(std::initializer_list<operand> operands) {
    std::string text;
    for (const operand& o : operands) text += (text.empty() ? ": " : ", ") + std::string(o.name) + " " + to_string(o.made);
    return text;
}

// Each check below is a few instructions inlined into every op; the message it
// throws is built in a [[noreturn]] function of its own, out of the way.

/// PyTorch's wording for operands on different devices, then where each was made.
[[noreturn]] inline void throw_device_mismatch(const char* op, const operand& a, const operand& b) {
    throw device_mismatch("expected all tensors to be on the same device, but found at least "
                          "two devices, " + to_string(a.dev) + " and " + to_string(b.dev) + " (in " +
                          op + ")" + made_where({a, b}));
}
inline void check_same_device(const char* op, const operand& a, const operand& b) {
    if (a.dev != b.dev) throw_device_mismatch(op, a, b);
}

/// Runs `check`, adding to a shape_error it throws where the operands were made.
template <class Check>
void with_operands(std::initializer_list<operand> operands, Check check) {
    try {
        check();
    } catch (const shape_error& e) {
        throw shape_error(e.what() + made_where(operands));
    }
}

/// An undefined operand (default-constructed or moved-from) is an error naming it.
[[noreturn]] inline void throw_undefined(const char* op, const char* name) {
    throw error(std::string("devtensor::") + op + ": " + name +
                " is an undefined tensor (default-constructed or moved-from)");
}
inline void check_defined(const char* op, std::initializer_list<std::pair<const char*, bool>> operands) {
    for (const auto& [name, defined] : operands)
        if (!defined) throw_undefined(op, name);
}

/// An output that shares some but not all of its memory with an input would be
/// read after it is written: refused, as PyTorch refuses it. The very same view
/// (add(a, b, a)) is fine, since each element is read before it is written. Views
/// are compared by the span of memory they reach, so two interleaved views (the
/// even and the odd columns) count as overlapping: clone one first.
[[noreturn]] inline void throw_partial_overlap(const char* op, const shape& out, const char* name, const shape& in) {
    throw error(std::string("devtensor::") + op + ": the output " + out.to_string() + " and " + name + " " +
                in.to_string() +
                " partially overlap in memory, so elements would be read after they are "
                "written; write to a separate output (only the very same tensor may be both)");
}
template <class TO, class DO, class TI, class DI>
void check_no_partial_overlap(const char* op, const tensor<TO, DO>& out, const char* name,
                              const tensor<TI, DI>& in) {
    if (out.numel() == 0 || in.numel() == 0) return;
    const auto begin = [](const auto& t) { return reinterpret_cast<std::uintptr_t>(t.data()); };
    const auto end = [&](const auto& t) {
        using E = typename std::remove_cvref_t<decltype(t)>::value_type;
        return begin(t) + static_cast<std::uintptr_t>(extent(t.shape(), t.strides())) * sizeof(E);
    };
    if (sizeof(TO) == sizeof(TI) && begin(out) == begin(in) && out.shape() == in.shape() &&
        out.strides() == in.strides())
        return;
    if (begin(out) < end(in) && begin(in) < end(out)) throw_partial_overlap(op, out.shape(), name, in.shape());
}

/// A run-time tensor on a GPU reached an op in a translation unit without kernels.
[[noreturn]] inline void throw_no_kernels(const char* op, const device& d) {
    throw device_error(std::string("devtensor::") + op + ": the tensor is on " + to_string(d) +
                       ", but this translation unit was not compiled by nvcc and has no CUDA "
                       "kernels; compile this file with nvcc");
}

DEVTENSOR_BEGIN_TU_NAMESPACE

/// Runs `on_cpu()` or `on_cuda(ordinal)` for `dev`: the one place an op picks its
/// backend. `on_cuda` is a generic lambda whose body calls the kernels under
/// `#if DEVTENSOR_HAS_CUDA`; it is instantiated only where the device may be a
/// GPU, so a static CPU operand builds no kernel even in a file nvcc compiles.
template <class D, class OnCpu, class OnCuda>
void on_device([[maybe_unused]] const char* op, const D& dev, OnCpu&& on_cpu,
               [[maybe_unused]] OnCuda&& on_cuda) {
    if constexpr (HostAccessible<D>) {
        on_cpu();
    } else {
        const device d(dev);
        if constexpr (!StaticCudaDevice<D>) {
            if (d.is_cpu()) return on_cpu();
        }
#if DEVTENSOR_HAS_CUDA
        on_cuda(d.index());
#else
        throw_no_kernels(op, d);
#endif
    }
}

DEVTENSOR_END_TU_NAMESPACE

/// The static type of an op's result: the static operand's device type when there is one.
template <class DA, class DB>
using common_device_t = std::conditional_t<StaticDevice<DA>, DA, DB>;

}  // namespace devtensor::detail
