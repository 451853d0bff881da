// Element-level logic shared by the CPU backend and the CUDA kernels: the add
// functor and broadcasting by strides (nothing is materialised).
#pragma once

#include <devtensor/config.hpp>  // DEVTENSOR_HOST_DEVICE
#include <devtensor/shape.hpp>

#include <cstdint>
#include <type_traits>

namespace devtensor::detail {

DEVTENSOR_BEGIN_TU_NAMESPACE

/// a + b in T (bool: logical or, as in PyTorch). Integers wrap as PyTorch's do:
/// the sum is taken in the unsigned type (signed overflow is undefined in C++)
/// and converted back, which C++20 defines as modular.
struct plus {
    template <class T>
    DEVTENSOR_HOST_DEVICE T operator()(T a, T b) const {
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
            using U = std::make_unsigned_t<decltype(a + b)>;  // int for 1- and 2-byte types
            return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
        } else {
            return static_cast<T>(a + b);
        }
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

/// A broadcast where one operand is the whole output and the other repeats
/// whole every `period` elements (a bias [C] over [N, C], [H, W] over [N, H, W],
/// a single element: period 1).
struct repeat_pattern {
    std::int64_t period = 0;  // 0: not this pattern
    bool b_repeats = true;    // else a repeats and b is whole
};

inline repeat_pattern find_repeat(const broadcast_strides& s) {
    const auto contiguous_from = [&s](const std::int64_t* strides, int first) {
        std::int64_t stride = 1;
        for (int d = s.rank - 1; d >= first; --d) {
            if (strides[d] != stride) return false;
            stride *= s.dims[d];
        }
        return true;
    };
    const auto repeat_of = [&](const std::int64_t* whole, const std::int64_t* part) {
        if (!contiguous_from(whole, 0)) return std::int64_t{0};
        int first = 0;  // part: stride 0 over the leading dimensions, contiguous after
        while (first < s.rank && part[first] == 0) ++first;
        if (first == 0 || !contiguous_from(part, first)) return std::int64_t{0};
        std::int64_t period = 1;
        for (int d = first; d < s.rank; ++d) period *= s.dims[d];
        return period;
    };
    if (const std::int64_t p = repeat_of(s.a, s.b)) return {p, true};
    if (const std::int64_t p = repeat_of(s.b, s.a)) return {p, false};
    return {};
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
