// Element-level logic shared by the CPU backend and the CUDA kernels: the add
// functor and broadcasting by strides (nothing is materialised).
#pragma once

#include <devtensor/config.hpp>  // DEVTENSOR_HOST_DEVICE
#include <devtensor/shape.hpp>

#include <cstdint>

namespace devtensor::detail {

DEVTENSOR_BEGIN_TU_NAMESPACE

/// a + b in T (bool: logical or, as in PyTorch).
struct plus {
    template <class T>
    DEVTENSOR_HOST_DEVICE T operator()(T a, T b) const {
        return static_cast<T>(a + b);
    }
};

/// Element strides of two operands in the index space of their broadcast
/// output: 0 along a dimension an operand stretches.
struct broadcast_strides {
    int rank = 0;
    std::int64_t dims[shape::max_rank] = {};
    std::int64_t a[shape::max_rank] = {};
    std::int64_t b[shape::max_rank] = {};
};

/// Strides of `a` and `b` (row-major, contiguous) broadcast to `out`; size-1
/// output dimensions are dropped since they add no offset.
inline broadcast_strides make_broadcast_strides(const shape& out, const shape& a, const shape& b) {
    broadcast_strides s;
    const auto strides = [](const shape& operand, std::size_t out_rank, std::int64_t* result) {
        std::int64_t stride = 1;
        for (std::size_t i = 0; i < out_rank; ++i) {  // i counts from the last dimension
            const std::int64_t dim = i < operand.rank() ? operand[operand.rank() - 1 - i] : 1;
            result[out_rank - 1 - i] = dim == 1 ? 0 : stride;
            stride *= dim;
        }
    };
    std::int64_t sa[shape::max_rank], sb[shape::max_rank];
    strides(a, out.rank(), sa);
    strides(b, out.rank(), sb);
    for (std::size_t d = 0; d < out.rank(); ++d) {
        if (out[d] == 1) continue;
        s.dims[s.rank] = out[d];
        s.a[s.rank] = sa[d];
        s.b[s.rank] = sb[d];
        ++s.rank;
    }
    return s;
}

/// Offsets into a and b of output element i.
DEVTENSOR_HOST_DEVICE inline void broadcast_offsets(const broadcast_strides& s, std::int64_t i,
                                                    std::int64_t& offset_a, std::int64_t& offset_b) {
    offset_a = 0;
    offset_b = 0;
    for (int d = s.rank - 1; d >= 0; --d) {
        const std::int64_t index = i % s.dims[d];
        i /= s.dims[d];
        offset_a += index * s.a[d];
        offset_b += index * s.b[d];
    }
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::detail
