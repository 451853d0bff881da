// The elementwise engine as ops see it: the checks every elementwise op makes
// (defined operands, one device, broadcasting shapes, no partial overlap of the
// output with an input) and the one dispatch to the CPU loop or the CUDA kernel.
// An op is a DEVTENSOR_HOST_DEVICE functor plus a few lines calling map_new / map_out
// (see ops/mul.hpp).
#pragma once

#include <devtensor/autograd/graph.hpp>
#include <devtensor/backend/cpu/elementwise.hpp>
#include <devtensor/detail/elementwise.hpp>
#include <devtensor/detail/op_checks.hpp>
#include <devtensor/tensor.hpp>
#if DEVTENSOR_HAS_CUDA
#  include <devtensor/backend/cuda/kernels.cuh>
#endif

#include <algorithm>
#include <array>
#include <memory>
#include <utility>
#include <string>

// The static checks of an op on two tensor operands: one device, one element type, kernels.
#define DEVTENSOR_STATIC_CHECK_BINARY(op, TA, DA, TB, DB)                                          \
    DEVTENSOR_STATIC_CHECK_SAME_DEVICE(op, DA, DB);                                                \
    DEVTENSOR_STATIC_CHECK_SAME_ELEMENT(op, TA, TB);                                               \
    DEVTENSOR_STATIC_CHECK_KERNELS(op, DA, DB)

namespace devtensor::detail {

/// The result's device type: the first static operand's, else the run-time `device`.
template <class... D>
struct common_device_of {
    using type = device;
};
template <class D0, class... D>
struct common_device_of<D0, D...> {
    using type = std::conditional_t<StaticDevice<D0>, D0, typename common_device_of<D...>::type>;
};
template <class... D>
using common_device_of_t = typename common_device_of<D...>::type;

/// How messages name the inputs of an op with `n` of them.
inline const char* input_name(std::size_t k, std::size_t n) {
    constexpr const char* names[] = {"a", "b", "c", "d", "e", "f"};  // a backward's: gradient, result, inputs
    return n == 1 ? "input" : k < 6 ? names[k] : "operand";
}

DEVTENSOR_BEGIN_TU_NAMESPACE

/// out = f(in...) elementwise on out's device, every check made: the one place an
/// elementwise op reaches a backend.
template <class F, class TO, class DO, class... TI, class... DI>
void map_checked(const char* op, const F& f, const tensor<TO, DO>& out, const tensor<TI, DI>&... in) {
    constexpr int N = 1 + sizeof...(TI);
    constexpr auto operands = static_cast<std::size_t>(N);
    const auto plan = make_loop_plan<N>(out.shape(), std::array<const shape*, operands>{&out.shape(), &in.shape()...},
                                        std::array<const strides*, operands>{&out.strides(), &in.strides()...});
    on_device(
        op, out.device(), [&] { backend_cpu::map(f, plan, out.data(), static_cast<const TI*>(in.data())...); },
        [&]([[maybe_unused]] auto ordinal) {
#if DEVTENSOR_HAS_CUDA
            backend_cuda::map(op, ordinal, f, plan, out.data(), static_cast<const TI*>(in.data())...);
#endif
        });
}

/// The inputs as messages name them, checked to be defined and on one device.
template <class... TI, class... DI>
std::array<operand, sizeof...(TI)> checked_inputs(const char* op, const tensor<TI, DI>&... in) {
    std::size_t k = 0;
    const std::array<operand, sizeof...(TI)> operands{operand_of(input_name(k++, sizeof...(TI)), in)...};
    k = 0;
    (check_defined(op, {{input_name(k++, sizeof...(TI)), in.defined()}}), ...);
    for (const operand& o : operands) check_same_device(op, operands[0], o);
    return operands;
}

/// The shape the inputs broadcast to.
template <std::size_t K, class... TI, class... DI>
shape broadcast_all(const char* op, const std::array<operand, K>& operands, const tensor<TI, DI>&... in) {
    if constexpr (sizeof...(TI) > 0) {  // the usual case, inputs of one shape: no broadcast
        const std::array<const shape*, sizeof...(TI)> shapes{&in.shape()...};
        if (std::all_of(shapes.begin(), shapes.end(), [&](const shape* x) { return *x == *shapes[0]; }))
            return *shapes[0];
    }
    shape s;
    bool first = true;
    const auto join = [&](const shape& next) {
        s = first ? next : broadcast_shapes(s, next, op);
        first = false;
    };
    try {
        (join(in.shape()), ...);
    } catch (const shape_error& e) {
        std::string where;
        for (const operand& o : operands) where += (where.empty() ? ": " : ", ") + std::string(o.name) + " " + to_string(o.made);
        throw shape_error(e.what() + where);
    }
    return s;
}

template <class TO, class F, class... TI, class... DI>
tensor<TO, common_device_of_t<DI...>> map_new(const origin& made, const F& f, const tensor<TI, DI>&... in);

/// The functor of input I's gradient: g · ∂f/∂x_I, from g, the result y and the inputs;
/// on the CPU's vectors where F says its partials work on them (`partials_vectorize`).
template <class F, int I>
struct partial_of {
    static constexpr bool vectorizes = requires { requires F::partials_vectorize; };
    F f;
    template <class T, class... X>
    DEVTENSOR_HOST_DEVICE T operator()(T g, T y, X... x) const {
        return f.template partial<I>(g, y, x...);
    }
};

/// What an elementwise op whose functor F is `differentiable` keeps for backward, and
/// its gradients: input i's is partial_of<F, i> of g elementwise, summed back to that
/// input's shape. A node of its own (map_node), or of a map-then-reduce (the losses').
template <class T, class F, std::size_t N>
struct map_backward : node<T> {
    F f;
    saved_tensor<T> out;
    std::array<saved_tensor<T>, N> in;

    void partials(const grad_t<T>& g, std::span<grad_t<T>> grads) const {
        std::array<grad_t<T>, N> x;
        for (std::size_t i = 0; i < N; ++i) x[i] = in[i].get(this->op);
        const grad_t<T>& y = out.get(this->op);
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            const auto one = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
                if (!this->next[K]) return;
                grads[K] = sum_to_size(map_new<T>({this->op, call_site{}}, partial_of<F, static_cast<int>(K)>{f}, g, y,
                                                  x[I]...),
                                       x[K].shape(), call_site{});
            };
            (one(std::integral_constant<std::size_t, I>{}), ...);
        }(std::make_index_sequence<N>{});
    }
    void release() override {
        out.release();
        for (auto& s : in) s.release();
    }
};

/// The backward of an elementwise op.
template <class T, class F, std::size_t N>
struct map_node final : map_backward<T, F, N> {
    void backward(const grad_t<T>& g, std::span<grad_t<T>> grads) override { this->partials(g, grads); }
};

/// f(in...) broadcast, in a new tensor of element type TO made by `made`; recorded
/// for autograd when f is differentiable and an input wants a gradient.
template <class TO, class F, class... TI, class... DI>
tensor<TO, common_device_of_t<DI...>> map_new(const origin& made, const F& f, const tensor<TI, DI>&... in) {
    const auto operands = checked_inputs(made.op, in...);
    using result_device = common_device_of_t<DI...>;
    tensor<TO, result_device> out(broadcast_all(made.op, operands, in...),
                                  device_cast<result_device>(operands[0].dev), made);
    map_checked(made.op, f, out, in...);
    if constexpr (requires { F::differentiable; } && std::is_floating_point_v<TO> && (std::is_same_v<TI, TO> && ...)) {
        if (recording(in...)) {
            auto n = make_node<map_node<TO, F, sizeof...(TI)>>();
            n->f = f;
            n->out = saved_tensor<TO>(out);
            n->in = {saved_tensor<TO>(in)...};
            record(out, std::move(n), made.op, in...);
        }
    } else if constexpr (std::is_floating_point_v<TO>) {
        refuse_gradient(made.op, in...);
    }
    return out;
}

/// out = f(in...), where the inputs broadcast to out's shape exactly. out may be the
/// very same view as an input; a partial overlap, or an output whose elements share
/// memory (an expanded view), is refused.
template <class F, class TO, class DO, class... TI, class... DI>
void map_out(const char* op, const F& f, const tensor<TO, DO>& out, const tensor<TI, DI>&... in) {
    const auto operands = checked_inputs(op, in...);
    check_defined(op, {{"out", out.defined()}});
    const operand oo = operand_of("out", out);
    if constexpr (sizeof...(TI) > 0) check_same_device(op, operands[0], oo);
    const shape s = broadcast_all(op, operands, in...);
    if (!(s == out.shape())) {
        std::string where;
        for (const operand& o : operands) where += ", " + std::string(o.name) + " " + to_string(o.made);
        throw shape_error(std::string("devtensor::") + op + ": the output has shape " + out.shape().to_string() +
                          ", but the inputs broadcast to " + s.to_string() + made_where({oo}) + where);
    }
    if (writes_overlap(out.shape(), out.strides()))
        throw error(std::string("devtensor::") + op + ": the output " + out.shape().to_string() + " with strides " +
                    out.strides().to_string() +
                    " has elements that share one memory location (an expanded view); write to a "
                    "contiguous tensor (clone() it first)");
    std::size_t k = 0;
    (check_no_partial_overlap(op, out, input_name(k++, sizeof...(TI)), in), ...);
    if (recording(in...))
        throw autograd_error(std::string("devtensor::") + op +
                             ": an in-place or out= op on a tensor that requires grad while autograd records "
                             "(they are not recorded); use the op that returns a new tensor, or no_grad");
    note_write(op, out);
    map_checked(op, f, out, in...);
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::detail
