// nn::clip_grad_norm_ (torch.nn.utils.clip_grad_norm_): scales every gradient
// so that their joint norm is at most max_norm, with PyTorch's arithmetic: each
// gradient's norm, the norm of those norms, then one factor for all.
#pragma once

#include <devtensor/autograd/graph.hpp>
#include <devtensor/error.hpp>
#include <devtensor/ops/arithmetic.hpp>
#include <devtensor/ops/extremes.hpp>
#include <devtensor/ops/pow.hpp>
#include <devtensor/ops/sum.hpp>
#include <devtensor/ops/unary_math.hpp>
#include <devtensor/optim/optimizer.hpp>  // parameters_of

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace devtensor::nn {

/// Scales the gradients of `module`'s parameters (or of a parameter list) in place by
/// max_norm / (total + 1e-6) when that is below 1, where total is the norm_type-norm
/// (any p > 0, or infinity) of all gradients together; returns total. Parameters without
/// a gradient are skipped. With error_if_nonfinite, a NaN or infinite total throws
/// autograd_error and changes nothing. One synchronisation per parameter on a GPU.
template <class M>
double clip_grad_norm_(const M& module, double max_norm, double norm_type = 2.0, bool error_if_nonfinite = false) {
    if (!(max_norm >= 0) || !(norm_type > 0))
        throw error("devtensor::nn::clip_grad_norm_: max_norm must be >= 0 and norm_type > 0 (got " +
                    std::to_string(max_norm) + ", " + std::to_string(norm_type) + ")");
    const no_grad quiet;
    const auto params = optim::parameters_of(module);
    using T = typename std::ranges::range_value_t<decltype(params)>::value_type;
    const bool infinity = std::isinf(norm_type);
    const auto p = static_cast<T>(norm_type);
    std::vector<decltype(params.begin()->grad())> grads;
    T total{};  // max of the norms, or the sum of their p-th powers
    for (const auto& param : params) {
        auto g = param.grad();
        if (!g.defined()) continue;
        if (infinity) {
            const T norm = g.numel() == 0 ? T{} : amax(abs(g)).item();
            total = std::isnan(norm) || norm > total ? norm : total;
        } else {
            const T norm = norm_type == 2.0 ? sqrt(sum(g * g)).item() : pow(sum(pow(abs(g), p)), T(1) / p).item();
            total += norm_type == 2.0 ? norm * norm : std::pow(norm, p);
        }
        grads.push_back(std::move(g));
    }
    if (!infinity) total = norm_type == 2.0 ? std::sqrt(total) : std::pow(total, T(1) / p);
    if (error_if_nonfinite && !std::isfinite(total))
        throw autograd_error("devtensor::nn::clip_grad_norm_: the total norm of the gradients is " +
                             std::to_string(total) + " (norm_type " + std::to_string(norm_type) +
                             "); pass error_if_nonfinite = false to scale them anyway");
    const T factor = T(max_norm) / (total + T(1e-6));
    if (!(factor >= T(1)))  // a NaN total makes every gradient NaN, as PyTorch's clamp does
        for (auto& g : grads) g *= factor;
    return static_cast<double>(total);
}

}  // namespace devtensor::nn
