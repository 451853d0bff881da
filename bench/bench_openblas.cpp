// OpenBLAS peers: cblas_sgemm for matmul and linear, cblas_sgemv for linear on
// batch 1, cblas_dgemm for the double matmul rows. Linear adds its bias as
// devtensor and torch do: y starts as the bias rows and the product is
// accumulated onto it (beta = 1).
#include "bench_common.hpp"

#include <cblas.h>  // OpenBLAS's, which also declares openblas_get_config and friends

#include <algorithm>
#include <memory>
#include <vector>

namespace bench {
namespace {

struct gemm_buffers {
    std::vector<float> a, b, bias, c;
    gemm_buffers(std::int64_t a_size, std::int64_t b_size, std::int64_t bias_size, std::int64_t c_size)
        : a(a_size, 0.5f), b(b_size, 0.25f), bias(bias_size, 1.f), c(c_size) {}

    /// c = the bias on every row (linear's y before beta = 1 accumulation).
    void start_from_bias(std::int64_t rows) {
        for (std::int64_t r = 0; r < rows; ++r)
            std::copy(bias.begin(), bias.end(), c.begin() + r * static_cast<std::int64_t>(bias.size()));
    }
};

}  // namespace

void openblas_set_threads(int n) { openblas_set_num_threads(n); }

std::string openblas_config() {
    return std::string(openblas_get_config()) + "; core " + openblas_get_corename() +
           "; OPENBLAS_CORETYPE=" + env_or_unset("OPENBLAS_CORETYPE") +
           " OPENBLAS_L2_SIZE=" + env_or_unset("OPENBLAS_L2_SIZE");
}

workload openblas_sgemm_workload(const problem& p) {
    const int m = static_cast<int>(p.m), n = static_cast<int>(p.n), k = static_cast<int>(p.k);
    if (p.kind == op::matmul) {
        auto s = std::make_shared<gemm_buffers>(p.batch * p.m * p.k, p.batch * p.k * p.n, 0, p.batch * p.m * p.n);
        return [s, m, n, k, batch = p.batch] {
            for (std::int64_t i = 0; i < batch; ++i)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.f, s->a.data() + i * m * k,
                            k, s->b.data() + i * k * n, n, 0.f, s->c.data() + i * m * n, n);
        };
    }
    if (p.kind != op::linear) return {};
    // x [m, k], weight [n, k] (torch's layout): y = x · weightᵀ + bias
    auto s = std::make_shared<gemm_buffers>(p.m * p.k, p.n * p.k, p.n, p.m * p.n);
    return [s, m, n, k] {
        s->start_from_bias(m);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.f, s->a.data(), k, s->b.data(), k, 1.f,
                    s->c.data(), n);
    };
}

workload openblas_sgemv_workload(const problem& p) {
    if (p.kind != op::linear || p.m != 1) return {};
    const int n = static_cast<int>(p.n), k = static_cast<int>(p.k);
    auto s = std::make_shared<gemm_buffers>(p.k, p.n * p.k, p.n, p.n);
    return [s, n, k] {
        s->start_from_bias(1);
        cblas_sgemv(CblasRowMajor, CblasNoTrans, n, k, 1.f, s->b.data(), k, s->a.data(), 1, 1.f, s->c.data(), 1);
    };
}

workload openblas_dgemm_workload(std::int64_t n) {
    auto s = std::make_shared<std::vector<double>>(3 * n * n, 0.5);  // a, b, c one after another
    return [s, n = static_cast<int>(n)] {
        double* const a = s->data();
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a, n, a + n * n, n, 0.0, a + 2 * n * n, n);
    };
}

}  // namespace bench
