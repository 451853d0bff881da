// add, +, +=, and the out-variant, with NumPy/PyTorch broadcasting.
#pragma once

#include <devtensor/backend/cpu/elementwise.hpp>
#include <devtensor/detail/elementwise.hpp>
#include <devtensor/detail/op_checks.hpp>
#include <devtensor/tensor.hpp>
#if DEVTENSOR_HAS_CUDA
#  include <devtensor/backend/cuda/kernels.cuh>
#endif

#include <string>

namespace devtensor {

namespace detail {
DEVTENSOR_BEGIN_TU_NAMESPACE

/// out = a + b once devices and shapes are known to agree.
template <class T, class DA, class DB, class DO>
void add_checked(const char* op, const tensor<T, DA>& a, const tensor<T, DB>& b,
                 const tensor<T, DO>& out) {
    const std::int64_t n = out.numel();
    if (n == 0) return;
    const bool same_shape = a.shape() == out.shape() && b.shape() == out.shape();
    const broadcast_strides strides =
        same_shape ? broadcast_strides{} : make_broadcast_strides(out.shape(), a.shape(), b.shape());
    on_device(
        op, out.device(),
        [&] {
            if (same_shape) backend_cpu::add(a.data(), b.data(), out.data(), n);
            else backend_cpu::add_broadcast(a.data(), b.data(), out.data(), n, strides);
        },
        [&]([[maybe_unused]] auto ordinal) {
#if DEVTENSOR_HAS_CUDA
            if (same_shape) backend_cuda::add(ordinal, a.data(), b.data(), out.data(), n);
            else backend_cuda::add_broadcast(ordinal, a.data(), b.data(), out.data(), n, strides);
#endif
        });
}

/// add(a, b, out) under the name the user called (add or operator+=).
template <class T, class DA, class DB, class DO>
void add_out(const char* op, const tensor<T, DA>& a, const tensor<T, DB>& b, const tensor<T, DO>& out) {
    check_defined(op, {{"a", a.defined()}, {"b", b.defined()}, {"out", out.defined()}});
    const operand oa = operand_of("a", a), ob = operand_of("b", b), oo = operand_of("out", out);
    check_same_device(op, oa, ob);
    check_same_device(op, oa, oo);
    with_operands({oa, ob, oo}, [&] {
        const shape s = broadcast_shapes(a.shape(), b.shape(), op);
        if (!(s == out.shape()))
            throw shape_error(std::string("devtensor::") + op + ": the output has shape " +
                              out.shape().to_string() + ", but " + a.shape().to_string() + " and " +
                              b.shape().to_string() + " broadcast to " + s.to_string());
    });
    check_no_partial_overlap(op, out, "a", a);
    check_no_partial_overlap(op, out, "b", b);
    add_checked(op, a, b, out);
}

/// a + b in a new tensor made by `made`.
template <class T, class DA, class DB>
tensor<T, common_device_t<DA, DB>> add_new(const tensor<T, DA>& a, const tensor<T, DB>& b, const origin& made) {
    check_defined(made.op, {{"a", a.defined()}, {"b", b.defined()}});
    const operand oa = operand_of("a", a), ob = operand_of("b", b);
    check_same_device(made.op, oa, ob);
    using result_device = common_device_t<DA, DB>;
    shape s;
    with_operands({oa, ob}, [&] { s = broadcast_shapes(a.shape(), b.shape(), made.op); });
    tensor<T, result_device> out(s, device_cast<result_device>(device(a.device())), made);
    add_checked(made.op, a, b, out);
    return out;
}

DEVTENSOR_END_TU_NAMESPACE
}  // namespace detail

DEVTENSOR_BEGIN_TU_NAMESPACE

/// out = a + b, where a and b broadcast to out's shape exactly. out may be the
/// very same tensor as a or b; a partial overlap is refused.
template <class TA, class DA, class TB, class DB, class TO, class DO>
void add(const tensor<TA, DA>& a, const tensor<TB, DB>& b, const tensor<TO, DO>& out) {
    DEVTENSOR_STATIC_CHECK_SAME_DEVICE("add", DA, DB);
    DEVTENSOR_STATIC_CHECK_SAME_DEVICE("add", DA, DO);
    DEVTENSOR_STATIC_CHECK_SAME_DEVICE("add", DB, DO);
    DEVTENSOR_STATIC_CHECK_SAME_ELEMENT("add", TA, TB);
    DEVTENSOR_STATIC_CHECK_SAME_ELEMENT("add", TA, TO);
    DEVTENSOR_STATIC_CHECK_KERNELS("add", DA, DB, DO);
    detail::add_out("add", a, b, out);
}

/// a + b broadcast, on the operands' device (torch.add).
template <class TA, class DA, class TB, class DB>
[[nodiscard]] tensor<TA, detail::common_device_t<DA, DB>> add(const tensor<TA, DA>& a, const tensor<TB, DB>& b,
                                                              call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_SAME_DEVICE("add", DA, DB);
    DEVTENSOR_STATIC_CHECK_SAME_ELEMENT("add", TA, TB);
    DEVTENSOR_STATIC_CHECK_KERNELS("add", DA, DB);
    return detail::add_new(a, b, {"add", site});
}

/// a + b; an operator takes no call site, so the result records the op alone.
template <class TA, class DA, class TB, class DB>
[[nodiscard]] tensor<TA, detail::common_device_t<DA, DB>> operator+(const tensor<TA, DA>& a,
                                                                    const tensor<TB, DB>& b) {
    DEVTENSOR_STATIC_CHECK_SAME_DEVICE("operator+", DA, DB);
    DEVTENSOR_STATIC_CHECK_SAME_ELEMENT("operator+", TA, TB);
    DEVTENSOR_STATIC_CHECK_KERNELS("operator+", DA, DB);
    return detail::add_new(a, b, {"operator+", call_site{}});
}

/// a += b in place; b must broadcast to a's shape.
template <class TA, class DA, class TB, class DB>
tensor<TA, DA>& operator+=(tensor<TA, DA>& a, const tensor<TB, DB>& b) {
    DEVTENSOR_STATIC_CHECK_SAME_DEVICE("operator+=", DA, DB);
    DEVTENSOR_STATIC_CHECK_SAME_ELEMENT("operator+=", TA, TB);
    DEVTENSOR_STATIC_CHECK_KERNELS("operator+=", DA, DB);
    detail::add_out("operator+=", a, b, a);
    return a;
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor
