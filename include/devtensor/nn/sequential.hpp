// nn::sequential: a compile-time chain of layers, moved together, called in order.
#pragma once

#include <devtensor/device.hpp>

#include <cstddef>
#include <tuple>
#include <utility>

namespace devtensor::nn {

/// Layers applied in order; get<I>(net) reaches layer I (net[0] in PyTorch),
/// and `auto& [first, second] = net;` binds them.
template <class... Layers>
class sequential {
public:
    explicit sequential(Layers... layers) : layers_(std::move(layers)...) {}

    /// Every layer on `dev` (a new type for a static device).
    template <Device E>
    auto to(const E& dev) const {
        return std::apply(
            [&](const auto&... layer) { return sequential<decltype(layer.to(dev))...>(layer.to(dev)...); },
            layers_);
    }

    template <class X>
    auto operator()(const X& x) const {
        return call<0>(x);
    }
    template <class X>
    auto forward(const X& x) const {
        return call<0>(x);
    }

    template <std::size_t I>
    auto& get() noexcept { return std::get<I>(layers_); }
    template <std::size_t I>
    const auto& get() const noexcept { return std::get<I>(layers_); }

private:
    template <std::size_t I, class X>
    auto call(const X& x) const {
        if constexpr (I + 1 == sizeof...(Layers)) return std::get<I>(layers_)(x);
        else return call<I + 1>(std::get<I>(layers_)(x));
    }

    std::tuple<Layers...> layers_;
};

/// Layer I of `net`.
template <std::size_t I, class... L>
auto& get(sequential<L...>& net) noexcept { return net.template get<I>(); }
template <std::size_t I, class... L>
const auto& get(const sequential<L...>& net) noexcept { return net.template get<I>(); }

}  // namespace devtensor::nn

template <class... L>
struct std::tuple_size<devtensor::nn::sequential<L...>>
    : std::integral_constant<std::size_t, sizeof...(L)> {};
template <std::size_t I, class... L>
struct std::tuple_element<I, devtensor::nn::sequential<L...>> {
    using type = std::tuple_element_t<I, std::tuple<L...>>;
};
