// The NCCL backend (DESIGN §13; CMake target devtensor::nccl): collectives on CUDA
// tensors, queued on devtensor's stream of each device, so they run in order with
// the ops before and after them. Two ways to make one:
//   nccl_communicator(try_all_gpus())      one process driving several GPUs (ncclCommInitAll;
//                                          the collectives take one tensor per device, in a group)
//   nccl_communicator(mpi_world, device)   one rank per process: rank 0's unique id broadcast
//                                          over MPI, then a barrier (NCCL's init can deadlock without)
// A collective returns once it has finished on the GPU, or throws dist_timeout after the
// timeout (the communicator is then aborted, so that no kernel waits forever for a rank
// that will not come); NCCL's errors become dist_error naming the call and the rank.
// NCCL wants dense tensors (as PyTorch's NCCL backend does): a strided one is an error.
// Compiled and linked in the CUDA build; run on one lent GPU only (see README).
#pragma once

#include <devtensor/autograd/graph.hpp>  // autograd_access::version
#include <devtensor/backend/cuda/runtime.hpp>
#include <devtensor/dist/communicator.hpp>
#include <devtensor/stream.hpp>
#include <devtensor/tensor.hpp>

#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#if !DEVTENSOR_CUDA_RUNTIME
#  error "devtensor/dist/nccl.hpp needs the CUDA runtime: link devtensor::nccl (which brings devtensor::cuda)"
#endif

namespace devtensor::dist {

namespace detail {

template <class T>
ncclDataType_t nccl_type() noexcept {
    static_assert(std::is_same_v<T, bool> || sizeof(T) != 2, "devtensor::dist::nccl: NCCL has no 16-bit integer type");
    if constexpr (std::is_same_v<T, bool>) return ncclUint8;
    else if constexpr (std::is_same_v<T, float>) return ncclFloat32;
    else if constexpr (std::is_same_v<T, double>) return ncclFloat64;
    else if constexpr (std::is_signed_v<T>) return sizeof(T) == 1 ? ncclInt8 : sizeof(T) == 4 ? ncclInt32 : ncclInt64;
    else return sizeof(T) == 1 ? ncclUint8 : sizeof(T) == 4 ? ncclUint32 : ncclUint64;
}

template <class T>
ncclRedOp_t nccl_op(reduce_op op) noexcept {
    if constexpr (std::is_same_v<T, bool>) return op == reduce_op::min ? ncclMin : ncclMax;  // and / or
    else return op == reduce_op::avg ? ncclAvg : op == reduce_op::max ? ncclMax : op == reduce_op::min ? ncclMin : ncclSum;
}

/// One NCCL communicator per local device, and what waiting on them needs.
class nccl_state {
public:
    std::vector<ncclComm_t> comms;
    std::vector<int> ordinals;
    int first_rank = 0, ranks = 1;
    options opt;
    std::string broken;

    nccl_state() = default;
    nccl_state(const nccl_state&) = delete;
    nccl_state& operator=(const nccl_state&) = delete;
    ~nccl_state() {
        if (!broken.empty()) return;  // aborted already
        // Finalising is collective across a process's communicators: one group for all.
        (void)ncclGroupStart();
        for (ncclComm_t c : comms) (void)ncclCommFinalize(c);
        (void)ncclGroupEnd();
        for (ncclComm_t c : comms) (void)ncclCommDestroy(c);
    }

    /// Marks the communicator broken and aborts NCCL's communicators, so that no kernel
    /// waits forever for a rank that will not come.
    void abort(std::string why) {
        broken = std::move(why);
        for (ncclComm_t c : comms) (void)ncclCommAbort(c);
        comms.clear();
    }

    std::string where(const char* call) const {
        return std::string("devtensor::dist::nccl ") + call + " (rank " + std::to_string(first_rank) + " of " +
               std::to_string(ranks) + "): ";
    }
    void check(ncclResult_t r, const char* call, const char* nccl_call, ncclComm_t c = nullptr) const {
        if (r == ncclSuccess) return;
        const char* last = c != nullptr ? ncclGetLastError(c) : nullptr;
        throw dist_error(where(call) + nccl_call + " failed: " + ncclGetErrorString(r) +
                         (last != nullptr && *last != '\0' ? std::string(" (") + last + ")" : std::string()));
    }
    void check_usable(const char* call) const {
        if (!broken.empty()) throw dist_error(where(call) + "the communicator is broken: " + broken);
    }

    /// An event after the work now queued on each local device's stream.
    std::shared_ptr<std::vector<cudaEvent_t>> mark() const {
        auto events = std::shared_ptr<std::vector<cudaEvent_t>>(new std::vector<cudaEvent_t>(), [](std::vector<cudaEvent_t>* e) {
            for (cudaEvent_t ev : *e) (void)cudaEventDestroy(ev);
            delete e;
        });
        for (const int ordinal : ordinals) {
            const devtensor::detail::cudart::device_guard guard(ordinal);
            cudaEvent_t ev{};
            DEVTENSOR_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
            events->push_back(ev);
            DEVTENSOR_CUDA_CHECK(cudaEventRecord(ev, devtensor::detail::cudart::stream(ordinal)));
        }
        return events;
    }

    /// Whether every event has passed (NCCL's asynchronous errors are thrown).
    bool passed(const std::vector<cudaEvent_t>& events, const char* call) {
        check_usable(call);
        for (std::size_t k = 0; k < events.size(); ++k) {
            ncclResult_t async = ncclSuccess;
            check(ncclCommGetAsyncError(comms[k], &async), call, "ncclCommGetAsyncError", comms[k]);
            if (async != ncclSuccess && async != ncclInProgress) {
                const std::string message = where(call) + "the collective failed: " + ncclGetErrorString(async);
                abort(std::string(call) + " failed");
                throw dist_error(message);
            }
            const cudaError_t e = cudaEventQuery(events[k]);
            if (e == cudaErrorNotReady) return false;
            DEVTENSOR_CUDA_CHECK(e);
        }
        return true;
    }

    /// Blocks until the events have passed; after the timeout, aborts and throws dist_timeout.
    void wait(const std::vector<cudaEvent_t>& events, const char* call) {
        const auto deadline = std::chrono::steady_clock::now() + opt.timeout;
        for (int polls = 0; !passed(events, call); ++polls) {
            if (std::chrono::steady_clock::now() > deadline) {
                abort(std::string(call) + " timed out");
                throw dist_timeout(where(call) + "did not finish within " + std::to_string(opt.timeout.count()) +
                                   " ms: a rank has stalled, thrown, or called another collective");
            }
            if (polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
    }
};

}  // namespace detail

/// A group of GPUs that NCCL reduces over (see the file's comment). Copies share it.
class nccl_communicator {
public:
    /// One process driving every device of `devices` (CUDA devices, each once): NCCL rank
    /// k is devices[k]. The collectives take one tensor per device.
    explicit nccl_communicator(const std::vector<device>& devices, options opt = {}) : state_(make_state(opt)) {
        if (devices.empty()) throw dist_error("devtensor::dist::nccl_communicator: needs at least one device");
        for (const device& d : devices) {
            if (!d.is_cuda()) throw device_mismatch("devtensor::dist::nccl_communicator: NCCL drives CUDA devices, not " + to_string(d));
            require_available(d, "nccl_communicator");
            if (std::ranges::find(state_->ordinals, d.index()) != state_->ordinals.end())
                throw dist_error("devtensor::dist::nccl_communicator: " + to_string(d) + " is listed twice (NCCL would hang)");
            state_->ordinals.push_back(d.index());
        }
        state_->ranks = static_cast<int>(devices.size());
        state_->comms.resize(devices.size());
        state_->check(ncclCommInitAll(state_->comms.data(), state_->ranks, state_->ordinals.data()), "init", "ncclCommInitAll");
    }

    /// One rank per process of `comm` (a dist::communicator over MPI, or anything with
    /// rank(), size(), broadcast(tensor, root) and barrier()), this process driving `dev`.
    template <class Comm>
        requires requires(const Comm& c, tensor<std::uint8_t, cpu_device>& id) {
            c.broadcast(id, 0);
            c.barrier();
        }
    nccl_communicator(const Comm& comm, const device& dev, options opt = {}) : state_(make_state(opt)) {
        if (!dev.is_cuda()) throw device_mismatch("devtensor::dist::nccl_communicator: NCCL drives CUDA devices, not " + to_string(dev));
        require_available(dev, "nccl_communicator");
        state_->ordinals = {dev.index()};
        state_->first_rank = comm.rank();
        state_->ranks = comm.size();
        ncclUniqueId id{};
        if (comm.rank() == 0) state_->check(ncclGetUniqueId(&id), "init", "ncclGetUniqueId");
        tensor<std::uint8_t, cpu_device> bytes({static_cast<std::int64_t>(sizeof id)}, cpu_device{});
        std::memcpy(bytes.data(), &id, sizeof id);
        comm.broadcast(bytes, 0);
        std::memcpy(&id, bytes.data(), sizeof id);
        comm.barrier();  // every rank has the id before any blocks in ncclCommInitRank
        const devtensor::detail::cudart::device_guard guard(dev.index());
        state_->comms.resize(1);
        state_->check(ncclCommInitRank(&state_->comms[0], state_->ranks, id, state_->first_rank), "init", "ncclCommInitRank");
        comm.barrier();  // and every rank is out of it before any launches a collective (jax#11637)
    }

    /// This process's rank (its first device's in the one-process form) and the number of NCCL ranks.
    int rank() const noexcept { return state_->first_rank; }
    int size() const noexcept { return state_->ranks; }
    const options& opts() const noexcept { return state_->opt; }

    /// One tensor per local device, combined over every rank, in place.
    template <class T, class D>
    void all_reduce(const std::vector<tensor<T, D>>& per_device, reduce_op op = reduce_op::sum) const {
        enqueue_reduce("all_reduce", per_device, op);
        state_->wait(*state_->mark(), "all_reduce");
        written(per_device);
    }
    template <class T, class D>
    void all_reduce(const tensor<T, D>& t, reduce_op op = reduce_op::sum) const {
        all_reduce(std::vector<tensor<T, D>>{t}, op);
    }

    /// The root rank's tensor copied into every other rank's, in place.
    template <class T, class D>
    void broadcast(const std::vector<tensor<T, D>>& per_device, int root = 0) const {
        detail::check_root(state_->where("broadcast"), root, size());
        check_tensors("broadcast", per_device);
        group("broadcast", per_device.size(), [&](std::size_t k, cudaStream_t s) {
            const auto& t = per_device[k];
            return ncclBroadcast(t.data(), t.data(), static_cast<std::size_t>(t.numel()), detail::nccl_type<T>(), root,
                                 state_->comms[k], s);
        });
        state_->wait(*state_->mark(), "broadcast");
        written(per_device);
    }
    template <class T, class D>
    void broadcast(const tensor<T, D>& t, int root = 0) const {
        broadcast(std::vector<tensor<T, D>>{t}, root);
    }

    /// Every rank's t, stacked: [size(), t's shape...] on t's device (one device per process).
    template <class T, class D>
    [[nodiscard]] tensor<T, D> all_gather(const tensor<T, D>& t, call_site site = call_site::current()) const {
        check_tensors("all_gather", std::vector<tensor<T, D>>{t});
        std::vector<std::int64_t> dims{size()};
        for (std::size_t d = 0; d < t.shape().rank(); ++d) dims.push_back(t.shape()[d]);
        tensor<T, D> out(devtensor::shape(dims), t.device(), origin{"all_gather", site});
        group("all_gather", 1, [&](std::size_t, cudaStream_t s) {
            return ncclAllGather(t.data(), out.data(), static_cast<std::size_t>(t.numel()), detail::nccl_type<T>(),
                                 state_->comms[0], s);
        });
        state_->wait(*state_->mark(), "all_gather");
        return out;
    }

    /// t of shape [size(), rest...] combined over the ranks; this rank's row of the result.
    template <class T, class D>
    [[nodiscard]] tensor<T, D> reduce_scatter(const tensor<T, D>& t, reduce_op op = reduce_op::sum,
                                              call_site site = call_site::current()) const {
        check_op<T>("reduce_scatter", op);
        check_tensors("reduce_scatter", std::vector<tensor<T, D>>{t});
        if (t.shape().rank() == 0 || t.shape()[0] != size())
            throw shape_error(state_->where("reduce_scatter") + "the tensor must have shape [" + std::to_string(size()) +
                              ", ...] (one row per rank), not " + t.shape().to_string());
        std::vector<std::int64_t> dims(t.shape().begin() + 1, t.shape().end());
        tensor<T, D> out(devtensor::shape(dims), t.device(), origin{"reduce_scatter", site});
        group("reduce_scatter", 1, [&](std::size_t, cudaStream_t s) {
            return ncclReduceScatter(t.data(), out.data(), static_cast<std::size_t>(out.numel()), detail::nccl_type<T>(),
                                     detail::nccl_op<T>(op), state_->comms[0], s);
        });
        state_->wait(*state_->mark(), "reduce_scatter");
        return out;
    }

    /// Returns once every rank has called barrier (a one-element all_reduce on each device).
    void barrier() const {
        std::vector<tensor<float, device>> ones;
        for (const int ordinal : state_->ordinals) {
            tensor<float, device> one({1}, device(cuda_device{ordinal}));
            const devtensor::detail::cudart::device_guard guard(ordinal);
            DEVTENSOR_CUDA_CHECK(cudaMemsetAsync(one.data(), 0, sizeof(float), devtensor::detail::cudart::stream(ordinal)));
            ones.push_back(one);
        }
        all_reduce(ones);
    }

    /// all_reduce without waiting: the work queues on the device's stream now, and
    /// wait() gives the tensor back once it has run (or throws dist_timeout).
    template <class T, class D>
    [[nodiscard]] work<tensor<T, D>> all_reduce_async(tensor<T, D>&& t, reduce_op op = reduce_op::sum) const {
        enqueue_reduce("all_reduce", std::vector<tensor<T, D>>{t}, op);
        written(std::vector<tensor<T, D>>{t});
        auto events = state_->mark();
        auto state = state_;
        return work<tensor<T, D>>([state, events] { state->wait(*events, "all_reduce"); },
                                  [state, events] { return state->passed(*events, "all_reduce"); },
                                  [held = std::move(t)]() mutable { return std::move(held); });
    }

private:
    static std::shared_ptr<detail::nccl_state> make_state(options opt) {
        if (opt.deterministic)
            throw dist_error("devtensor::dist::nccl_communicator: the deterministic mode is offered by dist::mpi only "
                             "(NCCL's reduction order depends on its topology)");
        auto s = std::make_shared<detail::nccl_state>();
        s->opt = opt;
        return s;
    }

    template <class T>
    void check_op(const char* call, reduce_op op) const { detail::check_op<T>(state_->where(call), op); }

    /// One dense CUDA tensor per local device, on that device, all of one size.
    template <class T, class D>
    void check_tensors(const char* call, const std::vector<tensor<T, D>>& ts) const {
        state_->check_usable(call);
        if (ts.size() != state_->ordinals.size())
            throw dist_error(state_->where(call) + "needs one tensor per device of this process (" +
                             std::to_string(state_->ordinals.size()) + "), got " + std::to_string(ts.size()));
        for (std::size_t k = 0; k < ts.size(); ++k) {
            if (!ts[k].defined()) throw error(state_->where(call) + "the tensor is undefined (default-constructed or moved from)");
            if (devtensor::device(ts[k].device()) != devtensor::device(cuda_device{state_->ordinals[k]}))
                throw device_mismatch(state_->where(call) + "tensor " + std::to_string(k) + " is on " + to_string(ts[k].device()) +
                                      ", its NCCL rank drives cuda:" + std::to_string(state_->ordinals[k]));
            if (!ts[k].is_contiguous())
                throw error(state_->where(call) + "NCCL needs dense tensors; call contiguous() first (strides " +
                            ts[k].strides().to_string() + ")");
            if (ts[k].numel() != ts[0].numel())
                throw shape_error(state_->where(call) + "the tensors of the devices differ in size");
        }
    }

    template <class T, class D>
    void enqueue_reduce(const char* call, const std::vector<tensor<T, D>>& ts, reduce_op op) const {
        check_op<T>(call, op);
        check_tensors(call, ts);
        group(call, ts.size(), [&](std::size_t k, cudaStream_t s) {
            return ncclAllReduce(ts[k].data(), ts[k].data(), static_cast<std::size_t>(ts[k].numel()), detail::nccl_type<T>(),
                                 detail::nccl_op<T>(op), state_->comms[k], s);
        });
    }

    /// The tensors were written in place: their version moves on (as MPI's finish()).
    template <class T, class D>
    static void written(const std::vector<tensor<T, D>>& ts) {
        for (const auto& t : ts) ++devtensor::detail::autograd_access::version(t);
    }

    /// f(k, stream of device k) for every local device, inside one NCCL group.
    template <class F>
    void group(const char* call, std::size_t devices, F f) const {
        state_->check(ncclGroupStart(), call, "ncclGroupStart");
        for (std::size_t k = 0; k < devices; ++k) {
            const ncclResult_t r = f(k, devtensor::detail::cudart::stream(state_->ordinals[k]));
            if (r != ncclSuccess) {
                (void)ncclGroupEnd();
                state_->check(r, call, "the NCCL call", state_->comms[k]);
            }
        }
        state_->check(ncclGroupEnd(), call, "ncclGroupEnd");
    }

    std::shared_ptr<detail::nccl_state> state_;
};

}  // namespace devtensor::dist
