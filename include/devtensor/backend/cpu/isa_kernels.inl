// The CPU's vector kernels, written once over simd::vec<T, DEVTENSOR_ISA> and
// compiled once per ISA: isa_kernels.hpp includes this file in namespace avx2
// and again in namespace avx512, with DEVTENSOR_ISA_FUNCTION giving every
// function that ISA's target attribute. Each function carries its ISA itself
// (rather than being inlined into one that does), so vector values never cross
// between code built for different ISAs, whatever the optimisation level.
// No include guard: included once per ISA, by isa_kernels.hpp only.

/// The GEMM micro-kernel: an MR x NR tile of C (NR = two registers) from packed
/// panels, sum over k < kc of a[k*MR + i] * b[k*NR + j]; then C += that
/// (`accumulate`, a later kc block) or C = that + bias[j].
template <int MR, class T>
DEVTENSOR_ISA_FUNCTION void gemm_tile(std::int64_t kc, const T* a, const T* b, T* c, std::int64_t ldc,
                                      bool accumulate, const T* bias) {
    using V = simd::vec<T, DEVTENSOR_ISA>;
    constexpr int lanes = V::lanes, nr = 2 * lanes;
    typename V::type acc[MR][2];
    DEVTENSOR_UNROLL(16)
    for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = V::zero();
    DEVTENSOR_UNROLL(2)
    for (std::int64_t k = 0; k < kc; ++k) {
        const auto b0 = V::load(b), b1 = V::load(b + lanes);
        DEVTENSOR_UNROLL(16)
        for (int i = 0; i < MR; ++i) {
            const auto ai = V::broadcast(a + i);
            acc[i][0] = V::fma(ai, b0, acc[i][0]);
            acc[i][1] = V::fma(ai, b1, acc[i][1]);
        }
        a += MR;
        b += nr;
    }
    const bool add_bias = !accumulate && bias != nullptr;
    const auto bias0 = add_bias ? V::load(bias) : V::zero();
    const auto bias1 = add_bias ? V::load(bias + lanes) : V::zero();
    DEVTENSOR_UNROLL(16)
    for (int i = 0; i < MR; ++i) {
        T* row = c + i * ldc;
        V::store(row, V::add(acc[i][0], accumulate ? V::load(row) : bias0));
        V::store(row + lanes, V::add(acc[i][1], accumulate ? V::load(row + lanes) : bias1));
    }
}

/// C[i][j] = sum over p < k of a[i*lda + p] * b[j*ldb + p] (+ bias[j]) for an
/// MB x NB block of dot products, MB*NB registers summed across lanes at the end.
template <int MB, int NB, class T>
DEVTENSOR_ISA_FUNCTION void dot_block(std::int64_t k, const T* a, std::int64_t lda, const T* b,
                                      std::int64_t ldb, T* c, std::int64_t ldc, const T* bias) {
    using V = simd::vec<T, DEVTENSOR_ISA>;
    typename V::type acc[MB][NB];
    DEVTENSOR_UNROLL(8)
    for (int i = 0; i < MB; ++i)
        DEVTENSOR_UNROLL(8)
        for (int j = 0; j < NB; ++j) acc[i][j] = V::zero();
    std::int64_t p = 0;
    for (; p + V::lanes <= k; p += V::lanes) {
        typename V::type bv[NB];
        DEVTENSOR_UNROLL(8)
        for (int j = 0; j < NB; ++j) bv[j] = V::load(b + j * ldb + p);
        DEVTENSOR_UNROLL(8)
        for (int i = 0; i < MB; ++i) {
            const auto av = V::load(a + i * lda + p);
            DEVTENSOR_UNROLL(8)
            for (int j = 0; j < NB; ++j) acc[i][j] = V::fma(av, bv[j], acc[i][j]);
        }
    }
    for (int i = 0; i < MB; ++i)
        for (int j = 0; j < NB; ++j) {
            T s = V::sum(acc[i][j]);
            for (std::int64_t q = p; q < k; ++q) s += a[i * lda + q] * b[j * ldb + q];
            c[i * ldc + j] = bias ? static_cast<T>(s + bias[j]) : s;
        }
}

/// Columns [j, j + W) of C for all m rows: MB rows at a time, one at a time at the edge.
template <int MB, int W, class T>
DEVTENSOR_ISA_FUNCTION void dot_rows(std::int64_t m, std::int64_t j, std::int64_t k, const T* a,
                                     std::int64_t lda, const T* b, std::int64_t ldb, T* c,
                                     std::int64_t ldc, const T* bias) {
    const T* bj = b + j * ldb;
    const T* bias_j = bias ? bias + j : nullptr;
    std::int64_t i = 0;
    for (; i + MB <= m; i += MB) dot_block<MB, W>(k, a + i * lda, lda, bj, ldb, c + i * ldc + j, ldc, bias_j);
    for (; i < m; ++i) dot_block<1, W>(k, a + i * lda, lda, bj, ldb, c + i * ldc + j, ldc, bias_j);
}

/// Columns [j0, j1) of C: NB columns at a time, one at a time at the edge.
template <int MB, int NB, class T>
DEVTENSOR_ISA_FUNCTION void dot_columns(std::int64_t m, std::int64_t j0, std::int64_t j1, std::int64_t k,
                                        const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T* c,
                                        std::int64_t ldc, const T* bias) {
    std::int64_t j = j0;
    for (; j + NB <= j1; j += NB) dot_rows<MB, NB>(m, j, k, a, lda, b, ldb, c, ldc, bias);
    for (; j < j1; ++j) dot_rows<MB, 1>(m, j, k, a, lda, b, ldb, c, ldc, bias);
}

/// Blocks [q0, q1) of a uniform float fill, P::lanes blocks a step: the same
/// rounds as detail::philox4x32_10_inplace, with the 32 x 32 -> 64-bit products
/// from the even and the odd lanes' multiplies. q1 - q0 is a multiple of P::lanes.
DEVTENSOR_ISA_FUNCTION void uniform_float_blocks(float* out, std::uint64_t seed, std::uint64_t first_block,
                                                 std::int64_t q0, std::int64_t q1) {
    using P = philox_ops<DEVTENSOR_ISA>;
    using u32 = typename P::u32;
    const u32 m0 = P::set1(0xD2511F53u), m1 = P::set1(0xCD9E8D57u);
    const u32 zero = P::set1(0);
    for (std::int64_t q = q0; q < q1; q += P::lanes) {
        // Lane l is block first_block + q + l: its low word, and its high word with the carry.
        const std::uint64_t base = first_block + static_cast<std::uint64_t>(q);
        const u32 low = P::add(P::set1(static_cast<std::uint32_t>(base)), P::iota());
        const u32 wrapped = P::less(low, P::set1(static_cast<std::uint32_t>(base)));  // all ones: carry 1
        u32 x0 = low, x1 = P::sub(P::set1(static_cast<std::uint32_t>(base >> 32)), wrapped);
        u32 x2 = zero, x3 = zero;
        std::uint32_t k0 = static_cast<std::uint32_t>(seed), k1 = static_cast<std::uint32_t>(seed >> 32);
        for (int round = 0; round < 10; ++round) {
            const u32 e0 = P::mul_even(x0, m0), o0 = P::mul_even(P::shr64(x0), m0);
            const u32 e1 = P::mul_even(x2, m1), o1 = P::mul_even(P::shr64(x2), m1);
            const u32 hi0 = P::odd_from(P::shr64(e0), o0), lo0 = P::odd_from(e0, P::shl64(o0));
            const u32 hi1 = P::odd_from(P::shr64(e1), o1), lo1 = P::odd_from(e1, P::shl64(o1));
            x0 = P::bit_xor(P::bit_xor(hi1, x1), P::set1(k0));
            x1 = lo1;
            x2 = P::bit_xor(P::bit_xor(hi0, x3), P::set1(k1));
            x3 = lo0;
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        P::store_blocks(out + 4 * q, P::to_unit_float(x0), P::to_unit_float(x1), P::to_unit_float(x2),
                        P::to_unit_float(x3));
    }
}
