// threads.hpp: set_num_threads / get_num_threads and parallel_for's coverage.
#include "test_support.hpp"

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

TEST_CASE("set_num_threads takes effect (OpenMP or devtensor's own pool), and rejects < 1") {
    const int saved = dt::get_num_threads();
    CHECK(saved >= 1);
    dt::set_num_threads(3);
    CHECK(dt::get_num_threads() == 3);
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

TEST_CASE("parallel_for runs chunks on several threads, nests, and passes exceptions on") {
    const int saved = dt::get_num_threads();
    dt::set_num_threads(4);
    std::mutex m;
    std::set<std::thread::id> ids;
    std::atomic<std::int64_t> inner{0};
    std::atomic<int> inner_chunks{0}, regions_not_alone{0};
    CHECK(dt::detail::threads_here() == 4);
    dt::detail::parallel_for(4, 1, [&](std::int64_t, std::int64_t) {
        {
            std::lock_guard lock(m);
            ids.insert(std::this_thread::get_id());
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let every chunk find a thread
        if (dt::detail::threads_here() != 1) ++regions_not_alone;
        dt::detail::parallel_for(100, 1, [&](std::int64_t b, std::int64_t e) {  // nested: one chunk, here
            inner += e - b;
            ++inner_chunks;
        });
    });
    CHECK(ids.size() > 1);
    CHECK(inner == 400);
    // A region's threads run what they start alone (a GEMM there splits in no parts)
    CHECK(regions_not_alone == 0);
    CHECK(inner_chunks == 4);
    CHECK_THROWS_WITH_AS(dt::detail::parallel_for(8, 1,
                                                  [](std::int64_t b, std::int64_t) {
                                                      if (b >= 4) throw std::runtime_error("chunk failed");
                                                  }),
                         "chunk failed", std::runtime_error);
    dt::detail::parallel_for(8, 1, [](std::int64_t, std::int64_t) {});  // still usable after a throw
    dt::set_num_threads(saved);
}
