// Autograd (DESIGN §12): every differentiable op's gradient against central finite
// differences in double, over broadcast and strided operands; accumulation, hooks,
// no_grad, detach, and each misuse as a clear autograd_error.
#include "test_support.hpp"

#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace {

using tensor = dt::tensor<double, dt::cpu_device>;
using fn = std::function<tensor(const std::vector<tensor>&)>;

/// Values in [lo, hi) of shape s, from a fixed seed per call.
tensor values(const dt::shape& s, double lo = -1.5, double hi = 1.5) {
    static std::uint64_t seed = 1;
    dt::generator gen(seed++);
    tensor t = dt::rand<double>(s, dt::cpu_device{}, gen);
    for (std::int64_t i = 0; i < t.numel(); ++i) t.data()[i] = lo + (hi - lo) * t.data()[i];
    return t;
}

double evaluate(const fn& f, const std::vector<tensor>& inputs, const tensor& weights) {
    const dt::no_grad off;
    const tensor out = f(inputs);
    return out.numel() == 0 ? 0.0 : dt::sum(out * weights).item();
}

/// f's gradient with respect to every input, by backward(), against central
/// differences (step 1e-6): the largest absolute error, relative to max(1, |g|).
void check_gradients(const std::string& what, const fn& f, std::vector<tensor> inputs) {
    CAPTURE(what);
    for (auto& x : inputs) x.requires_grad_();
    const tensor out = f(inputs);
    REQUIRE(out.requires_grad());
    const tensor weights = out.numel() == 0 ? tensor{} : values(out.shape(), 0.5, 2.0);
    const tensor loss = out.numel() == 0 ? dt::sum(out) : dt::sum(out * weights);
    loss.backward();
    std::vector<tensor> plain;
    for (const auto& x : inputs) plain.push_back(x.detach().clone());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        CAPTURE(i);
        const tensor g = inputs[i].grad();
        REQUIRE(g.defined());
        REQUIRE(g.shape() == inputs[i].shape());
        const tensor gc = g.contiguous();
        for (std::int64_t j = 0; j < plain[i].numel(); ++j) {
            const double keep = plain[i].data()[j];
            const double h = 1e-6;
            plain[i].data()[j] = keep + h;
            const double up = evaluate(f, plain, weights);
            plain[i].data()[j] = keep - h;
            const double down = evaluate(f, plain, weights);
            plain[i].data()[j] = keep;
            const double numeric = (up - down) / (2 * h);
            const double analytic = gc.data()[j];
            CAPTURE(j);
            CHECK(std::abs(numeric - analytic) <= 1e-6 * std::max(1.0, std::abs(analytic)));
        }
    }
}

}  // namespace

TEST_CASE("autograd: elementwise ops, broadcast and with scalars, against finite differences") {
    using V = std::vector<tensor>;
    check_gradients("add broadcast", [](const V& x) { return x[0] + x[1]; }, {values({2, 3}), values({3})});
    check_gradients("add [2,1]+[1,3]", [](const V& x) { return dt::add(x[0], x[1]); }, {values({2, 1}), values({1, 3})});
    check_gradients("sub", [](const V& x) { return x[0] - x[1]; }, {values({4}), values({3, 4})});
    check_gradients("mul", [](const V& x) { return x[0] * x[1]; }, {values({2, 3}), values({2, 3})});
    check_gradients("mul by itself", [](const V& x) { return x[0] * x[0]; }, {values({5})});
    check_gradients("div", [](const V& x) { return x[0] / x[1]; }, {values({2, 3}), values({3}, 0.5, 2.0)});
    check_gradients("scalars", [](const V& x) { return (2.0 - x[0]) * 3.0 / 4.0 + 1.0; }, {values({3})});
    check_gradients("neg", [](const V& x) { return -dt::neg(x[0]); }, {values({3})});
    check_gradients("abs", [](const V& x) { return dt::abs(x[0]); }, {values({6})});
    check_gradients("exp", [](const V& x) { return dt::exp(x[0]); }, {values({6})});
    check_gradients("log", [](const V& x) { return dt::log(x[0]); }, {values({6}, 0.1, 3.0)});
    check_gradients("sqrt", [](const V& x) { return dt::sqrt(x[0]); }, {values({6}, 0.1, 3.0)});
    check_gradients("tanh", [](const V& x) { return dt::tanh(x[0]); }, {values({6})});
    check_gradients("sigmoid", [](const V& x) { return dt::sigmoid(x[0]); }, {values({6})});
    check_gradients("relu", [](const V& x) { return dt::relu(x[0]); }, {values({6})});
    check_gradients("clamp", [](const V& x) { return dt::clamp(x[0], -0.5, 0.7); }, {values({8})});
    check_gradients("chain", [](const V& x) { return dt::tanh(x[0] * x[1] + x[0]) - dt::exp(x[1]) / 3.0; },
                    {values({2, 3}), values({3})});
}

TEST_CASE("autograd: reductions, matmul and linear against finite differences") {
    using V = std::vector<tensor>;
    check_gradients("sum", [](const V& x) { return dt::sum(x[0]); }, {values({2, 3})});
    check_gradients("sum dims", [](const V& x) { return dt::sum(x[0], {0, 2}); }, {values({2, 3, 2})});
    check_gradients("sum keepdim", [](const V& x) { return dt::sum(x[0], {1}, true); }, {values({2, 3})});
    check_gradients("mean", [](const V& x) { return dt::mean(x[0]); }, {values({2, 3})});
    check_gradients("mean dim", [](const V& x) { return dt::mean(x[0], {-1}); }, {values({2, 3})});
    check_gradients("matmul 2-D", [](const V& x) { return dt::matmul(x[0], x[1]); }, {values({3, 4}), values({4, 2})});
    check_gradients("matmul 1-D x 2-D", [](const V& x) { return dt::matmul(x[0], x[1]); }, {values({4}), values({4, 2})});
    check_gradients("matmul 2-D x 1-D", [](const V& x) { return dt::matmul(x[0], x[1]); }, {values({3, 4}), values({4})});
    check_gradients("dot", [](const V& x) { return dt::matmul(x[0], x[1]); }, {values({4}), values({4})});
    check_gradients("matmul batch broadcast", [](const V& x) { return dt::matmul(x[0], x[1]); },
                    {values({2, 1, 3, 4}), values({3, 4, 2})});
    check_gradients("matmul transposed operand", [](const V& x) { return dt::matmul(x[0].t(), x[1]); },
                    {values({4, 3}), values({4, 2})});
    check_gradients("linear", [](const V& x) { return dt::linear(x[0], x[1], x[2]); },
                    {values({5, 3}), values({4, 3}), values({4})});
    check_gradients("linear no bias, batch dims", [](const V& x) { return dt::linear(x[0], x[1]); },
                    {values({2, 3, 3}), values({4, 3})});
    check_gradients("linear batch-shaped bias", [](const V& x) { return dt::linear(x[0], x[1], x[2]); },
                    {values({5, 3}), values({4, 3}), values({5, 1})});
    check_gradients("linear transposed weight", [](const V& x) { return dt::linear(x[0], x[1].t(), x[2]); },
                    {values({5, 3}), values({3, 4}), values({4})});
}

TEST_CASE("autograd: views pass the gradient back to the elements they show") {
    using V = std::vector<tensor>;
    check_gradients("transpose", [](const V& x) { return x[0].transpose(0, 2) * 1.0; }, {values({2, 3, 4})});
    check_gradients("permute", [](const V& x) { return dt::exp(x[0].permute({2, 0, 1})); }, {values({2, 3, 4})});
    check_gradients("view", [](const V& x) { return x[0].view({3, 2}) * x[0].view({3, 2}); }, {values({2, 3})});
    check_gradients("reshape copying", [](const V& x) { return dt::tanh(x[0].t().reshape({6})); }, {values({2, 3})});
    check_gradients("flatten", [](const V& x) { return x[0].flatten() * 2.0; }, {values({2, 3})});
    check_gradients("squeeze", [](const V& x) { return x[0].squeeze() * 2.0; }, {values({2, 1, 3})});
    check_gradients("squeeze dim", [](const V& x) { return x[0].squeeze(1) * 2.0; }, {values({2, 1, 3})});
    check_gradients("unsqueeze", [](const V& x) { return x[0].unsqueeze(1) * x[1]; }, {values({2, 3}), values({4, 1})});
    check_gradients("narrow", [](const V& x) { return dt::exp(x[0].narrow(1, 1, 2)); }, {values({2, 4})});
    check_gradients("select and []", [](const V& x) { return x[0][1] * x[0].select(1, 0); }, {values({3, 3})});
    check_gradients("expand", [](const V& x) { return x[0].expand({4, 3}) * x[1]; }, {values({1, 3}), values({4, 3})});
    check_gradients("contiguous of a view", [](const V& x) { return x[0].t().contiguous() * 2.0; }, {values({2, 3})});
    check_gradients("clone", [](const V& x) { return x[0].clone() * x[0]; }, {values({3})});
    check_gradients("to the same device", [](const V& x) { return x[0].to(dt::cpu_device{}) * x[0].cpu(); },
                    {values({3})});
    check_gradients("cat", [](const V& x) { return dt::exp(dt::cat(V{x[0], x[1].t(), x[0]}, 0)); },
                    {values({2, 3}), values({3, 1})});
    check_gradients("cat of six (past the edges a node holds inline)",
                    [](const V& x) { return dt::exp(dt::cat(V{x[0], x[1].t(), x[0], x[1].t(), x[0], x[0]}, 0)); },
                    {values({2, 3}), values({3, 1})});
    check_gradients("cat of empty and one", [](const V& x) { return dt::cat(V{x[0], x[1]}, 1) * 3.0; },
                    {values({2, 0}), values({2, 3})});
    check_gradients("stack", [](const V& x) { return dt::stack(V{x[0], x[1]}, 1) * dt::stack(V{x[1], x[0]}, 1); },
                    {values({2, 3}), values({2, 3})});
}

TEST_CASE("autograd: gradients accumulate; no_grad, detach and hooks") {
    tensor x = dt::from_values<double>({1, 2, 3}, {3});
    x.requires_grad_();
    CHECK(x.requires_grad());
    CHECK(x.is_leaf());
    CHECK_FALSE(x.grad().defined());
    dt::sum(x * x).backward();
    CHECK(x.grad().to_vector() == std::vector<double>{2, 4, 6});
    dt::sum(x * 3.0).backward();  // accumulates, as PyTorch
    CHECK(x.grad().to_vector() == std::vector<double>{5, 7, 9});
    x.set_grad({});
    CHECK_FALSE(x.grad().defined());

    const tensor copy = x;  // a copy of the handle shares the record
    dt::sum(copy * 2.0).backward();
    CHECK(x.grad().to_vector() == std::vector<double>{2, 2, 2});

    {
        const dt::no_grad off;
        CHECK_FALSE(dt::is_grad_enabled());
        const tensor y = x * 2.0;
        CHECK_FALSE(y.requires_grad());
    }
    CHECK(dt::is_grad_enabled());
    const tensor d = x.detach();
    CHECK_FALSE(d.requires_grad());
    CHECK(d.data() == x.data());
    const tensor y = x * 2.0;
    CHECK(y.requires_grad());
    CHECK_FALSE(y.is_leaf());

    int calls = 0;
    x.register_post_accumulate_grad_hook([&](dt::tensor<double>& g) {
        ++calls;
        CHECK(g.numel() == 3);
    });
    dt::sum(x).backward();
    CHECK(calls == 1);
    CHECK(x.grad().to_vector() == std::vector<double>{3, 3, 3});

    // a non-scalar with an explicit gradient
    x.set_grad({});
    (x * x).backward(dt::from_values<double>({1, 0, -1}, {3}));
    CHECK(x.grad().to_vector() == std::vector<double>{2, 0, -6});

    // a leaf's gradient has memory of its own: the caller's gradient, or a view of it, is
    // copied (a fresh gradient that nothing else holds is taken as it is)
    auto given = dt::from_values<double>({1, 2, 3}, {3});
    for (int way = 0; way < 3; ++way) {
        CAPTURE(way);
        x.set_grad({});
        if (way == 0) x.backward(given);
        else if (way == 1) x.view({3, 1}).backward(given.view({3, 1}));
        else (x * 1.0).backward(given);
        given(0) = 100.0;  // the caller's tensor changes afterwards
        CHECK(x.grad().data() != given.data());
        CHECK(x.grad().to_vector() == std::vector<double>{1, 2, 3});
        given(0) = 1.0;
    }

    // an empty tensor's gradient is empty
    tensor e = dt::zeros<double>({0, 3});
    e.requires_grad_();
    dt::sum(e * 2.0).backward();
    CHECK(e.grad().shape() == dt::shape{0, 3});

    // integer tensors never record
    const auto i = dt::from_values<int>({1, 2}, {2});
    CHECK_FALSE((i * 2).requires_grad());
}

TEST_CASE("autograd: a graph past backward's linear table (80 nodes, each output used twice) sums every path once") {
    // y0 = x, y(i+1) = (yi + yi) + x: y40 = (2^41 - 1) x, exact in double, through 80 nodes
    // (backward looks nodes up linearly up to 32 of them, through a hash index past that;
    // its bookkeeping outgrows the 16 KiB on the stack and goes on on the heap).
    auto x = dt::tensor<double, dt::cpu_device>(dt::shape{3}, dt::cpu_device{});
    for (std::int64_t i = 0; i < 3; ++i) x.data()[i] = static_cast<double>(i) - 1.0;
    x.requires_grad_();
    auto y = x;
    for (int i = 0; i < 40; ++i) y = (y + y) + x;
    const double slope = 2199023255551.0;  // 2^41 - 1
    auto loss = dt::sum(y);
    loss.backward(true);
    CHECK(x.grad().to_vector() == std::vector<double>(3, slope));
    loss.backward();  // the retained graph once more: the gradient accumulates
    CHECK(x.grad().to_vector() == std::vector<double>(3, 2 * slope));
    CHECK(y.to_vector() == std::vector<double>{-slope, 0.0, slope});
}

TEST_CASE("autograd: misuse is a clear autograd_error") {
    tensor x = dt::from_values<double>({1, 2, 3}, {3});
    x.requires_grad_();
    const auto message = [](auto&& f) {
        try {
            f();
        } catch (const dt::autograd_error& e) {
            return std::string(e.what());
        }
        return std::string("no autograd_error");
    };
    CHECK(message([&] { (x * 2.0).backward(); }).find("scalar outputs") != std::string::npos);
    CHECK(message([&] { dt::sum(x.detach()).backward(); }).find("does not require grad") != std::string::npos);

    const tensor loss = dt::sum(dt::exp(x));
    loss.backward();
    CHECK(message([&] { loss.backward(); }).find("second time") != std::string::npos);

    const tensor kept = dt::sum(dt::exp(x));
    kept.backward(true);
    CHECK_NOTHROW(kept.backward());

    tensor c = dt::from_values<double>({1, 1, 1}, {3});  // saved by mul, then changed in place
    const tensor y = dt::sum(x * c);
    dt::add_(c, 1.0);
    CHECK(message([&] { y.backward(); }).find("modified by an in-place operation") != std::string::npos);

    CHECK(message([&] { dt::add_(x, 1.0); }).find("in-place") != std::string::npos);
    {
        const dt::no_grad off;  // how optimizers update parameters
        CHECK_NOTHROW(dt::add_(x, 1.0));
    }
    CHECK_THROWS_AS(x.set_grad(dt::zeros<double>({2})), dt::shape_error);
    const tensor y2 = x * 2.0;
    CHECK(message([&] { tensor(y2).requires_grad_(false); }).find("detach()") != std::string::npos);
}
