// device.hpp: descriptors, parsing, to_string, the concepts, device_cast.
#include "test_support.hpp"

#include <cstring>
#include <sstream>
#include <string>

using dt::cpu_device;
using dt::cuda_device;
using dt::device;
using dt::device_kind;

static_assert(dt::Device<cpu_device> && dt::Device<cuda_device> && dt::Device<device>);
static_assert(!dt::Device<int> && !dt::Device<std::string>);
static_assert(dt::StaticDevice<cpu_device> && dt::StaticDevice<cuda_device>);
static_assert(!dt::StaticDevice<device>);
static_assert(dt::HostAccessible<cpu_device>);
static_assert(!dt::HostAccessible<cuda_device> && !dt::HostAccessible<device>);
static_assert(std::is_convertible_v<cpu_device, device> && std::is_convertible_v<cuda_device, device>);
static_assert(!std::is_convertible_v<device, cuda_device> && !std::is_convertible_v<device, cpu_device>);
static_assert(std::is_nothrow_copy_constructible_v<device> && sizeof(device) <= 8);

TEST_CASE("device strings parse to kind and index") {
    CHECK(device("cpu") == device(device_kind::cpu));
    CHECK(device("cpu:0") == device(device_kind::cpu, 0));
    CHECK(device("cuda") == device(device_kind::cuda, 0));
    CHECK(device("cuda:0").index() == 0);
    CHECK(device("cuda:1").index() == 1);
    CHECK(device("cuda:7").is_cuda());  // a descriptor is only a name: no GPU needed
    CHECK(device("cuda:123456789").index() == 123456789);
}

TEST_CASE("to_string always names the CUDA index") {
    CHECK(dt::to_string(cpu_device{}) == "cpu");
    CHECK(dt::to_string(cuda_device{}) == "cuda:0");
    CHECK(dt::to_string(cuda_device{3}) == "cuda:3");
    CHECK(dt::to_string(device("cuda")) == "cuda:0");
    CHECK(dt::to_string(device("cpu:0")) == "cpu");
    for (const char* text : {"cpu", "cuda:0", "cuda:5"}) CHECK(dt::to_string(device(text)) == text);
}

TEST_CASE("bad device strings throw invalid_device quoting the string and the accepted forms") {
    for (const char* text : {"", "gpu", "cuda:", "cuda:-1", "cuda:1x", "cpu:1", "CUDA", " cuda",
                             "cuda:0:0", "cuda:+1", "cuda:2147483648", "cpu:", ":0"}) {
        CAPTURE(text);
        const std::string quoted = std::string(1, '\'').append(text).append(1, '\'');  // not "'" + ...: GCC 12 -O3 -Wrestrict false alarm
        CHECK_ERROR(dt::invalid_device, device(text), quoted, "\"cpu\"", "\"cuda:N\"");
    }
    // invalid_device is an std::invalid_argument, as DESIGN §9 says
    CHECK_THROWS_AS(device("gpu"), std::invalid_argument);
}

TEST_CASE("bad indices throw invalid_device") {
    CHECK_ERROR(dt::invalid_device, device(device_kind::cuda, -1), "-1");
    CHECK_ERROR(dt::invalid_device, device(device_kind::cpu, 1), "cpu");
}

TEST_CASE("static devices convert to device, and back only through device_cast") {
    const device d = cuda_device{2};
    CHECK(d.is_cuda());
    CHECK(d.index() == 2);
    CHECK(dt::device_cast<cuda_device>(d).ordinal == 2);
    CHECK(dt::device_cast<cpu_device>(device("cpu")) == cpu_device{});
    CHECK(dt::device_cast<device>(d) == d);
    CHECK_ERROR(dt::device_mismatch, dt::device_cast<cpu_device>(d), "cuda:2", "cpu");
    CHECK_ERROR(dt::device_mismatch, dt::device_cast<cuda_device>(device("cpu")), "cpu", "cuda");
}

TEST_CASE("static device kinds are compile-time constants") {
    static_assert(cpu_device::kind() == device_kind::cpu);
    static_assert(cuda_device::kind() == device_kind::cuda);
    static_assert(cuda_device{4}.index() == 4);
    static_assert(device(cuda_device{1}).index() == 1);
    CHECK(dt::kind_name(device_kind::cuda) == "cuda");
}

TEST_CASE("every index up to INT_MAX parses back from to_string; past it is invalid_device") {
    // Found by fuzz_device_string: indices of 10 digits were rejected.
    for (const int index : {0, 9, 1000000000, 2147483647}) {
        const dt::device d(dt::device_kind::cuda, index);
        CHECK(dt::device(dt::to_string(d)) == d);
    }
    CHECK_ERROR(dt::invalid_device, dt::device("cuda:0000000001"), "leading zeros");
    CHECK_ERROR(dt::invalid_device, dt::device("cuda:2147483648"), "cuda:2147483648");
    CHECK_ERROR(dt::invalid_device, dt::device("cuda:99999999999999999999"), "cuda:99999999999999999999");
}

TEST_CASE("a negative cuda_device ordinal is never taken for a real device or the cpu's statistics") {
    const dt::cuda_device bad{-1};  // an aggregate: the conversion to device cannot check it
    CHECK_ERROR(dt::device_unavailable, dt::require_available(dt::device(bad)), "cuda:-1");
    CHECK_THROWS_AS((void)dt::memory_allocated(bad), dt::device_unavailable);
    CHECK_THROWS_AS((void)dt::default_generator(dt::device(bad)), dt::device_unavailable);
    CHECK_THROWS_AS((void)dt::empty<float>({2}, bad), dt::device_unavailable);
}

TEST_CASE("leading zeros are refused, as PyTorch refuses them") {
    for (const char* text : {"cuda:007", "cuda:00", "cpu:00", "cuda:01"}) {
        CAPTURE(text);
        CHECK_ERROR(dt::invalid_device, device(text), text, "leading zeros");
    }
    CHECK(device("cuda:0") == device(device_kind::cuda, 0));
    CHECK(device("cuda:10").index() == 10);
}

TEST_CASE("a bad device string with control characters is quoted escaped, never cut short") {
    const std::string text("cu\0da\n\x1b[31m", 11);
    std::string message;
    try {
        (void)device(text);
    } catch (const dt::invalid_device& e) {
        message = e.what();
    }
    CHECK(message.find(R"('cu\x00da\x0a\x1b[31m')") != std::string::npos);
    CHECK(message.find('\0') == std::string::npos);
    CHECK(message.find("\"cuda:N\"") != std::string::npos);  // the message goes on past the NUL
    CHECK(std::strlen(message.c_str()) == message.size());
    // A very long string is cut to 64 characters, saying so.
    CHECK_ERROR(dt::invalid_device, device(std::string(1000, 'x')), "1000 characters, first 64 shown");
}

TEST_CASE("every device type prints like Python's print(dev); repr like repr(dev)") {
    const auto printed = [](const auto& d) {
        std::ostringstream os;
        os << d;
        return os.str();
    };
    CHECK(printed(dt::cpu_device{}) == "cpu");
    CHECK(printed(dt::cuda_device{3}) == "cuda:3");
    CHECK(printed(device("cuda")) == "cuda:0");
    CHECK(printed(device("cpu")) == "cpu");
    CHECK(dt::repr(device("cuda:1")) == "device(type='cuda', index=1)");
    CHECK(dt::repr(dt::cpu_device{}) == "device(type='cpu')");
}
