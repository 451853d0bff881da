// libFuzzer target: shape construction and broadcasting of two shapes (DESIGN §5, §6).
//
// Input layout (see decode_dims):
//   byte 0       the integer type the dimensions are given in: 0 int64, 1 int32,
//                2 uint64, 3 int8 (bits 0-1)
//   then twice   a rank byte (b % 10 for b < 250, else 9 + 3 * (b - 250): ranks
//                above 8 hit the documented limit) and one dimension per rank
//   dimension    a tag byte: < 0xC0 -> tag % 6; 0xC0-0xDF -> -(tag - 0xBF);
//                0xE0-0xEF -> 2^(tag - 0xE0 + 16); 0xF0-0xFE -> 2^(tag - 0xF0 + 48);
//                0xFF -> the next 8 bytes as a raw int64. The value is then
//                converted to the chosen integer type.
//
// Invariants: construction throws nothing but shape_error, and throws exactly when
// a slow reference says so (more than 8 dimensions, a negative one, one above
// INT64_MAX, or an element count that does not fit in int64); otherwise the
// shape holds the dimensions and their product. broadcast_shapes(a, b) and (b, a)
// agree, and agree with a NumPy-rules reference; an incompatible pair throws
// shape_error naming the op and both shapes.
#include "fuzz_common.hpp"

#include <devtensor/shape.hpp>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <limits>
#include <optional>
#include <type_traits>
#include <typeinfo>
#include <vector>

namespace dt = devtensor;

namespace {

constexpr auto int64_max = std::numeric_limits<std::int64_t>::max();

std::size_t decode_rank(fuzz::reader& in) {
    const std::uint8_t b = in.byte();
    return b < 250 ? b % 10u : 9u + 3u * (b - 250u);
}

std::int64_t decode_dim(fuzz::reader& in) {
    const std::uint8_t tag = in.byte();
    if (tag < 0xC0) return tag % 6;
    if (tag < 0xE0) return -static_cast<std::int64_t>(tag - 0xBF);
    if (tag < 0xF0) return std::int64_t{1} << (tag - 0xE0 + 16);
    if (tag < 0xFF) return std::int64_t{1} << (tag - 0xF0 + 48);
    return in.raw<std::int64_t>();
}

/// The exact product of `dims` (all >= 0) if it fits in int64: 0 as soon as any is 0.
std::optional<std::int64_t> exact_product(const std::vector<std::int64_t>& dims) {
    if (std::find(dims.begin(), dims.end(), 0) != dims.end()) return 0;
    unsigned __int128 p = 1;
    for (const std::int64_t d : dims) {
        p *= static_cast<unsigned __int128>(d);
        if (p > static_cast<unsigned __int128>(int64_max)) return std::nullopt;
    }
    return static_cast<std::int64_t>(p);
}

/// What shape(v) must do: nullopt when it must throw shape_error, else the dimensions.
template <class I>
std::optional<std::vector<std::int64_t>> reference_shape(const std::vector<I>& v) {
    if (v.size() > dt::shape::max_rank) return std::nullopt;
    std::vector<std::int64_t> dims;
    for (const I d : v) {
        if constexpr (std::is_signed_v<I>) {
            if (d < 0) return std::nullopt;
        }
        if (static_cast<std::uint64_t>(d) > static_cast<std::uint64_t>(int64_max)) return std::nullopt;
        dims.push_back(static_cast<std::int64_t>(d));
    }
    if (!exact_product(dims)) return std::nullopt;
    return dims;
}

/// Builds shape(v) and checks it against the reference; nullopt when it (rightly) threw.
template <class I>
std::optional<dt::shape> build(const std::vector<I>& v) {
    const auto expected = reference_shape(v);
    const std::string text = fuzz::dims_string(v);
    try {
        const dt::shape s(v);
        FUZZ_CHECK(expected.has_value(), "shape(%s) was accepted as %s; the reference rejects it",
                   text.c_str(), s.to_string().c_str());
        FUZZ_CHECK(s.rank() == expected->size() && s.size() == s.rank(),
                   "shape(%s) has rank %zu", text.c_str(), s.rank());
        FUZZ_CHECK(std::equal(s.begin(), s.end(), expected->begin(), expected->end()),
                   "shape(%s) holds %s", text.c_str(), s.to_string().c_str());
        for (std::size_t i = 0; i < s.rank(); ++i)
            FUZZ_CHECK(s[i] == (*expected)[i], "shape(%s)[%zu] is %lld", text.c_str(), i,
                       static_cast<long long>(s[i]));
        FUZZ_CHECK(s.numel() == *exact_product(*expected), "shape(%s).numel() is %lld, not %lld",
                   text.c_str(), static_cast<long long>(s.numel()),
                   static_cast<long long>(*exact_product(*expected)));
        FUZZ_CHECK(s.to_string() == fuzz::dims_string(*expected), "shape(%s) prints as %s",
                   text.c_str(), s.to_string().c_str());
        FUZZ_CHECK(dt::shape(std::vector<std::int64_t>(s.begin(), s.end())) == s,
                   "shape(%s) is not equal to a copy built from its own dimensions", text.c_str());
        return s;
    } catch (const dt::shape_error& e) {
        FUZZ_CHECK(!expected.has_value(), "shape(%s) threw shape_error, but the reference gives %s: %s",
                   text.c_str(), fuzz::dims_string(*expected).c_str(), e.what());
        FUZZ_CHECK(fuzz::contains(e.what(), "devtensor::shape: ") && fuzz::contains(e.what(), text),
                   "shape(%s): the shape_error does not name devtensor::shape and the dimensions: %s",
                   text.c_str(), e.what());
        return std::nullopt;
    } catch (const std::exception& e) {
        FUZZ_CHECK(false, "shape(%s) threw %s (not shape_error): %s", text.c_str(), typeid(e).name(),
                   e.what());
    }
    return std::nullopt;
}

template <class I>
std::optional<dt::shape> decode_shape(fuzz::reader& in) {
    const std::size_t rank = decode_rank(in);
    std::vector<I> v;
    for (std::size_t i = 0; i < rank; ++i) v.push_back(static_cast<I>(decode_dim(in)));
    return build(v);
}

/// What broadcast_shapes(a, b) must give, by NumPy's rules: nullopt when the shapes
/// are incompatible; `overflow` set when they are compatible but the result's
/// element count does not fit in int64 (then it must throw shape_error too).
std::optional<std::vector<std::int64_t>> reference_broadcast(const dt::shape& a, const dt::shape& b,
                                                             bool& overflow) {
    const std::size_t rank = std::max(a.rank(), b.rank());
    std::vector<std::int64_t> pa(rank - a.rank(), 1), pb(rank - b.rank(), 1), out;
    pa.insert(pa.end(), a.begin(), a.end());
    pb.insert(pb.end(), b.begin(), b.end());
    for (std::size_t i = 0; i < rank; ++i) {
        if (pa[i] == pb[i]) out.push_back(pa[i]);
        else if (pa[i] == 1) out.push_back(pb[i]);
        else if (pb[i] == 1) out.push_back(pa[i]);
        else return std::nullopt;
    }
    overflow = !exact_product(out).has_value();
    return out;
}

/// broadcast_shapes(x, y): the result, or nullopt when it threw shape_error (checked).
std::optional<dt::shape> try_broadcast(const dt::shape& x, const dt::shape& y, bool incompatible) {
    try {
        return dt::broadcast_shapes(x, y, "fuzz_op");
    } catch (const dt::shape_error& e) {
        if (incompatible) {
            const std::string m = e.what();
            FUZZ_CHECK(fuzz::contains(m, "devtensor::fuzz_op") && fuzz::contains(m, x.to_string()) &&
                           fuzz::contains(m, y.to_string()) && fuzz::contains(m, "cannot be broadcast"),
                       "broadcast_shapes(%s, %s): message does not name the op and both shapes: %s",
                       x.to_string().c_str(), y.to_string().c_str(), e.what());
        }
        return std::nullopt;
    } catch (const std::exception& e) {
        FUZZ_CHECK(false, "broadcast_shapes(%s, %s) threw %s (not shape_error): %s",
                   x.to_string().c_str(), y.to_string().c_str(), typeid(e).name(), e.what());
    }
    return std::nullopt;
}

void check_broadcast(const dt::shape& a, const dt::shape& b) {
    bool overflow = false;
    const auto expected = reference_broadcast(a, b, overflow);
    const auto ab = try_broadcast(a, b, !expected);
    const auto ba = try_broadcast(b, a, !expected);
    const std::string sa = a.to_string(), sb = b.to_string();
    FUZZ_CHECK(ab.has_value() == ba.has_value() && (!ab || *ab == *ba),
               "broadcast is not symmetric: (%s, %s) -> %s but (%s, %s) -> %s", sa.c_str(), sb.c_str(),
               ab ? ab->to_string().c_str() : "shape_error", sb.c_str(), sa.c_str(),
               ba ? ba->to_string().c_str() : "shape_error");
    if (!expected || overflow) {
        FUZZ_CHECK(!ab, "broadcast_shapes(%s, %s) gave %s; the reference says %s", sa.c_str(),
                   sb.c_str(), ab->to_string().c_str(),
                   expected ? "its element count overflows" : "they do not broadcast");
    } else {
        FUZZ_CHECK(ab.has_value(), "broadcast_shapes(%s, %s) threw; the reference gives %s",
                   sa.c_str(), sb.c_str(), fuzz::dims_string(*expected).c_str());
        FUZZ_CHECK(std::equal(ab->begin(), ab->end(), expected->begin(), expected->end()),
                   "broadcast_shapes(%s, %s) gave %s; the reference gives %s", sa.c_str(), sb.c_str(),
                   ab->to_string().c_str(), fuzz::dims_string(*expected).c_str());
    }
}

/// Identities that hold for every valid shape: a with itself, with a scalar, and with
/// all-ones of its rank is a.
void check_identities(const dt::shape& a) {
    const std::string sa = a.to_string();
    const auto self = try_broadcast(a, a, false);
    FUZZ_CHECK(self && *self == a, "broadcast_shapes(%s, itself) is not itself", sa.c_str());
    const auto scalar = try_broadcast(a, dt::shape{}, false);
    FUZZ_CHECK(scalar && *scalar == a, "broadcast_shapes(%s, []) is not %s", sa.c_str(), sa.c_str());
    const dt::shape ones(std::vector<std::int64_t>(a.rank(), 1));
    const auto with_ones = try_broadcast(ones, a, false);
    FUZZ_CHECK(with_ones && *with_ones == a, "broadcast_shapes(%s, %s) is not %s",
               ones.to_string().c_str(), sa.c_str(), sa.c_str());
}

template <class I>
void run(fuzz::reader& in) {
    const auto a = decode_shape<I>(in);
    const auto b = decode_shape<I>(in);
    if (a) check_identities(*a);
    if (b) check_identities(*b);
    if (a && b) check_broadcast(*a, *b);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::reader in(data, size);
    switch (in.byte() & 3) {
        case 0: run<std::int64_t>(in); break;
        case 1: run<std::int32_t>(in); break;
        case 2: run<std::uint64_t>(in); break;
        default: run<std::int8_t>(in); break;
    }
    return 0;
}
