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
#include <ostream>
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

/// PyTorch's name for T ("torch.float32", "torch.int64", "torch.bool", ...), chosen by
/// kind, signedness and size so that long and long long (or char) map alike.
template <class T>
std::string dtype_name() {
    const std::string bits = std::to_string(8 * sizeof(T));
    if constexpr (std::is_same_v<T, bool>) return "torch.bool";
    else if constexpr (std::is_floating_point_v<T>) return "torch.float" + bits;
    else return (std::is_signed_v<T> ? "torch.int" : "torch.uint") + bits;
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
    explicit formatter(const std::vector<T>& values) {
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

/// Row-major offset step of dimension `d`.
inline std::int64_t stride_of(const shape& s, std::size_t d) {
    std::int64_t stride = 1;
    for (std::size_t k = d + 1; k < s.rank(); ++k) stride *= s[k];
    return stride;
}

/// get_summarized_data: the values that will be printed, which are all the formatter sees.
template <class T>
void collect_shown(const std::vector<T>& v, const shape& s, std::size_t d, std::int64_t offset,
                   bool summarize, std::vector<T>& out) {
    if (d == s.rank()) {
        out.push_back(v[static_cast<std::size_t>(offset)]);
        return;
    }
    for (const std::int64_t i : shown_indices(s[d], summarize))
        if (i >= 0) collect_shown(v, s, d + 1, offset + i * stride_of(s, d), summarize, out);
}

inline std::string join(const std::vector<std::string>& parts, const std::string& sep) {
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
    return out;
}

/// _tensor_str_with_formatter / _vector_str for dimension `d` onwards, starting at `offset`.
template <class T>
std::string tensor_str(const std::vector<T>& v, const shape& s, std::size_t d, std::int64_t offset,
                       std::int64_t indent, bool summarize, const formatter<T>& fmt) {
    if (s.rank() == 0) return fmt(v[0]);
    std::vector<std::string> parts;
    if (d + 1 == s.rank()) {
        const auto per_line = std::max<std::int64_t>(
            1, (print_linewidth - indent) / static_cast<std::int64_t>(fmt.width() + 2));
        std::vector<std::string> items, line;
        for (const std::int64_t i : shown_indices(s[d], summarize))
            items.push_back(i < 0 ? " ..." : fmt(v[static_cast<std::size_t>(offset + i)]));
        for (std::size_t i = 0; i < items.size(); i += static_cast<std::size_t>(per_line)) {
            const auto end = std::min(items.size(), i + static_cast<std::size_t>(per_line));
            parts.push_back(join({items.begin() + static_cast<std::ptrdiff_t>(i),
                                  items.begin() + static_cast<std::ptrdiff_t>(end)}, ", "));
        }
        return "[" + join(parts, ",\n" + std::string(static_cast<std::size_t>(indent + 1), ' ')) + "]";
    }
    for (const std::int64_t i : shown_indices(s[d], summarize))
        parts.push_back(i < 0 ? "..." : tensor_str(v, s, d + 1, offset + i * stride_of(s, d),
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

/// The whole repr of row-major `values` of shape `s` on the device named `device_name`
/// ("cpu", "cuda:0"): what to_string(tensor) prints, testable without a GPU.
template <class T>
std::string format_tensor(const std::vector<T>& values, const shape& s, std::string_view device_name) {
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
    const bool summarize = s.numel() > print_threshold;
    std::vector<T> shown;
    collect_shown(values, s, 0, 0, summarize, shown);
    const formatter<T> fmt(shown);
    return add_suffixes(prefix + tensor_str(values, s, 0, 0, indent, summarize, fmt), suffixes, indent);
}

}  // namespace detail

/// PyTorch's repr(t): "tensor([[1., 2.],\n        [3., 4.]])", with device= and dtype=
/// suffixes where PyTorch shows them. Copies the elements to the host first.
/// An undefined tensor prints as libtorch prints one: "[ Tensor (undefined) ]".
template <class T, class D>
std::string to_string(const tensor<T, D>& t) {
    if (!t.defined()) return "[ Tensor (undefined) ]";
    return detail::format_tensor(t.to_vector(), t.shape(), devtensor::to_string(t.device()));
}

/// Writes to_string(t).
template <class T, class D>
std::ostream& operator<<(std::ostream& os, const tensor<T, D>& t) {
    return os << to_string(t);
}

}  // namespace devtensor
