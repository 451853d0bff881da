// The CPU reduction engine: every reduction (sum, mean, ...) over a
// detail::reduce_plan, in the order of detail/reduce.hpp. Threads take whole
// chunks; a chunk of a contiguous row runs its L chains as 16-byte vectors when
// the functor works on vectors (`vectorizes`), and a chunk of columns (the
// reduced dimension outside a contiguous kept one) runs its chains for 64 bytes
// of neighbouring outputs at once. Each path computes every chain in the same
// order, so the bits do not depend on the path or the thread count.
#pragma once

#include <devtensor/backend/cpu/elementwise.hpp>  // vectorizing, has_vector_loop, simd
#include <devtensor/detail/reduce.hpp>
#include <devtensor/threads.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>

namespace devtensor::backend_cpu {

DEVTENSOR_BEGIN_TU_NAMESPACE

/// A chunk of `length` elements of a row read at x with step `step`, starting at
/// position `first` of the row.
template <class A, class R, class TI>
A reduce_row_chunk(const R& r, const TI* x, std::int64_t step, std::int64_t length, std::int64_t first) {
#if DEVTENSOR_HAS_X86_KERNELS
    if constexpr (vectorizing<R> && has_vector_loop<A> && std::is_same_v<TI, A>) {
        if (step == 1) {  // chain l is lane l % lanes of vector l / lanes
            constexpr int L = detail::reduce_chains<A>;
            using V = simd::sse2<A>;
            constexpr int B = L / V::lanes;
            typename V::type c[static_cast<std::size_t>(B)];
            for (auto& v : c) v = V::set1(r.template identity<A>());
            std::int64_t q0 = 0;
            for (; q0 + L <= length; q0 += L)
                for (int b = 0; b < B; ++b) c[b] = r(c[b], V::load(x + q0 + b * V::lanes));
            // the tail: element q0 + i joins chain i, the other chains unchanged (a short
            // row is all tail: no branch on its values, no scalar round trip)
            for (int b = 0; b < B && q0 + b * V::lanes < length; ++b) {
                const std::int64_t at = q0 + b * V::lanes;
                const int count = static_cast<int>(std::min<std::int64_t>(V::lanes, length - at));
                c[b] = V::first_lanes(count, r(c[b], V::load_first(x + at, count)), c[b]);
            }
            // fold_pairwise on the vectors: chain i with chain i + L/2 is vector b with
            // vector b + B/2, ..., then lanes within the last vector
            for (int w = B / 2; w > 0; w /= 2)
                for (int b = 0; b < w; ++b) c[b] = r(c[b], c[b + w]);
            typename V::type v = r(c[0], V::upper_half(c[0]));
            if constexpr (V::lanes == 4) v = r(v, V::lane_one(v));
            return V::first(v);
        }
    }
#endif
    return detail::reduce_chunk_order(r, r.template identity<A>(), length, detail::strided_read<A, TI>{x, step, first});
}

/// Neighbouring outputs handled together by a chunk of columns: 1 KiB of each row
/// read in one sweep, their L chains (16 KiB for float) staying in the L1 cache.
template <class A>
inline constexpr std::int64_t reduce_column_block = 1024 / static_cast<std::int64_t>(sizeof(A));

/// Chunk c of outputs (o, j0), ..., (o, j0 + width - 1) into part[0 .. width): each
/// output's L chains, computed and folded for the block side by side (loops the compiler vectorises).
template <class A, class R, class TI>
void reduce_column_chunk(const R& r, const detail::reduce_plan& p, const TI* in, std::int64_t o, std::int64_t c,
                         std::int64_t j0, std::int64_t width, A* part) {
    constexpr int L = detail::reduce_chains<A>;
    constexpr std::int64_t W = reduce_column_block<A>;
    A acc[static_cast<std::size_t>(L)][static_cast<std::size_t>(W)];
    for (auto& chain : acc) std::fill_n(chain, width, r.template identity<A>());  // the block's outputs only
    const TI* x = in + p.chunk_offset(o, c, j0);
    const std::int64_t length = p.chunk_length(c);
    for (std::int64_t q0 = 0; q0 < length; q0 += L)
        for (int l = 0; l < L && q0 + l < length; ++l) {
            A* chain = acc[l];
            const TI* row = x + (q0 + l) * p.n_stride;
            const std::int64_t index = c * detail::reduce_chunk + q0 + l;
            if (p.inner_stride == 1)
                for (std::int64_t w = 0; w < width; ++w) chain[w] = r(chain[w], detail::reduce_input<A>(row[w], index));
            else
                for (std::int64_t w = 0; w < width; ++w)
                    chain[w] = r(chain[w], detail::reduce_input<A>(row[w * p.inner_stride], index));
        }
    // fold_pairwise for every output of the block at once (a loop over w the compiler vectorises)
    for (int half = L / 2; half > 0; half /= 2)
        for (int l = 0; l < half; ++l)
            for (std::int64_t w = 0; w < width; ++w) acc[l][w] = r(acc[l][w], acc[l + half][w]);
    std::copy_n(acc[0], width, part);
}

/// out[o * inner + j] = the reduction of output (o, j) by r, finished: the one CPU
/// loop of every reduction. Chunk results go to out directly when each output is
/// one chunk, else to a buffer [outer, chunks, inner] combined pairwise afterwards.
template <class A, class R, class TO, class TI>
void reduce(const R& r, const detail::reduce_plan& p, TO* out, const TI* in) {
    const std::int64_t outputs = p.outputs(), chunks = p.chunks();
    if (outputs == 0) return;
    // (not std::vector: A may be bool)
    const std::unique_ptr<A[]> buffer(chunks > 1 ? new A[static_cast<std::size_t>(outputs * chunks)] : nullptr);
    // the result of chunk c of outputs (o, j0 .. j0 + width): finished, or kept for combining
    const auto put = [&](std::int64_t o, std::int64_t c, std::int64_t j0, std::int64_t width, const A* part) {
        for (std::int64_t w = 0; w < width; ++w) {
            if (chunks == 1) out[o * p.inner + j0 + w] = static_cast<TO>(r.finish(part[w], p.n));
            else buffer[static_cast<std::size_t>((o * chunks + c) * p.inner + j0 + w)] = part[w];
        }
    };
    const std::int64_t work = std::max<std::int64_t>(1, std::min(p.n, detail::reduce_chunk));  // elements an item reads
    if (p.inner == 1) {
        detail::parallel_for(p.outer * chunks, std::max<std::int64_t>(1, elementwise_grain / work),
                             [&](std::int64_t begin, std::int64_t end) {
                                 for (std::int64_t item = begin; item < end; ++item) {
                                     // (one chunk an output, the usual case: no division)
                                     const std::int64_t o = chunks == 1 ? item : item / chunks;
                                     const std::int64_t c = chunks == 1 ? 0 : item % chunks;
                                     const A part = reduce_row_chunk<A>(r, in + p.chunk_offset(o, c, 0), p.n_stride,
                                                                        p.chunk_length(c), c * detail::reduce_chunk);
                                     put(o, c, 0, 1, &part);
                                 }
                             });
    } else {
        constexpr std::int64_t W = reduce_column_block<A>;
        const std::int64_t blocks = (p.inner + W - 1) / W;
        detail::parallel_for(p.outer * chunks * blocks, std::max<std::int64_t>(1, elementwise_grain / (work * W)),
                             [&](std::int64_t begin, std::int64_t end) {
                                 A part[static_cast<std::size_t>(W)];
                                 for (std::int64_t item = begin; item < end; ++item) {
                                     const std::int64_t o = item / (chunks * blocks), c = item / blocks % chunks;
                                     const std::int64_t j0 = item % blocks * W, width = std::min(W, p.inner - j0);
                                     reduce_column_chunk(r, p, in, o, c, j0, width, part);
                                     put(o, c, j0, width, part);
                                 }
                             });
    }
    if (chunks == 1) return;
    detail::parallel_for(outputs, std::max<std::int64_t>(1, elementwise_grain / chunks),
                         [&](std::int64_t begin, std::int64_t end) {
                             for (std::int64_t k = begin; k < end; ++k) {
                                 const std::int64_t o = k / p.inner, j = k % p.inner;
                                 A* first = buffer.get() + o * chunks * p.inner + j;
                                 out[k] = static_cast<TO>(r.finish(detail::combine_pairwise(r, first, chunks, p.inner), p.n));
                             }
                         });
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cpu
