// The CPU's vector kernels, written once over simd::vec<T, DEVTENSOR_ISA> and
// compiled once per ISA: isa_kernels.hpp includes this file in namespace avx2
// and again in namespace avx512, with DEVTENSOR_ISA_FUNCTION giving every
// function that ISA's target attribute. Each function carries its ISA itself
// (rather than being inlined into one that does), so vector values never cross
// between code built for different ISAs, whatever the optimisation level.
// No include guard: included once per ISA, by isa_kernels.hpp only.

/// Copies steps [k0, k0 + a register) of MR rows, `step` apart from `src`, to `panel`'s
/// rows, LDA apart (fewer steps where kc ends first): gemm_micro_kernel's PackA copy.
template <int MR, std::int64_t LDA, class T>
DEVTENSOR_ISA_FUNCTION void copy_row_steps(std::int64_t k0, std::int64_t kc, const T* src, std::int64_t step,
                                           T* panel) {
    using V = simd::vec<T, DEVTENSOR_ISA>;
    if (k0 + V::lanes <= kc) {
        DEVTENSOR_UNROLL(16)
        for (int i = 0; i < MR; ++i) {
            V::store(panel + i * LDA + k0, V::load(src + i * step + k0));
            // the line four on, into L1 (1024³ on 1 thread, median of 5 alternated runs:
            // 0.990x oneDNN's speed, 0.981-0.984 into L2 or with no line touched ahead)
            const auto ahead = reinterpret_cast<std::uintptr_t>(src + i * step + k0) + 4 * 64;
            __builtin_prefetch(reinterpret_cast<const void*>(ahead), 0, 3);
        }
    } else {
        for (int i = 0; i < MR; ++i)
            for (std::int64_t q = k0; q < kc; ++q) panel[i * LDA + q] = src[i * step + q];
    }
}

/// The GEMM micro-kernel: an MR x NR tile of C (NR = two registers; only the first where
/// NV = 1, a right edge at most one register wide) from packed panels, each element one
/// fma chain over k < kc of a[i*LDA + k] * b[k*NR + j]
/// (the GEMM order of detail/gemm_order.hpp, vectorised across j): started
/// from zero, or continued from C's partial sums (`resume`, a later kc block);
/// then C = the chain, plus bias[j] when `bias` is given (the last kc block).
/// A's panel is MR rows LDA apart (a compile-time constant: the broadcasts take
/// it as their displacement, so no register holds a row's address). `AheadEvery` (0:
/// never): every that many k steps, a line of the next pack's source is touched (`next`,
/// within its budget).
/// `next_c` (may be null): the next micro-tile's C, touched first (to be written) so that
/// its lines are in cache when that tile reads its partial sums or stores.
/// `PackB`: b is B itself, its rows `b_step` apart, not yet packed: each row's two
/// registers, once loaded, are also stored to the panel at `b_copy` (the first row band
/// packs B's panels as it goes: no pass of its own over B).
/// `PackA`: a is A itself, its rows `a_step` apart: the kernel copies them to the panel at
/// `a_copy` a register of steps ahead of the steps that read them there (each row band's
/// first tile packs the band's panel: no pass of its own over A).
template <int MR, std::int64_t LDA, int AheadEvery, int NV = 2, bool PackB = false, bool PackA = false, class T>
DEVTENSOR_ISA_FUNCTION void gemm_micro_kernel(std::int64_t kc, const T* a, const T* b, T* c, std::int64_t ldc,
                                              bool resume, const T* bias, prefetch_cursor* next,
                                              const T* next_c, std::int64_t b_step = 0, T* b_copy = nullptr,
                                              std::int64_t a_step = 0, T* a_copy = nullptr) {
    static_assert(AheadEvery >= 0 && (NV == 1 || NV == 2) && (!PackB || NV == 2));
    using V = simd::vec<T, DEVTENSOR_ISA>;
    constexpr int lanes = V::lanes, nr = 2 * lanes;
    [[maybe_unused]] const T* const a_rows = a;
    if constexpr (PackA) {
        // tile() passes a panel whenever it asks for PackA; said here, since GCC 12 at -O3
        // otherwise follows the parameter's null default into the stores (-Warray-bounds)
        if (a_copy == nullptr) __builtin_unreachable();
        copy_row_steps<MR, LDA>(0, kc, a_rows, a_step, a_copy);
        a = a_copy;
    }
    prefetch_cursor ahead;  // a local copy, which the loop keeps in registers
    if constexpr (AheadEvery > 0) ahead = *next;
    typename V::type acc[static_cast<std::size_t>(MR)][static_cast<std::size_t>(NV)];
    if (next_c) {
        DEVTENSOR_UNROLL(16)
        for (int i = 0; i < MR; ++i) {  // a row's first and last element: two lines where it straddles
            __builtin_prefetch(next_c + i * ldc, 1, 3);
            __builtin_prefetch(next_c + i * ldc + nr - 1, 1, 3);
        }
    }
    DEVTENSOR_UNROLL(16)
    for (int i = 0; i < MR; ++i)
        DEVTENSOR_UNROLL(2)
        for (int v = 0; v < NV; ++v) acc[i][v] = resume ? V::load(c + i * ldc + v * lanes) : V::zero();
    DEVTENSOR_UNROLL(DEVTENSOR_GEMM_K_UNROLL)
    for (std::int64_t k = 0; k < kc; ++k) {
        if constexpr (PackA)
            if (k % lanes == 0 && k + lanes < kc) copy_row_steps<MR, LDA>(k + lanes, kc, a_rows, a_step, a_copy);
        typename V::type bv[static_cast<std::size_t>(NV)];
        DEVTENSOR_UNROLL(2)
        for (int v = 0; v < NV; ++v) bv[v] = V::load(b + v * lanes);
        if constexpr (PackB) {
            DEVTENSOR_UNROLL(2)
            for (int v = 0; v < NV; ++v) V::store(b_copy + v * lanes, bv[v]);
            b_copy += nr;
            // B's row 16 steps on, as the pass that packed it would have read it ahead
            // (512³ on 1 thread: 0.93 -> 0.975x oneDNN's speed; none: below the pass's); an
            // address as an integer, since it may lie past B's end
            const auto ahead_row = reinterpret_cast<std::uintptr_t>(b) +
                                   static_cast<std::uintptr_t>(16 * b_step) * sizeof(T);
            __builtin_prefetch(reinterpret_cast<const void*>(ahead_row), 0, 3);
            __builtin_prefetch(reinterpret_cast<const void*>(ahead_row + (nr - 1) * sizeof(T)), 0, 3);
        }
        DEVTENSOR_UNROLL(16)
        for (int i = 0; i < MR; ++i) {
            const auto ai = V::broadcast(a + i * LDA);
            DEVTENSOR_UNROLL(2)
            for (int v = 0; v < NV; ++v) acc[i][v] = V::fma(ai, bv[v], acc[i][v]);
        }
        a += 1;
        b += PackB ? b_step : nr;  // B's next row, or the panel's (its width, whatever NV)
        if constexpr (AheadEvery > 0)
            if (k % AheadEvery == 0) ahead.step();
    }
    if constexpr (AheadEvery > 0) *next = ahead;
    DEVTENSOR_UNROLL(16)
    for (int i = 0; i < MR; ++i)
        DEVTENSOR_UNROLL(2)
        for (int v = 0; v < NV; ++v)
            V::store(c + i * ldc + v * lanes, bias ? V::add(acc[i][v], V::load(bias + v * lanes)) : acc[i][v]);
}

/// Copies `runs` x `steps` pieces of W elements (a whole number of registers), run by run
/// through registers: step s of run r from src + r*ss + s*step to dst + r*ds + s*W. Packing
/// B's row-major panels a few of B's rows at a time (r: a panel, s: one of B's rows), so
/// that each panel's part is written along memory.
template <int W, class T>
DEVTENSOR_ISA_FUNCTION void copy_runs(std::int64_t runs, std::int64_t steps, const T* src, std::int64_t ss,
                                      std::int64_t step, T* dst, std::int64_t ds) {
    using V = simd::vec<T, DEVTENSOR_ISA>;
    static_assert(W % V::lanes == 0);
    for (std::int64_t r = 0; r < runs; ++r)
        for (std::int64_t s = 0; s < steps; ++s) {
            DEVTENSOR_UNROLL(8)
            for (int q = 0; q < W; q += V::lanes) V::store(dst + r * ds + s * W + q, V::load(src + r * ss + s * step + q));
        }
}

/// Registers of V holding the gemv_chains<T> chains of one dot product.
template <class T>
inline constexpr int dot_registers = detail::gemv_chains<T> / simd::vec<T, DEVTENSOR_ISA>::lanes;

/// One step of dot_block: elements [p, p + L) of MB rows of A and NB columns of B
/// into the chains (chain l of register r takes element p + r*lanes + l).
template <int MB, int NB, class T>
DEVTENSOR_ISA_FUNCTION void dot_step(
    const T* a, std::int64_t lda, const T* b, std::int64_t ldb,
    typename simd::vec<T, DEVTENSOR_ISA>::type (&acc)[static_cast<std::size_t>(MB)][static_cast<std::size_t>(NB)]
                                                     [static_cast<std::size_t>(dot_registers<T>)]) {
    using V = simd::vec<T, DEVTENSOR_ISA>;
    constexpr int R = dot_registers<T>;
    typename V::type bv[static_cast<std::size_t>(NB)][static_cast<std::size_t>(R)];
    DEVTENSOR_UNROLL(8)
    for (int j = 0; j < NB; ++j)
        DEVTENSOR_UNROLL(2)
        for (int r = 0; r < R; ++r) bv[j][r] = V::load(b + j * ldb + r * V::lanes);
    DEVTENSOR_UNROLL(8)
    for (int i = 0; i < MB; ++i)
        DEVTENSOR_UNROLL(2)
        for (int r = 0; r < R; ++r) {
            const auto av = V::load(a + i * lda + r * V::lanes);
            DEVTENSOR_UNROLL(8)
            for (int j = 0; j < NB; ++j) acc[i][j][r] = V::fma(av, bv[j][r], acc[i][j][r]);
        }
}

/// C[i][j] = sum over p < k of a[i*lda + p] * b[j*ldb + p] (+ bias[j]) for an
/// MB x NB block of dot products in the GEMV order of detail/gemm_order.hpp:
/// gemv_chains<T> interleaved chains per dot (one AVX-512 register, two AVX2
/// ones), the last partial step from zero-padded copies, the chains folded
/// pairwise, then the bias.
template <int MB, int NB, class T>
DEVTENSOR_ISA_FUNCTION void dot_block(std::int64_t k, const T* a, std::int64_t lda, const T* b,
                                      std::int64_t ldb, T* c, std::int64_t ldc, const T* bias) {
    using V = simd::vec<T, DEVTENSOR_ISA>;
    constexpr int L = detail::gemv_chains<T>, R = dot_registers<T>;
    typename V::type acc[static_cast<std::size_t>(MB)][static_cast<std::size_t>(NB)][static_cast<std::size_t>(R)];
    DEVTENSOR_UNROLL(8)
    for (int i = 0; i < MB; ++i)
        DEVTENSOR_UNROLL(8)
        for (int j = 0; j < NB; ++j)
            DEVTENSOR_UNROLL(2)
            for (int r = 0; r < R; ++r) acc[i][j][r] = V::zero();
    const std::int64_t whole = k / L * L;
    for (std::int64_t p = 0; p < whole; p += L) dot_step<MB, NB>(a + p, lda, b + p, ldb, acc);
    if (whole < k) {  // the tail, zero-padded to a whole step
        alignas(64) T at[static_cast<std::size_t>(MB)][static_cast<std::size_t>(L)] = {};
        alignas(64) T bt[static_cast<std::size_t>(NB)][static_cast<std::size_t>(L)] = {};
        for (int i = 0; i < MB; ++i)
            for (std::int64_t q = whole; q < k; ++q) at[i][q - whole] = a[i * lda + q];
        for (int j = 0; j < NB; ++j)
            for (std::int64_t q = whole; q < k; ++q) bt[j][q - whole] = b[j * ldb + q];
        dot_step<MB, NB>(&at[0][0], std::int64_t{L}, &bt[0][0], std::int64_t{L}, acc);
    }
    for (int i = 0; i < MB; ++i)
        for (int j = 0; j < NB; ++j) {
            alignas(64) T chains[static_cast<std::size_t>(L)];
            for (int r = 0; r < R; ++r) V::store(chains + r * V::lanes, acc[i][j][r]);
            c[i * ldc + j] = detail::plus_bias(detail::fold_chains(chains), bias, j);
        }
}

/// gemm_direct's elements (the GEMM order, one fma chain each, no packing) with this
/// ISA's fma instruction: the portable build's std::fma is a call into libm.
template <class T>
DEVTENSOR_ISA_FUNCTION void direct_elements(std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
                                            std::int64_t a_row, std::int64_t a_col, const T* b, std::int64_t b_row,
                                            std::int64_t b_col, T* c, std::int64_t ldc, const T* bias) {
    // Columns outermost: a skinny C (a linear layer of one output) pays the inner loop's
    // start once, not once an element. Where A's rows lie side by side (a_row == 1: an
    // [m, 1] input, or Aᵀ of a weight gradient), `lanes` rows at once: lane x is row i + x,
    // the same chain from +0 (fma by fma, then the bias) as gemm_order_dot's.
    using V = simd::vec<T, DEVTENSOR_ISA>;
    const std::int64_t vector_rows = a_row == 1 ? m / V::lanes * V::lanes : 0;
    for (std::int64_t j = 0; j < n; ++j) {
        const T* bj = b + j * b_col;
        for (std::int64_t i = 0; i < vector_rows; i += V::lanes) {
            auto sum = V::zero();
            for (std::int64_t p = 0; p < k; ++p)
                sum = V::fma(V::load(a + i + p * a_col), V::broadcast(bj + p * b_row), sum);
            if (bias) sum = V::add(sum, V::broadcast(bias + j));
            alignas(64) T lane[V::lanes];
            V::store(lane, sum);
            for (int x = 0; x < V::lanes; ++x) c[(i + x) * ldc + j] = lane[x];
        }
        for (std::int64_t i = vector_rows; i < m; ++i)
            c[i * ldc + j] = detail::plus_bias(detail::gemm_order_dot(k, a + i * a_row, a_col, bj, b_row), bias, j);
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

// ---- the GEMV order across the columns of C: B row-major (matmul's B) ----------------------
// The same sums as dot_block, vectorised across j instead of across k: lane x of a
// register is column j + x, and chain l of the GEMV order is its own register, taking
// rows p = l, l + L, ... of B for all columns at once. Each lane thus sums exactly
// detail::gemv_order_dot for its column (the same fma steps, the same zero-padded last
// step, the same pairwise fold, the bias last), and B is read a row at a time, as it
// lies: no transposing copy.

/// Columns of C one strip of NV registers covers.
template <class T, int NV>
inline constexpr int row_chain_columns = NV * simd::vec<T, DEVTENSOR_ISA>::lanes;

/// Chains [l0, l0 + LB) of MB rows of A over `steps` whole steps of L rows of B, then a
/// last step of `left` (< L) rows zero-padded to L (fma(0, 0, c) for the chains past
/// k), continued from `chains` (`resume`) or from zero and left there:
/// chains[(l * m_all + i) * NV + v] for row i of this block (a row of `a` at p0, lda
/// apart) and register v. Chain l0 + lb of step s reads its NV registers of B at
/// b + s * LB * W + lb * W (W = NV * lanes: a packed block).
template <int MB, int NV, int LB, class T>
DEVTENSOR_ISA_FUNCTION void row_chains(std::int64_t steps, std::int64_t left, int l0, const T* a, std::int64_t lda,
                                       const T* b, typename simd::vec<T, DEVTENSOR_ISA>::type* chains,
                                       std::int64_t m_all, bool resume) {
    using V = simd::vec<T, DEVTENSOR_ISA>;
    using reg = typename V::type;
    constexpr int L = detail::gemv_chains<T>, lanes = V::lanes, W = NV * lanes;
    reg acc[static_cast<std::size_t>(LB)][static_cast<std::size_t>(MB)][static_cast<std::size_t>(NV)];
    const auto at = [&](int lb, int i, int v) { return ((l0 + lb) * m_all + i) * NV + v; };
    DEVTENSOR_UNROLL(16)
    for (int lb = 0; lb < LB; ++lb)
        DEVTENSOR_UNROLL(16)
        for (int i = 0; i < MB; ++i)
            DEVTENSOR_UNROLL(4)
            for (int v = 0; v < NV; ++v) acc[lb][i][v] = resume ? chains[at(lb, i, v)] : V::zero();
    const T* ap = a + l0;
    for (std::int64_t s = 0; s < steps; ++s) {
        DEVTENSOR_UNROLL(16)
        for (int lb = 0; lb < LB; ++lb) {
            reg bv[static_cast<std::size_t>(NV)];
            DEVTENSOR_UNROLL(4)
            for (int v = 0; v < NV; ++v) bv[v] = V::load(b + lb * W + v * lanes);
            DEVTENSOR_UNROLL(16)
            for (int i = 0; i < MB; ++i) {
                const reg ai = V::broadcast(ap + i * lda + lb);
                DEVTENSOR_UNROLL(4)
                for (int v = 0; v < NV; ++v) acc[lb][i][v] = V::fma(ai, bv[v], acc[lb][i][v]);
            }
        }
        ap += L;
        b += LB * W;
    }
    if (left > 0) {  // the last step of k, zero-padded
        for (int lb = 0; lb < LB; ++lb) {
            const bool real = l0 + lb < left;
            for (int v = 0; v < NV; ++v) {
                const reg bv = real ? V::load(b + lb * W + v * lanes) : V::zero();
                for (int i = 0; i < MB; ++i)
                    acc[lb][i][v] = V::fma(real ? V::broadcast(ap + i * lda + lb) : V::zero(), bv, acc[lb][i][v]);
            }
        }
    }
    DEVTENSOR_UNROLL(16)
    for (int lb = 0; lb < LB; ++lb)
        DEVTENSOR_UNROLL(16)
        for (int i = 0; i < MB; ++i)
            DEVTENSOR_UNROLL(4)
            for (int v = 0; v < NV; ++v) chains[at(lb, i, v)] = acc[lb][i][v];
}

/// row_chains for `rows` <= MB rows: the instance of that many rows.
template <int MB, int NV, int LB, class T>
DEVTENSOR_ISA_FUNCTION void row_chains_upto(int rows, std::int64_t steps, std::int64_t left, int l0, const T* a,
                                            std::int64_t lda, const T* b,
                                            typename simd::vec<T, DEVTENSOR_ISA>::type* chains, std::int64_t m_all,
                                            bool resume) {
    if constexpr (MB > 1)
        if (rows < MB) return row_chains_upto<MB - 1, NV, LB>(rows, steps, left, l0, a, lda, b, chains, m_all, resume);
    row_chains<MB, NV, LB>(steps, left, l0, a, lda, b, chains, m_all, resume);
}

/// R rows' L chains of the register of columns at b (B row-major), into chains[r][l]:
/// G = 16 / R chains of the R rows at a time in registers, each vector of B read once
/// for the R rows (one load per FMA was the limit with a row at a time).
template <std::size_t R, class T, std::size_t L = static_cast<std::size_t>(detail::gemv_chains<T>)>
DEVTENSOR_ISA_FUNCTION void row_group_chains(std::int64_t k, const T* a, std::int64_t lda, const T* b,
                                             std::int64_t ldb, typename simd::vec<T, DEVTENSOR_ISA>::type (&chains)[R][L]) {
    using V = simd::vec<T, DEVTENSOR_ISA>;
    constexpr std::size_t G = std::min(L, 16 / R);
    static_assert(L % G == 0, "row_group_chains: whole groups of chains");
    const auto at = [](std::size_t i) { return static_cast<std::int64_t>(i); };
    const std::int64_t whole = k / at(L) * at(L);
    for (std::size_t l0 = 0; l0 < L; l0 += G) {
        typename V::type acc[R][G];
        DEVTENSOR_UNROLL(4)
        for (std::size_t r = 0; r < R; ++r)
            DEVTENSOR_UNROLL(16)
            for (std::size_t g = 0; g < G; ++g) acc[r][g] = V::zero();
        for (std::int64_t p0 = 0; p0 < whole; p0 += at(L))
            DEVTENSOR_UNROLL(16)
            for (std::size_t g = 0; g < G; ++g) {
                const std::int64_t p = p0 + at(l0 + g);
                const auto bv = V::load(b + p * ldb);
                DEVTENSOR_UNROLL(4)  // (-O2 unrolls neither loop by itself: acc would live on the stack)
                for (std::size_t r = 0; r < R; ++r) acc[r][g] = V::fma(V::broadcast(a + at(r) * lda + p), bv, acc[r][g]);
            }
        if (whole < k)  // the last step, zero-padded: fma(0, 0, c) past k
            DEVTENSOR_UNROLL(16)
            for (std::size_t g = 0; g < G; ++g) {
                const std::int64_t p = whole + at(l0 + g);
                DEVTENSOR_UNROLL(4)
                for (std::size_t r = 0; r < R; ++r)
                    acc[r][g] = p < k ? V::fma(V::broadcast(a + at(r) * lda + p), V::load(b + p * ldb), acc[r][g])
                                      : V::fma(V::zero(), V::zero(), acc[r][g]);
            }
        DEVTENSOR_UNROLL(4)
        for (std::size_t r = 0; r < R; ++r)
            DEVTENSOR_UNROLL(16)
            for (std::size_t g = 0; g < G; ++g) chains[r][l0 + g] = acc[r][g];
    }
}

/// Rows [i, i + R) of one register of columns (at column j): their chains, folded
/// pairwise (detail::fold_chains, a lane per column), plus the bias.
template <std::size_t R, class T>
DEVTENSOR_ISA_FUNCTION void gemv_row_group(std::int64_t i, std::int64_t j, std::int64_t k, const T* a, std::int64_t lda,
                                           const T* b, std::int64_t ldb, T* c, std::int64_t ldc, const T* bias) {
    using V = simd::vec<T, DEVTENSOR_ISA>;
    constexpr auto L = static_cast<std::size_t>(detail::gemv_chains<T>);
    typename V::type chains[R][L];
    row_group_chains<R>(k, a + i * lda, lda, b + j, ldb, chains);
    DEVTENSOR_UNROLL(4)
    for (std::size_t r = 0; r < R; ++r) {
        DEVTENSOR_UNROLL(4)
        for (std::size_t w = L / 2; w > 0; w /= 2)
            DEVTENSOR_UNROLL(8)
            for (std::size_t l = 0; l < w; ++l) chains[r][l] = V::add(chains[r][l], chains[r][l + w]);
        V::store(c + (i + static_cast<std::int64_t>(r)) * ldc + j, bias ? V::add(chains[r][0], V::load(bias + j)) : chains[r][0]);
    }
}

/// Columns [j0, j1) (whole registers) of C = A·B + bias in the GEMV order, B row-major,
/// for a short k (a layer's weight gradient on a small batch): four rows' chains of one
/// register of columns at a time, 16 of their chains in registers at once, B read where
/// it lies, from cache. (AVX-512's 32 registers hold them; AVX2's 16 would not.)
template <class T>
DEVTENSOR_ISA_FUNCTION void gemv_rows_in_registers(std::int64_t m, std::int64_t j0, std::int64_t j1, std::int64_t k,
                                                   const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T* c,
                                                   std::int64_t ldc, const T* bias) {
    using V = simd::vec<T, DEVTENSOR_ISA>;
    for (std::int64_t j = j0; j < j1; j += V::lanes) {
        std::int64_t i = 0;
        for (; i + 4 <= m; i += 4) gemv_row_group<4>(i, j, k, a, lda, b, ldb, c, ldc, bias);
        if (i + 2 <= m) {
            gemv_row_group<2>(i, j, k, a, lda, b, ldb, c, ldc, bias);
            i += 2;
        }
        if (i < m) gemv_row_group<1>(i, j, k, a, lda, b, ldb, c, ldc, bias);
    }
}

/// C[i][j] = sum over p < k of a[i*lda + p] * b[p*ldb + j] (+ bias[j]) for all m <= 16
/// rows and the `width` <= W columns of one strip (W = NV registers), in the GEMV order.
/// B's rows in blocks of KC (a multiple of L, so that each block starts at chain 0),
/// each block copied to `packed` (KC * W elements) chain group by chain group, so that
/// the rows a group reads lie one after the other (B's own rows, a power of two apart,
/// would meet in a few cache sets) and zero-padded past `width`; each group's rows read
/// by all row blocks (MB rows) while they are in L1. Then the chains folded pairwise, and
/// the bias added.
template <int MB, int NV, int LB, std::int64_t KC, class T>
DEVTENSOR_ISA_FUNCTION void gemv_strip(std::int64_t m, std::int64_t k, const T* a, std::int64_t lda, const T* b,
                                       std::int64_t ldb, T* c, std::int64_t ldc, const T* bias, std::int64_t width,
                                       T* packed) {
    using V = simd::vec<T, DEVTENSOR_ISA>;
    constexpr int L = detail::gemv_chains<T>, lanes = V::lanes, W = NV * lanes, groups = L / LB;
    static_assert(KC % L == 0 && L % LB == 0, "gemv_strip: blocks of whole steps, whole chain groups");
    typename V::type chains[static_cast<std::size_t>(L * detail::gemv_order_max_rows * NV)];
    for (std::int64_t p0 = 0; p0 < k; p0 += KC) {
        const std::int64_t rows = std::min(KC, k - p0), steps = rows / L, left = rows - steps * L;
        const std::int64_t all_steps = steps + (left > 0);
        // packed[((g * all_steps + s) * LB + lb) * W + x] = B[p0 + s*L + g*LB + lb][x]
        for (std::int64_t r = 0; r < rows; ++r) {
            // B's rows one by one from memory, each its own page: a prefetch 16 rows ahead
            // keeps more of them in flight than the out-of-order window does.
            if (r + 16 < rows)
                for (int line = 0; line < W * static_cast<int>(sizeof(T)); line += 64)
                    _mm_prefetch(reinterpret_cast<const char*>(b + (p0 + r + 16) * ldb) + line, _MM_HINT_T0);
            const std::int64_t s = r / L, l = r % L, g = l / LB, lb = l % LB;
            T* dst = packed + ((g * all_steps + s) * LB + lb) * W;
            const T* src = b + (p0 + r) * ldb;
            if (width == W) {
                DEVTENSOR_UNROLL(4)
                for (int v = 0; v < NV; ++v) V::store(dst + v * lanes, V::load(src + v * lanes));
            } else {
                for (std::int64_t x = 0; x < W; ++x) dst[x] = x < width ? src[x] : T{};
            }
        }
        const std::int64_t rows_per_group = all_steps * LB;
        for (int g = 0; g < groups; ++g)
            for (std::int64_t i = 0; i < m; i += MB)
                row_chains_upto<MB, NV, LB>(static_cast<int>(std::min<std::int64_t>(MB, m - i)), steps, left, g * LB,
                                            a + i * lda + p0, lda, packed + g * rows_per_group * W, chains + i * NV, m,
                                            p0 != 0);
    }
    for (std::int64_t i = 0; i < m; ++i)
        for (int v = 0; v < NV; ++v) {
            const auto chain = [&](int l) -> typename V::type& { return chains[(l * m + i) * NV + v]; };
            for (int w = L / 2; w > 0; w /= 2)  // detail::fold_chains, a lane per column
                for (int l = 0; l < w; ++l) chain(l) = V::add(chain(l), chain(l + w));
            const std::int64_t j = v * lanes;
            if (j + lanes <= width) {
                V::store(c + i * ldc + j, bias ? V::add(chain(0), V::load(bias + j)) : chain(0));
            } else if (j < width) {
                alignas(64) T sums[static_cast<std::size_t>(lanes)];
                V::store(sums, chain(0));
                for (std::int64_t x = j; x < width; ++x) c[i * ldc + x] = detail::plus_bias(sums[x - j], bias, x);
            }
        }
}

/// G groups of P::lanes Philox blocks from block first_block + q on, as floats
/// to out + 4 * q: the same rounds as detail::philox4x32_10_inplace, with the
/// 32 x 32 -> 64-bit products from the even and the odd lanes' multiplies. The
/// groups are independent, so their rounds overlap in the pipeline.
template <int G>
DEVTENSOR_ISA_FUNCTION void philox_groups(float* out, std::uint64_t seed, std::uint64_t first_block,
                                          std::int64_t q) {
    using P = philox_ops<DEVTENSOR_ISA>;
    using u32 = typename P::u32;
    const u32 m0 = P::set1(0xD2511F53u), m1 = P::set1(0xCD9E8D57u);
    constexpr auto groups = static_cast<std::size_t>(G);
    u32 x0[groups], x1[groups], x2[groups], x3[groups];
    DEVTENSOR_UNROLL(4)
    for (int g = 0; g < G; ++g) {
        // Lane l is block base + l: its low word, and its high word with the carry.
        const std::uint64_t base = first_block + static_cast<std::uint64_t>(q + g * P::lanes);
        const u32 low = P::add(P::set1(static_cast<std::uint32_t>(base)), P::iota());
        const u32 wrapped = P::less(low, P::set1(static_cast<std::uint32_t>(base)));  // all ones: carry 1
        x0[g] = low;
        x1[g] = P::sub(P::set1(static_cast<std::uint32_t>(base >> 32)), wrapped);
        x2[g] = x3[g] = P::set1(0);
    }
    std::uint32_t k0 = static_cast<std::uint32_t>(seed), k1 = static_cast<std::uint32_t>(seed >> 32);
    for (int round = 0; round < 10; ++round) {
        const u32 key0 = P::set1(k0), key1 = P::set1(k1);
        DEVTENSOR_UNROLL(4)
        for (int g = 0; g < G; ++g) {
            const u32 e0 = P::mul_even(x0[g], m0), o0 = P::mul_even(P::shr64(x0[g]), m0);
            const u32 e1 = P::mul_even(x2[g], m1), o1 = P::mul_even(P::shr64(x2[g]), m1);
            const u32 hi0 = P::odd_from(P::shr64(e0), o0), lo0 = P::odd_from(e0, P::shl64(o0));
            const u32 hi1 = P::odd_from(P::shr64(e1), o1), lo1 = P::odd_from(e1, P::shl64(o1));
            x0[g] = P::bit_xor(P::bit_xor(hi1, x1[g]), key0);
            x1[g] = lo1;
            x2[g] = P::bit_xor(P::bit_xor(hi0, x3[g]), key1);
            x3[g] = lo0;
        }
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    DEVTENSOR_UNROLL(4)
    for (int g = 0; g < G; ++g)
        P::store_blocks(out + 4 * (q + g * P::lanes), P::to_unit_float(x0[g]), P::to_unit_float(x1[g]),
                        P::to_unit_float(x2[g]), P::to_unit_float(x3[g]));
}

/// Blocks [q0, q1) of a uniform float fill; q1 - q0 is a multiple of the lane count.
DEVTENSOR_ISA_FUNCTION void uniform_float_blocks(float* out, std::uint64_t seed, std::uint64_t first_block,
                                                 std::int64_t q0, std::int64_t q1) {
    constexpr int lanes = philox_ops<DEVTENSOR_ISA>::lanes, groups = 2;
    std::int64_t q = q0;
    for (; q + groups * lanes <= q1; q += groups * lanes) philox_groups<groups>(out, seed, first_block, q);
    for (; q < q1; q += lanes) philox_groups<1>(out, seed, first_block, q);
}
