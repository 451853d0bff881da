// shape: up to 8 dimensions stored inline; element counts checked for
// overflow; NumPy/PyTorch broadcasting.
#pragma once

#include <devtensor/error.hpp>

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <ostream>
#include <ranges>
#include <span>
#include <string>
#include <string_view>

namespace devtensor {

/// The dimensions of a tensor, outermost first; rank 0 is a scalar.
class shape {
public:
    static constexpr std::size_t max_rank = 8;

    shape() = default;
    shape(std::initializer_list<std::int64_t> dims) { assign(dims); }
    /// From any range of integers: shape(std::vector<std::int64_t>{2, 3}).
    template <std::ranges::input_range R>
        requires std::integral<std::ranges::range_value_t<R>>
    explicit shape(const R& dims) {
        assign(dims);
    }

    std::size_t rank() const noexcept { return rank_; }
    std::size_t size() const noexcept { return rank_; }
    std::int64_t operator[](std::size_t i) const noexcept { return dims_[i]; }
    const std::int64_t* begin() const noexcept { return dims_.data(); }
    const std::int64_t* end() const noexcept { return dims_.data() + rank_; }

    /// Product of the dimensions (1 for a scalar), checked for overflow at construction.
    std::int64_t numel() const noexcept { return numel_; }

    // A loop rather than std::equal, which calls memcmp: shapes are compared on every op.
    friend bool operator==(const shape& a, const shape& b) noexcept {
        if (a.rank_ != b.rank_) return false;
        for (std::size_t i = 0; i < a.rank_; ++i)
            if (a.dims_[i] != b.dims_[i]) return false;
        return true;
    }

    /// "[2, 3]"
    std::string to_string() const {
        std::string s = "[";
        for (std::size_t i = 0; i < rank_; ++i) {
            if (i) s += ", ";
            s += std::to_string(dims_[i]);
        }
        return s + "]";
    }
    friend std::ostream& operator<<(std::ostream& os, const shape& s) { return os << s.to_string(); }

private:
    template <class R>
    void assign(const R& dims) {
        std::size_t n = 0;
        for (const auto d : dims) {
            if (n == max_rank)
                throw shape_error("devtensor::shape: more than 8 dimensions in " + describe(dims));
            if constexpr (std::is_signed_v<std::remove_cvref_t<decltype(d)>>) {
                if (d < 0)
                    throw shape_error("devtensor::shape: negative dimension " +
                                      std::to_string(d) + " in " + describe(dims));
            }
            if (static_cast<std::uint64_t>(d) >
                static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
                throw shape_error("devtensor::shape: dimension too large in " + describe(dims));
            dims_[n++] = static_cast<std::int64_t>(d);
        }
        rank_ = static_cast<std::uint8_t>(n);
        numel_ = 1;
        // An empty dimension makes the count 0, however large the others are.
        if (std::find(dims_.begin(), dims_.begin() + static_cast<std::ptrdiff_t>(n), 0) != dims_.begin() + static_cast<std::ptrdiff_t>(n))
            numel_ = 0;
        for (std::size_t i = 0; i < n && numel_ != 0; ++i)
            if (__builtin_mul_overflow(numel_, dims_[i], &numel_))
                throw shape_error("devtensor::shape: element count of " + describe(dims) +
                                  " overflows a 64-bit integer");
    }

    template <class R>
    static std::string describe(const R& dims) {
        std::string s = "[";
        bool first = true;
        for (const auto d : dims) {
            if (!first) s += ", ";
            first = false;
            s += std::to_string(d);
        }
        return s + "]";
    }

    std::array<std::int64_t, max_rank> dims_{};
    std::uint8_t rank_ = 0;
    std::int64_t numel_ = 1;
};

/// The step, in elements, between neighbours along each dimension of a tensor
/// (torch's strides): 0 along a broadcast (expanded) dimension, never negative.
class strides {
public:
    strides() = default;
    /// From any range of integers.
    template <std::ranges::input_range R>
        requires std::integral<std::ranges::range_value_t<R>>
    explicit strides(const R& values) {
        for (const auto v : values) {
            if (rank_ == shape::max_rank) throw shape_error("devtensor::strides: more than 8 dimensions");
            values_[rank_++] = static_cast<std::int64_t>(v);
        }
    }
    /// The strides of a row-major (contiguous) tensor of shape `s`.
    static strides contiguous(const shape& s) {
        strides result;
        result.rank_ = static_cast<std::uint8_t>(s.rank());
        std::int64_t step = 1;
        for (std::size_t i = s.rank(); i-- > 0;) {
            result.values_[i] = step;
            // an empty shape may hold huge dimensions: its strides address nothing, so saturate
            if (__builtin_mul_overflow(step, std::max<std::int64_t>(s[i], 1), &step))
                step = std::numeric_limits<std::int64_t>::max();
        }
        return result;
    }

    std::size_t rank() const noexcept { return rank_; }
    std::size_t size() const noexcept { return rank_; }
    std::int64_t operator[](std::size_t i) const noexcept { return values_[i]; }
    const std::int64_t* begin() const noexcept { return values_.data(); }
    const std::int64_t* end() const noexcept { return values_.data() + rank_; }

    friend bool operator==(const strides& a, const strides& b) noexcept {
        if (a.rank_ != b.rank_) return false;
        for (std::size_t i = 0; i < a.rank_; ++i)
            if (a.values_[i] != b.values_[i]) return false;
        return true;
    }
    /// "[3, 1]"
    std::string to_string() const {
        std::string s = "[";
        for (std::size_t i = 0; i < rank_; ++i) s += (i ? ", " : "") + std::to_string(values_[i]);
        return s + "]";
    }
    friend std::ostream& operator<<(std::ostream& os, const strides& s) { return os << s.to_string(); }

private:
    std::array<std::int64_t, shape::max_rank> values_{};
    std::uint8_t rank_ = 0;
};

/// Row-major contiguous: each dimension's stride is the product of the later sizes
/// (dimensions of size 1 may have any stride, as in PyTorch).
inline bool is_contiguous(const shape& s, const strides& st) noexcept {
    if (s.numel() == 0) return true;
    std::int64_t step = 1;
    for (std::size_t i = s.rank(); i-- > 0;) {
        if (s[i] != 1 && st[i] != step) return false;
        step *= s[i];
    }
    return true;
}

/// Elements from the first to one past the last that a view of (s, st) touches.
inline std::int64_t extent(const shape& s, const strides& st) noexcept {
    if (s.numel() == 0) return 0;
    std::int64_t last = 0;
    for (std::size_t i = 0; i < s.rank(); ++i) last += (s[i] - 1) * st[i];
    return last + 1;
}

/// The shape two operands broadcast to (trailing dimensions aligned, 1 stretches);
/// throws shape_error naming `op` and both shapes when they don't.
inline shape broadcast_shapes(const shape& a, const shape& b, std::string_view op = "broadcast") {
    if (a == b) return a;  // the usual case, at no cost
    const std::size_t rank = std::max(a.rank(), b.rank());
    std::array<std::int64_t, shape::max_rank> dims{};
    for (std::size_t i = 0; i < rank; ++i) {  // i counts from the last dimension
        const std::int64_t da = i < a.rank() ? a[a.rank() - 1 - i] : 1;
        const std::int64_t db = i < b.rank() ? b[b.rank() - 1 - i] : 1;
        if (da != db && da != 1 && db != 1)
            throw shape_error("devtensor::" + std::string(op) + ": shapes " + a.to_string() +
                              " and " + b.to_string() + " cannot be broadcast (dimension " +
                              std::to_string(rank - 1 - i) + ": " + std::to_string(da) + " vs " +
                              std::to_string(db) + ")");
        dims[rank - 1 - i] = da == 1 ? db : da;
    }
    return shape(std::span<const std::int64_t>(dims.data(), rank));
}

namespace detail {
/// Dimension `d` of a rank-`rank` tensor, counted from the end when negative
/// (PyTorch's wording when it is out of range).
inline std::size_t wrap_dim(const char* op, std::int64_t d, std::size_t rank) {
    const auto r = static_cast<std::int64_t>(std::max<std::size_t>(rank, 1));
    if (d < -r || d >= r)
        throw index_error(std::string("devtensor::") + op + ": dimension out of range (expected to be in range of [" +
                          std::to_string(-r) + ", " + std::to_string(r - 1) + "], but got " + std::to_string(d) + ")");
    return static_cast<std::size_t>(d < 0 ? d + r : d);
}

/// Whether `from` broadcasts to `to` exactly (expand's rule: trailing dimensions
/// aligned, each equal or 1, no more dimensions than `to`).
inline bool broadcasts_to(const shape& from, const shape& to) {
    if (from.rank() > to.rank()) return false;
    for (std::size_t i = 0; i < from.rank(); ++i) {
        const std::int64_t d = from[from.rank() - 1 - i];
        if (d != 1 && d != to[to.rank() - 1 - i]) return false;
    }
    return true;
}
}  // namespace detail

}  // namespace devtensor
