// Strided views (DESIGN §11): no copy, shared storage, writes seen both ways;
// view refuses strides it cannot express; every op takes strided operands.
#include "test_support.hpp"

#include <cmath>
#include <sstream>
#include <limits>
#include <utility>
#include <vector>

namespace {
dt::strides st(std::vector<std::int64_t> v) { return dt::strides(v); }
std::vector<float> iota(std::int64_t n, float from = 0) {
    std::vector<float> v(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = from + static_cast<float>(i);
    return v;
}
}  // namespace

TEST_CASE("views share storage: writes through a view are seen by the base and back") {
    auto base = dt::from_values<float>(iota(12), {3, 4});
    const auto row = base[1];
    CHECK(row.shape() == dt::shape{4});
    CHECK(row.data() == base.data() + 4);
    row(2) = 100;
    CHECK(base(1, 2) == 100);
    base(1, 3) = -1;
    CHECK(row(3) == -1);
    const auto column = base.select(1, 2);
    CHECK(column.strides() == st({4}));
    CHECK(column.to_vector() == std::vector<float>{2, 100, 10});
    dt::fill(column, 7.f);
    CHECK(base.to_vector() == std::vector<float>{0, 1, 7, 3, 4, 5, 7, -1, 8, 9, 7, 11});
    const auto tr = base.t();
    tr(3, 0) = 42;  // element (0, 3) of the base
    CHECK(base(0, 3) == 42);
    CHECK(!tr.is_same(base));
    CHECK(tr.t().is_same(base));
}

TEST_CASE("view ops: shapes, strides, negative dims") {
    const auto a = dt::from_values<float>(iota(24), {2, 3, 4});
    CHECK(a.strides() == st({12, 4, 1}));
    CHECK(a.is_contiguous());
    CHECK(a.sizes() == dt::shape{2, 3, 4});
    CHECK(a.size(-1) == 4);
    CHECK(a.stride(0) == 12);
    CHECK(a.dtype() == dt::dtype_v<float>);
    CHECK(a.element_size() == 4);
    CHECK(a.is_cpu());
    CHECK(!a.is_cuda());

    const auto p = a.permute({2, 0, 1});
    CHECK(p.shape() == dt::shape{4, 2, 3});
    CHECK(p.strides() == st({1, 12, 4}));
    CHECK(!p.is_contiguous());
    CHECK(p(3, 1, 2) == a(1, 2, 3));

    const auto t = a.transpose(0, -1);
    CHECK(t.shape() == dt::shape{4, 3, 2});
    CHECK(t(1, 2, 1) == a(1, 2, 1));

    CHECK(a.unsqueeze(0).shape() == dt::shape{1, 2, 3, 4});
    CHECK(a.unsqueeze(-1).shape() == dt::shape{2, 3, 4, 1});
    CHECK(a.unsqueeze(-1).strides() == st({12, 4, 1, 1}));
    CHECK(a.unsqueeze(1).strides() == st({12, 12, 4, 1}));
    CHECK(a.unsqueeze(1).squeeze(1).is_same(a));  // the same storage and view
    CHECK(a.unsqueeze(0).unsqueeze(3).squeeze().shape() == dt::shape{2, 3, 4});
    CHECK(a.squeeze(0).shape() == a.shape());  // size 2: unchanged

    const auto n = a.narrow(2, 1, 2);
    CHECK(n.shape() == dt::shape{2, 3, 2});
    CHECK(n.data() == a.data() + 1);
    CHECK(n.to_vector() == std::vector<float>{1, 2, 5, 6, 9, 10, 13, 14, 17, 18, 21, 22});
    CHECK(a.narrow(-1, -2, 2).data() == a.data() + 2);
    CHECK(a.narrow(0, 2, 0).numel() == 0);

    const auto s = a.select(-2, -1);
    CHECK(s.shape() == dt::shape{2, 4});
    CHECK(s.to_vector() == std::vector<float>{8, 9, 10, 11, 20, 21, 22, 23});

    const auto e = dt::from_values<float>({1, 2, 3}, {3, 1}).expand({2, 3, 4});
    CHECK(e.shape() == dt::shape{2, 3, 4});
    CHECK(e.strides() == st({0, 1, 0}));
    CHECK(e(1, 2, 3) == 3);
    CHECK(dt::from_values<float>({5}, {1}).expand({-1}).shape() == dt::shape{1});
    CHECK(dt::from_values<float>({1, 2}, {2}).expand(dt::shape{3, 2}).to_vector() == std::vector<float>{1, 2, 1, 2, 1, 2});

    CHECK(a.view({6, -1}).shape() == dt::shape{6, 4});
    CHECK(a.view({6, -1}).data() == a.data());
    CHECK(a.flatten().shape() == dt::shape{24});
    CHECK(a.flatten(1).shape() == dt::shape{2, 12});
    CHECK(a.flatten(0, 1).shape() == dt::shape{6, 4});
    CHECK(a.flatten(1).data() == a.data());
    CHECK(a.reshape({4, 6}).data() == a.data());  // contiguous: a view
}

TEST_CASE("view refuses non-viewable strides with a sentence; reshape copies instead") {
    const auto a = dt::from_values<float>(iota(6), {2, 3});
    const auto t = a.t();
    CHECK_ERROR(dt::shape_error, t.view({6}), "devtensor::view", "[3, 2]", "strides [1, 3]", "reshape()");
    CHECK_ERROR(dt::shape_error, a.view({4, 2}), "devtensor::view", "[4, 2]", "size 6");
    CHECK_ERROR(dt::shape_error, a.view({-1, -1}), "only one dimension can be inferred");
    const auto r = t.reshape({6});
    CHECK(r.to_vector() == std::vector<float>{0, 3, 1, 4, 2, 5});
    CHECK(r.data() != a.data());  // a copy
    CHECK(r.origin().op == std::string("reshape"));
    // a transposed view can still merge and split where its strides allow
    const auto b = dt::from_values<float>(iota(24), {2, 3, 4}).permute({1, 0, 2});  // [3, 2, 4]
    CHECK(b.view({3, 2, 2, 2}).strides() == st({4, 12, 2, 1}));
    CHECK_THROWS_AS(b.view({6, 4}), dt::shape_error);
    CHECK(b.reshape({6, 4}).to_vector() == b.contiguous().to_vector());
    CHECK(t.flatten().to_vector() == std::vector<float>{0, 3, 1, 4, 2, 5});
}

TEST_CASE("bad dims and indices: index_error in PyTorch's words") {
    const auto a = dt::ones<float>({2, 3});
    CHECK_ERROR(dt::index_error, a.select(2, 0), "devtensor::select", "[-2, 1]", "got 2");
    CHECK_ERROR(dt::index_error, a.select(0, 2), "index 2", "size 2");
    CHECK_ERROR(dt::index_error, a[-3], "index -3");
    CHECK(a[-1].data() == a.data() + 3);
    CHECK_ERROR(dt::index_error, a.narrow(1, 2, 2), "exceeds dimension size (3)");
    CHECK_ERROR(dt::index_error, a.transpose(0, 5), "devtensor::transpose");
    CHECK_ERROR(dt::shape_error, a.permute({0, 0}), "repeats");
    CHECK_ERROR(dt::shape_error, a.permute({0}), "1 dimensions given");
    CHECK_ERROR(dt::shape_error, a.expand({3, 3}), "non-singleton dimension 0");
    CHECK_ERROR(dt::shape_error, dt::ones<float>({2, 2, 2}).t(), "<= 2 dimensions");
    CHECK_ERROR(dt::index_error, dt::ones<float>({}).select(0, 0), "0-dim");
    CHECK_ERROR(dt::index_error, a.flatten(1, 0), "start_dim");
}

TEST_CASE("undefined tensors through every view op: an error naming the op") {
    const dt::tensor<float, dt::cpu_device> u;
    CHECK_ERROR(dt::error, u.view({1}), "view", "undefined");
    CHECK_ERROR(dt::error, u.reshape({1}), "reshape", "undefined");
    CHECK_ERROR(dt::error, u.t(), "undefined");
    CHECK_ERROR(dt::error, u.transpose(0, 1), "undefined");
    CHECK_ERROR(dt::error, u.permute({}), "undefined");
    CHECK_ERROR(dt::error, u.narrow(0, 0, 0), "undefined");
    CHECK_ERROR(dt::error, u.select(0, 0), "undefined");
    CHECK_ERROR(dt::error, u[0], "undefined");
    CHECK_ERROR(dt::error, u.expand({1}), "undefined");
    CHECK_ERROR(dt::error, u.squeeze(), "undefined");
    CHECK_ERROR(dt::error, u.unsqueeze(0), "undefined");
    CHECK_ERROR(dt::error, u.flatten(), "undefined");
    CHECK_ERROR(dt::error, u.contiguous(), "undefined");
    CHECK_ERROR(dt::error, u.clone(), "undefined");
    CHECK_ERROR(dt::error, u.to<int>(), "undefined");
    CHECK_ERROR(dt::error, dt::zeros_like(u), "zeros_like", "undefined");
}

TEST_CASE("scalars and empty tensors") {
    const auto s = dt::full<float>({}, 3.f);
    CHECK(s.dim() == 0);
    CHECK(s.t().item() == 3.f);
    CHECK(s.unsqueeze(0).shape() == dt::shape{1});
    CHECK(s.flatten().shape() == dt::shape{1});
    CHECK(s.view({1, 1}).item() == 3.f);
    CHECK(s.expand({2, 2}).to_vector() == std::vector<float>{3, 3, 3, 3});
    const auto e = dt::ones<float>({0, 3});
    CHECK(e.t().shape() == dt::shape{3, 0});
    CHECK(e.t().contiguous().numel() == 0);
    CHECK(e.view({3, 0}).numel() == 0);
    CHECK((e.t() + dt::ones<float>({3, 1})).shape() == dt::shape{3, 0});
    CHECK(e.clone().numel() == 0);
}

TEST_CASE("contiguous and clone: self when contiguous, a deep copy otherwise") {
    const auto a = dt::from_values<float>(iota(6), {2, 3});
    CHECK(a.contiguous().is_same(a));
    const auto c = a.t().contiguous();
    CHECK(c.is_contiguous());
    CHECK(c.to_vector() == std::vector<float>{0, 3, 1, 4, 2, 5});
    const auto k = a.clone();
    CHECK(k.data() != a.data());
    k(0, 0) = 9;
    CHECK(a(0, 0) == 0);
    CHECK(k.origin().op == std::string("clone"));
}

TEST_CASE_TEMPLATE("every elementwise path takes strided operands, on any thread count", T, float, double, std::int32_t,
                   std::int8_t) {
    const auto big = dt::arange<T>(0, 97 * 61).view({97, 61});
    const auto other = dt::arange<T>(0, 61 * 97).view({61, 97});
    const int threads_before = dt::get_num_threads();
    for (const int threads : {1, 2, 7}) {
        CAPTURE(threads);
        dt::set_num_threads(threads);
        const auto got = big + other.t();  // a transposed input: the tiled path
        const auto want = big + other.t().contiguous();
        CHECK(got.to_vector() == want.to_vector());
        const auto n = big.narrow(1, 3, 50);  // rows with a gap between them
        CHECK((n * n).to_vector() == (n.contiguous() * n.contiguous()).to_vector());
        const auto e = big.select(1, 5).unsqueeze(1).expand({97, 61});  // stride 0 along rows
        CHECK((big + e).to_vector() == (big + e.contiguous()).to_vector());
        // into a strided output: the even columns of a fresh tensor
        auto out = dt::zeros<T>({97, 122});
        const auto even = out.view({97, 61, 2}).select(2, 0);
        dt::add(big, other.t(), even);
        CHECK(even.to_vector() == want.to_vector());
        CHECK(out.view({97, 61, 2}).select(2, 1).to_vector() == dt::zeros<T>({97, 61}).to_vector());
    }
    dt::set_num_threads(threads_before);
}

TEST_CASE("transposed copies of large matrices are exact (the blocked transpose)") {
    for (const std::int64_t rows : {1, 63, 64, 65, 1000})
        for (const std::int64_t cols : {1, 17, 128, 513}) {
            const auto a = dt::arange<float>(0, static_cast<double>(rows * cols)).view({rows, cols});
            const auto t = a.t().contiguous();
            bool same = true;
            for (std::int64_t i = 0; i < cols && same; ++i)
                for (std::int64_t j = 0; j < rows; ++j) same = same && t(i, j) == a(j, i);
            CHECK(same);
            const auto d = a.to<double>().t().contiguous();
            CHECK(d.to_vector() == t.to<double>().to_vector());
        }
}

TEST_CASE("an output may be the very input; partial overlap and self-overlapping outputs are refused") {
    auto a = dt::from_values<float>(iota(8), {8});
    a += a;
    CHECK(a.to_vector() == std::vector<float>{0, 2, 4, 6, 8, 10, 12, 14});
    CHECK_ERROR(dt::error, dt::add(a.narrow(0, 0, 4), a.narrow(0, 0, 4), a.narrow(0, 2, 4)), "partially overlap");
    const auto e = dt::ones<float>({1}).expand({4});
    CHECK_ERROR(dt::error, dt::add(dt::ones<float>({4}), dt::ones<float>({4}), e), "share one memory location");
    CHECK_ERROR(dt::error, dt::fill(e, 2.f), "share one memory location");
    CHECK(e.to_vector() == std::vector<float>{1, 1, 1, 1});
    auto r = a.view({2, 4});
    auto col = r.select(1, 0);
    // the same storage, other elements, interleaved: refused conservatively (clone one first)
    CHECK_ERROR(dt::error, col += r.select(1, 1), "partially overlap");
    col += r.select(1, 1).clone();
    CHECK(r(0, 0) == 2);
    CHECK(r(1, 0) == 8 + 10);
}

TEST_CASE("to<U>: PyTorch's conversion rules, saturating float -> int and NaN -> 0") {
    constexpr float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    const auto f = dt::from_values<float>({-2.7f, -0.5f, 0.f, 0.9f, 2.5f, 1e10f, -1e10f, inf, -inf, nan}, {10});
    CHECK(f.to<std::int32_t>().to_vector() ==
          std::vector<std::int32_t>{-2, 0, 0, 0, 2, INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, 0});
    CHECK(f.to<std::int8_t>().to_vector() == std::vector<std::int8_t>{-2, 0, 0, 0, 2, 127, -128, 127, -128, 0});
    CHECK(f.to<std::uint8_t>().to_vector() == std::vector<std::uint8_t>{0, 0, 0, 0, 2, 255, 0, 255, 0, 0});
    CHECK(f.to<std::int64_t>().to_vector()[5] == 10000000000);
    CHECK(f.to<std::int64_t>().to_vector()[7] == INT64_MAX);
    CHECK(f.to<bool>().to_vector() == std::vector<bool>{true, true, false, true, true, true, true, true, true, true});
    CHECK(f.to<double>().to_vector()[0] == static_cast<double>(-2.7f));
    CHECK(dt::from_values<double>({9.3e18, -9.3e18, 9.2e18}, {3}).to<std::int64_t>().to_vector() ==
          std::vector<std::int64_t>{INT64_MAX, INT64_MIN, 9200000000000000000});
    CHECK(dt::from_values<std::int32_t>({300, -1, 7}, {3}).to<std::uint8_t>().to_vector() ==
          std::vector<std::uint8_t>{44, 255, 7});  // integers wrap
    CHECK(dt::from_values<bool>({true, false}, {2}).to<float>().to_vector() == std::vector<float>{1, 0});
    const auto same = f.to<float>();
    CHECK(same.is_same(f));
    const auto strided = dt::from_values<float>({1.5f, 2.5f, 3.5f, 4.5f}, {2, 2}).t().to<int>();
    CHECK(strided.to_vector() == std::vector<int>{1, 3, 2, 4});
    CHECK(f.to<int>(dt::cpu_device{}).to_vector()[0] == -2);
}

TEST_CASE("factories: *_like, arange, linspace") {
    const auto a = dt::from_values<double>({1, 2, 3, 4, 5, 6}, {2, 3}).t();
    CHECK(dt::zeros_like(a).shape() == dt::shape{3, 2});
    CHECK(dt::zeros_like(a).is_contiguous());
    CHECK(dt::ones_like(a).to_vector() == std::vector<double>(6, 1.0));
    CHECK(dt::full_like(a, 2.5).to_vector() == std::vector<double>(6, 2.5));
    CHECK(dt::empty_like(a).shape() == a.shape());
    CHECK(dt::rand_like(a).shape() == a.shape());
    CHECK(dt::randn_like(a).shape() == a.shape());
    CHECK(dt::randn_like(a).origin().op == std::string("randn"));
    CHECK(dt::arange<int>(5).to_vector() == std::vector<int>{0, 1, 2, 3, 4});
    CHECK(dt::arange<float>(1, 2, 0.25).to_vector() == std::vector<float>{1, 1.25, 1.5, 1.75});
    CHECK(dt::arange<std::int64_t>(10, 0, -3).to_vector() == std::vector<std::int64_t>{10, 7, 4, 1});
    CHECK(dt::arange<float>(0, 0).numel() == 0);
    CHECK_ERROR(dt::shape_error, dt::arange<float>(0, 1, 0), "devtensor::arange", "step");
    CHECK_ERROR(dt::shape_error, dt::arange<float>(0, 1, -1), "devtensor::arange");
    const auto l = dt::linspace<float>(0, 1, 5);
    CHECK(l.to_vector() == std::vector<float>{0, 0.25, 0.5, 0.75, 1});
    CHECK(dt::linspace<double>(-1, 1, 1).to_vector() == std::vector<double>{-1});
    CHECK(dt::linspace<double>(-1, 1, 0).numel() == 0);
    CHECK(dt::linspace<float>(0, 3, 7).to_vector().back() == 3.f);
    CHECK_THROWS_AS((void)dt::linspace<float>(0, 1, -1), dt::shape_error);
}

TEST_CASE("dtype prints as PyTorch's") {
    std::ostringstream os;
    os << dt::ones<std::int64_t>({1}).dtype() << " " << dt::dtype_v<bool> << " " << dt::dtype_v<double>;
    CHECK(os.str() == "torch.int64 torch.bool torch.float64");
    CHECK(dt::dtype_v<float> != dt::dtype_v<double>);
}

#if DEVTENSOR_HAS_CUDA
DEVTENSOR_GPU_TEST_CASE("gpu views, strided operands and conversions match the cpu") {
    const auto a = dt::arange<float>(0, 97 * 61).view({97, 61});
    const auto g = a.cuda();
    CHECK(g.t().contiguous().to_vector() == a.t().contiguous().to_vector());
    CHECK((g + g.t().t()).to_vector() == (a + a).to_vector());
    const auto sq = dt::arange<float>(0, 61 * 61).view({61, 61});
    CHECK((sq.cuda() * sq.cuda().t()).to_vector() == (sq * sq.t()).to_vector());
    CHECK(g.narrow(1, 3, 50).to_vector() == a.narrow(1, 3, 50).to_vector());
    CHECK(g.narrow(1, 3, 50).cpu().to_vector() == a.narrow(1, 3, 50).to_vector());
    CHECK(a.narrow(1, 3, 50).cuda().to_vector() == a.narrow(1, 3, 50).to_vector());
    const auto f = dt::from_values<float>({-2.7f, 1e10f, -1e10f, std::numeric_limits<float>::quiet_NaN()}, {4});
    CHECK(f.cuda().to<std::int32_t>().to_vector() == f.to<std::int32_t>().to_vector());
    CHECK(f.to<std::int8_t>(dt::cuda_device{}).to_vector() == f.to<std::int8_t>().to_vector());
    CHECK(dt::arange<double>(3, 40, 0.7, dt::cuda_device{}).to_vector() == dt::arange<double>(3, 40, 0.7).to_vector());
    CHECK(dt::linspace<float>(-3, 11, 1001, dt::cuda_device{}).to_vector() == dt::linspace<float>(-3, 11, 1001).to_vector());
    auto z = dt::zeros<float>({4, 6}, dt::cuda_device{});
    dt::fill(z.narrow(1, 2, 2), 5.f);
    auto zc = dt::zeros<float>({4, 6});
    dt::fill(zc.narrow(1, 2, 2), 5.f);
    CHECK(z.to_vector() == zc.to_vector());
    CHECK(dt::relu(g).to_vector() == dt::relu(a).to_vector());
}

DEVTENSOR_GPU_TEST_CASE_TEMPLATE("gpu transposed copies (the tiled transpose kernel) match the cpu bit for bit", T,
                                 float, double, std::int32_t, std::int64_t, std::int8_t, bool) {
    for (const auto& [rows, cols] : std::vector<std::pair<std::int64_t, std::int64_t>>{
             {1, 1}, {31, 33}, {33, 31}, {64, 64}, {100, 7}, {7, 100}, {257, 129}, {1000, 1500}}) {
        CAPTURE(rows);
        CAPTURE(cols);
        const auto x = dt::arange<float>(0, rows * cols).view({rows, cols}).to<T>();
        CHECK(x.cuda().t().contiguous().to_vector() == x.t().contiguous().to_vector());
        CHECK(x.cuda().transpose(0, 1).contiguous().cpu().to_vector() == x.t().contiguous().to_vector());
    }
    const auto f = dt::rand<float>({300, 200}).to<T>();
    CHECK(f.cuda().t().contiguous().to_vector() == f.t().contiguous().to_vector());
    // a batch of planes, and a transposed window of a wider matrix
    const auto b = dt::arange<float>(0, 3 * 33 * 70).view({3, 33, 70}).to<T>();
    CHECK(b.cuda().transpose(1, 2).contiguous().to_vector() == b.transpose(1, 2).contiguous().to_vector());
    CHECK(b.cuda()[1].narrow(1, 5, 40).t().contiguous().to_vector() == b[1].narrow(1, 5, 40).t().contiguous().to_vector());
}
#endif

TEST_CASE("matmul, linear and fill_uniform take strided operands") {
    const auto a = dt::rand<float>({40, 30}), b = dt::rand<float>({30, 20}), w = dt::rand<float>({20, 30});
    const auto bias = dt::rand<float>({40}).narrow(0, 0, 20);
    for (const auto& [x, y] : {std::pair{a, b}, std::pair{a.t().contiguous().t(), b}, std::pair{a, b.t().contiguous().t()}}) {
        CHECK(dt::matmul(x, y).to_vector() == dt::matmul(a, b).to_vector());
    }
    CHECK(dt::matmul(a.narrow(1, 5, 10), b.narrow(0, 5, 10)).to_vector() ==
          dt::matmul(a.narrow(1, 5, 10).contiguous(), b.narrow(0, 5, 10).contiguous()).to_vector());
    const auto want = dt::linear(a, w, bias.contiguous()).to_vector();
    CHECK(dt::linear(a, w, bias).to_vector() == want);
    CHECK(dt::linear(a.t().contiguous().t(), w.t().contiguous().t(), bias).to_vector() == want);
    CHECK(dt::linear(a, w.t().contiguous().t(), bias).to_vector() == want);  // a transposed weight, read as it lies
    auto m = dt::zeros<float>({4, 6});
    dt::generator g1(5), g2(5);
    dt::fill_uniform(m.narrow(1, 1, 3), g1);
    CHECK(m.narrow(1, 1, 3).to_vector() == dt::rand<float>({4, 3}, dt::cpu_device{}, g2).to_vector());
    CHECK(m.select(1, 0).to_vector() == std::vector<float>(4, 0.f));
}
