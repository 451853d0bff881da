// threads.hpp: set_num_threads / get_num_threads and parallel_for's coverage.
#include "test_support.hpp"

#include <atomic>
#include <vector>

TEST_CASE("set_num_threads takes effect where OpenMP is on, and rejects < 1") {
    const int saved = dt::get_num_threads();
    CHECK(saved >= 1);
    dt::set_num_threads(3);
#if defined(_OPENMP)
    CHECK(dt::get_num_threads() == 3);
#else
    CHECK(dt::get_num_threads() == 1);
#endif
    CHECK_ERROR(std::invalid_argument, dt::set_num_threads(0), "set_num_threads", "0");
    dt::set_num_threads(saved);
}

TEST_CASE("parallel_for covers [0, n) exactly once in chunks of at least the grain") {
    const int saved = dt::get_num_threads();
    for (const int threads : {1, 2, 5}) {
        dt::set_num_threads(threads);
        for (const std::int64_t n : {0, 1, 7, 1000, 100003}) {
            std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
            std::atomic<int> chunks{0};
            dt::detail::parallel_for(n, 100, [&](std::int64_t begin, std::int64_t end) {
                ++chunks;
                CHECK((end - begin >= 100 || (begin == 0 && end == n)));
                for (std::int64_t i = begin; i < end; ++i) ++hits[static_cast<std::size_t>(i)];
            });
            for (const auto& h : hits) REQUIRE(h == 1);
            CHECK(chunks <= threads);
        }
    }
    dt::set_num_threads(saved);
}
