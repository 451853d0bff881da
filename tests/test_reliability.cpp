// Faults and limits: out of memory again and again, allocation failures
// injected into every op (arguments unchanged, nothing leaked), handles and
// ops from many threads, the default generator shared by threads, and index
// arithmetic past 2^31.
#include "test_support.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <thread>
#include <vector>

namespace {
/// Makes allocation number `k` (0-based) from now fail; restores "never" when it goes out of scope.
struct failing_allocation {
    explicit failing_allocation(long k) { dt::detail::allocations_until_failure() = k; }
    ~failing_allocation() { dt::detail::allocations_until_failure() = -1; }
};

/// Runs `op` with allocation 0, 1, 2, ... failing until it succeeds; after each
/// failure `unchanged()` must hold and no memory may be left allocated.
void check_exception_safe(const char* name, const std::function<void()>& op,
                          const std::function<bool()>& unchanged) {
    CAPTURE(name);
    const std::size_t before = dt::memory_allocated(dt::cpu_device{});
    for (long k = 0;; ++k) {
        CAPTURE(k);
        REQUIRE(k < 100);
        bool threw = false;
        {
            failing_allocation fail(k);
            try {
                op();
            } catch (const dt::out_of_memory&) {
                threw = true;
            }
        }
        CHECK(unchanged());
        CHECK(dt::memory_allocated(dt::cpu_device{}) == before);
        if (!threw) return;
    }
}

template <class T, class D>
std::vector<T> snapshot(const dt::tensor<T, D>& t) {
    return t.to_vector();
}
}  // namespace

TEST_CASE("1,000 failing huge allocations in a row, then normal work, nothing leaked") {
    const dt::cpu_device cpu;
    const std::size_t allocated = dt::memory_allocated(cpu);
    for (int i = 0; i < 1000; ++i)
        REQUIRE_THROWS_AS((void)dt::empty<float>({std::int64_t{1} << 46}, cpu), dt::out_of_memory);
    CHECK(dt::memory_allocated(cpu) == allocated);
    const auto t = dt::add(dt::ones<float>({1000}), dt::full<float>({1000}, 2.f));
    CHECK(std::all_of(t.data(), t.data() + 1000, [](float v) { return v == 3.f; }));
}

TEST_CASE("an op whose allocation fails leaves its arguments unchanged and leaks nothing") {
    dt::generator gen(3);
    const auto x = dt::rand<float>({5, 7}, dt::cpu_device{}, gen), y = dt::rand<float>({7}, dt::cpu_device{}, gen);
    const auto w = dt::rand<float>({3, 7}, dt::cpu_device{}, gen), b = dt::rand<float>({3}, dt::cpu_device{}, gen);
    const auto x0 = snapshot(x), y0 = snapshot(y), w0 = snapshot(w), b0 = snapshot(b);
    const auto same = [&] { return snapshot(x) == x0 && snapshot(y) == y0 && snapshot(w) == w0 && snapshot(b) == b0; };
    check_exception_safe("add", [&] { (void)dt::add(x, y); }, same);
    check_exception_safe("operator+", [&] { (void)(x + y); }, same);
    check_exception_safe("matmul", [&] { (void)dt::matmul(x, dt::rand<float>({7, 2}, dt::cpu_device{}, gen)); }, same);
    check_exception_safe("linear", [&] { (void)dt::linear(x, w, b); }, same);
    check_exception_safe("ones", [&] { (void)dt::ones<float>({100, 100}); }, same);
    check_exception_safe("rand", [&] { (void)dt::rand<double>({100}, dt::cpu_device{}, gen); }, same);
    check_exception_safe("from_values", [&] { (void)dt::from_values<float>(x0, {5, 7}); }, same);
    check_exception_safe("clone via to() of a buffer", [&] { (void)dt::buffer<float>(64).clone(); }, same);
    check_exception_safe("nn::linear", [&] { (void)dt::nn::linear<float, dt::cpu_device>(7, 3); }, same);
    // A failed rand must not advance the generator either: the next draw is the one it would have been.
    dt::generator g1(9), g2(9);
    {
        failing_allocation fail(0);
        CHECK_THROWS_AS((void)dt::rand<float>({10}, dt::cpu_device{}, g1), dt::out_of_memory);
    }
    CHECK(dt::rand<float>({10}, dt::cpu_device{}, g1).to_vector() == dt::rand<float>({10}, dt::cpu_device{}, g2).to_vector());
}

TEST_CASE("tensor handles copied and dropped on many threads at once") {
    const auto t = dt::full<float>({1 << 16}, 4.f);
    const std::size_t allocated = dt::memory_allocated(dt::cpu_device{});
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i)
        threads.emplace_back([&] {
            for (int j = 0; j < 20000; ++j) {
                dt::tensor<float, dt::cpu_device> copy = t;
                dt::tensor<float> erased = copy;  // a run-time handle of the same storage
                if (!erased.is_same(t)) throw std::logic_error("a copied handle is not the same tensor");
            }
        });
    for (auto& th : threads) th.join();
    CHECK(dt::memory_allocated(dt::cpu_device{}) == allocated);
    CHECK(t.data()[12345] == 4.f);
}

TEST_CASE("independent ops on several threads give the single-thread results") {
    const auto work = [](std::uint64_t seed) {
        dt::generator gen(seed);
        const auto a = dt::rand<float>({64, 48}, dt::cpu_device{}, gen), b = dt::rand<float>({48, 40}, dt::cpu_device{}, gen);
        return dt::add(dt::matmul(a, b), dt::ones<float>({40})).to_vector();
    };
    std::vector<std::vector<float>> serial, parallel(6);
    for (std::uint64_t s = 0; s < 6; ++s) serial.push_back(work(s));
    std::vector<std::thread> threads;
    for (std::uint64_t s = 0; s < 6; ++s) threads.emplace_back([&, s] { parallel[s] = work(s); });
    for (auto& th : threads) th.join();
    CHECK(parallel == serial);
}

TEST_CASE("the default generator shared by threads hands out disjoint, whole chunks of its stream") {
    constexpr int threads_n = 4, draws = 50;
    constexpr std::int64_t n = 37;  // rounded up to 40 numbers per draw
    dt::manual_seed(2024);
    std::vector<std::vector<std::vector<float>>> got(threads_n);
    std::vector<std::thread> threads;
    for (int t = 0; t < threads_n; ++t)
        threads.emplace_back([&, t] {
            for (int d = 0; d < draws; ++d) got[static_cast<std::size_t>(t)].push_back(dt::rand<float>({n}).to_vector());
        });
    for (auto& th : threads) th.join();
    CHECK(dt::default_generator(dt::device("cpu")).offset() == std::uint64_t{threads_n * draws * 40});
    // Every draw is one of the stream's chunks, and no chunk is drawn twice.
    std::map<std::vector<float>, int> chunk_of;
    for (int c = 0; c < threads_n * draws; ++c) {
        dt::generator g(2024);
        g.set_offset(static_cast<std::uint64_t>(c) * 40);
        chunk_of[dt::rand<float>({n}, dt::cpu_device{}, g).to_vector()] = c;
    }
    std::vector<int> seen;
    for (const auto& per_thread : got)
        for (const auto& draw : per_thread) {
            const auto it = chunk_of.find(draw);
            REQUIRE(it != chunk_of.end());
            seen.push_back(it->second);
        }
    std::sort(seen.begin(), seen.end());
    CHECK(std::adjacent_find(seen.begin(), seen.end()) == seen.end());
    CHECK(seen.size() == std::size_t{threads_n * draws});
}

TEST_CASE("element counts and byte sizes near the limits are errors, not wrap-arounds") {
    CHECK_THROWS_AS(dt::shape({std::int64_t{1} << 32, std::int64_t{1} << 32}), dt::shape_error);
    CHECK_THROWS_AS(dt::shape({INT64_MAX, 2}), dt::shape_error);
    CHECK_THROWS_AS(dt::buffer<float>(SIZE_MAX / 2), dt::out_of_memory);
    CHECK_THROWS_AS(dt::buffer<double>(SIZE_MAX / 8 + 1), dt::out_of_memory);
    CHECK(dt::detail::host_pool::size_class(SIZE_MAX / 2 - 7) >= SIZE_MAX / 2 - 7);
    CHECK(dt::detail::host_pool::instance().allocate(SIZE_MAX - 100) == nullptr);
}

TEST_CASE("broadcast offsets of outputs past 2^31 elements are exact (64-bit index arithmetic)") {
    // [3, 2^31 + 11] + [2^31 + 11]: no memory, only the kernels' index math.
    const std::int64_t wide = (std::int64_t{1} << 31) + 11;
    const dt::shape out{3, wide}, b{wide};
    const dt::strides so = dt::strides::contiguous(out), sb = dt::strides::contiguous(b);
    const auto plan = dt::detail::make_loop_plan<3>(out, {&out, &out, &b}, {&so, &so, &sb});
    for (const std::int64_t i : {std::int64_t{0}, wide - 1, wide, 2 * wide + 5, 3 * wide - 1}) {
        std::int64_t offset[3] = {-1, -1, -1};
        dt::detail::offsets_of(plan, i, offset);
        CHECK(offset[1] == i);
        CHECK(offset[2] == i % wide);
    }
}
