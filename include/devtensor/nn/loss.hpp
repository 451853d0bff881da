// Losses (torch.nn.functional's): mse_loss, cross_entropy, nll_loss and
// binary_cross_entropy_with_logits. mse and bce are an elementwise functor with its
// partials and a mean or sum, recorded as one op; nll a pick, then a recorded mean or sum.
#pragma once

#include <devtensor/detail/arith.hpp>
#include <devtensor/detail/math.hpp>
#include <devtensor/ops/entry_points.hpp>
#include <devtensor/ops/factories.hpp>  // arange
#include <devtensor/ops/gather.hpp>     // gather_along
#include <devtensor/ops/softmax.hpp>
#include <devtensor/ops/sum.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace devtensor {

namespace nn {
/// How a loss reduces its per-element values (torch's reduction=).
enum class reduction { none, mean, sum };
}  // namespace nn

namespace detail {

/// (a - b)²; partials ±2(a - b)·g (PyTorch's mse_loss_backward); on the CPU's vectors too.
struct squared_difference {
    static constexpr bool vectorizes = true;
    static constexpr bool partials_vectorize = true;
    static constexpr bool differentiable = true;
    template <class T>
    DEVTENSOR_HOST_DEVICE T operator()(T a, T b) const {
        const T d = a - b;
        return detail::mul(d, d);
    }
    template <int I, class T>
    DEVTENSOR_HOST_DEVICE T partial(T g, T, T a, T b) const {
        const T product = detail::mul(a - b, g);
        const T twice = product + product;  // 2·product exactly, as a vector too (T{2} is not a splat there)
        return I == 0 ? twice : -twice;
    }
};

/// max(x, 0) - x·y + log(1 + exp(-|x|)): no overflow for any x; partials
/// (sigmoid(x) - y)·g and -x·g.
struct bce_with_logits {
    static constexpr bool differentiable = true;
    template <class T>
    DEVTENSOR_HOST_DEVICE T operator()(T x, T y) const {
        const T positive = x > T{0} ? x : T{0};
        const T soft = math::log(detail::add(T{1}, math::exp(-math::abs(x))));
        return detail::add(detail::add(positive, -detail::mul(x, y)), soft);
    }
    template <int I, class T>
    DEVTENSOR_HOST_DEVICE T partial(T g, T, T x, T y) const {
        return I == 0 ? detail::mul(detail::add(math::sigmoid(x), -y), g) : -detail::mul(x, g);
    }
};

/// -logp[i][target[i]] as the [N, C] → [N] pick's backward: -g[i] at column target[i], else 0.
struct negated_at_target {
    template <class T>
    DEVTENSOR_HOST_DEVICE T operator()(std::int64_t target, std::int64_t column, T g) const {
        return column == target ? -g : T{0};
    }
};

DEVTENSOR_BEGIN_TU_NAMESPACE

template <class T, class D>
tensor<T, D> reduced(const tensor<T, D>& per_element, nn::reduction r, call_site site) {
    switch (r) {
        case nn::reduction::none: return per_element;
        case nn::reduction::sum: return sum(per_element, site);
        case nn::reduction::mean: break;
    }
    return mean(per_element, site);
}

/// The backward of f's per-element values reduced to their mean or sum in one op (as
/// PyTorch's mse_loss is one node): f's partials of g (÷ the count for a mean) broadcast
/// over the inputs. The values, and the bits, of a map_node under a sum_node: the same
/// g / count in every element, the same partials, without the per-element gradient.
template <class T, class F>
struct reduced_map_node final : map_backward<T, F, 2> {
    bool is_mean = false;
    void backward(const grad_t<T>& g, std::span<grad_t<T>> grads) override {
        if (!is_mean) return this->partials(g, grads);
        const auto count = static_cast<T>(this->out.get(this->op).numel());
        this->partials(map_new<T>({this->op, call_site{}}, divided_by<T>{count}, g), grads);
    }
};

/// f(input, target) per element, reduced by r: a loss's forward, recorded as one op.
template <class T, class F, class D, class DT>
tensor<T, D> reduced_map(const origin& made, const F& f, nn::reduction r, const tensor<T, D>& input,
                         const tensor<T, DT>& target) {
    if (r == nn::reduction::none) return tensor<T, D>(map_new<T>(made, f, input, target));
    const bool records = recording(input, target);
    tensor<T, D> values, out;
    {
        const no_grad quiet;
        values = tensor<T, D>(map_new<T>(made, f, input, target));
        out = r == nn::reduction::mean ? reduce_new<T, T>(made, mean_op{}, values, {}, false)
                                       : reduce_new<T, T>(made, sum_op{}, values, {}, false);
    }
    if (records) {
        auto n = make_node<reduced_map_node<T, F>>();
        n->f = f;
        n->is_mean = r == nn::reduction::mean;
        n->out = saved_tensor<T>(values);
        n->in = {saved_tensor<T>(input), saved_tensor<T>(target)};
        record(out, std::move(n), made.op, input, target);
    }
    return out;
}

/// nll's per-sample part: out[i] = -logp[i][target[i]].
template <class T>
struct nll_node final : node<T> {
    grad_t<std::int64_t> target;  ///< [N, 1]
    std::int64_t classes = 0;
    void backward(const grad_t<T>& g, std::span<grad_t<T>> grads) override {
        const std::int64_t n = target.shape()[0];
        grad_t<T> result(shape{n, classes}, g.device(), {"nll_loss", call_site{}});
        const auto columns = arange<std::int64_t>(0, static_cast<double>(classes), 1, g.device()).view({1, classes});
        map_checked("nll_loss", negated_at_target{}, result, target, columns, g.view({n, 1}));
        grads[0] = std::move(result);
    }
};

template <class T, class D, class DI>
void check_loss_shapes(const char* op, const tensor<T, D>& input, const tensor<T, DI>& target) {
    check_defined(op, {{"input", input.defined()}, {"target", target.defined()}});
    if (!(input.shape() == target.shape()))
        throw shape_error(std::string("devtensor::nn::") + op + ": the input has shape " + input.shape().to_string() +
                          " and the target " + target.shape().to_string() +
                          "; they must be the same (PyTorch broadcasts them with a warning, which is almost "
                          "always a bug)");
}

DEVTENSOR_END_TU_NAMESPACE
}  // namespace detail

namespace nn {
DEVTENSOR_BEGIN_TU_NAMESPACE

/// Mean (or sum, or none) of (input - target)², same shapes (torch.nn.functional.mse_loss).
template <class T, class D, class DT>
[[nodiscard]] tensor<T, D> mse_loss(const tensor<T, D>& input, const tensor<T, DT>& target,
                                    reduction r = reduction::mean, call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_FLOATING("nn::mse_loss", T);
    DEVTENSOR_STATIC_CHECK_SAME_DEVICE("nn::mse_loss", D, DT);
    DEVTENSOR_STATIC_CHECK_KERNELS("nn::mse_loss", D, DT);
    devtensor::detail::check_loss_shapes("mse_loss", input, target);
    return devtensor::detail::reduced_map({"mse_loss", site}, devtensor::detail::squared_difference{}, r, input,
                                          target);
}

/// Binary cross-entropy of sigmoid(input) against target in [0, 1], computed from the
/// logits without overflow (torch.nn.functional.binary_cross_entropy_with_logits).
template <class T, class D, class DT>
[[nodiscard]] tensor<T, D> binary_cross_entropy_with_logits(const tensor<T, D>& input, const tensor<T, DT>& target,
                                                            reduction r = reduction::mean,
                                                            call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_FLOATING("nn::binary_cross_entropy_with_logits", T);
    DEVTENSOR_STATIC_CHECK_SAME_DEVICE("nn::binary_cross_entropy_with_logits", D, DT);
    DEVTENSOR_STATIC_CHECK_KERNELS("nn::binary_cross_entropy_with_logits", D, DT);
    devtensor::detail::check_loss_shapes("binary_cross_entropy_with_logits", input, target);
    return devtensor::detail::reduced_map({"binary_cross_entropy_with_logits", site},
                                          devtensor::detail::bce_with_logits{}, r, input, target);
}

/// The negative log-likelihood of class target[i] in row i of log-probabilities
/// [N, C] (torch.nn.functional.nll_loss); a class index outside [0, C) is an index_error.
template <class T, class D, class DT>
[[nodiscard]] tensor<T, D> nll_loss(const tensor<T, D>& log_probs, const tensor<std::int64_t, DT>& target,
                                    reduction r = reduction::mean, call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_FLOATING("nn::nll_loss", T);
    DEVTENSOR_STATIC_CHECK_SAME_DEVICE("nn::nll_loss", D, DT);
    DEVTENSOR_STATIC_CHECK_KERNELS("nn::nll_loss", D, DT);
    devtensor::detail::check_defined("nll_loss", {{"input", log_probs.defined()}, {"target", target.defined()}});
    devtensor::detail::check_same_device("nll_loss", devtensor::detail::operand_of("input", log_probs),
                                         devtensor::detail::operand_of("target", target));
    if (log_probs.dim() != 2 || target.dim() != 1 || target.shape()[0] != log_probs.shape()[0])
        throw shape_error("devtensor::nn::nll_loss: needs input [N, C] and target [N] of class indices, got " +
                          log_probs.shape().to_string() + " and " + target.shape().to_string());
    const std::int64_t n = log_probs.shape()[0], classes = log_probs.shape()[1];
    const tensor<std::int64_t, D> column = tensor_cast<D>(target.view({n, 1}));
    tensor<T, D> picked;
    {
        const no_grad quiet;
        // a class index out of range: index_error naming nll_loss (on a GPU at the next synchronisation)
        picked = neg(devtensor::detail::gather_along({"nll_loss (class index)", site}, log_probs.detach(), 1, column)
                         .view({n}),
                     site);
    }
    if (devtensor::detail::recording(log_probs)) {
        auto node = devtensor::detail::make_node<devtensor::detail::nll_node<T>>();
        node->target = column;
        node->classes = classes;
        devtensor::detail::record(picked, std::move(node), "nll_loss", log_probs);
    }
    return devtensor::detail::reduced(picked, r, site);
}

/// nll_loss of log_softmax(logits, 1): logits [N, C], target [N] class indices
/// (torch.nn.functional.cross_entropy); log-sum-exp keeps it finite for any logits.
template <class T, class D, class DT>
[[nodiscard]] tensor<T, D> cross_entropy(const tensor<T, D>& logits, const tensor<std::int64_t, DT>& target,
                                         reduction r = reduction::mean, call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_FLOATING("nn::cross_entropy", T);
    devtensor::detail::check_defined("cross_entropy", {{"input", logits.defined()}, {"target", target.defined()}});
    if (logits.dim() != 2)
        throw shape_error("devtensor::nn::cross_entropy: needs logits [N, C] and target [N] of class indices, got " +
                          logits.shape().to_string() + " and " + target.shape().to_string());
    return nll_loss(log_softmax(logits, 1), target, r, site);
}

DEVTENSOR_END_TU_NAMESPACE
}  // namespace nn
}  // namespace devtensor
