// The order in which a deterministic collective combines the ranks' elements
// (DESIGN §13 and §15): rank 0's, then rank 1's, ... folded left, the same for
// every placement of the ranks. Written once, for the host and for device code.
#pragma once

#include <devtensor/config.hpp>
#include <devtensor/dist/communicator.hpp>

#include <cstdint>
#include <type_traits>

namespace devtensor::dist::detail {

template <class T>
DEVTENSOR_HOST_DEVICE bool is_nan(T x) {
    if constexpr (std::is_floating_point_v<T>) return !(x == x);
    else return false;
}

/// first[0] op first[stride] op ... op first[(ranks - 1) * stride], left to right. max
/// and min keep a NaN (as torch.max does); bool's sum is "or".
template <class T>
DEVTENSOR_HOST_DEVICE T combine_in_rank_order(const T* first, std::int64_t stride, std::int64_t ranks, reduce_op op) {
    T acc = first[0];
    for (std::int64_t r = 1; r < ranks; ++r) {
        const T x = first[r * stride];
        if constexpr (std::is_same_v<T, bool>) acc = op == reduce_op::min ? (acc && x) : (acc || x);
        else if (op == reduce_op::max) acc = !is_nan(acc) && (x > acc || is_nan(x)) ? x : acc;
        else if (op == reduce_op::min) acc = !is_nan(acc) && (x < acc || is_nan(x)) ? x : acc;
        else acc = static_cast<T>(acc + x);
    }
    return acc;
}

}  // namespace devtensor::dist::detail
