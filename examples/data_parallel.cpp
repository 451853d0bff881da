// The digits MLP of train_digits.cpp trained on several devices or processes (DESIGN §13).
//
//   data_parallel [data/digits.csv.gz]                    one process: every GPU of
//                                                         try_all_gpus() (the CPU without one)
//   mpirun -np 4 data_parallel [data/digits.csv.gz]       four processes, one replica each
//   srun -n 4 data_parallel [data/digits.csv.gz]          the same under Slurm
//
// Every rank reads the same data, draws the same split and the same batches (one seed);
// rank r trains on its quarter of each batch, and distributed_data_parallel averages the
// gradients, so the ranks take the steps one process takes on the whole batch. Exits
// non-zero below 95% test accuracy.
#include <devtensor/devtensor.hpp>
#include <devtensor/dist/mpi.hpp>

#include "digits.hpp"  // read_digits

#include <cstdint>
#include <cstdio>
#include <vector>

namespace dt = devtensor;

namespace {

/// 30 epochs of Adam on batches of 64, this rank taking rows [first, first + count) of each.
template <class Model, class X, class Y>
void train(const Model& model, const X& X_train, const Y& y_train, int rank, int ranks, dt::generator& gen) {
    dt::optim::adam opt(model, {.lr = 1e-3});
    const auto data = dt::data::tensor_dataset(X_train, y_train);
    for (int epoch = 1; epoch <= 30; ++epoch) {
        double total = 0;
        std::int64_t batches = 0;
        for (auto [Xb, yb] : dt::data::loader(data, {.batch_size = 64, .shuffle = true}, gen)) {
            const std::int64_t rows = Xb.shape()[0], first = rows * rank / ranks, count = rows * (rank + 1) / ranks - first;
            auto loss = dt::nn::cross_entropy(model(Xb.narrow(0, first, count)), yb.narrow(0, first, count));
            opt.zero_grad();
            loss.backward();
            opt.step();
            total += loss.item();
            ++batches;
        }
        if (rank == 0 && (epoch % 10 == 0 || epoch == 1))
            std::printf("epoch %2d  loss %.4f (rank 0's share)\n", epoch, total / static_cast<double>(batches));
    }
}

/// The share of the test set the model classifies right.
template <class Model, class X, class Y>
double accuracy(const Model& model, const X& X_test, const Y& y_test) {
    const dt::no_grad eval;
    const auto correct = dt::sum(dt::eq(dt::argmax(model(X_test), 1), y_test)).item();
    return static_cast<double>(correct) / static_cast<double>(y_test.numel());
}
}  // namespace

int main(int argc, char** argv) {
    dt::dist::init(argc, argv);
    const auto world = dt::dist::world();
    const int rank = world.rank(), ranks = world.size();

    std::vector<float> pixels;
    std::vector<std::int64_t> labels;
    read_digits(argc > 1 ? argv[1] : "data/digits.csv.gz", pixels, labels);
    const auto n = static_cast<std::int64_t>(labels.size());
    const auto X = dt::from_values<float>(pixels, {n, 64});
    const auto y = dt::from_values<std::int64_t>(labels, {n});
    dt::generator gen(2026);  // the same on every rank: the same split, weights and batches
    const auto order = dt::data::randperm(n, gen);
    const std::int64_t n_train = n * 8 / 10;
    const auto train_rows = order.narrow(0, 0, n_train), test_rows = order.narrow(0, n_train, n - n_train);
    const auto X_train = dt::index_select(X, 0, train_rows), X_test = dt::index_select(X, 0, test_rows);
    const auto y_train = dt::index_select(y, 0, train_rows), y_test = dt::index_select(y, 0, test_rows);

    auto net = dt::nn::sequential(dt::nn::linear<float>(64, 128, true, gen), dt::nn::relu{},
                                  dt::nn::linear<float>(128, 10, true, gen));
    double share = 0;
    if (ranks > 1) {  // one replica per process, on the CPU
        if (rank == 0) std::printf("training on %d processes, %lld images\n", ranks, static_cast<long long>(n_train));
        const dt::nn::distributed_data_parallel model(net, world);
        train(model, X_train, y_train, rank, ranks, gen);
        share = accuracy(net, X_test, y_test);
    } else {  // one process: a replica on every GPU
        const auto devices = dt::try_all_gpus();
        std::printf("training on %zu device(s) (%s first), %lld images\n", devices.size(), dt::to_string(devices[0]).c_str(),
                    static_cast<long long>(n_train));
        const dt::nn::data_parallel model(net, devices);
        train(model, X_train.to(devices[0]), y_train.to(devices[0]), 0, 1, gen);
        share = accuracy(model, X_test.to(devices[0]), y_test.to(devices[0]));
    }
    if (rank == 0) std::printf("test accuracy %.1f%%\n", 100.0 * share);
    return share >= 0.95 ? 0 : 1;
}
