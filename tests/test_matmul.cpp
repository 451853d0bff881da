// ops/matmul.hpp: the product against a plain triple loop, odd sizes, errors.
#include "test_support.hpp"

#include <vector>

namespace {
/// The obvious triple loop in double: the reference.
template <class T>
std::vector<double> reference_matmul(const dt::tensor<T, dt::cpu_device>& a, const dt::tensor<T, dt::cpu_device>& b) {
    const std::int64_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
    std::vector<double> c(static_cast<std::size_t>(m * n));
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
            double s = 0;
            for (std::int64_t p = 0; p < k; ++p) s += static_cast<double>(a(i, p)) * static_cast<double>(b(p, j));
            c[static_cast<std::size_t>(i * n + j)] = s;
        }
    return c;
}

template <class T>
void check_close(const std::vector<T>& got, const std::vector<double>& expected, double k) {
    REQUIRE(got.size() == expected.size());
    const double tolerance = (std::is_same_v<T, float> ? 2e-6 : 1e-14) * (k + 1);
    for (std::size_t i = 0; i < got.size(); ++i)
        REQUIRE(static_cast<double>(got[i]) == doctest::Approx(expected[i]).epsilon(tolerance).scale(1));
}

struct mnk { std::int64_t m, n, k; };
const std::vector<mnk> sizes = {{1, 1, 1}, {7, 7, 7}, {33, 17, 9}, {1, 100, 300}, {100, 1, 300},
                                {6, 16, 256}, {97, 129, 257}, {200, 70, 600}, {5, 3, 0}, {0, 4, 3}};
}  // namespace

TEST_CASE_TEMPLATE("matmul matches the triple loop", T, float, double) {
    dt::generator gen(17);
    for (const auto [m, n, k] : sizes) {
        CAPTURE(m);
        CAPTURE(n);
        CAPTURE(k);
        const auto a = dt::rand<T>({m, k}, dt::cpu_device{}, gen);
        const auto b = dt::rand<T>({k, n}, dt::cpu_device{}, gen);
        const auto c = dt::matmul(a, b);
        CHECK(c.shape() == dt::shape{m, n});
        check_close(c.to_vector(), reference_matmul(a, b), static_cast<double>(k));
    }
}

TEST_CASE("integer matmul is exact") {
    const auto a = dt::from_values<int>({1, 2, 3, 4, 5, 6}, {2, 3});
    const auto b = dt::from_values<int>({7, 8, 9, 10, 11, 12}, {3, 2});
    CHECK(dt::matmul(a, b).to_vector() == std::vector<int>{58, 64, 139, 154});
}

TEST_CASE("matmul on several threads gives the single-thread result") {
    dt::generator gen(1);
    const auto a = dt::rand<float>({300, 200}, dt::cpu_device{}, gen);
    const auto b = dt::rand<float>({200, 500}, dt::cpu_device{}, gen);
    const int saved = dt::get_num_threads();
    dt::set_num_threads(1);
    const auto one = dt::matmul(a, b).to_vector();
    dt::set_num_threads(3);
    const auto three = dt::matmul(a, b).to_vector();
    dt::set_num_threads(saved);
    CHECK(one == three);  // threads split rows; each element's sum order is fixed
}

TEST_CASE("matmul shape errors name the op and both shapes") {
    CHECK_ERROR(dt::shape_error, dt::matmul(dt::ones<float>({2, 3}), dt::ones<float>({4, 5})),
                "devtensor::matmul", "[2, 3]", "[4, 5]");
    CHECK_ERROR(dt::shape_error, dt::matmul(dt::ones<float>({2, 3, 4}), dt::ones<float>({5, 5})), "[2, 3, 4]");
    CHECK_ERROR(dt::shape_error, dt::matmul(dt::ones<float>({3}), dt::ones<float>({4})), "[3]", "[4]");
    CHECK_ERROR(dt::shape_error, dt::matmul(dt::ones<float>({2, 2, 3}), dt::ones<float>({3, 3, 1})), "devtensor::matmul",
                "[2]", "[3]");  // batch dimensions that do not broadcast
}

#if DEVTENSOR_HAS_CUDA
DEVTENSOR_GPU_TEST_CASE("gpu matmul matches the cpu") {
    dt::generator gen(23);
    for (const auto [m, n, k] : sizes) {
        CAPTURE(m);
        CAPTURE(n);
        CAPTURE(k);
        const auto a = dt::rand<float>({m, k}, dt::cpu_device{}, gen);
        const auto b = dt::rand<float>({k, n}, dt::cpu_device{}, gen);
        const auto expected = reference_matmul(a, b);
        check_close(dt::matmul(a.cuda(), b.cuda()).to_vector(), expected, static_cast<double>(k));
        const dt::tensor<float> ra = a.cuda(), rb = b.cuda();
        check_close(dt::matmul(ra, rb).to_vector(), expected, static_cast<double>(k));
    }
}

DEVTENSOR_GPU_TEST_CASE_TEMPLATE("gpu matmul and linear on every kernel the launcher picks match the cpu", T, float, double) {
    // [m, n, k]: 1537 x 1411 gives fp32 the large tile (>= 132 blocks of 128 x 128), off the tile;
    // m <= 16 gives linear the GEMV kernel (batch 4 and 16 tiles); the rest the small tile.
    const std::vector<mnk> shapes = {{1537, 1411, 37}, {1024, 2176, 64}, {1, 4099, 1030}, {5, 33, 2051},
                                     {16, 1000, 515}, {17, 300, 129}};
    dt::generator gen(29);
    for (const auto [m, n, k] : shapes) {
        CAPTURE(m);
        CAPTURE(n);
        CAPTURE(k);
        const auto a = dt::rand<T>({m, k}, dt::cpu_device{}, gen);
        const auto b = dt::rand<T>({k, n}, dt::cpu_device{}, gen);
        const auto w = dt::rand<T>({n, k}, dt::cpu_device{}, gen);
        const auto bias = dt::rand<T>({n}, dt::cpu_device{}, gen);
        const auto to_double = [](const std::vector<T>& v) { return std::vector<double>(v.begin(), v.end()); };
        check_close(dt::matmul(a.cuda(), b.cuda()).to_vector(), to_double(dt::matmul(a, b).to_vector()),
                    static_cast<double>(k));
        check_close(dt::linear(a.cuda(), w.cuda(), bias.cuda()).to_vector(),
                    to_double(dt::linear(a, w, bias).to_vector()), static_cast<double>(k));
        check_close(dt::linear(a.cuda(), w.cuda()).to_vector(), to_double(dt::linear(a, w).to_vector()),
                    static_cast<double>(k));
    }
}
#endif
