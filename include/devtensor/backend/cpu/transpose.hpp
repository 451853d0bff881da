// CPU transposes, dst = srcᵀ between two strided 2-D views: the kernel behind
// transpose(0, 1).contiguous() and other strided copies. Memory must be read
// and written in whole cache lines, in runs the hardware prefetchers follow:
// a line written half by a non-temporal store and flushed half full costs a
// read of it, and a line read for half its bytes is read again later.
// - Large float outputs (streamed), with rows on 64-byte edges: bands of 16
//   source rows read along the rows, 16 x 16 blocks transposed in registers
//   (AVX-512, or four 8x8 AVX2 transposes) and written as 16 whole lines with
//   non-temporal stores, as a memcpy interleaves its loads and stores.
// - Other 4- and 8-byte elements (moved as bit patterns) and the ragged edges:
//   tiles copied in source row by source row, transposed in registers (4x4 /
//   2x2 SSE2, 8x8 / 4x4 AVX2) between two buffers that stay in cache, and
//   copied out destination row by destination row (non-temporal for large
//   outputs), asking for the next tile's source rows meanwhile.
// - Other element types: element by element, tile by tile.
#pragma once

#include <devtensor/backend/cpu/streaming.hpp>    // streams<T>, elementwise_grain
#include <devtensor/backend/cpu/simd.hpp>         // best_isa, stream_fence, DEVTENSOR_AVX2
#include <devtensor/threads.hpp>                  // detail::parallel_for

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

namespace devtensor::backend_cpu {

DEVTENSOR_BEGIN_TU_NAMESPACE

namespace transpose_detail {

/// A tile, in bytes: the run read from each of its source rows, and the run
/// written to each of its destination rows. A tile of floats is 128 x 64
/// elements, 32 KiB; its two buffers (in, out) stay in L2.
inline constexpr std::int64_t tile_src_run = 512, tile_dst_run = 256;

/// Elements of T in `bytes`, at least 1.
template <class T>
constexpr std::int64_t elements(std::int64_t bytes) {
    return std::max<std::int64_t>(1, bytes / static_cast<std::int64_t>(sizeof(T)));
}

/// Element by element: dst[i * ds + j] = src[j * ss + i] for i < ni, j < nj.
template <class T>
void scalar_tile(const T* src, std::int64_t ss, T* dst, std::int64_t ds, std::int64_t ni, std::int64_t nj) {
    for (std::int64_t i = 0; i < ni; ++i)
        for (std::int64_t j = 0; j < nj; ++j) dst[i * ds + j] = src[j * ss + i];
}

/// Asks for the cache lines of `bytes` bytes from p into L2 (not L1: the lines
/// of a tile's source column fall into one L1 set when the source's row stride
/// is a multiple of 4 KiB).
inline void prefetch_run(const void* p, std::int64_t bytes) {
#if DEVTENSOR_HAS_X86_KERNELS
    const char* c = static_cast<const char*>(p);
    for (std::int64_t b = 0; b < bytes; b += 64) _mm_prefetch(c + b, _MM_HINT_T1);
    if (bytes > 0) _mm_prefetch(c + bytes - 1, _MM_HINT_T1);  // the last line, where p is off a line's edge
#else
    (void)p, (void)bytes;
#endif
}

/// One tile: ni destination rows x nj columns. The V x V blocks go through
/// strips, wide(s, d, d_stride, n) for B destination rows (a source line: each
/// line is used up once read) and narrow(...) for V rows, n columns a multiple
/// of V; the ragged edges element by element.
template <std::int64_t V, std::int64_t B, class T, class Wide, class Narrow>
void tile(const T* src, std::int64_t ss, T* dst, std::int64_t ds, std::int64_t ni, std::int64_t nj, Wide wide,
          Narrow narrow) {
    const std::int64_t ib = ni / B * B, iv = ni / V * V, jv = nj / V * V;
    if (jv > 0) {
        for (std::int64_t i = 0; i < ib; i += B) wide(src + i, dst + i * ds, ds, jv);
        for (std::int64_t i = ib; i < iv; i += V) narrow(src + i, dst + i * ds, ds, jv);
    }
    scalar_tile(src + jv * ss, ss, dst + jv, ds, iv, nj - jv);
    scalar_tile(src + iv, ss, dst + iv * ds, ds, ni - iv, nj);
}

/// A tile: destination rows i0 .. i0 + ni, columns j0 .. j0 + nj.
struct tile_at {
    std::int64_t i0, j0, ni, nj;
};

/// The whole matrix in tiles: emit(tile, next) for each, with the tile that
/// comes after it (ni = nj = 0 after the last). Bands of source rows, each
/// band's tiles along the rows: one tile continues the source rows of the one
/// before, which is what hardware prefetchers follow.
template <class T, class Emit>
void tiles(std::int64_t rows, std::int64_t cols, Emit emit) {
    constexpr std::int64_t Ti = elements<T>(tile_src_run), Tj = elements<T>(tile_dst_run);
    tile_at previous{0, 0, 0, 0};
    for (std::int64_t j0 = 0; j0 < cols; j0 += Tj)
        for (std::int64_t i0 = 0; i0 < rows; i0 += Ti) {
            const tile_at t{i0, j0, std::min(Ti, rows - i0), std::min(Tj, cols - j0)};
            if (previous.ni > 0) emit(previous, t);
            previous = t;
        }
    if (previous.ni > 0) emit(previous, tile_at{0, 0, 0, 0});
}

#if DEVTENSOR_HAS_X86_KERNELS

/// The element type whose registers carry T's bits.
template <class T>
using lane_t = std::conditional_t<sizeof(T) == 4, float, double>;

// ---- SSE2: in every x86-64 CPU ---------------------------------------------------------------

inline void kernel_sse(const float* s, std::int64_t ss, float* d, std::int64_t ds) {
    __m128 r0 = _mm_loadu_ps(s), r1 = _mm_loadu_ps(s + ss), r2 = _mm_loadu_ps(s + 2 * ss),
           r3 = _mm_loadu_ps(s + 3 * ss);
    _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
    _mm_storeu_ps(d, r0);
    _mm_storeu_ps(d + ds, r1);
    _mm_storeu_ps(d + 2 * ds, r2);
    _mm_storeu_ps(d + 3 * ds, r3);
}

inline void kernel_sse(const double* s, std::int64_t ss, double* d, std::int64_t ds) {
    const __m128d r0 = _mm_loadu_pd(s), r1 = _mm_loadu_pd(s + ss);
    _mm_storeu_pd(d, _mm_unpacklo_pd(r0, r1));
    _mm_storeu_pd(d + ds, _mm_unpackhi_pd(r0, r1));
}

/// R destination rows x n columns in blocks of V x V: 4x4 floats or 2x2 doubles.
template <class U, std::int64_t R>
void strip_sse(const U* s, std::int64_t ss, U* d, std::int64_t ds, std::int64_t n) {
    constexpr auto V = static_cast<std::int64_t>(16 / sizeof(U));
    for (std::int64_t j = 0; j < n; j += V)
        for (std::int64_t i = 0; i < R; i += V) kernel_sse(s + j * ss + i, ss, d + i * ds + j, ds);
}

/// n elements from an L1 buffer (16-byte aligned) to d with non-temporal stores
/// where d is 16-byte aligned, plain stores at the ragged ends.
inline void stream_run(const float* b, float* d, std::int64_t n) {
    std::int64_t j = 0;
    for (; j < n && reinterpret_cast<std::uintptr_t>(d + j) % 16 != 0; ++j) d[j] = b[j];
    if (j % 4 == 0)  // the buffer is aligned where d is
        for (; j + 4 <= n; j += 4) _mm_stream_ps(d + j, _mm_load_ps(b + j));
    for (; j < n; ++j) d[j] = b[j];
}

inline void stream_run(const double* b, double* d, std::int64_t n) {
    std::int64_t j = 0;
    for (; j < n && reinterpret_cast<std::uintptr_t>(d + j) % 16 != 0; ++j) d[j] = b[j];
    if (j % 2 == 0)
        for (; j + 2 <= n; j += 2) _mm_stream_pd(d + j, _mm_load_pd(b + j));
    for (; j < n; ++j) d[j] = b[j];
}

// ---- AVX2: 8x8 floats, 4x4 doubles in 32-byte registers ---------------------------------------

/// src rows 0..7, columns 0..7 transposed into out[0..7] (out[k]: column k).
DEVTENSOR_AVX2 inline void transpose8x8(const float* s, std::int64_t ss, __m256 out[8]) {
    __m256 r[8], t[8];
    for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(s + k * ss);
    for (int k = 0; k < 8; k += 2)
        t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]), t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
    constexpr int lo = _MM_SHUFFLE(1, 0, 1, 0), hi = _MM_SHUFFLE(3, 2, 3, 2);
    for (int k = 0; k < 8; k += 4) {
        r[k] = _mm256_shuffle_ps(t[k], t[k + 2], lo), r[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], hi);
        r[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], lo), r[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], hi);
    }
    for (int k = 0; k < 4; ++k) {
        out[k] = _mm256_permute2f128_ps(r[k], r[k + 4], 0x20);
        out[k + 4] = _mm256_permute2f128_ps(r[k], r[k + 4], 0x31);
    }
}

DEVTENSOR_AVX2 inline void kernel_avx2(const float* s, std::int64_t ss, float* d, std::int64_t ds) {
    __m256 column[8];
    transpose8x8(s, ss, column);
    for (int k = 0; k < 8; ++k) _mm256_storeu_ps(d + k * ds, column[k]);
}

DEVTENSOR_AVX2 inline void kernel_avx2(const double* s, std::int64_t ss, double* d, std::int64_t ds) {
    const __m256d r0 = _mm256_loadu_pd(s), r1 = _mm256_loadu_pd(s + ss), r2 = _mm256_loadu_pd(s + 2 * ss),
                  r3 = _mm256_loadu_pd(s + 3 * ss);
    const __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1),
                  t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
    _mm256_storeu_pd(d, _mm256_permute2f128_pd(t0, t2, 0x20));
    _mm256_storeu_pd(d + ds, _mm256_permute2f128_pd(t1, t3, 0x20));
    _mm256_storeu_pd(d + 2 * ds, _mm256_permute2f128_pd(t0, t2, 0x31));
    _mm256_storeu_pd(d + 3 * ds, _mm256_permute2f128_pd(t1, t3, 0x31));
}

/// R destination rows x n columns in blocks of 8x8 floats or 4x4 doubles.
template <class U, std::int64_t R>
DEVTENSOR_AVX2 void strip_avx2(const U* s, std::int64_t ss, U* d, std::int64_t ds, std::int64_t n) {
    constexpr auto V = static_cast<std::int64_t>(32 / sizeof(U));
    for (std::int64_t j = 0; j < n; j += V)
        for (std::int64_t i = 0; i < R; i += V) kernel_avx2(s + j * ss + i, ss, d + i * ds + j, ds);
}

/// rows x cols of U through the registers of `isa` (AVX2 for AVX-512 too), each
/// tile through buffers in cache; with `stream`, out with non-temporal stores.
template <class U>
void buffered_transpose(const U* src, std::int64_t ss, U* dst, std::int64_t ds, std::int64_t rows,
                        std::int64_t cols, bool stream, simd::isa isa) {
    if (rows <= 0 || cols <= 0) return;
    const bool avx2 = isa != simd::isa::portable;
    constexpr std::int64_t V = 16 / sizeof(U), B = 64 / sizeof(U);  // SSE's block; a cache line
    const auto transpose_tile = [&](const U* s, std::int64_t s_stride, U* d, std::int64_t d_stride, std::int64_t ni,
                                    std::int64_t nj) {
        const auto strip = [=](auto f) {
            return [=](const U* s_, U* d_, std::int64_t ds_, std::int64_t n) { f(s_, s_stride, d_, ds_, n); };
        };
        if (avx2)
            tile<2 * V, B>(s, s_stride, d, d_stride, ni, nj, strip(strip_avx2<U, B>), strip(strip_avx2<U, 2 * V>));
        else
            tile<V, B>(s, s_stride, d, d_stride, ni, nj, strip(strip_sse<U, B>), strip(strip_sse<U, V>));
    };
    // A tile is copied in source row by source row, transposed between two
    // buffers in cache, and copied out destination row by destination row,
    // which asks for the next tile's source rows as it goes.
    constexpr std::int64_t Ti = elements<U>(tile_src_run), Tj = elements<U>(tile_dst_run);
    constexpr auto tile_elements = static_cast<std::size_t>(Ti * Tj);
    struct alignas(64) line {  // an over-aligned type: new[] and delete[] both take its alignment
        U element[64 / sizeof(U)];
    };
    const std::unique_ptr<line[]> buffers(new line[2 * tile_elements * sizeof(U) / sizeof(line)]);
    U *in = buffers[0].element, *out = in + tile_elements;
    tiles<U>(rows, cols, [&](const tile_at& t, const tile_at& next) {
        for (std::int64_t j = 0; j < t.nj; ++j) std::copy_n(src + (t.j0 + j) * ss + t.i0, t.ni, in + j * Ti);
        transpose_tile(in, Ti, out, Tj, t.ni, t.nj);
        const auto run = next.ni * static_cast<std::int64_t>(sizeof(U));
        for (std::int64_t i = 0; i < t.ni; ++i) {
            U* row = dst + (t.i0 + i) * ds + t.j0;
            if (stream) stream_run(out + i * Tj, row, t.nj);
            else std::copy_n(out + i * Tj, t.nj, row);
            for (std::int64_t j = next.nj * i / t.ni; j < next.nj * (i + 1) / t.ni; ++j)
                prefetch_run(src + (next.j0 + j) * ss + next.i0, run);
        }
    });
}

// ---- full lines from the registers: 16 x 16 floats -------------------------------------------

/// 16 x 16 floats, each destination row one cache line written by two
/// consecutive non-temporal stores; d 32-byte aligned, ds a multiple of 8.
DEVTENSOR_AVX2 inline void block16_avx2(const float* s, std::int64_t ss, float* d, std::int64_t ds) {
    __m256 left[8], right[8];
    for (int h = 0; h < 16; h += 8) {
        transpose8x8(s + h, ss, left);            // source rows 0..7: destination columns 0..7
        transpose8x8(s + 8 * ss + h, ss, right);  // source rows 8..15: columns 8..15
        for (int k = 0; k < 8; ++k) {
            _mm256_stream_ps(d + (h + k) * ds, left[k]);
            _mm256_stream_ps(d + (h + k) * ds + 8, right[k]);
        }
    }
}

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which it then
// reports as uninitialised once inlined (as in isa_kernels.hpp).
#  pragma GCC diagnostic push
#  if !defined(__clang__)
#    pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#  endif
#  pragma GCC diagnostic ignored "-Wuninitialized"
/// The same with 64-byte registers: one store a line; d 64-byte aligned, ds a multiple of 16.
DEVTENSOR_AVX512 inline void block16_avx512(const float* s, std::int64_t ss, float* d, std::int64_t ds) {
    __m512 r[16], t[16];
    for (int k = 0; k < 16; ++k) r[k] = _mm512_loadu_ps(s + k * ss);
    for (int k = 0; k < 16; k += 2)
        t[k] = _mm512_unpacklo_ps(r[k], r[k + 1]), t[k + 1] = _mm512_unpackhi_ps(r[k], r[k + 1]);
    for (int k = 0; k < 16; k += 4) {
        r[k] = _mm512_shuffle_ps(t[k], t[k + 2], 0x44), r[k + 1] = _mm512_shuffle_ps(t[k], t[k + 2], 0xEE);
        r[k + 2] = _mm512_shuffle_ps(t[k + 1], t[k + 3], 0x44), r[k + 3] = _mm512_shuffle_ps(t[k + 1], t[k + 3], 0xEE);
    }
    // r[4q + c], 128-bit lane L: column 4L + c of rows 4q .. 4q + 3; gather the lanes
    for (int c = 0; c < 4; ++c) {
        t[c] = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88), t[4 + c] = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xDD);
        t[8 + c] = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
        t[12 + c] = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xDD);
    }
    for (int c = 0; c < 4; ++c) {
        _mm512_stream_ps(d + c * ds, _mm512_shuffle_f32x4(t[c], t[8 + c], 0x88));
        _mm512_stream_ps(d + (4 + c) * ds, _mm512_shuffle_f32x4(t[4 + c], t[12 + c], 0x88));
        _mm512_stream_ps(d + (8 + c) * ds, _mm512_shuffle_f32x4(t[c], t[8 + c], 0xDD));
        _mm512_stream_ps(d + (12 + c) * ds, _mm512_shuffle_f32x4(t[4 + c], t[12 + c], 0xDD));
    }
}
#  pragma GCC diagnostic pop

/// Bands of 16 source rows, each band along its rows in runs of `run` columns:
/// 16 streams read in order, each 16 x 16 block out as 16 whole lines.
template <void (*Block)(const float*, std::int64_t, float*, std::int64_t)>
void line_blocks(const float* src, std::int64_t ss, float* dst, std::int64_t ds, std::int64_t rows,
                 std::int64_t cols) {
    constexpr std::int64_t run = 2048;
    for (std::int64_t i0 = 0; i0 < rows; i0 += run)
        for (std::int64_t j = 0; j < cols; j += 16)
            for (std::int64_t i = i0; i < std::min(i0 + run, rows); i += 16)
                Block(src + j * ss + i, ss, dst + i * ds + j, ds);
}

/// rows x cols of U on `isa` (by default the best this CPU has). Streamed float
/// outputs whose rows start on 64-byte edges go 16 x 16 blocks at a time from
/// the registers to memory, and the ragged edges (and everything else) through
/// buffered_transpose.
template <class U>
void vector_transpose(const U* src, std::int64_t ss, U* dst, std::int64_t ds, std::int64_t rows,
                      std::int64_t cols, bool stream, simd::isa isa = simd::best_isa()) {
    if constexpr (std::is_same_v<U, float>) {
        const std::int64_t r16 = rows / 16 * 16, c16 = cols / 16 * 16;
        const bool lines = stream && isa != simd::isa::portable && reinterpret_cast<std::uintptr_t>(dst) % 64 == 0 &&
                           ds % 16 == 0 && r16 > 0 && c16 > 0;
        if (lines) {
            if (isa == simd::isa::avx512) line_blocks<block16_avx512>(src, ss, dst, ds, r16, c16);
            else line_blocks<block16_avx2>(src, ss, dst, ds, r16, c16);
            buffered_transpose(src + c16 * ss, ss, dst + c16, ds, rows, cols - c16, stream, isa);
            buffered_transpose(src + r16, ss, dst + r16 * ds, ds, rows - r16, c16, stream, isa);
            return;
        }
    }
    buffered_transpose(src, ss, dst, ds, rows, cols, stream, isa);
}

#endif

/// Whether T goes through the vector transposes: its bits moved as floats or doubles.
template <class T>
inline constexpr bool has_vector_transpose =
    DEVTENSOR_HAS_X86_KERNELS && std::is_trivially_copyable_v<T> && (sizeof(T) == 4 || sizeof(T) == 8) &&
    alignof(T) == sizeof(T);

}  // namespace transpose_detail

/// dst[i * dst_stride + j] = src[j * src_stride + i] for 0 <= i < rows, 0 <= j < cols,
/// on the calling thread. `stream` asks for non-temporal stores (taken for 4- and
/// 8-byte elements); the caller then calls simd::stream_fence() before another
/// thread reads the result.
template <class T>
void transpose_block(const T* src, std::int64_t src_stride, T* dst, std::int64_t dst_stride, std::int64_t rows,
                     std::int64_t cols, bool stream) {
    if (rows <= 0 || cols <= 0) return;
#if DEVTENSOR_HAS_X86_KERNELS
    if constexpr (transpose_detail::has_vector_transpose<T>) {
        // Only bits move: the registers' element types need not be T (the
        // intrinsics' loads and stores may alias any object).
        using U = transpose_detail::lane_t<T>;
        return transpose_detail::vector_transpose(reinterpret_cast<const U*>(src), src_stride,
                                                  reinterpret_cast<U*>(dst), dst_stride, rows, cols, stream);
    }
#endif
    (void)stream;
    transpose_detail::tiles<T>(rows, cols, [&](const transpose_detail::tile_at& t, const transpose_detail::tile_at&) {
        transpose_detail::scalar_tile(src + t.j0 * src_stride + t.i0, src_stride, dst + t.i0 * dst_stride + t.j0,
                                      dst_stride, t.ni, t.nj);
    });
}

/// transpose_block over the whole matrix on up to get_num_threads() threads, each
/// with a band of whole tiles: bands of destination rows, or of destination columns
/// where there are more tiles that way (a column of a tall matrix becoming a row).
/// Outputs past streaming_bytes are written with non-temporal stores.
template <class T>
void transpose(const T* src, std::int64_t src_stride, T* dst, std::int64_t dst_stride, std::int64_t rows,
               std::int64_t cols) {
    if (rows <= 0 || cols <= 0) return;
    const std::int64_t Ti = transpose_detail::elements<T>(transpose_detail::tile_src_run),
                       Tj = transpose_detail::elements<T>(transpose_detail::tile_dst_run);
    const bool stream = streams<T>(rows * cols);
    const std::int64_t row_tiles = (rows + Ti - 1) / Ti, col_tiles = (cols + Tj - 1) / Tj;
    const bool by_rows = row_tiles >= col_tiles;
    const std::int64_t band = by_rows ? Ti * cols : Tj * rows;  // elements in one band of tiles
    const std::int64_t grain = std::max<std::int64_t>(1, elementwise_grain / band);
    detail::parallel_for(by_rows ? row_tiles : col_tiles, grain, [=](std::int64_t begin, std::int64_t end) {
        if (by_rows)
            transpose_block(src + begin * Ti, src_stride, dst + begin * Ti * dst_stride, dst_stride,
                            std::min(end * Ti, rows) - begin * Ti, cols, stream);
        else
            transpose_block(src + begin * Tj * src_stride, src_stride, dst + begin * Tj, dst_stride, rows,
                            std::min(end * Tj, cols) - begin * Tj, stream);
        if (stream) simd::stream_fence();
    });
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cpu
