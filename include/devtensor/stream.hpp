// synchronize and current_stream (DESIGN §5): how users order their own CUDA
// work with devtensor's, like torch.cuda.synchronize and torch.cuda.current_stream.
#pragma once

#include <devtensor/backend/cuda/runtime.hpp>  // cudart::stream, cudart::synchronize
#include <devtensor/device.hpp>
#include <devtensor/device_count.hpp>  // require_available
#include <devtensor/error.hpp>

namespace devtensor {

/// Waits until the work devtensor has queued on `dev` is done; nothing to wait for on the CPU.
template <Device D>
void synchronize(const D& dev) {
    const device d(dev);
    if (d.is_cpu()) return;
    require_available(d, "synchronize");
#if DEVTENSOR_CUDA_RUNTIME
    detail::cudart::synchronize(d.index());
#endif
}

#if DEVTENSOR_CUDA_RUNTIME
/// The stream devtensor orders all its work on `dev` on: a kernel of yours launched
/// on it, on a tensor's data(), runs after the ops before it and before the ops after.
template <Device D>
cudaStream_t current_stream(const D& dev) {
    static_assert(!HostAccessible<D>, "devtensor::current_stream: the cpu has no CUDA stream");
    const device d(dev);
    if (d.is_cpu())
        throw device_mismatch("devtensor::current_stream: the cpu has no CUDA stream; pass a cuda device");
    require_available(d, "current_stream");
    return detail::cudart::stream(d.index());
}
#endif

}  // namespace devtensor
