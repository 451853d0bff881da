// Where a tensor was made (DESIGN §14): the op that made it and the caller's
// std::source_location, kept in every tensor handle so that an error can say
// "a made by rand at train.cpp:14". Recording costs two pointers per handle and
// no string work; the text is built only when an error or a snapshot asks.
//
// DEVTENSOR_DIAGNOSTICS (0/1, default 1) compiles out creation sites, the
// transfer guard and ledger, and the live-allocation registry, for measuring
// what they cost (scripts/diagnostics-cost.sh).
#pragma once

#include <cstddef>
#include <source_location>
#include <version>
#include <string>
#include <string_view>

#ifndef DEVTENSOR_DIAGNOSTICS
#  define DEVTENSOR_DIAGNOSTICS 1
#endif

namespace devtensor {

/// The caller's place, as every op, factory and copy takes it:
/// `call_site site = call_site::current()`, the last parameter, defaulted.
/// std::source_location where the standard library has it; where it does not
/// (clang 14 with libstdc++ 12 lacks the builtin it needs), the same interface
/// from the compilers' __builtin_FILE/LINE/COLUMN.
#if defined(__cpp_lib_source_location)
using call_site = std::source_location;
#else
class call_site {
public:
    static constexpr call_site current(const char* file = __builtin_FILE(),
                                       const char* function = __builtin_FUNCTION(),
                                       unsigned line = __builtin_LINE(),
                                       unsigned column = __builtin_COLUMN()) noexcept {
        call_site site;
        site.file_ = file;
        site.function_ = function;
        site.line_ = line;
        site.column_ = column;
        return site;
    }
    constexpr call_site() noexcept = default;
    constexpr const char* file_name() const noexcept { return file_; }
    constexpr const char* function_name() const noexcept { return function_; }
    constexpr unsigned line() const noexcept { return line_; }
    constexpr unsigned column() const noexcept { return column_; }

private:
    const char* file_ = "";
    const char* function_ = "";
    unsigned line_ = 0;
    unsigned column_ = 0;
};
#endif

/// The op that made a tensor and the user's call that ran it. `op` is null for a
/// tensor whose maker is unknown (undefined, or wrapped memory from outside); the
/// site's line is 0 where no call site exists (operators such as `a + b`).
struct origin {
    const char* op = nullptr;
    call_site site{};

    bool known() const noexcept { return op != nullptr; }
    bool has_site() const noexcept { return site.line() != 0; }
};

/// The last component of a source path: "train.cpp" of "/home/me/src/train.cpp".
inline std::string_view file_of(const call_site& site) {
    const std::string_view path = site.file_name();
    const auto slash = path.find_last_of("/\\");
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

/// "train.cpp:14", or "" without a site.
inline std::string to_string(const call_site& site) {
    if (site.line() == 0) return "";
    return std::string(file_of(site)) + ":" + std::to_string(site.line());
}

/// "made by rand at train.cpp:14", "made by operator+ (no call site)", "of unknown origin".
inline std::string to_string(const origin& o) {
    if (!o.known()) return "of unknown origin";
    if (!o.has_site()) return std::string("made by ") + o.op + " (no call site)";
    return std::string("made by ") + o.op + " at " + to_string(o.site);
}

namespace detail {
/// The origin a tensor handle keeps: the real thing, or nothing when diagnostics are compiled out.
#if DEVTENSOR_DIAGNOSTICS
using origin_slot = origin;
inline origin read(const origin_slot& o) noexcept { return o; }
#else
struct origin_slot {
    constexpr origin_slot() noexcept = default;
    constexpr origin_slot(const origin&) noexcept {}
};
inline origin read(const origin_slot&) noexcept { return {}; }
#endif
}  // namespace detail

}  // namespace devtensor
