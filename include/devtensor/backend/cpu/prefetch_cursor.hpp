// The cache lines the next pack of the CPU GEMM will read, touched a few at a
// time from inside the micro-kernel, so that memory's latency passes while the
// kernel computes. Without it a long-k product waits on every pack: a 64 x 65536
// x 64 float product streams 32 MB of operands, and on the 2-vCPU Zen 4 machine
// packing them took a third of its time (perf), none of it overlapped with compute.
#pragma once

#include <devtensor/config.hpp>

#include <cstdint>

namespace devtensor::backend_cpu {

DEVTENSOR_BEGIN_TU_NAMESPACE

/// A walk over the lines of `runs` runs of `run_bytes` contiguous bytes, `stride` apart.
/// Addresses are kept as integers: a line's start may lie before the first run, or the
/// walk's end past the last, where pointer arithmetic would leave the object.
struct prefetch_cursor {
    static constexpr std::int64_t line_bytes = 64;
    std::uintptr_t line = 0;   // the next line to touch
    std::uintptr_t start = 0;  // the current run's first byte
    std::int64_t stride = 0, run_bytes = 0;
    std::int64_t runs = 0;    // runs not finished
    std::int64_t lines = 0;   // the walk's lines, at most (sizes the tiles' budgets and the L2 check)
    std::int64_t budget = 0;  // lines the current micro-tile may still touch

    void walk(const void* first, std::int64_t run_count, std::int64_t bytes, std::int64_t stride_bytes) {
        start = reinterpret_cast<std::uintptr_t>(first);
        line = start - start % line_bytes;
        stride = stride_bytes, run_bytes = bytes, runs = bytes > 0 && run_count > 0 ? run_count : 0;
        // Exact when every run starts at the same offset in its line, else one more a run.
        const auto offset = static_cast<std::int64_t>(start % line_bytes);
        lines = runs * (stride % line_bytes == 0 ? (offset + bytes + line_bytes - 1) / line_bytes
                                                 : (bytes + line_bytes - 2) / line_bytes + 1);
    }

    /// Lets the next micro-tile touch `count` lines.
    void allow(std::int64_t count) { budget = runs != 0 ? count : 0; }

    /// Touches the next line within the budget (into L2: the pack that reads it comes a
    /// block of compute later).
    [[gnu::always_inline]] void step() {
        if (budget == 0) return;
        __builtin_prefetch(reinterpret_cast<const void*>(line), 0, 1);
        --budget;
        line += line_bytes;
        if (line < start + static_cast<std::uintptr_t>(run_bytes)) return;
        if (--runs == 0) {
            budget = 0;
        } else {
            start += static_cast<std::uintptr_t>(stride);
            line = start - start % line_bytes;
        }
    }
};

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cpu
