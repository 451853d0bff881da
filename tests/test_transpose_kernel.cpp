// backend/cpu/transpose.hpp: the blocked transpose against a plain loop, for every
// element size, ragged and strided shapes, misaligned pointers and thread counts.
#include "test_support.hpp"

#include <devtensor/backend/cpu/transpose.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

namespace {

/// n elements of T from a 64-byte edge; unlike std::vector<bool>, bool elements are bools with a data().
template <class T>
struct array {
    struct free_aligned {
        void operator()(T* q) const { ::operator delete[](q, std::align_val_t{64}); }
    };
    std::unique_ptr<T[], free_aligned> p;
    std::size_t n;
    array(std::size_t size, T fill)
        : p(static_cast<T*>(::operator new[](size * sizeof(T), std::align_val_t{64}))), n(size) {
        std::uninitialized_fill_n(p.get(), n, fill);
    }
    T* data() { return p.get(); }
    T& operator[](std::size_t k) { return p[k]; }
    friend bool operator==(const array& a, const array& b) {
        return a.n == b.n && std::equal(a.p.get(), a.p.get() + a.n, b.p.get());
    }
};

/// A distinct value for each index (bool: a pattern that is not periodic in 2, 4 or 8).
template <class T>
T value_at(std::int64_t k) {
    if constexpr (std::is_same_v<T, bool>) return (k * 7 + k / 3) % 5 < 2;
    else if constexpr (std::is_floating_point_v<T>) return static_cast<T>(k) * T(0.5) - T(3);
    else return static_cast<T>(k * 2654435761LL);
}

/// transpose (threaded) and transpose_block (one call, with and without streaming
/// stores) of a rows x cols destination from a source sub-matrix, compared with a plain
/// loop. Both matrices sit inside larger buffers: strides wider than the rows, offsets
/// of `offset` elements (1: pointers off their vectors' alignment), and a guard band
/// around the destination that must stay untouched.
#if DEVTENSOR_HAS_X86_KERNELS
/// Each ISA the CPU has, from plain SSE2 up (so every kernel is tested on the widest machine).
std::vector<dt::backend_cpu::simd::isa> isas() {
    using dt::backend_cpu::simd::isa;
    std::vector<isa> all;
    for (const isa i : {isa::portable, isa::avx2, isa::avx512})
        if (i <= dt::backend_cpu::simd::best_isa()) all.push_back(i);
    return all;
}
#endif

template <class T>
void check_transpose(std::int64_t rows, std::int64_t cols, std::int64_t pad, std::int64_t offset) {
    const std::int64_t ss = rows + pad, ds = cols + pad;  // source: cols x rows
    array<T> src(static_cast<std::size_t>(offset + cols * ss + 1), T{});
    for (std::size_t k = 0; k < src.n; ++k) src[k] = value_at<T>(static_cast<std::int64_t>(k));
    const T guard = value_at<T>(-1);
    const auto dst_size = static_cast<std::size_t>(offset + rows * ds + 1);
    array<T> expected(dst_size, guard);
    for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j)
            expected[static_cast<std::size_t>(offset + i * ds + j)] =
                src[static_cast<std::size_t>(offset + j * ss + i)];

    const T* s = src.data() + offset;
    {
        array<T> dst(dst_size, guard);
        dt::backend_cpu::transpose(s, ss, dst.data() + offset, ds, rows, cols);
        CHECK(dst == expected);
    }
    for (const bool stream : {false, true}) {
        CAPTURE(stream);
        array<T> dst(dst_size, guard);
        dt::backend_cpu::transpose_block(s, ss, dst.data() + offset, ds, rows, cols, stream);
        dt::backend_cpu::simd::stream_fence();
        CHECK(dst == expected);
    }
#if DEVTENSOR_HAS_X86_KERNELS
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
        for (const auto isa : isas())
            for (const bool stream : {false, true}) {
                CAPTURE(static_cast<int>(isa));
                CAPTURE(stream);
                array<T> dst(dst_size, guard);
                dt::backend_cpu::transpose_detail::vector_transpose(s, ss, dst.data() + offset, ds, rows, cols, stream,
                                                                    isa);
                dt::backend_cpu::simd::stream_fence();
                CHECK(dst == expected);
            }
#endif
}

struct shape {
    std::int64_t rows, cols;
};

// with pad 0, 15 or 5, {64, 64}, {33, 48}, {100, 257} and {1000, 1003} have destination rows on
// 64-byte edges: the 16 x 16 register blocks of streamed floats, with ragged edges
constexpr shape shapes[] = {{0, 0},   {0, 5},   {5, 0},   {1, 1},    {1, 77},     {77, 1},
                            {3, 5},   {17, 33}, {64, 64}, {33, 48},  {100, 257}, {1000, 1003}};

}  // namespace

TEST_CASE_TEMPLATE("transpose_block and transpose match a plain loop", T, float, double, std::int8_t,
                   std::int16_t, std::int32_t, std::int64_t, bool) {
    const int saved = dt::get_num_threads();
    for (const int threads : {1, 2, 7}) {
        dt::set_num_threads(threads);
        for (const shape sh : shapes)
            for (const std::int64_t pad : {0, 5, 16, 15})
                for (const std::int64_t offset : {0, 1}) {
                    CAPTURE(threads);
                    CAPTURE(sh.rows);
                    CAPTURE(sh.cols);
                    CAPTURE(pad);
                    CAPTURE(offset);
                    check_transpose<T>(sh.rows, sh.cols, pad, offset);
                }
    }
    dt::set_num_threads(saved);
}

TEST_CASE_TEMPLATE("transpose of large outputs streams and misses nothing", T, float, double, std::int32_t) {
    // past streaming_bytes: the non-temporal path of transpose, on 1 and 2 threads,
    // and a 1 x N / N x 1 pair split into bands of columns
    const int saved = dt::get_num_threads();
    for (const int threads : {1, 2}) {
        dt::set_num_threads(threads);
        CAPTURE(threads);
        check_transpose<T>(1531, 1450, 5, 1);
        check_transpose<T>(1, 3'000'001, 0, 0);
        check_transpose<T>(3'000'001, 1, 0, 1);
    }
    dt::set_num_threads(saved);
}
