// optim::adam and optim::adamw: PyTorch's updates (torch.optim.Adam / AdamW, with
// bias correction and amsgrad), their scalars computed on the host in double.
#pragma once

#include <devtensor/detail/arith.hpp>
#include <devtensor/detail/math.hpp>
#include <devtensor/ops/elementwise.hpp>
#include <devtensor/optim/optimizer.hpp>
#include <devtensor/optim/sgd.hpp>  // detail::decayed

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace devtensor::optim {

struct adam_options {
    double lr = 1e-3;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
    double weight_decay = 0;  ///< added to the gradient
    bool amsgrad = false;
};
/// adamw's: the same fields, PyTorch's defaults (weight decay 1e-2, decoupled).
struct adamw_options {
    double lr = 1e-3;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
    double weight_decay = 1e-2;  ///< p ← p·(1 - lr·weight_decay) before the step
    bool amsgrad = false;
};

namespace detail {
/// m = β1·m + (1 - β1)·g' (1 - β1 rounded from double, as PyTorch's scalar)
template <class T>
struct adam_first_moment {
    T beta1, one_minus_beta1, weight_decay;
    DEVTENSOR_HOST_DEVICE T operator()(T m, T g, T p) const {
        return devtensor::detail::add(devtensor::detail::mul(beta1, m),
                                      devtensor::detail::mul(one_minus_beta1, decayed(g, p, weight_decay)));
    }
};
/// v = β2·v + (1 - β2)·g'²
template <class T>
struct adam_second_moment {
    T beta2, one_minus_beta2, weight_decay;
    DEVTENSOR_HOST_DEVICE T operator()(T v, T g, T p) const {
        const T d = decayed(g, p, weight_decay);
        return devtensor::detail::add(devtensor::detail::mul(beta2, v),
                                      devtensor::detail::mul(devtensor::detail::mul(one_minus_beta2, d), d));
    }
};
template <class T>
struct larger_of {
    DEVTENSOR_HOST_DEVICE T operator()(T a, T b) const { return a > b ? a : b; }
};
/// p·(1 - lr·wd) (adamw's decoupled decay), then p - step_size·(m / (sqrt(v)/sqrt(bc2) + eps))
template <class T>
struct adam_update {
    T step_size, bias_correction2_sqrt, eps, decay;
    DEVTENSOR_HOST_DEVICE T operator()(T p, T m, T v) const {
        const T denom = devtensor::detail::add(static_cast<T>(devtensor::detail::math::sqrt(v) / bias_correction2_sqrt), eps);
        const T kept = decay != T{1} ? devtensor::detail::mul(p, decay) : p;
        return devtensor::detail::add(kept, -devtensor::detail::mul(step_size, static_cast<T>(m / denom)));
    }
};
}  // namespace detail

/// torch.optim.Adam (decoupled = false) and AdamW (true) over a module's parameters;
/// the moments are tensor<T, D>, on their parameters' devices.
template <class T, bool Decoupled = false, Device D = device>
class adam_base : public parameter_set<T, D> {
public:
    using options_type = std::conditional_t<Decoupled, adamw_options, adam_options>;

    template <class M>
    explicit adam_base(const M& module, options_type options = {})
        : parameter_set<T, D>(parameters_of(module), Decoupled ? "adamw" : "adam"), options_(options),
          state_(this->params_.size()) {
        if (options.lr < 0 || options.eps < 0 || options.weight_decay < 0 || options.beta1 < 0 ||
            options.beta1 >= 1 || options.beta2 < 0 || options.beta2 >= 1)
            throw error(std::string("devtensor::optim::") + (Decoupled ? "adamw" : "adam") +
                        ": needs lr, eps, weight_decay >= 0 and betas in [0, 1)");
    }

    template <class Tu = devtensor::detail::tu_tag>
    void step() {
        const options_type& o = options_;
        const char* name = Decoupled ? "optim::adamw" : "optim::adam";
        this->for_each_gradient(Decoupled ? "adamw" : "adam", [&](std::size_t i, const tensor<T, D>& p, const tensor<T, D>& g) {
            state& s = state_[i];
            if (!s.exp_avg.defined()) {  // lazily, on the parameter's device
                s.exp_avg = zeros_on(p);
                s.exp_avg_sq = zeros_on(p);
                if (o.amsgrad) s.max_exp_avg_sq = zeros_on(p);
            }
            ++s.step;
            const T wd = Decoupled ? T{0} : T(o.weight_decay);
            devtensor::detail::map_out(name, detail::adam_first_moment<T>{T(o.beta1), T(1 - o.beta1), wd}, s.exp_avg, s.exp_avg, g, p);
            devtensor::detail::map_out(name, detail::adam_second_moment<T>{T(o.beta2), T(1 - o.beta2), wd}, s.exp_avg_sq, s.exp_avg_sq,
                                       g, p);
            if (o.amsgrad)
                devtensor::detail::map_out(name, detail::larger_of<T>{}, s.max_exp_avg_sq, s.max_exp_avg_sq, s.exp_avg_sq);
            const double bc1 = 1 - std::pow(o.beta1, static_cast<double>(s.step));
            const double bc2 = 1 - std::pow(o.beta2, static_cast<double>(s.step));
            const T decay = Decoupled ? T(1 - o.lr * o.weight_decay) : T{1};
            devtensor::detail::map_out(name,
                                       detail::adam_update<T>{T(o.lr / bc1), T(std::sqrt(bc2)), T(o.eps), decay}, p, p,
                                       s.exp_avg, o.amsgrad ? s.max_exp_avg_sq : s.exp_avg_sq);
        });
    }

    const options_type& options() const noexcept { return options_; }
    /// Steps taken by parameter i.
    std::int64_t steps(std::size_t i) const { return state_.at(i).step; }
    /// Parameter i's state: step, exp_avg, exp_avg_sq, max_exp_avg_sq (the tensors undefined
    /// before its first step); read by optim::save, restored by optim::load.
    auto& state_of(std::size_t i) { return state_.at(i); }
    const auto& state_of(std::size_t i) const { return state_.at(i); }

private:
    struct state {
        std::int64_t step = 0;
        tensor<T, D> exp_avg, exp_avg_sq, max_exp_avg_sq;
    };
    static tensor<T, D> zeros_on(const tensor<T, D>& p) {
        return devtensor::detail::filled_grad(p.shape(), p.device(), T{0}).to(p.device());  // shared, not copied
    }

    options_type options_;
    std::vector<state> state_;
};

template <class T, Device D = device>
class adam : public adam_base<T, false, D> {
public:
    using adam_base<T, false, D>::adam_base;
};
template <class T, Device D = device>
class adamw : public adam_base<T, true, D> {
public:
    using adam_base<T, true, D>::adam_base;
};

template <class M>
adam(const M&, adam_options = {}) -> adam<typename parameter_of<M>::value_type, typename parameter_of<M>::device_type>;
template <class M>
adamw(const M&, adamw_options = {}) -> adamw<typename parameter_of<M>::value_type, typename parameter_of<M>::device_type>;

}  // namespace devtensor::optim
