// matmul as torch.matmul (1-D, 2-D, batched with broadcast batch dimensions): checks
// devices and shapes, then runs the CPU GEMM or the CUDA kernel on each matrix.
#pragma once

#include <devtensor/backend/cpu/gemm.hpp>
#include <devtensor/detail/gemm_params.hpp>
#include <devtensor/detail/op_checks.hpp>
#include <devtensor/ops/copy.hpp>
#include <devtensor/ops/fill.hpp>
#include <devtensor/tensor.hpp>
#include <devtensor/threads.hpp>  // get_num_threads, parallel_for: the batch over threads

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <tuple>
#include <utility>
#include <vector>
#if DEVTENSOR_HAS_CUDA
#  include <devtensor/backend/cuda/kernels.cuh>
#endif

namespace devtensor {

namespace detail {
DEVTENSOR_BEGIN_TU_NAMESPACE

/// C = A·B (+ bias) on `dev` for each product of a batch, operands described by
/// strides. On the CPU, whole products to each thread where there are enough to
/// share out evenly (the per-matrix packing and fork/join of small GEMMs would
/// otherwise dominate), else one GEMM after another, each over the threads. Each GEMM
/// is told the product its thread runs next, whose operands it touches ahead.
/// Either way each element sums in the order of its own GEMM: the same bits.
template <class T, class D>
void gemm_any(const char* op, const D& dev, std::span<const gemm_params<T>> products) {
    on_device(
        op, dev,
        [&] {
            const auto run = [&](std::int64_t first, std::int64_t last) {
                for (std::int64_t i = first; i < last; ++i) {
                    const gemm_params<T>& p = products[static_cast<std::size_t>(i)];
                    backend_cpu::gemm<T>(p.m, p.n, p.k, {p.a, p.a_row, p.a_col}, {p.b, p.b_row, p.b_col}, p.c,
                                         p.ldc, p.bias, i + 1 < last ? &p + 1 : nullptr);
                }
            };
            const auto count = static_cast<std::int64_t>(products.size());
            const std::int64_t threads = get_num_threads();
            if (threads == 1 || count < threads || (count % threads != 0 && count < 4 * threads))
                return run(0, count);
            // A thread's GEMM runs on that thread alone: parallel_for inside parallel_for is serial.
            const gemm_params<T>& p = products.front();
            const double work = static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k);
            const auto grain = static_cast<std::int64_t>(
                std::max(1.0, static_cast<double>(backend_cpu::gemm_work_per_part) / std::max(work, 1.0)));
            parallel_for(count, grain, run);
        },
        [&]([[maybe_unused]] auto ordinal) {
#if DEVTENSOR_HAS_CUDA
            for (const gemm_params<T>& p : products) backend_cuda::gemm(ordinal, p);
#endif
        });
}

/// One product: C = A·B (+ bias) on `dev`.
template <class T, class D>
void gemm_any(const char* op, const D& dev, const gemm_params<T>& p) {
    gemm_any(op, dev, std::span<const gemm_params<T>>(&p, 1));
}

/// matmul's backward, as torch.matmul's: ga = g·bᵀ, gb = aᵀ·g on the operands as
/// matrices (a 1-D a a row, a 1-D b a column), summed back over broadcast batch dimensions.
template <class T>
struct matmul_node final : node<T> {
    saved_tensor<T> a, b;
    void backward(const grad_t<T>& g, std::span<grad_t<T>> grads) override {
        const grad_t<T>& av = a.get("matmul");
        const grad_t<T>& bv = b.get("matmul");
        const grad_t<T> am = av.dim() == 1 ? av.unsqueeze(0, call_site{}) : av;
        const grad_t<T> bm = bv.dim() == 1 ? bv.unsqueeze(1, call_site{}) : bv;
        std::vector<std::int64_t> dims(g.shape().begin(), g.shape().end());
        if (av.dim() == 1) dims.insert(dims.end() - (bv.dim() == 1 ? 0 : 1), 1);
        if (bv.dim() == 1) dims.push_back(1);
        const grad_t<T> gm = g.reshape(shape(dims), call_site{});
        if (this->next[0])
            grads[0] = sum_to_size(matmul(gm, bm.transpose(-1, -2, call_site{}), call_site{}), am.shape(), call_site{})
                           .reshape(av.shape(), call_site{});
        if (this->next[1])
            grads[1] = sum_to_size(matmul(am.transpose(-1, -2, call_site{}), gm, call_site{}), bm.shape(), call_site{})
                           .reshape(bv.shape(), call_site{});
    }
    void release() override {
        a.release();
        b.release();
    }
};

DEVTENSOR_END_TU_NAMESPACE
}  // namespace detail

DEVTENSOR_BEGIN_TU_NAMESPACE

/// The product as torch.matmul: 1-D x 1-D a dot product (0-dim), 2-D x 2-D the
/// matrix product [m, k]·[k, n] = [m, n], a 1-D operand a row (left) or a column
/// (right) that is dropped from the result, and more dimensions a batch of
/// matrices whose batch dimensions broadcast. The same bits at any thread count,
/// on every CPU ISA and on CUDA (DESIGN §15): each element sums in the order of
/// detail/gemm_order.hpp, which depends on (m, n, k) alone.
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
    const origin made{"matmul", site};
    const bool records = detail::recording(a, b);
    const no_grad quiet;  // the views below are the op's own business
    // as matrices: a 1-D a is one row, a 1-D b one column
    const tensor<TA, DA> am = a.dim() == 1 ? a.unsqueeze(0) : a;
    const tensor<TB, DB> bm = b.dim() == 1 ? b.unsqueeze(1) : b;
    const bool two_d = am.dim() == 2 && bm.dim() == 2;  // the common case: no batch to broadcast
    shape batch;
    detail::with_operands({oa, ob}, [&] {
        if (a.dim() == 0 || b.dim() == 0 || am.shape()[am.shape().rank() - 1] != bm.shape()[bm.shape().rank() - 2])
            throw shape_error("devtensor::matmul: shapes " + a.shape().to_string() + " and " + b.shape().to_string() +
                              " cannot be multiplied (need [..., m, k] and [..., k, n], or 1-D [k])");
        const auto batch_of = [](const shape& s) {
            return shape(std::vector<std::int64_t>(s.begin(), s.end() - 2));
        };
        if (!two_d) batch = broadcast_shapes(batch_of(am.shape()), batch_of(bm.shape()), "matmul");
    });
    const std::size_t ra = am.shape().rank(), rb = bm.shape().rank();
    const std::int64_t m = am.shape()[ra - 2], k = am.shape()[ra - 1], n = bm.shape()[rb - 1];
    using result_device = detail::common_device_t<DA, DB>;
    using operands = std::pair<detail::gemm_operand<TA, DA>, detail::gemm_operand<TB, DB>>;
    const auto product = [&](const operands& ops, const tensor<TA, result_device>& oi) {
        const auto& [da, db] = ops;
        return detail::gemm_params<TA>{m, n, k, da.held.data(), da.row, da.col, db.held.data(), db.row, db.col,
                                       oi.data(), n, nullptr};
    };
    const auto recorded = [&](tensor<TA, result_device>& out) {
        if (b.dim() == 1) out = out.squeeze(out.dim() - 1);
        if (a.dim() == 1) out = out.squeeze(out.dim() - (b.dim() == 1 ? 1 : 2));
        if (records) {
            auto node = detail::make_node<detail::matmul_node<TA>>();
            node->a = detail::saved_tensor<TA>(a);
            node->b = detail::saved_tensor<TA>(b);
            detail::record(out, std::move(node), "matmul", a, b);
        }
        return out;
    };
    if (two_d) {
        tensor<TA, result_device> out(shape{m, n}, device_cast<result_device>(device(a.device())), made);
        if (k == 0) {
            fill(out, TA{});
        } else if (m > 0 && n > 0) {
            const operands ops{{am, made}, {bm, made}};
            detail::gemm_any<TA>("matmul", out.device(), product(ops, out));
        }
        return recorded(out);
    }
    std::vector<std::int64_t> dims(batch.begin(), batch.end());
    std::vector<std::int64_t> ae = dims, be = dims, oe = dims;
    ae.insert(ae.end(), {m, k});
    be.insert(be.end(), {k, n});
    oe.insert(oe.end(), {m, n});
    tensor<TA, result_device> out(shape(oe), device_cast<result_device>(device(a.device())), made);
    const tensor<TA, DA> ab = am.expand(shape(ae));
    const tensor<TB, DB> bb = bm.expand(shape(be));
    const std::int64_t matrices = k == 0 ? 0 : batch.numel();  // k = 0: every sum is empty
    if (k == 0) fill(out, TA{});
    // Views of a, b and out narrowed to matrix i of the batch (row-major over its dimensions).
    const auto select_matrix = [&](std::int64_t i, tensor<TA, DA>& ai, tensor<TB, DB>& bi,
                                   tensor<TA, result_device>& oi) {
        for (std::size_t d = 0, rest = static_cast<std::size_t>(i); d < dims.size(); ++d) {
            std::int64_t inner = 1;
            for (std::size_t e = d + 1; e < dims.size(); ++e) inner *= dims[e];
            const auto at = static_cast<std::int64_t>(rest) / inner;
            rest = static_cast<std::size_t>(static_cast<std::int64_t>(rest) % inner);
            ai = ai.select(0, at), bi = bi.select(0, at), oi = oi.select(0, at);
        }
    };
    // A matrix's operands are read as they lie when they can be, else copied; the
    // copies are held until the products are done.
    if (matrices > 0) {
        std::vector<operands> held;
        std::vector<detail::gemm_params<TA>> products;
        held.reserve(static_cast<std::size_t>(matrices));
        products.reserve(static_cast<std::size_t>(matrices));
        for (std::int64_t i = 0; i < matrices; ++i) {
            tensor<TA, DA> ai = ab;
            tensor<TB, DB> bi = bb;
            tensor<TA, result_device> oi = out;
            select_matrix(i, ai, bi, oi);
            products.push_back(product(held.emplace_back(operands{{ai, made}, {bi, made}}), oi));
        }
        detail::gemm_any<TA>("matmul", out.device(), std::span<const detail::gemm_params<TA>>(products));
    }
    return recorded(out);
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor
