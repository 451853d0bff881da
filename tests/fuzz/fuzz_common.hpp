// Shared by the libFuzzer targets in tests/fuzz: a byte reader with a fixed,
// documented decoding (so hand-written corpus seeds mean something), and
// FUZZ_CHECK, which turns a violated invariant into a libFuzzer crash whose
// first line names the invariant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

/// Aborts the run (a libFuzzer crash, with the input saved) when `cond` is false.
#define FUZZ_CHECK(cond, ...)                                                         \
    do {                                                                              \
        if (!(cond)) {                                                                \
            std::fprintf(stderr, "\nINVARIANT VIOLATED (%s:%d): %s\n  ", __FILE__,  \
                         __LINE__, #cond);                                            \
            std::fprintf(stderr, __VA_ARGS__);                                        \
            std::fprintf(stderr, "\n");                                               \
            __builtin_trap();                                                         \
        }                                                                             \
    } while (0)

namespace fuzz {

/// Reads the fuzzer's bytes front to back; past the end every read yields zeros,
/// so any input decodes to something.
class reader {
public:
    reader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

    bool empty() const noexcept { return pos_ >= size_; }
    std::size_t left() const noexcept { return pos_ < size_ ? size_ - pos_ : 0; }

    std::uint8_t byte() noexcept { return pos_ < size_ ? data_[pos_++] : 0; }

    /// `sizeof(T)` bytes, little-endian, zero-padded at the end of the input.
    template <class T>
    T raw() noexcept {
        unsigned char bytes[sizeof(T)] = {};
        for (auto& b : bytes) b = byte();
        T value;
        std::memcpy(&value, bytes, sizeof(T));
        return value;
    }

private:
    const std::uint8_t* data_;
    std::size_t size_;
    std::size_t pos_ = 0;
};

/// "[2, 3]" from any range of integers: the reference spelling of a shape.
template <class R>
std::string dims_string(const R& dims) {
    std::string s = "[";
    bool first = true;
    for (const auto d : dims) {
        if (!first) s += ", ";
        first = false;
        s += std::to_string(d);
    }
    return s + "]";
}

/// Whether `what` contains `needle`.
inline bool contains(const std::string& what, const std::string& needle) {
    return what.find(needle) != std::string::npos;
}

}  // namespace fuzz
