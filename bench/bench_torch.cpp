// libtorch peers, the only file that includes torch (its headers cost ~50 s to compile).
// Each op is the one a PyTorch user would write; outputs that torch allocates are
// allocated here too, as devtensor's are.
#include "bench_common.hpp"

#include <torch/torch.h>
#include <torch/version.h>

namespace bench {

void torch_set_threads(int n) { torch::set_num_threads(n); }

std::string torch_version() { return TORCH_VERSION; }

namespace {

/// One training step (op::train_*) as a PyTorch user writes it: forward, loss, zero_grad,
/// backward, torch::optim::SGD's step, a fresh graph each call. zero_grad sets the
/// gradients to none, as devtensor's (and PyTorch 2.x's) does: libtorch 1.13's C++
/// Optimizer::zero_grad() zeroes them in place, and backward then adds into them, two
/// passes more per parameter than devtensor makes.
template <class Net>
workload torch_training(const problem& p, Net net, const torch::Tensor& x, const torch::Tensor& target,
                        bool classify) {
    auto params = net->parameters();
    auto opt = std::make_shared<torch::optim::SGD>(params, torch::optim::SGDOptions(train_lr));
    return [=, steps = p.steps]() mutable {
        for (std::int64_t s = 0; s < steps; ++s) {
            auto out = net->forward(x);
            auto loss = classify ? torch::nn::functional::cross_entropy(out, target) : torch::mse_loss(out, target);
            for (auto& param : params) param.mutable_grad() = torch::Tensor();  // zero_grad(set_to_none=True)
            loss.backward();
            opt->step();
        }
    };
}

workload torch_training(const problem& p) {
    const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
    torch::manual_seed(1);
    auto x = torch::randn({p.m, p.k}, f32);
    if (p.kind == op::train_linear)  // one bare layer, as devtensor's row
        return torch_training(p, torch::nn::Linear(p.k, p.n), x, torch::randn({p.m, p.n}, f32), false);
    torch::nn::Sequential mlp(torch::nn::Linear(p.k, p.hidden), torch::nn::ReLU(), torch::nn::Linear(p.hidden, p.n));
    if (p.kind == op::train_mlp_ce)
        return torch_training(p, mlp, x, torch::randint(0, p.n, {p.m}, torch::TensorOptions().dtype(torch::kInt64)), true);
    return torch_training(p, mlp, x, torch::randn({p.m, p.n}, f32), false);
}

}  // namespace

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
    case op::exp:
    case op::log:
    case op::tanh:
    case op::sigmoid: {
        auto x = torch::rand({p.m}, f32) * math_input_width(p.kind) + math_input_low(p.kind);
        auto y = torch::empty({p.m}, f32);
        switch (p.kind) {
        case op::exp: return [=]() mutable { torch::exp_out(y, x); };
        case op::log: return [=]() mutable { torch::log_out(y, x); };
        case op::tanh: return [=]() mutable { torch::tanh_out(y, x); };
        default: return [=]() mutable { torch::sigmoid_out(y, x); };
        }
    }
    case op::train_linear:
    case op::train_mlp_ce:
    case op::train_mlp_mse: return torch_training(p);
    default: return {};
    }
}

workload torch_binary_out(const std::string& name, std::int64_t n) {
    const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
    auto a = torch::rand({n}, f32), b = torch::rand({n}, f32) + 0.5;
    if (name == "lt") {
        auto c = torch::empty({n}, torch::TensorOptions().dtype(torch::kBool));
        return [=]() mutable { torch::lt_out(c, a, b); };
    }
    auto c = torch::empty({n}, f32);
    if (name == "sub") return [=]() mutable { torch::sub_out(c, a, b); };
    if (name == "mul") return [=]() mutable { torch::mul_out(c, a, b); };
    if (name == "div") return [=]() mutable { torch::div_out(c, a, b); };
    return {};
}

workload torch_rows_out(const std::string& name, std::int64_t rows, std::int64_t cols) {
    const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
    auto x = torch::rand({rows, cols}, f32);
    auto y = torch::empty({rows}, f32);
    if (name == "sum") return [=]() mutable { torch::sum_out(y, x, {1}); };
    if (name == "amax") return [=]() mutable { torch::amax_out(y, x, {1}); };
    if (name == "argmax") {
        auto i = torch::empty({rows}, torch::TensorOptions().dtype(torch::kInt64));
        return [=]() mutable { torch::argmax_out(i, x, 1); };
    }
    if (name == "softmax") {
        auto s = torch::empty({rows, cols}, f32);
        return [=]() mutable { torch::_softmax_out(s, x, 1, false); };
    }
    return {};
}

workload torch_bmm_out(std::int64_t batch, std::int64_t n) {
    const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
    auto a = torch::rand({batch, n, n}, f32), b = torch::rand({batch, n, n}, f32), c = torch::empty({batch, n, n}, f32);
    return [=]() mutable { torch::bmm_out(c, a, b); };
}

}  // namespace bench
