// What the CPU benchmark files share: the problems (one per row of the report),
// the implementations that can run them, and the peers built only where their
// library was found (DEVTENSOR_BENCH_HAVE_{TORCH,OPENBLAS,ONEDNN,BLIS,RANDOM123}, each 0 or 1).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>

namespace bench {

/// One iteration of a prepared workload: inputs and outputs are allocated when
/// it is made, so the benchmark times only the op (and what the op allocates).
using workload = std::function<void()>;

enum class op {
    add,       ///< c = a + b, n elements
    add_bias,  ///< y [rows, cols] = x [rows, cols] + bias [cols], rows * cols = n
    ones,      ///< a fresh tensor of n ones, dropped again (allocate, fill, free)
    zeros,
    full,      ///< filled with fill_value
    rand,      ///< n uniform floats in [0, 1)
    matmul,    ///< [m, k] · [k, n]
    linear,    ///< x [m, k] · weightᵀ [k, n] + bias [n]: m is the batch
    fma_peak,  ///< the FMA loop alone; m is the number of loop trips per thread
    exp,       ///< y = exp(x) into an existing y, n elements (the out-variants), one thread
    log,       ///< y = log(x), x in [0.01, 10)
    tanh,      ///< y = tanh(x), x in [-10, 10) (as exp and sigmoid)
    sigmoid,
    // One training step each: forward, loss, zero_grad, backward, SGD's step, on a fresh graph.
    train_linear,   ///< linear(k -> n) on batch m, mse_loss against [m, n] targets
    train_mlp_ce,   ///< linear(k -> hidden), ReLU, linear(hidden -> n) on batch m, cross_entropy over n classes
    train_mlp_mse,  ///< the same MLP, mse_loss against [m, n] targets
};

/// The elementwise math rows.
inline bool is_math(op kind) { return kind == op::exp || kind == op::log || kind == op::tanh || kind == op::sigmoid; }

/// The training rows' SGD learning rate: small, so that the weights drift slowly over
/// thousands of steps and no value turns inf, NaN or denormal (which would distort the timing).
inline constexpr double train_lr = 1e-4;

/// Where a math row's inputs lie: [lo, lo + width).
inline float math_input_low(op kind) { return kind == op::log ? 0.01f : -10.f; }
inline float math_input_width(op kind) { return kind == op::log ? 9.99f : 20.f; }

inline constexpr float fill_value = 0.5f;
inline constexpr std::int64_t bias_cols = 1024;  ///< C in the [N, C] + [C] rows

/// A row of the report: the op and its size. Elementwise ops use m alone.
struct problem {
    op kind;
    std::int64_t m;
    std::int64_t n = 0;
    std::int64_t k = 0;
    std::int64_t hidden = 0;  ///< the MLP training rows' hidden width
    std::int64_t batch = 1;   ///< matmul: products of as many distinct matrices, one after another
    std::int64_t steps = 1;   ///< training rows: steps a timed call runs back to back, as a training loop does
};

/// Threads every implementation is given: DEVTENSOR_BENCH_THREADS, default 1.
int threads();

/// An environment variable's value, for the report's header.
inline const char* env_or_unset(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "(unset)";
}

/// The value ones / zeros / full write.
inline float value_of(op kind) { return kind == op::ones ? 1.f : kind == op::zeros ? 0.f : fill_value; }

// ---- ceilings (bench_ceilings.cpp): plain loops doing the same traffic or FLOPs --------------
// Each runs on threads() OpenMP threads, over chunks that start on cache-line edges.

workload plain_loop_workload(const problem& p);   ///< add: c[i] = a[i] + b[i]
workload nontemporal_workload(const problem& p);  ///< add and ones/zeros/full: streaming stores
workload std_fill_workload(const problem& p);     ///< ones/zeros/full: std::fill in place
workload fma_peak_workload(const problem& p);     ///< independent FMA chains in registers
double fma_peak_flops(const problem& p);          ///< FLOPs of one fma_peak_workload call
std::string fma_isa();                            ///< the vector ISA the FMA loop uses here

#if DEVTENSOR_BENCH_HAVE_RANDOM123
workload random123_workload(const problem& p);  ///< rand: Philox4x32-10 in a scalar loop
#else
inline workload random123_workload(const problem&) { return {}; }
#endif

// ---- peers: stubs where the library is missing, so callers need no #if -------------------

#if DEVTENSOR_BENCH_HAVE_TORCH
void torch_set_threads(int n);
std::string torch_version();
workload torch_workload(const problem& p);  ///< empty where torch has no such op
/// torch::{sub,mul,div,lt}_out(c, a, b) on n floats.
workload torch_binary_out(const std::string& name, std::int64_t n);
/// torch::{sum,amax,argmax,_softmax}_out over the last dim of [rows, cols] floats.
workload torch_rows_out(const std::string& name, std::int64_t rows, std::int64_t cols);
/// torch::bmm_out of two [batch, n, n] float tensors.
workload torch_bmm_out(std::int64_t batch, std::int64_t n);
#else
inline void torch_set_threads(int) {}
inline std::string torch_version() { return "n/a"; }
inline workload torch_workload(const problem&) { return {}; }
inline workload torch_binary_out(const std::string&, std::int64_t) { return {}; }
inline workload torch_rows_out(const std::string&, std::int64_t, std::int64_t) { return {}; }
inline workload torch_bmm_out(std::int64_t, std::int64_t) { return {}; }
#endif

#if DEVTENSOR_BENCH_HAVE_OPENBLAS
void openblas_set_threads(int n);
std::string openblas_config();  ///< openblas_get_config() and the kernel (core) it chose
workload openblas_sgemm_workload(const problem& p);
workload openblas_sgemv_workload(const problem& p);  ///< linear on batch 1 only
workload openblas_dgemm_workload(std::int64_t n);    ///< square double matmul
#else
inline void openblas_set_threads(int) {}
inline std::string openblas_config() { return "n/a"; }
inline workload openblas_sgemm_workload(const problem&) { return {}; }
inline workload openblas_sgemv_workload(const problem&) { return {}; }
inline workload openblas_dgemm_workload(std::int64_t) { return {}; }
#endif

#if DEVTENSOR_BENCH_HAVE_ONEDNN
void onednn_set_threads(int n);  ///< OpenMP's thread count: Debian's oneDNN threads with OpenMP
std::string onednn_config();     ///< its version, runtime and the ISA it dispatches to
workload onednn_sgemm_workload(const problem& p);  ///< square matmul only
#else
inline void onednn_set_threads(int) {}
inline std::string onednn_config() { return "n/a"; }
inline workload onednn_sgemm_workload(const problem&) { return {}; }
#endif

#if DEVTENSOR_BENCH_HAVE_BLIS
void blis_set_threads(int n);
std::string blis_config();  ///< its version and the sub-configuration (arch) it chose
workload blis_sgemm_workload(const problem& p);  ///< square matmul only; empty where libblis.so.4 won't load
workload blis_dgemm_workload(std::int64_t n);    ///< square double matmul; likewise
#else
inline void blis_set_threads(int) {}
inline std::string blis_config() { return "n/a"; }
inline workload blis_sgemm_workload(const problem&) { return {}; }
inline workload blis_dgemm_workload(std::int64_t) { return {}; }
#endif

}  // namespace bench
