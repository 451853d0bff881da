// libFuzzer target: the PyTorch-format printer (operator<<, DESIGN §5) on small
// tensors of every kind of element.
//
// Input layout:
//   byte 0   element type (% 10): float, double, int64, int32, int16, int8, uint8,
//            uint64, bool, uint16 (every element type; long double is none since DESIGN §5)
//   byte 1   rank: b % 5 for b < 240, else 5 + (b - 240) % 4 (up to 8)
//   byte 2   bit 0 set: allow up to 1100 elements (PyTorch summarises above 1000),
//            else at most 64; larger shapes are skipped
//   dims     one tag byte each: < 0xE0 -> tag % 5; 0xE0-0xEF -> 7 * (tag - 0xDF);
//            0xF0-0xFE -> 1000 + 5 * (tag - 0xF0); 0xFF -> the next 4 bytes as a
//            raw uint32 (fine next to a zero dimension)
//   values   one tag byte each, then maybe raw bytes. Floating point: < 0x40 -> a
//            special value (0, -0.0, NaN, +-inf, huge, tiny, subnormal, ...);
//            0x40-0x7F -> the integer (tag - 0x60); else the raw bits. Integers:
//            < 0x40 -> tag - 0x20; 0x40-0x7F -> min, max, 0, ...; else raw bytes.
//            bool: bit 0 of the tag.
//
// Invariants: printing never throws or crashes; the text starts with "tensor(" and
// ends with ")"; brackets and parentheses balance, and brackets nest exactly
// rank() deep; a CPU tensor has no "device=" suffix (the same values formatted
// for "cuda:1" have one); the elements read back in row-major order are the
// values (integers and bools exactly, floating point within the 4 printed digits,
// nan/inf by name), with "..." where PyTorch's summary leaves them out; empty
// tensors print "[]" with the size unless the rank is 1; dtype= appears exactly
// when the type is not float32, int64 or bool (or the tensor is empty and not float32).
#include "fuzz_common.hpp"

#include <devtensor/format.hpp>
#include <devtensor/tensor.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <limits>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

namespace dt = devtensor;

namespace {

template <class T>
T decode_value(fuzz::reader& in) {
    const std::uint8_t tag = in.byte();
    if constexpr (std::is_same_v<T, bool>) {
        return (tag & 1) != 0;
    } else if constexpr (std::is_floating_point_v<T>) {
        using L = std::numeric_limits<T>;
        const T specials[] = {T(0), -T(0), L::quiet_NaN(), -L::quiet_NaN(), L::infinity(),
                              -L::infinity(), L::max(), L::lowest(), L::min(), L::denorm_min(),
                              -L::denorm_min(), L::epsilon(), T(0.5), T(-0.25), T(1e8), T(1.5e8),
                              T(1e-4), T(9.99e-5), T(1e-5), T(123456789.0), T(3.14159265),
                              T(-2.5), T(1000), T(1001), T(0.1), T(1e20), T(-1e-20), T(99999.5),
                              T(1e38), T(1e-38), T(2.0 / 3.0), T(1e4)};
        if (tag < 0x40) return specials[tag % (sizeof specials / sizeof specials[0])];
        if (tag < 0x80) return T(static_cast<int>(tag) - 0x60);
        return in.raw<T>();
    } else {
        using L = std::numeric_limits<T>;
        const T specials[] = {L::min(), L::max(), T(0), static_cast<T>(L::max() / 2),
                              static_cast<T>(L::min() + 1), static_cast<T>(L::max() - 1),
                              static_cast<T>(100), static_cast<T>(99)};
        if (tag < 0x40) return static_cast<T>(static_cast<int>(tag) - 0x20);
        if (tag < 0x80) return specials[tag % (sizeof specials / sizeof specials[0])];
        return in.raw<T>();
    }
}

/// PyTorch's dtype names for the types whose name does not depend on the platform.
template <class T>
std::string expected_dtype() {
    if constexpr (std::is_same_v<T, float>) return "torch.float32";
    else if constexpr (std::is_same_v<T, double>) return "torch.float64";
    else if constexpr (std::is_same_v<T, bool>) return "torch.bool";
    else return (std::is_signed_v<T> ? "torch.int" : "torch.uint") + std::to_string(8 * sizeof(T));
}

/// The row-major offsets PyTorch prints, in order; -1 marks a "..." gap.
void shown(const dt::shape& s, std::size_t d, std::int64_t offset, bool summarize,
           std::vector<std::int64_t>& out) {
    if (d == s.rank()) {
        out.push_back(offset);
        return;
    }
    std::int64_t stride = 1;
    for (std::size_t k = d + 1; k < s.rank(); ++k) stride *= s[k];
    const std::int64_t n = s[d];
    for (std::int64_t i = 0; i < n; ++i) {
        if (summarize && n > 6 && i == 3) {
            out.push_back(-1);
            i = n - 3;
        }
        shown(s, d + 1, offset + i * stride, summarize, out);
    }
}

/// Whether `token` is how PyTorch could print `v` (4 significant decimals).
template <class T>
bool token_matches(const std::string& token, T v) {
    if constexpr (std::is_same_v<T, bool>) {
        return token == (v ? "True" : "False");
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
        return token == std::to_string(static_cast<long long>(v));
    } else if constexpr (std::is_integral_v<T>) {
        return token == std::to_string(static_cast<unsigned long long>(v));
    } else {
        const auto d = static_cast<double>(v);
        if (std::isnan(d)) return token == "nan";
        if (std::isinf(d)) return token == (d > 0 ? "inf" : "-inf");
        // long double, so that "1.7977e+308" (DBL_MAX rounded up) does not overflow.
        char* end = nullptr;
        const long double p = std::strtold(token.c_str(), &end);
        if (token.empty() || *end != '\0' || std::isinf(p)) return false;
        if (std::signbit(p) != std::signbit(d) && d != 0 && p != 0) return false;
        // Fixed mode: 4 decimals (values >= 1e-4); scientific: 4 decimals of mantissa;
        // integer mode: exact.
        const long double err = std::abs(p - static_cast<long double>(d));
        return err <= 5.0001e-5L || err <= 5.0001e-5L * std::abs(static_cast<long double>(d));
    }
}

/// The elements of the printed body: the bracketed part, split at brackets, commas
/// and white space; for rank 0 the text up to the first comma or ')'.
std::vector<std::string> element_tokens(const std::string& out, std::size_t rank) {
    std::vector<std::string> tokens;
    const std::size_t start = 7;  // after "tensor("
    if (rank == 0) {
        const auto end = out.find_first_of(",)", start);
        tokens.push_back(out.substr(start, end - start));
        return tokens;
    }
    std::size_t i = start, depth = 0;
    std::string token;
    for (; i < out.size(); ++i) {
        const char c = out[i];
        if (c == '[') ++depth;
        if (c == ']') --depth;
        if (c == '[' || c == ']' || c == ',' || c == ' ' || c == '\n') {
            if (!token.empty()) tokens.push_back(token);
            token.clear();
        } else {
            token += c;
        }
        if (depth == 0) break;
    }
    return tokens;
}

/// Brackets and parentheses balance; returns the deepest bracket nesting.
std::size_t check_balanced(const std::string& out) {
    long square = 0, round = 0, deepest = 0;
    for (const char c : out) {
        if (c == '[') deepest = std::max(deepest, ++square);
        if (c == ']') --square;
        if (c == '(') ++round;
        if (c == ')') --round;
        FUZZ_CHECK(square >= 0 && round >= 0, "a closing bracket before its opening one in:\n%s",
                   out.c_str());
    }
    FUZZ_CHECK(square == 0 && round == 0, "unbalanced brackets ([]: %ld, (): %ld) in:\n%s", square,
               round, out.c_str());
    return static_cast<std::size_t>(deepest);
}

template <class T>
void check_text(const std::string& out, const std::vector<T>& values, const dt::shape& s) {
    const std::string shape_text = s.to_string();
    const char* where = shape_text.c_str();
    FUZZ_CHECK(out.rfind("tensor(", 0) == 0 && out.size() > 8 && out.back() == ')',
               "shape %s: the text is not tensor(...):\n%s", where, out.c_str());
    const std::size_t deepest = check_balanced(out);
    const std::string dtype = expected_dtype<T>();
    const bool has_dtype = fuzz::contains(out, "dtype=" + dtype);
    FUZZ_CHECK(has_dtype || !fuzz::contains(out, "dtype="), "shape %s: a wrong dtype suffix (want %s):\n%s",
               where, dtype.c_str(), out.c_str());

    if (s.numel() == 0) {
        FUZZ_CHECK(out.rfind("tensor([]", 0) == 0, "shape %s: an empty tensor's body is not []:\n%s",
                   where, out.c_str());
        std::string size = "size=(";
        for (std::size_t i = 0; i < s.rank(); ++i) size += (i ? ", " : "") + std::to_string(s[i]);
        size += ")";
        FUZZ_CHECK(fuzz::contains(out, size) == (s.rank() != 1),
                   "shape %s: the size suffix (%s) is %s:\n%s", where, size.c_str(),
                   s.rank() != 1 ? "missing" : "there", out.c_str());
        FUZZ_CHECK(has_dtype == (dtype != "torch.float32"), "shape %s: dtype suffix %s:\n%s", where,
                   has_dtype ? "present" : "missing", out.c_str());
        return;
    }

    FUZZ_CHECK(deepest == s.rank(), "shape %s: brackets nest %zu deep:\n%s", where, deepest,
               out.c_str());
    const bool default_dtype =
        dtype == "torch.float32" || dtype == "torch.int64" || dtype == "torch.bool";
    FUZZ_CHECK(has_dtype == !default_dtype, "shape %s: dtype suffix %s:\n%s", where,
               has_dtype ? "present" : "missing", out.c_str());
    FUZZ_CHECK(!fuzz::contains(out, "size="), "shape %s: a size suffix on a non-empty tensor:\n%s",
               where, out.c_str());

    std::vector<std::int64_t> offsets;
    shown(s, 0, 0, s.numel() > 1000, offsets);
    const std::vector<std::string> tokens = element_tokens(out, s.rank());
    FUZZ_CHECK(tokens.size() == offsets.size(), "shape %s: %zu printed items, expected %zu:\n%s",
               where, tokens.size(), offsets.size(), out.c_str());
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        if (offsets[i] < 0) {
            FUZZ_CHECK(tokens[i] == "...", "shape %s: item %zu is '%s', expected '...':\n%s", where,
                       i, tokens[i].c_str(), out.c_str());
        } else {
            const T v = values[static_cast<std::size_t>(offsets[i])];
            FUZZ_CHECK(token_matches(tokens[i], v),
                       "shape %s: item %zu (element %lld, %.17g) printed as '%s':\n%s", where, i,
                       static_cast<long long>(offsets[i]), static_cast<double>(v), tokens[i].c_str(),
                       out.c_str());
        }
    }
}

template <class T>
void run(fuzz::reader& in) {
    const std::uint8_t rank_byte = in.byte();
    const std::size_t rank = rank_byte < 240 ? rank_byte % 5u : 5u + (rank_byte - 240u) % 4u;
    const std::int64_t cap = (in.byte() & 1) ? 1100 : 64;
    std::vector<std::int64_t> dims;
    for (std::size_t i = 0; i < rank; ++i) {
        const std::uint8_t tag = in.byte();
        if (tag < 0xE0) dims.push_back(tag % 5);
        else if (tag < 0xF0) dims.push_back(7 * (tag - 0xDF));
        else if (tag < 0xFF) dims.push_back(1000 + 5 * (tag - 0xF0));
        else dims.push_back(in.raw<std::uint32_t>());
    }
    dt::shape s;
    try {
        s = dt::shape(dims);
    } catch (const dt::shape_error&) {
        return;  // shapes are the broadcast target's business
    }
    if (s.numel() > cap) return;

    std::vector<T> values;
    for (std::int64_t i = 0; i < s.numel(); ++i) values.push_back(decode_value<T>(in));

    std::string out, runtime_out, cuda_out;
    try {
        // A plain array, since std::vector<bool> has no data().
        const std::unique_ptr<T[]> array(new T[values.size() + 1]);
        std::copy(values.begin(), values.end(), array.get());
        const auto t = dt::from_values<T>(std::span<const T>(array.get(), values.size()), s);
        std::ostringstream os;
        os << t;
        out = os.str();
        const dt::tensor<T, dt::device> runtime = t;  // a run-time device that is the cpu
        std::ostringstream ros;
        ros << runtime;
        runtime_out = ros.str();
        cuda_out = dt::detail::format_tensor(values, s, "cuda:1");
    } catch (const std::exception& e) {
        FUZZ_CHECK(false, "shape %s: printing threw %s: %s", s.to_string().c_str(), typeid(e).name(),
                   e.what());
    }
    FUZZ_CHECK(runtime_out == out, "shape %s: tensor<T, device> on the cpu prints differently:\n%s\nvs\n%s",
               s.to_string().c_str(), runtime_out.c_str(), out.c_str());
    FUZZ_CHECK(!fuzz::contains(out, "device="), "shape %s: a CPU tensor has a device suffix:\n%s",
               s.to_string().c_str(), out.c_str());
    check_text(out, values, s);

    FUZZ_CHECK(fuzz::contains(cuda_out, ", device='cuda:1'") ||
                   fuzz::contains(cuda_out, ",\n       device='cuda:1'"),
               "shape %s: no device suffix for cuda:1:\n%s", s.to_string().c_str(), cuda_out.c_str());
    FUZZ_CHECK(cuda_out.rfind("tensor(", 0) == 0 && cuda_out.back() == ')',
               "shape %s: the cuda:1 text is not tensor(...):\n%s", s.to_string().c_str(),
               cuda_out.c_str());
    check_balanced(cuda_out);

    // An undefined tensor prints as libtorch prints one.
    static const std::string undefined = dt::to_string(dt::tensor<T, dt::cpu_device>{});
    FUZZ_CHECK(undefined == "[ Tensor (undefined) ]", "an undefined tensor prints as %s",
               undefined.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::reader in(data, size);
    switch (in.byte() % 10) {
        case 0: run<float>(in); break;
        case 1: run<double>(in); break;
        case 2: run<std::int64_t>(in); break;
        case 3: run<std::int32_t>(in); break;
        case 4: run<std::int16_t>(in); break;
        case 5: run<std::int8_t>(in); break;
        case 6: run<std::uint8_t>(in); break;
        case 7: run<std::uint64_t>(in); break;
        case 8: run<bool>(in); break;
        default: run<std::uint16_t>(in); break;
    }
    return 0;
}
