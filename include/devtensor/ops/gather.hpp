// gather and index_select: elements picked by an int64 index tensor, on the
// elementwise engine. Each output element's offset in the input is computed as a
// tensor (the kept coordinates' part, then the index's), and a functor holding the
// input's address reads there; indices are checked first (amin/amax), so a kernel
// never reads out of range.
#pragma once

#include <devtensor/ops/add.hpp>
#include <devtensor/ops/extremes.hpp>
#include <devtensor/ops/factories.hpp>
#include <devtensor/ops/mul.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace devtensor {

namespace detail {
/// base[offset + index * step]: an element of the tensor at base, found by its index.
template <class T>
struct gather_at {
    const T* base;
    std::int64_t step;
    DEVTENSOR_HOST_DEVICE T operator()(std::int64_t index, std::int64_t offset) const {
        return base[offset + index * step];
    }
};

DEVTENSOR_BEGIN_TU_NAMESPACE

/// Every index within [0, size), else an index_error naming op, the offender and the size.
template <class D>
void check_indices(const char* op, const tensor<std::int64_t, D>& index, std::int64_t size, std::size_t dim) {
    if (index.numel() == 0) return;
    const std::int64_t lo = amin(index).item(), hi = amax(index).item();
    if (lo < 0 || hi >= size)
        throw index_error(std::string("devtensor::") + op + ": index " + std::to_string(lo < 0 ? lo : hi) +
                          " is out of bounds for dimension " + std::to_string(dim) + " with size " + std::to_string(size));
}

/// out[p] = in[p with coordinate `dim` replaced by index[p]], for index of out's shape.
template <class T, class D>
tensor<T, D> gather_checked(const origin& made, const tensor<T, D>& in, std::size_t dim,
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
    const std::int64_t step = in.shape().rank() == 0 ? 0 : in.strides()[dim];
    map_out(made.op, gather_at<T>{in.data(), step}, out, index, offset);
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
    detail::check_indices("gather", index, input.shape().rank() == 0 ? 1 : input.shape()[d], d);
    return detail::gather_checked({"gather", site}, input, d, tensor_cast<D>(index));
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
    detail::check_indices("index_select", index, input.shape().rank() == 0 ? 1 : input.shape()[d], d);
    if (input.dim() == 0) return detail::gather_checked({"index_select", site}, input, 0, tensor_cast<D>(index.reshape({})));
    std::vector<std::int64_t> along(input.shape().rank(), 1), out(input.shape().begin(), input.shape().end());
    along[d] = index.numel();
    out[d] = index.numel();
    const tensor<std::int64_t, D> spread = tensor_cast<D>(index.reshape(shape(along))).expand(shape(out));
    return detail::gather_checked({"index_select", site}, input, d, spread);
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor
