// The block context of the kernel bodies in gemm_blocks.hpp on the GPU: every
// call is the CUDA statement it names, inline, so a body run with it compiles to
// the kernel written out by hand (the emulator's context is tests/cuda_emulator.hpp).
#pragma once

#include <devtensor/config.hpp>

#if !DEVTENSOR_HAS_CUDA
#  error "devtensor/backend/cuda/device_block.cuh needs nvcc; kernels.cuh includes it only when DEVTENSOR_HAS_CUDA is 1"
#endif

#include <devtensor/backend/cuda/access.hpp>  // async_commit, async_wait

#include <cstdint>
#include <type_traits>

namespace devtensor::backend_cuda {

DEVTENSOR_BEGIN_TU_NAMESPACE

/// One thread's X: the thread is the only one there is. Indeterminate unless
/// zeroed, as a plain local (the weights are never read before they are loaded).
template <class X>
struct thread_registers {
    X value;
    __device__ thread_registers() {}  // NOLINT: left indeterminate on purpose
    __device__ explicit thread_registers(bool) : value{} {}
    DEVTENSOR_HOST_DEVICE X& operator()(int) { return value; }
    DEVTENSOR_HOST_DEVICE const X& operator()(int) const { return value; }
};

/// Seen from the thread running the kernel.
struct device_block {
    int thread = static_cast<int>(threadIdx.x);  // read once, as a kernel's `const int t` would be

    __device__ std::int64_t block() const { return static_cast<std::int64_t>(blockIdx.x); }

    template <class F>
    __device__ void each_thread(F&& f) const {
        f(thread);
    }

    __device__ void barrier() const { __syncthreads(); }
    __device__ void commit() const { async_commit(); }
    template <int Pending>
    __device__ void wait() const {
        async_wait<Pending>();
    }

    /// The block's one shared array for this <T, N, Align> (a static __shared__, as in the kernel itself).
    template <class T, int N, int Align>
    __device__ T* shared() const {
        __shared__ alignas(Align) T s[N];
        return s;
    }

    template <class X>
    __device__ thread_registers<X> registers() const {
        return {};
    }
    template <class X>
    __device__ thread_registers<X> zeroed_registers() const {
        return thread_registers<X>(true);
    }

    /// use(t, theirs): theirs = get(t) of the lane `mask` away, one __shfl_xor_sync per element.
    template <class Get, class Use>
    __device__ void shuffle_xor(int mask, Get&& get, Use&& use) const {
        const int t = thread;
        auto& mine = get(t);
        std::remove_reference_t<decltype(mine)> theirs;
        DEVTENSOR_DEVICE_UNROLL
        for (int e = 0; e < static_cast<int>(std::extent_v<std::remove_reference_t<decltype(mine)>>); ++e)
            theirs[e] = __shfl_xor_sync(0xffffffffu, mine[e], mask);
        use(t, theirs);
    }
};

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cuda
