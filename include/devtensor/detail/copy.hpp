// Byte copies between any two devices: memcpy on the host, the CUDA runtime
// otherwise; each copy between host and device passes the transfer guard and
// is counted in the ledger (transfer.hpp).
#pragma once

#include <devtensor/backend/cuda/runtime.hpp>
#include <devtensor/device.hpp>
#include <devtensor/device_count.hpp>
#include <devtensor/transfer.hpp>

#include <cstddef>
#include <cstring>

namespace devtensor::detail {

/// Copies `bytes` from `src` on `from` to `dst` on `to`, for `why`; the
/// destination is ready for host reads on return when `to` is the CPU.
inline void copy_bytes(void* dst, const device& to, const void* src, const device& from,
                       std::size_t bytes, const transfer_request& why) {
    if (bytes == 0) return;
    if (from.is_cpu() && to.is_cpu()) {
        std::memcpy(dst, src, bytes);
        return;
    }
    require_available(from, why.op);
    require_available(to, why.op);
    admit_transfer(to, from, bytes, why);
#if DEVTENSOR_CUDA_RUNTIME
    cudart::copy(dst, to, src, from, bytes, why.non_blocking);
#endif
    count_transfer(to, from, bytes);
}

}  // namespace devtensor::detail
