// matmul (2-D): checks devices and shapes, then runs the CPU GEMM or the CUDA kernel.
#pragma once

#include <devtensor/backend/cpu/gemm.hpp>
#include <devtensor/detail/gemm_params.hpp>
#include <devtensor/detail/op_checks.hpp>
#include <devtensor/ops/copy.hpp>
#include <devtensor/tensor.hpp>
#if DEVTENSOR_HAS_CUDA
#  include <devtensor/backend/cuda/kernels.cuh>
#endif

namespace devtensor {

namespace detail {
DEVTENSOR_BEGIN_TU_NAMESPACE

/// C = A·B (+ bias) on `dev`, operands described by strides.
template <class T, class D>
void gemm_any(const char* op, const D& dev, const gemm_params<T>& p) {
    on_device(
        op, dev,
        [&] {
            backend_cpu::gemm<T>(p.m, p.n, p.k, {p.a, p.a_row, p.a_col}, {p.b, p.b_row, p.b_col},
                                 p.c, p.ldc, p.bias);
        },
        [&]([[maybe_unused]] auto ordinal) {
#if DEVTENSOR_HAS_CUDA
            backend_cuda::gemm(ordinal, p);
#endif
        });
}

DEVTENSOR_END_TU_NAMESPACE
}  // namespace detail

DEVTENSOR_BEGIN_TU_NAMESPACE

/// The matrix product of a [m, k] and b [k, n]: [m, n] (torch.mm). The same bits at any
/// thread count, on every CPU ISA and on CUDA (DESIGN §15): each element sums in the
/// order of detail/gemm_order.hpp, which depends on (m, n, k) alone.
template <class TA, class DA, class TB, class DB>
[[nodiscard]] tensor<TA, detail::common_device_t<DA, DB>> matmul(const tensor<TA, DA>& a, const tensor<TB, DB>& b,
                                                                 call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_SAME_DEVICE("matmul", DA, DB);
    DEVTENSOR_STATIC_CHECK_SAME_ELEMENT("matmul", TA, TB);
    DEVTENSOR_STATIC_CHECK_GEMM_ELEMENT("matmul", TA);
    DEVTENSOR_STATIC_CHECK_KERNELS("matmul", DA, DB);
    detail::check_defined("matmul", {{"a", a.defined()}, {"b", b.defined()}});
    const detail::operand oa = detail::operand_of("a", a), ob = detail::operand_of("b", b);
    detail::check_same_device("matmul", oa, ob);
    detail::with_operands({oa, ob}, [&] {
        if (a.dim() != 2 || b.dim() != 2 || a.shape()[1] != b.shape()[0])
            throw shape_error("devtensor::matmul: shapes " + a.shape().to_string() + " and " +
                              b.shape().to_string() + " cannot be multiplied (need [m, k] and [k, n])");
    });
    using result_device = detail::common_device_t<DA, DB>;
    const std::int64_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
    tensor<TA, result_device> out({m, n}, device_cast<result_device>(device(a.device())), {"matmul", site});
    const detail::gemm_operand<TA, DA> da(a, {"matmul", site});  // strided views: read as they lie
    const detail::gemm_operand<TB, DB> db(b, {"matmul", site});  // when they can be, else copied
    detail::gemm_any<TA>("matmul", out.device(),
                         {m, n, k, da.held.data(), da.row, da.col, db.held.data(), db.row, db.col, out.data(), n,
                          nullptr});
    return out;
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor
