// The CPU elementwise engine: one loop family for every elementwise op, over a
// detail::loop_plan. Rows of the plan's last dimension go to threads; a row
// whose operands all advance by 1 or stay put (a broadcast) runs 16-byte
// vectors for float and double when the op's functor works on vectors
// (`static constexpr bool vectorizes = true`), with non-temporal stores for
// outputs too large to stay in the cache (they skip the read-for-ownership,
// ~1.5x the bandwidth); a row that gathers (a transposed input) is cut into
// tiles so that the gathered lines stay in the cache. A functor with lane forms
// (`has_lane_forms`: exp, log, tanh, sigmoid) runs them on its contiguous unary
// rows in the widest ISA of this CPU (math_lanes.hpp), one choice per call.
// Each element's value is the functor's, whatever the path: the paths differ only
// in how they move data.
#pragma once

#include <devtensor/backend/cpu/math_lanes.hpp>
#include <devtensor/backend/cpu/simd.hpp>
#include <devtensor/backend/cpu/streaming.hpp>
#include <devtensor/backend/cpu/transpose.hpp>
#include <devtensor/detail/elementwise.hpp>
#include <devtensor/threads.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

namespace devtensor::backend_cpu {

DEVTENSOR_BEGIN_TU_NAMESPACE

template <class T>
inline constexpr bool has_vector_loop =
    DEVTENSOR_HAS_X86_KERNELS && (std::is_same_v<T, float> || std::is_same_v<T, double>);

/// A functor that computes on 16-byte vectors as on scalars (its operator() is a
/// template whose body is valid for GCC vector types, e.g. `a + b`).
template <class F>
concept vectorizing = requires { requires F::vectorizes; };

/// A functor with forms on an x86 ISA's registers (`F::lane_form<Functions>`, a function
/// object of that ISA's Functions: math_lanes.hpp), each lane the functor's scalar value.
template <class F>
concept has_lane_forms = requires { requires F::has_lane_forms; };

/// The identity functor of copies (contiguous, clone): a transposed copy takes the
/// blocked transpose kernel.
template <class F>
concept copying = requires { requires F::is_copy; };

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

/// An operand of one row: its first element and its step.
template <class T>
struct row_operand {
    T* p;
    std::int64_t step;
};

/// Calls fn(std::bool_constant<flags[0]>{}, ...): run-time flags made compile-time,
/// so that each combination of contiguous and repeated operands gets its own loop.
template <std::size_t K, class Fn, class... Chosen>
void with_flags(const std::array<bool, K>& flags, Fn&& fn, Chosen... chosen) {
    if constexpr (sizeof...(Chosen) == K) {
        fn(chosen...);
    } else {
        if (flags[sizeof...(Chosen)]) with_flags(flags, fn, chosen..., std::true_type{});
        else with_flags(flags, fn, chosen..., std::false_type{});
    }
}

/// One row: out[i * out.step] = f(in[i * in.step]...) for i < n; `isa` the call's choice
/// for the functor's lane forms.
template <class F, class TO, class... TI>
void map_row(const F& f, [[maybe_unused]] simd::isa isa, std::int64_t n, bool stream, row_operand<TO> out,
             row_operand<const TI>... in) {
    const auto scalar = [&]([[maybe_unused]] std::int64_t i) { return static_cast<TO>(f(in.p[i * in.step]...)); };
#if DEVTENSOR_HAS_X86_KERNELS
    if constexpr (has_lane_forms<F> && has_vector_loop<TO> && sizeof...(TI) == 1 && (std::is_same_v<TI, TO> && ...)) {
        if (isa != simd::isa::portable && out.step == 1 && ((in.step == 1) && ...))
            return map_row_on(isa, f, n, stream, out.p, in.p...);
    }
    if constexpr (vectorizing<F> && has_vector_loop<TO> && sizeof...(TI) > 0 && (std::is_same_v<TI, TO> && ...)) {
        using V = simd::sse2<TO>;
        // (a row shorter than the loop's step and its aligned head is all scalar: no setup)
        if (out.step == 1 && n >= 5 * V::lanes && ((in.step == 0 || in.step == 1) && ...)) {
            return with_flags(std::array<bool, sizeof...(TI)>{(in.step == 1)...}, [&](auto... unit) {
                const typename V::type splat[] = {V::set1(in.p[0])...};
                const auto operand = [&](auto is_unit, const TO* p, std::size_t k, [[maybe_unused]] std::int64_t i) {
                    if constexpr (decltype(is_unit)::value) return V::load(p + i);
                    else return splat[k];
                };
                [&]<std::size_t... K>(std::index_sequence<K...>) {
                    vector_loop(out.p, n, stream, scalar,
                                [&](std::int64_t i) { return f(operand(unit, in.p, K, i)...); });
                }(std::index_sequence_for<TI...>{});
            });
        }
    }
#endif
    if (out.step == 1)
        for (std::int64_t i = 0; i < n; ++i) out.p[i] = scalar(i);
    else
        for (std::int64_t i = 0; i < n; ++i) out.p[i * out.step] = scalar(i);
}


/// Tiles of the last two dimensions where an input gathers along the last one
/// (a transposed operand): tile x tile blocks keep its cache lines in use.
inline constexpr std::int64_t gather_tile = 64;

/// One rows x width tile of the last two dimensions at plan index `first`: inputs that are
/// transposed there (stride 1 down the rows) are transposed into their buffers first.
template <class F, class TO, class... TI, std::size_t... K>
void map_tile(const F& f, simd::isa isa, const detail::loop_plan<1 + sizeof...(TI)>& p, bool stream,
              std::int64_t first, std::int64_t rows, std::int64_t width, std::tuple<std::unique_ptr<TI[]>...>& buffers,
              std::index_sequence<K...>, TO* out, const TI*... in) {
    const int last = p.rank - 1;
    std::int64_t origin[1 + sizeof...(TI)];
    detail::offsets_of(p, first, origin);
    [[maybe_unused]] const std::array<bool, sizeof...(TI)> staged{
        (p.strides[K + 1][last - 1] == 1 && p.strides[K + 1][last] > 1)...};
    // the next tile down continues each transposed input's source rows: ask for those
    // lines now (too many rows at once for the hardware prefetchers to follow)
    [[maybe_unused]] const auto prefetch_next = [&](const auto* next, std::int64_t step) {
        for (std::int64_t j = 0; j < width; ++j)
            for (std::int64_t b = 0; b < gather_tile * static_cast<std::int64_t>(sizeof(*next)); b += 64)
                __builtin_prefetch(reinterpret_cast<const char*>(next + j * step) + b);
    };
    ((staged[K] ? prefetch_next(in + origin[K + 1] + rows, p.strides[K + 1][last]) : void()), ...);
    ((staged[K] ? transpose_block(in + origin[K + 1], p.strides[K + 1][last], std::get<K>(buffers).get(),
                                  gather_tile, rows, width, false)
                : void()),
     ...);
    for (std::int64_t i = 0; i < rows; ++i)
        map_row(f, isa, width, stream,
                row_operand<TO>{out + origin[0] + i * p.strides[0][last - 1], p.strides[0][last]},
                row_operand<const TI>{staged[K] ? std::get<K>(buffers).get() + i * gather_tile
                                                : in + origin[K + 1] + i * p.strides[K + 1][last - 1],
                                      staged[K] ? 1 : p.strides[K + 1][last]}...);
}

/// out = f(in...) over the plan (operand 0 the output): the one CPU loop of every
/// elementwise op, with the lane forms of `isa` (portable: none; else this CPU must run
/// it). Threads take whole rows (or tiles); every element is computed once.
template <class F, class TO, class... TI>
void map_on(simd::isa isa, const F& f, const detail::loop_plan<1 + sizeof...(TI)>& p, TO* out, const TI*... in) {
    constexpr int N = 1 + sizeof...(TI);
    if (p.numel == 0) return;
    if (p.rank == 0) {
        out[0] = static_cast<TO>(f(in[0]...));
        return;
    }
    const bool stream = streams<TO>(p.numel);
    const int last = p.rank - 1;
    const std::int64_t inner = p.sizes[last];
    // the first `length` elements of row r, or of the one row from element `from` on
    const auto row = [&](std::int64_t length, std::int64_t r, std::int64_t from = 0) {
        std::int64_t offset[static_cast<std::size_t>(N)];
        detail::offsets_within(p, last, r, offset);  // no division for a matrix's rows
        for (int k = 0; k < N; ++k) offset[k] += from * p.strides[k][last];
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            map_row(f, isa, length, stream, row_operand<TO>{out + offset[0], p.strides[0][last]},
                    row_operand<const TI>{in + offset[K + 1], p.strides[K + 1][last]}...);
        }(std::index_sequence_for<TI...>{});
    };
    bool gathers = false;  // an input strided along the rows (not 0, not 1) while the output is not
    for (int k = 1; k < N; ++k) gathers = gathers || (p.strides[k][last] > 1 && p.strides[0][last] == 1);
    if (gathers && p.rank >= 2) {
        // the copy of a transposed matrix: the dedicated kernel
        if constexpr (copying<F> && N == 2 && (std::is_same_v<TI, TO> && ...))
            if (p.rank == 2 && p.strides[1][0] == 1) {
                const std::int64_t rows = p.sizes[0], cols = p.sizes[1];
                return transpose(in..., p.strides[1][1], out, p.strides[0][0], rows, cols);
            }
        const std::int64_t outer = p.sizes[last - 1];
        const std::int64_t planes = p.numel / (outer * inner);
        const std::int64_t tiles_i = (outer + gather_tile - 1) / gather_tile;
        const std::int64_t tiles_j = (inner + gather_tile - 1) / gather_tile;
        const std::int64_t grain = std::max<std::int64_t>(1, elementwise_grain / (gather_tile * gather_tile));
        constexpr auto G = static_cast<std::size_t>(gather_tile);
        detail::parallel_for(planes * tiles_i * tiles_j, grain, [&](std::int64_t begin, std::int64_t end) {
            // a transposed input's tile is first transposed into a buffer (the blocked kernel),
            // so that its rows are read in order, as vectors where the functor allows
            std::tuple<std::unique_ptr<TI[]>...> buffers{std::make_unique<TI[]>(G * G)...};
            for (std::int64_t t = begin; t < end; ++t) {
                // down the output's rows first: a transposed input's tiles then continue its rows
                const std::int64_t plane = t / (tiles_i * tiles_j), tj = t / tiles_i % tiles_j, ti = t % tiles_i;
                const std::int64_t i0 = ti * gather_tile, j0 = tj * gather_tile;
                map_tile(f, isa, p, stream, (plane * outer + i0) * inner + j0, std::min(gather_tile, outer - i0),
                         std::min(gather_tile, inner - j0), buffers, std::index_sequence_for<TI...>{}, out, in...);
            }
            if (stream) simd::stream_fence();
        });
        return;
    }
    const std::int64_t rows = p.numel / inner;
    const std::int64_t grain = std::max<std::int64_t>(1, elementwise_grain / inner);
    if (rows == 1) {  // one long row: threads take pieces of it
        detail::parallel_for(inner, elementwise_grain, [&](std::int64_t begin, std::int64_t end) {
            row(end - begin, 0, begin);
            if (stream) simd::stream_fence();
        });
        return;
    }
    detail::parallel_for(rows, grain, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t r = begin; r < end; ++r) row(inner, r);
        if (stream) simd::stream_fence();
    });
}

/// map_on with the widest ISA of this CPU.
template <class F, class TO, class... TI>
void map(const F& f, const detail::loop_plan<1 + sizeof...(TI)>& p, TO* out, const TI*... in) {
    map_on(simd::best_isa(), f, p, out, in...);
}

/// out[i] = f(i) for a contiguous output of n elements (arange, linspace, fill).
template <class F, class TO>
void generate(const F& f, TO* out, std::int64_t n) {
    detail::parallel_for(n, elementwise_grain, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t i = begin; i < end; ++i) out[i] = f(i);
    });
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cpu
