// The portable GEMM micro-kernel of the CPU backend (over packed panels): an
// MR x NR block of C accumulated in registers from kc rank-1 updates, each
// element one fma chain continued over k in order (the GEMM order of
// detail/gemm_order.hpp).
#pragma once

#include <devtensor/config.hpp>        // DEVTENSOR_HOST_DEVICE
#include <devtensor/detail/arith.hpp>  // fma

#include <cstddef>

namespace devtensor::detail {

DEVTENSOR_BEGIN_TU_NAMESPACE

/// acc[i][j] = fma(a[k*a_k + i*a_i], b[k*b_k + j*b_j], acc[i][j]) for k = 0, ..., kc-1.
/// (Array bounds are cast to std::size_t: g++ -Wsign-conversion flags an int template parameter there.)
template <int MR, int NR, class T, class I>
DEVTENSOR_HOST_DEVICE inline void gemm_micro_kernel(
    I kc, const T* a, I a_k, I a_i, const T* b, I b_k, I b_j,
    T (&acc)[static_cast<std::size_t>(MR)][static_cast<std::size_t>(NR)]) {
    for (I k = 0; k < kc; ++k) {
        T av[static_cast<std::size_t>(MR)], bv[static_cast<std::size_t>(NR)];
        for (int i = 0; i < MR; ++i) av[i] = a[k * a_k + i * a_i];
        for (int j = 0; j < NR; ++j) bv[j] = b[k * b_k + j * b_j];
        for (int i = 0; i < MR; ++i)
            for (int j = 0; j < NR; ++j) acc[i][j] = detail::fma(av[i], bv[j], acc[i][j]);
    }
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::detail
