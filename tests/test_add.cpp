// ops/add.hpp: add, +, +=, the out-variant, broadcasting, device rules.
#include "test_support.hpp"

#include <algorithm>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

namespace {
/// The slow, obvious broadcast add: the reference for every case.
template <class T>
std::vector<T> reference_add(const dt::tensor<T, dt::cpu_device>& a, const dt::tensor<T, dt::cpu_device>& b) {
    const dt::shape out = dt::broadcast_shapes(a.shape(), b.shape());
    std::vector<T> result(static_cast<std::size_t>(out.numel()));
    for (std::int64_t i = 0; i < out.numel(); ++i) {
        std::int64_t rest = i, ia = 0, ib = 0, sa = 1, sb = 1;
        for (std::size_t d = out.rank(); d-- > 0;) {
            const std::int64_t index = rest % out[d];
            rest /= out[d];
            const std::size_t da = d + a.shape().rank() - out.rank(), db = d + b.shape().rank() - out.rank();
            if (d + a.shape().rank() >= out.rank()) {
                if (a.shape()[da] != 1) ia += index * sa;
                sa *= a.shape()[da];
            }
            if (d + b.shape().rank() >= out.rank()) {
                if (b.shape()[db] != 1) ib += index * sb;
                sb *= b.shape()[db];
            }
        }
        result[static_cast<std::size_t>(i)] = static_cast<T>(a.data()[ia] + b.data()[ib]);
    }
    return result;
}

const std::vector<std::pair<dt::shape, dt::shape>> broadcast_cases = {
    {{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{3}, {2, 3}}, {{2, 1}, {1, 3}}, {{4, 1, 5}, {3, 1}},
    {{}, {2, 2}}, {{7}, {}}, {{1}, {1}}, {{33, 7}, {7}}, {{5, 1, 1, 3}, {2, 3}}, {{1000, 17}, {1000, 1}},
    {{0, 3}, {3}}, {{2, 0}, {2, 1}}, {{1, 1}, {1}}, {{513, 1025}, {1025}},
    {{64, 4096}, {4096}}, {{3, 4}, {8, 3, 4}}, {{9, 5}, {1}},  // repeating operands, 16-byte packs or not
};
}  // namespace

TEST_CASE_TEMPLATE("add broadcasts like NumPy", T, float, double, std::int32_t, std::int64_t, std::int8_t) {
    dt::generator gen(3);
    for (const auto& [sa, sb] : broadcast_cases) {
        CAPTURE(sa);
        CAPTURE(sb);
        const auto fa = dt::rand<double>(sa, dt::cpu_device{}, gen);
        const auto fb = dt::rand<double>(sb, dt::cpu_device{}, gen);
        auto a = dt::empty<T>(sa), b = dt::empty<T>(sb);
        for (std::int64_t i = 0; i < a.numel(); ++i) a.data()[i] = static_cast<T>(fa.data()[i] * 100);
        for (std::int64_t i = 0; i < b.numel(); ++i) b.data()[i] = static_cast<T>(fb.data()[i] * 100);
        const auto c = dt::add(a, b);
        CHECK(c.shape() == dt::broadcast_shapes(sa, sb));
        CHECK(c.to_vector() == reference_add(a, b));
        CHECK((a + b).to_vector() == c.to_vector());
    }
}

TEST_CASE("add into an output, +=, aliasing") {
    auto a = dt::from_values<float>({1, 2, 3, 4, 5, 6}, {2, 3});
    const auto b = dt::from_values<float>({10, 20, 30}, {3});
    auto out = dt::empty<float>({2, 3});
    dt::add(a, b, out);
    CHECK(out.to_vector() == std::vector<float>{11, 22, 33, 14, 25, 36});
    const auto handle = a;
    a += b;
    CHECK(a.is_same(handle));  // in place
    CHECK(a.to_vector() == out.to_vector());
    dt::add(a, a, a);
    CHECK(a.to_vector() == std::vector<float>{22, 44, 66, 28, 50, 72});
    CHECK_ERROR(dt::shape_error, dt::add(a, b, dt::empty<float>({3})), "devtensor::add", "output",
                "[3]", "[2, 3]");
    auto small = dt::ones<float>({3});
    CHECK_ERROR(dt::shape_error, small += a, "devtensor::operator+=", "[3]", "[2, 3]");
    CHECK(small.to_vector() == std::vector<float>{1, 1, 1});  // unchanged after the error
}

TEST_CASE("add of shapes that don't broadcast names the op and both shapes") {
    CHECK_ERROR(dt::shape_error, dt::add(dt::ones<float>({2, 3}), dt::ones<float>({2})), "devtensor::add",
                "[2, 3]", "[2]");
    CHECK_ERROR(dt::shape_error, dt::ones<float>({4}) + dt::ones<float>({3}), "[4]", "[3]");
}

TEST_CASE("run-time operands on different devices: device_mismatch in PyTorch's words") {
    const dt::tensor<float> cpu = dt::ones<float>({2});
    // a run-time tensor that claims cuda:0 needs a GPU; without one, the check
    // is reached through a second cpu-typed operand on the other side
    if (dt::cuda_available()) {
        const dt::tensor<float> gpu = dt::ones<float>({2}).cuda(0);
        CHECK_ERROR(dt::device_mismatch, gpu + cpu,
                    "expected all tensors to be on the same device, but found at least two devices, "
                    "cuda:0 and cpu (in operator+)");
    }
    const dt::detail::operand on_gpu{"a", dt::device("cuda:0"), {}}, on_cpu{"b", dt::device("cpu"), {}};
    CHECK_ERROR(dt::device_mismatch, dt::detail::check_same_device("add", on_gpu, on_cpu),
                "expected all tensors to be on the same device, but found at least two devices, "
                "cuda:0 and cpu (in add): a of unknown origin, b of unknown origin");
}

TEST_CASE("mixed static and run-time operands: the static type wins") {
    const dt::tensor<float> r = dt::ones<float>({3});
    const auto s = dt::ones<float>({3});
    static_assert(std::is_same_v<decltype(r + s), dt::tensor<float, dt::cpu_device>>);
    static_assert(std::is_same_v<decltype(s + r), dt::tensor<float, dt::cpu_device>>);
    static_assert(std::is_same_v<decltype(r + r), dt::tensor<float, dt::device>>);
    CHECK((r + s).to_vector() == std::vector<float>{2, 2, 2});
}

TEST_CASE("large adds on several threads") {
    const int saved = dt::get_num_threads();
    dt::set_num_threads(4);
    const auto a = dt::full<float>({1 << 20}, 1.5f);
    const auto b = dt::full<float>({1 << 20}, 2.f);
    const auto c = (a + b).to_vector();
    const auto bias = dt::from_values<float>({1, 2, 3, 4}, {4});
    const auto d = (dt::zeros<float>({1 << 18, 4}) + bias).to_vector();
    dt::set_num_threads(saved);
    CHECK(std::count(c.begin(), c.end(), 3.5f) == 1 << 20);
    for (std::size_t i = 0; i < d.size(); ++i) REQUIRE(d[i] == static_cast<float>(i % 4 + 1));
}

#if DEVTENSOR_HAS_CUDA
namespace {
/// Values of T on the CPU: element i is (i * 37 + seed) % 101 - 50.
template <class T>
dt::tensor<T, dt::cpu_device> sample(const dt::shape& s, int seed) {
    std::vector<T> values(static_cast<std::size_t>(s.numel()));
    for (std::size_t i = 0; i < values.size(); ++i)
        values[i] = static_cast<T>(static_cast<int>((i * 37 + static_cast<std::size_t>(seed)) % 101) - 50);
    return dt::from_values<T>(values, s);
}
}  // namespace

// Every element type the elementwise kernels ship for (scripts/kernel-report.py checks
// this binary holds their machine code): float, double, int32, int64.
DEVTENSOR_GPU_TEST_CASE_TEMPLATE("gpu add matches the cpu for every broadcast case", T, float, double, std::int32_t,
                                 std::int64_t) {
    int seed = 0;
    for (const auto& [sa, sb] : broadcast_cases) {
        CAPTURE(sa);
        CAPTURE(sb);
        const auto a = sample<T>(sa, ++seed);
        const auto b = sample<T>(sb, ++seed);
        const auto expected = (a + b).to_vector();
        CHECK((a.cuda() + b.cuda()).to_vector() == expected);
        const dt::tensor<T> ra = a.to(dt::device("cuda:0")), rb = b.to(dt::device("cuda:0"));
        CHECK(dt::add(ra, rb).to_vector() == expected);
        auto out = dt::empty<T>(dt::broadcast_shapes(sa, sb), dt::cuda_device{});
        dt::add(a.cuda(), b.cuda(), out);
        CHECK(out.to_vector() == expected);
    }
}
#endif

TEST_CASE_TEMPLATE("large outputs (streaming stores) and misaligned rows add and fill exactly", T, float, double, int) {
    constexpr std::int64_t rows = 3001, cols = 1027;  // > 8 MiB of output, odd row length
    const auto x = dt::empty<T>({rows, cols});
    const auto bias = dt::empty<T>({cols});
    for (std::int64_t i = 0; i < rows * cols; ++i) x.data()[i] = static_cast<T>(i % 1000);
    for (std::int64_t j = 0; j < cols; ++j) bias.data()[j] = static_cast<T>(j % 7);
    const auto same = dt::add(x, x);
    const auto broadcast = dt::add(x, bias);
    const auto flipped = dt::add(bias, x);
    for (std::int64_t i = 0; i < rows * cols; ++i) {
        REQUIRE(same.data()[i] == static_cast<T>(2 * (i % 1000)));
        REQUIRE(broadcast.data()[i] == static_cast<T>(i % 1000 + (i % cols) % 7));
        REQUIRE(flipped.data()[i] == broadcast.data()[i]);
    }
    const auto filled = dt::full<T>({rows, cols}, T(3));
    CHECK(std::all_of(filled.data(), filled.data() + rows * cols, [](T v) { return v == T(3); }));
    // Starts off 16-byte alignment: the scalar head, then vectors, then the tail.
    for (const std::int64_t offset : {1, 2, 3}) {
        std::vector<T> out(1000, T(-1));
        dt::backend_cpu::map_row(dt::detail::plus{}, dt::backend_cpu::simd::best_isa(), 990, true,
                                 dt::backend_cpu::row_operand<T>{out.data() + offset, 1},
                                 dt::backend_cpu::row_operand<const T>{x.data() + offset, 1},
                                 dt::backend_cpu::row_operand<const T>{bias.data(), 0});
        dt::backend_cpu::simd::stream_fence();
        for (std::int64_t i = 0; i < 990; ++i)
            REQUIRE(out[static_cast<std::size_t>(offset + i)] == static_cast<T>(x.data()[offset + i] + bias.data()[0]));
        CHECK(out[0] == T(-1));
        CHECK(out[static_cast<std::size_t>(offset + 990)] == T(-1));
    }
}

TEST_CASE("an output that partially overlaps an input is refused; the very same tensor is fine") {
    // Two views of one buffer through the wrapping constructor (as from_dlpack makes them).
    const auto storage = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4, 5});
    float* const p = storage->data();
    const dt::tensor<float, dt::cpu_device> first(storage, p, {4}, dt::cpu_device{});
    const dt::tensor<float, dt::cpu_device> shifted(storage, p + 1, {4}, dt::cpu_device{});
    const auto ten = dt::full<float>({4}, 10);
    CHECK_ERROR(dt::error, dt::add(first, ten, shifted), "devtensor::add", "partially overlap", "a [4]");
    CHECK_ERROR(dt::error, dt::add(ten, shifted, first), "devtensor::add", "partially overlap", "b [4]");
    CHECK(*storage == std::vector<float>{1, 2, 3, 4, 5});  // nothing was written
    // A broadcast input that is one row of the output overlaps it partially too.
    const dt::tensor<float, dt::cpu_device> row(storage, p, {2}, dt::cpu_device{});
    const dt::tensor<float, dt::cpu_device> matrix(storage, p, {2, 2}, dt::cpu_device{});
    CHECK_ERROR(dt::error, dt::add(matrix, row, matrix), "partially overlap");
    // Exact aliasing reads each element before writing it.
    dt::add(first, first, first);
    CHECK(*storage == std::vector<float>{2, 4, 6, 8, 5});
    dt::add(first, ten, first);
    CHECK(*storage == std::vector<float>{12, 14, 16, 18, 5});
}

TEST_CASE_TEMPLATE("integer add wraps like PyTorch's (no undefined behaviour)", T, std::int8_t, std::int16_t,
                   std::int32_t, std::int64_t, std::uint8_t, std::uint32_t) {
    constexpr T max = std::numeric_limits<T>::max(), min = std::numeric_limits<T>::min();
    const auto a = dt::from_values<T>({max, max, min, T{1}}, {4});
    const auto b = dt::from_values<T>({T{1}, max, T{0}, T{2}}, {4});
    const auto sum = (a + b).to_vector();
    CHECK(sum[0] == min);                          // max + 1 wraps to min
    CHECK(sum[1] == (std::is_signed_v<T> ? T(-2) : T(max - 1)));  // max + max
    CHECK(sum[2] == min);
    CHECK(sum[3] == T{3});
    // The broadcast path and a scalar operand take the same functor.
    CHECK((a + dt::full<T>({1}, T{1})).to_vector()[0] == min);
}
