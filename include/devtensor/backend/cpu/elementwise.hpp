// CPU loops for fill and add: contiguous fast paths the compiler vectorises,
// broadcasting by strides row by row, threads over large outputs.
#pragma once

#include <devtensor/detail/elementwise.hpp>
#include <devtensor/threads.hpp>

#include <algorithm>
#include <cstdint>

namespace devtensor::backend_cpu {

DEVTENSOR_BEGIN_TU_NAMESPACE

/// Elements below which an elementwise loop stays on one thread.
inline constexpr std::int64_t elementwise_grain = 1 << 16;

template <class T>
void fill(T* out, std::int64_t n, T value) {
    detail::parallel_for(n, elementwise_grain, [=](std::int64_t begin, std::int64_t end) {
        std::fill(out + begin, out + end, value);
    });
}

template <class T>
void add(const T* a, const T* b, T* out, std::int64_t n) {
    detail::parallel_for(n, elementwise_grain, [=](std::int64_t begin, std::int64_t end) {
        const detail::plus op;
        for (std::int64_t i = begin; i < end; ++i) out[i] = op(a[i], b[i]);
    });
}

/// One output row of a broadcast add; stride 0 or 1 per operand, each case its own loop
/// so that the compiler vectorises it.
template <class T>
void add_row(const T* a, std::int64_t sa, const T* b, std::int64_t sb, T* out, std::int64_t n) {
    const detail::plus op;
    if (sa == 1 && sb == 1)
        for (std::int64_t i = 0; i < n; ++i) out[i] = op(a[i], b[i]);
    else if (sa == 1 && sb == 0)
        for (std::int64_t i = 0; i < n; ++i) out[i] = op(a[i], b[0]);
    else if (sa == 0 && sb == 1)
        for (std::int64_t i = 0; i < n; ++i) out[i] = op(a[0], b[i]);
    else
        for (std::int64_t i = 0; i < n; ++i) out[i] = op(a[i * sa], b[i * sb]);
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
    detail::parallel_for(rows, grain, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t r = begin; r < end; ++r) {
            std::int64_t oa = 0, ob = 0;
            detail::broadcast_offsets(s, r * inner, oa, ob);
            add_row(a + oa, s.a[s.rank - 1], b + ob, s.b[s.rank - 1], out + r * inner, inner);
        }
    });
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cpu
