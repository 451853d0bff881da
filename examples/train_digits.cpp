// An MLP (64 → 128 → 10, ReLU) trained with Adam on the real handwritten-digits
// data set (scripts/get-digits.sh fetches it from Debian's python3-sklearn): 1,797
// 8×8 images, an 80/20 split drawn from Philox, on try_gpu(). Prints the loss per
// epoch and the test accuracy.
// Usage: train_digits [data/digits.csv.gz]
#include <devtensor/devtensor.hpp>

#include "digits.hpp"  // read_digits

#include <cstdint>
#include <cstdio>
#include <vector>

namespace dt = devtensor;

int main(int argc, char** argv) {
    std::vector<float> pixels;
    std::vector<std::int64_t> labels;
    read_digits(argc > 1 ? argv[1] : "data/digits.csv.gz", pixels, labels);
    const auto n = static_cast<std::int64_t>(labels.size());
    const auto X = dt::from_values<float>(pixels, {n, 64});
    const auto y = dt::from_values<std::int64_t>(labels, {n});

    dt::generator gen(2026);
    const auto order = dt::data::randperm(n, gen);  // the 80/20 split
    const std::int64_t n_train = n * 8 / 10;
    const auto train_rows = order.narrow(0, 0, n_train), test_rows = order.narrow(0, n_train, n - n_train);

    const auto dev = dt::try_gpu();
    const auto X_train = dt::index_select(X, 0, train_rows).to(dev), X_test = dt::index_select(X, 0, test_rows).to(dev);
    const auto y_train = dt::index_select(y, 0, train_rows).to(dev), y_test = dt::index_select(y, 0, test_rows).to(dev);

    auto net = dt::nn::sequential(dt::nn::linear<float>(64, 128, true, gen), dt::nn::relu{},
                                  dt::nn::linear<float>(128, 10, true, gen))
                   .to(dev);
    dt::optim::adam opt(net, {.lr = 1e-3});
    const auto train = dt::data::tensor_dataset(X_train, y_train);
    std::printf("training on %s: %lld images, testing on %lld\n", dt::to_string(dev).c_str(),
                static_cast<long long>(n_train), static_cast<long long>(n - n_train));
    for (int epoch = 1; epoch <= 30; ++epoch) {
        double total = 0;
        std::int64_t batches = 0;
        for (auto [Xb, yb] : dt::data::loader(train, {.batch_size = 64, .shuffle = true}, gen)) {
            auto loss = dt::nn::cross_entropy(net(Xb), yb);
            opt.zero_grad();
            loss.backward();
            opt.step();
            total += loss.item();
            ++batches;
        }
        if (epoch % 5 == 0 || epoch == 1) std::printf("epoch %2d  loss %.4f\n", epoch, total / static_cast<double>(batches));
    }
    const dt::no_grad eval;
    const auto predicted = dt::argmax(net(X_test), 1);
    const auto correct = dt::sum(dt::eq(predicted, y_test)).item();
    std::printf("test accuracy %.1f%% (%lld of %lld)\n", 100.0 * static_cast<double>(correct) / static_cast<double>(n - n_train),
                static_cast<long long>(correct), static_cast<long long>(n - n_train));
    return static_cast<double>(correct) >= 0.95 * static_cast<double>(n - n_train) ? 0 : 1;
}
