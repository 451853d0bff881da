// D2L's linear regression from scratch, the devtensor way: y = Xw + b + noise with
// w = [2, -3.4], b = 4.2, recovered by minibatch SGD on try_gpu().
#include <devtensor/devtensor.hpp>

#include <cmath>
#include <cstdio>

namespace dt = devtensor;

int main() {
    const auto dev = dt::try_gpu();
    dt::generator gen(42);
    // the synthetic data, made on the CPU (the same numbers wherever the net trains)
    const auto true_w = dt::from_values<float>({2.0f, -3.4f}, {2, 1});
    const float true_b = 4.2f;
    const auto X = dt::randn<float>({1000, 2}, dt::cpu_device{}, gen);
    const auto y = dt::matmul(X, true_w) + true_b + dt::randn<float>({1000, 1}, dt::cpu_device{}, gen) * 0.01f;

    auto net = dt::nn::linear<float>(2, 1, true, gen).to(dev);
    auto opt = dt::optim::sgd(net, {.lr = 0.03});
    const auto data = dt::data::tensor_dataset(X, y);
    for (int epoch = 1; epoch <= 3; ++epoch) {
        for (auto [Xb, yb] : dt::data::loader(data, {.batch_size = 10, .shuffle = true}, gen)) {
            auto loss = dt::nn::mse_loss(net(Xb.to(dev)), yb.to(dev));
            opt.zero_grad();
            loss.backward();
            opt.step();
        }
        const dt::no_grad eval;
        std::printf("epoch %d, loss %f\n", epoch, dt::nn::mse_loss(net(X.to(dev)), y.to(dev)).item());
    }
    const auto w = net.weight.cpu(), b = net.bias.cpu();
    std::printf("w = [%.4f, %.4f] (true [2, -3.4]), b = %.4f (true 4.2) on %s\n", w(0, 0), w(0, 1), b(0),
                dt::to_string(dev).c_str());
    const bool recovered = std::abs(w(0, 0) - 2.0f) < 0.01f && std::abs(w(0, 1) + 3.4f) < 0.01f && std::abs(b(0) - 4.2f) < 0.01f;
    return recovered ? 0 : 1;
}
