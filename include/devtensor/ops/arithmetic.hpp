// sub, div, maximum, minimum (binary, broadcasting, with scalars, out-variants and
// in place), unary neg and abs, and clamp. Integers wrap as PyTorch's do.
#pragma once

#include <devtensor/detail/math.hpp>
#include <devtensor/ops/entry_points.hpp>

#include <type_traits>

namespace devtensor {

namespace detail {
/// T computed in its unsigned type (wrapping, as C++20 defines the conversion back).
template <class T>
using wrap_t = std::make_unsigned_t<decltype(T{} + T{})>;

struct minus {
    static constexpr bool vectorizes = true;
    static constexpr bool partials_vectorize = true;
    static constexpr bool differentiable = true;
    template <int I, class T>
    DEVTENSOR_HOST_DEVICE T partial(T g, T, T, T) const {
        return I == 0 ? g : -g;
    }
    template <class T>
    DEVTENSOR_HOST_DEVICE T operator()(T a, T b) const {
        if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<wrap_t<T>>(static_cast<wrap_t<T>>(a) - static_cast<wrap_t<T>>(b)));
        else return static_cast<T>(a - b);
    }
};

/// IEEE division (floating-point types only).
struct divides {
    static constexpr bool vectorizes = true;
    static constexpr bool differentiable = true;
    template <int I, class T>
    DEVTENSOR_HOST_DEVICE T partial(T g, T, T a, T b) const {  // PyTorch's: g / b, -g·a / (b·b)
        return I == 0 ? static_cast<T>(g / b) : static_cast<T>(detail::mul(-g, a) / detail::mul(b, b));
    }
    template <class T>
    DEVTENSOR_HOST_DEVICE T operator()(T a, T b) const {
        return static_cast<T>(a / b);
    }
};

/// The larger (smaller) of a and b; a NaN operand gives NaN (torch.maximum).
struct larger {
    static constexpr bool vectorizes = true;  // selects only: lanes of 16-byte vectors alike
    static constexpr bool differentiable = true;
    template <int I, class T>
    DEVTENSOR_HOST_DEVICE T partial(T g, T, T a, T b) const {  // to the larger; a tie splits it (PyTorch)
        const T mine = I == 0 ? a : b, other = I == 0 ? b : a;
        return mine > other ? g : mine == other ? static_cast<T>(g / T{2}) : T{0};
    }
    template <class T>
    DEVTENSOR_HOST_DEVICE T operator()(T a, T b) const {
        return (a != a || a > b) ? a : b;  // b NaN: a > b is false, b
    }
};
struct smaller {
    static constexpr bool vectorizes = true;
    static constexpr bool differentiable = true;
    template <int I, class T>
    DEVTENSOR_HOST_DEVICE T partial(T g, T, T a, T b) const {
        const T mine = I == 0 ? a : b, other = I == 0 ? b : a;
        return mine < other ? g : mine == other ? static_cast<T>(g / T{2}) : T{0};
    }
    template <class T>
    DEVTENSOR_HOST_DEVICE T operator()(T a, T b) const {
        return (a != a || a < b) ? a : b;
    }
};

struct negate {
    static constexpr bool vectorizes = true;
    static constexpr bool differentiable = true;
    template <int I, class T>
    DEVTENSOR_HOST_DEVICE T partial(T g, T, T) const {
        return -g;
    }
    template <class T>
    DEVTENSOR_HOST_DEVICE T operator()(T x) const {
        if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<wrap_t<T>>(wrap_t<T>{0} - static_cast<wrap_t<T>>(x)));
        else return -x;
    }
};

/// |x|: the sign bit cleared for floats (NaN stays NaN); integers wrap (|min| is min).
struct absolute {
    static constexpr bool differentiable = true;
    template <int I, class T>
    DEVTENSOR_HOST_DEVICE T partial(T g, T, T x) const {  // g·sign(x), 0 at 0 (as PyTorch)
        return x > T{0} ? g : x < T{0} ? -g : T{0};
    }
    template <class T>
    DEVTENSOR_HOST_DEVICE T operator()(T x) const {
        if constexpr (std::is_floating_point_v<T>) return math::abs(x);
        else if constexpr (std::is_unsigned_v<T>) return x;
        else return x < T{0} ? negate{}(x) : x;
    }
};

/// min(max(x, lo), hi), NaN kept (torch.clamp).
template <class T>
struct clamp_to {
    T lo, hi;
    static constexpr bool differentiable = true;
    template <int I>
    DEVTENSOR_HOST_DEVICE T partial(T g, T, T x) const {  // g inside [lo, hi], as PyTorch
        return x >= lo && x <= hi ? g : T{0};
    }
    DEVTENSOR_HOST_DEVICE T operator()(T x) const {
        const T y = x < lo ? lo : x;
        return y > hi ? hi : y;
    }
};
}  // namespace detail

DEVTENSOR_BEGIN_TU_NAMESPACE

// sub, sub_, -, -= (torch.sub); not for bool
DEVTENSOR_BINARY_OP(sub, detail::minus, detail::same_element, DEVTENSOR_STATIC_CHECK_NOT_BOOL)
DEVTENSOR_BINARY_OP_INPLACE(sub, detail::minus, DEVTENSOR_STATIC_CHECK_NOT_BOOL)
DEVTENSOR_BINARY_OPERATOR(-, detail::minus, detail::same_element, DEVTENSOR_STATIC_CHECK_NOT_BOOL)
DEVTENSOR_COMPOUND_OPERATOR(-, detail::minus, DEVTENSOR_STATIC_CHECK_NOT_BOOL)

// div, div_, /, /= (torch.div, true division); floating-point types only
DEVTENSOR_BINARY_OP(div, detail::divides, detail::same_element, DEVTENSOR_STATIC_CHECK_FLOATING)
DEVTENSOR_BINARY_OP_INPLACE(div, detail::divides, DEVTENSOR_STATIC_CHECK_FLOATING)
DEVTENSOR_BINARY_OPERATOR(/, detail::divides, detail::same_element, DEVTENSOR_STATIC_CHECK_FLOATING)
DEVTENSOR_COMPOUND_OPERATOR(/, detail::divides, DEVTENSOR_STATIC_CHECK_FLOATING)

// maximum, minimum (torch.maximum / torch.minimum: NaN propagates)
DEVTENSOR_BINARY_OP(maximum, detail::larger, detail::same_element, DEVTENSOR_NO_TYPE_CHECK)
DEVTENSOR_BINARY_OP(minimum, detail::smaller, detail::same_element, DEVTENSOR_NO_TYPE_CHECK)

// neg, neg_, abs, abs_ (torch.neg / torch.abs)
DEVTENSOR_UNARY_OP(neg, detail::negate, detail::same_element, DEVTENSOR_STATIC_CHECK_NOT_BOOL)
DEVTENSOR_UNARY_OP(abs, detail::absolute, detail::same_element, DEVTENSOR_NO_TYPE_CHECK)

/// -x (torch's unary minus).
template <class T, class D>
[[nodiscard]] tensor<T, D> operator-(const tensor<T, D>& x) {
    DEVTENSOR_STATIC_CHECK_NOT_BOOL("operator-", T);
    DEVTENSOR_STATIC_CHECK_KERNELS("operator-", D);
    return detail::map_new<T>({"operator-", call_site{}}, detail::negate{}, x);
}

/// min(max(x, lo), hi) elementwise (torch.clamp); NaN stays NaN.
template <class T, class D, class S>
    requires std::is_arithmetic_v<S>
[[nodiscard]] tensor<T, D> clamp(const tensor<T, D>& x, S lo, S hi, call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_SCALAR("clamp", T, S);
    DEVTENSOR_STATIC_CHECK_KERNELS("clamp", D);
    return detail::map_new<T>({"clamp", site}, detail::clamp_to<T>{static_cast<T>(lo), static_cast<T>(hi)}, x);
}

/// x = clamp(x, lo, hi) in place.
template <class T, class D, class S>
    requires std::is_arithmetic_v<S>
tensor<T, D>& clamp_(tensor<T, D>& x, S lo, S hi) {
    DEVTENSOR_STATIC_CHECK_SCALAR("clamp_", T, S);
    DEVTENSOR_STATIC_CHECK_KERNELS("clamp_", D);
    detail::map_out("clamp_", detail::clamp_to<T>{static_cast<T>(lo), static_cast<T>(hi)}, x, x);
    return x;
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor
