// oneDNN peer: dnnl_sgemm (row-major, as cblas_sgemm's rows) for square matmul.
// oneDNN has no double GEMM in its API. Debian's build threads with OpenMP: its
// thread count is OpenMP's, set here as the other libraries' are.
#include "bench_common.hpp"

#include <oneapi/dnnl/dnnl.h>

#if defined(_OPENMP)
#  include <omp.h>
#endif

#include <memory>
#include <vector>

namespace bench {

void onednn_set_threads([[maybe_unused]] int n) {
#if defined(_OPENMP)
    omp_set_num_threads(n);
#endif
}

std::string onednn_config() {
    const char* isa = "?";
    switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41: isa = "sse41"; break;
    case dnnl_cpu_isa_avx: isa = "avx"; break;
    case dnnl_cpu_isa_avx2: isa = "avx2"; break;
    case dnnl_cpu_isa_avx2_vnni: isa = "avx2_vnni"; break;
    case dnnl_cpu_isa_avx512_core: isa = "avx512_core"; break;
    case dnnl_cpu_isa_avx512_core_vnni: isa = "avx512_core_vnni"; break;
    case dnnl_cpu_isa_avx512_core_bf16: isa = "avx512_core_bf16"; break;
    case dnnl_cpu_isa_avx512_core_amx: isa = "avx512_core_amx"; break;
    default: break;
    }
    const dnnl_version_t* v = dnnl_version();
    return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) +
           " (" + (v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "not OpenMP") + "); ISA " + isa +
           "; DNNL_MAX_CPU_ISA=" + env_or_unset("DNNL_MAX_CPU_ISA");
}

workload onednn_sgemm_workload(const problem& p) {
    if (p.kind != op::matmul) return {};
    struct buffers {
        std::vector<float> a, b, c;
    };
    const std::int64_t batch = p.batch;
    auto s = std::make_shared<buffers>(buffers{std::vector<float>(batch * p.m * p.k, 0.5f),
                                               std::vector<float>(batch * p.k * p.n, 0.25f),
                                               std::vector<float>(batch * p.m * p.n)});
    return [s, m = p.m, n = p.n, k = p.k, batch] {
        for (std::int64_t i = 0; i < batch; ++i)
            dnnl_sgemm('N', 'N', m, n, k, 1.f, s->a.data() + i * m * k, k, s->b.data() + i * k * n, n, 0.f,
                       s->c.data() + i * m * n, n);
    };
}

}  // namespace bench
