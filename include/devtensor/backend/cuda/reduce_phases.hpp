// Bodies of the CUDA reduction kernels, in the order of detail/reduce.hpp.
// Rows (the reduced elements adjacent): a group of L lanes per chunk, lane l
// computing chain l (adjacent lanes read adjacent elements), the chains folded
// by shuffles in fold_pairwise's order. Columns (a kept dimension inside): a
// thread per chunk of one output, its L chains in registers, neighbouring
// threads reading neighbouring outputs. Chunk results go to the output when each
// output is one chunk, else to partials [outer, chunks, inner], which a third
// kernel combines pairwise. tests/test_reduce.cpp runs these bodies on the host.
#pragma once

#include <devtensor/detail/reduce.hpp>

#include <cstdint>

namespace devtensor::backend_cuda {

DEVTENSOR_BEGIN_TU_NAMESPACE

/// Chain `lane` of chunk `item` (= o * chunks + c) of a row reduction.
template <class A, class R, class TI>
DEVTENSOR_HOST_DEVICE inline A reduce_row_lane(const R& r, const detail::reduce_plan& p, const TI* in,
                                               std::int64_t item, int lane) {
    const std::int64_t chunks = p.chunks(), o = item / chunks, c = item % chunks;
    return detail::reduce_chain<detail::reduce_chains<A>>(
        r, r.template identity<A>(), p.chunk_length(c), lane,
        detail::strided_read<A, TI>{in + p.chunk_offset(o, c, 0), p.n_stride, c * detail::reduce_chunk});
}

/// Chunk `item` (= (o * chunks + c) * inner + j) of a column reduction, folded.
template <class A, class R, class TI>
DEVTENSOR_HOST_DEVICE inline A reduce_column_item(const R& r, const detail::reduce_plan& p, const TI* in,
                                                  std::int64_t item) {
    const std::int64_t chunks = p.chunks(), j = item % p.inner, c = item / p.inner % chunks,
                       o = item / (p.inner * chunks);
    return detail::reduce_chunk_order(r, r.template identity<A>(), p.chunk_length(c),
                                      detail::strided_read<A, TI>{in + p.chunk_offset(o, c, j), p.n_stride,
                                                                  c * detail::reduce_chunk});
}

/// Where chunk result `item` (ordered [outer, chunks, inner]) goes: finished into
/// out when each output is one chunk, else into partials.
template <class A, class R, class TO>
DEVTENSOR_HOST_DEVICE inline void reduce_put(const R& r, const detail::reduce_plan& p, std::int64_t item, A part,
                                             TO* out, A* partials) {
    if (p.chunks() == 1) out[item] = static_cast<TO>(r.finish(part, p.n));
    else partials[item] = part;
}

/// Output k (= o * inner + j) from its chunk results, combined pairwise and finished.
template <class A, class R, class TO>
DEVTENSOR_HOST_DEVICE inline void reduce_partials_output(const R& r, const detail::reduce_plan& p, A* partials,
                                                         TO* out, std::int64_t k) {
    const std::int64_t chunks = p.chunks(), o = k / p.inner, j = k % p.inner;
    A* first = partials + o * chunks * p.inner + j;
    out[k] = static_cast<TO>(r.finish(detail::combine_pairwise(r, first, chunks, p.inner), p.n));
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cuda
