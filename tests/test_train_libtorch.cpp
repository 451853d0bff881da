// Training (DESIGN §12) against libtorch 1.13 as the reference:
//  - the losses (mse_loss, cross_entropy, nll_loss after log_softmax,
//    binary_cross_entropy_with_logits), their values and gradients for every reduction,
//    including logits of ±100 and exactly 0;
//  - optim::sgd (momentum, dampening, Nesterov, weight decay), adam (amsgrad, weight
//    decay) and adamw against torch::optim's, 200 steps on D2L's linear regression and
//    on a 64→128→10 MLP, from the same initial weights over the same batches; each
//    comparison also runs once with one hyperparameter changed, to show that the check
//    notices that change; the parameters are compared after every step, and our
//    zero_grad() must leave every gradient undefined (PyTorch 2.x; libtorch 1.13's C++
//    zero_grad zeroes them, which gives the same next gradients);
//  - gradients accumulating across two backward() calls.
// Set DEVTENSOR_TEST_VERBOSE=1 to print the differences measured.
#include "test_support.hpp"

#include <torch/torch.h>
// c10's logging (glog in Debian's build) defines CHECK as a fatal assertion: doctest's again.
#undef CHECK
#define CHECK DOCTEST_CHECK

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace {
using dims_t = std::vector<std::int64_t>;

template <class T>
constexpr torch::Dtype torch_dtype = c10::CppTypeToScalarType<T>::value;

/// Losses: relative error allowed in values and gradients.
template <class T>
constexpr double loss_tolerance = std::is_same_v<T, double> ? 1e-12 : 1e-5;
/// Parameters after 200 steps: ||ours - torch's|| / ||torch's||.
template <class T>
constexpr double train_tolerance = std::is_same_v<T, double> ? 1e-5 : 1e-4;

bool verbose() {
    static const bool on = std::getenv("DEVTENSOR_TEST_VERBOSE") != nullptr;
    return on;
}
template <class T>
const char* type_name() {
    return std::is_same_v<T, double> ? "float64" : "float32";
}

/// The elements of a torch tensor as U, row-major.
template <class U>
std::vector<U> values_of(const torch::Tensor& t) {
    const torch::Tensor c = t.detach().to(torch::kCPU, torch_dtype<U>).contiguous();
    const U* p = c.data_ptr<U>();
    return std::vector<U>(p, p + c.numel());
}
template <class T, class D>
std::vector<double> doubles_of(const dt::tensor<T, D>& t) {
    const std::vector<T> v = t.to_vector();
    return {v.begin(), v.end()};
}
/// A devtensor tensor (run-time device: the CPU) holding t's values as U.
template <class U>
dt::tensor<U> to_dt(const torch::Tensor& t) {
    return dt::from_values<U>(values_of<U>(t), dt::shape(t.sizes().vec()), dt::device{});
}
template <class T, class D>
dims_t dims_of(const dt::tensor<T, D>& t) {
    return {t.shape().begin(), t.shape().end()};
}

/// max_i |a_i - b_i| / max(|b_i|, scale_i): the error relative to each element, or to
/// the size of the terms that cancel in it (scale_i, 0 where none do).
double elementwise_error(const std::vector<double>& got, const std::vector<double>& want,
                         const std::vector<double>& scale) {
    REQUIRE(got.size() == want.size());
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        const double s = std::max(std::abs(want[i]), scale.empty() ? 0.0 : scale[i]);
        const double d = std::abs(got[i] - want[i]);
        if (d == 0) continue;
        worst = std::max(worst, s > 0 ? d / s : INFINITY);
    }
    return worst;
}
/// max |a - b| / max |b|: a gradient's error relative to its largest element.
double max_norm_error(const std::vector<double>& got, const std::vector<double>& want) {
    REQUIRE(got.size() == want.size());
    double diff = 0, size = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        diff = std::max(diff, std::abs(got[i] - want[i]));
        size = std::max(size, std::abs(want[i]));
    }
    return diff == 0 ? 0 : size > 0 ? diff / size : INFINITY;
}
/// ||a - b|| / ||b|| (2-norms).
double norm_error(const std::vector<double>& got, const std::vector<double>& want) {
    REQUIRE(got.size() == want.size());
    double diff = 0, size = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        diff += (got[i] - want[i]) * (got[i] - want[i]);
        size += want[i] * want[i];
    }
    return diff == 0 ? 0 : size > 0 ? std::sqrt(diff / size) : INFINITY;
}

// ---- losses -----------------------------------------------------------------------------------

struct reduction_case {
    dt::nn::reduction ours;
    at::Reduction::Reduction theirs;
    const char* name;
};
const reduction_case reductions[] = {{dt::nn::reduction::none, at::Reduction::None, "none"},
                                     {dt::nn::reduction::mean, at::Reduction::Mean, "mean"},
                                     {dt::nn::reduction::sum, at::Reduction::Sum, "sum"}};

struct loss_errors {
    double value = 0, grad = 0;
};

/// One loss on input x (float64, made T) and target (float64 made T when Target is T, else
/// int64 class indices), for each reduction: values, then the gradients of the input (and of
/// a floating target when target_grad) after backward() (reduced) or backward(random g)
/// (none). scale[i]: the size of the terms that cancel in element i of the unreduced loss.
template <class T, class Target, class Ours, class Theirs>
loss_errors check_loss(const char* name, const torch::Tensor& x, const torch::Tensor& target,
                       const std::vector<double>& scale, bool target_grad, Ours ours, Theirs theirs) {
    constexpr bool real_target = std::is_same_v<Target, T>;
    const double tol = loss_tolerance<T>;
    loss_errors worst;
    for (const auto& r : reductions) {
        CAPTURE(std::string(name));
        CAPTURE(std::string(r.name));
        CAPTURE(std::string(type_name<T>()));
        const torch::Tensor tx = x.to(torch_dtype<T>).detach().requires_grad_();
        const torch::Tensor tt = (real_target ? target.to(torch_dtype<T>) : target).detach().requires_grad_(target_grad);
        dt::tensor<T> dx = to_dt<T>(tx);
        dx.requires_grad_();
        dt::tensor<Target> dtarget = to_dt<Target>(tt);
        if constexpr (real_target)
            if (target_grad) dtarget.requires_grad_();

        const torch::Tensor want = theirs(tx, tt, r.theirs);
        const dt::tensor<T> got = ours(dx, dtarget, r.ours);
        REQUIRE(dims_of(got) == want.sizes().vec());
        std::vector<double> value_scale = scale;
        if (r.ours != dt::nn::reduction::none) {  // the reduced value: the reduced scales
            double total = 0;
            for (const double s : scale) total += s;
            if (r.ours == dt::nn::reduction::mean && !scale.empty()) total /= static_cast<double>(scale.size());
            value_scale = {total};
        }
        const double value_error = elementwise_error(doubles_of(got), values_of<double>(want), value_scale);
        CHECK(value_error <= tol);
        worst.value = std::max(worst.value, value_error);

        if (r.ours == dt::nn::reduction::none) {  // a random gradient from above
            const torch::Tensor g = torch::randn(want.sizes(), torch::kFloat64).to(torch_dtype<T>);
            want.backward(g);
            got.backward(to_dt<T>(g));
        } else {
            want.backward();
            got.backward();
        }
        REQUIRE(dx.grad().defined());
        const double grad_error = max_norm_error(doubles_of(dx.grad()), values_of<double>(tx.grad()));
        CHECK(grad_error <= tol);
        worst.grad = std::max(worst.grad, grad_error);
        if constexpr (real_target) {
            if (target_grad) {
                REQUIRE(dtarget.grad().defined());
                const double e = max_norm_error(doubles_of(dtarget.grad()), values_of<double>(tt.grad()));
                CHECK(e <= tol);
                worst.grad = std::max(worst.grad, e);
            }
        }
    }
    if (verbose())
        std::printf("loss %-34s %s: values %.2e, gradients %.2e\n", name, type_name<T>(), worst.value, worst.grad);
    return worst;
}

/// [n, c] logits, normal with standard deviation 3, with logits of ±100 in the first rows:
/// one huge logit at the target, one huge one elsewhere, a row of -100 but one +100,
/// a row of two +100s, a row of all -100, a row of all 0.
torch::Tensor large_logits(std::int64_t n, std::int64_t c, const torch::Tensor& target) {
    torch::Tensor x = torch::randn({n, c}, torch::kFloat64) * 3;
    const auto t = [&](std::int64_t i) { return target[i].item<std::int64_t>(); };
    x[0][t(0)] = 100;
    x[1][(t(1) + 1) % c] = 100;
    x[2][t(2)] = -100;
    x[3].fill_(-100);
    x[3][(t(3) + 2) % c] = 100;
    x[4][t(4)] = 100;
    x[4][(t(4) + 1) % c] = 100;
    x[5].fill_(-100);
    x[6].fill_(0);
    x[7][t(7)] = -100;
    x[7][(t(7) + 3) % c] = -100;
    return x;
}

/// Per row of [n, c] logits, the largest |x| (what cancels in log_softmax's x - max - lse).
std::vector<double> row_scales(const torch::Tensor& x) {
    return values_of<double>(std::get<0>(x.abs().max(1)));
}

template <class T>
void check_losses() {
    torch::manual_seed(11);
    // mse_loss: both operands get gradients
    {
        const torch::Tensor input = torch::randn({6, 7}, torch::kFloat64);
        const torch::Tensor target = torch::randn({6, 7}, torch::kFloat64) * 2;
        check_loss<T, T>(
            "mse_loss [6, 7]", input, target, {}, true,
            [](const auto& a, const auto& b, dt::nn::reduction r) { return dt::nn::mse_loss(a, b, r); },
            [](const torch::Tensor& a, const torch::Tensor& b, std::int64_t r) { return torch::mse_loss(a, b, r); });
        const torch::Tensor scalar_input = torch::randn({}, torch::kFloat64);
        check_loss<T, T>(
            "mse_loss []", scalar_input, torch::randn({}, torch::kFloat64), {}, true,
            [](const auto& a, const auto& b, dt::nn::reduction r) { return dt::nn::mse_loss(a, b, r); },
            [](const torch::Tensor& a, const torch::Tensor& b, std::int64_t r) { return torch::mse_loss(a, b, r); });
    }
    // cross_entropy and nll_loss(log_softmax): ordinary and ±100 logits
    for (const bool large : {false, true}) {
        const std::int64_t n = 16, c = 5;
        const torch::Tensor target = torch::randint(0, c, {n}, torch::kInt64);
        const torch::Tensor x = large ? large_logits(n, c, target) : torch::randn({n, c}, torch::kFloat64) * 3;
        const std::vector<double> scale = row_scales(x);
        check_loss<T, std::int64_t>(
            large ? "cross_entropy, logits of ±100" : "cross_entropy", x, target, scale, false,
            [](const auto& a, const auto& b, dt::nn::reduction r) { return dt::nn::cross_entropy(a, b, r); },
            [](const torch::Tensor& a, const torch::Tensor& b, std::int64_t r) {
                return torch::cross_entropy_loss(a, b, {}, r);
            });
        check_loss<T, std::int64_t>(
            large ? "nll_loss(log_softmax), logits of ±100" : "nll_loss(log_softmax)", x, target, scale, false,
            [](const auto& a, const auto& b, dt::nn::reduction r) {
                return dt::nn::nll_loss(dt::log_softmax(a, 1), b, r);
            },
            [](const torch::Tensor& a, const torch::Tensor& b, std::int64_t r) {
                return torch::nll_loss(torch::log_softmax(a, 1), b, {}, r);
            });
    }
    // binary_cross_entropy_with_logits: ordinary logits; ±100, exact 0 and targets of
    // exactly 0 and 1. x·y cancels against max(x, 0) in the loss: scale |x|.
    for (const bool large : {false, true}) {
        torch::Tensor x = torch::randn({4, 9}, torch::kFloat64) * 3;
        torch::Tensor y = torch::rand({4, 9}, torch::kFloat64);
        if (large) {
            x[0].fill_(100);
            x[1].fill_(-100);
            x[2].fill_(0);
            y[0][0] = 0, y[0][1] = 1, y[1][0] = 0, y[1][1] = 1, y[2][0] = 0, y[2][1] = 1, y[3][0] = 0, y[3][1] = 1;
            y[0][2] = 0.99, y[1][2] = 0.01;
        }
        check_loss<T, T>(
            large ? "bce_with_logits, logits ±100 and 0" : "bce_with_logits", x, y, values_of<double>(x.abs()), true,
            [](const auto& a, const auto& b, dt::nn::reduction r) {
                return dt::nn::binary_cross_entropy_with_logits(a, b, r);
            },
            [](const torch::Tensor& a, const torch::Tensor& b, std::int64_t r) {
                return torch::binary_cross_entropy_with_logits(a, b, {}, {}, r);
            });
    }
}

// ---- optimizers -------------------------------------------------------------------------------

/// An optimizer and its settings; lr is the problem's (sgd_lr or adam_lr) times lr_scale.
struct opt_case {
    std::string name;
    bool adam_family = false, decoupled = false;
    double lr_scale = 1, momentum = 0, dampening = 0, weight_decay = 0;
    bool nesterov = false, amsgrad = false;
    double beta1 = 0.9, beta2 = 0.999;
};

/// Each optimizer, and beside it the same with one setting changed: the comparison must
/// fail for that one (so it sees that setting).
const std::vector<std::pair<opt_case, opt_case>>& optimizer_cases() {
    static const std::vector<std::pair<opt_case, opt_case>> cases = {
        {{.name = "sgd"}, {.name = "sgd, lr 1% larger", .lr_scale = 1.01}},
        {{.name = "sgd momentum 0.9", .momentum = 0.9}, {.name = "sgd momentum 0.89", .momentum = 0.89}},
        {{.name = "sgd momentum 0.9 dampening 0.1", .momentum = 0.9, .dampening = 0.1},
         {.name = "sgd momentum 0.9 dampening 0", .momentum = 0.9}},
        {{.name = "sgd nesterov momentum 0.9", .momentum = 0.9, .nesterov = true},
         {.name = "sgd momentum 0.9 (not nesterov)", .momentum = 0.9}},
        {{.name = "sgd momentum 0.9 weight_decay 1e-2", .momentum = 0.9, .weight_decay = 1e-2},
         {.name = "sgd momentum 0.9 weight_decay 0", .momentum = 0.9}},
        {{.name = "adam", .adam_family = true}, {.name = "adam beta1 0.89", .adam_family = true, .beta1 = 0.89}},
        {{.name = "adam amsgrad", .adam_family = true, .amsgrad = true},
         {.name = "adam amsgrad, lr 1% larger", .adam_family = true, .lr_scale = 1.01, .amsgrad = true}},
        // beta2 0.95: with 0.999, exp_avg_sq mostly grows over 200 steps and its running
        // maximum is itself; amsgrad would change nothing
        {{.name = "adam amsgrad beta2 0.95", .adam_family = true, .amsgrad = true, .beta2 = 0.95},
         {.name = "adam beta2 0.95 (not amsgrad)", .adam_family = true, .beta2 = 0.95}},
        {{.name = "adam weight_decay 1e-2", .adam_family = true, .weight_decay = 1e-2},
         {.name = "adam weight_decay 0", .adam_family = true}},
        {{.name = "adamw weight_decay 1e-2", .adam_family = true, .decoupled = true, .weight_decay = 1e-2},
         {.name = "adam weight_decay 1e-2 (coupled)", .adam_family = true, .weight_decay = 1e-2}},
        {{.name = "adamw amsgrad beta2 0.95", .adam_family = true, .decoupled = true, .weight_decay = 1e-2,
          .amsgrad = true, .beta2 = 0.95},
         {.name = "adamw beta2 0.95 (not amsgrad)", .adam_family = true, .decoupled = true, .weight_decay = 1e-2,
          .beta2 = 0.95}},
    };
    return cases;
}

std::unique_ptr<torch::optim::Optimizer> torch_optimizer(const std::vector<torch::Tensor>& params, const opt_case& c,
                                                         double lr) {
    if (!c.adam_family)
        return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(lr)
                                                               .momentum(c.momentum)
                                                               .dampening(c.dampening)
                                                               .weight_decay(c.weight_decay)
                                                               .nesterov(c.nesterov));
    if (!c.decoupled)
        return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(lr)
                                                                .betas(std::make_tuple(c.beta1, c.beta2))
                                                                .eps(1e-8)
                                                                .weight_decay(c.weight_decay)
                                                                .amsgrad(c.amsgrad));
    return std::make_unique<torch::optim::AdamW>(params, torch::optim::AdamWOptions(lr)
                                                             .betas(std::make_tuple(c.beta1, c.beta2))
                                                             .eps(1e-8)
                                                             .weight_decay(c.weight_decay)
                                                             .amsgrad(c.amsgrad));
}

/// f(optimizer) with devtensor's optimizer for c over net's parameters.
template <class T, class Net, class F>
void with_dt_optimizer(const Net& net, const opt_case& c, double lr, F&& f) {
    if (!c.adam_family) {
        dt::optim::sgd<T> opt(net, {.lr = lr,
                                    .momentum = c.momentum,
                                    .dampening = c.dampening,
                                    .weight_decay = c.weight_decay,
                                    .nesterov = c.nesterov});
        f(opt);
    } else if (!c.decoupled) {
        dt::optim::adam<T> opt(net, {.lr = lr,
                                     .beta1 = c.beta1,
                                     .beta2 = c.beta2,
                                     .eps = 1e-8,
                                     .weight_decay = c.weight_decay,
                                     .amsgrad = c.amsgrad});
        f(opt);
    } else {
        dt::optim::adamw<T> opt(net, {.lr = lr,
                                      .beta1 = c.beta1,
                                      .beta2 = c.beta2,
                                      .eps = 1e-8,
                                      .weight_decay = c.weight_decay,
                                      .amsgrad = c.amsgrad});
        f(opt);
    }
}

/// Torch's parameter values written into ours (same order, same shapes).
template <class T>
void copy_parameters(const std::vector<dt::tensor<T>>& ours, const std::vector<torch::Tensor>& theirs) {
    REQUIRE(ours.size() == theirs.size());
    const dt::no_grad off;
    for (std::size_t i = 0; i < ours.size(); ++i) {
        REQUIRE(dims_of(ours[i]) == theirs[i].sizes().vec());
        REQUIRE(ours[i].is_contiguous());
        const std::vector<T> v = values_of<T>(theirs[i]);
        std::copy(v.begin(), v.end(), ours[i].data());
    }
}

/// A training problem: the data (float64; the targets [N, 1] values for mse_loss, or
/// [N] class indices for cross_entropy), taken in order in batches of `batch`.
struct problem {
    const char* name;
    torch::Tensor X, y;
    std::int64_t batch;
    bool classify;
    double sgd_lr, adam_lr;
    std::uint64_t init_seed;
};

/// D2L 3.2: X [1000, 2] normal, y = X·[2, -3.4]ᵀ + 4.2 + 0.01·noise, batches of 10.
const problem& linear_regression() {
    static const problem p = [] {
        torch::manual_seed(42);
        const torch::Tensor X = torch::randn({1000, 2}, torch::kFloat64);
        const torch::Tensor w = torch::tensor({2.0, -3.4}, torch::kFloat64).view({2, 1});
        const torch::Tensor y = X.matmul(w) + 4.2 + 0.01 * torch::randn({1000, 1}, torch::kFloat64);
        return problem{"linear regression", X, y, 10, false, 0.03, 0.01, 7};
    }();
    return p;
}
/// An MLP's data: X [640, 64] normal, labels uniform in [0, 10), batches of 32. The initial
/// weights' seed (9) is one whose float32 runs see no ReLU sign flip (train_difference) with
/// Debian's libtorch on x86-64; most seeds see one or two among the eleven float32 runs.
const problem& mlp_data() {
    static const problem p = [] {
        torch::manual_seed(43);
        const torch::Tensor X = torch::randn({640, 64}, torch::kFloat64);
        const torch::Tensor y = torch::randint(0, 10, {640}, torch::kInt64);
        return problem{"MLP 64-128-10", X, y, 32, true, 0.05, 1e-3, 9};
    }();
    return p;
}

torch::nn::Sequential torch_net(const problem& p) {
    torch::manual_seed(p.init_seed);
    if (!p.classify) return torch::nn::Sequential(torch::nn::Linear(2, 1));
    return torch::nn::Sequential(torch::nn::Linear(64, 128), torch::nn::ReLU(), torch::nn::Linear(128, 10));
}

/// The largest ||ours - theirs|| / ||theirs|| over the parameters.
template <class T>
double parameters_error(const std::vector<dt::tensor<T>>& ours, const std::vector<torch::Tensor>& theirs) {
    double worst = 0;
    for (std::size_t i = 0; i < ours.size(); ++i)
        worst = std::max(worst, norm_error(doubles_of(ours[i]), values_of<double>(theirs[i])));
    return worst;
}

struct train_errors {
    double final = 0;       ///< parameters_error after the last step
    double trajectory = 0;  ///< its largest value after any step before first_flip
    double worst = 0;       ///< its largest value after any step
    int first_flip = -1;    ///< the first step whose ReLU saw a different sign in the two nets (-1: none)
    double flip_value = 0;  ///< libtorch's pre-activation there
};

/// Both nets from the same initial weights, each trained `steps` steps over the same
/// batches, libtorch's with optimizer c and ours with `ours` (c, or c with one setting
/// changed): the parameters' errors. Checks on the way that our zero_grad() leaves every
/// gradient undefined.
///
/// A ReLU is discontinuous in its gradient: when a hidden pre-activation lies within
/// rounding of 0 (float32: about 1e-7), the two GEMMs' roundings can put it on different
/// sides, and from that step on the runs legitimately part (momentum amplifies it to
/// ~1e-3). So each step compares the signs of the first layer's outputs; the trajectory
/// counts the steps before the first such flip.
template <class T, class Net>
train_errors train_difference(const problem& p, Net dnet, const opt_case& c, const opt_case& ours_case, int steps = 200) {
    CAPTURE(std::string(p.name));
    CAPTURE(ours_case.name);
    CAPTURE(std::string(type_name<T>()));
    torch::nn::Sequential tnet = torch_net(p);
    tnet->to(torch_dtype<T>);
    copy_parameters<T>(dnet.parameters(), tnet->parameters());

    // the batches, in order
    std::vector<torch::Tensor> tX, ty;
    std::vector<dt::tensor<T>> dX, dy_values;
    std::vector<dt::tensor<std::int64_t>> dy_classes;
    for (std::int64_t b = 0; b < p.X.size(0) / p.batch; ++b) {
        tX.push_back(p.X.narrow(0, b * p.batch, p.batch).to(torch_dtype<T>));
        dX.push_back(to_dt<T>(tX.back()));
        const torch::Tensor y = p.y.narrow(0, b * p.batch, p.batch);
        if (p.classify) {
            ty.push_back(y);
            dy_classes.push_back(to_dt<std::int64_t>(y));
        } else {
            ty.push_back(y.to(torch_dtype<T>));
            dy_values.push_back(to_dt<T>(ty.back()));
        }
    }
    const auto batches = static_cast<std::size_t>(tX.size());

    const auto lr_of = [&](const opt_case& o) { return (o.adam_family ? p.adam_lr : p.sgd_lr) * o.lr_scale; };
    const auto topt = torch_optimizer(tnet->parameters(), c, lr_of(c));
    bool zero_grad_cleared = true, backward_filled = true;
    train_errors errors;
    with_dt_optimizer<T>(dnet, ours_case, lr_of(ours_case), [&](auto& dopt) {
        for (int step = 0; step < steps; ++step) {
            const std::size_t b = static_cast<std::size_t>(step) % batches;
            if (p.classify && errors.first_flip < 0) {  // the signs the ReLU sees in both nets
                const dt::no_grad off;
                const torch::NoGradGuard torch_off;
                const auto ours = dnet.parameters();
                const auto theirs = tnet->parameters();
                const std::vector<double> h_ours = doubles_of(dt::linear(dX[b], ours[0], ours[1]));
                const std::vector<double> h_theirs =
                    values_of<double>(torch::nn::functional::linear(tX[b], theirs[0], theirs[1]));
                for (std::size_t i = 0; i < h_ours.size() && errors.first_flip < 0; ++i)
                    if ((h_ours[i] > 0) != (h_theirs[i] > 0)) {
                        errors.first_flip = step;
                        errors.flip_value = h_theirs[i];
                    }
            }
            topt->zero_grad();
            const torch::Tensor out = tnet->forward(tX[b]);
            const torch::Tensor tloss = p.classify ? torch::cross_entropy_loss(out, ty[b]) : torch::mse_loss(out, ty[b]);
            tloss.backward();
            topt->step();

            dopt.zero_grad();
            for (const auto& param : dopt.parameters()) zero_grad_cleared = zero_grad_cleared && !param.grad().defined();
            const dt::tensor<T> dout = dnet(dX[b]);
            const dt::tensor<T> dloss =
                p.classify ? dt::nn::cross_entropy(dout, dy_classes[b]) : dt::nn::mse_loss(dout, dy_values[b]);
            dloss.backward();
            for (const auto& param : dopt.parameters()) backward_filled = backward_filled && param.grad().defined();
            dopt.step();
            errors.final = parameters_error(dnet.parameters(), tnet->parameters());
            if (errors.first_flip < 0) errors.trajectory = std::max(errors.trajectory, errors.final);
            errors.worst = std::max(errors.worst, errors.final);
        }
    });
    CHECK(zero_grad_cleared);  // PyTorch 2.x's set_to_none
    CHECK(backward_filled);
    return errors;
}

template <class T>
auto dt_mlp() {
    return dt::nn::sequential(dt::nn::linear<T>(64, 128), dt::nn::relu{}, dt::nn::linear<T>(128, 10));
}

/// Every optimizer case of the family (sgd, or adam and adamw) on problem p: within
/// tolerance after the last step and after every step; with one setting changed, outside it.
template <class T, class MakeNet>
void check_optimizers(const problem& p, bool adam_family, MakeNet make_net) {
    const double tol = train_tolerance<T>;
    for (const auto& [c, changed] : optimizer_cases()) {
        if (c.adam_family != adam_family) continue;
        CAPTURE(std::string(p.name));
        CAPTURE(c.name);
        CAPTURE(std::string(type_name<T>()));
        const train_errors diff = train_difference<T>(p, make_net(), c, c);
        CHECK(diff.trajectory <= tol);
        if (diff.first_flip < 0) {
            CHECK(diff.final <= tol);
        } else {  // compared up to the flip; a flip must come from rounding, not from a wrong value
            MESSAGE(std::string(p.name), " ", std::string(type_name<T>()), " ", c.name, ": a hidden pre-activation of ", diff.flip_value,
                    " took different signs in the two nets at step ", diff.first_flip,
                    "; the parameters are compared up to there, final difference ", diff.final);
            CHECK(std::abs(diff.flip_value) <= 1e3 * std::numeric_limits<T>::epsilon());
        }
        // ours with one setting changed, against torch's with c: the comparison sees that setting
        const train_errors changed_diff = train_difference<T>(p, make_net(), c, changed);
        CAPTURE(changed.name);
        CHECK(changed_diff.worst > 10 * tol);
        if (verbose())
            std::printf("%-17s %s %-34s rel. diff %.2e (max over steps %.2e, flip at %d)  [%s: %.2e, max %.2e]\n",
                        p.name, type_name<T>(), c.name.c_str(), diff.final, diff.trajectory, diff.first_flip,
                        changed.name.c_str(), changed_diff.final, changed_diff.worst);
    }
}

}  // namespace

TEST_CASE_TEMPLATE("train: losses equal libtorch's (values and gradients, every reduction, large logits)", T, double,
                   float) {
    check_losses<T>();
}

TEST_CASE_TEMPLATE("train: optim::sgd on D2L's linear regression equals torch::optim::SGD over 200 steps", T, double,
                   float) {
    check_optimizers<T>(linear_regression(), false, [] { return dt::nn::linear<T>(2, 1); });
}

TEST_CASE_TEMPLATE("train: optim::sgd on a 64-128-10 MLP with cross_entropy equals torch::optim::SGD over 200 steps",
                   T, double, float) {
    check_optimizers<T>(mlp_data(), false, [] { return dt_mlp<T>(); });
}

TEST_CASE_TEMPLATE("train: gradients accumulate across two backward() calls as in libtorch (MLP)", T, double, float) {
    const problem& p = mlp_data();
    const double tol = loss_tolerance<T> * 10;  // a few layers of sums
    torch::nn::Sequential tnet = torch_net(p);
    tnet->to(torch_dtype<T>);
    const auto dnet = dt_mlp<T>();
    copy_parameters<T>(dnet.parameters(), tnet->parameters());
    const auto batch = [&](std::int64_t b) { return p.X.narrow(0, b * p.batch, p.batch).to(torch_dtype<T>); };
    const auto labels = [&](std::int64_t b) { return p.y.narrow(0, b * p.batch, p.batch); };
    const auto grads_error = [&](const std::vector<torch::Tensor>& theirs) {
        double worst = 0;
        const auto ours = dnet.parameters();
        REQUIRE(ours.size() == theirs.size());
        for (std::size_t i = 0; i < ours.size(); ++i) {
            REQUIRE(ours[i].grad().defined());
            worst = std::max(worst, norm_error(doubles_of(ours[i].grad()), values_of<double>(theirs[i])));
        }
        return worst;
    };
    const auto torch_grads = [&] {
        std::vector<torch::Tensor> g;
        for (const auto& param : tnet->parameters()) g.push_back(param.grad().clone());
        return g;
    };

    // first backward: cross_entropy (mean) of batch 0; second: summed cross_entropy of batch 1
    torch::cross_entropy_loss(tnet->forward(batch(0)), labels(0)).backward();
    dt::nn::cross_entropy(dnet(to_dt<T>(batch(0))), to_dt<std::int64_t>(labels(0))).backward();
    const auto first = torch_grads();
    const double first_error = grads_error(first);
    CHECK(first_error <= tol);

    torch::cross_entropy_loss(tnet->forward(batch(1)), labels(1), {}, at::Reduction::Sum).backward();
    dt::nn::cross_entropy(dnet(to_dt<T>(batch(1))), to_dt<std::int64_t>(labels(1)), dt::nn::reduction::sum).backward();
    const double accumulated_error = grads_error(torch_grads());
    CHECK(accumulated_error <= tol);
    CHECK(grads_error(first) > 1e-3);  // the second backward added something

    // and the same graph twice (retain_graph): the gradient of batch 2 added twice more
    const torch::Tensor tloss = torch::cross_entropy_loss(tnet->forward(batch(2)), labels(2));
    tloss.backward({}, /*retain_graph=*/true);
    tloss.backward();
    const dt::tensor<T> dloss = dt::nn::cross_entropy(dnet(to_dt<T>(batch(2))), to_dt<std::int64_t>(labels(2)));
    dloss.backward(true);
    dloss.backward();
    const double retained_error = grads_error(torch_grads());
    CHECK(retained_error <= tol);
    if (verbose())
        std::printf("gradient accumulation %s: after one backward %.2e, two %.2e, four (retain_graph) %.2e\n",
                    type_name<T>(), first_error, accumulated_error, retained_error);
}

TEST_CASE_TEMPLATE("train: optim::adam and adamw on D2L's linear regression equal torch::optim's over 200 steps", T,
                   double, float) {
    check_optimizers<T>(linear_regression(), true, [] { return dt::nn::linear<T>(2, 1); });
}

TEST_CASE_TEMPLATE("train: optim::adam and adamw on a 64-128-10 MLP equal torch::optim's over 200 steps", T, double,
                   float) {
    check_optimizers<T>(mlp_data(), true, [] { return dt_mlp<T>(); });
}

TEST_CASE_TEMPLATE("train: nn::clip_grad_norm_ equals torch::nn::utils::clip_grad_norm_ (2, 1, 3 and inf norms)", T,
                   double, float) {
    const problem& p = mlp_data();
    const double tol = loss_tolerance<T> * 10;
    for (const double norm_type : {2.0, 1.0, 3.0, std::numeric_limits<double>::infinity()}) {
        for (const double max_norm : {1e-2, 1e3}) {  // clipped, and left alone
            CAPTURE(norm_type);
            CAPTURE(max_norm);
            torch::nn::Sequential tnet = torch_net(p);
            tnet->to(torch_dtype<T>);
            const auto dnet = dt_mlp<T>();
            copy_parameters<T>(dnet.parameters(), tnet->parameters());
            const auto X = p.X.narrow(0, 0, p.batch).to(torch_dtype<T>);
            const auto y = p.y.narrow(0, 0, p.batch);
            torch::cross_entropy_loss(tnet->forward(X), y).backward();
            dt::nn::cross_entropy(dnet(to_dt<T>(X)), to_dt<std::int64_t>(y)).backward();
            const double theirs = torch::nn::utils::clip_grad_norm_(tnet->parameters(), max_norm, norm_type);
            const double ours = dt::nn::clip_grad_norm_(dnet, max_norm, norm_type);
            CHECK(std::abs(ours - theirs) <= tol * std::abs(theirs));
            const auto params = dnet.parameters();
            const auto tparams = tnet->parameters();
            for (std::size_t i = 0; i < params.size(); ++i)
                CHECK(norm_error(doubles_of(params[i].grad()), values_of<double>(tparams[i].grad())) <= tol);
        }
    }
}
