// data/loader.hpp: tensor_dataset's checks, the loader's batches (counts, views,
// drop_last), and its shuffle: a permutation per epoch that is the Fisher–Yates
// a reference implementation draws from the same Philox stream.
#include "test_support.hpp"

#include <devtensor/data/loader.hpp>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <numeric>
#include <ranges>
#include <vector>

namespace {
/// n samples: X row i is (2i, 2i + 1) as floats, y[i] = i.
struct samples {
    dt::tensor<float, dt::cpu_device> X;
    dt::tensor<std::int64_t, dt::cpu_device> y;
};
samples make_samples(std::int64_t n) {
    std::vector<float> x(static_cast<std::size_t>(2 * n));
    std::iota(x.begin(), x.end(), 0.f);
    std::vector<std::int64_t> labels(static_cast<std::size_t>(n));
    std::iota(labels.begin(), labels.end(), std::int64_t{0});
    return {dt::from_values<float>(x, {n, 2}), dt::from_values<std::int64_t>(labels, {n})};
}

/// The labels of one epoch, batch by batch, checking that X's rows stay with their labels.
template <class L>
std::vector<std::int64_t> epoch_order(L& batches, std::vector<std::int64_t>* sizes = nullptr) {
    std::vector<std::int64_t> order;
    for (auto [X, y] : batches) {
        REQUIRE(X.size(0) == y.size(0));
        if (sizes) sizes->push_back(y.size(0));
        const auto xs = X.cpu().to_vector();
        const auto ys = y.cpu().to_vector();
        for (std::size_t r = 0; r < ys.size(); ++r) {
            CHECK(xs[2 * r] == static_cast<float>(2 * ys[r]));
            CHECK(xs[2 * r + 1] == static_cast<float>(2 * ys[r] + 1));
        }
        order.insert(order.end(), ys.begin(), ys.end());
    }
    return order;
}

/// The reference shuffle, written apart from the header: the m-th 64-bit number is
/// words (2m mod 4, 2m + 1 mod 4) of Philox(counter = (block, m / 2), key = seed),
/// bounded by Lemire's method in 128-bit arithmetic, and Fisher–Yates from the end.
std::vector<std::int64_t> reference_order(std::int64_t n, std::uint64_t seed, std::uint64_t block) {
    __extension__ using u128 = unsigned __int128;
    const dt::philox4x32_10 philox;
    std::uint64_t m = 0;
    const auto draw = [&] {
        const std::uint64_t k = m / 2;
        const auto w = philox({static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32),
                               static_cast<std::uint32_t>(k), static_cast<std::uint32_t>(k >> 32)},
                              {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)});
        const std::size_t lane = 2 * (m++ % 2);
        return static_cast<std::uint64_t>(w[lane]) << 32 | w[lane + 1];
    };
    std::vector<std::int64_t> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), std::int64_t{0});
    for (std::uint64_t i = static_cast<std::uint64_t>(n); i-- > 1;) {
        const std::uint64_t range = i + 1;
        const u128 threshold = (u128{1} << 64) % range;
        u128 product = u128{draw()} * range;
        while (static_cast<std::uint64_t>(product) < threshold) product = u128{draw()} * range;
        std::swap(order[i], order[static_cast<std::size_t>(product >> 64)]);
    }
    return order;
}

std::vector<std::int64_t> iota_vector(std::int64_t n) {
    std::vector<std::int64_t> v(static_cast<std::size_t>(n));
    std::iota(v.begin(), v.end(), std::int64_t{0});
    return v;
}
}  // namespace

TEST_CASE("tensor_dataset holds tensors with the same number of rows") {
    const samples sample = make_samples(5);
    const auto& X = sample.X;
    const auto& y = sample.y;
    const dt::data::tensor_dataset ds(X, y);
    static_assert(std::is_same_v<decltype(ds), const dt::data::tensor_dataset<dt::tensor<float, dt::cpu_device>,
                                                                               dt::tensor<std::int64_t, dt::cpu_device>>>);
    CHECK(ds.size() == 5);
    CHECK(std::get<0>(ds.tensors()).is_same(X));  // handles, no copy
    const dt::data::tensor_dataset three(X, y, dt::tensor<double>(dt::zeros<double>({5, 2, 3})));
    CHECK(three.size() == 5);
    CHECK(dt::data::tensor_dataset(y).size() == 5);
}

TEST_CASE("tensor_dataset refuses mismatched rows, undefined and 0-dim tensors") {
    const samples sample = make_samples(5);
    const auto& X = sample.X;
    const auto& y = sample.y;
    const auto y4 = dt::zeros<std::int64_t>({4});
    CHECK_ERROR(dt::shape_error, dt::data::tensor_dataset(X, y4), "tensor_dataset", "[5, 2]", "[4]", "size(0)");
    CHECK_ERROR(dt::shape_error, dt::data::tensor_dataset(X, y, y4), "tensor 2", "[5, 2]", "[4]");
    CHECK_ERROR(dt::error, dt::data::tensor_dataset(X, dt::tensor<std::int64_t, dt::cpu_device>()), "tensor_dataset",
                "tensor 1", "undefined");
    CHECK_ERROR(dt::error, dt::data::tensor_dataset(dt::tensor<float>(), y), "tensor 0", "undefined");
    CHECK_ERROR(dt::shape_error, dt::data::tensor_dataset(X, dt::zeros<float>({})), "tensor 1", "0-dim");
}

TEST_CASE("batch counts: the last partial batch is kept unless drop_last") {
    struct count_case {
        std::int64_t rows, batch_size;
        std::vector<std::int64_t> kept, dropped;  // batch sizes without and with drop_last
    };
    const std::vector<count_case> cases = {
        {10, 3, {3, 3, 3, 1}, {3, 3, 3}}, {9, 3, {3, 3, 3}, {3, 3, 3}}, {4, 64, {4}, {}}, {64, 64, {64}, {64}},
        {1, 1, {1}, {1}},                 {3, 1, {1, 1, 1}, {1, 1, 1}},
    };
    for (const auto& c : cases) {
        CAPTURE(c.rows);
        CAPTURE(c.batch_size);
        const samples sample = make_samples(c.rows);
    const auto& X = sample.X;
    const auto& y = sample.y;
        for (const bool shuffle : {false, true}) {
            for (const bool drop_last : {false, true}) {
                dt::generator gen(3);
                dt::data::loader batches(dt::data::tensor_dataset(X, y),
                                         {.batch_size = c.batch_size, .shuffle = shuffle, .drop_last = drop_last}, gen);
                const auto& expected = drop_last ? c.dropped : c.kept;
                CHECK(batches.size() == static_cast<std::int64_t>(expected.size()));
                std::vector<std::int64_t> sizes;
                const auto order = epoch_order(batches, &sizes);
                CHECK(sizes == expected);
                auto first_rows = iota_vector(c.rows);
                first_rows.resize(order.size());
                if (!shuffle) CHECK(order == first_rows);
            }
        }
    }
}

TEST_CASE("in order, batches are narrow() views of the dataset's rows") {
    const samples sample = make_samples(10);
    const auto& X = sample.X;
    const auto& y = sample.y;
    dt::data::loader batches(dt::data::tensor_dataset(X, y), {.batch_size = 4});
    std::int64_t start = 0;
    for (auto [Xb, yb] : batches) {
        CHECK(Xb.data() == X.data() + start * X.stride(0));
        CHECK(yb.data() == y.data() + start);
        CHECK(Xb.shape() == dt::shape{std::min<std::int64_t>(4, 10 - start), 2});
        start += 4;
    }
    CHECK(start == 12);
}

TEST_CASE("the loader is a sized input range; the default batch size is 64") {
    using L = dt::data::loader<dt::tensor<float, dt::cpu_device>, dt::tensor<std::int64_t, dt::cpu_device>>;
    static_assert(std::ranges::input_range<L>);
    static_assert(std::ranges::sized_range<L>);
    static_assert(std::is_same_v<std::ranges::range_value_t<L>, L::batch>);
    const samples sample = make_samples(130);
    const auto& X = sample.X;
    const auto& y = sample.y;
    const dt::data::tensor_dataset ds(X, y);
    CHECK(dt::data::loader(ds).size() == 3);
    CHECK(std::ranges::size(dt::data::loader(ds, {.drop_last = true})) == 2);
    CHECK(std::ranges::distance(dt::data::loader(ds, {.batch_size = 7})) == 19);
    CHECK(dt::data::loader(ds, {.batch_size = std::numeric_limits<std::int64_t>::max()}).size() == 1);
}

TEST_CASE("batch_size <= 0 is refused by name") {
    const samples sample = make_samples(5);
    const auto& X = sample.X;
    const auto& y = sample.y;
    const dt::data::tensor_dataset ds(X, y);
    CHECK_ERROR(dt::error, dt::data::loader(ds, {.batch_size = 0}), "loader", "batch_size", "0");
    CHECK_ERROR(dt::error, dt::data::loader(ds, {.batch_size = -3, .shuffle = true}), "batch_size", "-3");
}

TEST_CASE("an empty dataset gives no batches") {
    const samples sample = make_samples(0);
    const auto& X = sample.X;
    const auto& y = sample.y;
    const dt::data::tensor_dataset ds(X, y);
    CHECK(ds.size() == 0);
    for (const bool shuffle : {false, true}) {
        for (const bool drop_last : {false, true}) {
            dt::data::loader batches(ds, {.batch_size = 4, .shuffle = shuffle, .drop_last = drop_last});
            CHECK(batches.size() == 0);
            CHECK(batches.begin() == batches.end());
            CHECK(epoch_order(batches).empty());
        }
    }
}

TEST_CASE("shuffled: every row exactly once per epoch, rows of every tensor together") {
    for (const std::int64_t n : {1, 2, 3, 17, 1000}) {
        CAPTURE(n);
        const samples sample = make_samples(n);
    const auto& X = sample.X;
    const auto& y = sample.y;
        dt::generator gen(11);
        dt::data::loader batches(dt::data::tensor_dataset(X, y), {.batch_size = 8, .shuffle = true}, gen);
        for (int e = 0; e < 3; ++e) {
            auto order = epoch_order(batches);
            std::ranges::sort(order);
            CHECK(order == iota_vector(n));
        }
    }
}

TEST_CASE("the shuffle is Fisher-Yates over the generator's Philox stream, one block per epoch") {
    for (const std::int64_t n : {2, 5, 64, 1000}) {
        for (const std::uint64_t seed : {std::uint64_t{0}, std::uint64_t{42}, std::uint64_t{0x123456789abcdefull}}) {
            CAPTURE(n);
            CAPTURE(seed);
            const samples sample = make_samples(n);
    const auto& X = sample.X;
    const auto& y = sample.y;
            dt::generator gen(seed);
            gen.set_offset(40);
            dt::data::loader batches(dt::data::tensor_dataset(X, y), {.batch_size = 7, .shuffle = true}, gen);
            const auto first = epoch_order(batches);
            CHECK(first == reference_order(n, seed, 10));
            CHECK(gen.offset() == 44);
            const auto second = epoch_order(batches);
            CHECK(second == reference_order(n, seed, 11));
            CHECK(gen.offset() == 48);
            if (n > 2) CHECK(second != first);  // a new order each epoch (a 1 in n! coincidence otherwise)
        }
    }
}

TEST_CASE("the same seed gives the same orders; another seed or epoch another") {
    const samples sample = make_samples(200);
    const auto& X = sample.X;
    const auto& y = sample.y;
    const dt::data::tensor_dataset ds(X, y);
    dt::generator a(9), b(9), c(10);
    dt::data::loader la(ds, {.batch_size = 32, .shuffle = true}, a), lb(ds, {.batch_size = 32, .shuffle = true}, b),
        lc(ds, {.batch_size = 32, .shuffle = true}, c);
    const auto a1 = epoch_order(la), a2 = epoch_order(la);
    CHECK(epoch_order(lb) == a1);
    CHECK(epoch_order(lb) == a2);
    CHECK(a1 != a2);
    CHECK(epoch_order(lc) != a1);
    CHECK(a1 != iota_vector(200));
    // the batches themselves are made afresh from the epoch's order: dereferencing twice agrees
    auto it = la.begin();
    CHECK(std::get<1>(*it).to_vector() == std::get<1>(*it).to_vector());
}

TEST_CASE("without a generator the shuffle draws from the CPU's default generator") {
    const samples sample = make_samples(50);
    const auto& X = sample.X;
    const auto& y = sample.y;
    const dt::data::tensor_dataset ds(X, y);
    dt::manual_seed(77);
    dt::data::loader batches(ds, {.batch_size = 16, .shuffle = true});
    const auto order = epoch_order(batches);
    CHECK(dt::default_generator(dt::device()).offset() == 4);
    CHECK(order == reference_order(50, 77, 0));
    dt::manual_seed(dt::default_seed);
}

TEST_CASE("uniform_below redraws the products that would bias it") {
    // range 3: 2^64 mod 3 = 1, so the draw 0 (low half 0 < 1) is redrawn
    std::vector<std::uint64_t> draws = {0, std::uint64_t{1} << 63};
    std::size_t used = 0;
    const auto next = [&] { return draws.at(used++); };
    CHECK(dt::data::detail::uniform_below(next, 3) == 1);  // floor(2^63 * 3 / 2^64)
    CHECK(used == 2);
    draws = {~std::uint64_t{0}};
    used = 0;
    CHECK(dt::data::detail::uniform_below(next, 3) == 2);
    CHECK(used == 1);
    draws = {12345};
    used = 0;
    CHECK(dt::data::detail::uniform_below(next, 1) == 0);  // 2^64 mod 1 = 0: never redrawn
    CHECK(used == 1);
}

TEST_CASE("run-time device tensors and a strided dataset tensor batch like static ones") {
    const samples sample = make_samples(23);
    const auto& X = sample.X;
    const auto& y = sample.y;
    const dt::tensor<float> Xt = X.t().contiguous().t();  // the same values, column-major
    const dt::tensor<std::int64_t> yr = y;
    CHECK(!Xt.is_contiguous());
    dt::generator a(5), b(5);
    dt::data::loader strided(dt::data::tensor_dataset(Xt, yr), {.batch_size = 6, .shuffle = true}, a);
    dt::data::loader plain(dt::data::tensor_dataset(X, y), {.batch_size = 6, .shuffle = true}, b);
    CHECK(epoch_order(strided) == epoch_order(plain));
}

#if DEVTENSOR_HAS_CUDA
DEVTENSOR_GPU_TEST_CASE("gpu: batches on the dataset's device, in the order the cpu loader gives") {
    const samples sample = make_samples(300);
    const auto& X = sample.X;
    const auto& y = sample.y;
    for (const bool shuffle : {false, true}) {
        dt::generator a(21), b(21);
        dt::data::loader gpu(dt::data::tensor_dataset(X.cuda(), y.cuda()), {.batch_size = 64, .shuffle = shuffle}, a);
        dt::data::loader cpu(dt::data::tensor_dataset(X, y), {.batch_size = 64, .shuffle = shuffle}, b);
        CHECK(epoch_order(gpu) == epoch_order(cpu));
        for (auto [Xb, yb] : gpu) CHECK(Xb.is_cuda());
        const dt::tensor<float> Xr = X.to(dt::device("cuda:0"));
        dt::data::loader run_time(dt::data::tensor_dataset(Xr, y), {.batch_size = 64, .shuffle = shuffle}, a);
        for (auto [Xb, yb] : run_time) {
            CHECK(Xb.is_cuda());
            CHECK(yb.is_cpu());
        }
    }
}
#endif
