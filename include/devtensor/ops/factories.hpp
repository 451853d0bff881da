// Factories beyond ones/zeros/full/rand: the *_like family, arange and linspace.
// Each value is a function of its index alone, computed in the same order on
// every device (no contraction: detail::mul / detail::add).
#pragma once

#include <devtensor/detail/arith.hpp>
#include <devtensor/ops/elementwise.hpp>
#include <devtensor/ops/fill.hpp>
#include <devtensor/ops/random.hpp>

#include <cmath>
#include <string>
#include <type_traits>

namespace devtensor {

namespace detail {
DEVTENSOR_BEGIN_TU_NAMESPACE

/// A new contiguous tensor with element i = f(i).
template <class T, class D, class F>
tensor<T, D> generated(const origin& made, const shape& s, const D& dev, const F& f) {
    tensor<T, D> out(s, dev, made);
    const std::int64_t n = out.numel();
    on_device(
        made.op, out.device(), [&] { backend_cpu::generate(f, out.data(), n); },
        [&]([[maybe_unused]] auto ordinal) {
#if DEVTENSOR_HAS_CUDA
            backend_cuda::generate(made.op, ordinal, f, out.data(), n);
#endif
        });
    return out;
}

/// start + i * step, in double for floating T (then rounded once), in int64 for integers.
template <class T>
struct arange_value {
    using A = std::conditional_t<std::is_floating_point_v<T>, double, std::int64_t>;
    A start, step;
    DEVTENSOR_HOST_DEVICE T operator()(std::int64_t i) const {
        return static_cast<T>(detail::add(start, detail::mul(static_cast<A>(i), step)));
    }
};

/// PyTorch's linspace: from the start for the first half, from the end for the
/// second, so both ends are exact.
template <class T>
struct linspace_value {
    T start, end, step;
    std::int64_t steps;
    DEVTENSOR_HOST_DEVICE T operator()(std::int64_t i) const {
        if (i < steps / 2) return detail::add(start, detail::mul(step, static_cast<T>(i)));
        return detail::add(end, -detail::mul(step, static_cast<T>(steps - i - 1)));
    }
};

DEVTENSOR_END_TU_NAMESPACE
}  // namespace detail

DEVTENSOR_BEGIN_TU_NAMESPACE

/// Uninitialised, with t's shape, element type and device (torch.empty_like).
template <class T, class D>
[[nodiscard]] tensor<T, D> empty_like(const tensor<T, D>& t, call_site site = call_site::current()) {
    detail::check_defined("empty_like", {{"the tensor", t.defined()}});
    return tensor<T, D>(t.shape(), t.device(), {"empty_like", site});
}
template <class T, class D>
[[nodiscard]] tensor<T, D> full_like(const tensor<T, D>& t, std::type_identity_t<T> value,
                                     call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_KERNELS("full_like", D);
    detail::check_defined("full_like", {{"the tensor", t.defined()}});
    return detail::filled({"full_like", site}, t.shape(), value, t.device());
}
template <class T, class D>
[[nodiscard]] tensor<T, D> zeros_like(const tensor<T, D>& t, call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_KERNELS("zeros_like", D);
    detail::check_defined("zeros_like", {{"the tensor", t.defined()}});
    return detail::filled({"zeros_like", site}, t.shape(), T{0}, t.device());
}
template <class T, class D>
[[nodiscard]] tensor<T, D> ones_like(const tensor<T, D>& t, call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_KERNELS("ones_like", D);
    detail::check_defined("ones_like", {{"the tensor", t.defined()}});
    return detail::filled({"ones_like", site}, t.shape(), T{1}, t.device());
}
/// Uniform [0, 1) like rand, from the default generator of t's device.
template <class T, class D>
[[nodiscard]] tensor<T, D> rand_like(const tensor<T, D>& t, call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_FLOATING("rand_like", T);
    detail::check_defined("rand_like", {{"the tensor", t.defined()}});
    return rand<T>(t.shape(), t.device(), site);
}

/// Standard normal numbers like randn, from the default generator of t's device.
template <class T, class D>
[[nodiscard]] tensor<T, D> randn_like(const tensor<T, D>& t, call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_FLOATING("randn_like", T);
    detail::check_defined("randn_like", {{"the tensor", t.defined()}});
    return randn<T>(t.shape(), t.device(), site);
}

/// start, start + step, ... up to end (excluded), like torch.arange; step may be negative.
template <class T, Device D = cpu_device>
[[nodiscard]] tensor<T, D> arange(double start, double end, double step = 1, const D& dev = D{},
                                  call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_ELEMENT("devtensor::arange", T);
    static_assert(!std::is_same_v<T, bool>, "devtensor::arange: bool is not served; use an integer or floating type");
    DEVTENSOR_STATIC_CHECK_KERNELS("arange", D);
    if (step == 0 || !std::isfinite(start) || !std::isfinite(end) || !std::isfinite(step))
        throw shape_error("devtensor::arange: needs finite start and end and a non-zero step, got start " +
                          std::to_string(start) + ", end " + std::to_string(end) + ", step " + std::to_string(step));
    if ((end - start) / step < 0)
        throw shape_error("devtensor::arange: upper bound and larger bound inconsistent with step sign (start " +
                          std::to_string(start) + ", end " + std::to_string(end) + ", step " + std::to_string(step) + ")");
    const auto n = static_cast<std::int64_t>(std::ceil((end - start) / step));
    using A = typename detail::arange_value<T>::A;
    return detail::generated<T>({"arange", site}, shape{n}, dev,
                                detail::arange_value<T>{static_cast<A>(start), static_cast<A>(step)});
}
/// 0, 1, ..., end - 1.
template <class T, Device D = cpu_device>
[[nodiscard]] tensor<T, D> arange(double end, const D& dev = D{}, call_site site = call_site::current()) {
    return arange<T>(0, end, 1, dev, site);
}

/// `steps` values from start to end inclusive, evenly spaced (torch.linspace); floating T.
template <class T, Device D = cpu_device>
[[nodiscard]] tensor<T, D> linspace(double start, double end, std::int64_t steps, const D& dev = D{},
                                    call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_FLOATING("linspace", T);
    DEVTENSOR_STATIC_CHECK_KERNELS("linspace", D);
    if (steps < 0) throw shape_error("devtensor::linspace: number of steps must be non-negative, got " + std::to_string(steps));
    const T first = static_cast<T>(start), last = static_cast<T>(steps == 1 ? start : end);
    const T step = steps > 1 ? (last - first) / static_cast<T>(steps - 1) : T{0};
    return detail::generated<T>({"linspace", site}, shape{steps}, dev,
                                detail::linspace_value<T>{first, last, step, steps});
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor
