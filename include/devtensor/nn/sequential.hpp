// nn::sequential: a compile-time chain of layers, moved together, called in order.
#pragma once

#include <devtensor/config.hpp>  // detail::tu_tag
#include <devtensor/device.hpp>
#include <devtensor/error.hpp>
#include <devtensor/nn/module.hpp>
#include <devtensor/origin.hpp>  // call_site

#include <cstddef>
#include <ranges>
#include <vector>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace devtensor::detail {
template <class L>
concept has_parameters = requires(const L& layer) {
    { layer.parameters() } -> std::ranges::range;
};
template <class L>
using parameters_t = decltype(std::declval<const L&>().parameters());
/// Whether layer L has no parameters or lists them as P.
template <class L, class P>
constexpr bool lists_as() {
    if constexpr (has_parameters<L>) return std::is_same_v<parameters_t<L>, P>;
    else return true;
}
/// The parameter list type of a chain: the layers' own when they all agree (a net on
/// one static device keeps its type), else run-time handles; nn::no_parameters if none.
template <class... L>
struct parameter_list {
    using type = nn::no_parameters;
};
template <class L0, class... L>
struct parameter_list<L0, L...> {
    using type = typename parameter_list<L...>::type;
};
template <class L0, class... L>
    requires has_parameters<L0>
struct parameter_list<L0, L...> {
    using P = parameters_t<L0>;
    using type = std::conditional_t<(lists_as<L, P>() && ...), P,
                                    std::vector<tensor<typename std::ranges::range_value_t<P>::value_type, device>>>;
};
}  // namespace devtensor::detail

namespace devtensor::nn {


/// Layers applied in order; get<I>(net) reaches layer I (net[0] in PyTorch),
/// and `auto& [first, second] = net;` binds them.
template <class... Layers>
class sequential {
public:
    explicit sequential(Layers... layers) : layers_(std::move(layers)...) {}

    /// Every layer on `dev` (a new type for a static device).
    template <Device E>
    [[nodiscard]] auto to(const E& dev, call_site site = call_site::current()) const {
        const auto moved = [&](const auto& layer) {  // a user's layer may take no call site
            if constexpr (requires { layer.to(dev, site); }) return layer.to(dev, site);
            else return layer.to(dev);
        };
        auto result = std::apply(
            [&](const auto&... layer) { return sequential<decltype(moved(layer))...>(moved(layer)...); }, layers_);
        result.training_ = training_;
        return result;
    }

    /// Every layer's parameters, in order, sharing storage and gradient: the layers' own
    /// handle type when they all agree (tensor<T, D> of a net on one device type), else
    /// run-time handles; no_parameters when no layer has any.
    auto parameters() const {
        typename detail::parameter_list<Layers...>::type result{};
        if constexpr (!std::is_same_v<decltype(result), no_parameters>)
            std::apply([&](const auto&... layer) { (append(result, layer), ...); }, layers_);
        return result;
    }

    /// The parameters named as PyTorch's state_dict names them: "0.weight", "2.bias", ...
    auto named_parameters() const {
        using P = typename detail::parameter_list<Layers...>::type;
        using T = typename std::ranges::range_value_t<P>::value_type;
        std::vector<named_parameter<T>> result;
        std::size_t index = 0;
        std::apply(
            [&](const auto&... layer) {
                const auto add = [&](const auto& l) {
                    if constexpr (requires { l.named_parameters(); })
                        for (auto& [name, p] : l.named_parameters())
                            result.emplace_back(std::to_string(index) + "." + name, p);
                    ++index;
                };
                (add(layer), ...);
            },
            layers_);
        return result;
    }

    /// Training mode (the default) or evaluation mode, for this net and every layer that
    /// has one (torch's train() / eval()).
    sequential& train(bool on = true) {
        training_ = on;
        std::apply([&](auto&... layer) { ((void)train_layer(layer, on), ...); }, layers_);
        return *this;
    }
    sequential& eval() { return train(false); }
    bool is_training() const noexcept { return training_; }

    /// The layers applied in order. A shape or device error names the layer it came from.
    template <class X, class Tu = detail::tu_tag>
    [[nodiscard]] auto operator()(const X& x, call_site site = call_site::current()) const {
        return call<0, Tu>(x, site);
    }
    template <class X, class Tu = detail::tu_tag>
    [[nodiscard]] auto forward(const X& x, call_site site = call_site::current()) const {
        return call<0, Tu>(x, site);
    }

    template <std::size_t I>
    auto& get() noexcept { return std::get<I>(layers_); }
    template <std::size_t I>
    const auto& get() const noexcept { return std::get<I>(layers_); }

private:
    template <class...>
    friend class sequential;

    template <class P, class L>
    static void append(P& result, const L& layer) {
        if constexpr (detail::has_parameters<L>)
            for (const auto& p : layer.parameters()) result.push_back(p);
    }
    template <class L>
    static bool train_layer(L& layer, bool on) {
        if constexpr (requires { layer.train(on); }) layer.train(on);
        return on;
    }

    template <std::size_t I, class Tu, class X>
    auto call(const X& x, call_site site) const {
        if constexpr (I + 1 == sizeof...(Layers)) return run<I, Tu>(x, site);
        else return call<I + 1, Tu>(run<I, Tu>(x, site), site);
    }

    /// Layer I on x; its shape_error or device_mismatch says which layer it was.
    template <std::size_t I, class Tu, class X>
    auto run(const X& x, call_site site) const {
        const auto where = [] { return " (in nn::sequential layer " + std::to_string(I) + ")"; };
        try {
            const auto& layer = std::get<I>(layers_);
            if constexpr (std::is_invocable_v<decltype(layer), const X&, call_site>) return layer(x, site);
            else return layer(x);  // a user's layer that takes no call site
        } catch (const shape_error& e) {
            throw shape_error(e.what() + where());
        } catch (const device_mismatch& e) {
            throw device_mismatch(e.what() + where());
        }
    }

    std::tuple<Layers...> layers_;
    bool training_ = true;
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
