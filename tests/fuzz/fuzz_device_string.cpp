// libFuzzer target: device-string parsing (DESIGN §2).
//
// The whole input is a device string. It must either parse, and then be exactly
// what a slow reference grammar accepts ("cpu", "cpu:0", "cuda", "cuda:N" with N a
// decimal integer that fits in an int), with to_string canonical ("cpu" / "cuda:N")
// and parsing back to an equal device; or throw exactly devtensor::invalid_device
// (a std::invalid_argument) whose message quotes the input. Nothing else escapes.
//
// The same bytes also give a (kind, index) pair: bit 0 of byte 0 picks the kind,
// bytes 1-4 the index (little-endian int32). device(kind, index) must either throw
// invalid_device (index < 0, or a cpu index other than 0) or give a device whose
// to_string parses back to it; cuda_device{index >= 0} must do the same.
#include "fuzz_common.hpp"

#include <devtensor/device.hpp>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <typeinfo>

namespace dt = devtensor;

namespace {

/// Whether "cuda:01" means cuda:1: DESIGN §2 refuses it, like PyTorch's parser
/// (c10/core/Device.cpp: index `[1-9]\d*|0`).
constexpr bool accept_leading_zeros = false;

/// The grammar of DESIGN §2, written independently of the library.
std::optional<dt::device> reference_parse(std::string_view s) {
    const auto colon = s.find(':');
    const std::string_view name = s.substr(0, colon);
    dt::device_kind kind;
    if (name == "cpu") kind = dt::device_kind::cpu;
    else if (name == "cuda") kind = dt::device_kind::cuda;
    else return std::nullopt;
    if (colon == std::string_view::npos) return dt::device(kind, 0);
    const std::string_view digits = s.substr(colon + 1);
    if (digits.empty()) return std::nullopt;
    if (!accept_leading_zeros && digits.size() > 1 && digits[0] == '0') return std::nullopt;
    long long value = 0;
    for (const char c : digits) {
        if (c < '0' || c > '9') return std::nullopt;
        value = value * 10 + (c - '0');
        if (value > INT_MAX) return std::nullopt;  // no int holds it
    }
    if (kind == dt::device_kind::cpu && value != 0) return std::nullopt;
    return dt::device(kind, static_cast<int>(value));
}

std::string canonical(const dt::device& d) {
    return d.is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(d.index());
}

/// How a message shows `text`: printable ASCII as itself, every other byte (and the
/// backslash) as \xNN, at most 64 characters; so a NUL never cuts what() short.
std::string visible(std::string_view text) {
    std::string out;
    for (std::size_t i = 0; i < text.size() && i < 64; ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        char hex[8];
        std::snprintf(hex, sizeof hex, "\\x%02x", c);
        out += c >= 32 && c < 127 && c != '\\' ? std::string(1, static_cast<char>(c)) : std::string(hex);
    }
    return out;
}

/// to_string(d) parses back to d (the parse ∘ to_string round trip).
void check_round_trip(const dt::device& d, const char* what) {
    const std::string text = dt::to_string(d);
    FUZZ_CHECK(text == canonical(d), "%s: to_string gave '%s', expected '%s'", what, text.c_str(),
               canonical(d).c_str());
    try {
        const dt::device back(text);
        FUZZ_CHECK(back == d, "%s: '%s' parsed back to %s", what, text.c_str(),
                   canonical(back).c_str());
    } catch (const dt::invalid_device& e) {
        FUZZ_CHECK(false, "%s: to_string gave '%s', which does not parse back: %s", what,
                   text.c_str(), e.what());
    }
}

void check_string(std::string_view text) {
    const std::optional<dt::device> expected = reference_parse(text);
    try {
        const dt::device d(text);
        FUZZ_CHECK(expected.has_value(), "device('%s') parsed to %s, but the grammar rejects it",
                   visible(text).c_str(), canonical(d).c_str());
        FUZZ_CHECK(d == *expected, "device('%s') parsed to %s, expected %s",
                   visible(text).c_str(), canonical(d).c_str(), canonical(*expected).c_str());
        check_round_trip(d, "parsed device");
    } catch (const dt::invalid_device& e) {
        FUZZ_CHECK(!expected.has_value(), "device('%s') threw invalid_device, but it names %s: %s",
                   visible(text).c_str(), canonical(*expected).c_str(), e.what());
        const std::string message = e.what();
        FUZZ_CHECK(fuzz::contains(message, "'" + visible(text) + "'"),
                   "invalid_device message does not quote the input '%s': %s",
                   visible(text).c_str(), e.what());
        FUZZ_CHECK(std::all_of(message.begin(), message.end(),
                               [](char c) { return static_cast<unsigned char>(c) >= 32; }),
                   "invalid_device message holds a control character: %s", e.what());
        FUZZ_CHECK(fuzz::contains(message, "devtensor::device"),
                   "invalid_device message does not name devtensor::device: %s", e.what());
    } catch (const std::exception& e) {
        FUZZ_CHECK(false, "device('%s') threw %s (not invalid_device): %s", visible(text).c_str(),
                   typeid(e).name(), e.what());
    } catch (...) {
        FUZZ_CHECK(false, "device('%s') threw a non-std exception", visible(text).c_str());
    }
}

void check_kind_index(dt::device_kind kind, int index) {
    const bool valid = index >= 0 && (kind == dt::device_kind::cuda || index == 0);
    try {
        const dt::device d(kind, index);
        FUZZ_CHECK(valid, "device(%s, %d) was accepted", dt::kind_name(kind).data(), index);
        FUZZ_CHECK(d.kind() == kind && d.index() == index, "device(%s, %d) holds %s",
                   dt::kind_name(kind).data(), index, canonical(d).c_str());
        check_round_trip(d, "device(kind, index)");
    } catch (const dt::invalid_device& e) {
        FUZZ_CHECK(!valid, "device(%s, %d) threw invalid_device: %s", dt::kind_name(kind).data(),
                   index, e.what());
        FUZZ_CHECK(fuzz::contains(e.what(), std::to_string(index)),
                   "invalid_device message does not name the index %d: %s", index, e.what());
    } catch (const std::exception& e) {
        FUZZ_CHECK(false, "device(%s, %d) threw %s: %s", dt::kind_name(kind).data(), index,
                   typeid(e).name(), e.what());
    }
    if (index >= 0) {
        // The static devices convert to device without a check: they must agree.
        const dt::cuda_device gpu{index};
        FUZZ_CHECK(dt::to_string(gpu) == "cuda:" + std::to_string(index),
                   "to_string(cuda_device{%d}) gave '%s'", index, dt::to_string(gpu).c_str());
        check_round_trip(dt::device(gpu), "cuda_device{index}");
    }
    FUZZ_CHECK(dt::to_string(dt::cpu_device{}) == "cpu", "to_string(cpu_device{}) is not \"cpu\"");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    check_string(std::string_view(reinterpret_cast<const char*>(data), size));
    fuzz::reader in(data, size);
    const auto kind = (in.byte() & 1) ? dt::device_kind::cuda : dt::device_kind::cpu;
    check_kind_index(kind, in.raw<std::int32_t>());
    return 0;
}
