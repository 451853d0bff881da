// gather and index_select: elements picked by an int64 index tensor, on the
// elementwise engine. Each output element's offset in the input is computed as a
// tensor (the kept coordinates' part, then the index's), and a functor holding the
// input's address reads there. The functor checks each index itself: one out of
// range is never read but written to the device's fault record (detail/index_fault.hpp),
// thrown at once on the CPU and at the next synchronisation on a GPU.
#pragma once

#include <devtensor/backend/cuda/runtime.hpp>  // device_index_fault
#include <devtensor/detail/index_fault.hpp>
#include <devtensor/ops/add.hpp>
#include <devtensor/ops/factories.hpp>
#include <devtensor/ops/mul.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace devtensor {

namespace detail {
/// base[offset + index * step]: an element of the tensor at base, found by its index;
/// an index outside [0, size) goes to the fault record instead, and gives 0.
template <class T>
struct gather_at {
    const T* base;
    std::int64_t step, size, dim;
    const char* op;
    index_fault* fault;
    DEVTENSOR_HOST_DEVICE T operator()(std::int64_t index, std::int64_t offset) const {
        if (index < 0 || index >= size) {
            raise_index_fault(fault, op, index, size, dim);
            return T{};
        }
        return base[offset + index * step];
    }
};

DEVTENSOR_BEGIN_TU_NAMESPACE

/// out[p] = in[p with coordinate `dim` replaced by index[p]], for index of out's shape.
/// An index outside [0, in's size along dim) is an index_error naming made.op: thrown
/// here on the CPU, at the next synchronisation on a GPU (the kernel records it).
template <class T, class D>
tensor<T, D> gather_along(const origin& made, const tensor<T, D>& in, std::size_t dim,
                          const tensor<std::int64_t, D>& index) {
    const shape& s = index.shape();
    // the offset of each output element in `in` without its `dim` coordinate
    tensor<std::int64_t, D> offset = zeros<std::int64_t>(s, index.device(), made.site);
    for (std::size_t d = 0; d < s.rank(); ++d) {
        if (d == dim || s[d] == 1) continue;
        std::vector<std::int64_t> along(s.rank(), 1);
        along[d] = s[d];
        const auto coordinate = arange<std::int64_t>(0, static_cast<double>(s[d]), 1, index.device()).view(shape(along));
        map_out(made.op, plus{}, offset, offset, mul(coordinate, in.strides()[d]));
    }
    tensor<T, D> out(s, index.device(), made);
    const bool rank0 = in.shape().rank() == 0;
    const std::int64_t step = rank0 ? 0 : in.strides()[dim], size = rank0 ? 1 : in.shape()[dim];
    const device dev(index.device());
    index_fault* fault = &host_index_fault();
#if DEVTENSOR_CUDA_RUNTIME
    if (dev.is_cuda()) fault = cudart::device_index_fault(dev.index());
#endif
    map_out(made.op, gather_at<T>{in.data(), step, size, static_cast<std::int64_t>(dim), made.op, fault}, out, index,
            offset);
    if (dev.is_cpu()) throw_index_fault(*fault);
    return out;
}

DEVTENSOR_END_TU_NAMESPACE
}  // namespace detail

DEVTENSOR_BEGIN_TU_NAMESPACE

/// out[i][j][k] = input[i][index[i][j][k]][k] for dim 1, and so on (torch.gather):
/// index has input's rank, is no larger than input outside `dim`, and gives out's shape.
template <class T, class D, class DI>
[[nodiscard]] tensor<T, D> gather(const tensor<T, D>& input, std::int64_t dim, const tensor<std::int64_t, DI>& index,
                                  call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_SAME_DEVICE("gather", D, DI);
    DEVTENSOR_STATIC_CHECK_KERNELS("gather", D, DI);
    detail::checked_inputs("gather", input, index);
    detail::refuse_gradient("gather", input);
    const std::size_t d = detail::wrap_dim("gather", dim, input.shape().rank());
    bool fits = index.shape().rank() == input.shape().rank();
    for (std::size_t e = 0; fits && e < index.shape().rank(); ++e) fits = e == d || index.shape()[e] <= input.shape()[e];
    if (!fits)
        throw shape_error("devtensor::gather: index " + index.shape().to_string() + " does not fit input " +
                          input.shape().to_string() + " (same rank, no larger outside dimension " + std::to_string(d) +
                          ")");
    return detail::gather_along({"gather", site}, input, d, tensor_cast<D>(index));
}

/// The entries `index` (1-D) of dimension `dim` of input, in that order (torch.index_select).
template <class T, class D, class DI>
[[nodiscard]] tensor<T, D> index_select(const tensor<T, D>& input, std::int64_t dim,
                                        const tensor<std::int64_t, DI>& index, call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_SAME_DEVICE("index_select", D, DI);
    DEVTENSOR_STATIC_CHECK_KERNELS("index_select", D, DI);
    detail::checked_inputs("index_select", input, index);
    detail::refuse_gradient("index_select", input);
    const std::size_t d = detail::wrap_dim("index_select", dim, input.shape().rank());
    if (index.dim() > 1)
        throw shape_error("devtensor::index_select: index must be 1-D (or 0-dim), not " + index.shape().to_string());
    if (input.dim() == 0) return detail::gather_along({"index_select", site}, input, 0, tensor_cast<D>(index.reshape({})));
    std::vector<std::int64_t> along(input.shape().rank(), 1), out(input.shape().begin(), input.shape().end());
    along[d] = index.numel();
    out[d] = index.numel();
    const tensor<std::int64_t, D> spread = tensor_cast<D>(index.reshape(shape(along))).expand(shape(out));
    return detail::gather_along({"index_select", site}, input, d, spread);
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor
