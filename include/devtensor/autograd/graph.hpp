// Autograd (DESIGN §12): a tape on the tensors, as PyTorch keeps it. An op whose
// input wants a gradient gives its result a node that knows the op's backward and
// the nodes of its inputs; backward() walks that graph once, latest op first.
// A tensor no gradient flows through carries no record, and an op on such
// tensors pays one pointer test per input (recording()).
//
// Why a tape rather than per-module backward (dlib's way): users write free-tensor
// code (losses, custom layers) and expect PyTorch's rules for it; one mechanism
// serves both that and nn::sequential, and the backward of an op lives in the op's
// own header next to its forward.
//
// Included by ops/elementwise.hpp before the engine. What runs kernels (the nodes,
// the engine) is in the translation unit's namespace (config.hpp): nvcc files and
// g++ files each get their own; it reaches the engine (map_checked, map_out) by
// argument-dependent lookup, when a node is instantiated.
#pragma once

#include <devtensor/autograd/hooks.hpp>
#include <devtensor/config.hpp>
#include <devtensor/detail/convert.hpp>  // constant, copy_element
#include <devtensor/detail/op_checks.hpp>  // declares tensor
#include <devtensor/detail/small_blocks.hpp>
#include <devtensor/device.hpp>
#include <devtensor/error.hpp>
#include <devtensor/origin.hpp>
#include <devtensor/shape.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <memory_resource>
#include <optional>
#include <queue>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace devtensor {

/// Misuse of autograd: backward() without a graph or twice through a freed one, an
/// in-place change of a tensor backward still needs, an optimizer with no gradients.
class autograd_error : public error {
public:
    using error::error;
};

namespace detail {
inline thread_local bool grad_mode = true;  // per thread, as torch.no_grad
}  // namespace detail

/// While one lives, ops record nothing (torch.no_grad()): for evaluation and for
/// updates of parameters.
class no_grad {
public:
    no_grad() noexcept : previous_(std::exchange(detail::grad_mode, false)) {}
    ~no_grad() { detail::grad_mode = previous_; }
    no_grad(const no_grad&) = delete;
    no_grad& operator=(const no_grad&) = delete;

private:
    bool previous_;
};

/// Whether ops record for autograd on this thread (false under no_grad).
inline bool is_grad_enabled() noexcept { return detail::grad_mode; }

namespace detail {

/// Gradients flow as run-time-device tensors: one graph may hold several devices' ops.
template <class T>
using grad_t = tensor<T, device>;

template <class T>
struct node;

/// A node's edges, one an input: in the node itself up to four inputs (every op but
/// cat), on the heap past that. Recording an op allocates no list.
template <class T>
class edge_list {
public:
    using edge = std::shared_ptr<node<T>>;

    edge_list() = default;
    edge_list(std::initializer_list<edge> edges) {
        for (const edge& e : edges) push_back(e);
    }

    void push_back(edge e) {
        if (size_ < few_.size()) {
            few_[size_++] = std::move(e);
            return;
        }
        if (size_ == few_.size()) many_.assign(std::make_move_iterator(few_.begin()), std::make_move_iterator(few_.end()));
        many_.push_back(std::move(e));
        ++size_;
    }
    std::size_t size() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }
    const edge& operator[](std::size_t i) const noexcept { return begin()[i]; }
    const edge* begin() const noexcept { return size_ <= few_.size() ? few_.data() : many_.data(); }
    const edge* end() const noexcept { return begin() + size_; }

private:
    std::array<edge, 4> few_;
    std::vector<edge> many_;  ///< all of them, once there are more than four
    std::size_t size_ = 0;
};

/// One recorded op's backward. `next[i]` is the node that receives the gradient of
/// input i (null when that input wants none).
template <class T>
struct node {
    virtual ~node() = default;
    /// Sets grads[i] to the gradient of input i (left undefined where next[i] is null),
    /// given the gradient of the result. grads has next.size() entries, all undefined:
    /// the engine's, reused from node to node (no allocation a node).
    virtual void backward(const grad_t<T>& grad, std::span<grad_t<T>> grads) = 0;
    /// Drops what backward needed (saved tensors), once backward has run.
    virtual void release() {}

    const char* op = "";
    std::uint64_t sequence = next_sequence();  ///< creation order: later ops run first
    edge_list<T> next;
    bool released = false;

    static std::uint64_t next_sequence() {
        static std::atomic<std::uint64_t> counter{0};
        return counter.fetch_add(1, std::memory_order_relaxed);
    }
};

/// A new node (or record) of type N, in a block of this thread's small-block cache.
/// make_shared<N>() would value-initialise it: zero the whole object (hundreds of bytes)
/// before its constructor runs. Every member of a node has an initialiser or a
/// constructor of its own.
template <class N>
std::shared_ptr<N> make_node() {
    return std::allocate_shared_for_overwrite<N>(small_block_allocator<N>{});
}

/// What a tensor records for autograd; shared by the copies of its handle.
template <class T>
struct autograd_meta {
    bool requires_grad = false;           ///< a leaf whose grad() is kept
    grad_t<T> grad;                       ///< undefined until a backward reaches it
    std::shared_ptr<node<T>> grad_fn;     ///< the op that made it (non-leaf)
    std::weak_ptr<node<T>> accumulator;   ///< a leaf's: adds into grad
    std::vector<std::function<void(grad_t<T>&)>> hooks;  ///< run once grad is updated
};

/// The tensor's private parts autograd reads and writes.
struct autograd_access {
    template <class T, class D>
    static const std::shared_ptr<autograd_meta<T>>& meta(const tensor<T, D>& t) noexcept {
        return t.autograd_;
    }
    template <class T, class D>
    static std::shared_ptr<autograd_meta<T>>& meta(tensor<T, D>& t) noexcept {
        return t.autograd_;
    }
    template <class T, class D>
    static std::uint64_t& version(const tensor<T, D>& t) noexcept {
        return t.storage_->version;
    }
    /// Whether t is the only handle on its memory: no other tensor can read or write it.
    template <class T, class D>
    static bool sole_owner(const tensor<T, D>& t) noexcept {
        return t.storage_.use_count() == 1;
    }
};

/// Whether a gradient flows through t.
template <class T, class D>
bool wants_grad(const tensor<T, D>& t) noexcept {
    if constexpr (!std::is_floating_point_v<T>) {
        return false;
    } else {
        const auto& m = autograd_access::meta(t);
        return m && (m->requires_grad || m->grad_fn);
    }
}

/// Whether an op on these inputs records: grad mode on and one input wants a gradient.
template <class... T, class... D>
bool recording(const tensor<T, D>&... in) noexcept {
    return grad_mode && (wants_grad(in) || ...);
}

/// For the ops that have no backward yet: an error rather than a silently missing gradient.
template <class... T, class... D>
void refuse_gradient(const char* op, const tensor<T, D>&... in) {
    if (recording(in...))
        throw autograd_error(std::string("devtensor::") + op +
                             ": has no gradient in devtensor; compute it under no_grad or on detach()ed inputs");
}

/// An in-place write to t's storage: bumps the version every view shares. A write into
/// a leaf that wants a gradient, or into a tensor in a graph, is refused while
/// recording (autograd does not record in-place ops; PyTorch refuses the first too).
template <class T, class D>
void note_write(const char* op, const tensor<T, D>& t) {
    if (!t.defined()) return;
    if (grad_mode && wants_grad(t))
        throw autograd_error(std::string("devtensor::") + op +
                             ": an in-place change of a tensor that requires grad (or was computed from "
                             "one) while autograd records; do it under devtensor::no_grad, or use the "
                             "out-of-place op");
    ++autograd_access::version(t);
}

/// backward() through a node whose saved tensors the first backward() freed.
inline autograd_error freed_graph(const char* op) {
    return autograd_error(std::string("devtensor::backward: trying to backward through the graph a second time "
                                      "(through ") + op +
                          "); its saved tensors were freed by the first backward(); pass retain_graph = true "
                          "to the first call if you need two");
}

/// A tensor backward needs, with the version it had when the op ran.
template <class T>
class saved_tensor {
public:
    saved_tensor() = default;
    template <class D>
    explicit saved_tensor(const tensor<T, D>& t)
        : value_(std::in_place, t.detach()), version_(autograd_access::version(t)) {}

    /// The tensor; autograd_error when an in-place op changed it since.
    const grad_t<T>& get(const char* op) const {
        if (!value_ || !value_->defined())
            throw freed_graph(op);
        if (autograd_access::version(*value_) != version_)
            throw autograd_error(std::string("devtensor::backward: a tensor that ") + op +
                                 " saved for backward was modified by an in-place operation (version " +
                                 std::to_string(version_) + ", now " +
                                 std::to_string(autograd_access::version(*value_)) +
                                 "); clone() it before changing it");
        return *value_;
    }
    void release() noexcept { value_.reset(); }

private:
    std::optional<grad_t<T>> value_;  ///< empty once released: no empty tensor built to take its place
    std::uint64_t version_ = 0;
};

/// out (freshly made) takes `n` as the op that made it.
template <class T, class D>
void set_history(tensor<T, D>& out, std::shared_ptr<node<T>> n) {
    auto m = make_node<autograd_meta<T>>();
    m->grad_fn = std::move(n);
    autograd_access::meta(out) = std::move(m);
}

/// a + b for gradients (floating point only).
struct grad_sum {
    template <class T>
    DEVTENSOR_HOST_DEVICE T operator()(T a, T b) const {
        return a + b;
    }
};

DEVTENSOR_BEGIN_TU_NAMESPACE

/// A leaf's node: adds the gradient into grad(), then runs the leaf's hooks.
template <class T>
struct accumulate_grad final : node<T> {
    std::weak_ptr<autograd_meta<T>> leaf;
    void backward(const grad_t<T>& g, std::span<grad_t<T>>) override {
        const auto m = leaf.lock();
        if (!m) return;  // the leaf is gone: nobody can read its gradient
        if (!m->grad.defined()) {
            // Its own memory, never the caller's: a fresh gradient that nothing else holds (the
            // usual case) is taken as it is, any other is copied.
            m->grad = autograd_access::sole_owner(g) && g.is_contiguous() ? g : copy_as<T>(g, {"backward", call_site{}});
        } else {
            if (!(m->grad.shape() == g.shape()))
                throw autograd_error("devtensor::backward: the gradient " + g.shape().to_string() +
                                     " does not match the accumulated grad " + m->grad.shape().to_string());
            map_out("backward", grad_sum{}, m->grad, m->grad, g);
        }
        for (auto& hook : m->hooks) hook(m->grad);
    }
};

/// The node that receives t's gradient: its op's, or its leaf accumulator (made once
/// and shared while the graph lives); null when t wants none.
template <class T, class D>
std::shared_ptr<node<T>> edge_of(const tensor<T, D>& t) {
    if (!wants_grad(t)) return nullptr;
    const auto& m = autograd_access::meta(t);
    if (m->grad_fn) return m->grad_fn;
    if (auto existing = m->accumulator.lock()) return existing;
    auto made = make_node<accumulate_grad<T>>();
    made->op = "accumulate_grad";
    made->leaf = m;
    m->accumulator = made;
    return made;
}

/// n (its op and inputs' edges set) recorded as what made `out`.
template <class T, class D, class N, class... TI, class... DI>
void record(tensor<T, D>& out, std::shared_ptr<N> n, const char* op, const tensor<TI, DI>&... in) {
    n->op = op;
    n->next = {edge_of(in)...};
    set_history(out, std::shared_ptr<node<T>>(std::move(n)));
}

/// A new tensor of `s` on `dev` holding `value`, for backward.
template <class T>
grad_t<T> filled_grad(const shape& s, const device& dev, T value) {
    grad_t<T> t(s, dev, {"backward", call_site{}});
    if (t.numel() > 0) map_checked("backward", constant<T>{value}, t);
    return t;
}

/// A view's backward: the same view of a zero tensor of the input's shape takes the
/// gradient (so every view op, select and narrow included, shares one node).
template <class T>
struct view_node final : node<T> {
    shape input_shape;
    device input_device;
    std::function<grad_t<T>(const grad_t<T>&)> redo;
    void backward(const grad_t<T>& g, std::span<grad_t<T>> grads) override {
        grads[0] = filled_grad(input_shape, input_device, T{0});
        const grad_t<T> part = redo(grads[0]);
        map_out("backward", copy_element{}, part, g);
    }
};

/// expand's backward: the gradient summed over the dimensions it repeated.
template <class T>
struct sum_back_node final : node<T> {
    shape input_shape;
    void backward(const grad_t<T>& g, std::span<grad_t<T>> grads) override { grads[0] = sum_to_size(g, input_shape); }
};

template <class T, class D, class Redo>
void record_view(const tensor<T, D>& in, tensor<T, D>& out, const char* op, Redo redo) {
    if constexpr (!std::is_floating_point_v<T>) {
        return;  // nothing records for integers (the caller's recording() is false)
    } else if constexpr (std::is_same_v<Redo, sums_back>) {
        auto n = make_node<sum_back_node<T>>();
        n->input_shape = in.shape();
        record(out, std::move(n), op, in);
    } else {
        auto n = make_node<view_node<T>>();
        n->input_shape = in.shape();
        n->input_device = device(in.device());
        n->redo = std::move(redo);
        record(out, std::move(n), op, in);
    }
}

/// A copy to another device: the gradient goes back to the input's device.
template <class T>
struct transfer_node final : node<T> {
    device input_device;
    void backward(const grad_t<T>& g, std::span<grad_t<T>> grads) override {
        grads[0] = g.to(input_device, call_site{});
    }
};

template <class T, class D, class E>
void record_transfer(const tensor<T, D>& in, tensor<T, E>& out, const char* op) {
    if constexpr (std::is_floating_point_v<T>) {  // nothing records for integers
        auto n = make_node<transfer_node<T>>();
        n->input_device = device(in.device());
        record(out, std::move(n), op, in);
    }
}

/// The nodes one backward reaches, each with its consumers not yet run, the gradient
/// summed for it so far and where its edges' entries are listed. A flat list, searched
/// linearly while the graph is small (a training step's handful of nodes), through a
/// hash index past that. Its memory comes from `arena`: for a training step's graph
/// the bookkeeping takes nothing from the heap (the gradients themselves do).
template <class T>
class backward_table {
public:
    struct entry {
        node<T>* n;
        int waiting = 0;
        std::size_t first_edge = 0;  ///< edges[first_edge + i]: the entry of n->next[i]
        std::optional<grad_t<T>> pending;  ///< the gradient summed so far; none yet
    };
    static constexpr std::size_t no_entry = static_cast<std::size_t>(-1);

    explicit backward_table(std::pmr::memory_resource* arena) : entries(arena), edges(arena), index_(arena) {}

    /// n's entry, and whether it was added now.
    std::pair<std::size_t, bool> find_or_add(node<T>* n) {
        if (index_.empty()) {
            for (std::size_t i = 0; i < entries.size(); ++i)
                if (entries[i].n == n) return {i, false};
            entries.push_back(entry{n, 0, 0, std::nullopt});
            if (entries.size() > linear_limit)
                for (std::size_t i = 0; i < entries.size(); ++i) index_.emplace(entries[i].n, i);
            return {entries.size() - 1, true};
        }
        const auto [it, fresh] = index_.try_emplace(n, entries.size());
        if (fresh) entries.push_back(entry{n, 0, 0, std::nullopt});
        return {it->second, fresh};
    }

    std::pmr::vector<entry> entries;
    std::pmr::vector<std::size_t> edges;

private:
    static constexpr std::size_t linear_limit = 32;
    std::pmr::unordered_map<node<T>*, std::size_t> index_;
};

/// Runs backward from `root` with gradient `g`: every node once, after all its
/// consumers (latest-recorded first, a fixed order), gradients of an input summed in
/// that order; leaves accumulate into grad(). Frees saved tensors unless `retain`.
template <class T>
void run_backward(const std::shared_ptr<node<T>>& root, grad_t<T> g, bool retain) {
    const no_grad off;
    // The engine's bookkeeping on the stack while it fits (a few dozen nodes), the heap past that.
    std::array<std::byte, 16384> stack_memory;
    std::pmr::monotonic_buffer_resource arena(stack_memory.data(), stack_memory.size());
    backward_table<T> table(&arena);
    table.entries.reserve(16);
    table.find_or_add(root.get());
    std::pmr::vector<std::size_t> stack(&arena);
    stack.push_back(0);
    while (!stack.empty()) {  // every node reached, its consumers counted, its edges listed
        const std::size_t at = stack.back();
        stack.pop_back();
        table.entries[at].first_edge = table.edges.size();
        for (const auto& next : table.entries[at].n->next) {
            if (!next) {
                table.edges.push_back(backward_table<T>::no_entry);
                continue;
            }
            const auto [i, fresh] = table.find_or_add(next.get());
            table.edges.push_back(i);
            ++table.entries[i].waiting;
            if (fresh) stack.push_back(i);
        }
    }
    auto& entries = table.entries;
    const auto later_first = [&](std::size_t a, std::size_t b) { return entries[a].n->sequence < entries[b].n->sequence; };
    std::priority_queue<std::size_t, std::pmr::vector<std::size_t>, decltype(later_first)> ready(
        later_first, std::pmr::vector<std::size_t>(&arena));
    // A node's input gradients, reused node to node: each one is moved out, or reset, before the next node.
    std::pmr::vector<grad_t<T>> grads(&arena);
    entries[0].pending.emplace(std::move(g));
    ready.push(0);
    while (!ready.empty()) {
        const std::size_t at = ready.top();
        ready.pop();
        node<T>* n = entries[at].n;
        const std::optional<grad_t<T>> grad = std::move(entries[at].pending);
        if (n->released)
            throw freed_graph(n->op);
        if (grads.size() < n->next.size()) grads.resize(n->next.size());
        const std::span<grad_t<T>> in_grads(grads.data(), n->next.size());
        if (grad && grad->defined()) n->backward(*grad, in_grads);
        if (!retain && !n->next.empty()) {
            n->release();
            n->released = true;
        }
        for (std::size_t i = 0; i < n->next.size(); ++i) {
            const std::size_t to = table.edges[entries[at].first_edge + i];
            if (to == backward_table<T>::no_entry) {
                if (in_grads[i].defined()) in_grads[i] = grad_t<T>{};  // a gradient no one takes
                continue;
            }
            if (in_grads[i].defined()) {
                std::optional<grad_t<T>>& sum = entries[to].pending;
                if (!sum) sum.emplace(std::move(in_grads[i]));
                else {
                    grad_t<T> total(sum->shape(), sum->device(), {"backward", call_site{}});
                    map_checked("backward", grad_sum{}, total, *sum, in_grads[i]);
                    *sum = std::move(total);
                    in_grads[i] = grad_t<T>{};
                }
            }
            if (--entries[to].waiting == 0) ready.push(to);
        }
    }
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace detail
}  // namespace devtensor

// The tensor (whose autograd members use the above) and sum_to_size, which the
// backward of a broadcast runs (found by argument lookup when a node is
// instantiated): last, so that a translation unit may start with any of them.
#include <devtensor/tensor.hpp>
#include <devtensor/ops/sum.hpp>
