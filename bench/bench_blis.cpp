// BLIS peer: bli_sgemm (BLIS's typed API, row and column strides) for square matmul.
// libblis exports cblas_sgemm and sgemm_ as OpenBLAS does, so it is not linked: it is
// opened at run time with RTLD_LOCAL, which keeps its symbols out of the global scope
// (the OpenBLAS rows stay OpenBLAS's), and its functions are looked up by name.
// Where libblis.so.4 will not load, the rows run without BLIS and the info says why.
//
// BLIS 0.9 picks its AVX-512 kernels (sub-configuration skx) only where it can tell the
// CPU has two FMA units, from the model name; on a VM's "Intel(R) Xeon(R) Processor" it
// cannot, and falls back to haswell's AVX2 kernels (~100 against ~155 GFLOP/s here, where
// the FMA peak row shows two units). Where the CPU has skx's ISA and BLIS_ARCH_TYPE is
// unset, the bench sets it to skx before BLIS starts; the info line says so.
#include "bench_common.hpp"

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

namespace bench {
namespace {

// blis.h's types: dim_t and inc_t are 64-bit on x86-64, trans_t and arch_t enums.
using dim_t = std::int64_t;
using sgemm_fn = void (*)(int transa, int transb, dim_t m, dim_t n, dim_t k, float* alpha, float* a, dim_t rs_a,
                          dim_t cs_a, float* b, dim_t rs_b, dim_t cs_b, float* beta, float* c, dim_t rs_c, dim_t cs_c);
using dgemm_fn = void (*)(int transa, int transb, dim_t m, dim_t n, dim_t k, double* alpha, double* a, dim_t rs_a,
                          dim_t cs_a, double* b, dim_t rs_b, dim_t cs_b, double* beta, double* c, dim_t rs_c,
                          dim_t cs_c);
constexpr int no_transpose = 0;  // BLIS_NO_TRANSPOSE

struct blis_library {
    void* handle = dlopen("libblis.so.4", RTLD_NOW | RTLD_LOCAL);
    std::string error = handle ? "" : dlerror();
    bool arch_set = handle && choose_skx();

    template <class F>
    F find(const char* name) const {
        return handle ? reinterpret_cast<F>(dlsym(handle, name)) : nullptr;
    }

    /// BLIS_ARCH_TYPE = skx's id (bli_arch_string's index, which needs no init) where unset.
    bool choose_skx() const {
        const bool skx_isa = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
        if (std::getenv("BLIS_ARCH_TYPE") || !skx_isa) return false;
        const auto arch_name = find<const char* (*)(int)>("bli_arch_string");
        for (int id = 0; arch_name && arch_name(id); ++id) {  // the names end with generic's
            const std::string name = arch_name(id);
            if (name == "skx") return setenv("BLIS_ARCH_TYPE", std::to_string(id).c_str(), 0) == 0;
            if (name == "generic") break;
        }
        return false;
    }
};

const blis_library& blis() {
    static const blis_library lib;
    return lib;
}

}  // namespace

void blis_set_threads(int n) {
    if (auto set = blis().find<void (*)(dim_t)>("bli_thread_set_num_threads")) set(n);
}

std::string blis_config() {
    if (!blis().handle) return "n/a (" + blis().error + ")";
    const auto version = blis().find<const char* (*)()>("bli_info_get_version_str");
    const auto arch_id = blis().find<int (*)()>("bli_arch_query_id");
    const auto arch_name = blis().find<const char* (*)(int)>("bli_arch_string");
    return std::string("BLIS ") + (version ? version() : "?") + "; arch " +
           (arch_id && arch_name ? arch_name(arch_id()) : "?") + "; BLIS_ARCH_TYPE=" + env_or_unset("BLIS_ARCH_TYPE") +
           (blis().arch_set ? " (set by the bench: skx)" : "");
}

workload blis_sgemm_workload(const problem& p) {
    const auto sgemm = blis().find<sgemm_fn>("bli_sgemm");
    if (p.kind != op::matmul || !sgemm) return {};
    struct buffers {
        std::vector<float> a, b, c;
    };
    const std::int64_t batch = p.batch;
    auto s = std::make_shared<buffers>(buffers{std::vector<float>(batch * p.m * p.k, 0.5f),
                                               std::vector<float>(batch * p.k * p.n, 0.25f),
                                               std::vector<float>(batch * p.m * p.n)});
    return [s, sgemm, m = p.m, n = p.n, k = p.k, batch] {
        float one = 1.f, zero = 0.f;  // row-major: row stride the width, column stride 1
        for (std::int64_t i = 0; i < batch; ++i)
            sgemm(no_transpose, no_transpose, m, n, k, &one, s->a.data() + i * m * k, k, 1, s->b.data() + i * k * n,
                  n, 1, &zero, s->c.data() + i * m * n, n, 1);
    };
}

workload blis_dgemm_workload(std::int64_t n) {
    const auto dgemm = blis().find<dgemm_fn>("bli_dgemm");
    if (!dgemm) return {};
    auto s = std::make_shared<std::vector<double>>(3 * n * n, 0.5);  // a, b, c one after another
    return [s, dgemm, n] {
        double one = 1, zero = 0, *const a = s->data();
        dgemm(no_transpose, no_transpose, n, n, n, &one, a, n, 1, a + n * n, n, 1, &zero, a + 2 * n * n, n, 1);
    };
}

}  // namespace bench
