// The CUDA transpose kernel's body, written once: the copy of a transposed
// matrix (t.transpose(0, 1).contiguous(), any copy whose input walks down the
// output's columns), or of a batch of them. A block moves one 32 x 32 tile
// through shared memory: its warps read 32 consecutive elements of the input's
// contiguous direction, and after the barrier write 32 consecutive elements of
// the output's, so both sides are coalesced (the generic strided kernel reads
// one element per 32-element line). The tile's rows are padded to 33 slots, so
// the column reads after the barrier fall into 32 different banks.
// Runs with the block contexts of gemm_blocks.hpp: device_block in kernels.cuh's
// transpose_kernel, tests/cuda_emulator.hpp's emulated_block on the CPU.
#pragma once

#include <devtensor/backend/cuda/access.hpp>       // shared_load, shared_store
#include <devtensor/backend/cuda/gemm_blocks.hpp>  // DEVTENSOR_ANY_CONTEXT, the block-context interface
#include <devtensor/detail/elementwise.hpp>        // loop_plan

#include <cstdint>
#include <limits>
#include <type_traits>

namespace devtensor::backend_cuda {

DEVTENSOR_BEGIN_TU_NAMESPACE

/// The identity functor of copies (detail::copy_element): the twin of
/// backend_cpu::copying, which routes the same copies to the CPU's blocked transpose.
template <class F>
concept copying = requires { requires F::is_copy; };

/// A tile is transpose_tile x transpose_tile elements; the block has
/// transpose_tile x transpose_rows threads, each moving transpose_tile / transpose_rows elements.
inline constexpr int transpose_tile = 32, transpose_rows = 8;
inline constexpr int transpose_threads = transpose_tile * transpose_rows;
/// Slots per tile row: one more than the tile, so a column is in 32 banks.
inline constexpr int transpose_pitch = transpose_tile + 1;

/// out[b * out_batch + i * out_row + j] = in[b * in_batch + i + j * in_column]
/// for b < batch, i < rows, j < cols.
template <class T>
struct transpose_params {
    T* out;
    const T* in;
    std::int64_t rows, cols, batch;
    std::int64_t out_row, in_column;
    std::int64_t out_batch, in_batch;

    DEVTENSOR_HOST_DEVICE std::int64_t tiles_i() const { return (rows + transpose_tile - 1) / transpose_tile; }
    DEVTENSOR_HOST_DEVICE std::int64_t tiles_j() const { return (cols + transpose_tile - 1) / transpose_tile; }
    /// The grid: one block per tile.
    DEVTENSOR_HOST_DEVICE std::int64_t blocks() const { return batch * tiles_i() * tiles_j(); }
};

/// Whether a copy's plan (operand 0 the output) is a transposed matrix, or a
/// batch of them in its first dimension: the output walks its last dimension
/// in order while the input strides along it and walks the dimension before in
/// order. The CPU's condition (backend_cpu::map), a leading batch dimension added.
inline bool is_transposed_copy(const detail::loop_plan<2>& p) {
    if (p.rank != 2 && p.rank != 3) return false;
    const int i = p.rank - 2, j = p.rank - 1;
    return p.strides[0][j] == 1 && p.strides[1][i] == 1 && p.strides[1][j] > 1;
}

/// The transpose of a plan is_transposed_copy accepts.
template <class T>
transpose_params<T> transpose_params_of(const detail::loop_plan<2>& p, T* out, const T* in) {
    const int i = p.rank - 2, j = p.rank - 1;
    const bool batched = p.rank == 3;
    return {out,
            in,
            p.sizes[i],
            p.sizes[j],
            batched ? p.sizes[0] : 1,
            p.strides[0][i],
            p.strides[1][j],
            batched ? p.strides[0][0] : 0,
            batched ? p.strides[1][0] : 0};
}

/// What a tile slot holds: T, or for 1- and 2-byte elements (bool, int8, int16)
/// their value in 4 bytes, so that no two threads write parts of one bank word.
template <class T>
using transpose_slot = std::conditional_t<(sizeof(T) < 4), std::uint32_t, T>;

/// The tile of block ctx.block(): in the load section thread (x, y) reads input
/// column j0 + y + k * transpose_rows at row i0 + x into slot [y + k * rows][x];
/// after the barrier it writes slot [x][y + k * rows] to output row i0 + y + k * rows,
/// column j0 + x. Elements outside the matrix are neither read nor written.
DEVTENSOR_ANY_CONTEXT
template <class Ctx, class T>
DEVTENSOR_HOST_DEVICE inline void transpose_block(Ctx& ctx, const transpose_params<T>& p) {
    using S = transpose_slot<T>;
    S* tile = ctx.template shared<S, transpose_tile * transpose_pitch, alignof(S)>();
    const std::int64_t tiles_i = p.tiles_i(), tiles_j = p.tiles_j();
    const std::int64_t id = ctx.block(), per_plane = tiles_i * tiles_j;
    // consecutive blocks take consecutive tiles of the input's contiguous direction
    const std::int64_t b = id / per_plane, i0 = id % per_plane % tiles_i * transpose_tile,
                       j0 = id % per_plane / tiles_i * transpose_tile;
    const T* in = p.in + b * p.in_batch;
    T* out = p.out + b * p.out_batch;
    ctx.each_thread([&](int t) {
        const int x = t % transpose_tile, y = t / transpose_tile;
        const std::int64_t i = i0 + x;
        DEVTENSOR_DEVICE_UNROLL
        for (int k = 0; k < transpose_tile / transpose_rows; ++k) {
            const int r = y + k * transpose_rows;
            const std::int64_t j = j0 + r;
            if (i < p.rows && j < p.cols) shared_store(tile + r * transpose_pitch + x, static_cast<S>(in[i + j * p.in_column]));
        }
    });
    ctx.barrier();
    ctx.each_thread([&](int t) {
        const int x = t % transpose_tile, y = t / transpose_tile;
        const std::int64_t j = j0 + x;
        DEVTENSOR_DEVICE_UNROLL
        for (int k = 0; k < transpose_tile / transpose_rows; ++k) {
            const int r = y + k * transpose_rows;
            const std::int64_t i = i0 + r;
            if (i < p.rows && j < p.cols) out[i * p.out_row + j] = static_cast<T>(shared_load(tile + x * transpose_pitch + r));
        }
    });
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor::backend_cuda
