// The PyTorch GPU walkthrough (shared/SEED-walkthrough.txt), step by step, in
// devtensor. Runs with or without a GPU, and says which.
#include <devtensor/devtensor.hpp>

#include <iostream>
#include <string>
#include <vector>

namespace dt = devtensor;
namespace nn = devtensor::nn;

namespace {
void section(const std::string& title) { std::cout << "\n== " << title << " ==\n"; }

/// torch.device's repr: device(type='cuda', index=1)
std::string repr(const dt::device& d) {
    if (d.is_cpu()) return "device(type='cpu')";
    return "device(type='cuda', index=" + std::to_string(d.index()) + ")";
}

std::string list(const std::vector<dt::device>& devices) {
    std::string s = "[";
    for (std::size_t i = 0; i < devices.size(); ++i) s += (i ? ", " : "") + repr(devices[i]);
    return s + "]";
}
}  // namespace

int main() {
    const bool gpu = dt::cuda_available();
    std::cout << "devtensor " << DEVTENSOR_VERSION_STRING << " tour: "
              << (gpu ? "running with " + std::to_string(dt::cuda_device_count()) + " CUDA device(s)"
                      : "running WITHOUT a GPU (" + dt::cuda_unavailable_reason() +
                            "); every try_gpu() below falls back to the CPU")
              << "\n";

    section("2. nvidia-smi: is there a GPU?");
    for (const auto& d : dt::try_all_gpus()) {
        const auto p = dt::properties(d);
        std::cout << dt::to_string(d) << ": " << p.name << ", " << (p.total_memory >> 20) << " MiB";
        if (d.is_cuda())
            std::cout << ", driver " << p.driver_version << ", runtime " << p.runtime_version
                      << ", " << ((p.total_memory - p.free_memory) >> 20) << " MiB used";
        std::cout << "\n";
    }
    if (!gpu) std::cout << "(no GPU: examples/device_query lists the CPU and says why)\n";

    section("3. device descriptors and the device count");
    // Descriptors are only names: cuda:1 is fine to write even without that GPU.
    std::cout << "(" << repr(dt::device("cpu")) << ", " << repr(dt::device("cuda")) << ", "
              << repr(dt::device("cuda:1")) << ")\n";
    std::cout << "cuda_device_count() = " << dt::cuda_device_count() << "\n";

    section("4. try_gpu() and try_all_gpus()");
    std::cout << dt::to_string(dt::try_gpu()) << "\n"
              << dt::to_string(dt::try_gpu(10)) << "\n"
              << list(dt::try_all_gpus()) << "\n";

    section("5.1 where a tensor lives");
    const auto x_cpu = dt::from_values<std::int64_t>({1, 2, 3}, {3});
    std::cout << dt::to_string(x_cpu.device()) << "\n";

    section("5.2 creating on the GPU: ones(2, 3, device=try_gpu())");
    auto X = dt::ones<float>({2, 3}, dt::try_gpu());
    std::cout << X << "\n";

    section("5.3 a missing GPU falls back: rand(2, 3, device=try_gpu(1))");
    auto Y = dt::rand<float>({2, 3}, dt::try_gpu(1));
    std::cout << dt::to_string(Y.device()) << "\n" << Y << "\n";

    section("5.4 operands must share a device");
    try {
        std::cout << X + Y << "\n";
        std::cout << "(X and Y are both on " << dt::to_string(X.device())
                  << " here, so X + Y just works; with one GPU, X is on cuda:0 and Y on the cpu)\n";
    } catch (const dt::device_mismatch& e) {
        std::cout << "X + Y refused at run time: " << e.what() << "\n";
    }
    // With static device types the same mistake does not compile:
    //   dt::tensor<float, dt::cuda_device> Xs = dt::ones<float>({2, 3}, dt::cuda_device{0});
    //   dt::tensor<float, dt::cpu_device>  Ys = dt::rand<float>({2, 3});
    //   Xs + Ys;  // error: devtensor::operator+: operands live on different devices (cuda vs cpu); move one with .to()
    dt::tensor<float> Z;
    if (gpu) {
        Z = X.cuda(0);
    } else {
        try {
            (void)X.cuda(0);
        } catch (const dt::device_unavailable& e) {
            std::cout << "X.cuda(0): " << e.what() << "; using X.to(try_gpu()) instead\n";
        }
        Z = X.to(dt::try_gpu());
    }
    std::cout << X << "\n" << Z << "\n";
    Y = dt::rand<float>({2, 3}, dt::try_gpu(0));
    std::cout << Y + Z << "\n";
    std::cout << std::boolalpha
              << (gpu ? "Z.cuda(0) is Z: " + std::string(Z.cuda(0).is_same(Z) ? "True" : "False")
                      : "Z.to(try_gpu()) is Z: " + std::string(Z.to(dt::try_gpu()).is_same(Z) ? "True" : "False"))
              << "\n";

    section("6. a network on the GPU: Sequential(Linear(3, 1)).to(try_gpu())");
    auto net = nn::sequential(nn::linear<float>(3, 1));  // weights initialised here, on the CPU
    net = net.to(dt::try_gpu());                         // every parameter moved once
    X = dt::ones<float>({2, 3}, dt::try_gpu());
    std::cout << net(X) << "\n";
    const auto d = get<0>(net).weight.device();  // net[0].weight.data.device
    std::cout << repr(d) << "\n";

    section("7. train it: a few SGD steps on try_gpu()");
    const auto targets = dt::full<float>({2, 1}, 1.0f, dt::try_gpu());
    auto opt = dt::optim::sgd(net, {.lr = 0.1});
    for (int step = 1; step <= 5; ++step) {
        auto loss = nn::mse_loss(net(X), targets);
        opt.zero_grad();
        loss.backward();
        opt.step();
        std::cout << "step " << step << ": loss " << loss.item() << "\n";
    }
    std::cout << "net[0].weight.grad on " << repr(get<0>(net).weight.grad().device()) << "\n";

    section("8. summary");
    std::cout << "describe devices with dt::device, move with .to(), pick with try_gpu(): the same\n"
                 "program ran here " << (gpu ? "on the GPU" : "on the CPU") << ".\n";
}
