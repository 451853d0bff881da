// CPU threads for the CPU backend: set_num_threads / get_num_threads as in
// PyTorch, and the parallel_for the loops use. OpenMP when the consumer
// enables it (-fopenmp, OpenMP::OpenMP_CXX); otherwise devtensor's own pool
// of std::threads (detail/worker_pool.hpp).
#pragma once

#include <devtensor/config.hpp>
#include <devtensor/detail/worker_pool.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>

#if defined(_OPENMP)
#  include <omp.h>
#endif

namespace devtensor {

namespace detail {
/// 0 means "not set": use OpenMP's default, or one thread per core.
inline std::atomic<int>& requested_threads() noexcept {
    static std::atomic<int> n{0};
    return n;
}
}  // namespace detail

/// Threads CPU ops may use from now on (torch.set_num_threads); n >= 1.
inline void set_num_threads(int n) {
    if (n < 1)
        throw std::invalid_argument("devtensor::set_num_threads: need at least 1 thread, got " +
                                    std::to_string(n));
    detail::requested_threads().store(n);
}

// Whether OpenMP is on is a property of the translation unit, like DEVTENSOR_HAS_CUDA.
DEVTENSOR_BEGIN_TU_NAMESPACE

/// Threads CPU ops use: what set_num_threads asked for, else OpenMP's default
/// (or, without OpenMP, one per core).
inline int get_num_threads() noexcept {
    const int n = detail::requested_threads().load();
    if (n > 0) return n;
#if defined(_OPENMP)
    return omp_get_max_threads();
#else
    // Asked once: glibc's hardware_concurrency() opens and reads a file in /sys on every
    // call (a tiny training step spent 95% of its 90 us there, asking before each op).
    static const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    return cores;
#endif
}

DEVTENSOR_END_TU_NAMESPACE

namespace detail {
DEVTENSOR_BEGIN_TU_NAMESPACE

/// Threads a parallel_for started here runs on: one inside a parallel region (a nested
/// region runs on its calling thread), else get_num_threads(). Work split for more threads
/// than that runs its parts one after another (a batch's GEMMs, one per thread: each split
/// in two and B packed twice, [64, 256, 256] on 2 threads).
inline int threads_here() noexcept {
#if defined(_OPENMP)
    if (omp_in_parallel()) return 1;
#else
    if (worker_pool::inside()) return 1;
#endif
    return get_num_threads();
}

/// Calls f(begin, end) over contiguous chunks of [0, n) on up to get_num_threads()
/// threads, each chunk at least `grain` long, so small work stays on one thread.
/// An exception from a chunk reaches the caller (the first one, once all chunks ended).
template <class F>
void parallel_for(std::int64_t n, std::int64_t grain, F&& f) {
    if (n <= 0) return;
    const std::int64_t chunks =
        std::min<std::int64_t>(threads_here(), (n + grain - 1) / std::max<std::int64_t>(grain, 1));
    if (chunks <= 1) {
        f(std::int64_t{0}, n);
        return;
    }
#if defined(_OPENMP)
    // An exception must not leave an OpenMP region (that terminates): carry it out.
    std::exception_ptr failure;
#  pragma omp parallel for num_threads(static_cast<int>(chunks)) schedule(static)
    for (std::int64_t c = 0; c < chunks; ++c) {
        try {
            f(n * c / chunks, n * (c + 1) / chunks);
        } catch (...) {
#  pragma omp critical(devtensor_parallel_for_failure)
            if (!failure) failure = std::current_exception();
        }
    }
    if (failure) std::rethrow_exception(failure);
#else
    worker_pool::instance().run(static_cast<int>(chunks),
                                [&](int c) { f(n * c / chunks, n * (c + 1) / chunks); });
#endif
}

DEVTENSOR_END_TU_NAMESPACE
}  // namespace detail

}  // namespace devtensor
