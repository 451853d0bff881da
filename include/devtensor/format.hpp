// Printing tensors: operator<< and to_string give exactly what PyTorch's repr(t) /
// print(t) give (torch/_tensor_str.py with the default print options), so output
// can be compared with Python's character for character.
#pragma once

#include <devtensor/tensor.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace devtensor {

namespace detail {

// PyTorch's default print options (torch.set_printoptions(profile="default")).
inline constexpr int print_precision = 4;
inline constexpr std::int64_t print_threshold = 1000;
inline constexpr std::int64_t print_edgeitems = 3;
inline constexpr std::int64_t print_linewidth = 80;

/// PyTorch's name for T ("torch.float32", "torch.int64", "torch.bool", ...).
template <class T>
std::string dtype_name() {
    return dtype_of<T>;
}

/// Python's '{:.<precision><conv>}'.format(v), conv 'f' or 'e': printf rounds the same
/// way and also writes a two-digit signed exponent, but Python spells every NaN "nan".
inline std::string python_format(double v, int precision, char conv) {
    if (std::isnan(v)) return "nan";
    char buf[400];  // enough even for %f of the largest double (309 digits)
    std::snprintf(buf, sizeof buf, conv == 'e' ? "%.*e" : "%.*f", precision, v);
    return buf;
}

/// torch._tensor_str._Formatter: picks int, scientific or fixed mode and one width for
/// all elements, from the (summarised) values it is given.
template <class T>
class formatter {
public:
    explicit formatter(std::span<const T> values) {
        if constexpr (!std::is_floating_point_v<T>) {
            for (const T v : values) width_ = std::max(width_, plain(v).size());
        } else {
            // Only nonzero finite values count, for the mode and for the width.
            std::vector<double> finite;
            for (const T v : values)
                if (std::isfinite(static_cast<double>(v)) && v != 0) finite.push_back(static_cast<double>(v));
            if (finite.empty()) return;
            double lo = std::numeric_limits<double>::infinity(), hi = 0;
            for (const double d : finite) {
                lo = std::min(lo, std::abs(d));
                hi = std::max(hi, std::abs(d));
                if (d != std::ceil(d)) int_mode_ = false;
            }
            sci_mode_ = hi / lo > 1000.0 || hi > 1.0e8 || (!int_mode_ && lo < 1.0e-4);
            for (const double d : finite) {
                // In int mode the width counts the trailing "." that marks a float.
                const std::size_t w = sci_mode_   ? python_format(d, print_precision, 'e').size()
                                      : int_mode_ ? python_format(d, 0, 'f').size() + 1
                                                  : python_format(d, print_precision, 'f').size();
                width_ = std::max(width_, w);
            }
        }
    }

    std::size_t width() const noexcept { return width_; }

    /// One element, right-justified to width() (never truncated).
    std::string operator()(T v) const {
        const std::string s = plain(v);
        return std::string(width_ - std::min(width_, s.size()), ' ') + s;
    }

private:
    std::string plain(T v) const {
        if constexpr (std::is_same_v<T, bool>) return v ? "True" : "False";
        else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) return std::to_string(static_cast<long long>(v));
        else if constexpr (std::is_integral_v<T>) return std::to_string(static_cast<unsigned long long>(v));
        else {
            const double d = static_cast<double>(v);
            if (sci_mode_) return python_format(d, print_precision, 'e');
            if (int_mode_) return python_format(d, 0, 'f') + (std::isfinite(d) ? "." : "");
            return python_format(d, print_precision, 'f');
        }
    }

    bool int_mode_ = true;
    bool sci_mode_ = false;
    std::size_t width_ = 1;
};

/// Whether a tensor of shape `s` is summarised (PyTorch: numel > threshold).
inline bool summarized(const shape& s) noexcept { return s.numel() > print_threshold; }

/// The indices of one dimension that are printed; -1 stands for the "..." gap.
inline std::vector<std::int64_t> shown_indices(std::int64_t n, bool summarize) {
    std::vector<std::int64_t> out;
    const bool gap = summarize && n > 2 * print_edgeitems;
    for (std::int64_t i = 0; i < n; ++i) {
        if (gap && i == print_edgeitems) {
            out.push_back(-1);
            i = n - print_edgeitems;
        }
        out.push_back(i);
    }
    return out;
}

/// The shape of what is printed of a tensor of shape `s`: when it is summarised, each
/// dimension longer than 2 * edgeitems keeps its first and last edgeitems indices.
inline shape shown_shape(const shape& s) {
    const bool summarize = summarized(s);
    std::vector<std::int64_t> dims;
    for (const std::int64_t n : s)
        dims.push_back(summarize && n > 2 * print_edgeitems ? 2 * print_edgeitems : n);
    return shape(dims);
}

/// Row-major offset step of dimension `d`.
inline std::int64_t stride_of(const shape& s, std::size_t d) {
    std::int64_t stride = 1;
    for (std::size_t k = d + 1; k < s.rank(); ++k) stride *= s[k];
    return stride;
}

/// The printed elements of a tensor, as a compact row-major array of shape `dims`
/// (shown_shape of the tensor's shape): exactly what the formatter sees, in order.
template <class T>
struct shown_values {
    shape dims;
    std::unique_ptr<T[]> data;  // dims.numel() elements (not a vector: vector<bool> has no data())

    std::span<const T> values() const noexcept {
        return {data.get(), static_cast<std::size_t>(dims.numel())};
    }
};

/// Walks dimension `d` onwards of shape `s` from row-major `offset`, calling
/// run(first, count) for each run of shown elements along the last dimension.
template <class Run>
void shown_runs(const shape& s, std::size_t d, std::int64_t offset, bool summarize, Run& run) {
    const std::int64_t n = s[d];
    if (d + 1 == s.rank()) {
        if (summarize && n > 2 * print_edgeitems) {
            run(offset, print_edgeitems);
            run(offset + n - print_edgeitems, print_edgeitems);
        } else {
            run(offset, n);
        }
        return;
    }
    const std::int64_t stride = stride_of(s, d);
    for (const std::int64_t i : shown_indices(n, summarize))
        if (i >= 0) shown_runs(s, d + 1, offset + i * stride, summarize, run);
}

/// get_summarized_data without copying the rest: gathers the printed elements of a
/// row-major tensor of shape `s`. `fetch(first_offset, count, dst)` must copy the `count`
/// consecutive elements that start at row-major offset `first_offset` to `dst`. It is
/// called once per contiguous run of shown elements (runs that touch are merged), so it
/// never reads an element that is not printed; once in all when `s` is not summarised,
/// and never when `s` holds no elements.
template <class T, class Fetch>
shown_values<T> gather_shown(const shape& s, Fetch&& fetch) {
    shown_values<T> out{shown_shape(s), nullptr};
    const std::int64_t total = out.dims.numel();
    if (total == 0) return out;
    out.data.reset(new T[static_cast<std::size_t>(total)]);
    T* const dst = out.data.get();
    if (!summarized(s)) {
        fetch(std::int64_t{0}, total, dst);
        return out;
    }
    // A pending run [first, first + count) of the source, bound for dst + written - count.
    std::int64_t first = 0, count = 0, written = 0;
    auto run = [&](std::int64_t begin, std::int64_t n) {
        if (count > 0 && first + count != begin) {
            fetch(first, count, dst + (written - count));
            count = 0;
        }
        if (count == 0) first = begin;
        count += n;
        written += n;
    };
    shown_runs(s, 0, 0, true, run);
    if (count > 0) fetch(first, count, dst + (written - count));
    return out;
}

inline std::string join(const std::vector<std::string>& parts, const std::string& sep) {
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
    return out;
}

/// _tensor_str_with_formatter / _vector_str for dimension `d` onwards. `v` is the compact
/// array of shape `shown` (shown_shape(s)) and `offset` is in its layout, while the
/// indices and the "..." gaps come from the real shape `s`.
template <class T>
std::string tensor_str(const T* v, const shape& s, const shape& shown, std::size_t d,
                       std::int64_t offset, std::int64_t indent, bool summarize,
                       const formatter<T>& fmt) {
    if (s.rank() == 0) return fmt(v[0]);
    std::vector<std::string> parts;
    std::int64_t pos = 0;  // position along dimension d in the compact array
    if (d + 1 == s.rank()) {
        const auto per_line = std::max<std::int64_t>(
            1, (print_linewidth - indent) / static_cast<std::int64_t>(fmt.width() + 2));
        std::vector<std::string> items, line;
        for (const std::int64_t i : shown_indices(s[d], summarize))
            items.push_back(i < 0 ? " ..." : fmt(v[offset + pos++]));
        for (std::size_t i = 0; i < items.size(); i += static_cast<std::size_t>(per_line)) {
            const auto end = std::min(items.size(), i + static_cast<std::size_t>(per_line));
            parts.push_back(join({items.begin() + static_cast<std::ptrdiff_t>(i),
                                  items.begin() + static_cast<std::ptrdiff_t>(end)}, ", "));
        }
        return "[" + join(parts, ",\n" + std::string(static_cast<std::size_t>(indent + 1), ' ')) + "]";
    }
    const std::int64_t stride = stride_of(shown, d);
    for (const std::int64_t i : shown_indices(s[d], summarize))
        parts.push_back(i < 0 ? "..." : tensor_str(v, s, shown, d + 1, offset + stride * pos++,
                                                   indent + 1, summarize, fmt));
    // Between slices: one newline per remaining dimension, so matrices get blank lines between.
    return "[" + join(parts, "," + std::string(s.rank() - d - 1, '\n') +
                                 std::string(static_cast<std::size_t>(indent + 1), ' ')) + "]";
}

/// _add_suffixes: ", suffix" while it fits in the line width, else ",\n" + indent + suffix.
inline std::string add_suffixes(std::string s, const std::vector<std::string>& suffixes,
                                std::int64_t indent) {
    // PyTorch's len(s) - s.rfind("\n") + 1 overcounts the last line by two; kept on purpose.
    const auto nl = s.rfind('\n');
    auto last = static_cast<std::int64_t>(s.size()) -
                (nl == std::string::npos ? -1 : static_cast<std::int64_t>(nl)) + 1;
    for (const auto& suffix : suffixes) {
        const auto len = static_cast<std::int64_t>(suffix.size());
        if (last + len + 2 > print_linewidth) {
            s += ",\n" + std::string(static_cast<std::size_t>(indent), ' ') + suffix;
            last = indent + len;
        } else {
            s += ", " + suffix;
            last += len + 2;
        }
    }
    return s + ")";
}

/// The whole repr of a tensor of shape `s` on the device named `device_name` ("cpu",
/// "cuda:0"), from `shown`, its printed elements as gather_shown gives them.
template <class T>
std::string format_shown(std::span<const T> shown, const shape& s, std::string_view device_name) {
    const std::string prefix = "tensor(";
    const auto indent = static_cast<std::int64_t>(prefix.size());
    const std::string dtype = dtype_name<T>();
    std::vector<std::string> suffixes;
    if (device_name != "cpu") suffixes.push_back("device='" + std::string(device_name) + "'");
    if (s.numel() == 0) {
        // Like NumPy, the shape is shown unless it is (0,); the dtype unless it is the
        // default float32, since no element hints at it.
        if (s.rank() != 1) {
            std::vector<std::string> dims;
            for (const std::int64_t d : s) dims.push_back(std::to_string(d));
            suffixes.push_back("size=(" + join(dims, ", ") + ")");
        }
        if (dtype != "torch.float32") suffixes.push_back("dtype=" + dtype);
        return add_suffixes(prefix + "[]", suffixes, indent);
    }
    if (dtype != "torch.float32" && dtype != "torch.int64" && dtype != "torch.bool")
        suffixes.push_back("dtype=" + dtype);
    const formatter<T> fmt(shown);
    return add_suffixes(prefix + tensor_str(shown.data(), s, shown_shape(s), 0, 0, indent,
                                            summarized(s), fmt),
                        suffixes, indent);
}

/// The whole repr of row-major `values` (all s.numel() of them) of shape `s` on the
/// device named `device_name` ("cpu", "cuda:0"): what to_string(tensor) prints, testable
/// without a GPU.
template <class T>
std::string format_tensor(const std::vector<T>& values, const shape& s, std::string_view device_name) {
    const auto fetch = [&values](std::int64_t first, std::int64_t count, T* dst) {
        std::copy_n(values.begin() + static_cast<std::ptrdiff_t>(first),
                    static_cast<std::ptrdiff_t>(count), dst);
    };
    const auto shown = gather_shown<T>(s, fetch);
    return format_shown<T>(shown.values(), s, device_name);
}

template <class T, class D>
std::string print(const tensor<T, D>& t, const transfer_request& why) {
    if (!t.defined()) return "[ Tensor (undefined) ]";
    const devtensor::device from(t.device()), host;
    if (!t.is_contiguous()) {  // a strided view: all its elements, gathered on the host
        const auto values = std::make_unique<T[]>(static_cast<std::size_t>(t.numel()));
        read_elements(t, values.get(), why);
        const auto shown = gather_shown<T>(t.shape(), [&](std::int64_t first, std::int64_t count, T* dst) {
            std::copy_n(values.get() + first, count, dst);
        });
        return format_shown<T>(shown.values(), t.shape(), devtensor::to_string(t.device()));
    }
    const T* const base = t.data();
    // The guard sees the print as one copy of what it shows, before any run is copied.
    admit_transfer(host, from, static_cast<std::size_t>(shown_shape(t.shape()).numel()) * sizeof(T), why);
    const transfer_guard admitted(transfer::allow);
    const auto shown = gather_shown<T>(t.shape(), [&](std::int64_t first, std::int64_t count, T* dst) {
        copy_bytes(dst, host, base + first, from, static_cast<std::size_t>(count) * sizeof(T), why);
    });
    return format_shown<T>(shown.values(), t.shape(), devtensor::to_string(t.device()));
}

}  // namespace detail

/// PyTorch's repr(t): "tensor([[1., 2.],\n        [3., 4.]])", with device= and dtype=
/// suffixes where PyTorch shows them. Copies to the host only the elements it prints (at
/// most 2 * edgeitems per dimension of a summarised tensor), one copy per contiguous run;
/// for a GPU tensor that is one implicit copy for the transfer guard (DESIGN §14).
/// An undefined tensor prints as libtorch prints one: "[ Tensor (undefined) ]".
template <class T, class D>
std::string to_string(const tensor<T, D>& t, call_site site = call_site::current()) {
    return detail::print(t, {"to_string", site, false, t.origin()});
}

/// Writes to_string(t); an operator takes no call site.
template <class T, class D>
std::ostream& operator<<(std::ostream& os, const tensor<T, D>& t) {
    return os << detail::print(t, {"operator<<", call_site{}, false, t.origin()});
}

}  // namespace devtensor
