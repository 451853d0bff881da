// softmax and log_softmax along one dimension, from the ops they are made of
// (amax, sub, exp, sum, div, log): the same bits on every device by construction.
// Contiguous CPU rows take those steps a row at a time (ops/softmax_rows.hpp).
#pragma once

#include <devtensor/ops/arithmetic.hpp>
#include <devtensor/ops/extremes.hpp>
#include <devtensor/ops/factories.hpp>
#include <devtensor/ops/softmax_rows.hpp>
#include <devtensor/ops/sum.hpp>
#include <devtensor/ops/unary_math.hpp>

#include <cstdint>

namespace devtensor {

namespace detail {
DEVTENSOR_BEGIN_TU_NAMESPACE
/// x - max(x) along `dim`: every row's largest element becomes 0, so exp cannot overflow.
template <class T, class D>
tensor<T, D> max_shifted(const tensor<T, D>& x, std::int64_t dim) {
    return x - amax(x, {dim}, true);
}

/// The backward of softmax (g·y summed out: y·(g - Σ g·y)) and of log_softmax
/// (g - exp(y)·Σ g), along `dim`, from the saved result y, as PyTorch's.
template <class T, bool Log>
struct softmax_node final : node<T> {
    saved_tensor<T> y;
    std::int64_t dim = 0;
    void backward(const grad_t<T>& g, std::span<grad_t<T>> grads) override {
        const grad_t<T>& yv = y.get(this->op);
        if (const auto n = cpu_row_length(yv, dim); n && g.is_contiguous() && g.shape() == yv.shape()) {
            grads[0] = grad_t<T>(g.shape(), g.device(), {this->op, call_site{}});
            softmax_rows_backward<Log>(g.numel() / *n, *n, g.data(), yv.data(), grads[0].data());
        } else if constexpr (Log) grads[0] = g - exp(yv) * sum(g, {dim}, true);
        else grads[0] = yv * (g - sum(g * yv, {dim}, true));
    }
    void release() override { y.release(); }
};

/// y = f(x) along dim, computed without recording, then recorded as softmax_node.
template <bool Log, class T, class D, class F>
tensor<T, D> softmax_recorded(const char* op, const tensor<T, D>& x, std::int64_t dim, F f) {
    const bool records = recording(x);
    tensor<T, D> y;
    if (const auto n = cpu_row_length(x, dim)) {
        y = tensor<T, D>(x.shape(), x.device(), {op, call_site{}});
        softmax_rows<Log>(x.numel() / *n, *n, x.data(), y.data());
    } else {
        const no_grad quiet;  // f works in place on its own temporaries
        y = f();
    }
    if (records) {
        auto n = make_node<softmax_node<T, Log>>();
        n->y = saved_tensor<T>(y);
        n->dim = dim;
        record(y, std::move(n), op, x);
    }
    return y;
}
DEVTENSOR_END_TU_NAMESPACE
}  // namespace detail

DEVTENSOR_BEGIN_TU_NAMESPACE

/// exp(x - max) / sum(exp(x - max)) along `dim` (torch.softmax); floating types.
template <class T, class D>
[[nodiscard]] tensor<T, D> softmax(const tensor<T, D>& x, std::int64_t dim) {
    DEVTENSOR_STATIC_CHECK_FLOATING("softmax", T);
    DEVTENSOR_STATIC_CHECK_KERNELS("softmax", D);
    detail::check_defined("softmax", {{"input", x.defined()}});
    if (x.numel() == 0) return empty_like(x);
    return detail::softmax_recorded<false>("softmax", x, dim, [&] {
        auto e = detail::max_shifted(x, dim);  // then in place: no more tensors than needed
        exp_(e);
        div_(e, sum(e, {dim}, true));
        return e;
    });
}

/// (x - max) - log(sum(exp(x - max))) along `dim` (torch.log_softmax); floating types.
template <class T, class D>
[[nodiscard]] tensor<T, D> log_softmax(const tensor<T, D>& x, std::int64_t dim) {
    DEVTENSOR_STATIC_CHECK_FLOATING("log_softmax", T);
    DEVTENSOR_STATIC_CHECK_KERNELS("log_softmax", D);
    detail::check_defined("log_softmax", {{"input", x.defined()}});
    if (x.numel() == 0) return empty_like(x);
    return detail::softmax_recorded<true>("log_softmax", x, dim, [&] {
        auto shifted = detail::max_shifted(x, dim);
        auto log_sum = sum(exp(shifted), {dim}, true);
        log_(log_sum);
        sub_(shifted, log_sum);
        return shifted;
    });
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor
