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
/// g + weight_decay·p (g itself when there is no weight decay).
template <class T>
DEVTENSOR_HOST_DEVICE T decayed(T g, T p, T weight_decay) {
    return weight_decay != T{0} ? devtensor::detail::add(g, devtensor::detail::mul(weight_decay, p)) : g;
}

/// The first momentum buffer: d = g + weight_decay·p.
template <class T>
struct sgd_first_buffer {
    T weight_decay;
    DEVTENSOR_HOST_DEVICE T operator()(T g, T p) const { return decayed(g, p, weight_decay); }
};

/// The momentum buffer after: momentum·buf + (1 - dampening)·d.
template <class T>
struct sgd_buffer {
    T momentum, undamped, weight_decay;
    DEVTENSOR_HOST_DEVICE T operator()(T buf, T g, T p) const {
        return devtensor::detail::add(devtensor::detail::mul(momentum, buf),
                                      devtensor::detail::mul(undamped, decayed(g, p, weight_decay)));
    }
};

/// p - lr·step, step = d (no momentum), buf, or d + momentum·buf (Nesterov).
template <class T>
struct sgd_update {
    T lr, momentum, weight_decay;
    bool with_momentum, nesterov;
    DEVTENSOR_HOST_DEVICE T operator()(T p, T g, T buf) const {
        T step = decayed(g, p, weight_decay);
        if (with_momentum) step = nesterov ? devtensor::detail::add(step, devtensor::detail::mul(momentum, buf)) : buf;
        return devtensor::detail::add(p, -devtensor::detail::mul(lr, step));
    }
};
}  // namespace detail

/// torch.optim.SGD over a module's parameters (or a parameter list).
template <class T>
class sgd : public parameter_set<T> {
public:
    template <class M>
    explicit sgd(const M& module, sgd_options options = {})
        : parameter_set<T>(parameters_of(module), "sgd"), options_(options), buffers_(this->params_.size()) {
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
        this->for_each_gradient("sgd", [&](std::size_t i, const tensor<T, device>& p, const tensor<T, device>& g) {
            tensor<T, device>& buf = buffers_[i];
            if (with_momentum) {
                if (!buf.defined()) {
                    buf = tensor<T, device>(p.shape(), p.device(), {"optim::sgd", call_site{}});
                    devtensor::detail::map_out("optim::sgd", detail::sgd_first_buffer<T>{T(o.weight_decay)}, buf, g, p);
                } else {
                    devtensor::detail::map_out("optim::sgd",
                                               detail::sgd_buffer<T>{T(o.momentum), T(1 - o.dampening), T(o.weight_decay)},
                                               buf, buf, g, p);
                }
            }
            devtensor::detail::map_out("optim::sgd",
                                       detail::sgd_update<T>{T(o.lr), T(o.momentum), T(o.weight_decay), with_momentum,
                                                             o.nesterov},
                                       p, p, g, with_momentum ? buf : g);
        });
    }

    const sgd_options& options() const noexcept { return options_; }
    /// The momentum buffer of parameter i (undefined before its first step).
    const tensor<T, device>& momentum_buffer(std::size_t i) const { return buffers_.at(i); }
    /// The same, writable: optim::load restores it.
    tensor<T, device>& momentum_buffer(std::size_t i) { return buffers_.at(i); }

private:
    sgd_options options_;
    std::vector<tensor<T, device>> buffers_;
};

template <class M>
sgd(const M&, sgd_options = {}) -> sgd<typename std::ranges::range_value_t<decltype(parameters_of(std::declval<const M&>()))>::value_type>;

}  // namespace devtensor::optim
