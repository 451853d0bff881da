// What every optimizer shares: the parameters it updates (handles sharing their
// gradients), zero_grad, and the check that a step has gradients to apply.
#pragma once

#include <devtensor/autograd/graph.hpp>
#include <devtensor/nn/module.hpp>
#include <devtensor/tensor.hpp>

#include <cstddef>
#include <ranges>
#include <string>
#include <utility>
#include <vector>

namespace devtensor::optim {

/// The parameters of a module (or a list of them), for an optimizer: handles of
/// type tensor<T, D>, so a net on a static device gets state of the same static type.
template <class T, Device D = device>
class parameter_set {
public:
    /// Any range of tensors that convert to tensor<T, D> (a static-device list to a run-time one).
    template <std::ranges::input_range R>
    explicit parameter_set(const R& params, const char* name) : params_(std::ranges::begin(params), std::ranges::end(params)) {
        for (std::size_t i = 0; i < params_.size(); ++i)
            if (!params_[i].defined() || !params_[i].requires_grad() || !params_[i].is_leaf())
                throw autograd_error(std::string("devtensor::optim::") + name + ": parameter " + std::to_string(i) +
                                     " is not a leaf that requires grad (pass the module, or its parameters())");
    }

    /// Every gradient set to none (PyTorch 2.x's zero_grad(set_to_none=True)).
    void zero_grad() const {
        for (const auto& p : params_) p.set_grad({});
    }

    const std::vector<tensor<T, D>>& parameters() const noexcept { return params_; }

protected:
    /// f(i, parameter, gradient) for each parameter that has a gradient, under no_grad;
    /// autograd_error when none has one.
    template <class F>
    void for_each_gradient(const char* name, F&& f) const {
        const no_grad off;
        bool any = false;
        for (std::size_t i = 0; i < params_.size(); ++i) {
            const tensor<T, D> g = params_[i].grad();
            if (!g.defined()) continue;
            any = true;
            f(i, params_[i], g);
        }
        if (!any && !params_.empty())
            throw autograd_error(std::string("devtensor::optim::") + name +
                                 "::step: no parameter has a gradient. Did backward() run? The usual cause: the "
                                 "net was moved (to(dev)) after the optimizer was made, so the optimizer holds "
                                 "the old parameters; make the optimizer after moving the net");
    }

    std::vector<tensor<T, D>> params_;
};

/// The parameters of `module` (its parameters()), or the list itself.
template <class M>
auto parameters_of(const M& module) {
    if constexpr (requires { module.parameters(); }) return module.parameters();
    else return module;
}

/// The handle type of `M`'s parameters (tensor<T, D>): what the deduction guides read.
template <class M>
using parameter_of = std::ranges::range_value_t<decltype(parameters_of(std::declval<const M&>()))>;

}  // namespace devtensor::optim
