// The reduction engine as ops see it: the dimensions checked (an empty list
// reduces them all, as in PyTorch), the input read as [outer, n, inner] where it
// lies that way (else its kept dimensions moved first and copied), and the one
// dispatch to the CPU loop or the CUDA kernels. An op is a reduction functor
// (identity, combine, finish) plus a few lines calling reduce_new (see ops/sum.hpp).
#pragma once

#include <devtensor/backend/cpu/reduce.hpp>
#include <devtensor/detail/op_checks.hpp>
#include <devtensor/detail/reduce.hpp>
#if DEVTENSOR_HAS_CUDA
#  include <devtensor/backend/cuda/kernels.cuh>
#endif

#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace devtensor::detail {

/// Which of a rank-`rank` tensor's dimensions `dims` names (all of them when empty).
inline std::array<bool, shape::max_rank> reduced_dims(const char* op, std::span<const std::int64_t> dims,
                                                      std::size_t rank) {
    std::array<bool, shape::max_rank> reduced{};
    for (std::size_t d = 0; d < rank; ++d) reduced[d] = dims.empty();
    for (const std::int64_t d : dims) {
        const std::size_t k = wrap_dim(op, d, rank);
        if (reduced[k])
            throw shape_error(std::string("devtensor::") + op + ": dimension " + std::to_string(d) +
                              " appears more than once in the list of dimensions");
        reduced[k] = rank > 0;  // a 0-dim tensor takes dimension 0 or -1, as in PyTorch, and stays itself
    }
    return reduced;
}

/// The same for a braced list: reduced_dims("sum", {0, 2}, 3).
inline std::array<bool, shape::max_rank> reduced_dims(const char* op, std::initializer_list<std::int64_t> dims,
                                                      std::size_t rank) {
    return reduced_dims(op, std::span<const std::int64_t>(dims.begin(), dims.size()), rank);
}

/// The result's shape: the reduced dimensions dropped, or kept as 1.
inline shape reduced_shape(const shape& s, const std::array<bool, shape::max_rank>& reduced, bool keepdim) {
    std::array<std::int64_t, shape::max_rank> dims{};  // not a vector: a reduction allocates only its result
    std::size_t n = 0;
    for (std::size_t d = 0; d < s.rank(); ++d)
        if (!reduced[d] || keepdim) dims[n++] = reduced[d] ? 1 : s[d];
    return shape(std::span<const std::int64_t>(dims.data(), n));
}

/// The plan that reads the input as it lies: possible when its dimensions (those
/// of size 1 aside) are kept ones, then reduced ones, then kept ones, each run
/// walkable as one dimension.
inline std::optional<reduce_plan> plan_in_place(const shape& s, const strides& st,
                                                const std::array<bool, shape::max_rank>& reduced) {
    // runs[0]: outer kept, runs[1]: reduced, runs[2]: inner kept; each as (size, stride of its last dim)
    std::array<std::int64_t, 3> size{1, 1, 1}, step{0, 0, 0};
    if (s.numel() == 0) {  // nothing to read: the kept sizes as outer, the reduced ones as n
        for (std::size_t d = 0; d < s.rank(); ++d) size[reduced[d] ? 1 : 0] *= s[d];
        return reduce_plan{size[0], size[1], 1, 0, 0, 0};
    }
    int run = 0;
    for (std::size_t d = 0; d < s.rank(); ++d) {
        if (s[d] == 1) continue;
        const int wanted = reduced[d] ? 1 : (run == 0 ? 0 : 2);
        if (wanted < run) return std::nullopt;  // kept, reduced, kept, reduced: not one plan
        const auto r = static_cast<std::size_t>(wanted);
        if (wanted == run && size[r] > 1 && step[r] != st[d] * s[d]) return std::nullopt;  // a run not walkable as one
        run = wanted;
        size[r] *= s[d];
        step[r] = st[d];
    }
    if (size[2] == 1 && size[0] > 1 && size[1] > 1 && step[1] != 1 && step[0] < step[1])
        // rows whose elements lie apart while the rows lie close (a transposed matrix
        // summed along its rows): read as columns, neighbouring outputs side by side
        return reduce_plan{1, size[1], size[0], 0, step[1], step[0]};
    return reduce_plan{size[0], size[1], size[2], step[0], step[1], step[2]};
}

DEVTENSOR_BEGIN_TU_NAMESPACE
template <class TO, class A, class R, class T, class D>
tensor<TO, D> reduce_new(const origin& made, const R& r, const tensor<T, D>& in, std::span<const std::int64_t> dims,
                         bool keepdim);
DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::detail

// The tensor after the declarations above: its autograd (included at its end) runs
// sum_to_size (ops/sum.hpp), which needs them, also when this header comes first.
#include <devtensor/tensor.hpp>

namespace devtensor::detail {

DEVTENSOR_BEGIN_TU_NAMESPACE

/// The reduction r of `in` over `dims` in a new tensor of element type TO, made by
/// `made`, accumulating in A: the one place a reduction reaches a backend.
template <class TO, class A, class R, class T, class D>
tensor<TO, D> reduce_new(const origin& made, const R& r, const tensor<T, D>& in, std::span<const std::int64_t> dims,
                         bool keepdim) {
    check_defined(made.op, {{"input", in.defined()}});
    const auto reduced = reduced_dims(made.op, dims, in.shape().rank());
    if constexpr (requires { R::needs_elements; }) {
        std::int64_t n = 1;
        for (std::size_t d = 0; d < in.shape().rank(); ++d) n *= reduced[d] ? in.shape()[d] : 1;
        if (n == 0)
            throw shape_error(std::string("devtensor::") + made.op + ": the reduced dimensions of " +
                              in.shape().to_string() + " hold no element (the result would have no value)");
    }
    tensor<TO, D> out(reduced_shape(in.shape(), reduced, keepdim), in.device(), made);
    tensor<T, D> source = in;
    std::optional<reduce_plan> plan = plan_in_place(in.shape(), in.strides(), reduced);
    if (!plan) {  // kept dimensions first, reduced ones last (each in order), in a contiguous copy
        std::vector<std::int64_t> order;
        std::array<bool, shape::max_rank> last{};
        for (int pass = 0; pass < 2; ++pass)
            for (std::size_t d = 0; d < in.shape().rank(); ++d)
                if (reduced[d] == (pass == 1)) {
                    last[order.size()] = reduced[d];
                    order.push_back(static_cast<std::int64_t>(d));
                }
        source = in.permute(std::span<const std::int64_t>(order)).contiguous();
        plan = plan_in_place(source.shape(), source.strides(), last);
    }
    on_device(
        made.op, out.device(), [&] { backend_cpu::reduce<A>(r, *plan, out.data(), source.data()); },
        [&]([[maybe_unused]] auto ordinal) {
#if DEVTENSOR_HAS_CUDA
            // the chunk results, as bytes (an accumulator such as argmax's is not an element type)
            const std::int64_t partials = plan->chunks() > 1 ? plan->outputs() * plan->chunks() : 0;
            tensor<std::uint8_t, D> scratch(shape{partials * static_cast<std::int64_t>(sizeof(A))}, out.device(), made);
            backend_cuda::reduce(made.op, ordinal, r, *plan, out.data(), source.data(),
                                 reinterpret_cast<A*>(scratch.data()));
#endif
        });
    return out;
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::detail
