// optim::sgd: stochastic gradient descent with momentum, dampening, Nesterov and
// weight decay, PyTorch's update (torch.optim.SGD), one elementwise pass per tensor.
#pragma once

#include <devtensor/detail/arith.hpp>
#include <devtensor/ops/elementwise.hpp>
#include <devtensor/optim/optimizer.hpp>

#include <string>
#include <vector>

namespace devtensor::optim {

struct sgd_options {
    double lr = 1e-3;
    double momentum = 0;
    double dampening = 0;
    double weight_decay = 0;
    bool nesterov = false;
};

namespace detail {
// The functors vectorise (the CPU runs them on 16-byte vectors, each lane as the
// scalar form): V is T or a vector of T; the hyperparameters stay scalars.

/// g + weight_decay·p (g itself when there is no weight decay).
template <class V, class T>
DEVTENSOR_HOST_DEVICE V decayed(V g, V p, T weight_decay) {
    using devtensor::detail::add, devtensor::detail::mul, devtensor::detail::splat;
    return weight_decay != T{0} ? add(g, mul(splat<V>(weight_decay), p)) : g;
}

/// The first momentum buffer: d = g + weight_decay·p.
template <class T>
struct sgd_first_buffer {
    static constexpr bool vectorizes = true;
    T weight_decay;
    template <class V>
    DEVTENSOR_HOST_DEVICE V operator()(V g, V p) const {
        return decayed(g, p, weight_decay);
    }
};

/// The momentum buffer after: momentum·buf + (1 - dampening)·d.
template <class T>
struct sgd_buffer {
    static constexpr bool vectorizes = true;
    T momentum, undamped, weight_decay;
    template <class V>
    DEVTENSOR_HOST_DEVICE V operator()(V buf, V g, V p) const {
        using devtensor::detail::add, devtensor::detail::mul, devtensor::detail::splat;
        return add(mul(splat<V>(momentum), buf), mul(splat<V>(undamped), decayed(g, p, weight_decay)));
    }
};

/// p - lr·g: sgd_update without momentum or weight decay (its bits, without its branches).
template <class T>
struct sgd_plain {
    static constexpr bool vectorizes = true;
    T lr;
    template <class V>
    DEVTENSOR_HOST_DEVICE V operator()(V p, V g) const {
        using devtensor::detail::add, devtensor::detail::mul, devtensor::detail::splat;
        return add(p, -mul(splat<V>(lr), g));
    }
};

/// p - lr·step, step = d (no momentum), buf, or d + momentum·buf (Nesterov).
template <class T>
struct sgd_update {
    static constexpr bool vectorizes = true;
    T lr, momentum, weight_decay;
    bool with_momentum, nesterov;
    template <class V>
    DEVTENSOR_HOST_DEVICE V operator()(V p, V g, V buf) const {
        using devtensor::detail::add, devtensor::detail::mul, devtensor::detail::splat;
        V step = decayed(g, p, weight_decay);
        if (with_momentum) step = nesterov ? add(step, mul(splat<V>(momentum), buf)) : buf;
        return add(p, -mul(splat<V>(lr), step));
    }
};
}  // namespace detail

/// torch.optim.SGD over a module's parameters (or a parameter list); the momentum
/// buffers are tensor<T, D>, on their parameters' devices.
template <class T, Device D = device>
class sgd : public parameter_set<T, D> {
public:
    template <class M>
    explicit sgd(const M& module, sgd_options options = {})
        : parameter_set<T, D>(parameters_of(module), "sgd"), options_(options), buffers_(this->params_.size()) {
        if (options.lr < 0 || options.momentum < 0 || options.weight_decay < 0)
            throw error("devtensor::optim::sgd: lr, momentum and weight_decay must be >= 0");
        if (options.nesterov && (options.momentum <= 0 || options.dampening != 0))
            throw error("devtensor::optim::sgd: Nesterov momentum requires a momentum and zero dampening");
    }

    /// One update of every parameter that has a gradient.
    template <class Tu = devtensor::detail::tu_tag>
    void step() {
        const sgd_options& o = options_;
        const bool with_momentum = o.momentum != 0;
        this->for_each_gradient("sgd", [&](std::size_t i, const tensor<T, D>& p, const tensor<T, D>& g) {
            tensor<T, D>& buf = buffers_[i];
            if (with_momentum) {
                if (!buf.defined()) {
                    buf = tensor<T, D>(p.shape(), p.device(), {"optim::sgd", call_site{}});
                    devtensor::detail::map_out("optim::sgd", detail::sgd_first_buffer<T>{T(o.weight_decay)}, buf, g, p);
                } else {
                    devtensor::detail::map_out("optim::sgd",
                                               detail::sgd_buffer<T>{T(o.momentum), T(1 - o.dampening), T(o.weight_decay)},
                                               buf, buf, g, p);
                }
            }
            if (!with_momentum && o.weight_decay == 0)
                devtensor::detail::map_out("optim::sgd", detail::sgd_plain<T>{T(o.lr)}, p, p, g);
            else
                devtensor::detail::map_out("optim::sgd",
                                           detail::sgd_update<T>{T(o.lr), T(o.momentum), T(o.weight_decay),
                                                                 with_momentum, o.nesterov},
                                           p, p, g, with_momentum ? buf : g);
        });
    }

    const sgd_options& options() const noexcept { return options_; }
    /// The momentum buffer of parameter i (undefined before its first step).
    const tensor<T, D>& momentum_buffer(std::size_t i) const { return buffers_.at(i); }
    /// The same, writable: optim::load restores it.
    tensor<T, D>& momentum_buffer(std::size_t i) { return buffers_.at(i); }

private:
    sgd_options options_;
    std::vector<tensor<T, D>> buffers_;
};

template <class M>
sgd(const M&, sgd_options = {}) -> sgd<typename parameter_of<M>::value_type, typename parameter_of<M>::device_type>;

}  // namespace devtensor::optim
