// libtorch peers, the only file that includes torch (its headers cost ~50 s to compile).
// Each op is the one a PyTorch user would write; outputs that torch allocates are
// allocated here too, as devtensor's are.
#include "bench_common.hpp"

#include <torch/torch.h>
#include <torch/version.h>

namespace bench {

void torch_set_threads(int n) { torch::set_num_threads(n); }

std::string torch_version() { return TORCH_VERSION; }

workload torch_workload(const problem& p) {
    const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
    switch (p.kind) {
    case op::add: {
        auto a = torch::rand({p.m}, f32), b = torch::rand({p.m}, f32), c = torch::empty({p.m}, f32);
        return [=]() mutable { torch::add_out(c, a, b); };
    }
    case op::add_bias: {
        const std::int64_t rows = p.m / bias_cols;
        auto x = torch::rand({rows, bias_cols}, f32), bias = torch::rand({bias_cols}, f32);
        auto y = torch::empty({rows, bias_cols}, f32);
        return [=]() mutable { torch::add_out(y, x, bias); };
    }
    case op::ones: return [n = p.m, f32] { torch::ones({n}, f32); };
    case op::zeros: return [n = p.m, f32] { torch::zeros({n}, f32); };
    case op::full: return [n = p.m, f32] { torch::full({n}, value_of(op::full), f32); };
    case op::rand: return [n = p.m, f32] { torch::rand({n}, f32); };
    case op::matmul: {
        auto a = torch::rand({p.m, p.k}, f32), b = torch::rand({p.k, p.n}, f32);
        return [=] { torch::mm(a, b); };
    }
    case op::linear: {
        auto layer = torch::nn::Linear(p.k, p.n);
        auto x = torch::rand({p.m, p.k}, f32);
        return [=]() mutable {
            const torch::NoGradGuard inference;  // as devtensor: no autograd graph
            layer->forward(x);
        };
    }
    default: return {};
    }
}

}  // namespace bench
