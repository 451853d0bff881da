// Helpers shared by the test files: GPU cases that skip without a GPU, checks
// of an error's type and the key words of its message, and bitwise equality.
#pragma once

#include <devtensor/devtensor.hpp>
#include <doctest/doctest.h>

#include <cstring>
#include <initializer_list>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace dt = devtensor;

// doctest's list of the test cases linked into this binary (defined in test_main.cpp's
// implementation; test_cuda_emulator.cpp checks each kernel has a test case).
namespace doctest::detail {
std::set<TestCase>& getRegisteredTests();
}

/// A test case that needs a CUDA device: reported as skipped (not passed) where there is none.
#define DEVTENSOR_GPU_TEST_CASE(name) TEST_CASE(name * doctest::skip(!::devtensor::cuda_available()))
#define DEVTENSOR_GPU_TEST_CASE_TEMPLATE(name, T, ...) \
    TEST_CASE_TEMPLATE(name * doctest::skip(!::devtensor::cuda_available()), T, __VA_ARGS__)

namespace test {
/// What `f` threw as E ("" with a failed check when it threw nothing or something else).
template <class E, class F>
std::string message_of(F&& f, const char* expr) {
    try {
        f();
    } catch (const E& e) {
        return e.what();
    } catch (const std::exception& e) {
        FAIL_CHECK("`", expr, "` threw the wrong type: ", e.what());
        return "";
    }
    FAIL_CHECK("`", expr, "` threw nothing");
    return "";
}

inline bool contains(std::string_view text, std::string_view word) {
    return text.find(word) != std::string_view::npos;
}
}  // namespace test

/// The same elements, bit for bit (NaN equal to the same NaN, -0 unequal to +0).
template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

/// `expr` throws `type` whose message holds each of the given words.
#define CHECK_ERROR(type, expr, ...)                                                      \
    do {                                                                                  \
        const std::string message_ = ::test::message_of<type>([&] { (void)(expr); }, #expr); \
        for (const std::string& word_ : std::initializer_list<std::string>{__VA_ARGS__}) { \
            INFO("message: ", message_);                                                  \
            CHECK(::test::contains(message_, word_));                                     \
        }                                                                                 \
    } while (0)
