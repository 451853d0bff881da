// The CUDA GEMM and GEMV kernels run on the CPU: their bodies (gemm_block and
// gemv_block in backend/cuda/gemm_blocks.hpp, the very code of the __global__
// shells in kernels.cuh) run block by block with emulated_block, a block context
// that runs each per-thread section for every thread of the block in turn and
// checks the shared memory between them. Used by test_cuda_emulator.cpp (every
// tail path), test_determinism.cpp (the same bits as the CPU) and, as the block
// context of kernels.cuh's host-run shells, test_emulated_training.cu.
#pragma once

#include <devtensor/backend/cuda/launch_plan.hpp>
#include <devtensor/backend/cuda/phases.hpp>
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace test {
namespace cu = devtensor::backend_cuda;

/// One block of a kernel body on the CPU. Each 4-byte word of the shared memory the
/// body asks for remembers its last write (thread, cp.async group, the barrier epoch
/// its group landed in) and its readers in this epoch, so that the block notices
/// - a read of a word another thread wrote before a barrier published it, or whose
///   cp.async this thread has not waited for (wait<N>), or that nobody wrote;
/// - a write over a word another thread read or wrote since the last barrier.
/// The first such race is kept in error(); counts of barriers and commits are kept too.
class emulated_block final : public cu::shared_watch {
public:
    emulated_block(int threads, std::int64_t block) : threads_(threads), block_(block), previous_(cu::current_shared_watch()) {
        cu::current_shared_watch() = this;
    }
    ~emulated_block() { cu::current_shared_watch() = previous_; }
    emulated_block(const emulated_block&) = delete;
    emulated_block& operator=(const emulated_block&) = delete;

    std::int64_t block() const { return block_; }

    template <class F>
    void each_thread(F&& f) {
        for (int t = 0; t < threads_; ++t) {
            thread_ = t;
            f(t);
        }
        thread_ = -1;
    }
    void barrier() {
        ++epoch_;
        ++barriers_;
    }
    void commit() { ++commits_; }
    /// Every thread's groups but the newest `Pending` land (the block runs the same commits everywhere).
    template <int Pending>
    void wait() {
        for (auto& w : words_)
            if (w.landed == pending && w.group < commits_ - Pending) w.landed = epoch_;
    }

    template <class T, int N, int Align>
    T* shared() {
        auto& bytes = arrays_.emplace_back(std::make_unique<unsigned char[]>(sizeof(T) * N + Align));
        void* p = bytes.get();
        std::size_t space = sizeof(T) * N + Align;
        std::align(Align, sizeof(T) * N, p, space);
        std::memset(p, 0xff, sizeof(T) * N);  // garbage, as a fresh block's shared memory is
        ranges_.push_back({static_cast<unsigned char*>(p), words_.size(), sizeof(T) * N});
        words_.resize(words_.size() + sizeof(T) * N / 4);
        return static_cast<T*>(p);
    }

    /// One X per thread, zeroed (the GPU's registers() leaves them indeterminate).
    template <class X>
    struct per_thread {
        struct box { X x; };
        std::vector<box> v;
        ~per_thread() {}  // host only: nvcc would otherwise infer __host__ __device__ from operator()
        // Called from the bodies' per-thread lambdas, which nvcc compiles for both sides:
        // host-only in fact (DEVTENSOR_ANY_CONTEXT, gemm_blocks.hpp).
        DEVTENSOR_ANY_CONTEXT
        DEVTENSOR_HOST_DEVICE X& operator()(int t) { return v[static_cast<std::size_t>(t)].x; }
    };
    template <class X>
    per_thread<X> registers() const {
        return {std::vector<typename per_thread<X>::box>(static_cast<std::size_t>(threads_))};
    }
    template <class X>
    per_thread<X> zeroed_registers() const {
        return registers<X>();
    }

    /// __shfl_xor_sync: every lane reads its partner's values before any lane uses them.
    template <class Get, class Use>
    void shuffle_xor(int mask, Get&& get, Use&& use) {
        using values = std::remove_reference_t<decltype(get(0))>;
        struct box { values v; };
        std::vector<box> theirs(static_cast<std::size_t>(threads_));
        for (int t = 0; t < threads_; ++t) {
            REQUIRE((t ^ mask) < threads_);
            std::memcpy(&theirs[static_cast<std::size_t>(t)].v, &get(t ^ mask), sizeof(values));
        }
        for (int t = 0; t < threads_; ++t) use(t, theirs[static_cast<std::size_t>(t)].v);
    }

    const std::string& error() const { return error_; }
    std::int64_t barriers() const { return barriers_; }
    std::int64_t commits() const { return commits_; }

    void read(const void* p, std::size_t bytes) override {
        for_words(p, bytes, [&](word& w, std::size_t i) {
            if (w.landed == never) race("reads shared word " + std::to_string(i) + ", which no thread wrote");
            else if (w.landed == pending)
                race("reads shared word " + std::to_string(i) + " before its cp.async group was waited for");
            else if (w.landed == epoch_ && w.writer != thread_)
                race("reads shared word " + std::to_string(i) + " that thread " + std::to_string(w.writer) +
                     " wrote, before the barrier that publishes it");
            w.reader = w.read_epoch == epoch_ && w.reader != thread_ ? many : thread_;
            w.read_epoch = epoch_;
        });
    }
    void write(const void* p, std::size_t bytes) override { written(p, bytes, pending); }
    void store(const void* p, std::size_t bytes) override { written(p, bytes, epoch_); }

private:
    static constexpr std::int64_t never = -2, pending = -1;
    static constexpr int many = -2;

    /// A write by this thread that lands in epoch `landed` (pending: when its cp.async group is waited for).
    void written(const void* p, std::size_t bytes, std::int64_t landed) {
        for_words(p, bytes, [&](word& w, std::size_t i) {
            if (w.read_epoch == epoch_ && w.reader != thread_)
                race("overwrites shared word " + std::to_string(i) + " that another thread read since the last barrier");
            else if ((w.landed == pending || w.landed == epoch_) && w.writer != thread_)
                race("writes shared word " + std::to_string(i) + " that thread " + std::to_string(w.writer) +
                     " also wrote since the last barrier");
            w = word{thread_, commits_, landed, w.reader, w.read_epoch};
        });
    }

    struct word {
        int writer = -1;
        std::int64_t group = 0, landed = never;
        int reader = -1;
        std::int64_t read_epoch = -1;
    };
    struct range {
        unsigned char* begin;
        std::size_t first_word, bytes;
    };

    template <class F>
    void for_words(const void* p, std::size_t bytes, F f) {
        const auto* c = static_cast<const unsigned char*>(p);
        for (const range& r : ranges_)
            if (c >= r.begin && c < r.begin + r.bytes) {
                if (thread_ < 0) race("touches shared memory outside each_thread");
                const auto offset = static_cast<std::size_t>(c - r.begin);
                for (std::size_t i = offset / 4; i < (offset + bytes + 3) / 4; ++i)
                    f(words_[r.first_word + i], i);
            }
    }
    void race(const std::string& what) {
        if (error_.empty()) error_ = "block " + std::to_string(block_) + ", epoch " + std::to_string(epoch_) +
                                     ": thread " + std::to_string(thread_) + " " + what;
    }

    int threads_, thread_ = -1;
    std::int64_t block_, epoch_ = 0, barriers_ = 0, commits_ = 0;
    cu::shared_watch* previous_;
    std::vector<std::unique_ptr<unsigned char[]>> arrays_;
    std::vector<range> ranges_;
    std::vector<word> words_;
    std::string error_;
};

/// Runs gemm_kernel's body for every block of its grid; no block may race.
template <class S, class T>
void emulate_gemm(const cu::gemm_params<T>& p) {
    const std::int64_t tiles_m = (p.m + S::bm - 1) / S::bm, tiles_n = (p.n + S::bn - 1) / S::bn;
    for (std::int64_t id = 0; id < tiles_m * tiles_n; ++id) {
        emulated_block block(S::threads, id);
        cu::gemm_block<S>(block, p, tiles_m, tiles_n);
        REQUIRE_MESSAGE(block.error().empty(), block.error());
    }
}

/// Runs gemv_kernel's body for every block of its grid; no block may race.
template <class G, class T>
void emulate_gemv(const cu::gemm_params<T>& p) {
    for (std::int64_t id = 0; id < (p.n + G::features - 1) / G::features; ++id) {
        emulated_block block(G::threads, id);
        cu::gemv_block<G>(block, p);
        REQUIRE_MESSAGE(block.error().empty(), block.error());
    }
}

/// What cu::gemm launches for p on an H200-like device (132 multiprocessors), emulated.
template <class T>
void emulate_launch(const cu::gemm_params<T>& p) {
    if (p.m == 0 || p.n == 0) return;
    switch (cu::choose_gemm(p, cu::device_shape{132, 2048})) {
        case cu::gemm_kernel_choice::gemv_batch_4: return emulate_gemv<cu::gemv_tile<T, 4>>(p);
        case cu::gemm_kernel_choice::gemv_batch_16: return emulate_gemv<cu::gemv_tile<T, cu::gemv_max_batch>>(p);
        case cu::gemm_kernel_choice::tile_large:
            if constexpr (sizeof(T) == 4) return emulate_gemm<cu::gemm_block_shape_large>(p);
            [[fallthrough]];
        case cu::gemm_kernel_choice::tile_small: return emulate_gemm<cu::gemm_block_shape_small>(p);
    }
}

}  // namespace test
