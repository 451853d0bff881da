// Training (DESIGN §12, §15): a whole run gives the same bits at 1, 2 and 7 threads
// and on every CPU ISA path; the backward and optimizer functors give the CPU's bits
// in the CUDA kernels' bodies (run on the host); a step reserves nothing new after
// the first; and each misuse is a clear error naming the op.
#include "test_support.hpp"

#include <devtensor/backend/cpu/simd.hpp>
#include <devtensor/backend/cuda/elementwise_phases.hpp>

#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <limits>
#include <string>
#include <vector>

namespace {

namespace cu = devtensor::backend_cuda;
namespace simd = devtensor::backend_cpu::simd;

/// The parameters' bits after `steps` steps of an MLP (64 → 48 → 10, ReLU) on
/// fixed random data, cross_entropy, with optimizer `Opt` built from `options`;
/// the layers typed for device D.
template <class Opt, class T, class O, dt::Device D = dt::device>
std::vector<std::vector<T>> train_run(O options, int steps) {
    dt::generator gen(7);
    auto net = dt::nn::sequential(dt::nn::linear<T, D>(64, 48, true, gen), dt::nn::relu{},
                                  dt::nn::linear<T, D>(48, 10, true, gen));
    const auto X = dt::randn<T>({64, 64}, dt::cpu_device{}, gen);
    const auto y = dt::randint<std::int64_t>(0, 10, {64}, dt::cpu_device{}, gen);
    Opt opt(net, options);
    for (int s = 0; s < steps; ++s) {
        // two batches' worth of rows, so that both the GEMM (m = 40) and the GEMV (m = 12) paths run
        const auto rows = X.narrow(0, s % 2 == 0 ? 0 : 40, s % 2 == 0 ? 40 : 12);
        const auto labels = y.narrow(0, s % 2 == 0 ? 0 : 40, s % 2 == 0 ? 40 : 12);
        auto loss = dt::nn::cross_entropy(net(rows), labels);
        opt.zero_grad();
        loss.backward();
        opt.step();
    }
    std::vector<std::vector<T>> bits;
    for (const auto& p : net.parameters()) bits.push_back(p.to_vector());
    return bits;
}

template <class T>
bool same_run(const std::vector<std::vector<T>>& a, const std::vector<std::vector<T>>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!same_bits(a[i], b[i])) return false;
    return true;
}

/// Runs f at 1, 2 and 7 threads and on each ISA this CPU has: every result the same bits.
template <class F>
void check_everywhere(F f) {
    const int threads_before = dt::get_num_threads();
    simd::limit_isa(simd::isa::portable);
    dt::set_num_threads(1);
    const auto reference = f();
    for (const simd::isa isa : {simd::isa::portable, simd::isa::avx2, simd::isa::avx512}) {
        simd::limit_isa(isa);
        for (const int threads : {1, 2, 7}) {
            CAPTURE(static_cast<int>(simd::best_isa()));
            CAPTURE(threads);
            dt::set_num_threads(threads);
            CHECK(same_run(f(), reference));
        }
    }
    simd::limit_isa(simd::isa::avx512);
    dt::set_num_threads(threads_before);
}

}  // namespace

TEST_CASE("a training run gives the same bits at 1, 2 and 7 threads and on every ISA path") {
    check_everywhere([] { return train_run<dt::optim::sgd<float>, float>(dt::optim::sgd_options{.lr = 0.1, .momentum = 0.9, .nesterov = true}, 6); });
    check_everywhere([] { return train_run<dt::optim::adam<float>, float>(dt::optim::adam_options{.lr = 1e-2, .amsgrad = true}, 6); });
    check_everywhere([] { return train_run<dt::optim::adamw<double>, double>(dt::optim::adamw_options{.lr = 1e-2}, 6); });
}

TEST_CASE("an optimizer's state has the static type of its parameters' device; a mixed chain gets run-time handles") {
    using cpu_net = dt::nn::sequential<dt::nn::linear<float, dt::cpu_device>, dt::nn::relu, dt::nn::linear<float, dt::cpu_device>>;
    using gpu_net = dt::nn::sequential<dt::nn::linear<float, dt::cuda_device>, dt::nn::relu, dt::nn::linear<float, dt::cuda_device>>;
    using mixed_net = dt::nn::sequential<dt::nn::linear<float, dt::cpu_device>, dt::nn::linear<float>>;
    static_assert(std::is_same_v<decltype(std::declval<const cpu_net&>().parameters()), std::vector<dt::tensor<float, dt::cpu_device>>>);
    static_assert(std::is_same_v<decltype(std::declval<const mixed_net&>().parameters()), std::vector<dt::tensor<float, dt::device>>>);
    // the guides give the state the parameters' type (only the type here: a GPU step compiles under nvcc alone)
    static_assert(std::is_same_v<decltype(dt::optim::sgd(std::declval<const gpu_net&>())), dt::optim::sgd<float, dt::cuda_device>>);
    static_assert(std::is_same_v<decltype(dt::optim::adamw(std::declval<const gpu_net&>())), dt::optim::adamw<float, dt::cuda_device>>);
    static_assert(std::is_same_v<decltype(dt::optim::adam(std::declval<const mixed_net&>())), dt::optim::adam<float, dt::device>>);
    static_assert(std::is_same_v<std::remove_cvref_t<decltype(std::declval<dt::optim::sgd<float, dt::cuda_device>&>().momentum_buffer(0))>,
                                 dt::tensor<float, dt::cuda_device>>);

    auto net = dt::nn::sequential(dt::nn::linear<float>(3, 4), dt::nn::relu{}, dt::nn::linear<float>(4, 2)).to(dt::cpu_device{});
    static_assert(std::is_same_v<decltype(net), cpu_net>);
    dt::optim::sgd sgd(net, {.lr = 0.1, .momentum = 0.9});
    dt::optim::adam adam(net);
    static_assert(std::is_same_v<decltype(sgd), dt::optim::sgd<float, dt::cpu_device>>);
    dt::sum(net(dt::ones<float>({2, 3}, dt::cpu_device{}))).backward();
    sgd.step();
    adam.step();
    const dt::tensor<float, dt::cpu_device>& buffer = sgd.momentum_buffer(0);
    const dt::tensor<float, dt::cpu_device>& moment = adam.state_of(2).exp_avg_sq;
    CHECK(buffer.shape() == dt::shape{4, 3});
    CHECK(moment.shape() == dt::shape{2, 4});
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("devtensor-static-sgd-" + std::to_string(std::random_device{}()) + ".safetensors")).string();
    dt::optim::save(sgd, path);
    dt::optim::sgd<float, dt::cpu_device> restored(net, {.lr = 0.1, .momentum = 0.9});
    dt::optim::load(restored, path);
    CHECK(same_bits(restored.momentum_buffer(0).to_vector(), buffer.to_vector()));
    std::filesystem::remove(path);
    // a run-time optimizer over the static net still takes it (the handles convert)
    dt::optim::sgd<float> runtime(net, {.lr = 0.1});
    CHECK(runtime.parameters()[0].is_same(dt::nn::get<0>(net).weight));

    // and training on the static type gives the run-time type's bits
    CHECK(same_run(train_run<dt::optim::adam<float, dt::cpu_device>, float, dt::optim::adam_options, dt::cpu_device>({.lr = 1e-2}, 4),
                   train_run<dt::optim::adam<float>, float>(dt::optim::adam_options{.lr = 1e-2}, 4)));
}

TEST_CASE("data_parallel over {cpu} is the module itself: the same bits as training it plainly") {
    const auto run = [](bool wrapped) {
        dt::generator gen(7);
        auto net = dt::nn::sequential(dt::nn::linear<double>(6, 12, true, gen), dt::nn::tanh{}, dt::nn::linear<double>(12, 2, true, gen));
        const auto X = dt::randn<double>({10, 6}, dt::cpu_device{}, gen), y = dt::randn<double>({10, 2}, dt::cpu_device{}, gen);
        dt::nn::data_parallel dp(net, {dt::device(dt::cpu_device{})});
        dt::optim::sgd<double> opt(dp, {.lr = 0.1, .momentum = 0.9});
        for (int s = 0; s < 4; ++s) {
            opt.zero_grad();
            dt::nn::mse_loss(wrapped ? dp(X) : net(X), y).backward();
            opt.step();
        }
        std::vector<std::vector<double>> bits;
        for (const auto& p : net.parameters()) bits.push_back(p.to_vector());
        return bits;
    };
    CHECK(same_run(run(true), run(false)));
    const auto net = dt::nn::sequential(dt::nn::linear<float>(2, 2));
    CHECK_THROWS_WITH_AS(dt::nn::data_parallel(net, {}), doctest::Contains("at least one device"), dt::error);
    CHECK_THROWS_WITH_AS(dt::nn::data_parallel(net, {dt::device(dt::cpu_device{}), dt::device(dt::cpu_device{})}),
                         doctest::Contains("listed twice"), dt::error);
}

DEVTENSOR_GPU_TEST_CASE("data_parallel over the CPU and a GPU: the batch split across both, the gradients of the whole batch") {
    {
        dt::generator gen(7);
        auto net = dt::nn::sequential(dt::nn::linear<double>(6, 12, true, gen), dt::nn::tanh{}, dt::nn::linear<double>(12, 2, true, gen));
        const auto X = dt::randn<double>({9, 6}, dt::cpu_device{}, gen), y = dt::randn<double>({9, 2}, dt::cpu_device{}, gen);
        dt::nn::data_parallel dp(net, {dt::device(dt::cpu_device{}), dt::device(dt::cuda_device{0})});
        const auto out = dp(X);  // rows 0-4 on the CPU, 5-8 on the GPU
        CHECK(out.shape() == dt::shape{9, 2});
        dt::nn::mse_loss(out, y).backward();
        const auto params = dp.parameters();
        // the same gradients as one device on the whole batch
        dt::generator gen2(7);
        auto plain = dt::nn::sequential(dt::nn::linear<double>(6, 12, true, gen2), dt::nn::tanh{}, dt::nn::linear<double>(12, 2, true, gen2));
        dt::nn::mse_loss(plain(X), y).backward();
        const auto expected = plain.parameters();
        for (std::size_t i = 0; i < params.size(); ++i) {
            const auto a = params[i].grad().to_vector(), b = expected[i].grad().to_vector();
            for (std::size_t j = 0; j < a.size(); ++j) CHECK(a[j] == doctest::Approx(b[j]).epsilon(1e-12));
        }
    }
}

TEST_CASE("a training step learns: the digits-sized MLP's loss falls with each optimizer") {
    const auto final_loss = [](auto make_opt) {
        dt::generator gen(3);
        auto net = dt::nn::sequential(dt::nn::linear<float>(8, 16, true, gen), dt::nn::tanh{},
                                      dt::nn::linear<float>(16, 1, true, gen), dt::nn::sigmoid{});
        const auto X = dt::randn<float>({32, 8}, dt::cpu_device{}, gen);
        const auto y = dt::gt(dt::sum(X, {1}, true), 0.0f).template to<float>();
        auto opt = make_opt(net);
        float first = 0, last = 0;
        for (int s = 0; s < 100; ++s) {
            auto loss = dt::nn::mse_loss(net(X), y);
            if (s == 0) first = loss.item();
            last = loss.item();
            opt.zero_grad();
            loss.backward();
            opt.step();
        }
        return last / first;
    };
    CHECK(final_loss([](auto& net) { return dt::optim::sgd(net, {.lr = 0.5}); }) < 0.5f);
    CHECK(final_loss([](auto& net) { return dt::optim::sgd(net, {.lr = 0.2, .momentum = 0.9, .dampening = 0.1}); }) < 0.5f);
    CHECK(final_loss([](auto& net) { return dt::optim::adam(net, {.lr = 1e-2}); }) < 0.5f);
    CHECK(final_loss([](auto& net) { return dt::optim::adamw(net, {.lr = 1e-2}); }) < 0.5f);
}

TEST_CASE_TEMPLATE("the backward and optimizer functors give the cpu's bits in the CUDA kernels' bodies", T, float,
                   double) {
    dt::generator gen(11);
    const std::int64_t n = 1000;
    const auto a = dt::randn<T>({n}, dt::cpu_device{}, gen), b = dt::randn<T>({n}, dt::cpu_device{}, gen);
    const auto c = dt::randn<T>({n}, dt::cpu_device{}, gen), d = dt::rand<T>({n}, dt::cpu_device{}, gen);
    const auto check = [&](auto f, auto... in) {
        dt::tensor<T, dt::cpu_device> want({n}, dt::cpu_device{});
        dt::detail::map_checked("test", f, want, in...);
        std::vector<T> out(static_cast<std::size_t>(n));
        const std::int64_t threads = 3 * 32;
        for (std::int64_t t = 0; t < threads; ++t) cu::map_linear_phase(f, out.data(), n, 0u, t, threads, in.data()...);
        CHECK(std::memcmp(out.data(), want.data(), out.size() * sizeof(T)) == 0);
    };
    namespace de = dt::detail;
    // backward: g, y, then the inputs
    check(de::partial_of<de::multiplies, 0>{}, a, b, c, d);
    check(de::partial_of<de::divides, 1>{}, a, b, c, d);
    check(de::partial_of<de::exp_of, 0>{}, a, b, c);
    check(de::partial_of<de::log_of, 0>{}, a, b, d);
    check(de::partial_of<de::tanh_of, 0>{}, a, b, c);
    check(de::partial_of<de::sigmoid_of, 0>{}, a, d, c);
    check(de::partial_of<de::rectify, 0>{}, a, b, c);
    check(de::partial_of<de::power, 0>{}, a, b, d, c);
    check(de::partial_of<de::squared_difference, 0>{}, a, b, c, d);  // the CPU's on vectors
    check(de::partial_of<de::squared_difference, 1>{}, a, b, c, d);
    check(de::squared_difference{}, c, d);
    check(de::partial_of<de::bce_with_logits, 0>{}, a, b, c, d);
    check(de::bce_with_logits{}, c, d);
    // optimizers
    namespace od = dt::optim::detail;
    check(od::sgd_buffer<T>{T(0.9), T(0.9), T(1e-2)}, a, b, c);
    check(od::sgd_first_buffer<T>{T(1e-2)}, a, b);
    for (const T decay : {T(0), T(1e-2)}) {  // every branch of the update
        check(od::sgd_update<T>{T(0.1), T(0.9), decay, true, true}, a, b, c);
        check(od::sgd_update<T>{T(0.1), T(0.9), decay, true, false}, a, b, c);
        check(od::sgd_update<T>{T(0.1), T(0), decay, false, false}, a, b, c);
    }
    check(od::sgd_plain<T>{T(0.1)}, a, b);  // plain SGD's update: the full update's bits
    dt::tensor<T, dt::cpu_device> plain({n}, dt::cpu_device{}), full({n}, dt::cpu_device{});
    de::map_checked("test", od::sgd_plain<T>{T(0.1)}, plain, a, b);
    de::map_checked("test", od::sgd_update<T>{T(0.1), T(0), T(0), false, false}, full, a, b, b);
    CHECK(std::memcmp(plain.data(), full.data(), static_cast<std::size_t>(n) * sizeof(T)) == 0);
    check(od::adam_first_moment<T>{T(0.9), T(0.1), T(1e-2)}, a, b, c);
    check(od::adam_second_moment<T>{T(0.999), T(1 - 0.999), T(1e-2)}, d, b, c);
    check(od::adam_update<T>{T(1e-3), T(0.03), T(1e-8), T(0.999)}, a, b, d);
}

TEST_CASE("a class index out of range in the CUDA kernel's body goes to the fault record, not to memory") {
    // cross_entropy picks log-probabilities with gather_at; run its body as the GPU's lanes do
    const std::vector<float> logp{-1, -2, -3, -4, -5, -6};  // [2, 3]
    const std::vector<std::int64_t> target{2, 7}, offset{0, 3};  // row 1's class 7 is out of range
    dt::detail::index_fault record;
    const dt::detail::gather_at<float> pick{logp.data(), 1, 3, 1, "nll_loss (class index)", &record};
    std::vector<float> out(2, 99.f);
    for (std::int64_t t = 0; t < 64; ++t)
        cu::map_linear_phase(pick, out.data(), std::int64_t{2}, 0u, t, std::int64_t{64}, target.data(), offset.data());
    CHECK(out == std::vector<float>{-3, 0});
    CHECK(record.raised == 1);
    CHECK(record.index == 7);
    CHECK(record.size == 3);
    CHECK(record.dim == 1);
    CHECK_ERROR(dt::index_error, dt::detail::throw_index_fault(record, " on the GPU"), "devtensor::nll_loss (class index)",
                "index 7 is out of bounds for dimension 1 with size 3 on the GPU");
    CHECK(record.raised == 0);  // cleared once thrown
    CHECK_NOTHROW(dt::detail::throw_index_fault(record));
}

TEST_CASE("after the first step a training step reserves no new memory and calls no malloc") {
    dt::generator gen(1);
    auto net = dt::nn::sequential(dt::nn::linear<float>(256, 1024, true, gen), dt::nn::relu{},
                                  dt::nn::linear<float>(1024, 10, true, gen));
    const auto X = dt::randn<float>({256, 256}, dt::cpu_device{}, gen);
    const auto y = dt::randint<std::int64_t>(0, 10, {256}, dt::cpu_device{}, gen);
    dt::optim::adam opt(net, {.lr = 1e-3});
    std::vector<std::size_t> reserved;
    std::vector<std::uint64_t> mallocs;
    for (int s = 0; s < 5; ++s) {
        auto loss = dt::nn::cross_entropy(net(X), y);
        opt.zero_grad();
        loss.backward();
        opt.step();
        reserved.push_back(dt::memory_reserved(dt::cpu_device{}));
        mallocs.push_back(dt::memory_system_allocations(dt::cpu_device{}));
    }
    // Step 0 makes Adam's state; step 1 may still fill a size class; from then on the cache serves all.
    for (std::size_t s = 2; s < reserved.size(); ++s) {
        CHECK(reserved[s] == reserved[1]);
        CHECK(mallocs[s] == mallocs[1]);
    }
}

TEST_CASE("training misuse is a clear error naming the op") {
    auto net = dt::nn::sequential(dt::nn::linear<float>(3, 2));
    const auto x = dt::randn<float>({4, 3});
    const auto message = [](auto&& f) {
        try {
            f();
        } catch (const dt::error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    CHECK(test::contains(message([&] { (void)dt::nn::mse_loss(net(x), dt::zeros<float>({4})); }), "mse_loss"));
    CHECK_THROWS_AS((void)dt::nn::mse_loss(net(x), dt::zeros<float>({4})), dt::shape_error);
    const auto labels = dt::from_values<std::int64_t>({0, 1, 2, 1}, {4});
    CHECK(test::contains(message([&] { (void)dt::nn::cross_entropy(net(x), labels); }), "class index"));
    CHECK_THROWS_AS((void)dt::nn::cross_entropy(net(x), labels), dt::index_error);
    CHECK_THROWS_AS((void)dt::nn::cross_entropy(net(x), dt::from_values<std::int64_t>({0, 1, -1, 1}, {4})), dt::index_error);
    CHECK(test::contains(message([&] { (void)dt::nn::nll_loss(net(x), dt::zeros<std::int64_t>({3})); }), "nll_loss"));

    dt::optim::sgd opt(net, {.lr = 0.1});
    CHECK(test::contains(message([&] { opt.step(); }), "no parameter has a gradient"));
    CHECK(test::contains(message([&] { dt::optim::sgd(net, {.lr = 0.1, .nesterov = true}); }), "Nesterov"));
    const auto detached = std::vector<dt::tensor<float>>{dt::zeros<float>({2})};
    CHECK(test::contains(message([&] { dt::optim::sgd<float>(detached, {}); }), "not a leaf that requires grad"));

    // the net moved after the optimizer was made: the optimizer's parameters get no gradient
    auto moved = net.to(dt::cpu_device{});  // on the CPU: the same parameters, so this one works
    auto loss = dt::nn::mse_loss(moved(x), dt::zeros<float>({4, 2}));
    loss.backward();
    CHECK_NOTHROW(opt.step());
    dt::nn::zero_grad(net);
    CHECK_FALSE(dt::nn::get<0>(net).weight.grad().defined());
}

TEST_CASE("an undefined tensor into backward, a loss, an optimizer or clip_grad_norm_ is a clear error") {
    const dt::tensor<float> undefined;
    dt::tensor<float> moved_from = dt::randn<float>({4, 2});
    const auto taken = std::move(moved_from);
    const auto target = dt::zeros<float>({4, 2});
    for (const dt::tensor<float>* t : std::array<const dt::tensor<float>*, 2>{&undefined, &moved_from}) {
        CHECK_THROWS_AS(t->backward(), dt::error);
        CHECK_THROWS_AS((void)dt::nn::mse_loss(*t, target), dt::error);
        CHECK_THROWS_AS((void)dt::nn::mse_loss(target, *t), dt::error);
        CHECK_THROWS_AS((void)dt::nn::cross_entropy(*t, dt::zeros<std::int64_t>({4})), dt::error);
        CHECK_THROWS_AS((void)dt::nn::cross_entropy(target, dt::tensor<std::int64_t>{}), dt::error);
        CHECK_THROWS_AS((void)dt::nn::binary_cross_entropy_with_logits(*t, target), dt::error);
        const std::vector<dt::tensor<float>> params{*t};
        CHECK_THROWS_AS(dt::optim::sgd<float>(params, {}), dt::autograd_error);
        CHECK_THROWS_AS(dt::optim::adam<float>(params, {}), dt::autograd_error);
    }
    CHECK(taken.defined());
    try {
        (void)dt::nn::mse_loss(undefined, target);
    } catch (const dt::error& e) {
        CHECK(test::contains(e.what(), "undefined"));
    }
    // parameters without gradients: clip_grad_norm_ has nothing to scale
    const auto net = dt::nn::linear<float>(2, 2);
    CHECK(dt::nn::clip_grad_norm_(net, 1.0) == 0.0);
}

TEST_CASE("mse and bce reduced as one op give the bits of their per-element values then mean or sum") {
    // The losses record one node for map-then-reduce; reduction::none then dt::mean / dt::sum
    // records the per-element node and the reduction's: values and both gradients must agree
    // bit for bit, on strided (transposed) and empty inputs too.
    dt::generator gen(5);
    for (const auto& dims : {std::vector<std::int64_t>{5, 3}, std::vector<std::int64_t>{0, 3}})
        for (const bool bce : {false, true})
            for (const auto r : {dt::nn::reduction::mean, dt::nn::reduction::sum}) {
                CAPTURE(dims[0]);
                CAPTURE(bce);
                CAPTURE(static_cast<int>(r));
                const auto a0 = dt::randn<double>({dims[1], dims[0]}, dt::cpu_device{}, gen);
                const auto b0 = dt::rand<double>(dt::shape(dims), dt::cpu_device{}, gen);
                const auto loss = [&](const auto& a, const auto& b, dt::nn::reduction how) {
                    return bce ? dt::nn::binary_cross_entropy_with_logits(a, b, how) : dt::nn::mse_loss(a, b, how);
                };
                std::vector<std::vector<double>> results[2];
                for (const bool fused : {true, false}) {
                    auto a = a0.clone().requires_grad_(), b = b0.clone().requires_grad_();
                    const auto at = a.t();  // strided: the transposed view
                    auto l = fused ? loss(at, b, r)
                                   : (r == dt::nn::reduction::mean ? dt::mean(loss(at, b, dt::nn::reduction::none))
                                                                   : dt::sum(loss(at, b, dt::nn::reduction::none)));
                    l.backward();
                    REQUIRE(a.grad().shape() == a.shape());
                    REQUIRE(b.grad().shape() == b.shape());
                    results[fused ? 0 : 1] = {l.to_vector(), a.grad().to_vector(), b.grad().to_vector()};
                }
                for (std::size_t i = 0; i < 3; ++i) CHECK(same_bits(results[0][i], results[1][i]));
                if (dims[0] == 0) CHECK(std::isnan(results[0][0][0]) == (r == dt::nn::reduction::mean));
            }
}

TEST_CASE("mse and bce as one op: aliased operands, and the same bits at 1, 2 and 7 threads") {
    dt::generator gen(6);
    // one tensor as input and target: both partials reach one leaf, summed (mse's cancel exactly)
    auto a = dt::randn<double>({4, 6}, dt::cpu_device{}, gen).requires_grad_();
    dt::nn::mse_loss(a, a).backward();
    CHECK(same_bits(a.grad().to_vector(), std::vector<double>(24, 0.0)));
    auto b = dt::rand<double>({4, 6}, dt::cpu_device{}, gen).requires_grad_(), b_twin = b.detach().clone().requires_grad_();
    dt::nn::binary_cross_entropy_with_logits(b, b).backward();
    (dt::nn::binary_cross_entropy_with_logits(b_twin, b_twin.detach()) +
     dt::nn::binary_cross_entropy_with_logits(b_twin.detach(), b_twin))
        .backward();
    CHECK(same_bits(b.grad().to_vector(), b_twin.grad().to_vector()));

    // large enough for the map and the reduction to split across threads
    const auto x0 = dt::randn<float>({301, 257}, dt::cpu_device{}, gen), y0 = dt::rand<float>({301, 257}, dt::cpu_device{}, gen);
    const auto run = [&] {
        auto x = x0.clone().requires_grad_(), y = y0.clone().requires_grad_();
        auto l = dt::nn::mse_loss(x, y) + dt::nn::binary_cross_entropy_with_logits(x, y, dt::nn::reduction::sum);
        l.backward();
        return std::vector<std::vector<float>>{l.to_vector(), x.grad().to_vector(), y.grad().to_vector()};
    };
    const int threads_before = dt::get_num_threads();
    dt::set_num_threads(1);
    const auto reference = run();
    for (const int threads : {2, 7}) {
        CAPTURE(threads);
        dt::set_num_threads(threads);
        const auto again = run();
        for (std::size_t i = 0; i < 3; ++i) CHECK(same_bits(again[i], reference[i]));
    }
    dt::set_num_threads(threads_before);
}

TEST_CASE("clip_grad_norm_: the joint norm, scaled to max_norm, untouched below it, errors on bad input") {
    auto a = dt::from_values<double>({3, 0}, {2}).requires_grad_(), b = dt::from_values<double>({4}, {1}).requires_grad_();
    a.set_grad(dt::from_values<double>({3, 0}, {2}));
    b.set_grad(dt::from_values<double>({4}, {1}));
    const std::vector<dt::tensor<double>> params{a, b};
    CHECK(dt::nn::clip_grad_norm_(params, 10.0) == doctest::Approx(5.0));  // sqrt(9 + 16), below: untouched
    CHECK(a.grad().to_vector() == std::vector<double>{3, 0});
    CHECK(dt::nn::clip_grad_norm_(params, 1.0) == doctest::Approx(5.0));
    CHECK(a.grad().to_vector()[0] == doctest::Approx(0.6));
    CHECK(b.grad().to_vector()[0] == doctest::Approx(0.8));
    CHECK(dt::nn::clip_grad_norm_(params, 1.0, std::numeric_limits<double>::infinity()) == doctest::Approx(0.8));
    CHECK(dt::nn::clip_grad_norm_(params, 1.0, 1.0) == doctest::Approx(1.4));  // 0.6 + 0.8: scaled again
    CHECK(a.grad().to_vector()[0] == doctest::Approx(0.6 / 1.4));
    CHECK_THROWS_AS((void)dt::nn::clip_grad_norm_(params, -1.0), dt::error);
    CHECK_THROWS_AS((void)dt::nn::clip_grad_norm_(params, 1.0, 0.0), dt::error);
    b.set_grad(dt::from_values<double>({std::numeric_limits<double>::quiet_NaN()}, {1}));
    CHECK_THROWS_AS((void)dt::nn::clip_grad_norm_(params, 1.0, 2.0, true), dt::autograd_error);
    CHECK(a.grad().to_vector()[0] == doctest::Approx(0.6 / 1.4));  // the error changed nothing
    (void)dt::nn::clip_grad_norm_(params, 1.0);  // as PyTorch: a NaN norm makes every gradient NaN
    CHECK(std::isnan(a.grad().to_vector()[0]));
}

TEST_CASE("modules: parameters, state_dict names, train and eval, moves keep the gradient") {
    auto net = dt::nn::sequential(dt::nn::linear<double>(3, 4), dt::nn::relu{}, dt::nn::linear<double>(4, 2, false));
    const auto params = net.parameters();
    CHECK(params.size() == 3);
    std::vector<std::string> names;
    for (const auto& [name, p] : net.named_parameters()) names.push_back(name);
    CHECK(names == std::vector<std::string>{"0.weight", "0.bias", "2.weight"});
    for (const auto& p : params) {
        CHECK(p.requires_grad());
        CHECK(p.is_leaf());
    }
    CHECK(net.is_training());
    net.eval();
    CHECK_FALSE(net.is_training());
    net.train();
    CHECK(net.is_training());
    static_assert(dt::nn::Module<decltype(net)>);
    static_assert(dt::nn::Module<dt::nn::relu>);

    dt::sum(net(dt::ones<double>({2, 3}))).backward();
    const auto same = net.to(dt::device("cpu"));  // the same device: the very parameters
    CHECK(dt::nn::get<0>(same).weight.is_same(dt::nn::get<0>(net).weight));
    CHECK(dt::nn::get<0>(same).weight.grad().defined());
}
