// The MPI benchmark (issue 17): dist::communicator beside its peers in the same run,
// under mpirun (scripts/bench.sh runs it on 2 and 4 ranks). The implementations of a
// row run interleaved, in a fresh order each rep, so a busy neighbour slows them alike:
//   all_reduce  float sum, 4 B ... 256 MiB in place: a bare MPI_Allreduce(MPI_IN_PLACE)
//               of the same bytes, communicator::all_reduce, and the bare call after a
//               handshake like the communicator's (its floor), the communicator without
//               its handshake (options::checked = false); then, timed apart, the
//               deterministic mode
//   bucket      100 gradients of 256 floats averaged: 100 all_reduce calls, or one
//               all_reduce of their cat with the slices copied back (as
//               nn::distributed_data_parallel does)
//   train       the digits MLP's SGD step on batch 64 a rank: the plain module (no
//               communication) and the module in nn::distributed_data_parallel
// A rep is a barrier, then `batch` back-to-back calls; its figure is the slowest rank's
// time per call, and a row's figure the median over the reps. Rank 0 prints
//   ROW|test|ranks|size|reps=R|batch=B|impl=µs|impl=µs...
// (and CONFIG|... lines), which bench/report_mpi.py turns into RESULTS-mpi.md.
#include <devtensor/devtensor.hpp>
#include <devtensor/dist/mpi.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace dt = devtensor;

namespace {

/// The training row's SGD learning rate, as bench_common.hpp's train_lr: small, so the
/// weights drift slowly and no value turns inf, NaN or denormal.
constexpr double train_lr = 1e-4;

struct implementation {
    const char* name;
    std::function<void()> call;
};

/// Seconds per call of `batch` back-to-back calls, all ranks starting after a barrier;
/// this rank's figure.
double time_batch(const std::function<void()>& call, int batch) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < batch; ++i) call();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / batch;
}

/// Each element the largest over the ranks, on every rank.
void slowest(std::vector<double>& v) {
    MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// Times the implementations interleaved in about `budget` seconds (at least 7 reps, each
/// of at least 1 ms where a call is shorter) and prints the row on rank 0.
void measure(const char* test, const std::string& size, const std::vector<implementation>& impls, double budget) {
    std::vector<double> once;
    for (const auto& impl : impls) {
        impl.call();  // warm-up: first-touch pages, MPI's buffers
        once.push_back(time_batch(impl.call, 1));
    }
    slowest(once);
    double per_rep = 0;
    for (double s : once) per_rep += s;
    const int batch = std::clamp(static_cast<int>(1e-3 / per_rep * static_cast<double>(impls.size())), 1, 1000);
    const int reps = std::clamp(static_cast<int>(budget / (batch * per_rep)), 7, 30);

    std::vector<double> times(impls.size() * static_cast<std::size_t>(reps));  // [rep][impl]
    std::vector<std::size_t> order(impls.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::mt19937 shuffler(1);  // the same order on every rank
    for (int r = 0; r < reps; ++r) {
        std::shuffle(order.begin(), order.end(), shuffler);  // none always runs after the same one
        for (const std::size_t i : order)
            times[static_cast<std::size_t>(r) * impls.size() + i] = time_batch(impls[i].call, batch);
    }
    slowest(times);

    const int rank = dt::dist::world().rank();
    if (rank != 0) return;
    std::printf("ROW|%s|%d|%s|reps=%d|batch=%d", test, dt::dist::world().size(), size.c_str(), reps, batch);
    for (std::size_t i = 0; i < impls.size(); ++i) {
        std::vector<double> mine;
        for (int r = 0; r < reps; ++r) mine.push_back(times[static_cast<std::size_t>(r) * impls.size() + i]);
        std::printf("|%s=%.4f", impls[i].name, median(mine) * 1e6);
    }
    std::printf("\n");
    std::fflush(stdout);
}

/// The communicator's handshake alone (dist/mpi.hpp's agree): eight int64 max-reduced
/// without blocking, polled with MPI_Test. Beside a bare MPI_Allreduce it is the floor
/// of a collective that checks its arguments this way.
void handshake() {
    std::int64_t v[8] = {1, 2, 3, 4, -1, -2, -3, -4};
    MPI_Request request{};
    MPI_Iallreduce(MPI_IN_PLACE, v, 8, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD, &request);
    for (int done = 0; !done;) MPI_Test(&request, &done, MPI_STATUS_IGNORE);
}

void all_reduce_rows(const dt::dist::communicator& comm, const dt::dist::communicator& unchecked,
                     const dt::dist::communicator& deterministic) {
    for (std::int64_t bytes = 4; bytes <= (std::int64_t{256} << 20); bytes *= 4) {
        const std::int64_t n = bytes / 4;
        const auto t = dt::zeros<float>({n});  // sums of zeros: no overflow, no denormals
        const auto bare = [&] {
            MPI_Allreduce(MPI_IN_PLACE, t.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        };
        const double budget = bytes >= (std::int64_t{16} << 20) ? 3.0 : 1.0;
        measure("all_reduce", std::to_string(bytes),
                {{"mpi", bare},
                 {"devtensor", [&] { comm.all_reduce(t, dt::dist::reduce_op::sum); }},
                 {"mpi_handshake", [&] { handshake(), bare(); }},
                 {"unchecked", [&] { unchecked.all_reduce(t, dt::dist::reduce_op::sum); }}},
                budget);
        // Apart: its large allocations, made and freed in each call, slow the call after it
        // (bare MPI_Allreduce twice as slow at 1 ... 16 MiB), so it is compared with the row above.
        measure("all_reduce_deterministic", std::to_string(bytes),
                {{"deterministic", [&] { deterministic.all_reduce(t, dt::dist::reduce_op::sum); }}}, budget);
    }
}

void bucket_row(const dt::dist::communicator& comm) {
    constexpr std::int64_t count = 100, floats = 256;
    std::vector<dt::tensor<float, dt::cpu_device>> grads;
    for (std::int64_t i = 0; i < count; ++i) grads.push_back(dt::zeros<float>({floats}));
    const auto separate = [&] {
        for (const auto& g : grads) comm.all_reduce(g, dt::dist::reduce_op::avg);
    };
    const auto fused = [&] {
        const auto flat = dt::cat(grads);
        comm.all_reduce(flat, dt::dist::reduce_op::avg);
        for (std::int64_t i = 0; i < count; ++i)
            std::copy_n(flat.data() + i * floats, floats, grads[static_cast<std::size_t>(i)].data());
    };
    measure("bucket", std::to_string(count) + "x" + std::to_string(floats), {{"separate", separate}, {"fused", fused}},
            2.0);
}

/// The digits MLP (64 -> 128 -> ReLU -> 10), the same weights on every rank.
auto digits_mlp() {
    dt::generator gen(1);
    return dt::nn::sequential(dt::nn::linear<float>(64, 128, true, gen), dt::nn::relu{},
                              dt::nn::linear<float>(128, 10, true, gen));
}

void train_row(const dt::dist::communicator& comm) {
    dt::generator gen(static_cast<std::uint64_t>(2 + comm.rank()));  // each rank its own batch
    const auto x = dt::randn<float>({64, 64}, dt::cpu_device{}, gen);
    const auto y = dt::randint<std::int64_t>(0, 10, {64}, dt::cpu_device{}, gen);
    const auto step = [&](const auto& model, auto& opt) {
        auto loss = dt::nn::cross_entropy(model(x), y);
        opt.zero_grad();
        loss.backward();
        opt.step();
    };
    const auto plain = digits_mlp();  // its own parameters: no hook of the wrapper's
    dt::optim::sgd<float> plain_opt(plain, {.lr = train_lr});
    const dt::nn::distributed_data_parallel ddp(digits_mlp(), comm);
    dt::optim::sgd<float> ddp_opt(ddp, {.lr = train_lr});
    measure("train", "b64:64->128->10", {{"plain", [&] { step(plain, plain_opt); }},
             {"ddp", [&] { step(ddp, ddp_opt); }}},
            3.0);
}

}  // namespace

int main(int argc, char** argv) {
    dt::dist::init(argc, argv);
    dt::set_num_threads(1);  // one core a rank
    const auto world = dt::dist::world();
    const dt::dist::communicator deterministic(MPI_COMM_WORLD, {.deterministic = true});
    const dt::dist::communicator unchecked(MPI_COMM_WORLD, {.checked = false});
    if (world.rank() == 0) {
        char version[MPI_MAX_LIBRARY_VERSION_STRING];
        int length = 0;
        MPI_Get_library_version(version, &length);
        std::string text(version, static_cast<std::size_t>(length));
        text = text.substr(0, text.find_first_of(",\n"));
        std::printf("CONFIG|ranks=%d|mpi=%s|compiler=%s\n", world.size(), text.c_str(), __VERSION__);
    }
    const auto start = std::chrono::steady_clock::now();
    all_reduce_rows(world, unchecked, deterministic);
    bucket_row(world);
    train_row(world);
    if (world.rank() == 0)
        std::printf("CONFIG|seconds=%.1f\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return 0;
}
