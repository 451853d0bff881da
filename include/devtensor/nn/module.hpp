// What a layer is (the Module concept), the layers without parameters (relu,
// sigmoid, tanh), and the helpers every module shares: its parameters by name,
// zero_grad, and the move of a parameter with its gradient.
#pragma once

#include <devtensor/autograd/graph.hpp>
#include <devtensor/device.hpp>
#include <devtensor/ops/relu.hpp>
#include <devtensor/ops/unary_math.hpp>
#include <devtensor/tensor.hpp>

#include <string>
#include <utility>
#include <vector>

namespace devtensor::detail {
/// `p` on `dev` as a new leaf (the same one when it is there already), with its
/// requires_grad and its gradient moved too: what module.to(dev) does to each parameter.
template <class T, class D, Device E>
tensor<T, E> moved_parameter(const tensor<T, D>& p, const E& dev, call_site site) {
    if (!p.defined()) return tensor<T, E>{};
    if (device(dev) == device(p.device())) return p.to(dev, site);  // shares storage and record
    const no_grad off;
    tensor<T, E> moved = p.to(dev, site);
    if (p.requires_grad()) {
        moved.requires_grad_();
        if (p.grad().defined()) moved.set_grad(p.grad().to(device(dev), site));
    }
    return moved;
}
}  // namespace devtensor::detail

namespace devtensor::nn {

/// A layer: moves to a device and lists its parameters (`no_parameters` when it has
/// none). Calling it (`forward(x)` / `operator()`) is checked where it is called.
template <class M>
concept Module = requires(const M& m) {
    m.parameters();
    m.to(cpu_device{});
};

/// What parameters() of a layer without parameters returns.
struct no_parameters {};

/// A parameter's name as PyTorch's state_dict writes it ("0.weight") and its handle.
template <class T>
using named_parameter = std::pair<std::string, tensor<T, device>>;


/// Layers that apply one elementwise function and hold nothing.
#define DEVTENSOR_NN_ACTIVATION(name, fn)                                                          \
    struct name {                                                                                  \
        template <class X>                                                                         \
        [[nodiscard]] auto forward(const X& x, call_site site = call_site::current()) const {      \
            return devtensor::fn(x, site);                                                         \
        }                                                                                          \
        template <class X>                                                                         \
        [[nodiscard]] auto operator()(const X& x, call_site site = call_site::current()) const {   \
            return devtensor::fn(x, site);                                                         \
        }                                                                                          \
        no_parameters parameters() const noexcept { return {}; }                                   \
        template <Device E>                                                                        \
        name to(const E&) const noexcept {                                                         \
            return *this;                                                                          \
        }                                                                                          \
    };
DEVTENSOR_NN_ACTIVATION(relu, relu)
DEVTENSOR_NN_ACTIVATION(sigmoid, sigmoid)
DEVTENSOR_NN_ACTIVATION(tanh, tanh)
#undef DEVTENSOR_NN_ACTIVATION

/// Every parameter's gradient set to none (PyTorch 2.x's zero_grad(set_to_none=True)).
template <Module M>
void zero_grad(const M& module) {
    if constexpr (!std::is_same_v<decltype(module.parameters()), no_parameters>)
        for (const auto& p : module.parameters()) p.set_grad({});
}

}  // namespace devtensor::nn
