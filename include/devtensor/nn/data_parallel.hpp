// nn::data_parallel (DESIGN §13): one process, one replica of a module per device
// (try_all_gpus()). The replicas are made once; each call copies the first
// replica's parameters to the others (the optimizer steps the first), scatters the
// batch along dimension 0, runs every replica on its share and joins the outputs on
// the first device, where autograd carries the gradient back to each replica. When
// every replica's gradient of a parameter is ready, they are summed in device order
// into the first replica's, so the step sees the whole batch's gradient. With one
// device ({cpu} on a machine without a GPU) it is the module itself.
#pragma once

#include <devtensor/autograd/graph.hpp>
#include <devtensor/device.hpp>
#include <devtensor/ops/join.hpp>
#include <devtensor/optim/optimizer.hpp>  // parameters_of

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace devtensor::detail {
/// Replica k's gradient of parameter i into replica 0's, once all active replicas have one.
template <class T>
struct replica_gradients {
    std::vector<std::vector<tensor<T, device>>> params;  ///< [replica][parameter]
    std::vector<std::size_t> ready;                       ///< replicas whose gradient of i is in
    std::size_t active = 0;                               ///< replicas the last forward ran

    void arrived(std::size_t i) {
        if (++ready[i] < active) return;
        ready[i] = 0;
        const no_grad off;
        const tensor<T, device> total = params[0][i].grad();
        for (std::size_t k = 1; k < active; ++k) {
            const tensor<T, device> g = params[k][i].grad();
            if (!g.defined()) continue;
            const tensor<T, device> here = g.to(total.device());
            map_out("data_parallel", grad_sum{}, total, total, here);
            params[k][i].set_grad({});
        }
    }
};
}  // namespace devtensor::detail

namespace devtensor::nn {


/// A module run on several devices at once (see the file's comment): call it as the
/// module; parameters() are the first replica's, which the optimizer steps.
template <class M>
class data_parallel {
    using replica_t = decltype(std::declval<const M&>().to(std::declval<const device&>()));
    using param_t = typename decltype(optim::parameters_of(std::declval<const replica_t&>()))::value_type;
    using T = typename param_t::value_type;

public:
    data_parallel(const M& net, std::vector<device> devices) : devices_(std::move(devices)) {
        if (devices_.empty()) throw error("devtensor::nn::data_parallel: needs at least one device");
        for (std::size_t k = 0; k < devices_.size(); ++k)
            for (std::size_t j = 0; j < k; ++j)
                if (devices_[j] == devices_[k])
                    throw error("devtensor::nn::data_parallel: " + to_string(devices_[k]) +
                                " is listed twice; each device holds one replica");
        auto grads = std::make_shared<detail::replica_gradients<T>>();
        for (const device& dev : devices_) {
            replicas_.push_back(replicas_.empty() ? net.to(dev) : replicas_.front().to(dev));
            grads->params.emplace_back();
            for (const auto& p : optim::parameters_of(replicas_.back()))
                if (p.requires_grad()) grads->params.back().push_back(p);
        }
        grads->ready.assign(grads->params[0].size(), 0);
        const std::weak_ptr<detail::replica_gradients<T>> weak = grads;
        if (devices_.size() > 1)
            for (auto& replica : grads->params)
                for (std::size_t i = 0; i < replica.size(); ++i)
                    replica[i].register_post_accumulate_grad_hook([weak, i](param_t&) {
                        if (const auto g = weak.lock()) g->arrived(i);
                    });
        grads_ = std::move(grads);
    }

    template <class X>
    [[nodiscard]] auto forward(const X& x, call_site site = call_site::current()) const {
        return run(x, site);
    }
    template <class X>
    [[nodiscard]] auto operator()(const X& x, call_site site = call_site::current()) const {
        return run(x, site);
    }

    auto parameters() const { return replicas_.front().parameters(); }
    const replica_t& module() const noexcept { return replicas_.front(); }
    const std::vector<device>& devices() const noexcept { return devices_; }

private:
    template <class X>
    auto run(const X& x, call_site site) const {
        if (devices_.size() == 1) return tensor<T, device>(replicas_.front()(x.to(devices_.front(), site), site));
        if (x.dim() == 0) throw shape_error("devtensor::nn::data_parallel: the input needs a batch dimension to scatter");
        synchronize_replicas();
        const std::int64_t rows = x.shape()[0];
        const auto k = static_cast<std::int64_t>(devices_.size());
        const std::int64_t share = (rows + k - 1) / k;  // torch's scatter: equal shares, the last ones shorter
        std::vector<tensor<T, device>> outputs;
        for (std::int64_t at = 0, r = 0; at < rows || (rows == 0 && r == 0); at += share, ++r) {
            const auto part = x.narrow(0, at, std::min(share, rows - at)).to(devices_[static_cast<std::size_t>(r)], site);
            outputs.push_back(replicas_[static_cast<std::size_t>(r)](part, site).to(devices_.front(), site));
            if (rows == 0) break;
        }
        grads_->active = outputs.size();
        return cat(outputs, 0, site);
    }

    /// The first replica's parameters (just stepped) copied into the others.
    void synchronize_replicas() const {
        const no_grad off;
        const auto& first = grads_->params[0];
        for (std::size_t r = 1; r < grads_->params.size(); ++r)
            for (std::size_t i = 0; i < first.size(); ++i) {
                const auto& p = grads_->params[r][i];
                detail::map_out("data_parallel", detail::copy_element{}, p, first[i].to(p.device()));
            }
    }

    std::vector<device> devices_;
    std::vector<replica_t> replicas_;
    std::shared_ptr<detail::replica_gradients<T>> grads_;
};

}  // namespace devtensor::nn
