// dist::nccl_communicator on the GPUs of this machine (the cases skip without one):
// the one-process form over try_all_gpus(), and the one-rank-per-process form with
// a single rank (the lent GPU machine has one GPU and no MPI; scripts/gpu-check.sh
// runs this). Every result is checked against the CPU's. Built by nvcc (the
// distributed_data_parallel case runs kernels).
#include <devtensor/devtensor.hpp>
#include <devtensor/dist/nccl.hpp>

#include "../test_support.hpp"

#include <chrono>
#include <cstdio>
#include <cstdint>
#include <vector>

namespace dt = devtensor;
namespace dist = devtensor::dist;

namespace {
/// A job of one process: what the per-process form needs of its MPI communicator (rank 0's
/// unique id broadcast, a barrier) where no MPI is installed.
struct one_process {
    int rank() const { return 0; }
    int size() const { return 1; }
    template <class T, class D>
    void broadcast(const dt::tensor<T, D>&, int) const {}
    void barrier() const {}
};

template <class T>
dt::tensor<T, dt::device> on_gpu(const std::vector<T>& v, int ordinal = 0) {
    return dt::from_values<T>(v, {static_cast<std::int64_t>(v.size())}).to(dt::device(dt::cuda_device{ordinal}));
}
}  // namespace

DEVTENSOR_GPU_TEST_CASE("nccl: the one-process form over every GPU sums one tensor per device") {
    const auto gpus = dt::try_all_gpus();
    const dist::nccl_communicator comm(gpus);
    CHECK(comm.size() == static_cast<int>(gpus.size()));
    std::vector<dt::tensor<float, dt::device>> per_device;
    for (std::size_t k = 0; k < gpus.size(); ++k)
        per_device.push_back(on_gpu<float>({1.0f + float(k), 2.0f, -3.0f}, gpus[k].index()));
    comm.all_reduce(per_device, dist::reduce_op::sum);
    const float n = float(gpus.size()), first = n + n * (n - 1) / 2;
    for (const auto& t : per_device) CHECK(t.to_vector() == std::vector<float>{first, 2.0f * n, -3.0f * n});
}

DEVTENSOR_GPU_TEST_CASE("nccl: the one-rank-per-process form: every collective, element type and op against the CPU") {
    const one_process world;
    const dist::nccl_communicator comm(world, dt::device(dt::cuda_device{0}));
    REQUIRE(comm.size() == 1);
    const auto n = static_cast<float>(comm.size());
    for (const auto op : {dist::reduce_op::sum, dist::reduce_op::avg, dist::reduce_op::max, dist::reduce_op::min}) {
        auto t = on_gpu<float>({1.5f, -2.0f, 0.0f, 7.0f});
        comm.all_reduce(t, op);
        const float s = op == dist::reduce_op::sum ? n : 1.0f;
        CHECK(t.to_vector() == std::vector<float>{1.5f * s, -2.0f * s, 0.0f, 7.0f * s});
    }
    auto i = on_gpu<std::int64_t>({5, -6});
    comm.all_reduce(i, dist::reduce_op::max);
    CHECK(i.to_vector() == std::vector<std::int64_t>{5, -6});
    auto d = on_gpu<double>({0.25});
    comm.broadcast(d, 0);
    CHECK(d.to_vector() == std::vector<double>{0.25});
    const auto g = comm.all_gather(on_gpu<std::int32_t>({1, 2, 3}));
    CHECK(g.shape() == dt::shape{comm.size(), 3});
    const auto r = comm.reduce_scatter(on_gpu<float>(std::vector<float>(static_cast<std::size_t>(comm.size()) * 2, 1.0f)).view({comm.size(), 2}));
    CHECK(r.to_vector() == std::vector<float>{n, n});
    auto back = comm.all_reduce_async(on_gpu<float>({1.0f, 2.0f}), dist::reduce_op::sum).wait();
    CHECK(back.to_vector() == std::vector<float>{n, 2.0f * n});
    comm.barrier();

    // misuse: a CPU tensor, a strided one, avg of integers, the deterministic mode
    CHECK_THROWS_AS(comm.all_reduce(dt::tensor<float, dt::device>(dt::ones<float>({2}))), dt::device_mismatch);
    auto m = dt::ones<float>({3, 4}).to(dt::device(dt::cuda_device{0}));
    CHECK_THROWS_WITH_AS(comm.all_reduce(m.t()), doctest::Contains("dense"), dt::error);
    CHECK_THROWS_AS(comm.all_reduce(on_gpu<std::int32_t>({1}), dist::reduce_op::avg), dist::dist_error);
    CHECK_THROWS_AS(dist::nccl_communicator(world, dt::device(dt::cuda_device{0}), {.deterministic = true}), dist::dist_error);
}

DEVTENSOR_GPU_TEST_CASE("nccl: distributed_data_parallel on a GPU rank trains as the plain net does") {
    const one_process world;
    const dt::device gpu(dt::cuda_device{0});
    const dist::nccl_communicator comm(world, gpu);
    const auto run = [&](bool wrapped) {
        dt::generator gen(5);
        auto net = dt::nn::sequential(dt::nn::linear<float>(6, 16, true, gen), dt::nn::tanh{}, dt::nn::linear<float>(16, 1, true, gen)).to(gpu);
        const auto X = dt::randn<float>({12, 6}, dt::cpu_device{}, gen).to(gpu), y = dt::randn<float>({12, 1}, dt::cpu_device{}, gen).to(gpu);
        dt::nn::distributed_data_parallel ddp(net, comm, {.bucket_bytes = 256});
        dt::optim::sgd opt(net, {.lr = 0.05});
        for (int step = 0; step < 4; ++step) {
            opt.zero_grad();
            dt::nn::mse_loss(wrapped ? ddp(X) : net(X), y).backward();
            opt.step();
        }
        std::vector<float> w;
        for (const auto& p : net.parameters())
            for (const float v : p.to_vector()) w.push_back(v);
        return w;
    };
    const auto plain = run(false), wrapped = run(true);
    REQUIRE(plain.size() == wrapped.size());
    for (std::size_t k = 0; k < plain.size(); ++k) CHECK(wrapped[k] == doctest::Approx(plain[k]).epsilon(1e-6));
}

DEVTENSOR_GPU_TEST_CASE("nccl: all_reduce bus bandwidth on this machine's GPUs (nccl-tests arithmetic; printed, not asserted)") {
    const auto gpus = dt::try_all_gpus();
    const dist::nccl_communicator comm(gpus);
    for (const std::int64_t bytes : {std::int64_t{1} << 20, std::int64_t{64} << 20, std::int64_t{1} << 30}) {
        std::vector<dt::tensor<float, dt::device>> per_device;
        for (const auto& g : gpus) per_device.push_back(dt::tensor<float, dt::device>({bytes / 4}, g));
        comm.all_reduce(per_device);  // warm-up
        const int reps = 10;
        const auto start = std::chrono::steady_clock::now();
        for (int r = 0; r < reps; ++r) comm.all_reduce(per_device);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / reps;
        const double n = static_cast<double>(gpus.size());
        std::printf("NCCL all_reduce %lld MiB on %zu GPU(s): %.1f us, algbw %.1f GB/s, busbw %.1f GB/s\n",
                    static_cast<long long>(bytes >> 20), gpus.size(), seconds * 1e6, double(bytes) / seconds / 1e9,
                    double(bytes) * 2 * (n - 1) / n / seconds / 1e9);
    }
}
