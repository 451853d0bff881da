// The register-blocked micro-kernels of the CPU GEMM and their blocking: an
// MR x NR tile of C (NR = two vector registers) accumulated over packed panels
// of A (MR rows of kc, each row kc_max apart: packing A is a copy of row
// pieces, not a transpose) and B (NR wide, k-major). The vector kernels are
// gemm_micro_kernel in isa_kernels.inl; the portable one is detail::gemm_micro_kernel.
// Every kernel follows the GEMM order of detail/gemm_order.hpp: each element
// one fma chain over k, continued from C across kc blocks (`resume`), so the
// blocking (kc, mc, nc: cache sizes) is free to differ between ISAs.
#pragma once

#include <devtensor/backend/cpu/isa_kernels.hpp>
#include <devtensor/backend/cpu/prefetch_cursor.hpp>
#include <devtensor/detail/gemm_order.hpp>  // plus_bias
#include <devtensor/detail/gemm_micro_kernel.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace devtensor::backend_cpu {

DEVTENSOR_BEGIN_TU_NAMESPACE

/// Copies the h x w part of C at `c` into a tile (the rest zero): the partial
/// sums a later kc block continues.
template <std::size_t MR, std::size_t NR, class T>
void load_tile(T (&tile)[MR][NR], const T* c, std::int64_t ldc, std::int64_t h, std::int64_t w) {
    for (std::size_t i = 0; i < MR; ++i)
        for (std::size_t j = 0; j < NR; ++j)
            tile[i][j] = static_cast<std::int64_t>(i) < h && static_cast<std::int64_t>(j) < w
                             ? c[static_cast<std::int64_t>(i) * ldc + static_cast<std::int64_t>(j)]
                             : T{};
}

/// Writes the h x w part of a tile into C: C = tile, plus bias[j] when given.
template <std::size_t MR, std::size_t NR, class T>
void store_tile(const T (&tile)[MR][NR], T* c, std::int64_t ldc, std::int64_t h, std::int64_t w,
                const T* bias) {
    for (std::int64_t i = 0; i < h; ++i) {
        T* row = c + i * ldc;
        for (std::int64_t j = 0; j < w; ++j) row[j] = detail::plus_bias(tile[i][j], bias, j);
    }
}

/// Plain C++ for any element type and CPU: the shared micro-tile.
template <class T>
struct portable_kernel {
    static constexpr int mr = 6;
    static constexpr int nr = std::clamp<int>(64 / static_cast<int>(sizeof(T)), 4, 16);
    static constexpr std::int64_t kc = 256, mc = 16 * mr, nc = 128 * nr;
    static constexpr bool vector_isa = false;  // packing in plain C++ too

    /// C's tile = the chains over kc more steps, from C (`resume`) or from zero, + bias if
    /// given (the portable kernel touches nothing ahead: neither `next` nor `next_c`).
    /// `b_copy` (may be null): b is B's rows themselves, `b_step` apart, packed to b_copy
    /// by the way (here: first).
    static void tile(std::int64_t kc_, const T* a, const T* b, T* c, std::int64_t ldc, bool resume,
                     const T* bias, prefetch_cursor* /*next*/, const T* /*next_c*/, std::int64_t b_step = 0,
                     T* b_copy = nullptr, std::int64_t a_step = 0, T* a_copy = nullptr) {
        if (a_copy) {
            for (std::int64_t i = 0; i < mr; ++i) std::copy_n(a + i * a_step, kc_, a_copy + i * kc);
            a = a_copy;
        }
        if (b_copy) {
            for (std::int64_t k = 0; k < kc_; ++k) std::copy_n(b + k * b_step, nr, b_copy + k * nr);
            b = b_copy;
        }
        T acc[static_cast<std::size_t>(mr)][static_cast<std::size_t>(nr)] = {};
        if (resume) load_tile(acc, c, ldc, mr, nr);
        detail::gemm_micro_kernel<mr, nr>(kc_, a, std::int64_t{1}, kc, b, std::int64_t{nr}, std::int64_t{1}, acc);
        store_tile(acc, c, ldc, mr, nr, bias);
    }
    /// An edge tile: all mr rows (c is a whole tile).
    static void edge_tile(std::int64_t /*rows*/, std::int64_t /*cols*/, std::int64_t kc_, const T* a, const T* b,
                          T* c, std::int64_t ldc, bool resume) {
        tile(kc_, a, b, c, ldc, resume, nullptr, nullptr, nullptr);
    }
};

#if DEVTENSOR_HAS_X86_KERNELS

/// f.template operator()<R>() for the least even R >= rows, R <= Max: the micro-kernel
/// instance for a bottom edge tile of `rows` rows (all 14 rows of AVX-512's last tile for
/// the 4 that 256 rows leave: 256³ on 1 thread 316 -> 305 us).
template <int R, int Max, class F>
void with_even_rows(std::int64_t rows, F&& f) {
    if constexpr (R >= Max) f.template operator()<Max>();
    else if (rows <= R) f.template operator()<R>();
    else with_even_rows<R + 2, Max>(rows, f);
}

/// isa_kernels.inl's gemm_micro_kernel of `Isa`.
template <simd::isa Isa, int MR, std::int64_t LDA, int AheadEvery, int NV = 2, bool PackB = false,
          bool PackA = false, class T>
void micro_kernel(std::int64_t kc, const T* a, const T* b, T* c, std::int64_t ldc, bool resume, const T* bias,
                  prefetch_cursor* next, const T* next_c, std::int64_t b_step = 0, T* b_copy = nullptr,
                  std::int64_t a_step = 0, T* a_copy = nullptr) {
    if constexpr (Isa == simd::isa::avx512)
        avx512::gemm_micro_kernel<MR, LDA, AheadEvery, NV, PackB, PackA>(kc, a, b, c, ldc, resume, bias, next, next_c,
                                                                         b_step, b_copy, a_step, a_copy);
    else
        avx2::gemm_micro_kernel<MR, LDA, AheadEvery, NV, PackB, PackA>(kc, a, b, c, ldc, resume, bias, next, next_c,
                                                                       b_step, b_copy, a_step, a_copy);
}

/// The tiles of a vector kernel K (its mr, nr, kc and ahead_every) on `Isa`'s registers.
template <class K, class T, simd::isa Isa>
struct vector_tiles {
    static constexpr bool vector_isa = true;  // packing through AVX2 registers too

    /// C's tile = the chains over kc more steps (portable_kernel::tile's), touching ahead
    /// `next`'s lines (may be null) and the next tile's C (`next_c`, may be null).
    static void tile(std::int64_t kc_, const T* a, const T* b, T* c, std::int64_t ldc, bool resume, const T* bias,
                     prefetch_cursor* next, const T* next_c, std::int64_t b_step = 0, T* b_copy = nullptr,
                     std::int64_t a_step = 0, T* a_copy = nullptr) {
        // the instance for this tile's packing on the way, touching ahead or not
        const auto run = [&]<bool PackB, bool PackA>() {
            constexpr int mr = K::mr;
            constexpr std::int64_t ld = K::kc;
            if (next)
                micro_kernel<Isa, mr, ld, K::ahead_every, 2, PackB, PackA>(kc_, a, b, c, ldc, resume, bias, next,
                                                                           next_c, b_step, b_copy, a_step, a_copy);
            else
                micro_kernel<Isa, mr, ld, 0, 2, PackB, PackA>(kc_, a, b, c, ldc, resume, bias, next, next_c, b_step,
                                                              b_copy, a_step, a_copy);
        };
        if (a_copy) run.template operator()<false, true>();
        else if (b_copy) run.template operator()<true, false>();
        else run.template operator()<false, false>();
    }

    /// The first `rows` rows and `cols` columns of a tile, at least (an edge, computed
    /// aside: c is a whole tile).
    static void edge_tile(std::int64_t rows, std::int64_t cols, std::int64_t kc_, const T* a, const T* b, T* c,
                          std::int64_t ldc, bool resume) {
        with_even_rows<2, K::mr>(rows, [&]<int R>() {
            constexpr auto none = static_cast<const T*>(nullptr);
            if (cols <= K::nr / 2) micro_kernel<Isa, R, K::kc, 0, 1>(kc_, a, b, c, ldc, resume, none, nullptr, none);
            else micro_kernel<Isa, R, K::kc, 0>(kc_, a, b, c, ldc, resume, none, nullptr, none);
        });
    }
};

/// AVX2+FMA: 6 x 16 floats (6 x 8 doubles) in twelve ymm registers; blocks for Zen-class caches.
template <class T>
struct avx2_kernel : vector_tiles<avx2_kernel<T>, T, simd::isa::avx2> {
    static constexpr int mr = 6, nr = 2 * simd::vec<T, simd::isa::avx2>::lanes;
    static constexpr std::int64_t kc = 256, mc = 24 * mr, nc = 256 * nr;
    /// k steps (12 fmas each) per line touched ahead, at most: one every 24 FMA cycles.
    static constexpr int ahead_every = 4;
};

/// AVX-512F: 14 x 32 floats (14 x 16 doubles) in 28 of the 32 zmm registers.
template <class T>
struct avx512_kernel : vector_tiles<avx512_kernel<T>, T, simd::isa::avx512> {
    static constexpr int mr = 14, nr = 2 * simd::vec<T, simd::isa::avx512>::lanes;
    // Zen 4 (AVX-512 on 256-bit units, 1 MiB L2), 1 thread, best of 2: kc 768 and mc 140
    // against 384 and 280, 2048³ 100 -> 105 GF/s, 4096³ 102 -> 106, 1024³ 101 -> 103
    // (chains twice as long a block pass through C half as often); Sapphire Rapids unmeasured.
    static constexpr std::int64_t kc = 768, mc = 10 * mr, nc = 128 * nr;
    /// A line touched ahead every k step (28 fmas: as often in FMA cycles as AVX2's on Zen 4):
    /// its tiles are 4.7 times fewer, so a row block of them needs more lines each. Every
    /// fourth step, 64 x 65536 x 64 touched a sixth of its next packs: 71 -> 83-86 GFLOP/s.
    static constexpr int ahead_every = 1;
};

#endif

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cpu
