// The headers, included with a plain -I (not -isystem), compile without a single
// warning under -Wall -Wextra -Wshadow -Wconversion -Wsign-conversion -Wundef -Werror
// (tests/warnings/CMakeLists.txt, g++ and clang++). Every template users
// instantiate is instantiated here, in functions that are compiled and reachable
// from main(), for each element type it accepts. The file is compiled, never run.
#include <devtensor/devtensor.hpp>
#if __has_include(<dlpack/dlpack.h>)  // optional: devtensor.hpp does not include it
#  include <devtensor/dlpack.hpp>
#  define STRICT_WITH_DLPACK 1
#else
#  define STRICT_WITH_DLPACK 0
#endif

#include <array>
#include <cstdint>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace dt = devtensor;

namespace {

/// What every element type serves: creation, access, printing, add, fill.
template <class T, class D>
std::size_t every_element_op(const D& dev) {
    std::size_t sink = 0;
    const dt::shape s{2, 2};

    auto a = dt::ones<T>(s, dev);
    const auto b = dt::zeros<T>(s, dev);
    const auto c = dt::full<T>(s, T(1), dev);
    const auto e = dt::empty<T>(s, dev);
    const auto v = dt::from_values<T>({T(1), T(0), T(1), T(0)}, s, dev);
    const std::array<T, 4> values{T(0), T(1), T(0), T(1)};
    const auto w = dt::from_values<T>(values, s, dev);
    const auto row = dt::ones<T>({2}, dev);  // broadcasts against [2, 2]

    sink += a.to_vector().size() + static_cast<std::size_t>(e.numel());
    sink += static_cast<std::size_t>(dt::full<T>({1}, T(1), dev).item());

    sink += dt::add(a, b).to_vector().size();
    sink += (a + c).to_vector().size();
    sink += (v + row).to_vector().size();  // the broadcasting path
    a += w;
    a += row;
    const auto out = dt::empty<T>(s, dev);
    dt::add(a, b, out);
    dt::fill(out, T(0));
    sink += static_cast<std::size_t>(dt::sum(a).item()) + dt::sum(a, {1}, true).to_vector().size();
    sink += dt::sum(a.t(), {0, 1}).to_vector().size();
    if constexpr (std::is_floating_point_v<T>) {
        sink += dt::mean(a, {0}).to_vector().size() + dt::softmax(a, 1).to_vector().size();
        sink += dt::log_softmax(a, 0).to_vector().size() + dt::exp(a / b).to_vector().size();
        sink += dt::log(a).to_vector().size() + dt::tanh(a).to_vector().size() + dt::sigmoid(a).to_vector().size();
        sink += dt::allclose(a, c) ? 1u : 0u;
    }
    sink += static_cast<std::size_t>(dt::amax(a).item()) + static_cast<std::size_t>(dt::argmin(a, 1).numel());
    sink += dt::any(a > b).item() ? 1u : 0u;
    const auto picks = dt::zeros<std::int64_t>({2, 1}, dev);
    sink += static_cast<std::size_t>(dt::gather(a, 1, picks).numel() + dt::index_select(a, 0, picks.view({2})).numel());
    sink += dt::equal(a, c) ? 1u : 0u;
    sink += dt::where(a != c, dt::maximum(a, b), dt::clamp(a, 0, 1)).to_vector().size();
    if constexpr (!std::is_same_v<T, bool>) sink += (-(a - 1) * 2).to_vector().size() + dt::pow(a, b).to_vector().size();

    const dt::tensor<T> any = a.to(dt::device{});  // the run-time device handle
    sink += static_cast<std::size_t>(dt::tensor_cast<dt::cpu_device>(any).numel());
    sink += static_cast<std::size_t>(a.cpu().dim()) + (a.is_same(any) ? 1u : 0u);
    if (dt::cuda_device_count() > 0) sink += a.cpu().pin_memory().to(dev, true).is_pinned() ? 1u : 0u;
#if STRICT_WITH_DLPACK
    sink += static_cast<std::size_t>(dt::from_dlpack<T>(dt::to_dlpack(a)).numel());
#endif

    std::ostringstream os;
    os << a << dt::zeros<T>({0}, dev) << dt::ones<T>({}, dev);
    sink += os.str().size() + dt::to_string(a).size();
    return sink;
}

/// Element access needs a static host tensor.
template <class T>
std::size_t element_access() {
    const auto t = dt::zeros<T>({2, 3});
    t(0, 1) = T(1);
    t(std::size_t{1}, std::int64_t{2}) = t(0, 1);
    t[1](0) = T(1);  // t[1] is row 1, a view
    const auto v = t.t().contiguous().view({6}).reshape({2, 3}).flatten().unsqueeze(0).squeeze(0).narrow(0, 1, 4);
    return static_cast<std::size_t>(t(1, 0)) + static_cast<std::size_t>(t(1, 2)) + static_cast<std::size_t>(v.numel()) +
           static_cast<std::size_t>(t.permute({1, 0}).expand({2, 3, 2}).select(0, 1).template to<double>().numel());
}

template <class T, class D>
std::size_t gemm_ops(const D& dev) {
    const auto a = dt::ones<T>({2, 3}, dev);
    const auto b = dt::ones<T>({3, 2}, dev);
    const auto bias = dt::zeros<T>({2}, dev);
    std::size_t sink = dt::matmul(a, b).to_vector().size();
    sink += dt::linear(a, dt::ones<T>({2, 3}, dev), bias).to_vector().size();
    sink += dt::linear(a, dt::ones<T>({2, 3}, dev)).to_vector().size();
    sink += dt::matmul(dt::stack(std::vector{a, a}), dt::ones<T>({3}, dev)).to_vector().size();
    sink += dt::cat(std::vector{a, a}, 1).to_vector().size();
    return sink;
}

template <class T, class D>
std::size_t floating_ops(const D& dev) {
    dt::generator gen(42);
    auto t = dt::rand<T>({2, 3}, dev, gen);
    const auto u = dt::rand<T>({5}, dev);
    dt::fill_uniform(t, gen);
    dt::fill_uniform(u, dt::default_generator(dt::device(dev)));
    return t.to_vector().size() + u.to_vector().size() + gemm_ops<T>(dev);
}

std::size_t nn_ops() {
    dt::generator gen(7);
    const dt::nn::linear<float> layer(3, 2, true, gen);
    const dt::nn::linear<float> no_bias(3, 2, false);
    const auto x = dt::ones<float>({4, 3});
    auto net = dt::nn::sequential(dt::nn::linear<float>(3, 4, true, gen), dt::nn::linear<float>(4, 1));
    const auto cpu_net = net.to(dt::cpu_device{});
    std::size_t sink = net(x).to_vector().size() + cpu_net(x).to_vector().size();
    sink += layer(x).to_vector().size() + no_bias.forward(x).to_vector().size();
    const auto cpu_layer = layer.to(dt::cpu_device{});
    sink += cpu_layer(x).to_vector().size() + layer.parameters().size();
    auto& [first, second] = net;
    sink += static_cast<std::size_t>(first.in_features() + second.out_features());
    return sink;
}

std::size_t memory_and_devices() {
    const dt::cpu_device cpu;
    std::size_t sink = dt::memory_allocated(cpu) + dt::max_memory_allocated(cpu);
    dt::reset_peak_memory_stats(cpu);
    sink += dt::memory_reserved(cpu);
    dt::empty_cache(cpu);
    sink += dt::memory_allocated(dt::device{}) + dt::memory_reserved(dt::device{});

    const dt::device gpu1("cuda:1");
    sink += dt::to_string(gpu1).size() + dt::to_string(cpu).size() + dt::repr(gpu1).size();
    std::cout << dt::cpu_device{} << ' ' << gpu1 << ' ' << dt::cuda_device{1} << '\n';

    const dt::device best = dt::try_gpu();
    sink += dt::try_all_gpus().size() + static_cast<std::size_t>(best.index());
    const dt::device_properties p = dt::properties(dt::cpu_device{});
    sink += p.name.size() + p.total_memory;
    sink += static_cast<std::size_t>(dt::cuda_device_count()) + dt::cuda_unavailable_reason().size();

    dt::set_num_threads(2);
    sink += static_cast<std::size_t>(dt::get_num_threads());

    const dt::shape s{2, 3};
    std::cout << s << ' ' << dt::broadcast_shapes(s, dt::shape{3}) << '\n';
    sink += s.to_string().size() + s.rank();
    dt::manual_seed(1);
    return sink;
}

/// Autograd, losses, optimizers and the loader, on floating type T and device D.
template <class T, class D>
std::size_t training_ops(const D& dev) {
    dt::generator gen(1);
    auto net = dt::nn::sequential(dt::nn::linear<T>(4, 8, true, gen), dt::nn::tanh{}, dt::nn::linear<T>(8, 3, true, gen),
                                  dt::nn::sigmoid{})
                   .to(dev);
    const auto X = dt::randn<T>({6, 4}, dev, gen);
    const auto labels = dt::zeros<std::int64_t>({6}, dev);
    dt::optim::sgd sgd(net, {.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-4, .nesterov = true});
    dt::optim::adam adam(net, {.amsgrad = true});
    dt::optim::adamw adamw(net);
    std::size_t sink = 0;
    for (auto [x, y] : dt::data::loader(dt::data::tensor_dataset(X, labels), {.batch_size = 4, .shuffle = true}, gen)) {
        auto loss = dt::nn::cross_entropy(net(x), y) + dt::nn::mse_loss(net(x), dt::zeros_like(net(x))) +
                    dt::nn::binary_cross_entropy_with_logits(net(x), dt::ones_like(net(x)), dt::nn::reduction::sum) +
                    dt::mean(dt::pow(dt::softmax(net(x), 1), T(2)));
        sgd.zero_grad();
        loss.backward();
        sink += dt::nn::clip_grad_norm_(net, 1.0) > 0 ? 1u : 0u;
        sink += dt::nn::clip_grad_norm_(net.parameters(), 1.0, std::numeric_limits<double>::infinity()) > 0 ? 1u : 0u;
        sgd.step();
        adam.step();
        adamw.step();
        sink += static_cast<std::size_t>(loss.numel());
    }
    dt::nn::zero_grad(net);
    auto w = dt::nn::get<0>(net).weight;
    w.register_post_accumulate_grad_hook([&](dt::tensor<T>& g) { sink += static_cast<std::size_t>(g.numel()); });
    {
        const dt::no_grad off;
        sink += w.detach().requires_grad() ? 0u : 1u;
    }
    return sink + net.parameters().size() + net.named_parameters().size();
}

/// Every element type, on the static CPU device and on the run-time device.
template <class T>
std::size_t all_for() {
    return every_element_op<T>(dt::cpu_device{}) + every_element_op<T>(dt::device{}) +
           element_access<T>();
}

}  // namespace

int main() {
    std::size_t sink = 0;
    sink += all_for<float>() + all_for<double>() + all_for<std::int32_t>() +
            all_for<std::int64_t>() + all_for<std::uint8_t>() + all_for<std::int8_t>() +
            all_for<std::int16_t>() + all_for<bool>();
    sink += floating_ops<float>(dt::cpu_device{}) + floating_ops<double>(dt::cpu_device{});
    sink += floating_ops<float>(dt::device{}) + floating_ops<double>(dt::device{});
    sink += gemm_ops<std::int32_t>(dt::cpu_device{}) + gemm_ops<std::int64_t>(dt::cpu_device{});
    sink += gemm_ops<std::int32_t>(dt::device{}) + gemm_ops<std::int64_t>(dt::device{});
    sink += nn_ops() + memory_and_devices();
    sink += training_ops<float>(dt::cpu_device{}) + training_ops<double>(dt::device{});
    return sink == 0 ? 1 : 0;
}
