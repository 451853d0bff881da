// The summation order of every element of C = A·B (+ bias), the one that the
// CPU paths (portable, AVX2, AVX-512, any thread count) and the CUDA kernels
// all follow, so that their results are bit-identical (DESIGN §15). It depends
// on the shape (m, n, k) and the element type alone:
//
//  - GEMM order (m > gemv_order_max_rows): one fma chain from zero over all of
//    k in order, c = fma(a[p], b[p], c) for p = 0, 1, ..., k-1; then the bias
//    added once. (One segment: the CPU's cache blocks over k continue the chain
//    through C, and a CUDA thread keeps it in registers.)
//  - GEMV order (m <= gemv_order_max_rows, a small batch): L = gemv_chains<T>
//    interleaved fma chains from zero (16 for float, 8 for double: one 64-byte
//    line), chain l taking p = l, l + L, l + 2L, ... with k padded by zeros to a
//    multiple of L (a padded step is fma(0, 0, c)); the chains folded pairwise,
//    c[i] = c[i] + c[i + w] for w = L/2, L/4, ..., 1; then the bias added once.
//    The CPU keeps the L chains in one or two vector registers, the CUDA kernel
//    in the four lanes of a quad (a 16-byte pack each).
//
// The functions below are that order written out for one element: the
// reference the tests compare with and the portable CPU path.
#pragma once

#include <devtensor/config.hpp>        // DEVTENSOR_HOST_DEVICE
#include <devtensor/detail/arith.hpp>  // fma, add

#include <cstddef>
#include <cstdint>

namespace devtensor::detail {

DEVTENSOR_BEGIN_TU_NAMESPACE

/// Rows of C up to which a product sums in the GEMV order.
inline constexpr std::int64_t gemv_order_max_rows = 16;

/// Whether C[m x n] = A[m x k]·B[k x n] sums in the GEMV order (else the GEMM order).
DEVTENSOR_HOST_DEVICE constexpr bool uses_gemv_order(std::int64_t m, std::int64_t /*n*/, std::int64_t /*k*/) {
    return m <= gemv_order_max_rows;
}

/// The interleaved chains of the GEMV order: one 64-byte line of T.
template <class T>
inline constexpr int gemv_chains = 64 / static_cast<int>(sizeof(T));

/// Pairwise fold of L chains: c[i] + c[i + w] for w = L/2, ..., 1 (the lower chain first).
template <std::size_t L, class T>
DEVTENSOR_HOST_DEVICE inline T fold_chains(T (&c)[L]) {
    static_assert(L > 0 && (L & (L - 1)) == 0, "fold_chains: a power of two of chains");
    for (std::size_t w = L / 2; w > 0; w /= 2)
        for (std::size_t i = 0; i < w; ++i) c[i] = detail::add(c[i], c[i + w]);
    return c[0];
}

/// An element's sum plus its bias, if any: the bias is always added last.
template <class T>
DEVTENSOR_HOST_DEVICE inline T plus_bias(T sum, const T* bias, std::int64_t j) {
    return bias ? detail::add(sum, bias[j]) : sum;
}

/// The GEMM order of one element: sum over p < k of a[p*sa] * b[p*sb], one fma chain.
template <class T>
DEVTENSOR_HOST_DEVICE inline T gemm_order_dot(std::int64_t k, const T* a, std::int64_t sa, const T* b,
                                              std::int64_t sb) {
    T c{};
    for (std::int64_t p = 0; p < k; ++p) c = detail::fma(a[p * sa], b[p * sb], c);
    return c;
}

/// The GEMV order of one element: the same sum as gemv_chains<T> interleaved chains, folded.
template <class T>
DEVTENSOR_HOST_DEVICE inline T gemv_order_dot(std::int64_t k, const T* a, std::int64_t sa, const T* b,
                                              std::int64_t sb) {
    constexpr int L = gemv_chains<T>;
    T c[static_cast<std::size_t>(L)] = {};
    for (std::int64_t p0 = 0; p0 < k; p0 += L)
        for (int l = 0; l < L; ++l) {
            const std::int64_t p = p0 + l;
            c[l] = p < k ? detail::fma(a[p * sa], b[p * sb], c[l]) : detail::fma(T{}, T{}, c[l]);
        }
    return fold_chains(c);
}

/// The element C[i][j] of m x n x k in the order above (a, b: element (r, c) at r*row + c*col).
template <class T>
DEVTENSOR_HOST_DEVICE inline T gemm_order_element(std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
                                                  std::int64_t a_row, std::int64_t a_col, const T* b,
                                                  std::int64_t b_row, std::int64_t b_col, const T* bias,
                                                  std::int64_t i, std::int64_t j) {
    const T* ai = a + i * a_row;
    const T* bj = b + j * b_col;
    const T sum = uses_gemv_order(m, n, k) ? gemv_order_dot(k, ai, a_col, bj, b_row)
                                           : gemm_order_dot(k, ai, a_col, bj, b_row);
    return plus_bias(sum, bias, j);
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::detail
