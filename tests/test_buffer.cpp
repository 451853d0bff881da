// buffer.hpp: owning, move-only, device-tagged storage.
#include "test_support.hpp"

#include <numeric>

static_assert(!std::is_copy_constructible_v<dt::buffer<float>>);
static_assert(std::is_nothrow_move_constructible_v<dt::buffer<float>>);

TEST_CASE("buffer owns, moves and clones") {
    const std::size_t before = dt::memory_allocated(dt::cpu_device{});
    dt::buffer<int, dt::cpu_device> a(10);
    CHECK(a.size() == 10);
    CHECK(a.bytes() == 40);
    std::iota(a.data(), a.data() + 10, 0);
    CHECK(dt::memory_allocated(dt::cpu_device{}) == before + 40);

    auto b = a.clone();
    CHECK(b.data() != a.data());
    CHECK(std::equal(a.data(), a.data() + 10, b.data()));

    dt::buffer<int, dt::cpu_device> c = std::move(a);
    CHECK(a.data() == nullptr);
    CHECK(a.size() == 0);
    CHECK(c.data()[9] == 9);
    c = std::move(b);  // the old storage of c is released
    CHECK(dt::memory_allocated(dt::cpu_device{}) == before + 40);

    auto d = c.to(dt::device("cpu"));
    static_assert(std::is_same_v<decltype(d), dt::buffer<int, dt::device>>);
    CHECK(d.data()[3] == 3);
}

TEST_CASE("an empty buffer holds no memory") {
    dt::buffer<float> e(0);
    CHECK(e.data() == nullptr);
    CHECK(e.clone().size() == 0);
}

DEVTENSOR_GPU_TEST_CASE("buffer round trip through the gpu") {
    dt::buffer<int, dt::cpu_device> a(1000);
    std::iota(a.data(), a.data() + 1000, 0);
    const auto g = a.to(dt::cuda_device{0});
    const auto back = g.to(dt::cpu_device{});
    CHECK(std::equal(a.data(), a.data() + 1000, back.data()));
}
