// A whole training run on "cuda:0" with no GPU (DESIGN §15): kernels.cuh's shells run
// on the host (DEVTENSOR_CUDA_EMULATED_BLOCK, every thread of every block in turn,
// the GEMM blocks in the race-checking emulated_block) against the runtime stand-in,
// whose device memory is host memory (tests/fake_cudart). Forward, loss, backward
// and optimizer step go through the very dispatch and kernels a GPU runs, and must
// give the CPU's bits: the parameters and the loss after every step.
#include "cuda_emulator.hpp"  // test::emulated_block, declared before kernels.cuh reads the macro
#define DEVTENSOR_CUDA_EMULATED_BLOCK ::test::emulated_block

#include "test_support.hpp"

#include <cstdint>
#include <vector>

namespace {

/// What a run leaves: every step's loss, then every parameter's elements.
template <class T>
struct run_bits {
    std::vector<T> losses;
    std::vector<std::vector<T>> parameters;
};

/// `steps` steps of an MLP (64 → 48 → 10, ReLU) typed for device D and placed on
/// `dev`, with the optimizer make(net), the loss `kind` (cross_entropy or mse_loss
/// against one-hot targets) and, when `clip`, clip_grad_norm_ before each step. The
/// batches alternate 40 rows (the GEMM kernel) and 12 (the GEMV kernel).
template <class T, dt::Device D, class Make>
run_bits<T> train(const D& dev, Make make, bool mse, bool clip, int steps) {
    dt::generator gen(7);
    const auto net = dt::nn::sequential(dt::nn::linear<T, D>(64, 48, true, gen), dt::nn::relu{},
                                        dt::nn::linear<T, D>(48, 10, true, gen))
                         .to(dev);
    const auto X = dt::randn<T>({64, 64}, dt::cpu_device{}, gen).to(dev);
    const auto y = dt::randint<std::int64_t>(0, 10, {64}, dt::cpu_device{}, gen).to(dev);
    const auto targets = dt::randn<T>({64, 10}, dt::cpu_device{}, gen).to(dev);
    auto opt = make(net);
    run_bits<T> bits;
    for (int s = 0; s < steps; ++s) {
        const std::int64_t first = s % 2 == 0 ? 0 : 40, rows = s % 2 == 0 ? 40 : 12;
        const auto out = net(X.narrow(0, first, rows));
        auto loss = mse ? dt::nn::mse_loss(out, targets.narrow(0, first, rows))
                        : dt::nn::cross_entropy(out, y.narrow(0, first, rows));
        opt.zero_grad();
        loss.backward();
        if (clip) dt::nn::clip_grad_norm_(net, 0.5);
        opt.step();
        bits.losses.push_back(loss.item());
    }
    for (const auto& p : net.parameters()) bits.parameters.push_back(p.to_vector());
    return bits;
}

template <class T>
void check_same(const run_bits<T>& gpu, const run_bits<T>& cpu) {
    CHECK(same_bits(gpu.losses, cpu.losses));
    REQUIRE(gpu.parameters.size() == cpu.parameters.size());
    for (std::size_t i = 0; i < cpu.parameters.size(); ++i) {
        CAPTURE(i);
        CHECK(same_bits(gpu.parameters[i], cpu.parameters[i]));
    }
}

/// The run on the CPU and on the emulated cuda:0 (the layers statically typed for a GPU).
template <class T, class Make>
void check_training(Make make, bool mse, bool clip) {
    const auto cpu = train<T>(dt::cpu_device{}, make, mse, clip, 4);
    const auto gpu = train<T>(dt::cuda_device{0}, make, mse, clip, 4);
    check_same(gpu, cpu);
    CHECK(cpu.losses.back() < cpu.losses.front());  // the run does train
}

}  // namespace

TEST_CASE("the stand-in runtime gives one device, and the emulated kernels write its memory") {
    REQUIRE(dt::cuda_available());
    const auto x = dt::arange<float>(0, 10, 1, dt::cuda_device{0});
    CHECK(dt::sum(x * x).item() == 285.0f);
}

TEST_CASE_TEMPLATE("emulated CUDA training steps (forward, cross_entropy, backward, sgd) give the CPU's bits", T, float,
                   double) {
    check_training<T>([](const auto& net) { return dt::optim::sgd(net, {.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-3, .nesterov = true}); },
                      false, false);
}

TEST_CASE_TEMPLATE("emulated CUDA training steps with adam, amsgrad and clip_grad_norm_ give the CPU's bits", T, float,
                   double) {
    check_training<T>([](const auto& net) { return dt::optim::adam(net, {.lr = 1e-2, .amsgrad = true}); }, false, true);
}

TEST_CASE("emulated CUDA training steps with mse_loss and adamw give the CPU's bits") {
    check_training<float>([](const auto& net) { return dt::optim::adamw(net, {.lr = 1e-2, .weight_decay = 0.05}); }, true,
                          false);
}

TEST_CASE("an optimizer over a net on a static CUDA device keeps its state as tensor<T, cuda_device>") {
    const auto net = dt::nn::sequential(dt::nn::linear<float, dt::cuda_device>(3, 2)).to(dt::cuda_device{0});
    dt::optim::sgd opt(net, {.lr = 0.1, .momentum = 0.5});
    dt::sum(net(dt::ones<float>({4, 3}, dt::cuda_device{0}))).backward();
    opt.step();
    const dt::tensor<float, dt::cuda_device>& buffer = opt.momentum_buffer(0);
    CHECK(buffer.is_cuda());
    CHECK(buffer.shape() == dt::shape{2, 3});
}
