// The order of every reduction (sum, mean, ...), the one that the CPU paths
// (portable, vector, any thread count) and the CUDA kernels all follow, so that
// their results are bit-identical (DESIGN §15). It depends on the shape alone:
//
//  - The n reduced elements of one output, in row-major order of the reduced
//    dimensions, are cut into chunks of reduce_chunk (the last one shorter).
//  - A chunk is L = reduce_chains<A> interleaved chains (one 64-byte line of the
//    accumulator type A, at most 16): chain l combines the chunk's elements l, l + L, l + 2L,
//    ... in order, starting from the identity; the chains are folded pairwise,
//    c[i] = c[i] (+) c[i + w] for w = L/2, ..., 1.
//  - The chunk results are combined pairwise in index order (combine_pairwise:
//    neighbours level by level, an odd last one carried up), then finished once
//    (mean divides by n).
//
// Threads and GPU blocks take whole chunks. The functions below are that order
// written out: the reference the tests compare with, and the portable CPU path.
#pragma once

#include <devtensor/config.hpp>  // DEVTENSOR_HOST_DEVICE

#include <cstddef>
#include <cstdint>
#include <memory>

namespace devtensor::detail {

DEVTENSOR_BEGIN_TU_NAMESPACE

/// Elements of one chunk of a reduction.
inline constexpr std::int64_t reduce_chunk = 4096;

/// The interleaved chains of a chunk: one 64-byte line of the accumulator type, at
/// most 16 (a GPU group of lanes stays within half a warp).
template <class A>
inline constexpr int reduce_chains = sizeof(A) >= 4 ? 64 / static_cast<int>(sizeof(A)) : 16;

/// The input of a reduction as [outer, n, inner] with strides (in elements); the
/// output is dense [outer, inner], and output (o, j) reduces the n elements
/// in[o * outer_stride + p * n_stride + j * inner_stride] for p = 0, 1, ..., n - 1.
struct reduce_plan {
    std::int64_t outer = 1, n = 1, inner = 1;
    std::int64_t outer_stride = 0, n_stride = 0, inner_stride = 0;

    /// Chunks of each output (at least one: an empty reduction is one empty chunk).
    DEVTENSOR_HOST_DEVICE constexpr std::int64_t chunks() const {
        return n <= reduce_chunk ? 1 : (n + reduce_chunk - 1) / reduce_chunk;
    }
    DEVTENSOR_HOST_DEVICE constexpr std::int64_t outputs() const { return outer * inner; }
    /// Elements in chunk c.
    DEVTENSOR_HOST_DEVICE constexpr std::int64_t chunk_length(std::int64_t c) const {
        const std::int64_t rest = n - c * reduce_chunk;
        return rest < reduce_chunk ? rest : reduce_chunk;
    }
    /// Offset of the first element of chunk c of output (o, j).
    DEVTENSOR_HOST_DEVICE constexpr std::int64_t chunk_offset(std::int64_t o, std::int64_t c, std::int64_t j) const {
        return o * outer_stride + c * reduce_chunk * n_stride + j * inner_stride;
    }
};

/// The accumulator of an element `value` at position `index` of its reduction: the
/// value converted, or for an accumulator that keeps positions (argmax), both.
template <class A, class TI>
DEVTENSOR_HOST_DEVICE inline A reduce_input(TI value, std::int64_t index) {
    if constexpr (requires { A::of(value, index); }) return A::of(value, index);
    else return static_cast<A>(value);
}

/// Element q of a chunk read at x with step `step`, as the accumulator type A; the
/// chunk starts at position `first` of its reduction.
template <class A, class TI>
struct strided_read {
    const TI* x;
    std::int64_t step;
    std::int64_t first;
    DEVTENSOR_HOST_DEVICE A operator()(std::int64_t q) const { return reduce_input<A>(x[q * step], first + q); }
};

/// Chain l of a chunk of `length` elements, element q read as at(q): the chunk's
/// elements l, l + L, ... combined in order from the identity.
template <int L, class R, class A, class At>
DEVTENSOR_HOST_DEVICE inline A reduce_chain(const R& r, A identity, std::int64_t length, int l, At at) {
    A c = identity;
    for (std::int64_t q = l; q < length; q += L) c = r(c, at(q));
    return c;
}

/// Pairwise fold of L chains: c[i] (+) c[i + w] for w = L/2, ..., 1 (the lower chain first).
template <std::size_t L, class R, class A>
DEVTENSOR_HOST_DEVICE inline A fold_pairwise(const R& r, A (&c)[L]) {
    static_assert(L > 0 && (L & (L - 1)) == 0, "fold_pairwise: a power of two of chains");
    for (std::size_t w = L / 2; w > 0; w /= 2)
        for (std::size_t i = 0; i < w; ++i) c[i] = r(c[i], c[i + w]);
    return c[0];
}

/// One chunk's result in the order above.
template <class R, class A, class At>
DEVTENSOR_HOST_DEVICE inline A reduce_chunk_order(const R& r, A identity, std::int64_t length, At at) {
    constexpr int L = reduce_chains<A>;
    A c[static_cast<std::size_t>(L)];
    for (int l = 0; l < L; ++l) c[l] = reduce_chain<L>(r, identity, length, l, at);
    return fold_pairwise(r, c);
}

/// p[0], p[step], ..., p[(count - 1) * step] combined pairwise in index order, in
/// place: neighbours level by level, an odd last one carried to the next level.
template <class R, class A>
DEVTENSOR_HOST_DEVICE inline A combine_pairwise(const R& r, A* p, std::int64_t count, std::int64_t step) {
    while (count > 1) {
        const std::int64_t half = count / 2;
        for (std::int64_t i = 0; i < half; ++i) p[i * step] = r(p[2 * i * step], p[(2 * i + 1) * step]);
        if (count % 2 != 0) p[half * step] = p[(count - 1) * step];
        count -= half;
    }
    return p[0];
}

/// The reference: output (o, j) of the plan over `in`, in the order above.
template <class A, class R, class TI>
A reduce_order_output(const R& r, const reduce_plan& p, const TI* in, std::int64_t o, std::int64_t j) {
    const std::int64_t chunks = p.chunks();
    const std::unique_ptr<A[]> partials(new A[static_cast<std::size_t>(chunks)]);  // A may be bool
    for (std::int64_t c = 0; c < chunks; ++c) {
        partials[c] =
            reduce_chunk_order(r, r.template identity<A>(), p.chunk_length(c),
                               strided_read<A, TI>{in + p.chunk_offset(o, c, j), p.n_stride, c * reduce_chunk});
    }
    return r.finish(combine_pairwise(r, partials.get(), chunks, 1), p.n);
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::detail
