// linear(x, weight, bias) = x · weightᵀ + bias over [batch..., in] inputs,
// one GEMM with the weight read transposed and the bias fused into its store,
// added last (detail/gemm_order.hpp), on the CPU and CUDA alike.
#pragma once

#include <devtensor/detail/op_checks.hpp>
#include <devtensor/ops/add.hpp>     // detail::plus
#include <devtensor/ops/matmul.hpp>  // detail::gemm_any
#include <devtensor/ops/copy.hpp>
#include <devtensor/tensor.hpp>

#include <algorithm>
#include <array>
#include <memory>
#include <span>
#include <vector>

namespace devtensor {

namespace detail {
DEVTENSOR_BEGIN_TU_NAMESPACE

/// linear's backward, as PyTorch's: gx = g·W, gW = gᵀ·x over the flattened batch,
/// gb = g summed to the bias's shape.
template <class T>
struct linear_node final : node<T> {
    saved_tensor<T> x, weight;
    shape bias_shape;
    void backward(const grad_t<T>& g, std::span<grad_t<T>> grads) override {
        const grad_t<T>& xv = x.get("linear");
        const grad_t<T>& wv = weight.get("linear");
        if (this->next[0]) grads[0] = matmul(g, wv, call_site{});
        if (this->next[1]) {  // gᵀ·x over the batch's rows
            const std::int64_t out = wv.shape()[0], in = wv.shape()[1], rows = out == 0 ? 0 : g.numel() / out;
            if (rows > 0 && in > 0 && g.is_contiguous() && xv.is_contiguous()) {  // the GEMM on them as they lie
                grad_t<T> gw(wv.shape(), g.device(), {"backward", call_site{}});
                gemm_any<T>("linear", gw.device(),
                            gemm_params<T>{out, in, rows, g.data(), 1, out, xv.data(), in, 1, gw.data(), in, nullptr});
                grads[1] = std::move(gw);
            } else {
                grads[1] = matmul(g.reshape({-1, out}, call_site{}).t(call_site{}), xv.reshape({-1, in}, call_site{}),
                                  call_site{});
            }
        }
        if (this->next.size() > 2 && this->next[2]) grads[2] = sum_to_size(g, bias_shape, call_site{}).contiguous(call_site{});
    }
    void release() override {
        x.release();
        weight.release();
    }
};

DEVTENSOR_END_TU_NAMESPACE
}  // namespace detail

DEVTENSOR_BEGIN_TU_NAMESPACE

/// x [batch..., in] · weight [out, in]ᵀ + bias -> [batch..., out] (torch.nn.functional.linear);
/// the bias broadcasts to the output (usually [out]); an undefined one (tensor{}) means none. The same bits at any thread count, on every
/// CPU ISA and on CUDA (DESIGN §15): each element sums in the order of detail/gemm_order.hpp.
template <class TX, class DX, class TW, class DW, class TB, class DB>
[[nodiscard]] tensor<TX, detail::common_device_t<DX, DW>> linear(const tensor<TX, DX>& x,
                                                                 const tensor<TW, DW>& weight,
                                                                 const tensor<TB, DB>& bias,
                                                                 call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_SAME_DEVICE("linear", DX, DW);
    DEVTENSOR_STATIC_CHECK_SAME_DEVICE("linear", DX, DB);
    DEVTENSOR_STATIC_CHECK_SAME_DEVICE("linear", DW, DB);
    DEVTENSOR_STATIC_CHECK_SAME_ELEMENT("linear", TX, TW);
    DEVTENSOR_STATIC_CHECK_SAME_ELEMENT("linear", TX, TB);
    DEVTENSOR_STATIC_CHECK_GEMM_ELEMENT("linear", TX);
    DEVTENSOR_STATIC_CHECK_KERNELS("linear", DX, DW, DB);
    detail::check_defined("linear", {{"the input", x.defined()}, {"the weight", weight.defined()}});
    const bool records = detail::recording(x, weight) || detail::recording(bias);
    const no_grad quiet;  // the reshapes and the bias add below are the op's own business
    const detail::operand ox = detail::operand_of("the input", x), ow = detail::operand_of("the weight", weight),
                          ob = detail::operand_of("the bias", bias);
    detail::check_same_device("linear", ox, ow);
    if (bias.defined()) detail::check_same_device("linear", ox, ob);
    if (weight.dim() != 2)
        throw shape_error("devtensor::linear: the weight must be [out_features, in_features], got " +
                          weight.shape().to_string() + detail::made_where({ow}));
    const std::int64_t out_features = weight.shape()[0], in_features = weight.shape()[1];
    if (x.dim() == 0 || x.shape()[x.shape().rank() - 1] != in_features)
        throw shape_error("devtensor::linear: the input's last dimension must be in_features = " +
                          std::to_string(in_features) + " (weight " + weight.shape().to_string() +
                          "), but the input has shape " + x.shape().to_string() + detail::made_where({ox, ow}));
    std::array<std::int64_t, shape::max_rank> dims{};  // x's shape, the last dimension out_features
    std::copy(x.shape().begin(), x.shape().end(), dims.begin());
    dims[x.shape().rank() - 1] = out_features;
    const shape out_shape(std::span<const std::int64_t>(dims.data(), x.shape().rank()));
    if (bias.defined() && !detail::broadcasts_to(bias.shape(), out_shape))
        throw shape_error("devtensor::linear: the bias must broadcast to the output " + out_shape.to_string() +
                          " (weight " + weight.shape().to_string() + "), got " + bias.shape().to_string() +
                          detail::made_where({ow, ob}));
    // A bias that is one row ([out], [1], [], [1, out], ...) is fused into the GEMM's
    // store; any other is added after it: the same bits, the bias added last either way.
    const bool row_bias = bias.defined() && (bias.dim() == 0 || bias.numel() == bias.shape()[bias.shape().rank() - 1]);
    using result_device = detail::common_device_t<DX, DW>;
    tensor<TX, result_device> out(out_shape, device_cast<result_device>(device(x.device())), {"linear", site});
    const std::int64_t batch = shape(std::span<const std::int64_t>(dims.data(), x.shape().rank() - 1)).numel();
    // Strided operands: x and the bias are made contiguous; the weight is read as it
    // lies when it is row-major or a transposed row-major matrix.
    const origin made{"linear", site};
    const auto dx = detail::dense(x, made);
    const auto db = !row_bias                                    ? tensor<TB, DB>{}
                    : bias.dim() == 1 && bias.numel() == out_features && bias.is_contiguous()
                        ? bias  // [out], as it usually is: no views to make
                        : detail::dense(bias.reshape({bias.numel()}).expand({out_features}), made);
    const detail::gemm_operand<TW, DW> w(weight, made);  // B[k][n] = weight[n][k]: B's strides swap w's
    detail::gemm_any<TX>("linear", out.device(),
                         {batch, out_features, in_features, dx.data(), in_features, 1, w.held.data(), w.col, w.row,
                          out.data(), out_features, row_bias ? db.data() : nullptr});
    if (bias.defined() && !row_bias) detail::map_out("linear", detail::plus{}, out, out, bias);
    if (records) {
        auto node = detail::make_node<detail::linear_node<TX>>();
        node->x = detail::saved_tensor<TX>(x);
        node->weight = detail::saved_tensor<TX>(weight);
        if (bias.defined()) {
            node->bias_shape = bias.shape();
            detail::record(out, std::move(node), "linear", x, weight, bias);
        } else {
            detail::record(out, std::move(node), "linear", x, weight);
        }
    }
    return out;
}

/// linear without a bias.
template <class TX, class DX, class TW, class DW>
[[nodiscard]] tensor<TX, detail::common_device_t<DX, DW>> linear(const tensor<TX, DX>& x,
                                                                 const tensor<TW, DW>& weight,
                                                                 call_site site = call_site::current()) {
    return linear(x, weight, tensor<TW, DW>{}, site);
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor
