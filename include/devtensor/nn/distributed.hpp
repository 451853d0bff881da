// nn::distributed_data_parallel (DESIGN §13): one replica of a module per rank of a
// communicator. At the start every parameter is broadcast from rank 0; during each
// backward the gradients are averaged over the ranks in buckets of about
// `bucket_bytes`, each bucket all-reduced (asynchronously, on the communicator's
// thread) as soon as its last gradient is ready, so communication overlaps the rest
// of backward. When the last bucket is back every rank holds the same gradients, so
// the same optimizer step keeps the replicas identical.
#pragma once

#include <devtensor/autograd/graph.hpp>
#include <devtensor/dist/communicator.hpp>
#include <devtensor/ops/join.hpp>
#include <devtensor/optim/optimizer.hpp>  // parameters_of

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace devtensor::detail {

/// The buckets, which of their gradients are ready, and the all-reduces in flight.
/// Hooks reach it through a weak pointer: once the wrapper is gone they do nothing.
template <class T, dist::Communicator C>
struct reducer {
    using param_t = tensor<T, device>;
    struct bucket {
        std::vector<std::size_t> members;  ///< parameter indices, in the order they are packed
        std::size_t ready = 0;
    };

    explicit reducer(C c) : comm(std::move(c)) {}

    C comm;
    std::vector<param_t> params;
    std::vector<bucket> buckets;
    std::vector<std::size_t> bucket_of;
    std::vector<bool> is_ready;
    std::vector<dist::work<param_t>> in_flight;  ///< one per launched bucket, in bucket order
    std::size_t launched = 0;

    /// Parameter i's gradient is final for this backward.
    void ready(std::size_t i) {
        if (is_ready[i]) return;  // reached twice (a second backward without a step): reduced once
        is_ready[i] = true;
        ++buckets[bucket_of[i]].ready;
        // Launch in bucket order only: every rank must start the same all-reduces in the same order.
        while (launched < buckets.size() && buckets[launched].ready == buckets[launched].members.size()) launch(launched++);
        if (launched == buckets.size()) finish();
    }

    void launch(std::size_t b) {
        std::vector<param_t> flat;
        for (const std::size_t i : buckets[b].members) flat.push_back(params[i].grad().reshape({-1}));
        in_flight.push_back(comm.all_reduce_async(cat(flat), dist::reduce_op::avg));
    }

    /// Every bucket back: the averaged gradients into the parameters' grad.
    void finish() {
        for (std::size_t b = 0; b < buckets.size(); ++b) {
            const param_t averaged = in_flight[b].wait();
            std::int64_t at = 0;
            for (const std::size_t i : buckets[b].members) {
                const param_t g = params[i].grad();
                map_checked("distributed_data_parallel", copy_element{}, g,
                                               averaged.narrow(0, at, g.numel()).view(g.shape()));
                at += g.numel();
            }
        }
        reset();
    }

    void reset() {
        in_flight.clear();
        launched = 0;
        for (auto& b : buckets) b.ready = 0;
        is_ready.assign(params.size(), false);
    }

    /// The parameters the last backward gave no gradient, or "" when it reduced them all.
    std::string missing() const {
        if (launched == 0 && std::find(is_ready.begin(), is_ready.end(), true) == is_ready.end()) return "";
        std::string names;
        for (std::size_t i = 0; i < params.size(); ++i)
            if (!is_ready[i]) names += (names.empty() ? "" : ", ") + std::to_string(i);
        return names;
    }
};

}  // namespace devtensor::detail

namespace devtensor::nn {

struct ddp_options {
    /// Gradients fused into one all-reduce, up to about this many bytes (PyTorch's 25 MiB).
    std::int64_t bucket_bytes = std::int64_t{25} << 20;
    /// Whether parameters are broadcast from rank 0 when the wrapper is made.
    bool broadcast_parameters = true;
};


/// A module wrapped for data parallelism over `comm`'s ranks: call it as the module;
/// backward() through its output averages the gradients over the ranks. Every
/// parameter that requires grad must take part in each backward (PyTorch's
/// find_unused_parameters is not offered): a forward after a backward that left one
/// out throws dist_error naming it.
template <class M, dist::Communicator C>
class distributed_data_parallel {
    using param_t = typename decltype(optim::parameters_of(std::declval<const M&>()))::value_type;
    using T = typename param_t::value_type;

public:
    distributed_data_parallel(M net, C comm, ddp_options opt = {}) : module_(std::move(net)) {
        auto state = std::make_shared<detail::reducer<T, C>>(std::move(comm));
        for (const auto& p : optim::parameters_of(module_))
            if (p.requires_grad()) state->params.push_back(p);
        if (opt.broadcast_parameters) {
            const no_grad off;
            for (const auto& p : state->params) state->comm.broadcast(p, 0);
        }
        // Buckets from the last parameter back: backward makes the last layers' gradients first.
        std::int64_t bytes = 0;
        state->bucket_of.resize(state->params.size());
        for (std::size_t k = state->params.size(); k-- > 0;) {
            const auto size = static_cast<std::int64_t>(sizeof(T)) * state->params[k].numel();
            if (state->buckets.empty() || (bytes + size > opt.bucket_bytes && !state->buckets.back().members.empty())) {
                state->buckets.emplace_back();
                bytes = 0;
            }
            state->buckets.back().members.push_back(k);
            state->bucket_of[k] = state->buckets.size() - 1;
            bytes += size;
        }
        state->reset();
        const std::weak_ptr<detail::reducer<T, C>> weak = state;
        for (std::size_t i = 0; i < state->params.size(); ++i)
            state->params[i].register_post_accumulate_grad_hook([weak, i](typename detail::reducer<T, C>::param_t&) {
                if (const auto s = weak.lock()) {
                    const no_grad off;
                    s->ready(i);
                }
            });
        reducer_ = std::move(state);
    }

    template <class X>
    [[nodiscard]] auto forward(const X& x, call_site site = call_site::current()) const {
        check_reduced();
        return module_(x, site);
    }
    template <class X>
    [[nodiscard]] auto operator()(const X& x, call_site site = call_site::current()) const {
        check_reduced();
        return module_(x, site);
    }

    auto parameters() const { return module_.parameters(); }
    const M& module() const noexcept { return module_; }
    const C& communicator() const noexcept { return reducer_->comm; }

private:
    void check_reduced() const {
        const std::string missing = reducer_->missing();
        if (missing.empty()) return;
        for (auto& w : reducer_->in_flight) (void)w.wait();  // every rank launched these: let them land
        reducer_->reset();
        throw dist::dist_error("devtensor::nn::distributed_data_parallel (rank " + std::to_string(reducer_->comm.rank()) +
                               "): the last backward gave no gradient to parameter(s) " + missing +
                               " (in parameters() order among those requiring grad); every parameter must take part "
                               "in the loss, or the ranks cannot average the gradients");
    }

    M module_;
    std::shared_ptr<detail::reducer<T, C>> reducer_;
};

}  // namespace devtensor::nn
