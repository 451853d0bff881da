// The entry points every elementwise op shares, written once: an op header
// defines its DEVTENSOR_HOST_DEVICE functor and names its entry points with the
// macros below (see ops/arithmetic.hpp). A scalar operand joins as a 0-dim
// tensor on the other operand's device (it broadcasts, and the engines splat it);
// it converts to the tensor's type, and a floating-point scalar with an integral
// tensor does not compile. TYPE_TYPE_CHECK(op, T) is a static check on the element type
// (DEVTENSOR_STATIC_CHECK_FLOATING, or DEVTENSOR_NO_TYPE_CHECK).
#pragma once

#include <devtensor/ops/elementwise.hpp>
#include <devtensor/ops/fill.hpp>  // full: a scalar operand as a 0-dim tensor

#include <type_traits>

namespace devtensor::detail {

/// Result element types: the operands' own, or bool (comparisons).
template <class T>
using same_element = T;
template <class T>
using bool_element = bool;

/// A scalar operand as a 0-dim tensor of T on `like`'s device.
template <class T, class D, class S>
tensor<T, D> scalar_operand(const char* op, const tensor<T, D>& like, S value) {
    check_defined(op, {{"input", like.defined()}});
    return full<T>({}, static_cast<T>(value), like.device(), call_site{});
}

}  // namespace devtensor::detail

#define DEVTENSOR_NO_TYPE_CHECK(op, T) static_assert(true)

/// Ops PyTorch refuses for bool tensors (sub, neg, pow).
#define DEVTENSOR_STATIC_CHECK_NOT_BOOL(op, T)                                                     \
    static_assert(!std::is_same_v<T, bool>,                                                        \
                  "devtensor::" op ": not for bool tensors (PyTorch refuses them too); use "       \
                  "logical operations, or convert first")

/// A scalar S may join a tensor of T: arithmetic, and not floating with an integral T.
#define DEVTENSOR_STATIC_CHECK_SCALAR(op, T, S)                                                    \
    static_assert(!(std::is_floating_point_v<S> && std::is_integral_v<T>),                         \
                  "devtensor::" op ": a floating-point scalar with an integral tensor; convert "   \
                  "the tensor first (t.to<double>())")

/// name(a, b), name(a, scalar) and the out-variant name(a, b, out) of a broadcasting
/// binary op computed by functor F, giving element type R<T>.
#define DEVTENSOR_BINARY_OP(name, F, R, TYPE_CHECK)                                                     \
    template <class TA, class DA, class TB, class DB, class TO, class DO>                          \
    void name(const tensor<TA, DA>& a, const tensor<TB, DB>& b, const tensor<TO, DO>& out) {       \
        DEVTENSOR_STATIC_CHECK_BINARY(#name, TA, DA, TB, DB);                                      \
        DEVTENSOR_STATIC_CHECK_SAME_DEVICE(#name, DA, DO);                                         \
        static_assert(std::is_same_v<TO, R<TA>>,                                                   \
                      "devtensor::" #name ": the output's element type is not the result's");      \
        TYPE_CHECK(#name, TA);                                                                          \
        detail::map_out(#name, F{}, out, a, b);                                                    \
    }                                                                                              \
    template <class TA, class DA, class TB, class DB>                                              \
    [[nodiscard]] tensor<R<TA>, detail::common_device_t<DA, DB>> name(                             \
        const tensor<TA, DA>& a, const tensor<TB, DB>& b, call_site site = call_site::current()) { \
        DEVTENSOR_STATIC_CHECK_BINARY(#name, TA, DA, TB, DB);                                      \
        TYPE_CHECK(#name, TA);                                                                          \
        return detail::map_new<R<TA>>({#name, site}, F{}, a, b);                                   \
    }                                                                                              \
    template <class TA, class DA, class S>                                                         \
        requires std::is_arithmetic_v<S>                                                           \
    [[nodiscard]] tensor<R<TA>, DA> name(const tensor<TA, DA>& a, S b,                             \
                                         call_site site = call_site::current()) {                  \
        DEVTENSOR_STATIC_CHECK_SCALAR(#name, TA, S);                                               \
        DEVTENSOR_STATIC_CHECK_KERNELS(#name, DA);                                                 \
        TYPE_CHECK(#name, TA);                                                                          \
        return detail::map_new<R<TA>>({#name, site}, F{}, a, detail::scalar_operand(#name, a, b)); \
    }

/// name_(a, b) and name_(a, scalar): a = F(a, b) in place, b broadcast to a's shape.
#define DEVTENSOR_BINARY_OP_INPLACE(name, F, TYPE_CHECK)                                                \
    template <class TA, class DA, class TB, class DB>                                              \
    tensor<TA, DA>& name##_(tensor<TA, DA>& a, const tensor<TB, DB>& b) {                          \
        DEVTENSOR_STATIC_CHECK_BINARY(#name "_", TA, DA, TB, DB);                                  \
        TYPE_CHECK(#name "_", TA);                                                                      \
        detail::map_out(#name "_", F{}, a, a, b);                                                  \
        return a;                                                                                  \
    }                                                                                              \
    template <class TA, class DA, class S>                                                         \
        requires std::is_arithmetic_v<S>                                                           \
    tensor<TA, DA>& name##_(tensor<TA, DA>& a, S b) {                                              \
        DEVTENSOR_STATIC_CHECK_SCALAR(#name "_", TA, S);                                           \
        DEVTENSOR_STATIC_CHECK_KERNELS(#name "_", DA);                                             \
        TYPE_CHECK(#name "_", TA);                                                                      \
        detail::map_out(#name "_", F{}, a, a, detail::scalar_operand(#name "_", a, b));            \
        return a;                                                                                  \
    }

/// operator sym for tensor-tensor, tensor-scalar and scalar-tensor (an operator
/// takes no call site: the result records the op alone).
#define DEVTENSOR_BINARY_OPERATOR(sym, F, R, TYPE_CHECK)                                                \
    template <class TA, class DA, class TB, class DB>                                              \
    [[nodiscard]] tensor<R<TA>, detail::common_device_t<DA, DB>> operator sym(                     \
        const tensor<TA, DA>& a, const tensor<TB, DB>& b) {                                        \
        DEVTENSOR_STATIC_CHECK_BINARY("operator" #sym, TA, DA, TB, DB);                            \
        TYPE_CHECK("operator" #sym, TA);                                                                \
        return detail::map_new<R<TA>>({"operator" #sym, call_site{}}, F{}, a, b);                  \
    }                                                                                              \
    template <class TA, class DA, class S>                                                         \
        requires std::is_arithmetic_v<S>                                                           \
    [[nodiscard]] tensor<R<TA>, DA> operator sym(const tensor<TA, DA>& a, S b) {                   \
        DEVTENSOR_STATIC_CHECK_SCALAR("operator" #sym, TA, S);                                     \
        DEVTENSOR_STATIC_CHECK_KERNELS("operator" #sym, DA);                                       \
        TYPE_CHECK("operator" #sym, TA);                                                                \
        return detail::map_new<R<TA>>({"operator" #sym, call_site{}}, F{}, a,                      \
                                      detail::scalar_operand("operator" #sym, a, b));              \
    }                                                                                              \
    template <class S, class TB, class DB>                                                         \
        requires std::is_arithmetic_v<S>                                                           \
    [[nodiscard]] tensor<R<TB>, DB> operator sym(S a, const tensor<TB, DB>& b) {                   \
        DEVTENSOR_STATIC_CHECK_SCALAR("operator" #sym, TB, S);                                     \
        DEVTENSOR_STATIC_CHECK_KERNELS("operator" #sym, DB);                                       \
        TYPE_CHECK("operator" #sym, TB);                                                                \
        return detail::map_new<R<TB>>({"operator" #sym, call_site{}}, F{},                         \
                                      detail::scalar_operand("operator" #sym, b, a), b);           \
    }

/// operator sym= (tensor or scalar right operand): a = F(a, b) in place.
#define DEVTENSOR_COMPOUND_OPERATOR(sym, F, TYPE_CHECK)                                                 \
    template <class TA, class DA, class TB, class DB>                                              \
    tensor<TA, DA>& operator sym##=(tensor<TA, DA>& a, const tensor<TB, DB>& b) {                  \
        DEVTENSOR_STATIC_CHECK_BINARY("operator" #sym "=", TA, DA, TB, DB);                        \
        TYPE_CHECK("operator" #sym "=", TA);                                                            \
        detail::map_out("operator" #sym "=", F{}, a, a, b);                                        \
        return a;                                                                                  \
    }                                                                                              \
    template <class TA, class DA, class S>                                                         \
        requires std::is_arithmetic_v<S>                                                           \
    tensor<TA, DA>& operator sym##=(tensor<TA, DA>& a, S b) {                                      \
        DEVTENSOR_STATIC_CHECK_SCALAR("operator" #sym "=", TA, S);                                 \
        DEVTENSOR_STATIC_CHECK_KERNELS("operator" #sym "=", DA);                                   \
        TYPE_CHECK("operator" #sym "=", TA);                                                            \
        detail::map_out("operator" #sym "=", F{}, a, a, detail::scalar_operand("operator" #sym "=", a, b)); \
        return a;                                                                                  \
    }

/// name(x), the out-variant name(x, out) and, for ops that keep the type, name_(x).
#define DEVTENSOR_UNARY_OP(name, F, R, TYPE_CHECK)                                                      \
    template <class T, class D>                                                                    \
    [[nodiscard]] tensor<R<T>, D> name(const tensor<T, D>& x, call_site site = call_site::current()) { \
        DEVTENSOR_STATIC_CHECK_KERNELS(#name, D);                                                  \
        TYPE_CHECK(#name, T);                                                                           \
        return detail::map_new<R<T>>({#name, site}, F{}, x);                                       \
    }                                                                                              \
    template <class T, class D, class TO, class DO>                                                \
    void name(const tensor<T, D>& x, const tensor<TO, DO>& out) {                                  \
        DEVTENSOR_STATIC_CHECK_SAME_DEVICE(#name, D, DO);                                          \
        DEVTENSOR_STATIC_CHECK_KERNELS(#name, D, DO);                                              \
        static_assert(std::is_same_v<TO, R<T>>, "devtensor::" #name ": the output's element type is not the result's"); \
        TYPE_CHECK(#name, T);                                                                           \
        detail::map_out(#name, F{}, out, x);                                                       \
    }                                                                                              \
    template <class T, class D>                                                                    \
    tensor<T, D>& name##_(tensor<T, D>& x) {                                                       \
        DEVTENSOR_STATIC_CHECK_KERNELS(#name "_", D);                                              \
        TYPE_CHECK(#name "_", T);                                                                       \
        detail::map_out(#name "_", F{}, x, x);                                                     \
        return x;                                                                                  \
    }
