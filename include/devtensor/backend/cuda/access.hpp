// Memory access for the CUDA kernels' phase functions, written once for both
// compilers: on the GPU a pack is one 16-byte load or store and a tile copy is
// a cp.async; on the host (the block emulator) the same calls are plain,
// standard C++ element copies.
#pragma once

#include <devtensor/config.hpp>  // DEVTENSOR_HOST_DEVICE

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#if defined(__CUDA_ARCH__)
#  define DEVTENSOR_DEVICE_UNROLL _Pragma("unroll")
#else
#  define DEVTENSOR_DEVICE_UNROLL
#endif

namespace devtensor::backend_cuda {

DEVTENSOR_BEGIN_TU_NAMESPACE

/// L consecutive elements, aligned as one access: pack<float, 4> is a float4.
template <class T, int L>
struct alignas(sizeof(T) * L) pack {
    T v[static_cast<std::size_t>(L)];
};

/// Elements of T in one 16-byte access.
template <class T>
inline constexpr int pack16 = 16 / static_cast<int>(sizeof(T));

/// Host only: how the block emulator (tests/cuda_emulator.hpp) sees the shared-memory
/// traffic of the phase functions. Pack loads and cp.async copies report to the
/// watch installed for this thread; outside the emulator none is installed.
struct shared_watch {
    virtual void read(const void* p, std::size_t bytes) = 0;
    /// A cp.async copy: it lands when this thread waits for its group.
    virtual void write(const void* p, std::size_t bytes) = 0;
    /// A plain store: seen by this thread at once, by the others after a barrier.
    virtual void store(const void* p, std::size_t bytes) = 0;

protected:
    ~shared_watch() = default;
};
inline shared_watch*& current_shared_watch() {
    static thread_local shared_watch* watch = nullptr;
    return watch;
}

DEVTENSOR_HOST_DEVICE inline bool aligned16(const void* p) {
    return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

/// p[0, L) as one access; p must be aligned to the pack. On the GPU, packs of
/// 16 bytes go through uint4: one 128-bit load (a struct copy may be split).
template <int L, class T>
DEVTENSOR_HOST_DEVICE inline pack<T, L> load_pack(const T* p) {
    pack<T, L> r;
#if defined(__CUDA_ARCH__)
    if constexpr (sizeof(r) % 16 == 0) {
        for (int i = 0; i < static_cast<int>(sizeof(r) / 16); ++i)
            reinterpret_cast<uint4*>(&r)[i] = reinterpret_cast<const uint4*>(p)[i];
        return r;
    } else
#endif
    {
#if !defined(__CUDA_ARCH__)
        if (shared_watch* w = current_shared_watch()) w->read(p, sizeof(r));
#endif
        for (int e = 0; e < L; ++e) r.v[e] = p[e];
        return r;
    }
}

template <int L, class T>
DEVTENSOR_HOST_DEVICE inline void store_pack(T* p, const pack<T, L>& value) {
#if defined(__CUDA_ARCH__)
    if constexpr (sizeof(value) % 16 == 0) {  // st.v4 by hand: nvcc splits some uint4 stores
        unsigned words[sizeof(value) / 4];
        std::memcpy(words, &value, sizeof(value));
        for (int i = 0; i < static_cast<int>(sizeof(value) / 16); ++i)
            asm volatile("st.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"l"(p + i * 16 / sizeof(T)),
                         "r"(words[4 * i]), "r"(words[4 * i + 1]), "r"(words[4 * i + 2]),
                         "r"(words[4 * i + 3]) : "memory");
    } else
#endif
    {
        for (int e = 0; e < L; ++e) p[e] = value.v[e];
    }
}

/// One element of shared memory read by this thread (the emulator sees the read).
template <class T>
DEVTENSOR_HOST_DEVICE inline T shared_load(const T* p) {
#if !defined(__CUDA_ARCH__)
    if (shared_watch* w = current_shared_watch()) w->read(p, sizeof(T));
#endif
    return *p;
}

/// One element of shared memory written by this thread (the emulator sees the write).
template <class T>
DEVTENSOR_HOST_DEVICE inline void shared_store(T* p, T value) {
#if !defined(__CUDA_ARCH__)
    if (shared_watch* w = current_shared_watch()) w->store(p, sizeof(T));
#endif
    *p = value;
}

// ---- asynchronous global -> shared copies (cp.async, sm_80 and later) -------------------

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#  define DEVTENSOR_CP_ASYNC 1
#else
#  define DEVTENSOR_CP_ASYNC 0
#endif

/// Copies `valid` of `Bytes` bytes from global `src` to shared `dst` and zeroes
/// the rest (`valid` may be 0; `src` must still be a readable address).
template <int Bytes>
DEVTENSOR_HOST_DEVICE inline void async_copy(void* dst, const void* src, int valid) {
    static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes");
#if DEVTENSOR_CP_ASYNC
    const auto shared = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    if constexpr (Bytes == 16)  // .cg: bypass L1, the tile is read once per block
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared), "l"(src),
                     "r"(valid) : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(shared), "l"(src),
                     "n"(Bytes), "r"(valid) : "memory");
#elif defined(__CUDA_ARCH__)
    auto* d = static_cast<unsigned char*>(dst);
    const auto* s = static_cast<const unsigned char*>(src);
    for (int i = 0; i < Bytes; ++i) d[i] = i < valid ? s[i] : 0;
#else  // the emulator: also enforce cp.async's rule that both addresses are aligned to the copy
    if (shared_watch* w = current_shared_watch()) w->write(dst, Bytes);
    if (reinterpret_cast<std::uintptr_t>(dst) % Bytes != 0 || reinterpret_cast<std::uintptr_t>(src) % Bytes != 0)
        throw std::logic_error("cp.async of " + std::to_string(Bytes) + " bytes from a misaligned address");
    if (valid > 0) std::memcpy(dst, src, static_cast<std::size_t>(valid));
    std::memset(static_cast<unsigned char*>(dst) + valid, 0, static_cast<std::size_t>(Bytes - valid));
#endif
}

/// One element into shared `dst`: *src where `inside`, else zero (`outside_src`:
/// any readable address aligned for T, since cp.async names one even then).
template <class T>
DEVTENSOR_HOST_DEVICE inline void async_copy_element(T* dst, const T* src, bool inside, const T* outside_src) {
    async_copy<sizeof(T)>(dst, inside ? src : outside_src, inside ? static_cast<int>(sizeof(T)) : 0);
}

/// The valid bytes of a 16-byte copy of T when `left` of its elements lie inside the matrix.
template <class T>
DEVTENSOR_HOST_DEVICE inline int valid_bytes16(std::int64_t left) {
    return left <= 0 ? 0 : left >= pack16<T> ? 16 : static_cast<int>(left * static_cast<std::int64_t>(sizeof(T)));
}

/// Closes the group of copies issued since the last commit.
DEVTENSOR_HOST_DEVICE inline void async_commit() {
#if DEVTENSOR_CP_ASYNC
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

/// Waits until at most `Pending` of this thread's committed groups are in flight.
template <int Pending>
DEVTENSOR_HOST_DEVICE inline void async_wait() {
#if DEVTENSOR_CP_ASYNC
    asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
#endif
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cuda
