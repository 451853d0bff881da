// libFuzzer target: from_values with arbitrary shapes and value counts (DESIGN §5).
//
// Input layout:
//   byte 0   element type (% 6): float, double, int64, int32, uint8, bool
//   byte 1   rank (% 10: up to 9, one past the limit)
//   dims     one tag byte each: < 0xF0 -> tag % 5; 0xF0-0xFE -> 2^(tag - 0xF0 + 20);
//            0xFF -> the next 8 bytes as a raw int64 (negative, huge, ...)
//   byte     how many values: bit 7 clear -> the shape's element count (when it is
//            at most 4096) plus (bits 0-1) - 1, i.e. one less, exact, one more or
//            two more; bit 7 set -> bits 0-6 as the count (0..127)
//   rest     the values' bytes, repeated as needed (zeros when there are none);
//            a bool is bit 0 of a byte.
//
// Invariants: an invalid shape throws only shape_error; from_values throws only
// shape_error, exactly when the count differs from numel(), naming the count and
// the shape; on success the tensor has that shape and numel() == count, and
// to_vector() gives the values back bit for bit. The same holds through a
// run-time cpu device and through std::span; on cuda:0, which needs the CUDA
// runtime this build lacks, a right count gives device_unavailable instead.
#include "fuzz_common.hpp"

#include <devtensor/tensor.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <ranges>
#include <span>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

namespace dt = devtensor;

namespace {

constexpr std::int64_t max_exact_count = 4096;

std::int64_t decode_dim(fuzz::reader& in) {
    const std::uint8_t tag = in.byte();
    if (tag < 0xF0) return tag % 5;
    if (tag < 0xFF) return std::int64_t{1} << (tag - 0xF0 + 20);
    return in.raw<std::int64_t>();
}

/// Bitwise equality, so that NaN payloads and -0.0 count as themselves.
template <class T>
bool same_bits(const T& a, const T& b) {
    return std::memcmp(&a, &b, sizeof(T)) == 0;
}

/// from_values(values, s, dev) against the rule: shape_error iff the count is wrong,
/// else a tensor holding the values. `cuda` says dev is cuda:0 (no runtime here).
template <class T, class R, class D>
void check_from_values(const R& values, const dt::shape& s, const D& dev, bool cuda,
                       const char* how) {
    const auto n = static_cast<std::int64_t>(std::ranges::size(values));
    const bool fits = n == s.numel();
    const std::string where = std::to_string(n) + " values for " + s.to_string() + " (" + how + ")";
    try {
        const auto t = dt::from_values<T>(values, s, dev);
        FUZZ_CHECK(fits, "from_values accepted %s, whose numel is %lld", where.c_str(),
                   static_cast<long long>(s.numel()));
        FUZZ_CHECK(!cuda, "from_values on cuda:0 succeeded without the CUDA runtime: %s",
                   where.c_str());
        FUZZ_CHECK(t.shape() == s && t.numel() == n && t.dim() == static_cast<std::int64_t>(s.rank()),
                   "from_values gave shape %s, numel %lld for %s", t.shape().to_string().c_str(),
                   static_cast<long long>(t.numel()), where.c_str());
        FUZZ_CHECK(t.defined() && dt::to_string(t.device()) == "cpu",
                   "from_values result is undefined or not on the cpu for %s", where.c_str());
        const std::vector<T> back = t.to_vector();
        FUZZ_CHECK(static_cast<std::int64_t>(back.size()) == n, "to_vector() has %zu values for %s",
                   back.size(), where.c_str());
        std::size_t i = 0;
        for (const T v : values) {
            FUZZ_CHECK(same_bits<T>(back[i], v), "to_vector()[%zu] differs from the input for %s", i,
                       where.c_str());
            ++i;
        }
        if (n == 1) FUZZ_CHECK(same_bits<T>(t.item(), back[0]), "item() differs for %s", where.c_str());
    } catch (const dt::shape_error& e) {
        FUZZ_CHECK(!fits, "from_values threw shape_error for %s: %s", where.c_str(), e.what());
        FUZZ_CHECK(fuzz::contains(e.what(), "devtensor::from_values") &&
                       fuzz::contains(e.what(), std::to_string(n)) &&
                       fuzz::contains(e.what(), s.to_string()),
                   "from_values' shape_error does not name itself, the count and the shape (%s): %s",
                   where.c_str(), e.what());
    } catch (const dt::device_unavailable& e) {
        FUZZ_CHECK(cuda && fits, "from_values threw device_unavailable for %s: %s", where.c_str(),
                   e.what());
    } catch (const std::exception& e) {
        FUZZ_CHECK(false, "from_values threw %s for %s: %s", typeid(e).name(), where.c_str(), e.what());
    }
}

template <class T>
T decode_value(fuzz::reader& values) {
    if constexpr (std::is_same_v<T, bool>) {
        return (values.byte() & 1) != 0;
    } else {
        return values.raw<T>();
    }
}

template <class T>
void run(fuzz::reader& in) {
    const std::size_t rank = in.byte() % 10u;
    std::vector<std::int64_t> dims;
    for (std::size_t i = 0; i < rank; ++i) dims.push_back(decode_dim(in));
    dt::shape s;
    try {
        s = dt::shape(dims);
    } catch (const dt::shape_error&) {
        return;  // the broadcast target checks which shapes are valid
    } catch (const std::exception& e) {
        FUZZ_CHECK(false, "shape(%s) threw %s: %s", fuzz::dims_string(dims).c_str(), typeid(e).name(),
                   e.what());
    }

    const std::uint8_t count_byte = in.byte();
    std::int64_t count;
    if (count_byte & 0x80) count = count_byte & 0x7F;
    else if (s.numel() <= max_exact_count) count = std::max<std::int64_t>(0, s.numel() + (count_byte & 3) - 1);
    else count = count_byte & 0x7F;

    // The remaining bytes, cycled, give the values.
    const std::size_t left = in.left();
    std::vector<std::uint8_t> pool(left);
    for (auto& b : pool) b = in.byte();
    std::vector<std::uint8_t> bytes;
    bytes.reserve(static_cast<std::size_t>(count) * sizeof(T));
    for (std::size_t i = 0; i < static_cast<std::size_t>(count) * sizeof(T); ++i)
        bytes.push_back(pool.empty() ? 0 : pool[i % pool.size()]);
    fuzz::reader values_in(bytes.data(), bytes.size());

    // A bool array, since std::vector<bool> is not a contiguous range.
    const auto n = static_cast<std::size_t>(count);
    std::unique_ptr<T[]> storage(new T[n > 0 ? n : 1]);
    for (std::size_t i = 0; i < n; ++i) storage[i] = decode_value<T>(values_in);
    const std::span<const T> span(storage.get(), n);

    check_from_values<T>(span, s, dt::cpu_device{}, false, "span, cpu_device");
    check_from_values<T>(span, s, dt::device("cpu"), false, "span, device(\"cpu\")");
    if constexpr (!std::is_same_v<T, bool>) {
        const std::vector<T> vec(span.begin(), span.end());
        check_from_values<T>(vec, s, dt::cpu_device{}, false, "vector, cpu_device");
    }
    check_from_values<T>(span, s, dt::device("cuda:0"), true, "span, device(\"cuda:0\")");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::reader in(data, size);
    switch (in.byte() % 6) {
        case 0: run<float>(in); break;
        case 1: run<double>(in); break;
        case 2: run<std::int64_t>(in); break;
        case 3: run<std::int32_t>(in); break;
        case 4: run<std::uint8_t>(in); break;
        default: run<bool>(in); break;
    }
    return 0;
}
