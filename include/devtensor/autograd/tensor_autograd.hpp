// The tensor's autograd members (declared in tensor.hpp): requires_grad, grad,
// detach, backward, hooks.
#pragma once

#include <devtensor/autograd/graph.hpp>
#include <devtensor/tensor.hpp>

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

namespace devtensor {

template <class T, class D>
bool tensor<T, D>::requires_grad() const noexcept {
    return detail::wants_grad(*this);
}

template <class T, class D>
tensor<T, D>& tensor<T, D>::requires_grad_(bool on) {
    static_assert(std::is_floating_point_v<T>,
                  "devtensor::tensor::requires_grad_: only floating-point tensors can require gradients");
    require_defined("requires_grad_");
    if (autograd_ && autograd_->grad_fn) {
        if (on) return *this;  // already in a graph: a gradient flows
        throw autograd_error("devtensor::tensor::requires_grad_: this tensor was computed by " +
                             std::string(autograd_->grad_fn->op) +
                             " from tensors that require grad; use detach() to get one that does not");
    }
    if (!autograd_) {
        if (!on) return *this;
        autograd_ = std::make_shared<detail::autograd_meta<T>>();
    }
    autograd_->requires_grad = on;
    return *this;
}

template <class T, class D>
tensor<T, D> tensor<T, D>::grad() const {
    if (!autograd_ || !autograd_->grad.defined()) return tensor{};
    return tensor_cast<D>(autograd_->grad);
}

template <class T, class D>
void tensor<T, D>::set_grad(const tensor<T, devtensor::device>& g) const {
    if (g.defined()) {
        require_defined("set_grad");
        if (!(g.shape() == shape_))
            throw shape_error("devtensor::tensor::set_grad: a gradient of shape " + g.shape().to_string() +
                              " for a tensor of shape " + shape_.to_string());
        if (devtensor::device(g.device()) != devtensor::device(dev_))
            throw device_mismatch("devtensor::tensor::set_grad: a gradient on " + to_string(g.device()) +
                                  " for a tensor on " + to_string(dev_));
    }
    if (!autograd_) {
        if (!g.defined()) return;
        throw autograd_error("devtensor::tensor::set_grad: the tensor does not require grad; call "
                             "requires_grad_() first");
    }
    autograd_->grad = g.detach();
}

template <class T, class D>
bool tensor<T, D>::is_leaf() const noexcept {
    return !autograd_ || !autograd_->grad_fn;
}

template <class T, class D>
tensor<T, D> tensor<T, D>::detach() const {
    tensor result = *this;
    result.autograd_.reset();
    return result;
}

template <class T, class D>
template <class Tu>
void tensor<T, D>::backward(bool retain_graph, call_site site) const {
    require_defined("backward");
    if (numel() != 1)
        throw autograd_error("devtensor::tensor::backward: grad can be implicitly created only for scalar "
                             "outputs, but this tensor has shape " + shape_.to_string() +
                             "; pass its gradient: backward(gradient)");
    if constexpr (std::is_floating_point_v<T>) {
        backward<devtensor::device, Tu>(detail::filled_grad(shape_, devtensor::device(dev_), T{1}), retain_graph,
                                        site);
    } else {
        throw autograd_error("devtensor::tensor::backward: an integer or bool tensor has no gradient");
    }
}

template <class T, class D>
template <class E, class Tu>
void tensor<T, D>::backward(const tensor<T, E>& gradient, bool retain_graph, call_site site) const {
    require_defined("backward");
    if constexpr (!std::is_floating_point_v<T>) {
        throw autograd_error("devtensor::tensor::backward: an integer or bool tensor has no gradient");
    } else {
        if (!detail::wants_grad(*this))
            throw autograd_error("devtensor::tensor::backward: this tensor does not require grad and has no "
                                 "grad_fn: nothing it came from requires grad (call requires_grad_() on the "
                                 "parameters), or it was computed under no_grad (at " +
                                 std::string(site.file_name()) + ":" + std::to_string(site.line()) + ")");
        if (!gradient.defined() || !(gradient.shape() == shape_))
            throw shape_error("devtensor::tensor::backward: the gradient has shape " +
                              (gradient.defined() ? gradient.shape().to_string() : std::string("(undefined)")) +
                              ", the tensor " + shape_.to_string());
        if (devtensor::device(gradient.device()) != devtensor::device(dev_))
            throw device_mismatch("devtensor::tensor::backward: the gradient is on " + to_string(gradient.device()) +
                                  ", the tensor on " + to_string(dev_));
        const auto root = detail::edge_of(*this);
        detail::run_backward<T>(root, tensor<T, devtensor::device>(gradient.detach()), retain_graph);
    }
}

template <class T, class D>
void tensor<T, D>::register_post_accumulate_grad_hook(std::function<void(tensor<T, devtensor::device>&)> hook) const {
    if (!autograd_ || !autograd_->requires_grad || autograd_->grad_fn)
        throw autograd_error("devtensor::tensor::register_post_accumulate_grad_hook: only a leaf that requires "
                             "grad has an accumulated gradient");
    autograd_->hooks.push_back(std::move(hook));
}

}  // namespace devtensor
