// nn::distributed_data_parallel against libtorch 1.13's c10d::ProcessGroupGloo, run by
// mpirun on 2 ranks (tests/dist/CMakeLists.txt; argv[1]: the path of the Gloo group's
// FileStore). On every rank, the same float64 MLP from the same weights, each trained on
// its rank's half of one batch: ours averaging gradients with distributed_data_parallel
// over dist::world(), libtorch's with a Gloo all-reduce (sum, then / size) after each
// backward. The final weights agree per element; a libtorch run with no averaging does
// not, which shows that the check notices a missing average.
#define DOCTEST_CONFIG_IMPLEMENT
#include <devtensor/devtensor.hpp>
#include <devtensor/dist/mpi.hpp>
#include <devtensor/nn/distributed.hpp>

#include "regression.hpp"

#include <doctest/doctest.h>

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/torch.h>
// c10's logging (glog in Debian's build) defines CHECK as a fatal assertion: doctest's again.
#undef CHECK
#define CHECK DOCTEST_CHECK

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace dt = devtensor;
namespace dist = devtensor::dist;
using namespace std::chrono_literals;

namespace {

std::string store_path;  // argv[1]

using dist_tests::regression_data;
using dist_tests::regression_net;

template <class D>
torch::Tensor to_torch(const dt::tensor<double, D>& t) {
    return torch::tensor(t.to_vector(), torch::kFloat64).view(std::vector<std::int64_t>(t.shape().begin(), t.shape().end()));
}
std::vector<double> values_of(const torch::Tensor& t) {
    const torch::Tensor c = t.detach().contiguous();
    return {c.data_ptr<double>(), c.data_ptr<double>() + c.numel()};
}

/// The Gloo group of every rank, over 127.0.0.1, met through a FileStore that rank 0 makes fresh.
c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo_group(const dist::communicator& comm) {
    if (comm.rank() == 0) std::remove(store_path.c_str());  // a stale one from a killed run
    comm.barrier();
    const auto store = c10::make_intrusive<c10d::FileStore>(store_path, comm.size());
    const auto opts = c10d::ProcessGroupGloo::Options::create(30s);
    opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    return c10::make_intrusive<c10d::ProcessGroupGloo>(store, comm.rank(), comm.size(), opts);
}

constexpr int steps = 6;

/// libtorch's net from `initial`, trained like ours; `average`: Gloo-average the gradients.
std::vector<double> train_torch(const std::vector<std::vector<double>>& initial, c10d::ProcessGroupGloo& group,
                                const torch::Tensor& X, const torch::Tensor& y, bool average) {
    torch::nn::Sequential net(torch::nn::Linear(6, 16), torch::nn::Tanh(), torch::nn::Linear(16, 1));
    net->to(torch::kFloat64);
    const auto params = net->parameters();
    REQUIRE(params.size() == initial.size());
    {
        const torch::NoGradGuard off;
        for (std::size_t i = 0; i < params.size(); ++i) params[i].copy_(torch::tensor(initial[i], torch::kFloat64).view(params[i].sizes()));
    }
    torch::optim::SGD opt(params, torch::optim::SGDOptions(0.05).momentum(0.9));
    for (int step = 0; step < steps; ++step) {
        opt.zero_grad();
        torch::mse_loss(net->forward(X), y).backward();
        if (average)
            for (const auto& p : params) {
                std::vector<at::Tensor> grad{p.grad()};
                group.allreduce(grad)->wait();  // c10d::ReduceOp::SUM
                p.grad().div_(group.getSize());
            }
        opt.step();
    }
    std::vector<double> all;
    for (const auto& p : params)
        for (const double w : values_of(p)) all.push_back(w);
    return all;
}

/// max_i |got_i - want_i| / |want_i|.
double max_relative_difference(const std::vector<double>& got, const std::vector<double>& want) {
    REQUIRE(got.size() == want.size());
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
        if (got[i] != want[i]) worst = std::max(worst, std::abs(got[i] - want[i]) / std::abs(want[i]));
    return worst;
}

}  // namespace

TEST_CASE("distributed_data_parallel ends with the weights of libtorch's SGD over a ProcessGroupGloo all-reduce") {
    const auto comm = dist::world();
    const auto group = gloo_group(comm);
    const auto [X, y] = regression_data();
    const std::int64_t share = 24 / comm.size();
    const auto Xr = X.narrow(0, comm.rank() * share, share), yr = y.narrow(0, comm.rank() * share, share);

    auto net = regression_net();
    std::vector<std::vector<double>> initial;
    for (const auto& p : net.parameters()) initial.push_back(p.to_vector());
    dt::nn::distributed_data_parallel ddp(net, comm, {.bucket_bytes = 200});
    dt::optim::sgd opt(ddp, {.lr = 0.05, .momentum = 0.9});
    for (int step = 0; step < steps; ++step) {
        opt.zero_grad();
        dt::nn::mse_loss(ddp(Xr), yr).backward();
        opt.step();
    }
    std::vector<double> ours;
    for (const auto& p : net.parameters())
        for (const double w : p.to_vector()) ours.push_back(w);

    const auto tX = to_torch(Xr), ty = to_torch(yr);
    const double averaged = max_relative_difference(ours, train_torch(initial, *group, tX, ty, true));
    const double alone = max_relative_difference(ours, train_torch(initial, *group, tX, ty, false));
    std::printf("rank %d: %zu weights, max relative difference %.3g with Gloo averaging, %.3g without\n", comm.rank(),
                ours.size(), averaged, alone);
    CHECK(averaged < 1e-6);
    CHECK(alone > 1e-3);  // the check notices a missing average

    // The replicas are identical: the same bits on every rank.
    const auto everywhere = comm.all_gather(dt::from_values<double>(ours, {static_cast<std::int64_t>(ours.size())})).to_vector();
    for (int r = 1; r < comm.size(); ++r)
        CHECK(std::memcmp(everywhere.data(), everywhere.data() + static_cast<std::size_t>(r) * ours.size(), ours.size() * sizeof(double)) == 0);
}

int main(int argc, char** argv) {
    dist::init(argc, argv);
    (void)dist::world({.timeout = 30s});
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s FILESTORE_PATH [doctest options]\n", argv[0]);
        return 2;
    }
    store_path = argv[1];
    doctest::Context context(argc, argv);
    const int failed = context.run();
    // Every rank's verdict: mpirun reports the first non-zero exit, so all ranks agree.
    int any = failed != 0 ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return any;
}
