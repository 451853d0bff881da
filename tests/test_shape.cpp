// shape.hpp: construction, limits, broadcasting.
#include "test_support.hpp"

#include <cstdint>
#include <limits>
#include <sstream>
#include <vector>

using dt::shape;

TEST_CASE("shapes from braced lists and ranges") {
    const shape s{2, 3};
    CHECK(s.rank() == 2);
    CHECK(s[0] == 2);
    CHECK(s[1] == 3);
    CHECK(s.numel() == 6);
    CHECK(shape(std::vector<std::int64_t>{2, 3}) == s);
    CHECK(shape(std::vector<int>{2, 3}) == s);
    CHECK(shape(std::vector<std::size_t>{2, 3}) == s);
    CHECK(shape{}.rank() == 0);
    CHECK(shape{}.numel() == 1);  // a scalar
    CHECK(shape{0, 5}.numel() == 0);
    CHECK(s.to_string() == "[2, 3]");
    CHECK(shape{}.to_string() == "[]");
    static_assert(std::is_same_v<decltype(s[0]), std::int64_t>);
}

TEST_CASE("negative dimensions, too many dimensions and overflowing counts are shape_error") {
    CHECK_ERROR(dt::shape_error, (shape{2, -3}), "negative dimension -3", "[2, -3]");
    CHECK_ERROR(dt::shape_error, (shape{1, 1, 1, 1, 1, 1, 1, 1, 1}), "more than 8");
    CHECK_ERROR(dt::shape_error, (shape{1 << 30, 1 << 30, 1 << 30}), "overflows");
    const auto big = std::numeric_limits<std::int64_t>::max();
    CHECK(shape{big}.numel() == big);
    CHECK_ERROR(dt::shape_error, (shape{big, 2}), "overflows");
    CHECK(shape{big, 0}.numel() == 0);  // overflow only counts when the product does
    CHECK_ERROR(dt::shape_error, shape(std::vector<std::uint64_t>{std::uint64_t{1} << 63}), "too large");
    CHECK_ERROR(dt::shape_error, dt::zeros<float>({-1}), "negative");
}

TEST_CASE("broadcasting follows NumPy") {
    CHECK(dt::broadcast_shapes({2, 3}, {3}) == shape{2, 3});
    CHECK(dt::broadcast_shapes({3}, {2, 3}) == shape{2, 3});
    CHECK(dt::broadcast_shapes({2, 1}, {1, 3}) == shape{2, 3});
    CHECK(dt::broadcast_shapes({4, 1, 5}, {3, 1}) == shape{4, 3, 5});
    CHECK(dt::broadcast_shapes({}, {2, 2}) == shape{2, 2});
    CHECK(dt::broadcast_shapes({0, 3}, {1, 3}) == shape{0, 3});
    CHECK(dt::broadcast_shapes({0}, {1}) == shape{0});
    CHECK_ERROR(dt::shape_error, dt::broadcast_shapes({2, 3}, {2}, "add"), "devtensor::add", "[2, 3]",
                "[2]", "cannot be broadcast");
    CHECK_ERROR(dt::shape_error, dt::broadcast_shapes({0}, {3}), "[0]", "[3]");
}

TEST_CASE("shape printing") {
    std::ostringstream os;
    os << shape{4, 1, 5};
    CHECK(os.str() == "[4, 1, 5]");
}

TEST_CASE("an empty dimension makes the count 0 even after dimensions whose product overflows") {
    // Found by fuzz_broadcast: the overflow check ran before it saw the 0.
    const std::int64_t h = std::int64_t{1} << 62;
    CHECK(dt::shape({h, h, 0}).numel() == 0);
    CHECK(dt::shape({h, 2, 0}).numel() == 0);
    CHECK(dt::shape({0, h, h}).numel() == 0);
    CHECK(dt::broadcast_shapes(dt::shape{h, 1, 0}, dt::shape{1, h, 1}, "add") == dt::shape{h, h, 0});
    CHECK_THROWS_AS(dt::shape({h, h, 1}), dt::shape_error);
}
