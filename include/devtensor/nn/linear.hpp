// nn::linear: a fully connected layer with torch.nn.Linear's parameters and initialisation.
#pragma once

#include <devtensor/detail/arith.hpp>
#include <devtensor/detail/op_checks.hpp>  // DEVTENSOR_STATIC_CHECK_FLOATING
#include <devtensor/nn/module.hpp>
#include <devtensor/ops/linear.hpp>
#include <devtensor/ops/random.hpp>  // fill_uniform
#include <devtensor/random.hpp>
#include <devtensor/tensor.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace devtensor::nn {

/// y = x · weightᵀ + bias, weight [out, in], bias [out]. Parameters start on the
/// CPU, uniform in ±1/sqrt(in_features) as in torch.nn.Linear, drawn from `gen`
/// (weight first, then bias), and are then moved to D's default device; so the
/// initial weights are the same wherever the layer ends up.
///
/// One type in every translation unit: the members that reach kernels take the
/// defaulted `Tu` parameter (config.hpp), so nvcc and g++ files each get their own.
template <class T, Device D = device>
class linear {
    DEVTENSOR_STATIC_CHECK_FLOATING("nn::linear", T);

public:
    template <class Tu = detail::tu_tag>
    linear(std::int64_t in_features, std::int64_t out_features, bool with_bias = true,
           generator& gen = default_generator(device()), call_site site = call_site::current())
        : linear(init<Tu>(in_features, out_features, with_bias, gen, site)) {}

    tensor<T, D> weight;
    tensor<T, D> bias;  ///< undefined when the layer has no bias

    std::int64_t in_features() const noexcept { return weight.shape()[1]; }
    std::int64_t out_features() const noexcept { return weight.shape()[0]; }

    /// The layer on `dev`; a static device gives a new type. Parameters already there
    /// are shared; moved ones are new leaves that keep requires_grad and take their
    /// gradients along.
    template <Device E>
    [[nodiscard]] linear<T, E> to(const E& dev, call_site site = call_site::current()) const {
        return linear<T, E>(detail::moved_parameter(weight, dev, site), detail::moved_parameter(bias, dev, site));
    }

    template <class X, class Tu = detail::tu_tag>
    [[nodiscard]] auto forward(const X& x, call_site site = call_site::current()) const {
        return devtensor::linear(x, weight, bias, site);
    }
    template <class X, class Tu = detail::tu_tag>
    [[nodiscard]] auto operator()(const X& x, call_site site = call_site::current()) const {
        return forward<X, Tu>(x, site);
    }

    /// weight, then bias when there is one: handles of the layer's own type, sharing the
    /// storage and the gradient (an optimizer's state takes the same static device).
    std::vector<tensor<T, D>> parameters() const {
        std::vector<tensor<T, D>> result{weight};
        if (bias.defined()) result.push_back(bias);
        return result;
    }
    /// The same as run-time handles, named as PyTorch's state_dict names them.
    std::vector<named_parameter<T>> named_parameters() const {
        std::vector<named_parameter<T>> result{{"weight", weight}};
        if (bias.defined()) result.emplace_back("bias", bias);
        return result;
    }

private:
    template <class, Device>
    friend class linear;

    linear(tensor<T, D> w, tensor<T, D> b) : weight(std::move(w)), bias(std::move(b)) {}

    template <class Tu>
    static linear init(std::int64_t in_features, std::int64_t out_features, bool with_bias,
                       generator& gen, call_site site) {
        if (in_features < 0 || out_features < 0)
            throw shape_error("devtensor::nn::linear: in_features and out_features must be >= 0, got " +
                              std::to_string(in_features) + " and " + std::to_string(out_features));
        const T bound = in_features > 0 ? T(1) / std::sqrt(static_cast<T>(in_features)) : T(0);
        const origin made{"nn::linear", site};
        // Drawn on the CPU, then moved where the layer lives: part of making the layer,
        // so an explicit copy for the transfer guard.
        const auto uniform = [&](const shape& s) {
            tensor<T, cpu_device> t(s, cpu_device{}, made);
            fill_uniform(t, gen);
            T* const w = t.data();  // the scaling, rounded step by step on every build (no fma)
            for (std::int64_t i = 0; i < t.numel(); ++i) w[i] = detail::add(-bound, detail::mul(w[i], T(2) * bound));
            if constexpr (!StaticCudaDevice<D>) {
                return tensor<T, D>(t);  // D's default device is the CPU: shared, not copied
            } else {
                tensor<T, D> placed(s, D{}, made);
                detail::copy_bytes(placed.data(), device(D{}), t.data(), device(),
                                   sizeof(T) * static_cast<std::size_t>(t.numel()), {"nn::linear", site, true});
                return placed;
            }
        };
        tensor<T, D> w = uniform({out_features, in_features});
        tensor<T, D> b = with_bias ? uniform({out_features}) : tensor<T, D>{};
        w.requires_grad_();  // parameters, as torch.nn.Parameter
        if (b.defined()) b.requires_grad_();
        return linear(w, b);
    }
};

}  // namespace devtensor::nn
