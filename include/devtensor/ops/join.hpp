// cat and stack: tensors of one element type and one device joined along a
// dimension, each copied into its slice of the result through the elementwise engine;
// the gradient flows back to each input through its slice.
#pragma once

#include <devtensor/detail/convert.hpp>  // copy_element
#include <devtensor/ops/elementwise.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <string>
#include <vector>

namespace devtensor::detail {
DEVTENSOR_BEGIN_TU_NAMESPACE
/// cat's backward: each input's slice of the gradient.
template <class T>
struct cat_node final : node<T> {
    std::int64_t dim = 0;
    std::vector<std::int64_t> sizes;
    void backward(const grad_t<T>& g, std::span<grad_t<T>> grads) override {
        std::int64_t at = 0;
        for (std::size_t i = 0; i < sizes.size(); ++i) {
            grads[i] = g.narrow(dim, at, sizes[i]);
            at += sizes[i];
        }
    }
};
DEVTENSOR_END_TU_NAMESPACE
}  // namespace devtensor::detail

namespace devtensor {

DEVTENSOR_BEGIN_TU_NAMESPACE

/// The tensors joined along the existing dimension `dim` (torch.cat): the same shape
/// except along `dim`, one device. Their order is the result's.
template <class T, class D>
[[nodiscard]] tensor<T, D> cat(const std::vector<tensor<T, D>>& tensors, std::int64_t dim = 0,
                               call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_KERNELS("cat", D);
    if (tensors.empty()) throw shape_error("devtensor::cat: needs at least one tensor");
    const tensor<T, D>& first = tensors.front();
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const std::string name = "tensors[" + std::to_string(i) + "]";
        detail::check_defined("cat", {{name.c_str(), tensors[i].defined()}});
        detail::check_same_device("cat", detail::operand_of("tensors[0]", first), detail::operand_of(name.c_str(), tensors[i]));
    }
    if (first.dim() == 0) throw shape_error("devtensor::cat: zero-dimensional tensors cannot be joined (stack them)");
    const std::size_t d = detail::wrap_dim("cat", dim, first.shape().rank());
    std::vector<std::int64_t> dims(first.shape().begin(), first.shape().end());
    dims[d] = 0;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const shape& s = tensors[i].shape();
        bool fits = s.rank() == first.shape().rank();
        for (std::size_t e = 0; fits && e < s.rank(); ++e) fits = e == d || s[e] == first.shape()[e];
        if (!fits)
            throw shape_error("devtensor::cat: tensors[" + std::to_string(i) + "] has shape " + s.to_string() +
                              ", but tensors[0] has " + first.shape().to_string() + " (all must match except in dimension " +
                              std::to_string(d) + ")");
        dims[d] += s[d];
    }
    tensor<T, D> out(shape(dims), first.device(), {"cat", site});
    std::int64_t at = 0;
    for (const tensor<T, D>& t : tensors) {
        const std::int64_t size = t.shape()[d];
        if (size > 0) detail::map_checked("cat", detail::copy_element{}, out.narrow(static_cast<std::int64_t>(d), at, size), t);
        at += size;
    }
    if constexpr (std::is_floating_point_v<T>)
        if (std::any_of(tensors.begin(), tensors.end(), [](const auto& t) { return detail::recording(t); })) {
            auto n = detail::make_node<detail::cat_node<T>>();
            n->op = "cat";
            n->dim = static_cast<std::int64_t>(d);
            for (const tensor<T, D>& t : tensors) {
                n->sizes.push_back(t.shape()[d]);
                n->next.push_back(detail::edge_of(t));
            }
            detail::set_history(out, std::shared_ptr<detail::node<T>>(std::move(n)));
        }
    return out;
}

/// The tensors, all of one shape, joined along a new dimension `dim` (torch.stack).
template <class T, class D>
[[nodiscard]] tensor<T, D> stack(const std::vector<tensor<T, D>>& tensors, std::int64_t dim = 0,
                                 call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_KERNELS("stack", D);
    if (tensors.empty()) throw shape_error("devtensor::stack: needs at least one tensor");
    std::vector<tensor<T, D>> raised;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const std::string name = "tensors[" + std::to_string(i) + "]";
        detail::check_defined("stack", {{name.c_str(), tensors[i].defined()}});
        if (!(tensors[i].shape() == tensors[0].shape()))
            throw shape_error("devtensor::stack: " + name + " has shape " + tensors[i].shape().to_string() +
                              ", but tensors[0] has " + tensors[0].shape().to_string() + " (stack needs one shape)");
        const auto rank = static_cast<std::int64_t>(tensors[i].dim());
        raised.push_back(tensors[i].unsqueeze(dim < 0 ? dim + rank + 1 : dim));
    }
    return cat(raised, dim < 0 ? dim + static_cast<std::int64_t>(tensors[0].dim()) + 1 : dim, site);
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor
