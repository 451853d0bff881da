// The ceilings devtensor is measured against: the simplest loops that move the
// same bytes (plain and non-temporal stores, std::fill) or issue FMAs as fast as
// the core can (the FLOP peak), and Random123's Philox in a plain scalar loop.
#include "bench_common.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include <immintrin.h>  // streaming stores and FMAs, each width chosen at run time
#if defined(_OPENMP)
#  include <omp.h>
#endif
#if DEVTENSOR_BENCH_HAVE_RANDOM123
#  include <Random123/philox.h>
#endif

namespace bench {
namespace {

/// Floats a thread gets at least: below that, waking a thread costs more than it saves.
constexpr std::int64_t min_chunk = 1 << 16;

/// f(begin, end) on up to threads() threads; chunk edges are multiples of 16
/// floats (a cache line), so no two threads write one line.
template <class F>
void for_chunks(std::int64_t n, F&& f) {
#if defined(_OPENMP)
    const auto team = static_cast<int>(std::clamp<std::int64_t>(n / min_chunk, 1, threads()));
#  pragma omp parallel num_threads(team)
    {
        const std::int64_t k = omp_get_num_threads(), i = omp_get_thread_num();
        const auto edge = [&](std::int64_t j) { return j == k ? n : n * j / k / 16 * 16; };
        f(edge(i), edge(i + 1));
    }
#else
    f(std::int64_t{0}, n);
#endif
}

// ---- non-temporal stores (what memset does for large sizes: no read of the line
// before it is written), as wide as the CPU has: 64-byte stores fill a whole line,
// and wider loads matter for add (~20% on AVX-512 hardware). Each kernel takes an
// aligned destination and a multiple of its width; stream_* do the ragged ends.

__attribute__((target("avx512f"))) void fill_avx512(float* p, std::int64_t n, float v) {
    const __m512 x = _mm512_set1_ps(v);
    for (std::int64_t i = 0; i < n; i += 16) _mm512_stream_ps(p + i, x);
}
__attribute__((target("avx"))) void fill_avx(float* p, std::int64_t n, float v) {
    const __m256 x = _mm256_set1_ps(v);
    for (std::int64_t i = 0; i < n; i += 8) _mm256_stream_ps(p + i, x);
}
void fill_sse(float* p, std::int64_t n, float v) {
    const __m128 x = _mm_set1_ps(v);
    for (std::int64_t i = 0; i < n; i += 4) _mm_stream_ps(p + i, x);
}

__attribute__((target("avx512f"))) void add_avx512(const float* a, const float* b, float* c, std::int64_t n) {
    for (std::int64_t i = 0; i < n; i += 16)
        _mm512_stream_ps(c + i, _mm512_add_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)));
}
__attribute__((target("avx"))) void add_avx(const float* a, const float* b, float* c, std::int64_t n) {
    for (std::int64_t i = 0; i < n; i += 8)
        _mm256_stream_ps(c + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
}
void add_sse(const float* a, const float* b, float* c, std::int64_t n) {
    for (std::int64_t i = 0; i < n; i += 4) _mm_stream_ps(c + i, _mm_add_ps(_mm_loadu_ps(a + i), _mm_loadu_ps(b + i)));
}

struct stream_kernels {
    std::int64_t width;  ///< floats a store writes
    void (*fill)(float*, std::int64_t, float);
    void (*add)(const float*, const float*, float*, std::int64_t);
};

/// The widest the CPU running the binary has, chosen once.
const stream_kernels& best_stream_kernels() {
    static const stream_kernels k = [] {
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512f")) return stream_kernels{16, fill_avx512, add_avx512};
        if (__builtin_cpu_supports("avx")) return stream_kernels{8, fill_avx, add_avx};
        return stream_kernels{4, fill_sse, add_sse};
    }();
    return k;
}

/// Calls scalar(i) up to the first index where dst is aligned for the kernel's
/// stores, vector(i, count) over whole vectors, then scalar(i) for the rest.
template <class Scalar, class Vector>
void split_for_stream(const float* dst, std::int64_t begin, std::int64_t end, Scalar scalar, Vector vector) {
    const std::int64_t width = best_stream_kernels().width;
    std::int64_t i = begin;
    for (; i < end && reinterpret_cast<std::uintptr_t>(dst + i) % (4 * width); ++i) scalar(i);
    const std::int64_t body = (end - i) / width * width;
    vector(i, body);
    for (i += body; i < end; ++i) scalar(i);
    _mm_sfence();  // streaming stores are weakly ordered
}

void stream_fill(float* p, std::int64_t begin, std::int64_t end, float v) {
    split_for_stream(
        p, begin, end, [&](std::int64_t i) { p[i] = v; },
        [&](std::int64_t i, std::int64_t n) { best_stream_kernels().fill(p + i, n, v); });
}

void stream_add(const float* a, const float* b, float* c, std::int64_t begin, std::int64_t end) {
    split_for_stream(
        c, begin, end, [&](std::int64_t i) { c[i] = a[i] + b[i]; },
        [&](std::int64_t i, std::int64_t n) { best_stream_kernels().add(a + i, b + i, c + i, n); });
}

struct add_buffers {
    std::vector<float> a, b, c;
    explicit add_buffers(std::int64_t n) : a(n, 1.f), b(n, 2.f), c(n) {}  // every page touched
};

bool is_fill(op kind) { return kind == op::ones || kind == op::zeros || kind == op::full; }

// ---- FMA peak: acc = acc * m + a on independent chains, so the FMA ports, not the
// 4-cycle latency, set the pace. Chains differ in their start, so none can be merged.
constexpr int avx512_chains = 16;  // of 32 zmm registers
constexpr int avx2_chains = 12;    // of 16 ymm registers, leaving room for m and a
constexpr int sse_chains = 8;      // no FMA: a multiply and an add, 2 FLOPs as well

__attribute__((target("avx512f"))) float fma_loop_avx512(std::int64_t trips, float seed) {
    __m512 acc[avx512_chains];
    for (int j = 0; j < avx512_chains; ++j) acc[j] = _mm512_set1_ps(seed * static_cast<float>(j + 1));
    const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-6f);
    for (std::int64_t t = 0; t < trips; ++t) {
#pragma GCC unroll 16
        for (int j = 0; j < avx512_chains; ++j) acc[j] = _mm512_fmadd_ps(acc[j], m, a);
    }
    for (int j = 1; j < avx512_chains; ++j) acc[0] = _mm512_add_ps(acc[0], acc[j]);
    alignas(64) float lanes[16];  // not _mm512_reduce_add_ps: GCC 12 warns inside it
    _mm512_store_ps(lanes, acc[0]);
    return lanes[0];
}

__attribute__((target("avx2,fma"))) float fma_loop_avx2(std::int64_t trips, float seed) {
    __m256 acc[avx2_chains];
    for (int j = 0; j < avx2_chains; ++j) acc[j] = _mm256_set1_ps(seed * static_cast<float>(j + 1));
    const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-6f);
    for (std::int64_t t = 0; t < trips; ++t) {
#pragma GCC unroll 12
        for (int j = 0; j < avx2_chains; ++j) acc[j] = _mm256_fmadd_ps(acc[j], m, a);
    }
    for (int j = 1; j < avx2_chains; ++j) acc[0] = _mm256_add_ps(acc[0], acc[j]);
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, acc[0]);
    return lanes[0];
}

float fma_loop_sse(std::int64_t trips, float seed) {
    __m128 acc[sse_chains];
    for (int j = 0; j < sse_chains; ++j) acc[j] = _mm_set1_ps(seed * static_cast<float>(j + 1));
    const __m128 m = _mm_set1_ps(0.999999f), a = _mm_set1_ps(1e-6f);
    for (std::int64_t t = 0; t < trips; ++t) {
#pragma GCC unroll 8
        for (int j = 0; j < sse_chains; ++j) acc[j] = _mm_add_ps(_mm_mul_ps(acc[j], m), a);
    }
    for (int j = 1; j < sse_chains; ++j) acc[0] = _mm_add_ps(acc[0], acc[j]);
    return _mm_cvtss_f32(acc[0]);
}

struct fma_kernel {
    const char* isa;
    float (*loop)(std::int64_t, float);
    int flops_per_trip;  ///< chains × lanes × 2
};

/// The widest the CPU running the binary has, chosen once.
const fma_kernel& best_fma_kernel() {
    static const fma_kernel k = [] {
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512f")) return fma_kernel{"avx512f", fma_loop_avx512, avx512_chains * 16 * 2};
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
            return fma_kernel{"avx2+fma", fma_loop_avx2, avx2_chains * 8 * 2};
        return fma_kernel{"sse2", fma_loop_sse, sse_chains * 4 * 2};
    }();
    return k;
}

int ceiling_threads() {
#if defined(_OPENMP)
    return threads();
#else
    return 1;
#endif
}

}  // namespace

workload plain_loop_workload(const problem& p) {
    if (p.kind != op::add) return {};
    auto s = std::make_shared<add_buffers>(p.m);
    return [s, n = p.m] {
        const float *a = s->a.data(), *b = s->b.data();
        float* c = s->c.data();
        for_chunks(n, [&](std::int64_t begin, std::int64_t end) {
            for (std::int64_t i = begin; i < end; ++i) c[i] = a[i] + b[i];
        });
    };
}

workload nontemporal_workload(const problem& p) {
    if (p.kind == op::add) {
        auto s = std::make_shared<add_buffers>(p.m);
        return [s, n = p.m] {
            for_chunks(n, [&](std::int64_t begin, std::int64_t end) {
                stream_add(s->a.data(), s->b.data(), s->c.data(), begin, end);
            });
        };
    }
    if (!is_fill(p.kind)) return {};
    auto buf = std::make_shared<std::vector<float>>(p.m);
    return [buf, n = p.m, v = value_of(p.kind)] {
        for_chunks(n, [&](std::int64_t begin, std::int64_t end) { stream_fill(buf->data(), begin, end, v); });
    };
}

workload std_fill_workload(const problem& p) {
    if (!is_fill(p.kind)) return {};
    auto buf = std::make_shared<std::vector<float>>(p.m);
    return [buf, n = p.m, v = value_of(p.kind)] {
        for_chunks(n, [&](std::int64_t begin, std::int64_t end) {
            std::fill(buf->data() + begin, buf->data() + end, v);
        });
    };
}

workload fma_peak_workload(const problem& p) {
    if (p.kind != op::fma_peak) return {};
    return [trips = p.m] {
        float sink = 0;
#if defined(_OPENMP)
#  pragma omp parallel num_threads(threads()) reduction(+ : sink)
#endif
        sink += best_fma_kernel().loop(trips, 1e-3f);
        volatile float keep = sink;  // the result is used, so the loop stays
        (void)keep;
    };
}

double fma_peak_flops(const problem& p) {
    return static_cast<double>(p.m) * best_fma_kernel().flops_per_trip * ceiling_threads();
}

std::string fma_isa() { return best_fma_kernel().isa; }

#if DEVTENSOR_BENCH_HAVE_RANDOM123
workload random123_workload(const problem& p) {
    if (p.kind != op::rand) return {};
    auto buf = std::make_shared<std::vector<float>>(p.m);
    return [buf, n = p.m] {
        float* out = buf->data();
        for_chunks(n, [&](std::int64_t begin, std::int64_t end) {
            // one Philox block per 4 floats, counter = index of the block: chunks start on multiples of 4
            r123::Philox4x32 philox;
            const r123::Philox4x32::key_type key = {{0x5eedu, 0u}};
            for (std::int64_t i = begin; i < end; i += 4) {
                const auto block = static_cast<std::uint64_t>(i / 4);
                const r123::Philox4x32::ctr_type ctr = {
                    {static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32), 0u, 0u}};
                const auto r = philox(ctr, key);
                for (std::int64_t j = 0; j < 4 && i + j < end; ++j)
                    out[i + j] = static_cast<float>(r.v[j] >> 8) * 0x1p-24f;  // 24 bits → [0, 1)
            }
        });
    };
}
#endif

}  // namespace bench
