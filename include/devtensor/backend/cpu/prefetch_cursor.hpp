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
struct prefetch_cursor {
    static constexpr std::int64_t line_bytes = 64;
    const char* line = nullptr;   // the next line to touch
    const char* start = nullptr;  // the current run's first byte
    std::int64_t stride = 0, run_bytes = 0;
    std::int64_t runs = 0;    // runs not finished
    std::int64_t lines = 0;   // lines not touched yet, counted as if each run began a line (for budgets)
    std::int64_t budget = 0;  // lines the current micro-tile may touch

    void aim(const void* first, std::int64_t run_count, std::int64_t bytes, std::int64_t stride_bytes) {
        start = static_cast<const char*>(first);
        line = line_of(start);
        stride = stride_bytes, run_bytes = bytes, runs = bytes > 0 ? run_count : 0;
        lines = runs * ((bytes + line_bytes - 1) / line_bytes);
    }

    /// Lets the next micro-tile touch `count` lines.
    void allow(std::int64_t count) { budget = runs != 0 ? count : 0; }

    /// Touches the next line within the budget (into L2: the pack that reads it comes a
    /// block of compute later).
    void step() {
        if (budget == 0) return;
        __builtin_prefetch(line, 0, 1);
        --budget, --lines;
        line += line_bytes;
        if (line < start + run_bytes) return;
        if (--runs == 0) {
            budget = lines = 0;
        } else {
            start += stride;
            line = line_of(start);
        }
    }

private:
    static const char* line_of(const char* p) {
        return p - static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(p) % line_bytes);
    }
};

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cpu
