// nn::save / nn::load and optim::save / optim::load: a module's parameters and an
// optimizer's state in the safetensors format (github.com/huggingface/safetensors),
// named as PyTorch's state_dict names them ("0.weight", "state.0.exp_avg"), so that
// PyTorch and the safetensors package read and write the same files.
//
// A file is 8 bytes, the little-endian length N of the header; N bytes of JSON,
//   {"__metadata__": {"format": "pt"}, "0.weight": {"dtype": "F32", "shape": [4, 3],
//    "data_offsets": [0, 48]}, ...}
// padded with spaces to a multiple of 8; then the tensors' bytes, little-endian and
// row-major, at those offsets from the start of the data. The data has no holes and
// no overlaps, and ends where the last tensor does.
//
// The reader takes untrusted files: every length, offset and size is checked (for
// overflow too) before it is used, and a bad file is a devtensor::error naming the
// file and, for a malformed header, the byte where it went wrong; never a crash.
#pragma once

// tensor.hpp first: it includes the autograd and engine headers in the order they need
// (graph.hpp, module.hpp and the optimizers do not compile on their own before it).
#include <devtensor/tensor.hpp>
#include <devtensor/autograd/graph.hpp>   // no_grad, note_write
#include <devtensor/config.hpp>           // detail::tu_tag
#include <devtensor/detail/convert.hpp>   // copy_element
#include <devtensor/detail/copy.hpp>      // copy_bytes
#include <devtensor/device.hpp>
#include <devtensor/error.hpp>
#include <devtensor/nn/module.hpp>
#include <devtensor/ops/elementwise.hpp>  // map_out: the copy into a non-contiguous parameter
#include <devtensor/optim/adam.hpp>
#include <devtensor/optim/sgd.hpp>
#include <devtensor/origin.hpp>           // call_site
#include <devtensor/shape.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace devtensor::detail::safetensors {

/// The longest header read (the reference implementation's limit): a longer length
/// is refused before anything is allocated for it.
inline constexpr std::uint64_t max_header_bytes = 100'000'000;

/// The format's name of element type T: "F32", "I64", "BOOL", ...
template <class T>
consteval const char* dtype_code() {
    static_assert(sizeof(bool) == 1, "devtensor safetensors: BOOL is stored as one byte per element");
    if constexpr (std::is_same_v<T, bool>) return "BOOL";
    else if constexpr (std::is_floating_point_v<T>) return sizeof(T) == 4 ? "F32" : "F64";
    else if constexpr (std::is_signed_v<T>)
        return sizeof(T) == 1 ? "I8" : sizeof(T) == 2 ? "I16" : sizeof(T) == 4 ? "I32" : "I64";
    else return sizeof(T) == 1 ? "U8" : sizeof(T) == 2 ? "U16" : sizeof(T) == 4 ? "U32" : "U64";
}

/// Bytes per element of a dtype the format defines; 0 for any other name.
inline std::uint64_t dtype_size(std::string_view code) noexcept {
    static constexpr std::pair<std::string_view, std::uint64_t> sizes[] = {
        {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1},
        {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},     {"U32", 4},
        {"F32", 4},  {"F64", 8}, {"I64", 8}, {"U64", 8},     {"C64", 8}};
    for (const auto& [name, size] : sizes)
        if (name == code) return size;
    return 0;
}

/// One tensor as the header describes it.
struct entry {
    std::string name;
    std::string dtype;
    std::vector<std::uint64_t> shape;
    std::uint64_t begin = 0, end = 0;  ///< data_offsets, from the start of the data
};

/// A file's header: its tensors in the file's order, its metadata, where the data starts.
struct header {
    std::vector<entry> tensors;
    std::vector<std::pair<std::string, std::string>> metadata;
    std::unordered_map<std::string, std::size_t> index;  ///< name -> position in tensors
    std::uint64_t data_start = 0;                        ///< 8 + N

    const entry* find(const std::string& name) const {
        const auto it = index.find(name);
        return it == index.end() ? nullptr : &tensors[it->second];
    }
    const std::string* meta(std::string_view key) const {
        for (const auto& [k, v] : metadata)
            if (k == key) return &v;
        return nullptr;
    }
};

/// "[4, 3]"
inline std::string shape_string(const std::vector<std::uint64_t>& dims) {
    std::string s = "[";
    for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
    return s + "]";
}

/// `text` quoted for a message: 'name', with control characters and non-ASCII bytes as \xNN.
inline std::string in_quotes(std::string_view text) {
    std::string s = "'";
    for (const char c : text) {
        const auto b = static_cast<unsigned char>(c);
        if (b >= 0x20 && b < 0x7f) {
            s += c;
        } else {
            static constexpr char hex[] = "0123456789abcdef";
            s += "\\x";
            s += hex[b >> 4];
            s += hex[b & 15];
        }
    }
    return s + "'";
}

/// The length of the UTF-8 sequence at text[i] (0 when it is not a valid one: a stray
/// continuation byte, an overlong form, a surrogate, past U+10FFFF, or cut short).
inline std::size_t utf8_sequence(std::string_view text, std::size_t i) noexcept {
    const auto at = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char b = at(i);
    if (b < 0x80) return 1;
    std::size_t n = 0;
    unsigned char lo = 0x80, hi = 0xbf;  // the range of the second byte
    if (b >= 0xc2 && b <= 0xdf) n = 2;
    else if (b == 0xe0) n = 3, lo = 0xa0;
    else if (b == 0xed) n = 3, hi = 0x9f;
    else if (b >= 0xe1 && b <= 0xef) n = 3;
    else if (b == 0xf0) n = 4, lo = 0x90;
    else if (b == 0xf4) n = 4, hi = 0x8f;
    else if (b >= 0xf1 && b <= 0xf3) n = 4;
    else return 0;
    if (text.size() - i < n) return 0;
    if (at(i + 1) < lo || at(i + 1) > hi) return 0;
    for (std::size_t k = 2; k < n; ++k)
        if (at(i + k) < 0x80 || at(i + k) > 0xbf) return 0;
    return n;
}

/// a·b, or nothing when it overflows 64 bits.
inline std::optional<std::uint64_t> checked_mul(std::uint64_t a, std::uint64_t b) noexcept {
    if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) return std::nullopt;
    return a * b;
}

/// The JSON a safetensors header is, and nothing more: an object whose values are
/// tensor descriptions (dtype, shape, data_offsets) or, under "__metadata__", an
/// object of strings. Anything else is refused with the byte where it went wrong.
class header_parser {
public:
    /// `where` starts each message ("devtensor::nn::load: 'model.safetensors'").
    header_parser(std::string_view text, const std::string& where) : text_(text), where_(where) {}

    header parse() {
        header h;
        if (text_.empty() || text_[0] != '{')
            fail(0, "the header must be a JSON object starting with '{', found " + found(0));
        pos_ = 1;
        bool have_metadata = false, first = true;
        for (;;) {
            skip_space();
            if (first && peek("a key or '}'") == '}') {
                ++pos_;
                break;
            }
            first = false;
            const std::size_t key_at = pos_;
            std::string key = string("a tensor name in quotes");
            skip_space();
            expect(':', "after a key");
            skip_space();
            if (key == "__metadata__") {
                if (have_metadata) fail(key_at, "__metadata__ appears twice");
                have_metadata = true;
                h.metadata = metadata();
            } else {
                if (h.index.count(key) != 0) fail(key_at, "the tensor " + in_quotes(key) + " appears twice");
                h.index.emplace(key, h.tensors.size());
                h.tensors.push_back(tensor_info(std::move(key), key_at));
            }
            skip_space();
            if (peek("',' or '}'") == ',') {
                ++pos_;
                continue;
            }
            expect('}', "after a value (or ',')");
            break;
        }
        for (; pos_ < text_.size(); ++pos_)
            if (!is_space(text_[pos_])) fail(pos_, "only spaces may follow the header's object, found " + found(pos_));
        return h;
    }

private:
    static bool is_space(char c) noexcept { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

    [[noreturn]] void fail(std::size_t at, const std::string& what) const {
        throw error(where_ + ": malformed safetensors header at byte " + std::to_string(8 + at) +
                    " of the file: " + what);
    }
    /// What lies at `at`, for a message: 'x', byte 0x9f, or the end of the header.
    std::string found(std::size_t at) const {
        if (at >= text_.size()) return "the end of the header";
        const auto b = static_cast<unsigned char>(text_[at]);
        if (b >= 0x20 && b < 0x7f) return std::string("'") + text_[at] + "'";
        static constexpr char hex[] = "0123456789abcdef";
        return std::string("byte 0x") + hex[b >> 4] + hex[b & 15];
    }

    void skip_space() noexcept {
        while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
    }
    /// The next character; the end of the header is an error while `wanted` is expected.
    char peek(const char* wanted) const {
        if (pos_ >= text_.size()) fail(pos_, std::string("expected ") + wanted + ", found the end of the header");
        return text_[pos_];
    }
    void expect(char c, const char* context) {
        if (pos_ >= text_.size() || text_[pos_] != c)
            fail(pos_, std::string("expected '") + c + "' " + context + ", found " + found(pos_));
        ++pos_;
    }

    unsigned hex4(std::size_t at) const {
        unsigned v = 0;
        for (std::size_t k = 0; k < 4; ++k) {
            if (at + k >= text_.size()) fail(at + k, "a \\u escape needs four hex digits, found the end of the header");
            const char c = text_[at + k];
            unsigned d = 0;
            if (c >= '0' && c <= '9') d = static_cast<unsigned>(c - '0');
            else if (c >= 'a' && c <= 'f') d = static_cast<unsigned>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') d = static_cast<unsigned>(c - 'A' + 10);
            else fail(at + k, "a \\u escape needs four hex digits, found " + found(at + k));
            v = v * 16 + d;
        }
        return v;
    }
    static void append_utf8(std::string& s, unsigned cp) {
        const auto put = [&](unsigned v) { s += static_cast<char>(static_cast<unsigned char>(v)); };
        if (cp < 0x80) {
            put(cp);
        } else if (cp < 0x800) {
            put(0xc0 | (cp >> 6)), put(0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
            put(0xe0 | (cp >> 12)), put(0x80 | ((cp >> 6) & 0x3f)), put(0x80 | (cp & 0x3f));
        } else {
            put(0xf0 | (cp >> 18)), put(0x80 | ((cp >> 12) & 0x3f)), put(0x80 | ((cp >> 6) & 0x3f)),
                put(0x80 | (cp & 0x3f));
        }
    }

    /// A JSON string: escapes decoded, raw control characters and invalid UTF-8 refused.
    std::string string(const char* wanted) {
        if (pos_ >= text_.size() || text_[pos_] != '"')
            fail(pos_, std::string("expected ") + wanted + ", found " + found(pos_));
        const std::size_t start = pos_++;
        std::string s;
        for (;;) {
            if (pos_ >= text_.size()) fail(start, "a string that never ends");
            const char c = text_[pos_];
            if (c == '"') {
                ++pos_;
                return s;
            }
            if (static_cast<unsigned char>(c) < 0x20)
                fail(pos_, "a control character (" + found(pos_) + ") inside a string; JSON writes it as an escape");
            if (c != '\\') {
                const std::size_t n = utf8_sequence(text_, pos_);
                if (n == 0) fail(pos_, "invalid UTF-8 (" + found(pos_) + ") inside a string");
                s.append(text_.substr(pos_, n));
                pos_ += n;
                continue;
            }
            if (pos_ + 1 >= text_.size()) fail(start, "a string that never ends");
            const char e = text_[pos_ + 1];
            switch (e) {
                case '"': s += '"'; break;
                case '\\': s += '\\'; break;
                case '/': s += '/'; break;
                case 'b': s += '\b'; break;
                case 'f': s += '\f'; break;
                case 'n': s += '\n'; break;
                case 'r': s += '\r'; break;
                case 't': s += '\t'; break;
                case 'u': {
                    const std::size_t at = pos_;
                    unsigned cp = hex4(pos_ + 2);
                    if (cp >= 0xdc00 && cp <= 0xdfff) fail(at, "a \\u escape of a lone low surrogate");
                    if (cp >= 0xd800 && cp <= 0xdbff) {  // a high surrogate: its low half must follow
                        if (pos_ + 7 >= text_.size() || text_[pos_ + 6] != '\\' || text_[pos_ + 7] != 'u')
                            fail(at, "a \\u escape of a high surrogate without its low surrogate");
                        const unsigned low = hex4(pos_ + 8);
                        if (low < 0xdc00 || low > 0xdfff)
                            fail(at, "a \\u escape of a high surrogate without its low surrogate");
                        cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
                        pos_ += 6;
                    }
                    append_utf8(s, cp);
                    pos_ += 4;
                    break;
                }
                default: fail(pos_, "an unknown escape \\" + std::string(found(pos_ + 1)));
            }
            pos_ += 2;
        }
    }

    /// A non-negative integer that fits 64 bits (a size or an offset); a sign, a fraction
    /// or an exponent is refused.
    std::uint64_t integer() {
        const std::size_t start = pos_;
        if (peek("a non-negative integer") == '-') fail(start, "a negative number where a size or an offset belongs");
        if (text_[pos_] < '0' || text_[pos_] > '9') fail(start, "expected a non-negative integer, found " + found(start));
        if (text_[pos_] == '0' && pos_ + 1 < text_.size() && text_[pos_ + 1] >= '0' && text_[pos_ + 1] <= '9')
            fail(start, "a number with a leading zero");
        std::uint64_t v = 0;
        while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
            const auto d = static_cast<std::uint64_t>(text_[pos_] - '0');
            if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) fail(start, "a number too large for 64 bits");
            v = v * 10 + d;
            ++pos_;
        }
        if (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E'))
            fail(start, "a number that is not an integer where a size or an offset belongs");
        return v;
    }
    std::vector<std::uint64_t> integers(const char* what) {
        if (pos_ >= text_.size() || text_[pos_] != '[')
            fail(pos_, std::string("expected '[' to start ") + what + ", found " + found(pos_));
        ++pos_;
        std::vector<std::uint64_t> values;
        skip_space();
        if (peek("an integer or ']'") == ']') {
            ++pos_;
            return values;
        }
        for (;;) {
            skip_space();
            values.push_back(integer());
            skip_space();
            if (peek("',' or ']'") == ',') {
                ++pos_;
                continue;
            }
            expect(']', (std::string("to end ") + what).c_str());
            return values;
        }
    }

    /// {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, each field once.
    entry tensor_info(std::string name, std::size_t name_at) {
        entry e;
        e.name = std::move(name);
        if (pos_ >= text_.size() || text_[pos_] != '{')
            fail(pos_, "expected '{' to start the description of tensor " + in_quotes(e.name) + ", found " + found(pos_));
        ++pos_;
        bool has_dtype = false, has_shape = false, has_offsets = false;
        skip_space();
        if (peek("a field or '}'") == '}') {
            ++pos_;
        } else {
            for (;;) {
                skip_space();
                const std::size_t field_at = pos_;
                const std::string field = string("a field name in quotes");
                skip_space();
                expect(':', "after a field name");
                skip_space();
                const auto once = [&](bool& seen) {
                    if (seen) fail(field_at, "the field " + in_quotes(field) + " of tensor " + in_quotes(e.name) + " appears twice");
                    seen = true;
                };
                if (field == "dtype") {
                    once(has_dtype);
                    e.dtype = string("a dtype in quotes");
                } else if (field == "shape") {
                    once(has_shape);
                    e.shape = integers("a shape");
                } else if (field == "data_offsets") {
                    once(has_offsets);
                    const std::size_t at = pos_;
                    const std::vector<std::uint64_t> offsets = integers("data_offsets");
                    if (offsets.size() != 2)
                        fail(at, "the data_offsets of tensor " + in_quotes(e.name) + " must be [begin, end], found " +
                                     std::to_string(offsets.size()) + " numbers");
                    e.begin = offsets[0];
                    e.end = offsets[1];
                } else {
                    fail(field_at, "an unknown field " + in_quotes(field) + " in tensor " + in_quotes(e.name) +
                                       " (a tensor has dtype, shape and data_offsets)");
                }
                skip_space();
                if (peek("',' or '}'") == ',') {
                    ++pos_;
                    continue;
                }
                expect('}', "after a field (or ',')");
                break;
            }
        }
        const char* missing = !has_dtype ? "dtype" : !has_shape ? "shape" : !has_offsets ? "data_offsets" : nullptr;
        if (missing) fail(name_at, "the tensor " + in_quotes(e.name) + " has no " + missing);
        return e;
    }

    /// {"key": "value", ...}: strings only, each key once.
    std::vector<std::pair<std::string, std::string>> metadata() {
        if (pos_ >= text_.size() || text_[pos_] != '{')
            fail(pos_, "expected '{' to start __metadata__, found " + found(pos_));
        ++pos_;
        std::vector<std::pair<std::string, std::string>> pairs;
        std::unordered_set<std::string> keys;  // hashed: a hostile header may hold millions
        skip_space();
        if (peek("a key or '}'") == '}') {
            ++pos_;
            return pairs;
        }
        for (;;) {
            skip_space();
            const std::size_t key_at = pos_;
            std::string key = string("a metadata key in quotes");
            if (!keys.insert(key).second) fail(key_at, "the metadata key " + in_quotes(key) + " appears twice");
            skip_space();
            expect(':', "after a key");
            skip_space();
            std::string value = string("a string (metadata values are strings)");
            pairs.emplace_back(std::move(key), std::move(value));
            skip_space();
            if (peek("',' or '}'") == ',') {
                ++pos_;
                continue;
            }
            expect('}', "after a metadata value (or ',')");
            return pairs;
        }
    }

    std::string_view text_;
    const std::string& where_;
    std::size_t pos_ = 0;
};

/// Checks what the format promises about the data: known dtypes, offsets inside the
/// data, each tensor's byte count equal to its shape's, and the tensors tiling the
/// data with no overlap, no hole and nothing after the last.
inline void check_layout(const header& h, std::uint64_t data_size, const std::string& where) {
    const auto bad = [&](const std::string& what) { throw error(where + ": " + what); };
    for (const entry& e : h.tensors) {
        const std::uint64_t size = dtype_size(e.dtype);
        if (size == 0) bad("the tensor " + in_quotes(e.name) + " has dtype " + in_quotes(e.dtype) + ", which is not a safetensors dtype");
        std::optional<std::uint64_t> bytes = size;
        for (const std::uint64_t d : e.shape)
            if (bytes) bytes = checked_mul(*bytes, d);
        if (std::find(e.shape.begin(), e.shape.end(), std::uint64_t{0}) != e.shape.end()) bytes = 0;  // empty, however large the rest
        if (!bytes) bad("the shape " + shape_string(e.shape) + " of tensor " + in_quotes(e.name) + " holds more than 2^64 bytes");
        const std::string offsets = "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "]";
        if (e.begin > e.end) bad("the tensor " + in_quotes(e.name) + " has " + offsets + ", which end before they begin");
        if (e.end > data_size)
            bad("the tensor " + in_quotes(e.name) + " has " + offsets + ", past the end of the data, which holds " +
                std::to_string(data_size) + " bytes (a truncated file?)");
        if (e.end - e.begin != *bytes)
            bad("the tensor " + in_quotes(e.name) + " (" + e.dtype + ", shape " + shape_string(e.shape) + ") needs " +
                std::to_string(*bytes) + " bytes, but its " + offsets + " span " + std::to_string(e.end - e.begin));
    }
    std::vector<const entry*> order;
    order.reserve(h.tensors.size());
    for (const entry& e : h.tensors) order.push_back(&e);
    std::sort(order.begin(), order.end(), [](const entry* a, const entry* b) {
        return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
    });
    std::uint64_t covered = 0;
    const entry* previous = nullptr;
    const auto span = [](const entry& e) {
        return in_quotes(e.name) + " [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "]";
    };
    for (const entry* e : order) {
        if (e->begin < covered)
            bad("the data of tensors " + span(*previous) + " and " + span(*e) + " overlap");
        if (e->begin > covered)
            bad("the data has a hole of " + std::to_string(e->begin - covered) + " bytes before tensor " + span(*e) +
                " (every byte of the data must belong to a tensor)");
        covered = e->end;
        previous = e;
    }
    if (covered != data_size)
        bad("the data holds " + std::to_string(data_size) + " bytes, but its tensors end at byte " +
            std::to_string(covered) + " (every byte of the data must belong to a tensor)");
}

/// Bytes of `count` elements of `size` bytes between the host's order and little-endian.
inline void to_little_endian(void* bytes, std::uint64_t count, std::size_t size) noexcept {
    if constexpr (std::endian::native != std::endian::little) {
        auto* p = static_cast<unsigned char*>(bytes);
        for (std::uint64_t i = 0; i < count; ++i, p += size) std::reverse(p, p + size);
    } else {
        (void)bytes, (void)count, (void)size;
    }
}

/// A safetensors file opened for reading: the header parsed and checked at once,
/// each tensor's bytes read on demand.
class file_reader {
public:
    /// `op` names the caller in messages ("devtensor::nn::load").
    file_reader(const std::string& path, const char* op) : where_(std::string(op) + ": " + in_quotes(path)) {
        std::error_code ec;
        if (std::filesystem::is_directory(path, ec)) throw error(where_ + ": is a directory, not a safetensors file");
        const std::uintmax_t size = std::filesystem::file_size(path, ec);
        if (ec) throw error(where_ + ": cannot read the file: " + ec.message());
        in_.open(path, std::ios::binary);
        if (!in_) throw error(where_ + ": cannot open the file: " + std::strerror(errno));
        if (size < 8)
            throw error(where_ + ": the file holds " + std::to_string(size) +
                        " bytes; a safetensors file starts with an 8-byte header length (a truncated file?)");
        unsigned char length[8];
        read_at(0, length, 8, "the header length");
        std::uint64_t n = 0;
        for (int i = 7; i >= 0; --i) n = n << 8 | length[i];
        const std::uint64_t rest = size - 8;
        if (n > rest)
            throw error(where_ + ": the header length " + std::to_string(n) + " reaches past the end of the file, which holds " +
                        std::to_string(size) + " bytes (a truncated file, or not a safetensors file)");
        if (n > max_header_bytes)
            throw error(where_ + ": the header length " + std::to_string(n) + " is over the limit of " +
                        std::to_string(max_header_bytes) + " bytes");
        if (n == 0) throw error(where_ + ": the header is empty (length 0); it must be a JSON object");
        std::string text(static_cast<std::size_t>(n), '\0');
        read_at(8, text.data(), n, "the header");
        header_ = header_parser(text, where_).parse();
        header_.data_start = 8 + n;
        check_layout(header_, rest - n, where_);
    }

    const header& head() const noexcept { return header_; }
    /// "devtensor::nn::load: 'model.safetensors'", how messages start.
    const std::string& where() const noexcept { return where_; }

    /// The elements of `e`, whose dtype is T's (checked before), in host order.
    template <class T>
    std::unique_ptr<T[]> values(const entry& e) {
        const std::uint64_t bytes = e.end - e.begin;
        const std::uint64_t count = bytes / sizeof(T);
        auto result = std::make_unique<T[]>(static_cast<std::size_t>(count));
        if constexpr (std::is_same_v<T, bool>) {  // a byte other than 0 or 1 is no bool
            const auto raw = std::make_unique<unsigned char[]>(static_cast<std::size_t>(count));
            read_at(header_.data_start + e.begin, raw.get(), bytes, in_quotes(e.name).c_str());
            for (std::uint64_t i = 0; i < count; ++i) {
                if (raw[i] > 1)
                    throw error(where_ + ": element " + std::to_string(i) + " of the BOOL tensor " + in_quotes(e.name) +
                                " is " + std::to_string(raw[i]) + ", not 0 or 1");
                result[i] = raw[i] != 0;
            }
        } else {
            read_at(header_.data_start + e.begin, result.get(), bytes, in_quotes(e.name).c_str());
            to_little_endian(result.get(), count, sizeof(T));
        }
        return result;
    }

private:
    void read_at(std::uint64_t offset, void* dst, std::uint64_t bytes, const char* what) {
        if (bytes == 0) return;
        in_.seekg(static_cast<std::streamoff>(offset));
        in_.read(static_cast<char*>(dst), static_cast<std::streamsize>(bytes));
        if (!in_ || static_cast<std::uint64_t>(in_.gcount()) != bytes)
            throw error(where_ + ": the file ended early while reading " + what +
                        " (was it changed while being read?)");
    }

    std::string where_;
    std::ifstream in_;
    header header_;
};

/// A tensor to write: its description, and what writes its bytes (little-endian).
struct out_entry {
    std::string name;
    const char* dtype;
    std::vector<std::uint64_t> shape;
    std::uint64_t bytes;
    std::function<void(std::ostream&)> write;
};

/// `t` as an out_entry: its elements copied to the host, row-major, when written.
template <class T, class D>
out_entry out_entry_of(std::string name, const tensor<T, D>& t, const std::string& where, const char* op,
                       call_site site) {
    if (!t.defined()) throw error(where + ": the tensor " + in_quotes(name) + " is undefined; there is nothing to save");
    std::vector<std::uint64_t> dims;
    for (const std::int64_t d : t.shape()) dims.push_back(static_cast<std::uint64_t>(d));
    const auto count = static_cast<std::size_t>(t.numel());
    const transfer_request why{op, site, true, t.origin()};
    return {std::move(name), dtype_code<T>(), std::move(dims), count * sizeof(T), [t, count, why](std::ostream& out) {
                const auto host = std::make_unique<T[]>(count);
                read_elements(t, host.get(), why);
                to_little_endian(host.get(), count, sizeof(T));
                out.write(reinterpret_cast<const char*>(host.get()), static_cast<std::streamsize>(count * sizeof(T)));
            }};
}

/// `s` as a JSON string.
inline void append_json_string(std::string& json, std::string_view s) {
    json += '"';
    for (const char c : s) {
        const auto b = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            json += '\\';
            json += c;
        } else if (b < 0x20) {
            static constexpr char hex[] = "0123456789abcdef";
            json += "\\u00";
            json += hex[b >> 4];
            json += hex[b & 15];
        } else {
            json += c;
        }
    }
    json += '"';
}

/// Writes `tensors` (data in their order) and `metadata` to `path`.
inline void write_file(const std::string& path, const std::vector<out_entry>& tensors,
                       const std::vector<std::pair<std::string, std::string>>& metadata, const char* op) {
    const std::string where = std::string(op) + ": " + in_quotes(path);
    const auto valid_utf8 = [](std::string_view s) {
        for (std::size_t i = 0; i < s.size();) {
            const std::size_t n = utf8_sequence(s, i);
            if (n == 0) return false;
            i += n;
        }
        return true;
    };
    std::string json = "{";
    if (!metadata.empty()) {
        json += "\"__metadata__\":{";
        for (std::size_t i = 0; i < metadata.size(); ++i) {
            if (i) json += ',';
            append_json_string(json, metadata[i].first);
            json += ':';
            append_json_string(json, metadata[i].second);
        }
        json += '}';
    }
    std::unordered_map<std::string_view, int> seen;
    std::uint64_t offset = 0;
    for (const out_entry& t : tensors) {
        if (t.name == "__metadata__") throw error(where + ": a tensor may not be named '__metadata__' (the format reserves it)");
        if (!valid_utf8(t.name)) throw error(where + ": the tensor name " + in_quotes(t.name) + " is not valid UTF-8");
        if (!seen.emplace(t.name, 0).second) throw error(where + ": two tensors are named " + in_quotes(t.name));
        if (json.size() > 1) json += ',';
        append_json_string(json, t.name);
        json += ":{\"dtype\":\"";
        json += t.dtype;
        json += "\",\"shape\":[";
        for (std::size_t i = 0; i < t.shape.size(); ++i) {  // (not "," + to_string(): GCC 12 -O2 warns falsely)
            if (i > 0) json += ',';
            json += std::to_string(t.shape[i]);
        }
        json += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + t.bytes) + "]}";
        offset += t.bytes;
    }
    json += '}';
    json.append((8 - json.size() % 8) % 8, ' ');  // the data starts 8-byte aligned, as the reference writes it

    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) throw error(where + ": cannot create the file: " + std::strerror(errno));
    unsigned char length[8];
    for (std::size_t i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(json.size() >> (8 * i));
    out.write(reinterpret_cast<const char*>(length), 8);
    out.write(json.data(), static_cast<std::streamsize>(json.size()));
    for (const out_entry& t : tensors) {
        if (t.bytes != 0) t.write(out);
        if (!out) break;
    }
    out.flush();
    if (!out) throw error(where + ": writing the file failed: " + std::strerror(errno));
    out.close();
    if (!out) throw error(where + ": closing the file failed: " + std::strerror(errno));
}

/// What keeps a file from fitting a module or an optimizer, collected so that one
/// message lists it all (as torch's load_state_dict does).
class mismatches {
public:
    void missing(const std::string& name) { missing_.push_back(in_quotes(name)); }
    void unexpected(const std::string& name) { unexpected_.push_back(in_quotes(name)); }
    void wrong(std::string what, bool shape) {
        wrong_.push_back(std::move(what));
        shapes_only_ = shapes_only_ && shape;
    }
    /// The dtype and shape of `e` against what the receiver holds.
    void compare(const entry& e, const char* dtype, const devtensor::shape& s, const char* receiver) {
        if (e.dtype != dtype)
            wrong(in_quotes(e.name) + " has dtype " + e.dtype + " in the file but " + dtype + " in the " + receiver, false);
        bool same = e.shape.size() == s.rank();
        for (std::size_t i = 0; same && i < s.rank(); ++i) same = e.shape[i] == static_cast<std::uint64_t>(s[i]);
        if (!same)
            wrong(in_quotes(e.name) + " has shape " + shape_string(e.shape) + " in the file but " + s.to_string() +
                      " in the " + receiver,
                  true);
    }
    /// One error listing every problem (shape_error when all are shapes); nothing when none.
    void throw_if_any(const std::string& where, const char* receiver) const {
        if (missing_.empty() && unexpected_.empty() && wrong_.empty()) return;
        std::string message = where + " does not fit the " + receiver;
        if (!missing_.empty()) message += "; missing from the file: " + list(missing_);
        if (!unexpected_.empty()) message += "; unexpected in the file (the " + std::string(receiver) + " has no such tensor): " + list(unexpected_);
        for (const std::string& w : wrong_) message += "; " + w;
        if (missing_.empty() && unexpected_.empty() && shapes_only_) throw shape_error(message);
        throw error(message);
    }

private:
    static std::string list(const std::vector<std::string>& names) {
        constexpr std::size_t shown = 20;
        std::string s;
        for (std::size_t i = 0; i < names.size() && i < shown; ++i) s += (i ? ", " : "") + names[i];
        if (names.size() > shown) s += " and " + std::to_string(names.size() - shown) + " more";
        return s;
    }
    std::vector<std::string> missing_, unexpected_, wrong_;
    bool shapes_only_ = true;
};

/// Copies `n` host elements into `p` where it lives, in place (under no_grad): one copy
/// into a contiguous parameter, else staged on its device and copied over by the
/// elementwise engine (which, for a GPU, needs an nvcc-compiled file).
template <class Tu, class T, class D>
void copy_into(const tensor<T, D>& p, const T* host, const char* op, call_site site) {
    const std::size_t bytes = sizeof(T) * static_cast<std::size_t>(p.numel());
    if (p.is_contiguous()) {
        note_write(op, p);
        copy_bytes(p.data(), device(p.device()), host, device(), bytes, {op, site, true, p.origin()});
    } else {
        tensor<T, D> staged(p.shape(), p.device(), origin{op, site});
        copy_bytes(staged.data(), device(p.device()), host, device(), bytes, {op, site, true});
        map_out(op, copy_element{}, p, staged);
    }
}

/// A new tensor shaped as `like`, on its device, holding `host`'s elements.
template <class T, class D>
tensor<T, D> tensor_like(const tensor<T, D>& like, const T* host, const char* op, call_site site) {
    tensor<T, D> t(like.shape(), like.device(), origin{op, site});
    copy_bytes(t.data(), device(t.device()), host, device(), sizeof(T) * static_cast<std::size_t>(t.numel()),
               {op, site, true});
    return t;
}

/// "state.<i>.<key>" split into i and key; nothing for another form, or i >= count.
inline std::optional<std::pair<std::size_t, std::string_view>> state_name(std::string_view name, std::size_t count) {
    constexpr std::string_view prefix = "state.";
    if (name.substr(0, prefix.size()) != prefix) return std::nullopt;
    name.remove_prefix(prefix.size());
    const std::size_t dot = name.find('.');
    if (dot == 0 || dot == std::string_view::npos || (name[0] == '0' && dot > 1)) return std::nullopt;
    std::size_t i = 0;
    const auto [end, ec] = std::from_chars(name.data(), name.data() + dot, i);
    if (ec != std::errc{} || end != name.data() + dot || i >= count) return std::nullopt;
    return std::pair{i, name.substr(dot + 1)};
}

/// A double as the shortest text that reads back the same.
inline std::string number(double v) {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    return ec == std::errc{} ? std::string(buf, end) : std::to_string(v);
}

/// The optimizer named by the file's metadata must be this one (a file without the
/// key, from another writer, is taken as it is).
inline void check_optimizer(const file_reader& file, const char* kind) {
    if (const std::string* saved = file.head().meta("optimizer"); saved && *saved != kind)
        throw error(file.where() + ": holds the state of optim::" + *saved + ", not of optim::" + kind);
}

}  // namespace devtensor::detail::safetensors

namespace devtensor::nn {

/// Writes the module's parameters to `path` as a safetensors file, named as PyTorch's
/// state_dict names them ("0.weight", "0.bias", ...), with the metadata
/// {"format": "pt"} that PyTorch-side loaders look for. Parameters on a GPU are copied
/// to the host (explicit copies, for the transfer guard). A file already there is replaced.
template <Module M>
void save(const M& module, const std::string& path, call_site site = call_site::current()) {
    static_assert(requires { module.named_parameters(); },
                  "devtensor::nn::save: the module has no named_parameters(); give it one returning "
                  "std::vector<std::pair<std::string, tensor<T, device>>> with state_dict names");
    namespace st = detail::safetensors;
    const std::string where = "devtensor::nn::save: " + st::in_quotes(path);
    std::vector<st::out_entry> tensors;
    for (const auto& [name, p] : module.named_parameters())
        tensors.push_back(st::out_entry_of(name, p, where, "nn::save", site));
    st::write_file(path, tensors, {{"format", "pt"}}, "devtensor::nn::save");
}

/// Reads the parameters in the safetensors file at `path` into the module, in place,
/// wherever each parameter lives: the handles, requires_grad and gradients stay as
/// they are (as torch's load_state_dict). Strict, as torch's strict=True: every
/// parameter must be in the file, the file may hold nothing else, and each tensor's
/// dtype and shape must equal its parameter's; a file that does not fit throws one
/// error listing every difference (shape_error when all are shapes), before anything
/// is written. A malformed file throws devtensor::error naming the file and what is
/// wrong with it.
template <Module M, class Tu = detail::tu_tag>
void load(M& module, const std::string& path, call_site site = call_site::current()) {
    static_assert(requires { module.named_parameters(); },
                  "devtensor::nn::load: the module has no named_parameters(); give it one returning "
                  "std::vector<std::pair<std::string, tensor<T, device>>> with state_dict names");
    namespace st = detail::safetensors;
    st::file_reader file(path, "devtensor::nn::load");
    const auto params = module.named_parameters();
    st::mismatches problems;
    std::vector<const st::entry*> entries;
    std::unordered_map<std::string_view, int> known;
    for (const auto& [name, p] : params) {
        using T = typename std::remove_cvref_t<decltype(p)>::value_type;
        known.emplace(name, 0);
        const st::entry* e = file.head().find(name);
        entries.push_back(e);
        if (!e) problems.missing(name);
        else problems.compare(*e, st::dtype_code<T>(), p.shape(), "module");
    }
    for (const st::entry& e : file.head().tensors)
        if (known.count(e.name) == 0) problems.unexpected(e.name);
    problems.throw_if_any(file.where(), "module");

    const no_grad off;
    for (std::size_t i = 0; i < params.size(); ++i) {
        const auto& p = params[i].second;
        using T = typename std::remove_cvref_t<decltype(p)>::value_type;
        const auto values = file.template values<T>(*entries[i]);
        st::copy_into<Tu>(p, values.get(), "nn::load", site);
    }
}

}  // namespace devtensor::nn

namespace devtensor::optim {

/// Writes the optimizer's state to `path` as a safetensors file, with the names of
/// PyTorch's optimizer state_dict flattened: "state.<i>.momentum_buffer" for each
/// parameter i that has a momentum buffer. The metadata names the optimizer and
/// records its options ("param_groups.0.lr", ...), which load does not restore.
template <class T, Device D>
void save(const sgd<T, D>& opt, const std::string& path, call_site site = call_site::current()) {
    namespace st = devtensor::detail::safetensors;
    const std::string where = "devtensor::optim::save: " + st::in_quotes(path);
    std::vector<st::out_entry> tensors;
    for (std::size_t i = 0; i < opt.parameters().size(); ++i)
        if (const auto& buf = opt.momentum_buffer(i); buf.defined())
            tensors.push_back(st::out_entry_of("state." + std::to_string(i) + ".momentum_buffer", buf, where,
                                               "optim::save", site));
    const sgd_options& o = opt.options();
    st::write_file(path, tensors,
                   {{"format", "pt"}, {"optimizer", "sgd"}, {"param_groups.0.lr", st::number(o.lr)},
                    {"param_groups.0.momentum", st::number(o.momentum)},
                    {"param_groups.0.dampening", st::number(o.dampening)},
                    {"param_groups.0.weight_decay", st::number(o.weight_decay)},
                    {"param_groups.0.nesterov", o.nesterov ? "true" : "false"}},
                   "devtensor::optim::save");
}

/// Reads the state that optim::save (or a flattened PyTorch state_dict) wrote into the
/// optimizer, replacing its state as torch's load_state_dict does: a parameter with no
/// state in the file starts afresh. Each buffer is made on its parameter's device and
/// must have its dtype and shape; other names are an error, listed with every other
/// problem before anything changes. The options stay the optimizer's own.
template <class T, Device D>
void load(sgd<T, D>& opt, const std::string& path, call_site site = call_site::current()) {
    namespace st = devtensor::detail::safetensors;
    st::file_reader file(path, "devtensor::optim::load");
    st::check_optimizer(file, "sgd");
    const auto& params = opt.parameters();
    std::vector<const st::entry*> buffers(params.size(), nullptr);
    st::mismatches problems;
    for (const st::entry& e : file.head().tensors) {
        const auto at = st::state_name(e.name, params.size());
        if (!at || at->second != "momentum_buffer") {
            problems.unexpected(e.name);
            continue;
        }
        buffers[at->first] = &e;
        problems.compare(e, st::dtype_code<T>(), params[at->first].shape(), "optimizer's parameter");
    }
    problems.throw_if_any(file.where(), "optimizer");
    for (std::size_t i = 0; i < params.size(); ++i) {
        tensor<T, D> buf;
        if (buffers[i]) buf = st::tensor_like(params[i], file.template values<T>(*buffers[i]).get(), "optim::load", site);
        opt.momentum_buffer(i) = std::move(buf);
    }
}

/// Writes adam's or adamw's state to `path`, named as PyTorch's flattened state_dict:
/// "state.<i>.step" (a scalar, F32 as PyTorch keeps it; F64 from 2^24 steps on, so
/// the count stays exact), "state.<i>.exp_avg", "state.<i>.exp_avg_sq" and, with
/// amsgrad, "state.<i>.max_exp_avg_sq", for each parameter that has taken a step.
template <class T, bool Decoupled, Device D>
void save(const adam_base<T, Decoupled, D>& opt, const std::string& path, call_site site = call_site::current()) {
    namespace st = devtensor::detail::safetensors;
    const std::string where = "devtensor::optim::save: " + st::in_quotes(path);
    std::vector<st::out_entry> tensors;
    for (std::size_t i = 0; i < opt.parameters().size(); ++i) {
        const auto& s = opt.state_of(i);
        if (!s.exp_avg.defined()) continue;
        const std::string prefix = "state." + std::to_string(i) + ".";
        const std::int64_t step = s.step;
        if (step < (std::int64_t{1} << 24)) {
            tensors.push_back({prefix + "step", "F32", {}, 4, [step](std::ostream& out) {
                                   float v = static_cast<float>(step);
                                   st::to_little_endian(&v, 1, sizeof v);
                                   out.write(reinterpret_cast<const char*>(&v), sizeof v);
                               }});
        } else {
            tensors.push_back({prefix + "step", "F64", {}, 8, [step](std::ostream& out) {
                                   double v = static_cast<double>(step);
                                   st::to_little_endian(&v, 1, sizeof v);
                                   out.write(reinterpret_cast<const char*>(&v), sizeof v);
                               }});
        }
        tensors.push_back(st::out_entry_of(prefix + "exp_avg", s.exp_avg, where, "optim::save", site));
        tensors.push_back(st::out_entry_of(prefix + "exp_avg_sq", s.exp_avg_sq, where, "optim::save", site));
        if (s.max_exp_avg_sq.defined())
            tensors.push_back(st::out_entry_of(prefix + "max_exp_avg_sq", s.max_exp_avg_sq, where, "optim::save", site));
    }
    const auto& o = opt.options();
    st::write_file(path, tensors,
                   {{"format", "pt"}, {"optimizer", Decoupled ? "adamw" : "adam"},
                    {"param_groups.0.lr", st::number(o.lr)},
                    {"param_groups.0.betas", "[" + st::number(o.beta1) + ", " + st::number(o.beta2) + "]"},
                    {"param_groups.0.eps", st::number(o.eps)},
                    {"param_groups.0.weight_decay", st::number(o.weight_decay)},
                    {"param_groups.0.amsgrad", o.amsgrad ? "true" : "false"}},
                   "devtensor::optim::save");
}

/// Reads adam's or adamw's state (see save) into the optimizer, replacing its state:
/// a parameter with state in the file needs its step, exp_avg and exp_avg_sq (and,
/// with amsgrad, max_exp_avg_sq), each with the parameter's dtype and shape (the step:
/// one F32, F64 or I64 element holding a whole number); a parameter without starts
/// afresh. Everything is checked before anything changes.
template <class T, bool Decoupled, Device D>
void load(adam_base<T, Decoupled, D>& opt, const std::string& path, call_site site = call_site::current()) {
    namespace st = devtensor::detail::safetensors;
    const char* kind = Decoupled ? "adamw" : "adam";
    st::file_reader file(path, "devtensor::optim::load");
    st::check_optimizer(file, kind);
    const auto& params = opt.parameters();
    const bool amsgrad = opt.options().amsgrad;
    constexpr std::array<std::string_view, 4> keys{"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
    std::vector<std::array<const st::entry*, 4>> found(params.size());
    st::mismatches problems;
    for (const st::entry& e : file.head().tensors) {
        const auto at = st::state_name(e.name, params.size());
        const auto k = at ? std::find(keys.begin(), keys.end(), at->second) : keys.end();
        if (k == keys.end() || (k == keys.end() - 1 && !amsgrad)) {
            problems.unexpected(e.name);
            continue;
        }
        const auto key = static_cast<std::size_t>(k - keys.begin());
        found[at->first][key] = &e;
        if (key != 0) {
            problems.compare(e, st::dtype_code<T>(), params[at->first].shape(), "optimizer's parameter");
        } else if (e.dtype != "F32" && e.dtype != "F64" && e.dtype != "I64") {
            problems.wrong(st::in_quotes(e.name) + " has dtype " + e.dtype + "; a step count is F32, F64 or I64", false);
        } else if (e.end - e.begin != st::dtype_size(e.dtype)) {
            problems.wrong(st::in_quotes(e.name) + " has shape " + st::shape_string(e.shape) + "; a step count is one number", true);
        }
    }
    std::vector<std::int64_t> steps(params.size(), 0);
    for (std::size_t i = 0; i < params.size(); ++i) {
        const auto& f = found[i];
        if (std::none_of(f.begin(), f.end(), [](const st::entry* e) { return e != nullptr; })) continue;
        for (std::size_t k = 0; k < (amsgrad ? 4u : 3u); ++k)
            if (!f[k]) problems.missing("state." + std::to_string(i) + "." + std::string(keys[k]));
    }
    problems.throw_if_any(file.where(), "optimizer");
    for (std::size_t i = 0; i < params.size(); ++i) {  // the step counts: whole, non-negative, exact
        const st::entry* e = found[i][0];
        if (!e) continue;
        double v = 0;
        if (e->dtype == "F32") v = static_cast<double>(file.template values<float>(*e)[0]);
        else if (e->dtype == "F64") v = file.template values<double>(*e)[0];
        else v = static_cast<double>(file.template values<std::int64_t>(*e)[0]);
        if (!(v >= 0 && v <= 9007199254740992.0 && std::floor(v) == v))
            throw error(file.where() + ": " + st::in_quotes(e->name) + " holds " + st::number(v) +
                        ", which is not a step count (a whole number >= 0)");
        steps[i] = static_cast<std::int64_t>(v);
    }
    for (std::size_t i = 0; i < params.size(); ++i) {
        auto& s = opt.state_of(i);
        const auto& f = found[i];
        const auto make = [&](const st::entry* e) {
            return e ? st::tensor_like(params[i], file.template values<T>(*e).get(), "optim::load", site)
                     : tensor<T, D>{};
        };
        s.step = f[0] ? steps[i] : 0;
        s.exp_avg = make(f[1]);
        s.exp_avg_sq = make(f[2]);
        s.max_exp_avg_sq = make(f[3]);
    }
}

}  // namespace devtensor::optim
