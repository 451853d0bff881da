// Out-of-range indices found inside a kernel (DESIGN §12). A gather that meets an
// index outside [0, size) writes it into a fault record instead of reading out of
// range; the record is read after the kernel: on the CPU at once, on a GPU at the
// next synchronisation. There the record lives in mapped page-locked memory, which
// the host reads without a copy, so a checked gather costs no transfer per step.
#pragma once

#include <devtensor/config.hpp>  // DEVTENSOR_HOST_DEVICE
#include <devtensor/error.hpp>

#include <cstdint>
#include <string>

namespace devtensor::detail {

/// The first fault's details (or any fault's: every one recorded is out of range).
struct index_fault {
    std::int64_t index = 0, size = 0, dim = 0;
    const char* op = nullptr;  ///< a string literal of the host program: the kernel copies the pointer
    int raised = 0;
};

/// Records an out-of-range index, from any CPU thread or GPU lane (the last writer wins).
DEVTENSOR_HOST_DEVICE inline void raise_index_fault(index_fault* f, const char* op, std::int64_t index,
                                                    std::int64_t size, std::int64_t dim) {
#ifdef __CUDA_ARCH__
    volatile index_fault* v = f;
    v->index = index;
    v->size = size;
    v->dim = dim;
    v->op = op;
    __threadfence_system();  // the details before the flag, as the host sees them
    v->raised = 1;
#else
    __atomic_store_n(&f->index, index, __ATOMIC_RELAXED);
    __atomic_store_n(&f->size, size, __ATOMIC_RELAXED);
    __atomic_store_n(&f->dim, dim, __ATOMIC_RELAXED);
    __atomic_store_n(&f->op, op, __ATOMIC_RELAXED);
    __atomic_store_n(&f->raised, 1, __ATOMIC_RELEASE);
#endif
}

/// Throws the recorded fault as index_error (and clears it), if there is one; `where`
/// says how it was found.
inline void throw_index_fault(index_fault& f, const std::string& where = "") {
    if (__atomic_load_n(&f.raised, __ATOMIC_ACQUIRE) == 0) return;
    const index_fault found = f;
    f = index_fault{};
    throw index_error(std::string("devtensor::") + (found.op ? found.op : "gather") + ": index " +
                      std::to_string(found.index) + " is out of bounds for dimension " + std::to_string(found.dim) +
                      " with size " + std::to_string(found.size) + where);
}

/// The CPU's record for ops run by this thread (their worker threads write into it).
inline index_fault& host_index_fault() {
    thread_local index_fault record;
    return record;
}

}  // namespace devtensor::detail
