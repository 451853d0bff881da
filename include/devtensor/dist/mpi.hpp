// The MPI backend (DESIGN §13; CMake target devtensor::mpi): processes come from
// mpirun or srun, dist::init starts MPI, dist::world() is every rank.
//
// Each collective starts with a handshake, a small non-blocking all-reduce of what
// this rank is about to do (the call, the element type, the count, the root or op)
// polled against the timeout: a rank that stalled, threw or called something else
// gives the others dist_timeout or dist_error instead of a hang, and mismatched
// shapes are an error on every rank instead of MPI's undefined behaviour. The data
// then moves with MPI's own blocking collectives (its fastest algorithms). The
// asynchronous forms run on one communication thread per communicator; below
// MPI_THREAD_MULTIPLE one process-wide lock lets one thread at a time into MPI
// (MPI_THREAD_SERIALIZED, what dist::init asks for).
//
// A GPU tensor goes to MPI as it is when the MPI says it is CUDA-aware
// (MPIX_Query_cuda_support); otherwise it is staged through page-locked host buffers,
// which the communicator keeps for its next collectives.
#pragma once

#include <devtensor/autograd/graph.hpp>
#include <devtensor/dist/communicator.hpp>
#include <devtensor/dist/reduce_order.hpp>
#include <devtensor/ops/copy.hpp>
#include <devtensor/stream.hpp>  // synchronize

#ifndef OMPI_SKIP_MPICXX
#  define OMPI_SKIP_MPICXX 1  // MPI's C API only: the deprecated C++ bindings are not wanted
#endif
#ifndef MPICH_SKIP_MPICXX
#  define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#  include <mpi-ext.h>  // MPIX_CUDA_AWARE_SUPPORT, MPIX_Query_cuda_support
#endif

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace devtensor::dist {

namespace detail {

template <class T>
MPI_Datatype mpi_type() noexcept {
    if constexpr (std::is_same_v<T, bool>) return MPI_C_BOOL;
    else if constexpr (std::is_same_v<T, float>) return MPI_FLOAT;
    else if constexpr (std::is_same_v<T, double>) return MPI_DOUBLE;
    else if constexpr (std::is_signed_v<T>)
        return sizeof(T) == 1 ? MPI_INT8_T : sizeof(T) == 2 ? MPI_INT16_T : sizeof(T) == 4 ? MPI_INT32_T : MPI_INT64_T;
    else
        return sizeof(T) == 1 ? MPI_UINT8_T : sizeof(T) == 2 ? MPI_UINT16_T : sizeof(T) == 4 ? MPI_UINT32_T : MPI_UINT64_T;
}

template <class T>
MPI_Op mpi_op(reduce_op op) noexcept {
    if constexpr (std::is_same_v<T, bool>) return op == reduce_op::min ? MPI_LAND : MPI_LOR;
    else return op == reduce_op::max ? MPI_MAX : op == reduce_op::min ? MPI_MIN : MPI_SUM;
}

/// An element type as a number the handshake compares: its size, and whether it is
/// floating point, signed, or bool.
template <class T>
constexpr std::int64_t type_code() noexcept {
    return static_cast<std::int64_t>(sizeof(T)) * 4 + (std::is_floating_point_v<T> ? 1 : std::is_same_v<T, bool> ? 3 : std::is_signed_v<T> ? 2 : 0);
}

/// The largest count one MPI call moves (MPI counts are int); larger tensors go in pieces.
inline constexpr std::int64_t max_piece = std::int64_t{1} << 28;

/// Whether this MPI reads and writes GPU memory itself: built so (Open MPI's
/// MPIX_CUDA_AWARE_SUPPORT) and running so (MPIX_Query_cuda_support).
inline bool mpi_cuda_aware() noexcept {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    return MPIX_Query_cuda_support() == 1;
#else
    return false;
#endif
}

/// Page-locked host buffers kept for the next collectives (cudaHostAlloc costs more
/// than the copy it serves). take() hands out a buffer that goes back to the list
/// when its handle is dropped, on whichever thread that is.
class pinned_buffers : public std::enable_shared_from_this<pinned_buffers> {
public:
    std::shared_ptr<void> take(std::size_t bytes) {
        block b;
        {
            const std::lock_guard lock(mutex_);
            const auto fits = std::ranges::find_if(spare_, [&](const block& s) { return s.bytes >= bytes; });
            if (fits != spare_.end()) b = std::move(*fits), spare_.erase(fits);
        }
        if (!b.memory) b = {devtensor::detail::allocate_pinned(bytes, {"dist staging", call_site::current()}), bytes};
        void* memory = b.memory.get();
        return std::shared_ptr<void>(memory, [owner = shared_from_this(), b = std::move(b)](void*) mutable {
            const std::lock_guard lock(owner->mutex_);
            owner->spare_.push_back(std::move(b));
        });
    }

private:
    struct block {
        std::shared_ptr<void> memory;
        std::size_t bytes = 0;
    };
    std::mutex mutex_;
    std::vector<block> spare_;
};

/// The lock that keeps every thread of the process (each communicator's caller and
/// communication thread) out of MPI while another is in it, below MPI_THREAD_MULTIPLE.
inline std::mutex& serial_mpi() {
    static std::mutex lock;
    return lock;
}

/// What one communicator's handles share: its MPI communicator (a duplicate, so its
/// traffic never meets the program's own), and the thread that runs its
/// asynchronous collectives in the order they were posted.
class mpi_state {
public:
    mpi_state(MPI_Comm parent, options opt) : opt_(opt), cuda_aware_(mpi_cuda_aware()) {
        MPI_Query_thread(&thread_level_);
        const auto serial = exclusive();
        check(MPI_Comm_dup(parent, &comm_), "MPI_Comm_dup");
        MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
        MPI_Comm_rank(comm_, &rank_);
        MPI_Comm_size(comm_, &size_);
    }
    mpi_state(const mpi_state&) = delete;
    mpi_state& operator=(const mpi_state&) = delete;
    ~mpi_state() {
        {
            const std::lock_guard lock(queue_mutex_);
            stopping_ = true;
        }
        queued_.notify_all();
        if (worker_.joinable()) worker_.join();
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized && broken_.empty()) {  // a broken one may have a request pending
            const auto serial = exclusive();
            MPI_Comm_free(&comm_);
        }
    }

    int rank() const noexcept { return rank_; }
    int size() const noexcept { return size_; }
    const options& opts() const noexcept { return opt_; }
    MPI_Comm comm() const noexcept { return comm_; }
    bool cuda_aware() const noexcept { return cuda_aware_; }

    /// A page-locked host buffer of at least `bytes`, for staging a GPU tensor.
    std::shared_ptr<void> staging(std::size_t bytes) { return spare_->take(bytes); }

    /// Runs f (which calls MPI) on this thread once every queued collective is done.
    template <class F>
    void run(const char* call, F&& f) {
        std::unique_lock lock(queue_mutex_);
        if (!idle_.wait_for(lock, 2 * opt_.timeout, [&] { return pending_ == 0; }))
            throw dist_timeout(where(call) + "the collectives posted before it did not finish within " +
                               std::to_string(2 * opt_.timeout.count()) + " ms");
        const auto serial = exclusive();
        f();  // under the lock: nothing is posted meanwhile
    }

    /// Queues f for the communication thread; the future reports its end or its error.
    std::future<void> post(std::function<void()> f) {
        if (thread_level_ < MPI_THREAD_SERIALIZED)
            throw dist_error(std::string("devtensor::dist: the asynchronous collectives call MPI from a communication "
                                         "thread, which needs MPI_THREAD_SERIALIZED; MPI was started with a lower level "
                                         "(start it with dist::init, or MPI_Init_thread(..., MPI_THREAD_SERIALIZED, ...))"));
        auto task = std::make_shared<std::packaged_task<void()>>(std::move(f));
        auto done = task->get_future();
        {
            const std::lock_guard lock(queue_mutex_);
            if (!worker_.joinable()) worker_ = std::thread([this] { serve(); });
            tasks_.push_back([task] { (*task)(); });
            ++pending_;
        }
        queued_.notify_one();
        return done;
    }

    /// "devtensor::dist::<call> (rank r of n): ".
    std::string where(const char* call) const {
        return std::string("devtensor::dist::") + call + " (rank " + std::to_string(rank_) + " of " +
               std::to_string(size_) + "): ";
    }

    /// An MPI return code as dist_error naming the MPI function.
    void check(int rc, const char* mpi_call) const {
        if (rc == MPI_SUCCESS) return;
        char text[MPI_MAX_ERROR_STRING];
        int length = 0;
        MPI_Error_string(rc, text, &length);
        throw dist_error(std::string("devtensor::dist (rank ") + std::to_string(rank_) + "): " + mpi_call +
                         " failed: " + std::string(text, static_cast<std::size_t>(length)));
    }

    /// The handshake (see the file's comment): returns once every rank has called the same
    /// collective with the same element type, count and argument; throws otherwise.
    void agree(const char* call, std::int64_t type, std::int64_t count, std::int64_t argument) {
        if (!broken_.empty()) throw dist_error(where(call) + "the communicator is broken: " + broken_);
        if (!opt_.checked) return;
        std::int64_t call_code = 0;  // the call's name as a number (a byte-wise polynomial)
        for (const char* c = call; *c != '\0'; ++c) call_code = (call_code * 131 + *c) % 1000000007;
        auto held = std::make_unique<std::array<std::int64_t, 8>>(
            std::array<std::int64_t, 8>{call_code, type, count, argument, -call_code, -type, -count, -argument});
        auto& v = *held;
        MPI_Request request{};
        check(MPI_Iallreduce(MPI_IN_PLACE, v.data(), 8, MPI_INT64_T, MPI_MAX, comm_, &request), "MPI_Iallreduce");
        if (!finished(request)) {
            (void)held.release();  // the pending request may still write it: left to MPI
            broken_ = std::string(call) + " timed out";
            throw dist_timeout(where(call) + "the other ranks did not join within " + std::to_string(opt_.timeout.count()) +
                               " ms: one has stalled, thrown, or called another collective");
        }
        static constexpr const char* what[] = {"called different collectives", "have different element types",
                                               "have different element counts", "have different roots or ops"};
        for (std::size_t i = 0; i < 4; ++i) {
            if (v[i] == -v[i + 4]) continue;
            std::string message = where(call) + "the ranks " + what[i];
            if (i == 2)
                message += ": this rank has " + std::to_string(count) + ", the others between " +
                           std::to_string(-v[i + 4]) + " and " + std::to_string(v[i]);
            throw dist_error(message);
        }
    }

private:
    /// Polls `request` until it completes (true) or the timeout passes (false): spins
    /// briefly, then sleeps a little between polls so waiting ranks leave the cores to
    /// the ranks still computing.
    bool finished(MPI_Request& request) const {
        const auto deadline = std::chrono::steady_clock::now() + opt_.timeout;
        for (int polls = 0;; ++polls) {
            int done = 0;
            check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
            if (done) return true;
            if (polls > 2000) {
                if (std::chrono::steady_clock::now() > deadline) return false;
                std::this_thread::sleep_for(std::chrono::microseconds(polls > 20000 ? 500 : 20));
            }
        }
    }

    /// serial_mpi() held, unless MPI allows every thread in at once.
    std::unique_lock<std::mutex> exclusive() const {
        return thread_level_ < MPI_THREAD_MULTIPLE ? std::unique_lock(serial_mpi()) : std::unique_lock<std::mutex>();
    }

    void serve() {
        for (;;) {
            std::function<void()> task;
            {
                std::unique_lock lock(queue_mutex_);
                queued_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
                if (tasks_.empty()) return;
                task = std::move(tasks_.front());
                tasks_.pop_front();
            }
            {
                const auto serial = exclusive();
                task();  // a packaged_task: its exception goes to its future
            }
            {
                const std::lock_guard lock(queue_mutex_);
                --pending_;
            }
            idle_.notify_all();
        }
    }

    MPI_Comm comm_ = MPI_COMM_NULL;
    int rank_ = 0, size_ = 1;
    options opt_;
    bool cuda_aware_ = false;
    int thread_level_ = MPI_THREAD_SINGLE;  ///< MPI_Query_thread's
    std::string broken_;  ///< why, once a timeout has left a request pending

    std::shared_ptr<pinned_buffers> spare_ = std::make_shared<pinned_buffers>();

    std::mutex queue_mutex_;
    std::condition_variable queued_, idle_;
    std::deque<std::function<void()>> tasks_;
    int pending_ = 0;
    bool stopping_ = false;
    std::thread worker_;
};

/// A tensor's elements as contiguous memory that MPI reads and writes: the tensor's
/// own storage when it is contiguous on the CPU (or on a GPU, for a CUDA-aware MPI);
/// else a copy made here and written back by finish(): on the host for a CPU tensor,
/// in one of the communicator's page-locked buffers for a GPU tensor. Both on the
/// calling thread: no tensor op runs on the communication thread.
template <class T, class D>
struct host_elements {
    tensor<T, D> target;
    tensor<T, D> dense;             ///< target, or its contiguous copy on its device
    tensor<T, cpu_device> host;     ///< a CPU target's contiguous copy
    std::shared_ptr<void> staging;  ///< a GPU target's page-locked copy
    T* elements = nullptr;

    /// `host_math`: the host computes on the elements too (avg's division, the
    /// deterministic fold), so a GPU tensor is staged even for a CUDA-aware MPI.
    host_elements(mpi_state& s, tensor<T, D> t, const char* call, bool read, bool host_math = false)
        : target(std::move(t)) {
        if (!target.defined())
            throw error(std::string("devtensor::dist::") + call + ": the tensor is undefined (default-constructed or moved from)");
        const no_grad off;
        if (target.is_cpu()) {
            host = target.contiguous().to(cpu_device{});
            elements = host.data();
            return;
        }
        dense = target.contiguous();
        if (s.cuda_aware() && !host_math) {  // MPI reads the GPU's memory once the ops that write it are done
            synchronize(dense.device());
            elements = dense.data();
            return;
        }
        staging = s.staging(bytes());
        elements = static_cast<T*>(staging.get());
        if (read)
            devtensor::detail::copy_bytes(elements, device(), dense.data(), device(dense.device()), bytes(),
                                          {call, call_site::current(), true});
    }
    T* data() const noexcept { return elements; }
    std::int64_t count() const noexcept { return target.numel(); }
    std::size_t bytes() const noexcept { return sizeof(T) * static_cast<std::size_t>(count()); }

    /// The elements back into the tensor when they were copied; bumps its version.
    tensor<T, D> finish(const char* call) {
        const no_grad off;
        if (staging)
            devtensor::detail::copy_bytes(dense.data(), device(dense.device()), elements, device(), bytes(),
                                          {call, call_site::current(), true});
        if (target.is_cpu() && host.data() != target.data())
            devtensor::detail::map_out(call, devtensor::detail::copy_element{}, target, host);
        else if (!target.is_cpu() && !dense.is_same(target))
            devtensor::detail::map_out(call, devtensor::detail::copy_element{}, target, dense);
        else
            ++devtensor::detail::autograd_access::version(target);
        return std::move(target);
    }
};

}  // namespace detail

/// A group of MPI ranks (dist::world(), or one split from it) with the collectives of
/// DESIGN §13. Copies share the group. Every rank must call the same collectives in
/// the same order.
class communicator {
public:
    /// A communicator over `comm` (duplicated), e.g. MPI_COMM_WORLD or a split of it.
    explicit communicator(MPI_Comm comm, options opt = {})
        : state_(std::make_shared<detail::mpi_state>(comm, opt)) {}

    int rank() const noexcept { return state_->rank(); }
    int size() const noexcept { return state_->size(); }
    const options& opts() const noexcept { return state_->opts(); }
    /// The MPI communicator, for calls of the program's own.
    MPI_Comm native() const noexcept { return state_->comm(); }

    /// t's elements combined over every rank, in place on every rank.
    template <class T, class D>
    void all_reduce(const tensor<T, D>& t, reduce_op op = reduce_op::sum) const {
        check_op<T>("all_reduce", op);
        detail::host_elements<T, D> h(*state_, t, "all_reduce", true, host_math(op));
        state_->run("all_reduce", [&] { reduce_in_place(*state_, h.data(), h.count(), op); });
        h.finish("all_reduce");
    }

    /// t's elements on `root` copied into t on every rank.
    template <class T, class D>
    void broadcast(const tensor<T, D>& t, int root = 0) const {
        check_root("broadcast", root);
        detail::host_elements<T, D> h(*state_, t, "broadcast", rank() == root);
        state_->run("broadcast", [&] { broadcast_raw(*state_, h.data(), h.count(), root); });
        h.finish("broadcast");
    }

    /// Every rank's t, stacked: [size(), t's shape...] on t's device.
    template <class T, class D>
    [[nodiscard]] tensor<T, D> all_gather(const tensor<T, D>& t, call_site site = call_site::current()) const {
        auto buffers = gather_buffers(t, site);
        state_->run("all_gather", [&] { all_gather_raw(*state_, buffers.first.data(), buffers.first.count(), buffers.second.data()); });
        return buffers.second.finish("all_gather");
    }

    /// t of shape [size(), rest...] combined over the ranks, and this rank's row of
    /// the result: every rank r gets op over the ranks of their t[r].
    template <class T, class D>
    [[nodiscard]] tensor<T, D> reduce_scatter(const tensor<T, D>& t, reduce_op op = reduce_op::sum,
                                              call_site site = call_site::current()) const {
        check_op<T>("reduce_scatter", op);
        auto buffers = scatter_buffers(t, op, site);
        state_->run("reduce_scatter", [&] {
            reduce_scatter_raw(*state_, buffers.first.data(), buffers.second.count(), buffers.second.data(), op);
        });
        return buffers.second.finish("reduce_scatter");
    }

    /// Returns once every rank has called barrier (or throws dist_timeout).
    void barrier() const {
        state_->run("barrier", [&] { state_->agree("barrier", 0, 0, 0); });
    }

    /// all_reduce without waiting: the tensor comes back from wait().
    template <class T, class D>
    [[nodiscard]] work<tensor<T, D>> all_reduce_async(tensor<T, D>&& t, reduce_op op = reduce_op::sum) const {
        check_op<T>("all_reduce", op);
        auto h = std::make_shared<detail::host_elements<T, D>>(*state_, std::move(t), "all_reduce", true, host_math(op));
        // The task holds the buffers too: after a timeout MPI may still be writing them.
        auto done = state_->post([s = state_.get(), h, op] { reduce_in_place(*s, h->data(), h->count(), op); });
        return make_work<tensor<T, D>>(std::move(done), [h] { return h->finish("all_reduce"); }, "all_reduce");
    }

    /// broadcast without waiting: the tensor comes back from wait().
    template <class T, class D>
    [[nodiscard]] work<tensor<T, D>> broadcast_async(tensor<T, D>&& t, int root = 0) const {
        check_root("broadcast", root);
        auto h = std::make_shared<detail::host_elements<T, D>>(*state_, std::move(t), "broadcast", rank() == root);
        auto done = state_->post([s = state_.get(), h, root] { broadcast_raw(*s, h->data(), h->count(), root); });
        return make_work<tensor<T, D>>(std::move(done), [h] { return h->finish("broadcast"); }, "broadcast");
    }

    /// all_gather without waiting: the stacked tensor comes from wait().
    template <class T, class D>
    [[nodiscard]] work<tensor<T, D>> all_gather_async(tensor<T, D>&& t, call_site site = call_site::current()) const {
        auto buffers = std::make_shared<std::pair<detail::host_elements<T, D>, detail::host_elements<T, D>>>(gather_buffers(t, site));
        t = {};
        auto done = state_->post([s = state_.get(), buffers] {
            all_gather_raw(*s, buffers->first.data(), buffers->first.count(), buffers->second.data());
        });
        return make_work<tensor<T, D>>(std::move(done), [buffers] { return buffers->second.finish("all_gather"); }, "all_gather");
    }

private:
    /// A handle on a collective posted to the communication thread: its future is ready
    /// when the thread has run it. Twice the timeout: the collective times out on its own
    /// after one; the second covers the collectives queued before it.
    template <class Tensor, class Finish>
    work<Tensor> make_work(std::future<void> posted, Finish finish, const char* call) const {
        auto done = std::make_shared<std::future<void>>(std::move(posted));
        const auto limit = 2 * opts().timeout;
        auto wait = [done, limit, where = state_->where(call)] {
            if (done->wait_for(limit) != std::future_status::ready)
                throw dist_timeout(where + "did not finish within " + std::to_string(limit.count()) + " ms");
            done->get();
        };
        auto ready = [done] { return done->wait_for(std::chrono::seconds(0)) == std::future_status::ready; };
        return work<Tensor>(std::move(wait), std::move(ready), std::move(finish));
    }

    /// Whether the host computes on a reduction's elements (see host_elements).
    bool host_math(reduce_op op) const noexcept { return op == reduce_op::avg || opts().deterministic; }

    template <class T>
    void check_op(const char* call, reduce_op op) const { detail::check_op<T>(state_->where(call), op); }
    void check_root(const char* call, int root) const { detail::check_root(state_->where(call), root, size()); }

    template <class T, class D>
    std::pair<detail::host_elements<T, D>, detail::host_elements<T, D>> gather_buffers(const tensor<T, D>& t,
                                                                                      call_site site) const {
        detail::host_elements<T, D> in(*state_, t, "all_gather", true);
        std::vector<std::int64_t> dims{size()};
        for (std::size_t d = 0; d < t.shape().rank(); ++d) dims.push_back(t.shape()[d]);
        tensor<T, D> out(devtensor::shape(dims), t.device(), origin{"all_gather", site});
        return {std::move(in), detail::host_elements<T, D>(*state_, std::move(out), "all_gather", false)};
    }

    template <class T, class D>
    std::pair<detail::host_elements<T, D>, detail::host_elements<T, D>> scatter_buffers(const tensor<T, D>& t, reduce_op op,
                                                                                       call_site site) const {
        detail::host_elements<T, D> in(*state_, t, "reduce_scatter", true, host_math(op));
        if (t.shape().rank() == 0 || t.shape()[0] != size())
            throw shape_error(state_->where("reduce_scatter") + "the tensor must have shape [" + std::to_string(size()) +
                              ", ...] (one row per rank), not " + t.shape().to_string());
        std::vector<std::int64_t> dims;
        for (std::size_t d = 1; d < t.shape().rank(); ++d) dims.push_back(t.shape()[d]);
        tensor<T, D> out(devtensor::shape(dims), t.device(), origin{"reduce_scatter", site});
        return {std::move(in), detail::host_elements<T, D>(*state_, std::move(out), "reduce_scatter", false, host_math(op))};
    }

    // ---- on raw host memory: the handshake, then MPI (called by one thread at a time) ----

    template <class T>
    static void reduce_in_place(detail::mpi_state& s, T* data, std::int64_t n, reduce_op op) {
        s.agree("all_reduce", detail::type_code<T>(), n, static_cast<std::int64_t>(op));
        for (std::int64_t at = 0; at < n; at += detail::max_piece) {
            const auto count = std::min(detail::max_piece, n - at);
            if (s.opts().deterministic) reduce_ordered(s, data + at, count, op);
            else
                s.check(MPI_Allreduce(MPI_IN_PLACE, data + at, static_cast<int>(count), detail::mpi_type<T>(),
                                            detail::mpi_op<T>(op), s.comm()),
                              "MPI_Allreduce");
        }
        if constexpr (std::is_floating_point_v<T>)
            if (op == reduce_op::avg)
                for (std::int64_t i = 0; i < n; ++i) data[i] = data[i] / static_cast<T>(s.size());
    }

    /// The deterministic all_reduce: rank r receives every rank's r-th chunk
    /// (MPI_Alltoall), combines them in rank order, and the chunks are gathered back;
    /// as much data moves as in a ring all-reduce.
    template <class T>
    static void reduce_ordered(detail::mpi_state& s, T* data, std::int64_t n, reduce_op op) {
        const auto ranks = static_cast<std::int64_t>(s.size());
        const std::int64_t chunk = (n + ranks - 1) / ranks;
        if (chunk == 0) return;
        const auto total = static_cast<std::size_t>(chunk * ranks);
        const auto padded = std::make_unique_for_overwrite<T[]>(total), received = std::make_unique_for_overwrite<T[]>(total);
        const auto mine = std::make_unique_for_overwrite<T[]>(static_cast<std::size_t>(chunk));
        std::fill(std::copy(data, data + n, padded.get()), padded.get() + total, T{});  // the last chunk's padding
        const auto type = detail::mpi_type<T>();
        s.check(MPI_Alltoall(padded.get(), static_cast<int>(chunk), type, received.get(), static_cast<int>(chunk), type, s.comm()),
                      "MPI_Alltoall");
        combine_rows(received.get(), ranks, chunk, mine.get(), op);
        s.check(MPI_Allgather(mine.get(), static_cast<int>(chunk), type, padded.get(), static_cast<int>(chunk), type, s.comm()),
                      "MPI_Allgather");
        std::copy(padded.get(), padded.get() + n, data);
    }

    /// out[i] = rows[0][i] op rows[1][i] op ... in rank order (reduce_order.hpp).
    template <class T>
    static void combine_rows(const T* rows, std::int64_t ranks, std::int64_t width, T* out, reduce_op op) {
        for (std::int64_t i = 0; i < width; ++i) out[i] = detail::combine_in_rank_order(rows + i, width, ranks, op);
    }

    template <class T>
    static void broadcast_raw(detail::mpi_state& s, T* data, std::int64_t n, int root) {
        s.agree("broadcast", detail::type_code<T>(), n, root);
        for (std::int64_t at = 0; at < n; at += detail::max_piece)
            s.check(MPI_Bcast(data + at, static_cast<int>(std::min(detail::max_piece, n - at)), detail::mpi_type<T>(), root, s.comm()),
                          "MPI_Bcast");
    }

    template <class T>
    static void all_gather_raw(detail::mpi_state& s, const T* in, std::int64_t n, T* out) {
        s.agree("all_gather", detail::type_code<T>(), n, 0);
        if (n * s.size() > std::int64_t{INT32_MAX})
            throw dist_error(s.where("all_gather") + std::to_string(n) + " elements per rank are more than one MPI call moves; split the tensor");
        if (n == 0) return;
        const auto type = detail::mpi_type<T>();
        s.check(MPI_Allgather(in, static_cast<int>(n), type, out, static_cast<int>(n), type, s.comm()), "MPI_Allgather");
    }

    template <class T>
    static void reduce_scatter_raw(detail::mpi_state& s, const T* in, std::int64_t n, T* out, reduce_op op) {
        s.agree("reduce_scatter", detail::type_code<T>(), n, static_cast<std::int64_t>(op));
        if (n * s.size() > std::int64_t{INT32_MAX})
            throw dist_error(s.where("reduce_scatter") + std::to_string(n) + " elements per rank are more than one MPI call moves; split the tensor");
        if (n > 0) {
            const auto type = detail::mpi_type<T>();
            if (s.opts().deterministic) {
                const auto received = std::make_unique_for_overwrite<T[]>(static_cast<std::size_t>(n * s.size()));
                s.check(MPI_Alltoall(in, static_cast<int>(n), type, received.get(), static_cast<int>(n), type, s.comm()), "MPI_Alltoall");
                combine_rows(received.get(), s.size(), n, out, op);
            } else {
                s.check(MPI_Reduce_scatter_block(in, out, static_cast<int>(n), type, detail::mpi_op<T>(op), s.comm()),
                              "MPI_Reduce_scatter_block");
            }
        }
        if constexpr (std::is_floating_point_v<T>)
            if (op == reduce_op::avg)
                for (std::int64_t i = 0; i < n; ++i) out[i] = out[i] / static_cast<T>(s.size());
    }

    std::shared_ptr<detail::mpi_state> state_;
};

namespace detail {
/// Whether dist::init started MPI (and so finalises it at exit).
inline bool& started_mpi() {
    static bool started = false;
    return started;
}
inline std::shared_ptr<communicator>& world_slot() {
    static std::shared_ptr<communicator> world;
    return world;
}
}  // namespace detail

/// Starts MPI (MPI_THREAD_SERIALIZED) unless it is running, and finalises it at exit
/// if it started it. Call it once, first thing in main.
inline void init(int& argc, char**& argv) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) return;
    int provided = 0;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
        throw dist_error("devtensor::dist::init: MPI_Init_thread failed");
    if (provided < MPI_THREAD_SERIALIZED)
        throw dist_error("devtensor::dist::init: this MPI does not allow calls from more than one thread "
                         "(MPI_THREAD_SERIALIZED), which the asynchronous collectives need");
    detail::started_mpi() = true;
    std::atexit([] {
        detail::world_slot().reset();  // its thread and communicator go before MPI does
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized) MPI_Finalize();
    });
}

/// Every rank of the job (MPI_COMM_WORLD), made once with `opt` (later calls return
/// the same communicator and ignore `opt`).
inline communicator world(options opt = {}) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) throw dist_error("devtensor::dist::world: MPI is not running; call dist::init(argc, argv) first");
    auto& slot = detail::world_slot();
    if (!slot) slot = std::make_shared<communicator>(MPI_COMM_WORLD, opt);
    return *slot;
}

}  // namespace devtensor::dist
