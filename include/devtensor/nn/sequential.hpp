// nn::sequential: a compile-time chain of layers, moved together, called in order.
#pragma once

#include <devtensor/config.hpp>  // detail::tu_tag
#include <devtensor/device.hpp>
#include <devtensor/error.hpp>
#include <devtensor/origin.hpp>  // call_site

#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>
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
    [[nodiscard]] auto to(const E& dev, call_site site = call_site::current()) const {
        const auto moved = [&](const auto& layer) {  // a user's layer may take no call site
            if constexpr (requires { layer.to(dev, site); }) return layer.to(dev, site);
            else return layer.to(dev);
        };
        return std::apply([&](const auto&... layer) { return sequential<decltype(moved(layer))...>(moved(layer)...); },
                          layers_);
    }

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
