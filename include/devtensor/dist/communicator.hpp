// What every communicator shares (DESIGN §13): the reduction ops, the errors, the
// options, the handle of an asynchronous collective, and the concept data
// parallelism is written against. The backends are dist/mpi.hpp and dist/nccl.hpp.
#pragma once

#include <devtensor/error.hpp>
#include <devtensor/tensor.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>

namespace devtensor::dist {

/// How all_reduce and reduce_scatter combine the ranks' elements. avg is the sum
/// divided by the number of ranks (floating point only); bool's sum and max are
/// "or", its min "and".
enum class reduce_op { sum, avg, max, min };

inline const char* to_string(reduce_op op) noexcept {
    switch (op) {
    case reduce_op::sum: return "sum";
    case reduce_op::avg: return "avg";
    case reduce_op::max: return "max";
    case reduce_op::min: return "min";
    }
    return "?";
}

/// A collective failed: the ranks disagree (shapes, element types, roots, the call),
/// the transport reported an error, or the communicator broke earlier. The message
/// names the call and this rank.
class dist_error : public error {
public:
    using error::error;
};

/// The other ranks did not join a collective within the communicator's timeout: one
/// stalled, threw, or called something else. The communicator is broken afterwards.
class dist_timeout : public dist_error {
public:
    using dist_error::dist_error;
};

/// A communicator's behaviour.
struct options {
    /// How long a rank waits for the others to join a collective before dist_timeout.
    std::chrono::milliseconds timeout = std::chrono::minutes(5);
    /// The reduction order fixed by rank (not by MPI's choice of algorithm): the same
    /// bits from run to run and for any placement of the ranks on hosts.
    bool deterministic = false;
    /// false: no handshake before each collective (MPI backend), for 1–2 µs less per
    /// call; then ranks that disagree meet MPI's undefined behaviour and a stalled rank
    /// hangs the others (no dist_timeout), as with MPI itself.
    bool checked = true;
};

/// An asynchronous collective's handle. It holds the tensor the collective was given
/// (by move: nothing else can touch it mid-flight) and gives it back from wait().
/// Destroying a handle that was not waited for waits for the collective (it may be
/// writing into memory the handle keeps alive) and drops its error.
template <class Tensor>
class work {
public:
    /// `done` blocks until the collective has ended, throwing its error or dist_timeout;
    /// `ready` says without blocking whether it has; `finish` gives the tensor back.
    work(std::function<void()> done, std::function<bool()> ready, std::function<Tensor()> finish)
        : done_(std::move(done)), ready_(std::move(ready)), finish_(std::move(finish)) {}
    work() = default;
    work(work&&) noexcept = default;
    work& operator=(work&& other) noexcept {
        if (this != &other) {
            drain();
            done_ = std::move(other.done_), ready_ = std::move(other.ready_), finish_ = std::move(other.finish_);
        }
        return *this;
    }
    ~work() { drain(); }

    /// Whether the collective has finished (wait() will not block).
    [[nodiscard]] bool completed() const { return finish_ && ready_(); }

    /// Blocks until the collective is done and returns its tensor; rethrows its
    /// dist_error, or throws dist_timeout when the communicator's timeout passes first.
    [[nodiscard]] Tensor wait() {
        if (!finish_) throw dist_error("devtensor::dist::work::wait: no collective (waited already, or moved from)");
        auto finish = std::exchange(finish_, {});
        std::exchange(done_, {})();
        return finish();
    }

private:
    void drain() noexcept {
        if (!done_) return;
        try {
            std::exchange(done_, {})();
        } catch (...) {  // nobody asked for the result: its error goes with it
        }
    }

    std::function<void()> done_;
    std::function<bool()> ready_;
    std::function<Tensor()> finish_;
};

/// What nn::distributed_data_parallel needs of a communicator.
template <class C>
concept Communicator = requires(const C& c, tensor<float, device>& t, tensor<float, device>&& moved) {
    { c.rank() } -> std::convertible_to<int>;
    { c.size() } -> std::convertible_to<int>;
    c.all_reduce(t, reduce_op::avg);
    c.broadcast(t, 0);
    c.all_reduce_async(std::move(moved), reduce_op::avg).wait();
};

namespace detail {
/// The argument checks every backend makes; `where` names the call and the rank.
template <class T>
void check_op(const std::string& where, reduce_op op) {
    if (op == reduce_op::avg && !std::is_floating_point_v<T>)
        throw dist_error(where + "avg needs floating-point elements (got " + devtensor::detail::dtype_of<T> +
                         "); use sum and divide");
}
inline void check_root(const std::string& where, int root, int size) {
    if (root < 0 || root >= size)
        throw dist_error(where + "root " + std::to_string(root) + " is not a rank (0 ... " + std::to_string(size - 1) + ")");
}
}  // namespace detail

}  // namespace devtensor::dist
