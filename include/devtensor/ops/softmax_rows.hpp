// softmax and log_softmax over contiguous rows on the CPU, forward and backward,
// each row in one pass of a thread instead of six ops over the whole tensor (a
// classifier's [batch, classes] has rows of a few elements, where per-op and
// per-row costs dominate). Every step is the functor of the op it stands for (a
// product through detail::mul, rounded as the multiplies op rounds it), in that
// op's order (reductions in detail::reduce_chunk_order, whole rows of at most one
// chunk), so the bits are those of the composed ops, which the CUDA backend runs
// (DESIGN §15).
#pragma once

#include <devtensor/backend/cpu/elementwise.hpp>  // map_row: exp's and log's lane forms
#include <devtensor/backend/cpu/reduce.hpp>       // reduce_row_chunk
#include <devtensor/detail/arith.hpp>  // mul
#include <devtensor/detail/reduce.hpp>
#include <devtensor/ops/arithmetic.hpp>  // minus
#include <devtensor/ops/extremes.hpp>    // extreme_op
#include <devtensor/ops/sum.hpp>         // sum_op
#include <devtensor/ops/unary_math.hpp>  // exp_of, log_of

#include <algorithm>
#include <cstdint>
#include <optional>
#include <type_traits>

namespace devtensor::detail {

DEVTENSOR_BEGIN_TU_NAMESPACE

/// The rows' length when t's dimension `dim` is the last of a contiguous CPU tensor of
/// float or double, its rows each one reduction chunk at most; else none (the ops run).
template <class T, class D>
std::optional<std::int64_t> cpu_row_length(const tensor<T, D>& t, std::int64_t dim) {
    if constexpr (StaticCudaDevice<D> || !std::is_floating_point_v<T>) {
        return std::nullopt;
    } else {
        const auto rank = static_cast<std::int64_t>(t.shape().rank());
        if (rank == 0 || (dim != rank - 1 && dim != -1) || !device(t.device()).is_cpu() || !t.is_contiguous())
            return std::nullopt;  // (a dimension out of range: the ops say so)
        const std::int64_t n = t.shape()[static_cast<std::size_t>(rank - 1)];
        if (n == 0 || n > reduce_chunk) return std::nullopt;
        return n;
    }
}

/// f(first, count) for the rows [first, first + count) of n elements: threads over whole rows.
template <class F>
void for_row_blocks(std::int64_t rows, std::int64_t n, F f) {
    parallel_for(rows, std::max<std::int64_t>(1, backend_cpu::elementwise_grain / n),
                 [&](std::int64_t r0, std::int64_t r1) { f(r0, r1 - r0); });
}

/// out = f(in) over `count` contiguous elements (in place too), with the lane forms of
/// exp and log as their ops: a block of rows at once, so that short rows take them too.
template <class F, class T>
void map_block(F f, std::int64_t count, const T* in, T* out) {
    backend_cpu::map_row(f, backend_cpu::simd::best_isa(), count, false, backend_cpu::row_operand<T>{out, 1},
                         backend_cpu::row_operand<const T>{in, 1});
}

/// r's value over a row of n elements, as the reduction engine gives it.
template <class R, class T>
T reduce_row(R r, std::int64_t n, const T* row) {
    return r.finish(backend_cpu::reduce_row_chunk<T>(r, row, 1, n, 0), n);
}

/// Rows handled together: their maxima and sums in arrays for exp's and log's lane forms.
inline constexpr std::int64_t softmax_row_group = 64;

/// ops/softmax.hpp's forward on `rows` rows of n: s = x - amax(x); softmax exp(s) / sum(exp(s)),
/// log_softmax s - log(sum(exp(s))).
template <bool Log, class T>
void softmax_rows(std::int64_t rows, std::int64_t n, const T* x, T* y) {
    for_row_blocks(rows, n, [&](std::int64_t first, std::int64_t count) {
        for (std::int64_t r0 = first; r0 < first + count; r0 += softmax_row_group) {
            const std::int64_t group = std::min(softmax_row_group, first + count - r0);
            T top[softmax_row_group], total[softmax_row_group];
            for (std::int64_t r = 0; r < group; ++r) {
                const T* xr = x + (r0 + r) * n;
                T* yr = y + (r0 + r) * n;
                top[r] = reduce_row(extreme_op<true>{}, n, xr);
                for (std::int64_t q = 0; q < n; ++q) yr[q] = minus{}(xr[q], top[r]);
            }
            map_block(exp_of{}, group * n, y + r0 * n, y + r0 * n);
            for (std::int64_t r = 0; r < group; ++r) total[r] = reduce_row(sum_op{}, n, y + (r0 + r) * n);
            if constexpr (Log) map_block(log_of{}, group, total, total);
            for (std::int64_t r = 0; r < group; ++r) {
                const T* xr = x + (r0 + r) * n;
                T* yr = y + (r0 + r) * n;
                if constexpr (Log)  // the shift again (its bits), less the log of the sum
                    for (std::int64_t q = 0; q < n; ++q) yr[q] = minus{}(minus{}(xr[q], top[r]), total[r]);
                else
                    for (std::int64_t q = 0; q < n; ++q) yr[q] = divides{}(yr[q], total[r]);
            }
        }
    });
}

/// ops/softmax.hpp's backward from g and the saved result y: log_softmax g - exp(y)·sum(g),
/// softmax y·(g - sum(g·y)).
template <bool Log, class T>
void softmax_rows_backward(std::int64_t rows, std::int64_t n, const T* g, const T* y, T* out) {
    for_row_blocks(rows, n, [&](std::int64_t first, std::int64_t count) {
        if constexpr (Log) map_block(exp_of{}, count * n, y + first * n, out + first * n);
        for (std::int64_t r = first; r < first + count; ++r) {
            const T* gr = g + r * n;
            const T* yr = y + r * n;
            T* o = out + r * n;
            if constexpr (Log) {
                const T total = reduce_row(sum_op{}, n, gr);
                // detail::mul: the product rounded before the difference, as two ops round it
                // (a plain a * b here becomes an fma wherever the build enables FMA)
                for (std::int64_t q = 0; q < n; ++q) o[q] = minus{}(gr[q], detail::mul(o[q], total));
            } else {
                for (std::int64_t q = 0; q < n; ++q) o[q] = detail::mul(gr[q], yr[q]);
                const T total = reduce_row(sum_op{}, n, o);
                for (std::int64_t q = 0; q < n; ++q) o[q] = detail::mul(yr[q], minus{}(gr[q], total));
            }
        }
    });
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::detail
