// Bodies of the elementwise CUDA kernels (fill, add, rand) as grid-stride phase
// functions. Each moves 16-byte packs where every pointer allows it, then the
// remaining elements one by one; the index type I is 32-bit unless the size
// needs 64. tests/test_cuda_emulator.cpp runs them over simulated grids.
#pragma once

#include <devtensor/backend/cuda/access.hpp>
#include <devtensor/detail/elementwise.hpp>
#include <devtensor/random.hpp>

#include <cstdint>

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

// ---- add, same shape -----------------------------------------------------------------------

/// U packs at i, i + threads, ...: loads first, then sums and stores.
template <int L, int U, class T, class I>
DEVTENSOR_HOST_DEVICE inline void add_round(const T* a, const T* b, T* out, I i, I threads) {
    const detail::plus op;
    pack<T, L> x[static_cast<std::size_t>(U)], y[static_cast<std::size_t>(U)];
    for (int u = 0; u < U; ++u) {
        x[u] = load_pack<L>(a + (i + u * threads) * L);
        y[u] = load_pack<L>(b + (i + u * threads) * L);
    }
    for (int u = 0; u < U; ++u) {
        for (int e = 0; e < L; ++e) x[u].v[e] = op(x[u].v[e], y[u].v[e]);
        store_pack<L>(out + (i + u * threads) * L, x[u]);
    }
}

template <int L, class T, class I>
DEVTENSOR_HOST_DEVICE inline void add_packs(const T* a, const T* b, T* out, I packs, I thread,
                                            I threads) {
    constexpr int U = elementwise_unroll;
    I i = thread;
    for (; i + (U - 1) * threads < packs; i += U * threads) add_round<L, U>(a, b, out, i, threads);
    for (; i < packs; i += threads) add_round<L, 1>(a, b, out, i, threads);
}

template <class T, class I>
DEVTENSOR_HOST_DEVICE inline void add_phase(const T* a, const T* b, T* out, I n, I thread, I threads) {
    constexpr int W = pack16<T>;
    const I body = aligned16(a) && aligned16(b) && aligned16(out) ? n / W : 0;
    add_packs<W>(a, b, out, body, thread, threads);
    const I done = body * W;
    add_packs<1>(a + done, b + done, out + done, n - done, thread, threads);
}

// ---- add, one operand repeating (a bias [C] over [N, C]) ------------------------------------

/// The column of the next pack of a thread that strides `step` (mod period) at a time.
template <class I>
DEVTENSOR_HOST_DEVICE inline I next_column(I column, I step, I period) {
    column += step;
    return column >= period ? column - period : column;
}

/// out[i] = full[i] + repeating[i % period], in packs of L; no division per element:
/// each thread's column advances by threads % period per step.
template <int L, class T, class I>
DEVTENSOR_HOST_DEVICE inline void add_repeat_packs(const T* full, const T* repeating, T* out, I packs,
                                                   I period, I thread, I threads) {
    constexpr int U = elementwise_unroll;
    const detail::plus op;
    const I step = threads % period;
    I column = thread % period, i = thread;
    for (; i + (U - 1) * threads < packs; i += U * threads) {
        pack<T, L> x[U], y[U];
        for (int u = 0; u < U; ++u) {
            x[u] = load_pack<L>(full + (i + u * threads) * L);
            y[u] = load_pack<L>(repeating + column * L);
            column = next_column(column, step, period);
        }
        for (int u = 0; u < U; ++u) {
            for (int e = 0; e < L; ++e) x[u].v[e] = op(x[u].v[e], y[u].v[e]);
            store_pack<L>(out + (i + u * threads) * L, x[u]);
        }
    }
    for (; i < packs; i += threads) {
        pack<T, L> x = load_pack<L>(full + i * L);
        const pack<T, L> y = load_pack<L>(repeating + column * L);
        for (int e = 0; e < L; ++e) x.v[e] = op(x.v[e], y.v[e]);
        store_pack<L>(out + i * L, x);
        column = next_column(column, step, period);
    }
}

/// n is a multiple of period; 16-byte packs when the period is a whole number of them.
template <class T, class I>
DEVTENSOR_HOST_DEVICE inline void add_repeat_phase(const T* full, const T* repeating, T* out, I n,
                                                   I period, I thread, I threads) {
    constexpr int W = pack16<T>;
    if (period % W == 0 && aligned16(full) && aligned16(repeating) && aligned16(out))
        add_repeat_packs<W>(full, repeating, out, n / W, period / W, thread, threads);
    else
        add_repeat_packs<1>(full, repeating, out, n, period, thread, threads);
}

// ---- add, any other broadcast -----------------------------------------------------------------

template <class T>
DEVTENSOR_HOST_DEVICE inline void add_broadcast_phase(const T* a, const T* b, T* out, std::int64_t n,
                                                      const detail::broadcast_strides& s,
                                                      std::int64_t thread, std::int64_t threads) {
    const detail::plus op;
    for (std::int64_t i = thread; i < n; i += threads) {
        std::int64_t oa = 0, ob = 0;
        detail::broadcast_offsets(s, i, oa, ob);
        out[i] = op(a[oa], b[ob]);
    }
}

// ---- rand ------------------------------------------------------------------------------------

/// One Philox block per thread at a time; a block's 4 floats (or 2 doubles) are
/// exactly 16 bytes, stored as one pack when `out` is aligned. The values are
/// detail::uniform_values, which the CPU backend uses too (bit-identical streams).
template <class T, class I>
DEVTENSOR_HOST_DEVICE inline void uniform_phase(T* out, I n, std::uint64_t seed,
                                                std::uint64_t first_block, I thread, I threads) {
    constexpr int E = detail::elements_per_philox_block<T>;
    static_assert(E * sizeof(T) == 16, "a Philox block fills one 16-byte pack");
    const I blocks = (n + E - 1) / E;
    const I whole = aligned16(out) ? n / E : 0;
    for (I q = thread; q < whole; q += threads) {
        pack<T, E> values;
        detail::uniform_values(seed, first_block + static_cast<std::uint64_t>(q), values.v);
        store_pack<E>(out + q * E, values);
    }
    for (I q = whole + thread; q < blocks; q += threads)
        detail::uniform_block(out, static_cast<std::int64_t>(n), seed, first_block,
                              static_cast<std::int64_t>(q));
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cuda
