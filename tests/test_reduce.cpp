// The reduction engine through sum and mean: values, dims and keepdim, every
// layout path (rows, columns, strided, copied), the order of detail/reduce.hpp
// kept bit for bit on every path, thread count and in the CUDA kernels' bodies
// (run on the host), errors, and empty or expanded inputs.
#include "test_support.hpp"

#include <devtensor/backend/cuda/reduce_phases.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

namespace {

/// A generator with `seed` that lives to the end of the run (the factories take an lvalue).
dt::generator& seeded(std::uint64_t seed) {
    static std::vector<std::unique_ptr<dt::generator>> kept;
    kept.push_back(std::make_unique<dt::generator>(seed));
    return *kept.back();
}

/// The kernels' bodies over a simulated grid: every item, every lane, folded as the shuffles fold.
template <class A, class TO = A, class R, class TI>
std::vector<TO> emulate_reduce(const R& r, const dt::detail::reduce_plan& p, const TI* in) {
    namespace cu = dt::backend_cuda;
    std::vector<TO> out(static_cast<std::size_t>(p.outputs()));
    std::vector<A> partials(static_cast<std::size_t>(p.outputs() * p.chunks()));
    constexpr int L = dt::detail::reduce_chains<A>;
    if (p.inner == 1) {
        for (std::int64_t item = 0; item < p.outer * p.chunks(); ++item) {
            A lanes[L];
            for (int l = 0; l < L; ++l) lanes[l] = cu::reduce_row_lane<A>(r, p, in, item, l);
            cu::reduce_put(r, p, item, dt::detail::fold_pairwise(r, lanes), out.data(), partials.data());
        }
    } else {
        for (std::int64_t item = 0; item < p.outputs() * p.chunks(); ++item)
            cu::reduce_put(r, p, item, cu::reduce_column_item<A>(r, p, in, item), out.data(), partials.data());
    }
    if (p.chunks() > 1)
        for (std::int64_t k = 0; k < p.outputs(); ++k) cu::reduce_partials_output(r, p, partials.data(), out.data(), k);
    return out;
}

}  // namespace

TEST_CASE_TEMPLATE("sum and mean over dims, with and without keepdim", T, float, double) {
    const auto a = dt::arange<T>(0, 24).view({2, 3, 4});
    CHECK(dt::sum(a).item() == T(276));
    CHECK(dt::sum(a).dim() == 0);
    CHECK(dt::mean(a).item() == T(11.5));
    const auto s1 = dt::sum(a, {1});
    CHECK(s1.shape() == dt::shape{2, 4});
    CHECK(s1.to_vector() == std::vector<T>{12, 15, 18, 21, 48, 51, 54, 57});
    CHECK(dt::sum(a, {1}, true).shape() == dt::shape{2, 1, 4});
    CHECK(dt::sum(a, {-1}).to_vector() == std::vector<T>{6, 22, 38, 54, 70, 86});
    CHECK(dt::sum(a, {0, 2}).to_vector() == std::vector<T>{60, 92, 124});
    CHECK(dt::sum(a, {2, 0}, true).shape() == dt::shape{1, 3, 1});
    CHECK(dt::sum(a, {}, true).shape() == dt::shape{1, 1, 1});  // an empty list: all dims, as torch
    CHECK(dt::mean(a, {0}).to_vector() == std::vector<T>{6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17});
    CHECK(dt::sum(a).origin().op == std::string("sum"));
    CHECK(dt::mean(a, {1}).origin().op == std::string("mean"));
}

TEST_CASE("sum of integers and bool gives int64_t and wraps") {
    const auto b = dt::from_values<bool>({true, false, true, true}, {2, 2});
    const dt::tensor<std::int64_t, dt::cpu_device> n = dt::sum(b);
    CHECK(n.item() == 3);
    CHECK(dt::sum(b, {0}).to_vector() == std::vector<std::int64_t>{2, 1});
    const auto i8 = dt::full<std::int8_t>({300}, 100);
    CHECK(dt::sum(i8).item() == 30000);  // no int8 overflow: summed as int64
    const auto big = dt::from_values<std::int64_t>({std::numeric_limits<std::int64_t>::max(), 1}, {2});
    CHECK(dt::sum(big).item() == std::numeric_limits<std::int64_t>::min());
    const auto u = dt::from_values<std::uint8_t>({255, 255}, {2});
    CHECK(dt::sum(u).item() == 510);
}

TEST_CASE("sum and mean: empty, expanded, 0-dim and one-element inputs") {
    const auto e = dt::zeros<float>({3, 0});
    CHECK(dt::sum(e).item() == 0.f);
    CHECK(std::isnan(dt::mean(e).item()));
    CHECK(dt::sum(e, {1}).to_vector() == std::vector<float>{0, 0, 0});
    CHECK(dt::sum(e, {0}).shape() == dt::shape{0});
    CHECK(dt::sum(e, {0}, true).shape() == dt::shape{1, 0});
    const auto x = dt::arange<float>(0, 4).view({1, 4}).expand({1000, 4});  // stride 0 along the reduced dim
    CHECK(dt::sum(x, {0}).to_vector() == std::vector<float>{0, 1000, 2000, 3000});
    const auto s = dt::full<double>({}, 2.5);
    CHECK(dt::sum(s).item() == 2.5);
    CHECK(dt::sum(s, {0}).shape() == dt::shape{});
    CHECK(dt::mean(dt::full<float>({1, 1}, -0.5f), {1}).to_vector() == std::vector<float>{-0.5f});
}

TEST_CASE("sum and mean refuse undefined inputs and bad dims with a sentence") {
    dt::tensor<float, dt::cpu_device> undefined;
    CHECK_ERROR(dt::error, (void)dt::sum(undefined), "devtensor::sum", "undefined");
    const auto a = dt::ones<float>({2, 3});
    CHECK_ERROR(dt::index_error, (void)dt::sum(a, {2}), "devtensor::sum", "dimension out of range");
    CHECK_ERROR(dt::shape_error, (void)dt::mean(a, {1, -1}), "devtensor::mean", "more than once");
}

TEST_CASE("sum is accurate on a long row (chunks of chains, combined pairwise)") {
    const std::int64_t n = 3'000'001;
    auto x = dt::rand<float>({n}, dt::cpu_device{}, seeded(7));
    double reference = 0;
    for (const float v : x.to_vector()) reference += v;
    const double got = dt::sum(x).item();
    CHECK(std::abs(got - reference) / reference < 1e-6);
    CHECK(dt::mean(x.to<double>()).item() == doctest::Approx(reference / static_cast<double>(n)).epsilon(1e-12));
}

TEST_CASE_TEMPLATE("every layout path and thread count gives the order's bits", T, float, double) {
    // shapes around the chunk (4096) and chain (64-byte) boundaries, reduced along each way it can lie
    const int threads_before = dt::get_num_threads();
    const std::vector<dt::shape> shapes{{3, 5}, {17, 4097}, {2, 9000, 3}, {4096 * 2 + 17, 5}, {1, 20000}, {33, 70}};
    for (const auto& s : shapes) {
        const auto x = dt::randn<T>(s, dt::cpu_device{}, seeded(11));
        for (std::int64_t d = 0; d < static_cast<std::int64_t>(s.rank()); ++d) {
            CAPTURE(s.to_string());
            CAPTURE(d);
            dt::set_num_threads(1);
            const auto want = dt::sum(x, {d}).to_vector();
            // the order's reference, output by output
            const auto plan = dt::detail::plan_in_place(x.shape(), x.strides(), dt::detail::reduced_dims("sum", {d}, s.rank()));
            REQUIRE(plan.has_value());
            std::vector<T> reference;
            for (std::int64_t o = 0; o < plan->outer; ++o)
                for (std::int64_t j = 0; j < plan->inner; ++j)
                    reference.push_back(dt::detail::reduce_order_output<T>(dt::detail::sum_op{}, *plan, x.data(), o, j));
            CHECK(same_bits(want, reference));
            CHECK(same_bits(emulate_reduce<T>(dt::detail::sum_op{}, *plan, x.data()), want));
            for (const int threads : {2, 7}) {
                dt::set_num_threads(threads);
                CHECK(same_bits(dt::sum(x, {d}).to_vector(), want));
            }
            // the same values laid out otherwise (a transposed copy, read transposed)
            const auto moved = x.transpose(0, static_cast<std::int64_t>(s.rank()) - 1).contiguous().transpose(0, static_cast<std::int64_t>(s.rank()) - 1);
            CHECK(same_bits(dt::sum(moved, {d}).to_vector(), want));
        }
    }
    dt::set_num_threads(threads_before);
    // strided: every other column; interleaved kept/reduced dims (the copying path)
    const auto base = dt::randn<T>({40, 64, 6}, dt::cpu_device{}, seeded(3));
    const auto narrow = base.narrow(1, 1, 50);
    CHECK(same_bits(dt::sum(narrow, {1}).to_vector(), dt::sum(narrow.contiguous(), {1}).to_vector()));
    CHECK(same_bits(dt::sum(base, {0, 2}).to_vector(), dt::sum(base.permute({1, 0, 2}).contiguous(), {1, 2}).to_vector()));
    CHECK(same_bits(dt::mean(base.permute({2, 0, 1}), {0, 2}).to_vector(),
                    dt::mean(base.permute({0, 2, 1}).contiguous(), {1, 2}).to_vector()));
}

TEST_CASE_TEMPLATE("short rows (the vector tail and fold): the order's bits with signed zeros, NaN and infinities",
                   T, float, double) {
    // Rows of 1 to 40 elements: every count of a partial last vector, rows shorter than the
    // chains and rows past them. All -0.0 rows sum to +0.0 (a chain's identity is +0.0) and
    // keep -0.0 through amax when every element is -0.0; NaN and ±inf in some rows.
    const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
    for (std::int64_t n = 1; n <= 40; ++n) {
        CAPTURE(n);
        auto x = dt::randn<T>({6, n}, dt::cpu_device{}, seeded(static_cast<std::uint64_t>(n)));
        for (std::int64_t j = 0; j < n; ++j) x(0, j) = T(-0.0);
        x(1, n - 1) = nan;
        x(2, n / 2) = inf;
        x(3, 0) = -inf;
        x(4, n - 1) = T(-0.0);
        const auto plan = dt::detail::plan_in_place(x.shape(), x.strides(), dt::detail::reduced_dims("sum", {1}, 2));
        REQUIRE(plan.has_value());
        const auto reference = [&](const auto& r) {
            std::vector<T> out;
            for (std::int64_t o = 0; o < plan->outer; ++o)
                out.push_back(dt::detail::reduce_order_output<T>(r, *plan, x.data(), o, 0));
            return out;
        };
        CHECK(same_bits(dt::sum(x, {1}).to_vector(), reference(dt::detail::sum_op{})));
        CHECK(same_bits(dt::amax(x, {1}).to_vector(), reference(dt::detail::extreme_op<true>{})));
        CHECK(same_bits(dt::amin(x, {1}).to_vector(), reference(dt::detail::extreme_op<false>{})));
    }
}

TEST_CASE("the emulated kernels give the cpu's bits for multi-chunk rows and columns, sum and mean") {
    const auto x = dt::randn<float>({3, 10000, 5}, dt::cpu_device{}, seeded(5));
    for (const std::int64_t d : {0, 1, 2}) {
        CAPTURE(d);
        const auto plan = dt::detail::plan_in_place(x.shape(), x.strides(), dt::detail::reduced_dims("mean", {d}, 3));
        REQUIRE(plan.has_value());
        CHECK(same_bits(emulate_reduce<float>(dt::detail::mean_op{}, *plan, x.data()), dt::mean(x, {d}).to_vector()));
    }
    const auto i = dt::randint<std::int32_t>(-1000, 1000, {9000, 3}, dt::cpu_device{}, seeded(2));
    const auto plan = dt::detail::plan_in_place(i.shape(), i.strides(), dt::detail::reduced_dims("sum", {0}, 2));
    REQUIRE(plan.has_value());
    CHECK(emulate_reduce<std::int64_t>(dt::detail::sum_op{}, *plan, i.data()) == dt::sum(i, {0}).to_vector());
}

TEST_CASE("reduce plans: read in place when the layout allows, else not") {
    using dt::detail::plan_in_place;
    using dt::detail::reduced_dims;
    const dt::shape s{4, 5, 6};
    const auto st = dt::strides::contiguous(s);
    const auto p = plan_in_place(s, st, reduced_dims("sum", {1}, 3));
    REQUIRE(p.has_value());
    CHECK(p->outer == 4);
    CHECK(p->n == 5);
    CHECK(p->inner == 6);
    CHECK(p->n_stride == 6);
    CHECK(plan_in_place(s, st, reduced_dims("sum", {1, 2}, 3))->n == 30);
    CHECK_FALSE(plan_in_place(s, st, reduced_dims("sum", {0, 2}, 3)).has_value());
    const auto tt = dt::ones<float>({6, 5}).t();  // rows of a transposed matrix: read as columns
    const auto q = plan_in_place(tt.shape(), tt.strides(), reduced_dims("sum", {1}, 2));
    REQUIRE(q.has_value());
    CHECK(q->outer == 1);
    CHECK(q->inner == 5);
    CHECK(q->inner_stride == 1);
    CHECK(q->n_stride == 5);
    const auto t = dt::ones<float>({4, 5, 6}).permute({0, 2, 1});  // reduced pair not walkable as one
    CHECK_FALSE(plan_in_place(t.shape(), t.strides(), reduced_dims("sum", {1, 2}, 3)).has_value());
}

#if DEVTENSOR_HAS_CUDA
DEVTENSOR_GPU_TEST_CASE_TEMPLATE("gpu sum and mean match the cpu bit for bit", T, float, double) {
    const auto x = dt::randn<T>({7, 9000, 3}, dt::cpu_device{}, seeded(9));
    const auto g = x.cuda();
    for (const std::int64_t d : {0, 1, 2}) {
        CAPTURE(d);
        CHECK(same_bits(dt::sum(g, {d}).to_vector(), dt::sum(x, {d}).to_vector()));
        CHECK(same_bits(dt::mean(g, {d}, true).to_vector(), dt::mean(x, {d}, true).to_vector()));
    }
    CHECK(same_bits(dt::sum(g).to_vector(), dt::sum(x).to_vector()));
    CHECK(same_bits(dt::sum(g.permute({2, 0, 1}), {0, 2}).to_vector(), dt::sum(x.permute({2, 0, 1}), {0, 2}).to_vector()));
    const auto i = dt::randint<std::int32_t>(-5, 5, {100, 50}, dt::cpu_device{}, seeded(1));
    CHECK(dt::sum(i.cuda(), {1}).to_vector() == dt::sum(i, {1}).to_vector());
    CHECK(dt::sum(dt::zeros<T>({0, 3}).cuda(), {0}).to_vector() == std::vector<T>{0, 0, 0});
}
#endif

TEST_CASE_TEMPLATE("amax, amin, argmax, argmin: values, first index, NaN, empty refused", T, float, double, std::int32_t,
                   std::int8_t) {
    const auto a = dt::from_values<T>({3, 7, 7, -2, 5, 1}, {2, 3});
    CHECK(dt::amax(a).item() == 7);
    CHECK(dt::amin(a).item() == -2);
    CHECK(dt::amax(a, {1}).to_vector() == std::vector<T>{7, 5});
    CHECK(dt::amin(a, {0}, true).to_vector() == std::vector<T>{-2, 5, 1});
    CHECK(dt::argmax(a).item() == 1);  // the first of the two 7s
    CHECK(dt::argmin(a).item() == 3);
    CHECK(dt::argmax(a, 1).to_vector() == std::vector<std::int64_t>{1, 1});
    CHECK(dt::argmin(a, 0, true).shape() == dt::shape{1, 3});
    CHECK(dt::argmin(a, -2).to_vector() == std::vector<std::int64_t>{1, 1, 1});
    CHECK(dt::argmax(a.t(), 0).to_vector() == std::vector<std::int64_t>{1, 1});  // transposed: the column form
    CHECK_ERROR(dt::shape_error, (void)dt::amax(dt::zeros<T>({2, 0}), {1}), "devtensor::amax", "no element");
    CHECK_ERROR(dt::shape_error, (void)dt::argmax(dt::zeros<T>({0})), "devtensor::argmax", "no element");
    CHECK(dt::amax(dt::zeros<T>({0, 2}), {1}).shape() == dt::shape{0});  // nothing to reduce into
    if constexpr (std::is_floating_point_v<T>) {
        constexpr T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
        const auto n = dt::from_values<T>({1, nan, 9, nan}, {4});
        CHECK(std::isnan(dt::amax(n).item()));
        CHECK(std::isnan(dt::amin(n).item()));
        CHECK(dt::argmax(n).item() == 1);
        CHECK(dt::argmin(n).item() == 1);
        CHECK(dt::argmax(dt::full<T>({3}, -inf)).item() == 0);
        CHECK(dt::amax(dt::full<T>({3}, -inf)).item() == -inf);
    }
    // long rows (several chunks), every thread count: the first index of the maximum
    auto big = dt::zeros<T>({3, 10000});
    big(1, 9000) = T(5);
    big(1, 9500) = T(5);
    big(2, 4096) = T(1);
    const int before = dt::get_num_threads();
    for (const int threads : {1, 2, 7}) {
        dt::set_num_threads(threads);
        CHECK(dt::argmax(big, 1).to_vector() == std::vector<std::int64_t>{0, 9000, 4096});
        CHECK(dt::argmax(big.t().contiguous(), 0).to_vector() == std::vector<std::int64_t>{0, 9000, 4096});
        CHECK(dt::argmax(big).item() == 19000);
    }
    dt::set_num_threads(before);
    const auto plan = dt::detail::plan_in_place(big.shape(), big.strides(), dt::detail::reduced_dims("argmax", {1}, 2));
    REQUIRE(plan.has_value());
    CHECK(emulate_reduce<dt::detail::indexed<T>, std::int64_t>(dt::detail::arg_extreme_op<true>{}, *plan, big.data()) ==
          std::vector<std::int64_t>{0, 9000, 4096});
}

TEST_CASE("any, all, equal, allclose") {
    const auto b = dt::from_values<bool>({true, false, false, false}, {2, 2});
    CHECK(dt::any(b).item());
    CHECK_FALSE(dt::all(b).item());
    CHECK(dt::any(b, {1}).to_vector() == std::vector<bool>{true, false});
    CHECK(dt::all(dt::zeros<bool>({0})).item());  // all of nothing is true
    CHECK_FALSE(dt::any(dt::zeros<bool>({0})).item());
    const auto x = dt::arange<float>(0, 6).view({2, 3});
    CHECK(dt::equal(x, x.clone()));
    CHECK_FALSE(dt::equal(x, x.view({3, 2})));
    CHECK_FALSE(dt::equal(x, x + 1.f));
    const auto n = dt::full<float>({2}, std::numeric_limits<float>::quiet_NaN());
    CHECK_FALSE(dt::equal(n, n));
    CHECK(dt::allclose(x + 1.f, x + 1.000001f));
    CHECK_FALSE(dt::allclose(x, x + 1e-7f));  // near 0 only atol counts, as in torch
    CHECK_FALSE(dt::allclose(x, x + 1e-3f));
    CHECK(dt::allclose(x, x + 1e-3f, 0, 2e-3));
    CHECK_FALSE(dt::allclose(n, n));
    const auto inf = dt::full<float>({1}, std::numeric_limits<float>::infinity());
    CHECK(dt::allclose(inf, inf));
}

TEST_CASE_TEMPLATE("softmax and log_softmax: rows sum to one, stable for large inputs, any dim", T, float, double) {
    const auto x = dt::from_values<T>({1, 2, 3, 1000, 1001, 1002}, {2, 3});
    const auto s = dt::softmax(x, 1).to_vector();
    const double e1 = std::exp(-2.0), e2 = std::exp(-1.0), total = e1 + e2 + 1;
    for (int r = 0; r < 2; ++r) {
        CHECK(s[static_cast<std::size_t>(3 * r)] == doctest::Approx(e1 / total).epsilon(1e-6));
        CHECK(s[static_cast<std::size_t>(3 * r + 2)] == doctest::Approx(1 / total).epsilon(1e-6));
    }
    const auto l = dt::log_softmax(x, -1).to_vector();
    CHECK(l[2] == doctest::Approx(-std::log(total)).epsilon(1e-6));
    CHECK(l[5] == doctest::Approx(-std::log(total)).epsilon(1e-6));
    const auto c = dt::softmax(x, 0).to_vector();
    CHECK(c[0] == doctest::Approx(0.0).epsilon(1e-6));
    CHECK(c[3] == doctest::Approx(1.0));
    CHECK(dt::softmax(dt::zeros<T>({0, 3}), 1).shape() == dt::shape{0, 3});
    dt::tensor<T, dt::cpu_device> undefined;
    CHECK_ERROR(dt::error, (void)dt::softmax(undefined, 0), "devtensor::softmax", "undefined");
}

// Contiguous CPU rows take softmax's steps a row at a time (ops/softmax_rows.hpp):
// the same bits as the ops it is made of, which the CUDA backend runs, written out
// here; forward and backward, short and long rows, many rows (groups, threads),
// infinities and NaN, on every ISA path at 1, 2 and 7 threads.
TEST_CASE_TEMPLATE("softmax and log_softmax over contiguous rows give the bits of the ops they are made of", T, float,
                   double) {
    namespace simd = dt::backend_cpu::simd;
    const int threads_before = dt::get_num_threads();
    const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
    // ({4001, 33}: blocks of rows for several threads, none a multiple of the 64-row groups)
    for (const dt::shape& s : {dt::shape{64, 10}, dt::shape{3, 1}, dt::shape{5, 17}, dt::shape{7, 4096},
                               dt::shape{4001, 33}, dt::shape{4, 5, 6}, dt::shape{9}}) {
        CAPTURE(s.to_string());
        auto x = dt::randn<T>(s, dt::cpu_device{}, seeded(41)) * T(4);
        std::vector<T> values = x.to_vector();
        const std::int64_t n = s[s.rank() - 1];
        if (s.numel() >= 5 * n) {  // rows of -inf, +inf, a NaN, huge values, -0
            for (std::int64_t q = 0; q < n; ++q) {
                values[static_cast<std::size_t>(q)] = -inf;
                values[static_cast<std::size_t>(2 * n + q)] = T(-0.0);
                values[static_cast<std::size_t>(3 * n + q)] = T(1e30) * T(q % 3);
            }
            values[static_cast<std::size_t>(n)] = inf;
            values[static_cast<std::size_t>(4 * n + n / 2)] = nan;
        }
        x = dt::from_values<T>(values, s);
        const auto g = dt::randn<T>(s, dt::cpu_device{}, seeded(42));
        const std::int64_t last = static_cast<std::int64_t>(s.rank()) - 1;
        REQUIRE(dt::detail::cpu_row_length(x, last) == s[s.rank() - 1]);  // the rows' path, not the ops'
        REQUIRE(dt::detail::cpu_row_length(dt::tensor<T, dt::device>(x), -1) == s[s.rank() - 1]);
        // the ops written out (ops/softmax.hpp)
        const auto shifted = x - dt::amax(x, {last}, true);
        const auto log_ref = shifted - dt::log(dt::sum(dt::exp(shifted), {last}, true));
        const auto e = dt::exp(shifted);
        const auto soft_ref = e / dt::sum(e, {last}, true);
        const auto log_back_ref = g - dt::exp(log_ref) * dt::sum(g, {last}, true);
        const auto soft_back_ref = soft_ref * (g - dt::sum(g * soft_ref, {last}, true));
        for (const simd::isa isa : {simd::isa::portable, simd::isa::avx2, simd::isa::avx512}) {
            simd::limit_isa(isa);
            for (const int threads : {1, 2, 7}) {
                CAPTURE(static_cast<int>(simd::best_isa()));
                CAPTURE(threads);
                dt::set_num_threads(threads);
                for (const std::int64_t dim : {std::int64_t{-1}, last}) {  // (a tensor of the run-time device type too)
                    dt::tensor<T, dt::device> xg(x.clone());
                    xg.requires_grad_(true);
                    const auto l = dt::log_softmax(xg, dim);
                    CHECK(same_bits(l.to_vector(), log_ref.to_vector()));
                    l.backward(g);
                    CHECK(same_bits(xg.grad().to_vector(), log_back_ref.to_vector()));
                    auto xs = x.clone();
                    xs.requires_grad_(true);
                    const auto y = dt::softmax(xs, dim);
                    CHECK(same_bits(y.to_vector(), soft_ref.to_vector()));
                    y.backward(g);
                    CHECK(same_bits(xs.grad().to_vector(), soft_back_ref.to_vector()));
                }
            }
        }
    }
    simd::limit_isa(simd::isa::avx512);
    dt::set_num_threads(threads_before);
    // rows the ops take: longer than a reduction chunk, strided, not along the last dimension
    const auto wide = dt::randn<T>({3, 4097}, dt::cpu_device{}, seeded(43));
    const auto wide_shifted = wide - dt::amax(wide, {1}, true);
    CHECK(same_bits(dt::log_softmax(wide, 1).to_vector(),
                    (wide_shifted - dt::log(dt::sum(dt::exp(wide_shifted), {1}, true))).to_vector()));
    const auto x = dt::randn<T>({6, 40}, dt::cpu_device{}, seeded(44));
    const auto column_major = x.t().contiguous().t();
    CHECK(same_bits(dt::softmax(column_major, 1).to_vector(), dt::softmax(x, 1).to_vector()));
    CHECK(same_bits(dt::softmax(x.t(), 0).to_vector(), dt::softmax(x, 1).t().contiguous().to_vector()));
    // a broadcast row (stride 0: the ops) against its copy (the rows)
    const auto row = x.narrow(0, 0, 1);
    CHECK(same_bits(dt::log_softmax(row.expand({5, 40}), 1).to_vector(),
                    dt::log_softmax(row.expand({5, 40}).contiguous(), 1).to_vector()));
    CHECK_ERROR(dt::error, (void)dt::log_softmax(x, 2), "devtensor::", "dimension");
    // a moved-from input is undefined; a gradient that is the result itself (aliased)
    auto moved = x.clone();
    const auto taken = std::move(moved);
    CHECK_ERROR(dt::error, (void)dt::log_softmax(moved, -1), "devtensor::log_softmax", "undefined");
    auto xa = taken.clone();
    xa.requires_grad_(true);
    const auto la = dt::log_softmax(xa, -1);
    la.backward(la.detach());
    const auto ld = la.detach();
    CHECK(same_bits(xa.grad().to_vector(), (ld - dt::exp(ld) * dt::sum(ld, {1}, true)).to_vector()));
}

#if DEVTENSOR_HAS_CUDA
DEVTENSOR_GPU_TEST_CASE_TEMPLATE("gpu amax, argmax, any, softmax match the cpu bit for bit", T, float, double) {
    dt::generator gen(12);
    const auto x = dt::randn<T>({50, 9000}, dt::cpu_device{}, gen);
    const auto g = x.cuda();
    for (const std::int64_t d : {0, 1}) {
        CAPTURE(d);
        CHECK(same_bits(dt::amax(g, {d}).to_vector(), dt::amax(x, {d}).to_vector()));
        CHECK(same_bits(dt::amin(g, {d}).to_vector(), dt::amin(x, {d}).to_vector()));
        CHECK(dt::argmax(g, d).to_vector() == dt::argmax(x, d).to_vector());
        CHECK(dt::argmin(g, d).to_vector() == dt::argmin(x, d).to_vector());
        CHECK(same_bits(dt::softmax(g, d).to_vector(), dt::softmax(x, d).to_vector()));
        CHECK(same_bits(dt::log_softmax(g, d).to_vector(), dt::log_softmax(x, d).to_vector()));
        // rows of a classifier's width, which the CPU takes a row at a time
        const auto rows = x.narrow(1, 0, 10).contiguous();
        CHECK(same_bits(dt::log_softmax(rows.cuda(), 1).to_vector(), dt::log_softmax(rows, 1).to_vector()));
        CHECK(same_bits(dt::softmax(rows.cuda(), 1).to_vector(), dt::softmax(rows, 1).to_vector()));
        CHECK(dt::any(g > T(3), {d}).to_vector() == dt::any(x > T(3), {d}).to_vector());
    }
    CHECK(dt::argmax(g).item() == dt::argmax(x).item());
    // 1-byte accumulators (bool, int8) and a 2-byte one: sixteen chains, as on the CPU
    const auto b = x > T(0.5);
    CHECK(dt::amax(b.cuda(), {1}).to_vector() == dt::amax(b, {1}).to_vector());
    CHECK(dt::argmin(b.cuda(), 1).to_vector() == dt::argmin(b, 1).to_vector());
    const auto i8 = (x * T(50)).template to<std::int8_t>();
    CHECK(dt::amin(i8.cuda(), {0}).to_vector() == dt::amin(i8, {0}).to_vector());
    CHECK(dt::sum(i8.cuda(), {1}).to_vector() == dt::sum(i8, {1}).to_vector());
    const auto i16 = i8.template to<std::int16_t>();
    CHECK(dt::amax(i16.cuda()).item() == dt::amax(i16).item());
    CHECK(dt::equal(g, g));
    CHECK(dt::allclose(g, g + T(1e-9)));
}
#endif

TEST_CASE_TEMPLATE("amax, amin, maximum, minimum on the vector paths: NaN and infinities in every lane", T, float,
                   double) {
    // Rows long enough for the 16-byte vectors and several chunks, one NaN or infinity placed at
    // each position of the first 16 rows; the reference is the scalar rule written out here.
    constexpr std::int64_t rows = 40, cols = 5000;
    dt::generator gen(12);
    auto x = dt::randn<T>({rows, cols}, dt::cpu_device{}, gen);
    const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
    for (std::int64_t r = 0; r < 16; ++r) x(r, r * 311 % cols) = r % 3 == 0 ? nan : r % 3 == 1 ? inf : -inf;
    const auto larger = [](T a, T b) { return a != a ? a : (b != b || b > a) ? b : a; };
    const auto smaller = [](T a, T b) { return a != a ? a : (b != b || b < a) ? b : a; };
    const auto hi = dt::amax(x, {1}).to_vector(), lo = dt::amin(x, {1}).to_vector();
    for (std::int64_t r = 0; r < rows; ++r) {
        T h = -inf, l = inf;
        for (std::int64_t c = 0; c < cols; ++c) h = larger(h, x(r, c)), l = smaller(l, x(r, c));
        CAPTURE(r);
        CHECK((std::isnan(h) ? std::isnan(hi[static_cast<std::size_t>(r)]) : hi[static_cast<std::size_t>(r)] == h));
        CHECK((std::isnan(l) ? std::isnan(lo[static_cast<std::size_t>(r)]) : lo[static_cast<std::size_t>(r)] == l));
    }
    const auto y = dt::randn<T>({rows, cols}, dt::cpu_device{}, gen);
    const auto m = dt::maximum(x, y).to_vector(), n = dt::minimum(x, y).to_vector();
    const auto xs = x.to_vector(), ys = y.to_vector();
    bool all_same = true;
    for (std::size_t i = 0; i < xs.size(); ++i) {
        const T want_m = (xs[i] != xs[i] || xs[i] > ys[i]) ? xs[i] : ys[i];
        const T want_n = (xs[i] != xs[i] || xs[i] < ys[i]) ? xs[i] : ys[i];
        all_same &= std::memcmp(&m[i], &want_m, sizeof(T)) == 0 && std::memcmp(&n[i], &want_n, sizeof(T)) == 0;
    }
    CHECK(all_same);
}
