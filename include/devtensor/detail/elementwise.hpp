// How an elementwise loop walks its operands, shared by the CPU loops and the
// CUDA kernels (nothing is materialised): the output's index space, each
// operand's element strides in it (0 along a broadcast dimension), size-1
// dimensions dropped and neighbours merged wherever every operand walks them
// as one. A contiguous op is then rank 1, a bias over a matrix rank 2.
#pragma once

#include <devtensor/config.hpp>  // DEVTENSOR_HOST_DEVICE
#include <devtensor/shape.hpp>

#include <array>
#include <cstdint>
#include <type_traits>

namespace devtensor::detail {

DEVTENSOR_BEGIN_TU_NAMESPACE

/// The loop of one elementwise op over N operands: operand 0 is the output.
template <int N>
struct loop_plan {
    int rank = 0;
    std::int64_t numel = 0;
    std::int64_t sizes[shape::max_rank] = {};
    std::int64_t strides[static_cast<std::size_t>(N)][shape::max_rank] = {};

    /// Operand k walks the output's elements in order (stride 1), or is a single element (stride 0).
    DEVTENSOR_HOST_DEVICE bool dense(int k) const { return rank == 0 || (rank == 1 && strides[k][0] == 1); }
    DEVTENSOR_HOST_DEVICE bool all_dense() const {
        for (int k = 0; k < N; ++k)
            if (!dense(k)) return false;
        return true;
    }
};

/// The plan for an output of shape `out` and operands (shape, strides) that
/// broadcast to it (trailing dimensions aligned); operand 0 is the output itself.
template <int N>
loop_plan<N> make_loop_plan(const shape& out, const std::array<const shape*, static_cast<std::size_t>(N)>& shapes,
                            const std::array<const strides*, static_cast<std::size_t>(N)>& operand_strides) {
    loop_plan<N> p;
    p.numel = out.numel();
    const std::size_t rank = out.rank();
    for (std::size_t d = 0; d < rank; ++d) {
        if (out[d] == 1) continue;  // adds no offset
        p.sizes[p.rank] = out[d];
        for (int k = 0; k < N; ++k) {
            const shape& s = *shapes[static_cast<std::size_t>(k)];
            const std::size_t lead = rank - s.rank();  // missing leading dimensions broadcast
            p.strides[k][p.rank] =
                d < lead || s[d - lead] == 1 ? 0 : (*operand_strides[static_cast<std::size_t>(k)])[d - lead];
        }
        ++p.rank;
    }
    // merge d into d + 1 where every operand walks the pair as one dimension
    int merged = 0;
    for (int d = 1; d < p.rank; ++d) {
        bool joins = true;
        for (int k = 0; k < N; ++k) joins = joins && p.strides[k][merged] == p.strides[k][d] * p.sizes[d];
        if (joins) {
            p.sizes[merged] *= p.sizes[d];
            for (int k = 0; k < N; ++k) p.strides[k][merged] = p.strides[k][d];
        } else {
            ++merged;
            p.sizes[merged] = p.sizes[d];
            for (int k = 0; k < N; ++k) p.strides[k][merged] = p.strides[k][d];
        }
    }
    if (p.rank > 0) p.rank = merged + 1;
    return p;
}

/// Each operand's offset of element i of the plan's dimensions [0, dims) (row-major;
/// i below their product): the outermost index needs no division.
template <int N>
DEVTENSOR_HOST_DEVICE inline void offsets_within(const loop_plan<N>& p, int dims, std::int64_t i,
                                                 std::int64_t (&offset)[static_cast<std::size_t>(N)]) {
    for (int k = 0; k < N; ++k) offset[k] = 0;
    for (int d = dims - 1; d > 0; --d) {
        const std::int64_t index = i % p.sizes[d];
        i /= p.sizes[d];
        for (int k = 0; k < N; ++k) offset[k] += index * p.strides[k][d];
    }
    if (dims > 0)
        for (int k = 0; k < N; ++k) offset[k] += i * p.strides[k][0];
}

/// Each operand's offset of output element i (row-major over the plan's sizes).
template <int N>
DEVTENSOR_HOST_DEVICE inline void offsets_of(const loop_plan<N>& p, std::int64_t i, std::int64_t (&offset)[static_cast<std::size_t>(N)]) {
    offsets_within(p, p.rank, i, offset);
}

/// A binary op whose output and one input walk everything in order while the
/// other input repeats whole every `period` elements (a bias [C] over [N, C],
/// [H, W] over [N, H, W], a single element: period 1).
struct repeat_pattern {
    std::int64_t period = 0;  // 0: not this pattern
    bool b_repeats = true;    // else a repeats and b is whole
};

inline repeat_pattern find_repeat(const loop_plan<3>& p) {
    const auto contiguous_from = [&p](int k, int first) {
        std::int64_t stride = 1;
        for (int d = p.rank - 1; d >= first; --d) {
            if (p.strides[k][d] != stride) return false;
            stride *= p.sizes[d];
        }
        return true;
    };
    const auto repeat_of = [&](int whole, int part) {
        if (!contiguous_from(0, 0) || !contiguous_from(whole, 0)) return std::int64_t{0};
        int first = 0;  // part: stride 0 over the leading dimensions, contiguous after
        while (first < p.rank && p.strides[part][first] == 0) ++first;
        if (first == 0 || !contiguous_from(part, first)) return std::int64_t{0};
        std::int64_t period = 1;
        for (int d = first; d < p.rank; ++d) period *= p.sizes[d];
        return period;
    };
    if (const std::int64_t period = repeat_of(1, 2)) return {period, true};
    if (const std::int64_t period = repeat_of(2, 1)) return {period, false};
    return {};
}

/// An output that several of its elements share (a stride 0 along a dimension of
/// size > 1, as expand() makes) cannot be written elementwise.
inline bool writes_overlap(const shape& s, const strides& st) {
    for (std::size_t d = 0; d < s.rank(); ++d)
        if (s[d] > 1 && st[d] == 0) return true;
    return false;
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::detail
