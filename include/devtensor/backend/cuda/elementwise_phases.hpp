// Bodies of the elementwise CUDA kernels (fill, add, rand, randn, randint) as grid-stride phase
// functions. Each moves 16-byte packs where every pointer allows it, then the
// remaining elements one by one; the index type I is 32-bit unless the size
// needs 64. tests/test_cuda_emulator.cpp runs them over simulated grids.
#pragma once

#include <devtensor/backend/cuda/access.hpp>
#include <devtensor/detail/elementwise.hpp>
#include <devtensor/random.hpp>

#include <cstdint>
#include <utility>

namespace devtensor::backend_cuda {

DEVTENSOR_BEGIN_TU_NAMESPACE

/// Packs each thread has in flight in add: all loads of a round are issued
/// before its stores, so memory latency overlaps within one thread.
inline constexpr int elementwise_unroll = 4;

// ---- fill ------------------------------------------------------------------------------

template <int L, class T, class I>
DEVTENSOR_HOST_DEVICE inline void fill_packs(T* out, I packs, T value, I thread, I threads) {
    pack<T, L> v;
    for (int e = 0; e < L; ++e) v.v[e] = value;
    for (I i = thread; i < packs; i += threads) store_pack<L>(out + i * L, v);
}

template <class T, class I>
DEVTENSOR_HOST_DEVICE inline void fill_phase(T* out, I n, T value, I thread, I threads) {
    constexpr int W = pack16<T>;
    const I body = aligned16(out) ? n / W : 0;
    fill_packs<W>(out, body, value, thread, threads);
    fill_packs<1>(out + body * W, n - body * W, value, thread, threads);
}

// ---- the elementwise engine: out = f(in...) over a detail::loop_plan ----------------------

/// Lane e of each input's pack through f.
template <class TO, int L, class F, class... TI>
DEVTENSOR_HOST_DEVICE inline pack<TO, L> apply_packs(const F& f, const pack<TI, L>&... x) {
    pack<TO, L> r;
    for (int e = 0; e < L; ++e) r.v[e] = static_cast<TO>(f(x.v[e]...));
    return r;
}

/// Pack i of an input that walks in order, or its single element repeated.
template <int L, class T, class I>
DEVTENSOR_HOST_DEVICE inline pack<T, L> operand_pack(const T* p, bool repeats, I i) {
    if (!repeats) return load_pack<L>(p + i * L);
    pack<T, L> r;
    for (int e = 0; e < L; ++e) r.v[e] = p[0];
    return r;
}

/// Which inputs are a single repeated element: bit k for input k.
using repeat_mask = unsigned;

template <int L, class F, class TO, class I, class... TI>
DEVTENSOR_HOST_DEVICE inline void map_linear_packs(const F& f, TO* out, I packs, repeat_mask single, I thread,
                                                   I threads, const TI*... in) {
    [&]<unsigned... K>(std::integer_sequence<unsigned, K...>) {
        for (I i = thread; i < packs; i += threads)
            store_pack<L>(out + i * L, apply_packs<TO, L>(f, operand_pack<L>(in, ((single >> K) & 1u) != 0, i)...));
    }(std::make_integer_sequence<unsigned, sizeof...(TI)>{});
}

/// A plan of rank <= 1 whose output walks in order and whose inputs walk in order
/// or repeat one element: 16-byte packs where every pointer and size allows.
template <class F, class TO, class I, class... TI>
DEVTENSOR_HOST_DEVICE inline void map_linear_phase(const F& f, TO* out, I n, repeat_mask single, I thread,
                                                   I threads, const TI*... in) {
    constexpr int W = pack16<TO>;
    constexpr bool same_size = ((sizeof(TI) == sizeof(TO)) && ...);
    I body = 0;
    if constexpr (same_size)
        if (aligned16(out) && (aligned16(in) && ...)) body = n / W;
    if constexpr (same_size) map_linear_packs<W>(f, out, body, single, thread, threads, in...);
    const I done = body * W;
    [&]<unsigned... K>(std::integer_sequence<unsigned, K...>) {
        map_linear_packs<1>(f, out + done, n - done, single, thread, threads,
                            (((single >> K) & 1u) != 0 ? in : in + done)...);
    }(std::make_integer_sequence<unsigned, sizeof...(TI)>{});
}

/// The column of the next pack of a thread that strides `step` (mod period) at a time.
template <class I>
DEVTENSOR_HOST_DEVICE inline I next_column(I column, I step, I period) {
    column += step;
    return column >= period ? column - period : column;
}

/// A binary op whose output and `full` walk in order while `repeating` repeats
/// every `period` elements (a bias): f(full, repeating), or f(repeating, full) when
/// the repeating operand is the first. No division per element: each thread's
/// column advances by threads % period per step.
template <int L, class F, class TO, class TF, class TR, class I>
DEVTENSOR_HOST_DEVICE inline void map_repeat_packs(const F& f, bool repeating_first, TO* out, const TF* full,
                                                   const TR* repeating, I packs, I period, I thread, I threads) {
    const I step = threads % period;
    I column = thread % period;
    for (I i = thread; i < packs; i += threads) {
        const pack<TF, L> x = load_pack<L>(full + i * L);
        const pack<TR, L> y = load_pack<L>(repeating + column * L);
        pack<TO, L> r;
        for (int e = 0; e < L; ++e)
            r.v[e] = static_cast<TO>(repeating_first ? f(y.v[e], x.v[e]) : f(x.v[e], y.v[e]));
        store_pack<L>(out + i * L, r);
        column = next_column(column, step, period);
    }
}

/// n is a multiple of period; 16-byte packs when the period is a whole number of them.
template <class F, class TO, class TF, class TR, class I>
DEVTENSOR_HOST_DEVICE inline void map_repeat_phase(const F& f, bool repeating_first, TO* out, const TF* full,
                                                   const TR* repeating, I n, I period, I thread, I threads) {
    constexpr int W = pack16<TO>;
    if constexpr (sizeof(TF) == sizeof(TO) && sizeof(TR) == sizeof(TO))
        if (period % W == 0 && aligned16(full) && aligned16(repeating) && aligned16(out))
            return map_repeat_packs<W>(f, repeating_first, out, full, repeating, n / W, period / W, thread, threads);
    map_repeat_packs<1>(f, repeating_first, out, full, repeating, n, period, thread, threads);
}

/// Any other plan: each element's offsets from its index.
template <class F, class TO, class... TI, int N>
DEVTENSOR_HOST_DEVICE inline void map_strided_phase(const F& f, const detail::loop_plan<N>& p, TO* out,
                                                    std::int64_t thread, std::int64_t threads, const TI*... in) {
    [&]<std::size_t... K>(std::index_sequence<K...>) {
        for (std::int64_t i = thread; i < p.numel; i += threads) {
            std::int64_t offset[static_cast<std::size_t>(N)];
            detail::offsets_of(p, i, offset);
            out[offset[0]] = static_cast<TO>(f(in[offset[K + 1]]...));
        }
    }(std::index_sequence_for<TI...>{});
}

/// out[i] = f(i) over n contiguous elements (arange, linspace).
template <class F, class TO, class I>
DEVTENSOR_HOST_DEVICE inline void generate_phase(const F& f, TO* out, I n, I thread, I threads) {
    for (I i = thread; i < n; i += threads) out[i] = f(static_cast<std::int64_t>(i));
}

// ---- rand, randn, randint -------------------------------------------------------------------

/// A fill of n elements from `dist` (detail::uniform_distribution, normal_distribution,
/// randint_distribution), one Philox block per thread at a time. Where a block's
/// values are exactly 16 bytes (4 floats, 2 doubles or 64-bit integers) and `out`
/// is aligned, each whole block is stored as one pack; the rest element by element
/// (detail::philox_fill_block, as the CPU backend: bit-identical streams).
template <class Dist, class T, class I>
DEVTENSOR_HOST_DEVICE inline void philox_phase(const Dist& dist, T* out, I n, std::uint64_t seed,
                                               std::uint64_t first_block, I thread, I threads) {
    constexpr int E = Dist::template per_block<T>;
    const I blocks = (n + E - 1) / E;
    I whole = 0;
    if constexpr (E * sizeof(T) == 16) {
        whole = aligned16(out) ? n / E : 0;
        for (I q = thread; q < whole; q += threads) {
            pack<T, E> values;
            dist(seed, first_block + static_cast<std::uint64_t>(q), values.v);
            store_pack<E>(out + q * E, values);
        }
    }
    for (I q = whole + thread; q < blocks; q += threads)
        detail::philox_fill_block(dist, out, static_cast<std::int64_t>(n), seed, first_block,
                                  static_cast<std::int64_t>(q));
}

/// rand: philox_phase of detail::uniform_distribution.
template <class T, class I>
DEVTENSOR_HOST_DEVICE inline void uniform_phase(T* out, I n, std::uint64_t seed, std::uint64_t first_block, I thread,
                                                I threads) {
    philox_phase(detail::uniform_distribution{}, out, n, seed, first_block, thread, threads);
}

/// randn: philox_phase of detail::normal_distribution (Box–Muller on detail::math).
template <class T, class I>
DEVTENSOR_HOST_DEVICE inline void normal_phase(T* out, I n, std::uint64_t seed, std::uint64_t first_block, I thread,
                                               I threads) {
    philox_phase(detail::normal_distribution{}, out, n, seed, first_block, thread, threads);
}

/// randint: philox_phase of detail::randint_distribution.
template <class T, class I>
DEVTENSOR_HOST_DEVICE inline void randint_phase(T* out, I n, std::int64_t low, std::uint64_t range,
                                                std::uint64_t seed, std::uint64_t first_block, I thread,
                                                I threads) {
    philox_phase(detail::randint_distribution{low, range}, out, n, seed, first_block, thread, threads);
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cuda
