// transfer.hpp: the transfer guard and ledger (DESIGN §14). Copies between host
// and device need a device: these cases run on a real GPU, and without one on the
// recording stand-in runtime (the devtensor_tests_runtime_order builds), where
// copies really move bytes and kernels are recorded but not run.
#include "test_support.hpp"

#include <algorithm>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {
std::string here(int line) { return "test_transfer.cpp:" + std::to_string(line); }

/// What `f` writes to std::clog.
template <class F>
std::string clog_of(F f) {
    std::ostringstream captured;
    auto* const saved = std::clog.rdbuf(captured.rdbuf());
    try {
        f();
    } catch (...) {
        std::clog.rdbuf(saved);
        throw;
    }
    std::clog.rdbuf(saved);
    return captured.str();
}

std::size_t lines_in(const std::string& text) { return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')); }
}  // namespace

TEST_CASE("host-to-host copies are no transfer; a guard changes nothing on the CPU") {
    dt::reset_transfer_stats(dt::cpu_device{});
    const dt::transfer_guard guard(dt::transfer::disallow_explicit);
    const auto t = dt::from_values<float>({1, 2}, {2});
    CHECK(t.to_vector() == std::vector<float>{1, 2});
    CHECK(dt::from_values<float>({1}, {1}).item() == 1.0f);
    CHECK(dt::to_string(t) == "tensor([1., 2.])");
    CHECK(dt::transfer_stats(dt::cpu_device{}) == dt::transfer_statistics{});
}

TEST_CASE("pin_memory needs a GPU, as torch's does; without one it says so") {
    if (dt::cuda_device_count() > 0) return;  // the GPU case below
    CHECK_ERROR(dt::device_unavailable, (void)dt::ones<float>({3}).pin_memory(), "devtensor::tensor::pin_memory",
                "no GPU");
    CHECK_FALSE(dt::ones<float>({3}).is_pinned());
}

DEVTENSOR_GPU_TEST_CASE("a non_blocking copy from pinned memory gives the values once the device's work is done") {
    dt::generator gen(3);
    const auto host = dt::rand<float>({300, 500}, dt::cpu_device{}, gen);
    const auto pinned = host.pin_memory();
    CHECK(pinned.is_pinned());
    const auto on_gpu = pinned.to(dt::cuda_device{0}, true);
    CHECK(on_gpu.cpu().to_vector() == host.to_vector());  // the copy back is ordered after it
    CHECK(pinned.cuda(0, true).cpu().to_vector() == host.to_vector());
}

DEVTENSOR_GPU_TEST_CASE("under disallow every implicit copy throws, naming the op and the call, and copies nothing") {
    const dt::tensor<float> t = dt::from_values<float>({1, 2, 3}, {3}, dt::cuda_device{0}); const int t_line = __LINE__;
    const dt::tensor<float> one = dt::from_values<float>({7}, {1}, dt::cuda_device{0});
    dt::reset_transfer_stats(dt::cuda_device{0});
    dt::reset_transfer_stats(dt::cpu_device{});
    {
        const dt::transfer_guard guard(dt::transfer::disallow);
        CHECK_ERROR(dt::transfer_error, t.to_vector(), "devtensor::to_vector", "implicit device-to-host copy of 12 bytes", "cuda:0 -> cpu", here(__LINE__));
        CHECK_ERROR(dt::transfer_error, t.to_vector(), "(the tensor made by from_values at " + here(t_line) + ")");
        CHECK_ERROR(dt::transfer_error, one.item(), "devtensor::item", "4 bytes", here(__LINE__));
        CHECK_ERROR(dt::transfer_error, dt::to_string(t), "devtensor::to_string", here(__LINE__));
        std::ostringstream os;
        CHECK_ERROR(dt::transfer_error, os << t, "devtensor::operator<<", "implicit device-to-host");
        CHECK(os.str().empty());
        CHECK(dt::transfer_stats(dt::cuda_device{0}) == dt::transfer_statistics{});  // nothing was copied
        // Explicit copies stay allowed.
        CHECK(t.cpu().to_vector() == std::vector<float>{1, 2, 3});
        const auto back = dt::from_values<float>({4}, {1}, dt::cuda_device{0});
        CHECK(back.device() == dt::cuda_device{0});
    }
    CHECK(t.to_vector() == std::vector<float>{1, 2, 3});  // the guard is gone
}

DEVTENSOR_GPU_TEST_CASE("disallow_explicit refuses to, cpu and cuda too; guards nest and restore") {
    const dt::tensor<float> t = dt::from_values<float>({1}, {1}, dt::cuda_device{0});
    const dt::transfer_guard outer(dt::transfer::disallow_explicit);
    CHECK_ERROR(dt::transfer_error, t.cpu(), "devtensor::cpu", "explicit device-to-host copy", "disallow_explicit", here(__LINE__));
    CHECK_ERROR(dt::transfer_error, dt::ones<float>({1}).cuda(0), "devtensor::cuda", "explicit host-to-device copy");
    CHECK_ERROR(dt::transfer_error, dt::from_values<float>({1}, {1}, dt::cuda_device{0}), "devtensor::from_values");
    {
        const dt::transfer_guard inner(dt::transfer::allow);
        CHECK(t.to_vector() == std::vector<float>{1});
        {
            const dt::transfer_guard innermost(dt::transfer::disallow_explicit, dt::transfer_direction::host_to_device);
            CHECK(t.cpu().to_vector() == std::vector<float>{1});  // device-to-host: still the inner allow
            CHECK_ERROR(dt::transfer_error, dt::ones<float>({2}).cuda(0), "disallow_explicit");
        }
        {
            const dt::transfer_guard innermost(dt::transfer::disallow, dt::transfer_direction::host_to_device);
            CHECK(dt::ones<float>({2}).cuda(0).defined());  // disallow lets explicit copies through
        }
    }
    CHECK_ERROR(dt::transfer_error, t.to_vector(), "to_vector");  // the outer level is back
}

DEVTENSOR_GPU_TEST_CASE("one direction at a time") {
    const dt::tensor<float> t = dt::from_values<float>({1, 2}, {2}, dt::cuda_device{0});
    {
        const dt::transfer_guard guard(dt::transfer::disallow, dt::transfer_direction::device_to_host);
        CHECK_THROWS_AS((void)t.to_vector(), dt::transfer_error);
        CHECK(t.to(dt::cuda_device{0}).defined());
    }
    {
        const dt::transfer_guard guard(dt::transfer::disallow, dt::transfer_direction::host_to_device);
        CHECK(t.to_vector() == std::vector<float>{1, 2});
    }
}

DEVTENSOR_GPU_TEST_CASE("under log each implicit copy is one line on std::clog; explicit ones none") {
    const dt::tensor<float> t = dt::from_values<float>({1, 2, 3}, {3}, dt::cuda_device{0});
    const dt::transfer_guard guard(dt::transfer::log);
    std::string values_line;
    const std::string logged = clog_of([&] { (void)t.to_vector(); values_line = here(__LINE__); });
    CHECK(lines_in(logged) == 1);
    CHECK(test::contains(logged, "devtensor: an implicit device-to-host copy of 12 bytes (cuda:0 -> cpu) in to_vector at " + values_line));
    CHECK(lines_in(clog_of([&] { (void)dt::to_string(t); })) == 1);  // a print is one copy for the guard
    const dt::tensor<float> one = dt::from_values<float>({7}, {1}, dt::cuda_device{0});
    CHECK(lines_in(clog_of([&] { (void)one.to(dt::device("cuda:0")).cpu().item(); })) == 0);  // explicit, then a host item
    CHECK(lines_in(clog_of([&] { (void)one.item(); })) == 1);
    std::ostringstream os;
    const std::string printed = clog_of([&] { os << t; });
    CHECK(lines_in(printed) == 1);
    CHECK(test::contains(printed, "in operator<< (the tensor made by from_values at"));
    const auto big = dt::from_values<float>(std::vector<float>(3000, 1.0f), {3000}, dt::cuda_device{0});
    CHECK(lines_in(clog_of([&] { (void)dt::to_string(big); })) == 1);  // two runs copied, one line
    CHECK(clog_of([&] { (void)t.cpu(); }).empty());
}

DEVTENSOR_GPU_TEST_CASE("a guard is this thread's alone") {
    const dt::tensor<float> t = dt::from_values<float>({5}, {1}, dt::cuda_device{0});
    const dt::transfer_guard guard(dt::transfer::disallow);
    float other = 0;
    std::thread([&] { other = t.item(); }).join();
    CHECK(other == 5.0f);
    CHECK_THROWS_AS((void)t.item(), dt::transfer_error);
}

DEVTENSOR_GPU_TEST_CASE("transfer_stats counts copies and bytes per direction and device") {
    const bool two = dt::cuda_device_count() >= 2;
    dt::reset_transfer_stats(dt::cpu_device{});
    dt::reset_transfer_stats(dt::cuda_device{0});
    if (two) dt::reset_transfer_stats(dt::cuda_device{1});
    const auto t = dt::from_values<float>({1, 2, 3}, {3}, dt::cuda_device{0});  // 12 bytes in
    (void)t.to_vector();                                                       // 12 bytes out
    const auto gpu0 = dt::transfer_stats(dt::cuda_device{0});
    CHECK(gpu0.host_to_device == dt::transfer_count{1, 12});
    CHECK(gpu0.device_to_host == dt::transfer_count{1, 12});
    CHECK(dt::transfer_stats(dt::cpu_device{}) == gpu0);  // every host copy, from the host's side
    if (two) {
        (void)t.to(dt::cuda_device{1});
        CHECK(dt::transfer_stats(dt::cuda_device{0}).device_to_device == dt::transfer_count{1, 12});
        CHECK(dt::transfer_stats(dt::cuda_device{1}).device_to_device == dt::transfer_count{1, 12});
        CHECK(dt::transfer_stats(dt::cpu_device{}).device_to_device == dt::transfer_count{});
    }
}

#if DEVTENSOR_HAS_CUDA
DEVTENSOR_GPU_TEST_CASE("a forward-and-add loop on a run-time device copies nothing to the host per step") {
    const dt::device dev = dt::try_gpu();
    const auto net = dt::nn::sequential(dt::nn::linear<float>(8, 16), dt::nn::linear<float>(16, 4)).to(dev);
    const auto x = dt::rand<float>({32, 8}, dev);
    auto total = dt::zeros<float>({32, 4}, dev);
    dt::reset_transfer_stats(dev);
    {
        const dt::transfer_guard guard(dt::transfer::disallow);  // an implicit copy would throw
        const dt::no_grad inference;  // += is not recorded: the loop is inference, as torch.no_grad()
        for (int step = 0; step < 10; ++step) total += net(x);
    }
    CHECK(dt::transfer_stats(dev) == dt::transfer_statistics{});
    (void)dt::to_string(total);  // what the user prints: one copy
    CHECK(dt::transfer_stats(dev).device_to_host.copies >= 1);
}
#endif
