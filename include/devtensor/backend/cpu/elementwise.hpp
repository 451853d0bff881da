// CPU loops for fill and add: explicit 16-byte vector loops for float and
// double (plain -O2 does not vectorise every loop), non-temporal stores for
// outputs too large to stay in the cache (they skip the read-for-ownership,
// ~1.5x the bandwidth), broadcasting by strides row by row, threads over
// large outputs. Other element types take plain loops.
#pragma once

#include <devtensor/backend/cpu/simd.hpp>
#include <devtensor/detail/elementwise.hpp>
#include <devtensor/threads.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace devtensor::backend_cpu {

DEVTENSOR_BEGIN_TU_NAMESPACE

/// Elements below which an elementwise loop stays on one thread.
inline constexpr std::int64_t elementwise_grain = 1 << 16;

/// Outputs from this size on are written with non-temporal stores: past a
/// core's share of the last-level cache, keeping them cached only evicts the inputs.
inline constexpr std::int64_t streaming_bytes = std::int64_t{8} << 20;

template <class T>
bool streams(std::int64_t n) {
    return n * static_cast<std::int64_t>(sizeof(T)) >= streaming_bytes;
}

template <class T>
inline constexpr bool has_vector_loop =
    DEVTENSOR_HAS_X86_KERNELS && (std::is_same_v<T, float> || std::is_same_v<T, double>);

/// out[i] = scalar(i) for i < n, through vector(i) (lanes elements at i) where it can:
/// a scalar head up to 16-byte alignment, four vectors a step, a scalar tail.
/// After streaming, the thread calls simd::stream_fence() before its work is read.
template <class T, class Scalar, class Vector>
void vector_loop(T* out, std::int64_t n, bool stream, Scalar scalar, Vector vector) {
#if DEVTENSOR_HAS_X86_KERNELS
    using V = simd::sse2<T>;
    constexpr int step = 4 * V::lanes;
    std::int64_t i = 0;
    for (; i < n && reinterpret_cast<std::uintptr_t>(out + i) % 16 != 0; ++i) out[i] = scalar(i);
    if (stream) {
        for (; i + step <= n; i += step)
            for (int v = 0; v < step; v += V::lanes) V::stream(out + i + v, vector(i + v));
    } else {
        for (; i + step <= n; i += step)
            for (int v = 0; v < step; v += V::lanes) V::store(out + i + v, vector(i + v));
    }
    for (; i < n; ++i) out[i] = scalar(i);
#else
    (void)stream, (void)vector;
    for (std::int64_t i = 0; i < n; ++i) out[i] = scalar(i);
#endif
}

template <class T>
void fill(T* out, std::int64_t n, T value) {
    const bool stream = streams<T>(n);
    detail::parallel_for(n, elementwise_grain, [=](std::int64_t begin, std::int64_t end) {
        if constexpr (has_vector_loop<T>) {
            const auto v = simd::sse2<T>::set1(value);
            vector_loop(out + begin, end - begin, stream, [=](std::int64_t) { return value; },
                        [=](std::int64_t) { return v; });
            if (stream) simd::stream_fence();
        } else {
            std::fill(out + begin, out + end, value);
        }
    });
}

/// One output row of an add: each operand advances by stride 1, or stays (stride 0);
/// anything else goes element by element.
template <class T>
void add_row(const T* a, std::int64_t sa, const T* b, std::int64_t sb, T* out, std::int64_t n,
             bool stream) {
    const detail::plus op;
    const auto scalar = [=](std::int64_t i) { return op(a[i * sa], b[i * sb]); };
    if constexpr (has_vector_loop<T>) {
        using V = simd::sse2<T>;
        if (sa == 1 && sb == 1)
            return vector_loop(out, n, stream, scalar,
                               [=](std::int64_t i) { return V::add(V::load(a + i), V::load(b + i)); });
        if (sa == 1 && sb == 0)
            return vector_loop(out, n, stream, scalar,
                               [=, vb = V::set1(b[0])](std::int64_t i) { return V::add(V::load(a + i), vb); });
        if (sa == 0 && sb == 1)
            return vector_loop(out, n, stream, scalar,
                               [=, va = V::set1(a[0])](std::int64_t i) { return V::add(va, V::load(b + i)); });
    }
    for (std::int64_t i = 0; i < n; ++i) out[i] = scalar(i);
}

template <class T>
void add(const T* a, const T* b, T* out, std::int64_t n) {
    const bool stream = streams<T>(n);
    detail::parallel_for(n, elementwise_grain, [=](std::int64_t begin, std::int64_t end) {
        add_row(a + begin, 1, b + begin, 1, out + begin, end - begin, stream);
        if (stream) simd::stream_fence();
    });
}

template <class T>
void add_broadcast(const T* a, const T* b, T* out, std::int64_t n, const detail::broadcast_strides& s) {
    if (s.rank == 0) {  // every dimension is 1
        if (n == 1) out[0] = detail::plus{}(a[0], b[0]);
        return;
    }
    const std::int64_t inner = s.dims[s.rank - 1];
    const std::int64_t rows = n / inner;
    const std::int64_t grain = std::max<std::int64_t>(1, elementwise_grain / inner);
    const bool stream = streams<T>(n);
    detail::parallel_for(rows, grain, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t r = begin; r < end; ++r) {
            std::int64_t oa = 0, ob = 0;
            detail::broadcast_offsets(s, r * inner, oa, ob);
            add_row(a + oa, s.a[s.rank - 1], b + ob, s.b[s.rank - 1], out + r * inner, inner, stream);
        }
        if (stream) simd::stream_fence();
    });
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cpu
