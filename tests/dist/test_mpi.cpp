// dist::communicator over Open MPI, and nn::distributed_data_parallel on it, run by
// mpirun on 2 and 4 CPU ranks (tests/CMakeLists.txt). Every rank runs every case;
// each check compares with a reference every rank computes alone from what every
// rank was given (a function of the rank), so nothing here depends on the transport.
#define DOCTEST_CONFIG_IMPLEMENT
#include <devtensor/devtensor.hpp>
#include <devtensor/dist/mpi.hpp>
#include <devtensor/nn/distributed.hpp>

#include "regression.hpp"

#include <doctest/doctest.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace dt = devtensor;
namespace dist = devtensor::dist;
using namespace std::chrono_literals;

namespace {

/// Rank r's value at i: small integers, so that every summation order is exact.
std::int64_t value(int rank, std::int64_t i) { return (i * 7 + rank * 3) % 11 + (rank == 1 && i == 0 ? 5 : 0); }

template <class T>
dt::tensor<T, dt::cpu_device> rank_tensor(int rank, const dt::shape& s) {
    std::vector<std::int64_t> v(static_cast<std::size_t>(s.numel()));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = value(rank, static_cast<std::int64_t>(i));
    return dt::from_values<std::int64_t>(v, s).template to<T>();
}

template <class T>
T fold(T a, T b, dist::reduce_op op) {
    if constexpr (std::is_same_v<T, bool>) return op == dist::reduce_op::min ? (a && b) : (a || b);
    else if (op == dist::reduce_op::max) return a > b ? a : b;
    else if (op == dist::reduce_op::min) return a < b ? a : b;
    else return static_cast<T>(a + b);
}

/// What every rank should hold after all_reduce(op) of the rank tensors.
template <class T>
std::vector<T> reduced(int ranks, const dt::shape& s, dist::reduce_op op) {
    auto acc = rank_tensor<T>(0, s).to_vector();
    for (int r = 1; r < ranks; ++r) {
        const auto x = rank_tensor<T>(r, s).to_vector();
        for (std::size_t i = 0; i < acc.size(); ++i) acc[i] = fold<T>(acc[i], x[i], op);
    }
    if constexpr (std::is_floating_point_v<T>)
        if (op == dist::reduce_op::avg)
            for (auto& a : acc) a /= static_cast<T>(ranks);
    return acc;
}

dist::communicator& deterministic_world() {
    static dist::communicator comm(MPI_COMM_WORLD, {.timeout = 30s, .deterministic = true});
    return comm;
}

/// Without the handshake (options::checked = false): MPI's calls alone.
dist::communicator& unchecked_world() {
    static dist::communicator comm(MPI_COMM_WORLD, {.checked = false});
    return comm;
}

template <class T>
void check_all_reduce(const dist::communicator& comm) {
    for (const std::int64_t n : {0, 1, 7, 1000, 65537})
        for (const auto op : {dist::reduce_op::sum, dist::reduce_op::avg, dist::reduce_op::max, dist::reduce_op::min}) {
            if (op == dist::reduce_op::avg && !std::is_floating_point_v<T>) continue;
            CAPTURE(dt::detail::dtype_of<T>);
            CAPTURE(n);
            CAPTURE(dist::to_string(op));
            auto t = rank_tensor<T>(comm.rank(), {n});
            comm.all_reduce(t, op);
            CHECK(t.to_vector() == reduced<T>(comm.size(), {n}, op));
        }
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

}  // namespace

TEST_CASE("all_reduce of every element type, op and odd size equals the local reference, in every mode") {
    const auto world = dist::world();
    for (const dist::communicator* comm :
         std::array<const dist::communicator*, 3>{&world, &deterministic_world(), &unchecked_world()}) {
        CAPTURE(comm->opts().deterministic);
        CAPTURE(comm->opts().checked);
        check_all_reduce<bool>(*comm);
        check_all_reduce<std::int8_t>(*comm);
        check_all_reduce<std::uint8_t>(*comm);
        check_all_reduce<std::int16_t>(*comm);
        check_all_reduce<std::uint16_t>(*comm);
        check_all_reduce<std::int32_t>(*comm);
        check_all_reduce<std::uint32_t>(*comm);
        check_all_reduce<std::int64_t>(*comm);
        check_all_reduce<std::uint64_t>(*comm);
        check_all_reduce<float>(*comm);
        check_all_reduce<double>(*comm);
    }
}

TEST_CASE("all_reduce of a strided view writes back into its own elements only") {
    const auto comm = dist::world();
    auto whole = rank_tensor<float>(comm.rank(), {6, 5});
    const auto before = whole.to_vector();
    auto column = whole.t().narrow(0, 1, 2);  // columns 1 and 2, transposed: strided
    comm.all_reduce(column, dist::reduce_op::sum);
    const auto sums = reduced<float>(comm.size(), {6, 5}, dist::reduce_op::sum);
    const auto after = whole.to_vector();
    for (std::size_t i = 0; i < after.size(); ++i) {
        CAPTURE(i);
        CHECK(after[i] == ((i % 5 == 1 || i % 5 == 2) ? sums[i] : before[i]));
    }
}

TEST_CASE("broadcast, all_gather and reduce_scatter against the local reference") {
    const auto comm = dist::world();
    const int n = comm.size();
    for (int root = 0; root < n; ++root) {
        auto t = rank_tensor<double>(comm.rank(), {3, 4});
        comm.broadcast(t, root);
        CHECK(t.to_vector() == rank_tensor<double>(root, {3, 4}).to_vector());
    }
    for (const std::int64_t len : {0, 1, 13}) {
        const auto gathered = comm.all_gather(rank_tensor<std::int32_t>(comm.rank(), {len, 2}));
        REQUIRE(gathered.shape() == dt::shape{n, len, 2});
        for (int r = 0; r < n; ++r) CHECK(gathered.narrow(0, r, 1).to_vector() == rank_tensor<std::int32_t>(r, {len, 2}).to_vector());
    }
    const auto scalar = comm.all_gather(dt::from_values<float>(std::vector<float>{float(comm.rank())}, dt::shape{}));
    CHECK(scalar.shape() == dt::shape{n});
    for (const dist::communicator* c : std::array<const dist::communicator*, 3>{&comm, &deterministic_world(), &unchecked_world()})
        for (const auto op : {dist::reduce_op::sum, dist::reduce_op::avg, dist::reduce_op::max}) {
            const auto mine = c->reduce_scatter(rank_tensor<float>(comm.rank(), {n, 7}), op);
            const auto all = reduced<float>(n, {n, 7}, op);
            CHECK(mine.shape() == dt::shape{7});
            CHECK(mine.to_vector() == std::vector<float>(all.begin() + comm.rank() * 7, all.begin() + comm.rank() * 7 + 7));
        }
}

TEST_CASE("the asynchronous forms give the tensor back from wait(), in order, any number in flight") {
    const auto comm = dist::world();
    std::vector<dist::work<dt::tensor<float, dt::cpu_device>>> flying;
    for (int k = 0; k < 5; ++k) flying.push_back(comm.all_reduce_async(rank_tensor<float>(comm.rank(), {100 + k}), dist::reduce_op::max));
    for (int k = 0; k < 5; ++k) {
        const auto t = flying[static_cast<std::size_t>(k)].wait();
        CHECK(t.to_vector() == reduced<float>(comm.size(), {100 + k}, dist::reduce_op::max));
        CHECK_THROWS_AS((void)flying[static_cast<std::size_t>(k)].wait(), dist::dist_error);  // waited already
    }
    auto whole = rank_tensor<double>(comm.rank(), {4, 4});
    auto strided = comm.all_reduce_async(whole.t(), dist::reduce_op::sum).wait();
    CHECK(whole.to_vector() == reduced<double>(comm.size(), {4, 4}, dist::reduce_op::sum));
    CHECK(strided.data() == whole.data());
    auto root = comm.broadcast_async(rank_tensor<std::int64_t>(comm.rank(), {9}), 1 % comm.size()).wait();
    CHECK(root.to_vector() == rank_tensor<std::int64_t>(1 % comm.size(), {9}).to_vector());
    const auto g = comm.all_gather_async(rank_tensor<std::int16_t>(comm.rank(), {3})).wait();
    CHECK(g.shape() == dt::shape{comm.size(), 3});
    { auto dropped = comm.all_reduce_async(rank_tensor<float>(comm.rank(), {1 << 16})); }  // destroyed unwaited: waits
    comm.barrier();
}

TEST_CASE("the deterministic mode combines in rank order: the bits of a left fold over the ranks, on every rank") {
    const auto& comm = deterministic_world();
    dt::generator gen(7 + static_cast<std::uint64_t>(comm.rank()));
    for (const std::int64_t n : {1, 5, 100003}) {
        const auto mine = dt::randn<float>({n}, dt::cpu_device{}, gen);
        const auto all = dist::world().all_gather(mine).to_vector();  // every rank's input, exactly
        auto t = mine.clone();
        comm.all_reduce(t, dist::reduce_op::sum);
        std::vector<float> expected(static_cast<std::size_t>(n));
        for (std::size_t i = 0; i < expected.size(); ++i) {
            float acc = all[i];
            for (int r = 1; r < comm.size(); ++r) acc += all[static_cast<std::size_t>(r * n) + i];
            expected[i] = acc;
        }
        CHECK(same_bits(t.to_vector(), expected));
        const auto everywhere = comm.all_gather(t).to_vector();
        for (int r = 1; r < comm.size(); ++r)
            CHECK(std::memcmp(everywhere.data(), everywhere.data() + r * n, static_cast<std::size_t>(n) * sizeof(float)) == 0);
    }
}

TEST_CASE("bad arguments are errors on the calling rank; ranks that disagree get dist_error on every rank") {
    const auto comm = dist::world();
    dt::tensor<float, dt::cpu_device> undefined;
    CHECK_THROWS_WITH_AS(comm.all_reduce(undefined), doctest::Contains("undefined"), dt::error);
    auto moved = dt::ones<float>({3});
    auto taken = std::move(moved);
    CHECK_THROWS_AS(comm.broadcast(moved, 0), dt::error);
    CHECK_THROWS_WITH_AS(comm.all_reduce(dt::ones<int>({3}), dist::reduce_op::avg), doctest::Contains("floating-point"), dist::dist_error);
    CHECK_THROWS_WITH_AS(comm.broadcast(taken, comm.size()), doctest::Contains("not a rank"), dist::dist_error);
    CHECK_THROWS_AS((void)comm.reduce_scatter(dt::ones<float>({comm.size() + 1, 2})), dt::shape_error);

    // Different counts: MPI itself would read past the end or hang; the handshake says so everywhere.
    CHECK_THROWS_WITH_AS(comm.all_reduce(dt::ones<float>({10 + comm.rank()})), doctest::Contains("different element counts"),
                         dist::dist_error);
    if (comm.rank() == 0) CHECK_THROWS_WITH_AS(comm.all_reduce(dt::ones<float>({4})), doctest::Contains("different element types"), dist::dist_error);
    else CHECK_THROWS_WITH_AS(comm.all_reduce(dt::ones<double>({4})), doctest::Contains("different element types"), dist::dist_error);
    if (comm.rank() == 0) CHECK_THROWS_WITH_AS(comm.all_reduce(dt::ones<float>({4})), doctest::Contains("called different collectives"), dist::dist_error);
    else CHECK_THROWS_WITH_AS(comm.broadcast(dt::ones<float>({4}), 0), doctest::Contains("called different collectives"), dist::dist_error);
    auto fine = dt::ones<float>({4});  // the communicator still works
    comm.all_reduce(fine);
    CHECK(fine.to_vector() == std::vector<float>(4, float(comm.size())));
}

TEST_CASE("a rank that never joins gives the others dist_timeout within the timeout, and then a broken communicator") {
    const dist::communicator comm(MPI_COMM_WORLD, {.timeout = 300ms});
    const bool absent = comm.rank() == comm.size() - 1;  // stalls (or threw) and never calls
    if (!absent) {
        const auto start = std::chrono::steady_clock::now();
        auto t = dt::ones<float>({8});
        CHECK_THROWS_WITH_AS(comm.all_reduce(t), doctest::Contains("did not join within 300 ms"), dist::dist_timeout);
        CHECK(std::chrono::steady_clock::now() - start < 5s);
        CHECK_THROWS_WITH_AS(comm.all_reduce(t), doctest::Contains("broken"), dist::dist_error);
    }
    dist::world().barrier();
}

namespace {
using dist_tests::regression_data;
using dist_tests::regression_net;

template <class Net>
std::vector<double> weights(const Net& net) {
    std::vector<double> all;
    for (const auto& p : net.parameters())
        for (const double w : p.to_vector()) all.push_back(w);
    return all;
}

/// Trains for 6 SGD steps with momentum, each rank on its share of the batch.
std::vector<double> train_ddp(const dist::communicator& comm, std::int64_t bucket_bytes) {
    auto net = regression_net();
    dt::nn::distributed_data_parallel ddp(net, comm, {.bucket_bytes = bucket_bytes});
    dt::optim::sgd opt(ddp, {.lr = 0.05, .momentum = 0.9});
    const auto [X, y] = regression_data();
    const std::int64_t share = 24 / comm.size();
    const auto Xr = X.narrow(0, comm.rank() * share, share), yr = y.narrow(0, comm.rank() * share, share);
    for (int step = 0; step < 6; ++step) {
        opt.zero_grad();
        dt::nn::mse_loss(ddp(Xr), yr).backward();
        opt.step();
    }
    return weights(net);
}
}  // namespace

TEST_CASE("distributed_data_parallel: N ranks on batch/N end with the weights of one process on the whole batch") {
    const auto comm = dist::world();
    auto alone = regression_net();
    dt::optim::sgd opt(alone, {.lr = 0.05, .momentum = 0.9});
    const auto [X, y] = regression_data();
    for (int step = 0; step < 6; ++step) {
        opt.zero_grad();
        dt::nn::mse_loss(alone(X), y).backward();
        opt.step();
    }
    const auto expected = weights(alone);
    for (const std::int64_t bucket_bytes : {std::int64_t{1}, std::int64_t{200}, std::int64_t{25} << 20}) {
        CAPTURE(bucket_bytes);
        const auto got = train_ddp(comm, bucket_bytes);
        REQUIRE(got.size() == expected.size());
        for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(expected[i]).epsilon(1e-6));
        // The replicas are identical after every step: the same bits on every rank.
        const auto everywhere = comm.all_gather(dt::from_values<double>(got, {static_cast<std::int64_t>(got.size())})).to_vector();
        for (int r = 1; r < comm.size(); ++r)
            CHECK(std::memcmp(everywhere.data(), everywhere.data() + static_cast<std::size_t>(r) * got.size(), got.size() * sizeof(double)) == 0);
    }
}

TEST_CASE("distributed_data_parallel in deterministic mode: bit-identical runs, whatever the buckets") {
    const auto& comm = deterministic_world();
    const auto first = train_ddp(comm, 200);
    CHECK(same_bits(first, train_ddp(comm, 200)));
    CHECK(same_bits(first, train_ddp(comm, std::int64_t{25} << 20)));
    CHECK(same_bits(first, train_ddp(comm, 1)));
}

TEST_CASE("distributed_data_parallel broadcasts rank 0's parameters and refuses a backward that left one out") {
    const auto comm = dist::world();
    dt::generator gen(100 + static_cast<std::uint64_t>(comm.rank()));  // a different net on every rank
    auto net = dt::nn::sequential(dt::nn::linear<float>(3, 2, true, gen));
    dt::nn::distributed_data_parallel ddp(net, comm);
    const auto w = weights(net);
    std::vector<double> w0;
    {
        dt::generator gen0(100);
        w0 = weights(dt::nn::sequential(dt::nn::linear<float>(3, 2, true, gen0)));
    }
    CHECK(w == w0);

    const auto x = dt::ones<float>({4, 3});
    dt::sum(ddp(x)).backward();  // every parameter: fine
    CHECK_NOTHROW((void)ddp(x));
    dt::sum(dt::matmul(x, net.parameters()[0].t())).backward();  // the bias is left out
    CHECK_THROWS_WITH_AS((void)ddp(x), doctest::Contains("no gradient to parameter(s) 1"), dist::dist_error);
    CHECK_NOTHROW((void)ddp(x));  // reported once; the next step starts clean
}

int main(int argc, char** argv) {
    dist::init(argc, argv);
    (void)dist::world({.timeout = 30s});
    doctest::Context context(argc, argv);
    const int failed = context.run();
    // Every rank's verdict: mpirun reports the first non-zero exit, so all ranks agree.
    int any = failed != 0 ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return any;
}
