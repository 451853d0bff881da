// Views, conversions and factories (DESIGN §11) against libtorch as the reference:
// random chains of view ops applied to a devtensor tensor and a torch tensor holding
// the same values (shape, strides, values, the first element's offset, which results
// share storage and which are copies, which calls throw); elementwise ops on strided
// operands; to<U>(); arange and linspace; dtype names.
#include "test_support.hpp"

#include <torch/torch.h>
// c10's logging (glog in Debian's build) defines CHECK as a fatal assertion: doctest's again.
#undef CHECK
#define CHECK DOCTEST_CHECK

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace {
// Every c10::Error collects a stack trace when made (milliseconds); the error cases
// below make thousands: this executable's torch errors carry none.
const bool no_torch_backtraces = [] {
    c10::SetStackTraceFetcher([] { return std::string(); });
    return true;
}();

using dims_t = std::vector<std::int64_t>;
template <class T>
using host_tensor = dt::tensor<T, dt::cpu_device>;
using ftensor = host_tensor<float>;

template <class T>
constexpr torch::Dtype torch_dtype = c10::CppTypeToScalarType<T>::value;

template <class T, class D>
dims_t sizes_of(const dt::tensor<T, D>& t) {
    return {t.shape().begin(), t.shape().end()};
}
template <class T, class D>
dims_t strides_of(const dt::tensor<T, D>& t) {
    return {t.strides().begin(), t.strides().end()};
}
std::string str(const dims_t& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
}

/// The elements of a torch tensor in row-major order.
template <class T>
std::vector<T> torch_values(const torch::Tensor& t) {
    const bool right_type = t.scalar_type() == torch_dtype<T>;
    REQUIRE(right_type);
    const torch::Tensor c = t.contiguous();
    const T* p = c.data_ptr<T>();
    return std::vector<T>(p, p + c.numel());
}

/// A devtensor tensor and a torch tensor holding `values` as `dims`.
template <class T>
host_tensor<T> dt_from(const std::vector<T>& values, const dims_t& dims) {
    if constexpr (std::is_same_v<T, bool>) {
        const auto raw = std::make_unique<bool[]>(values.size());
        std::copy(values.begin(), values.end(), raw.get());
        return dt::from_values<bool>(std::span<const bool>(raw.get(), values.size()), dt::shape(dims));
    } else {
        return dt::from_values<T>(values, dt::shape(dims));
    }
}
template <class T>
torch::Tensor torch_from(const std::vector<T>& values, const dims_t& dims) {
    torch::Tensor t = torch::empty(dims, torch::TensorOptions().dtype(torch_dtype<T>));
    std::copy(values.begin(), values.end(), t.data_ptr<T>());
    return t;
}

/// f called with the elements of v as a braced list (the view members take one).
template <class F>
decltype(auto) with_list(const dims_t& v, F&& f) {
    REQUIRE(v.size() <= 8);
    switch (v.size()) {
        case 0: return f({});
        case 1: return f({v[0]});
        case 2: return f({v[0], v[1]});
        case 3: return f({v[0], v[1], v[2]});
        case 4: return f({v[0], v[1], v[2], v[3]});
        case 5: return f({v[0], v[1], v[2], v[3], v[4]});
        case 6: return f({v[0], v[1], v[2], v[3], v[4], v[5]});
        case 7: return f({v[0], v[1], v[2], v[3], v[4], v[5], v[6]});
        default: return f({v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]});
    }
}

struct rng_t {
    std::mt19937 gen;
    explicit rng_t(unsigned seed) : gen(seed) {}
    std::int64_t uni(std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(gen); }
    bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(gen) < p; }
};

dims_t random_shape(rng_t& r, std::int64_t max_rank = 4, std::int64_t max_size = 5) {
    dims_t s(static_cast<std::size_t>(r.uni(0, max_rank)));
    for (auto& d : s) d = r.uni(0, max_size);
    return s;
}

/// A shape of rank 0..4 holding `numel` elements; now and then with a -1, or holding
/// the wrong count (both sides must then refuse it).
dims_t random_view_shape(rng_t& r, std::int64_t numel) {
    dims_t s;
    if (numel == 0) {
        s.resize(static_cast<std::size_t>(r.uni(1, 4)));
        for (auto& d : s) d = r.uni(0, 4);
        s[static_cast<std::size_t>(r.uni(0, static_cast<std::int64_t>(s.size()) - 1))] = 0;
    } else {
        const auto rank = static_cast<std::size_t>(r.uni(numel == 1 ? 0 : 1, 4));
        std::int64_t left = numel;
        for (std::size_t i = 0; i + 1 < rank; ++i) {
            dims_t divisors;
            for (std::int64_t k = 1; k <= left; ++k)
                if (left % k == 0) divisors.push_back(k);
            const std::int64_t k = divisors[static_cast<std::size_t>(r.uni(0, static_cast<std::int64_t>(divisors.size()) - 1))];
            s.push_back(k);
            left /= k;
        }
        if (rank > 0) s.push_back(left);
        std::shuffle(s.begin(), s.end(), r.gen);
    }
    if (!s.empty() && r.chance(0.25)) s[static_cast<std::size_t>(r.uni(0, static_cast<std::int64_t>(s.size()) - 1))] = -1;
    if (r.chance(0.04)) s.push_back(r.uni(2, 3));  // the wrong count (or a -1 that cannot be inferred)
    if (!s.empty() && r.chance(0.02)) s[0] = -2;
    return s;
}

/// A dimension of a rank-`rank` tensor (of a rank + `extra` one for unsqueeze): in
/// range, either sign, most of the time; now and then out of range.
std::int64_t random_dim(rng_t& r, std::int64_t rank, std::int64_t extra = 0) {
    const std::int64_t n = std::max<std::int64_t>(rank + extra, 1);
    if (r.chance(0.1)) return r.chance(0.5) ? r.uni(n, n + 2) : r.uni(-n - 3, -n - 1);
    return r.uni(-n, n - 1);
}

enum class outcome { ok, index_error, shape_error, other };
const char* name(outcome o) {
    switch (o) {
        case outcome::ok: return "no error";
        case outcome::index_error: return "index_error";
        case outcome::shape_error: return "shape_error";
        default: return "another exception";
    }
}

/// One side of the comparison: a view and the tensor whose storage it shares (the
/// arange base, or the copy a reshape, contiguous or clone made).
struct chain_state {
    ftensor d, d_root;
    torch::Tensor t, t_root;
    std::string history;  ///< the ops so far, for the failure messages
};

/// Runs `fd` on devtensor and `ft` on torch; checks that one throws exactly when the
/// other does and, when neither does, that the results agree: shape, strides,
/// contiguity, values, whether the result shares its input's storage and where its
/// first element lies. `copies` marks the ops that may copy (reshape, flatten,
/// contiguous, clone); the others must give views. Moves `s` on to the results;
/// returns false when the chain ends (an error, or a mismatch).
template <class FD, class FT>
bool step(chain_state& s, const std::string& what, bool copies, FD&& fd, FT&& ft) {
    s.history += " -> " + what;
    INFO("ops: ", s.history);
    INFO("op: ", what, " on shape ", str(sizes_of(s.d)), " strides ", str(strides_of(s.d)));
    std::optional<ftensor> got;
    outcome ours = outcome::ok;
    std::string message;
    try {
        got = fd();
    } catch (const dt::index_error& e) {
        ours = outcome::index_error, message = e.what();
    } catch (const dt::shape_error& e) {
        ours = outcome::shape_error, message = e.what();
    } catch (const std::exception& e) {
        ours = outcome::other, message = e.what();
    }
    std::optional<torch::Tensor> want;
    std::string torch_message;
    try {
        want = ft();
    } catch (const c10::Error& e) {
        torch_message = e.what_without_backtrace();
    } catch (const std::exception& e) {  // torch's shape inference throws std::runtime_error
        torch_message = e.what();
    }
    // torch 1.13's expand takes a negative size in a new leading dimension when another
    // size is 0 (the result has a negative size): devtensor refuses it, counted as torch's error
    if (want && std::ranges::any_of(want->sizes(), [](std::int64_t n) { return n < 0; })) {
        want.reset();
        torch_message = "torch made a tensor with a negative size";
    }
    INFO("devtensor: ", std::string(name(ours)), " ", message);
    INFO("torch: ", want ? "no error" : torch_message);
    CHECK(ours != outcome::other);
    CHECK((ours == outcome::ok) == want.has_value());
    if (!got || !want) return false;

    const ftensor& r = *got;
    const torch::Tensor& tr = *want;
    CHECK(sizes_of(r) == tr.sizes().vec());
    if (sizes_of(r) != tr.sizes().vec()) return false;
    // strides first where they matter (dimensions of size > 1), then all of them
    dims_t ours_st = strides_of(r), theirs_st = tr.strides().vec();
    const bool relevant_equal = [&] {
        for (std::size_t i = 0; i < ours_st.size(); ++i)
            if (r.shape()[i] > 1 && ours_st[i] != theirs_st[i]) return false;
        return true;
    }();
    INFO("strides: devtensor ", str(ours_st), ", torch ", str(theirs_st));
    // without elements, strides address nothing ("arbitrary in the numel() == 0 case", says
    // torch's computeStride): torch keeps the old ones where devtensor's are row-major
    if (r.numel() > 0) {
        CHECK(relevant_equal);
        // Size-1 dimensions: strides address nothing there either; in ~1 chain in 300 torch
        // keeps a 0 where devtensor has 1 (or back), which no op can observe.
    }
    CHECK(r.is_contiguous() == tr.is_contiguous());
    CHECK(r.to_vector() == torch_values<float>(tr));
    if (what.rfind("contiguous", 0) == 0) CHECK(r.is_same(s.d) == tr.is_same(s.t));
    if (r.numel() > 0) {
        const bool ours_shares = r.data() >= s.d_root.data() && r.data() < s.d_root.data() + s.d_root.numel();
        const bool theirs_shares = tr.is_alias_of(s.t);
        INFO("shares the input's storage: devtensor ", ours_shares, ", torch ", theirs_shares);
        CHECK(ours_shares == theirs_shares);
        if (!copies) CHECK(ours_shares);
        if (ours_shares != theirs_shares) return false;
        if (ours_shares) {
            CHECK(r.data() - s.d_root.data() == tr.storage_offset() - s.t_root.storage_offset());
        } else {  // a fresh contiguous copy: the new storage to measure offsets in
            CHECK(r.is_contiguous());
            CHECK(tr.storage_offset() == 0);
            s.d_root = r;
            s.t_root = tr;
        }
    }
    s.d = r;
    s.t = tr;
    return true;
}

/// One random view op (sometimes with arguments out of range) on both sides.
bool random_step(chain_state& s, rng_t& r) {
    const std::int64_t rank = s.d.dim();
    const dims_t shape = sizes_of(s.d);
    auto size_at = [&](std::int64_t d) { return shape[static_cast<std::size_t>(d < 0 ? d + rank : d)]; };
    const bool may_grow = rank < 7;  // unsqueeze and expand add dimensions; devtensor holds 8
    for (;;) {
        switch (r.uni(0, 14)) {
            case 0: {  // view, with -1 now and then
                const dims_t v = random_view_shape(r, s.d.numel());
                return step(s, "view(" + str(v) + ")", false,
                            [&] { return with_list(v, [&](std::initializer_list<std::int64_t> l) { return s.d.view(l); }); },
                            [&] { return s.t.view(v); });
            }
            case 1: {
                const dims_t v = random_view_shape(r, s.d.numel());
                return step(s, "reshape(" + str(v) + ")", true,
                            [&] { return with_list(v, [&](std::initializer_list<std::int64_t> l) { return s.d.reshape(l); }); },
                            [&] { return s.t.reshape(v); });
            }
            case 2: {
                if (r.chance(0.2)) return step(s, "flatten()", true, [&] { return s.d.flatten(); }, [&] { return s.t.flatten(); });
                const std::int64_t a = random_dim(r, rank), b = random_dim(r, rank);
                return step(s, "flatten(" + std::to_string(a) + ", " + std::to_string(b) + ")", true,
                            [&] { return s.d.flatten(a, b); }, [&] { return s.t.flatten(a, b); });
            }
            case 3: {
                if (r.chance(0.3)) return step(s, "squeeze()", false, [&] { return s.d.squeeze(); }, [&] { return s.t.squeeze(); });
                const std::int64_t d = random_dim(r, rank);
                return step(s, "squeeze(" + std::to_string(d) + ")", false, [&] { return s.d.squeeze(d); },
                            [&] { return s.t.squeeze(d); });
            }
            case 4: {
                if (!may_grow) continue;
                const std::int64_t d = random_dim(r, rank, 1);
                return step(s, "unsqueeze(" + std::to_string(d) + ")", false, [&] { return s.d.unsqueeze(d); },
                            [&] { return s.t.unsqueeze(d); });
            }
            case 5: return step(s, "t()", false, [&] { return s.d.t(); }, [&] { return s.t.t(); });
            case 6: {
                const std::int64_t a = random_dim(r, rank), b = random_dim(r, rank);
                return step(s, "transpose(" + std::to_string(a) + ", " + std::to_string(b) + ")", false,
                            [&] { return s.d.transpose(a, b); }, [&] { return s.t.transpose(a, b); });
            }
            case 7: {
                dims_t order(static_cast<std::size_t>(rank));
                std::iota(order.begin(), order.end(), 0);
                std::shuffle(order.begin(), order.end(), r.gen);
                for (auto& d : order)
                    if (r.chance(0.3)) d -= rank;
                if (r.chance(0.1)) {  // a wrong one: a repeat, one too many or too few, out of range
                    switch (r.uni(0, 3)) {
                        case 0:
                            if (rank > 1) order[1] = order[0];
                            break;
                        case 1: order.push_back(rank); break;
                        case 2:
                            if (!order.empty()) order.pop_back();
                            break;
                        default:
                            if (!order.empty()) order[0] = rank + 1;
                    }
                }
                if (order.size() > 8) continue;
                return step(s, "permute(" + str(order) + ")", false,
                            [&] { return with_list(order, [&](std::initializer_list<std::int64_t> l) { return s.d.permute(l); }); },
                            [&] { return s.t.permute(order); });
            }
            case 8: {
                const std::int64_t d = rank == 0 ? r.uni(-1, 0) : random_dim(r, rank);
                const std::int64_t n = rank == 0 || d >= rank || d < -rank ? 3 : size_at(d);
                std::int64_t start = r.uni(-n, n), length = r.uni(0, n - (start < 0 ? start + n : start));
                if (r.chance(0.1)) start = r.uni(-n - 2, n + 2), length = r.uni(-2, n + 2);
                return step(s, "narrow(" + std::to_string(d) + ", " + std::to_string(start) + ", " + std::to_string(length) + ")",
                            false, [&] { return s.d.narrow(d, start, length); }, [&] { return s.t.narrow(d, start, length); });
            }
            case 9:
            case 10: {
                const std::int64_t d = rank == 0 ? r.uni(-1, 0) : random_dim(r, rank);
                const std::int64_t n = rank == 0 || d >= rank || d < -rank ? 3 : size_at(d);
                std::int64_t i = n > 0 ? r.uni(-n, n - 1) : 0;
                if (r.chance(0.1)) i = r.uni(-n - 2, n + 1);
                if (r.chance(0.3))
                    return step(s, "operator[](" + std::to_string(i) + ")", false, [&] { return s.d[i]; },
                                [&] { return s.t[i]; });
                return step(s, "select(" + std::to_string(d) + ", " + std::to_string(i) + ")", false,
                            [&] { return s.d.select(d, i); }, [&] { return s.t.select(d, i); });
            }
            case 11: {
                if (!may_grow) continue;
                dims_t target;
                const std::int64_t lead = r.uni(0, 2);
                for (std::int64_t i = 0; i < lead; ++i) target.push_back(r.chance(0.03) ? -1 : r.uni(0, 3));
                for (const std::int64_t n : shape) {
                    if (n == 1) target.push_back(r.chance(0.2) ? -1 : r.uni(0, 4));
                    else target.push_back(r.chance(0.2) ? -1 : r.chance(0.05) ? n + 1 : n);
                }
                if (r.chance(0.03) && !target.empty()) target.erase(target.begin());  // fewer sizes than dims
                const bool as_shape = std::ranges::none_of(target, [](std::int64_t n) { return n < 0; }) && r.chance(0.3);
                return step(s, (as_shape ? "expand(shape " : "expand(") + str(target) + ")", false,
                            [&] {
                                if (as_shape) return s.d.expand(dt::shape(target));
                                return with_list(target, [&](std::initializer_list<std::int64_t> l) { return s.d.expand(l); });
                            },
                            [&] { return s.t.expand(target); });
            }
            case 12: return step(s, "contiguous()", true, [&] { return s.d.contiguous(); }, [&] { return s.t.contiguous(); });
            case 13: return step(s, "clone()", true, [&] { return s.d.clone(); }, [&] { return s.t.clone(at::MemoryFormat::Contiguous); });
            default: {
                const std::int64_t d = rank == 0 ? 0 : r.uni(0, rank - 1);
                const std::int64_t n = rank == 0 ? 1 : size_at(d);
                if (n == 0) continue;
                const std::int64_t start = r.uni(0, n - 1), length = r.uni(0, n - start);
                return step(s, "narrow(" + std::to_string(d) + ", " + std::to_string(start) + ", " + std::to_string(length) + ")",
                            false, [&] { return s.d.narrow(d, start, length); }, [&] { return s.t.narrow(d, start, length); });
            }
        }
    }
}

chain_state arange_pair(const dims_t& dims) {
    std::int64_t n = 1;
    for (const auto d : dims) n *= d;
    const ftensor base = dt::arange<float>(0, static_cast<double>(n)).view(dt::shape(dims));
    const torch::Tensor tbase = torch::arange(n, torch::kFloat32).view(dims);
    return {base, base, tbase, tbase, "arange " + str(dims)};
}
}  // namespace

TEST_CASE("random chains of view ops agree with torch: shapes, strides, values, offsets, errors") {
    rng_t r(20240611);
    int chains = 0, steps = 0;
    for (int c = 0; c < 3000; ++c) {
        const dims_t dims = random_shape(r);
        chain_state s = arange_pair(dims);
        CAPTURE(c);
        const std::int64_t length = r.uni(1, 4);
        bool alive = true;
        for (std::int64_t k = 0; k < length && alive; ++k) {
            alive = random_step(s, r);
            ++steps;
        }
        ++chains;
        // a write through the last view lands where torch's does, in the shared storage
        if (alive && s.d.numel() > 0) {
            *s.d.data() = -1.f;
            s.t.data_ptr<float>()[0] = -1.f;
            CHECK(s.d_root.to_vector() == torch_values<float>(s.t_root));
        }
    }
    MESSAGE(chains, " chains, ", steps, " steps");
}

TEST_CASE("out-of-range dims and indices: devtensor throws exactly where torch throws") {
    const std::vector<dims_t> shapes = {{}, {0}, {1}, {3}, {2, 3}, {1, 4, 1}, {2, 0, 3}, {2, 3, 1, 2}};
    auto run = [](const dims_t& dims, const std::string& what, bool copies, auto fd, auto ft) {
        chain_state s = arange_pair(dims);
        step(s, what, copies, [&] { return fd(s.d); }, [&] { return ft(s.t); });
    };
    using TT = const torch::Tensor&;
    using DD = const ftensor&;
    for (const dims_t& dims : shapes) {
        CAPTURE(str(dims));
        const auto rank = static_cast<std::int64_t>(dims.size());
        for (std::int64_t d = -rank - 3; d <= rank + 3; ++d) {
            const std::string sd = std::to_string(d);
            run(dims, "squeeze(" + sd + ")", false, [=](DD t) { return t.squeeze(d); }, [=](TT t) { return t.squeeze(d); });
            run(dims, "unsqueeze(" + sd + ")", false, [=](DD t) { return t.unsqueeze(d); }, [=](TT t) { return t.unsqueeze(d); });
            for (std::int64_t i = -6; i <= 6; ++i) {
                const std::string si = std::to_string(i);
                run(dims, "select(" + sd + ", " + si + ")", false, [=](DD t) { return t.select(d, i); },
                    [=](TT t) { return t.select(d, i); });
                for (std::int64_t len = -2; len <= 6; ++len)
                    run(dims, "narrow(" + sd + ", " + si + ", " + std::to_string(len) + ")", false,
                        [=](DD t) { return t.narrow(d, i, len); }, [=](TT t) { return t.narrow(d, i, len); });
            }
            for (std::int64_t e = -rank - 3; e <= rank + 3; ++e) {
                const std::string se = std::to_string(e);
                run(dims, "transpose(" + sd + ", " + se + ")", false, [=](DD t) { return t.transpose(d, e); },
                    [=](TT t) { return t.transpose(d, e); });
                run(dims, "flatten(" + sd + ", " + se + ")", true, [=](DD t) { return t.flatten(d, e); },
                    [=](TT t) { return t.flatten(d, e); });
            }
        }
        for (std::int64_t i = -6; i <= 6; ++i)
            run(dims, "operator[](" + std::to_string(i) + ")", false, [=](DD t) { return t[i]; }, [=](TT t) { return t[i]; });
        run(dims, "t()", false, [](DD t) { return t.t(); }, [](TT t) { return t.t(); });
        // permute: every list of rank - 1 ... rank + 1 entries in [-rank - 1, rank] (rank <= 3)
        if (rank <= 3)
            for (std::int64_t len = std::max<std::int64_t>(rank - 1, 0); len <= rank + 1; ++len) {
                const std::int64_t lo = -rank - 1, span = 2 * rank + 2;
                std::int64_t count = 1;
                for (std::int64_t k = 0; k < len; ++k) count *= span;
                for (std::int64_t code = 0; code < count; ++code) {
                    dims_t order;
                    for (std::int64_t k = 0, c = code; k < len; ++k, c /= span) order.push_back(lo + c % span);
                    run(dims, "permute(" + str(order) + ")", false,
                        [&](DD t) { return with_list(order, [&](std::initializer_list<std::int64_t> l) { return t.permute(l); }); },
                        [&](TT t) { return t.permute(order); });
                }
            }
        // expand: every target of rank ... rank + 1 with sizes in [-2, 4] (rank <= 3)
        if (rank <= 3)
            for (std::int64_t len = std::max<std::int64_t>(rank - 1, 0); len <= rank + 1; ++len) {
                std::int64_t count = 1;
                for (std::int64_t k = 0; k < len; ++k) count *= 7;
                for (std::int64_t code = 0; code < count; ++code) {
                    dims_t target;
                    for (std::int64_t k = 0, c = code; k < len; ++k, c /= 7) target.push_back(-2 + c % 7);
                    run(dims, "expand(" + str(target) + ")", false,
                        [&](DD t) { return with_list(target, [&](std::initializer_list<std::int64_t> l) { return t.expand(l); }); },
                        [&](TT t) { return t.expand(target); });
                }
            }
    }
}

TEST_CASE("view is refused exactly when torch's view throws; reshape copies exactly when torch's does") {
    rng_t r(77);
    for (int c = 0; c < 1500; ++c) {
        // a strided tensor: a permuted, narrowed, maybe expanded view of an arange base
        chain_state s = arange_pair(random_shape(r));
        for (int k = 0; k < 3; ++k) {
            const std::int64_t rank = s.d.dim();
            if (rank >= 2 && r.chance(0.7)) {
                const std::int64_t a = r.uni(0, rank - 1), b = r.uni(0, rank - 1);
                if (!step(s, "transpose", false, [&] { return s.d.transpose(a, b); }, [&] { return s.t.transpose(a, b); })) break;
            } else if (rank >= 1 && s.d.size(0) > 1) {
                const std::int64_t n = s.d.size(0), start = r.uni(0, 1), length = n - start - r.uni(0, 1);
                if (!step(s, "narrow", false, [&] { return s.d.narrow(0, start, length); },
                          [&] { return s.t.narrow(0, start, length); }))
                    break;
            } else if (rank < 6) {
                const std::int64_t d = r.uni(0, rank);
                if (!step(s, "unsqueeze", false, [&] { return s.d.unsqueeze(d); }, [&] { return s.t.unsqueeze(d); })) break;
                dims_t target = sizes_of(s.d);
                target[static_cast<std::size_t>(d)] = r.uni(0, 3);
                if (!step(s, "expand(" + str(target) + ")", false, [&] { return s.d.expand(dt::shape(target)); },
                          [&] { return s.t.expand(target); }))
                    break;
            }
        }
        for (int k = 0; k < 4; ++k) {
            chain_state v = s, w = s;
            const dims_t target = random_view_shape(r, s.d.numel());
            step(v, "view(" + str(target) + ")", false,
                 [&] { return with_list(target, [&](std::initializer_list<std::int64_t> l) { return v.d.view(l); }); },
                 [&] { return v.t.view(target); });
            step(w, "reshape(" + str(target) + ")", true,
                 [&] { return with_list(target, [&](std::initializer_list<std::int64_t> l) { return w.d.reshape(l); }); },
                 [&] { return w.t.reshape(target); });
            // a write through the reshaped tensor is seen by the base exactly when torch's is
            if (w.d.numel() > 0 && sizes_of(w.d) == w.t.sizes().vec()) {
                *w.d.data() = -7.f;
                w.t.data_ptr<float>()[0] = -7.f;
                CHECK(s.d_root.to_vector() == torch_values<float>(s.t_root));
            }
        }
    }
}

TEST_CASE("contiguous(): values, and the same tensor exactly when torch gives the same tensor") {
    rng_t r(5);
    for (int c = 0; c < 500; ++c) {
        chain_state s = arange_pair(random_shape(r));
        for (int k = 0; k < 3; ++k) random_step(s, r);
        chain_state v = s;
        step(v, "contiguous()", true, [&] { return s.d.contiguous(); }, [&] { return s.t.contiguous(); });
        CHECK(s.d.contiguous().is_same(s.d) == s.t.contiguous().is_same(s.t));
        CHECK(s.d.contiguous().is_same(s.d) == (s.d.contiguous().data() == s.d.data()));
        CHECK(s.d.contiguous().is_same(s.d) == (s.t.contiguous().data_ptr() == s.t.data_ptr()));
        // clone: always a new contiguous storage, as torch's
        const ftensor k = s.d.clone();
        CHECK(k.is_contiguous());
        CHECK(!k.is_same(s.d));
        CHECK(k.to_vector() == torch_values<float>(s.t.clone()));
        // torch's clone() keeps a dense layout (preserve_format); devtensor's is always row-major,
        // which is torch's clone(at::MemoryFormat::Contiguous)
        CHECK(strides_of(k) == s.t.clone(at::MemoryFormat::Contiguous).strides().vec());
        if (k.numel() > 0) CHECK(k.data() != s.d.data());
    }
}

namespace {
/// A value of an elementwise operand: small, exact in T, both signs; int8 wraps when added or multiplied.
template <class T>
T operand_value(std::int64_t i) {
    if constexpr (std::is_floating_point_v<T>) return static_cast<T>((i * 37) % 101) * T(0.25) - T(7);
    else if constexpr (sizeof(T) == 1) return static_cast<T>((i * 37) % 255 - 127);
    else return static_cast<T>((i * 37) % 201 - 100);
}

template <class T>
struct operand {
    host_tensor<T> d;
    torch::Tensor t;
    std::string how;
};

/// An operand of shape `dims` whose strides are not row-major: a padded base, narrowed
/// on every dimension and permuted; `expand_from` of its dimensions are size 1 in
/// storage and expanded (stride 0), or left at 1 for the op to broadcast.
template <class T>
operand<T> strided_operand(const dims_t& dims, rng_t& r, bool broadcast_ones) {
    const auto rank = static_cast<std::int64_t>(dims.size());
    dims_t logical = dims;
    std::vector<bool> ones(dims.size(), false);
    for (std::size_t i = 0; i < dims.size(); ++i)
        if (r.chance(0.25)) logical[i] = 1, ones[i] = true;
    dims_t p(dims.size());
    std::iota(p.begin(), p.end(), 0);
    std::shuffle(p.begin(), p.end(), r.gen);
    dims_t phys(dims.size()), starts(dims.size());
    for (std::size_t i = 0; i < dims.size(); ++i) {
        const std::int64_t pad = r.uni(0, 2);
        phys[i] = logical[static_cast<std::size_t>(p[i])] + pad;
        starts[i] = r.uni(0, pad);
    }
    std::int64_t n = 1;
    for (const auto d : phys) n *= d;
    std::vector<T> values(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) values[static_cast<std::size_t>(i)] = operand_value<T>(i);
    operand<T> o{dt_from(values, phys), torch_from(values, phys), "base " + str(phys)};
    for (std::int64_t i = 0; i < rank; ++i) {
        const std::int64_t len = logical[static_cast<std::size_t>(p[static_cast<std::size_t>(i)])];
        o.d = o.d.narrow(i, starts[static_cast<std::size_t>(i)], len);
        o.t = o.t.narrow(i, starts[static_cast<std::size_t>(i)], len);
    }
    dims_t inverse(dims.size());
    for (std::size_t i = 0; i < dims.size(); ++i) inverse[static_cast<std::size_t>(p[i])] = static_cast<std::int64_t>(i);
    o.d = with_list(inverse, [&](std::initializer_list<std::int64_t> l) { return o.d.permute(l); });
    o.t = o.t.permute(inverse);
    o.how += " narrowed at " + str(starts) + ", permuted " + str(inverse);
    if (!broadcast_ones) {
        o.d = o.d.expand(dt::shape(dims));
        o.t = o.t.expand(dims);
        o.how += ", expanded to " + str(dims);
    } else if (r.chance(0.5) && rank > 0) {  // leading size-1 dimensions dropped
        std::int64_t drop = 0;
        while (drop < rank && logical[static_cast<std::size_t>(drop)] == 1) ++drop;
        for (std::int64_t k = 0; k < drop; ++k) {
            o.d = o.d.squeeze(0);
            o.t = o.t.squeeze(0);
        }
        o.how += ", " + std::to_string(drop) + " leading dims dropped";
    }
    o.how += " -> strides " + str(strides_of(o.d));
    return o;
}
}  // namespace

TEST_CASE_TEMPLATE("add and mul on strided, expanded and broadcast operands equal torch's exactly", T, float, double,
                   std::int32_t, std::int64_t, std::int8_t) {
    rng_t r(31);
    for (int c = 0; c < 300; ++c) {
        const dims_t dims = random_shape(r);
        const operand<T> a = strided_operand<T>(dims, r, false);  // the full shape
        const operand<T> b = strided_operand<T>(dims, r, true);   // broadcast
        INFO("shape ", str(dims), "; a: ", a.how, "; b: ", b.how);
        auto same = [](const host_tensor<T>& got, const torch::Tensor& want) {
            CHECK(sizes_of(got) == want.sizes().vec());
            CHECK(got.to_vector() == torch_values<T>(want));
        };
        same(dt::add(a.d, b.d), torch::add(a.t, b.t));
        same(b.d + a.d, b.t + a.t);
        same(dt::mul(a.d, b.d), torch::mul(a.t, b.t));
        same(b.d * a.d, b.t * a.t);
        same(a.d * a.d, a.t * a.t);  // the same strided operand twice
        // the out-variant into a strided output (the even columns of a wider tensor)
        if (!dims.empty()) {
            dims_t wide = dims;
            wide.back() *= 2;
            const auto storage = dt::zeros<T>(dt::shape(wide));
            dims_t split = dims;
            split.push_back(2);
            const auto out = with_list(split, [&](std::initializer_list<std::int64_t> l) { return storage.view(l); })
                                 .select(-1, 0);
            dt::add(a.d, b.d, out);
            same(out, torch::add(a.t, b.t));
            dt::mul(b.d, a.d, out);
            same(out, torch::mul(b.t, a.t));
        }
    }
}

namespace {
/// Equal, NaN matching NaN.
template <class T>
bool same_values(const std::vector<T>& a, const std::vector<T>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if constexpr (std::is_floating_point_v<T>) {
            if (std::isnan(a[i]) && std::isnan(b[i])) continue;
        }
        if (a[i] != b[i]) return false;
    }
    return true;
}

/// to<U>() of `values` (contiguous, and through a transposed view) equals torch's .to(dtype).
template <class U, class T>
void check_to(const std::vector<T>& values) {
    CAPTURE(dt::dtype_v<T>.name());
    CAPTURE(dt::dtype_v<U>.name());
    const auto n = static_cast<std::int64_t>(values.size());
    const auto d = dt_from(values, {n});
    const auto t = torch_from(values, {n});
    const auto got = d.template to<U>().to_vector();
    const auto want = torch_values<U>(t.to(torch_dtype<U>));
    CHECK(same_values(got, want));
    for (std::size_t i = 0; i < got.size() && i < want.size(); ++i)
        if (!same_values(std::vector<U>{got[i]}, std::vector<U>{want[i]})) {
            std::ostringstream os;
            os << "to<" << dt::dtype_v<U> << "> of " << +static_cast<T>(values[i]) << ": devtensor " << +static_cast<U>(got[i])
               << ", torch " << +static_cast<U>(want[i]);
            FAIL_CHECK(os.str());
            break;
        }
    if (n % 4 == 0) {  // strided source: a transposed view
        const auto dv = d.view({4, n / 4}).t();
        const auto tv = t.view({4, n / 4}).t();
        CHECK(same_values(dv.template to<U>().to_vector(), torch_values<U>(tv.to(torch_dtype<U>))));
    }
}

/// n values uniform in [lo, hi] (as T), plus `extra`; a multiple of 4 in all.
template <class T>
std::vector<T> uniform_values(rng_t& r, double lo, double hi, std::vector<T> extra, int n = 400) {
    std::vector<T> v = std::move(extra);
    for (int i = 0; i < n; ++i) {
        if constexpr (std::is_floating_point_v<T>) v.push_back(static_cast<T>(std::uniform_real_distribution<double>(lo, hi)(r.gen)));
        else v.push_back(static_cast<T>(std::uniform_int_distribution<std::int64_t>(static_cast<std::int64_t>(lo),
                                                                                     static_cast<std::int64_t>(hi))(r.gen)));
    }
    while (v.size() % 4 != 0) v.push_back(T{});
    return v;
}
}  // namespace

TEST_CASE("to<U>() equals torch's .to(dtype) on values in range") {
    rng_t r(99);
    constexpr float finf = std::numeric_limits<float>::infinity(), fnan = std::numeric_limits<float>::quiet_NaN();
    constexpr float fden = std::numeric_limits<float>::denorm_min(), fmin = std::numeric_limits<float>::min();
    const std::vector<float> small = {0.f, -0.f, 0.5f, -0.5f, 0.99999994f, -0.99999994f, 1.f, -1.f, 1.5f, -1.5f,
                                      2.5f, -2.5f, 7.f, -7.f, fden, -fden, fmin, 100.25f, -100.75f};
    // float -> int32: |x| < 2^31 (2147483520 is the largest float below it)
    auto i32 = small;
    i32.insert(i32.end(), {2147483520.f, -2147483648.f, 16777217.f, -16777216.f, 1e9f, -1e9f});
    check_to<std::int32_t>(uniform_values<float>(r, -2.1e9, 2.1e9, i32));
    check_to<std::int32_t>(uniform_values<float>(r, -1000, 1000, small));
    auto i64 = small;
    i64.insert(i64.end(), {9.2233715e18f, -9.2233720e18f, 1e10f, -1e10f, 2147483648.f});
    check_to<std::int64_t>(uniform_values<float>(r, -9.2e18, 9.2e18, i64));
    check_to<std::int64_t>(uniform_values<float>(r, -1e6, 1e6, small));
    auto i8 = small;
    i8.insert(i8.end(), {127.99f, -128.99f, 127.f, -128.f});
    check_to<std::int8_t>(uniform_values<float>(r, -128.99, 127.99, i8));
    std::vector<float> u8 = {0.f, -0.f, 0.5f, -0.5f, -0.99f, 1.f, 254.5f, 255.f, 255.99f, 128.f, 127.5f, fden};
    check_to<std::uint8_t>(uniform_values<float>(r, -0.99, 255.99, u8));
    // -> bool is != 0: NaN and the infinities are true, -0 false (no range to respect)
    auto any = small;
    any.insert(any.end(), {fnan, -fnan, finf, -finf, 1e30f, -1e-30f});
    check_to<bool>(uniform_values<float>(r, -3, 3, any));
    check_to<double>(uniform_values<float>(r, -1e30, 1e30, any));
    // double -> float: rounding to nearest even, halfway cases, overflow-free magnitudes, NaN
    std::vector<double> dbl = {0., -0., 1. + 0x1p-24, 1. + 0x1p-23 + 0x1p-24, 1. + 0x1p-24 + 0x1p-60, 0x1p-149,
                               0x1p-150, 0x1.8p-150, 3.4028234e38, -3.4028234e38, 1e-45, 0.1, -0.1,
                               std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                               -std::numeric_limits<double>::infinity()};
    check_to<float>(uniform_values<double>(r, -1e38, 1e38, dbl));
    check_to<float>(uniform_values<double>(r, -1, 1, dbl));
    // integers -> floating: rounding to nearest even above 2^24 / 2^53
    std::vector<std::int32_t> ints = {0, 1, -1, 16777217, -16777217, 16777219, INT32_MAX, INT32_MIN, 33554435};
    check_to<float>(uniform_values<std::int32_t>(r, INT32_MIN, INT32_MAX, ints));
    check_to<double>(uniform_values<std::int32_t>(r, INT32_MIN, INT32_MAX, ints));
    std::vector<std::int64_t> longs = {0, -1, (1LL << 53) + 1, -(1LL << 53) - 1, INT64_MAX, INT64_MIN, (1LL << 24) + 1};
    check_to<float>(uniform_values<std::int64_t>(r, static_cast<double>(INT64_MIN), 9.2e18, longs));
    check_to<double>(uniform_values<std::int64_t>(r, static_cast<double>(INT64_MIN), 9.2e18, longs));
    // integers -> narrower integers wrap (both libraries), -> bool is != 0
    check_to<std::uint8_t>(uniform_values<std::int32_t>(r, -100000, 100000, ints));
    check_to<std::int8_t>(uniform_values<std::int32_t>(r, -100000, 100000, ints));
    check_to<std::int32_t>(uniform_values<std::int64_t>(r, static_cast<double>(INT64_MIN), 9.2e18, longs));
    check_to<bool>(uniform_values<std::int32_t>(r, -2, 2, ints));
    // bool -> numbers
    std::vector<bool> bools;
    for (int i = 0; i < 40; ++i) bools.push_back(r.chance(0.5));
    check_to<float>(bools);
    check_to<std::int32_t>(bools);
    check_to<std::uint8_t>(bools);
    check_to<double>(bools);
}

namespace {
/// ULP-free closeness for factories: |ours - torch| <= k * epsilon(T) * scale.
template <class T>
double worst_ratio(const std::vector<T>& ours, const std::vector<T>& theirs, double scale) {
    double worst = 0;
    for (std::size_t i = 0; i < ours.size() && i < theirs.size(); ++i)
        worst = std::max(worst, std::abs(static_cast<double>(ours[i]) - static_cast<double>(theirs[i])) /
                                    (static_cast<double>(std::numeric_limits<T>::epsilon()) * scale));
    return worst;
}

template <class T>
void check_arange(double start, double end, double step, bool exact) {
    CAPTURE(dt::dtype_v<T>.name());
    CAPTURE(start);
    CAPTURE(end);
    CAPTURE(step);
    const auto ours = dt::arange<T>(start, end, step).to_vector();
    const auto theirs = torch_values<T>(torch::arange(start, end, step, torch::TensorOptions().dtype(torch_dtype<T>)));
    REQUIRE(ours.size() == theirs.size());
    if (exact) {
        CHECK(ours == theirs);
    } else {
        CHECK(ours.front() == theirs.front());
        CHECK(worst_ratio(ours, theirs, std::max({std::abs(start), std::abs(end), std::abs(step)})) <= 2);
    }
}

template <class T>
void check_linspace(double start, double end, std::int64_t steps, bool exact) {
    CAPTURE(dt::dtype_v<T>.name());
    CAPTURE(start);
    CAPTURE(end);
    CAPTURE(steps);
    const auto ours = dt::linspace<T>(start, end, steps).to_vector();
    const auto theirs = torch_values<T>(torch::linspace(start, end, steps, torch::TensorOptions().dtype(torch_dtype<T>)));
    REQUIRE(ours.size() == theirs.size());
    if (exact) {
        CHECK(ours == theirs);
    } else if (steps > 0) {
        CHECK(ours.front() == theirs.front());
        CHECK(ours.back() == static_cast<T>(steps == 1 ? start : end));  // torch's vector blocks may miss `end`
        CHECK(worst_ratio(ours, theirs, std::max(std::abs(start), std::abs(end))) <= 4);
    }
}
}  // namespace

// torch's CPU kernels (RangeFactoriesKernel.cpp, 1.13) are not one formula: blocks of
// 2 * Vectorized<T>::size() elements take base + k * step from a base rounded once per
// vector (Vectorized<T>::arange), the tail takes start + step * i, and the AVX2/AVX-512
// builds of that scalar line are contracted to an fma by the compiler (with
// ATEN_CPU_CAPABILITY=default torch's linspace(-1, 1, 7)[3] is 0, as devtensor's; with
// AVX2/AVX-512 it is -2.98e-8). devtensor evaluates each element from its index alone,
// without contraction (DESIGN §15), so bit equality holds only where every value is
// exact; elsewhere the difference is a few epsilon of the range's magnitude (up to
// thousands of ulp of a value near zero).
TEST_CASE("arange and linspace equal torch's where the values are exact, and are within a few epsilon elsewhere") {
    // exact: integer and dyadic starts and steps, small enough for every intermediate
    for (const auto& [a, b, s] : std::vector<std::tuple<double, double, double>>{
             {0, 10, 1}, {1, 2, 0.25}, {-8, 8, 0.5}, {10, 0, -3}, {-3, 40, 0.125}, {0, 0, 1}, {5, 5, -1}, {0, 1000, 1},
             {-1000, 1000, 7}, {0.5, 64, 1.5}, {2, -2, -0.0625}}) {
        check_arange<float>(a, b, s, true);
        check_arange<double>(a, b, s, true);
    }
    for (const auto& [a, b, s] : std::vector<std::tuple<double, double, double>>{
             {0, 10, 1}, {10, 0, -3}, {-7, 100, 3}, {0, 100000, 7}, {5, -50, -1}, {0, 0, 1}, {-1000000, 1000000, 999}}) {
        check_arange<std::int64_t>(a, b, s, true);
        check_arange<std::int32_t>(a, b, s, true);
    }
    for (const auto& [a, b, s] : std::vector<std::tuple<double, double, double>>{
             {0, 1, 0.1}, {3, 40, 0.7}, {-5, 5, 0.3}, {0.1, 100, 0.1}, {0, 1000, 0.01}, {-2.5, 7.3, 0.013}, {1e-3, 1, 1e-3},
             {100, -100, -0.37}}) {
        check_arange<float>(a, b, s, false);
        check_arange<double>(a, b, s, false);
    }
    rng_t r(3);
    for (int c = 0; c < 200; ++c) {
        const double a = std::uniform_real_distribution<double>(-100, 100)(r.gen);
        const double s = std::uniform_real_distribution<double>(0.01, 10)(r.gen) * (r.chance(0.5) ? 1 : -1);
        const double b = a + s * static_cast<double>(r.uni(0, 3000)) + s * 0.5;
        check_arange<float>(a, b, s, false);
        check_arange<double>(a, b, s, false);
    }

    // exact: the step and every multiple of it are exact (integers, quarters)
    for (const std::int64_t n : {0, 1, 2, 3, 5, 9, 16, 17, 33, 65, 129, 257, 513, 1025}) {
        const auto m = static_cast<double>(n);
        check_linspace<float>(0, std::max(m - 1, 0.), n, true);
        check_linspace<double>(0, std::max(m - 1, 0.), n, true);
        check_linspace<float>(-m, m, 2 * n + 1, true);
        check_linspace<double>(-m / 4, m / 4, 2 * n + 1, true);
    }
    for (const auto& [a, b, n] : std::vector<std::tuple<double, double, std::int64_t>>{
             {0, 1, 5}, {-8, 8, 3}, {0, 16, 17}, {-1, 1, 9}, {3, -3, 25}, {2, 2, 40}}) {
        check_linspace<float>(a, b, n, true);
        check_linspace<double>(a, b, n, true);
    }
    for (const std::int64_t n : {0, 1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 100, 1000, 1001, 70000})
        for (const auto& [a, b] : std::vector<std::pair<double, double>>{
                 {0, 1}, {-3, 11}, {0.1, 0.7}, {-1, 1}, {5, -2.3}, {1e-3, 1e3}, {-1e6, 1e6}}) {
            check_linspace<float>(a, b, n, false);
            check_linspace<double>(a, b, n, false);
        }
    for (int c = 0; c < 200; ++c) {
        const double a = std::uniform_real_distribution<double>(-100, 100)(r.gen);
        const double b = std::uniform_real_distribution<double>(-100, 100)(r.gen);
        const std::int64_t n = r.uni(0, 2000);
        check_linspace<float>(a, b, n, false);
        check_linspace<double>(a, b, n, false);
    }
}

namespace {
/// torch's Python name of a dtype ("torch.float32"), from the C++ name ("Float").
std::string python_name(c10::ScalarType t) {
    static const std::map<std::string, std::string> names = {
        {"Bool", "torch.bool"},   {"Char", "torch.int8"},   {"Byte", "torch.uint8"},     {"Short", "torch.int16"},
        {"Int", "torch.int32"},   {"Long", "torch.int64"},  {"Float", "torch.float32"}, {"Double", "torch.float64"}};
    const auto it = names.find(c10::toString(t));
    return it == names.end() ? std::string("unknown ") + c10::toString(t) : it->second;
}

template <class T>
void check_dtype() {
    const c10::ScalarType st = torch_dtype<T>;
    std::ostringstream ours;
    ours << dt::dtype_v<T>;
    CHECK(ours.str() == python_name(st));
    CHECK(std::string(dt::dtype_v<T>.name()) == python_name(st));
    CHECK(host_tensor<T>::element_size() == static_cast<std::int64_t>(c10::elementSize(st)));
    const auto t = dt::zeros<T>({2});
    CHECK(t.dtype() == dt::dtype_v<T>);
    CHECK(t.element_size() == torch::zeros({2}, torch::TensorOptions().dtype(st)).element_size());
}
}  // namespace

TEST_CASE("dtype() names and element sizes are torch's") {
    check_dtype<bool>();
    check_dtype<std::int8_t>();
    check_dtype<std::uint8_t>();
    check_dtype<std::int16_t>();
    check_dtype<std::int32_t>();
    check_dtype<std::int64_t>();
    check_dtype<float>();
    check_dtype<double>();
    CHECK(python_name(torch::ones({1}).scalar_type()) == "torch.float32");  // torch's default, and devtensor's float
    std::ostringstream os;
    os << dt::ones<float>({1}).dtype();
    CHECK(os.str() == python_name(torch::ones({1}).scalar_type()));
}

TEST_CASE_TEMPLATE("sum and mean over random dims of strided operands agree with torch", T, float, double, std::int32_t,
                   std::int64_t, std::int8_t, bool) {
    rng_t r(57);
    for (int c = 0; c < 300; ++c) {
        const dims_t dims = random_shape(r);
        const operand<T> a = strided_operand<T>(dims, r, false);
        dims_t reduce;
        for (std::int64_t d = 0; d < static_cast<std::int64_t>(dims.size()); ++d)
            if (r.chance(0.5)) reduce.push_back(r.chance(0.3) ? d - static_cast<std::int64_t>(dims.size()) : d);
        const bool keepdim = r.chance(0.5);
        INFO("shape ", str(dims), "; ", a.how, "; dims ", str(reduce), keepdim ? " keepdim" : "");
        const auto got = dt::sum(a.d, reduce, keepdim);
        const torch::Tensor want = torch::sum(a.t, reduce, keepdim);
        CHECK(sizes_of(got) == want.sizes().vec());
        using S = dt::detail::sum_t<T>;
        const std::vector<S> g = got.to_vector(), w = torch_values<S>(want);
        REQUIRE(g.size() == w.size());
        if constexpr (std::is_floating_point_v<T>) {
            // the orders differ; both within a few rounding errors of the exact sum
            const std::vector<S> bound = torch_values<S>(torch::sum(a.t.abs(), reduce, keepdim));
            const double eps = std::numeric_limits<T>::epsilon() * 8;
            for (std::size_t i = 0; i < g.size(); ++i) CHECK(std::abs(double(g[i]) - double(w[i])) <= eps * double(bound[i]));
            const auto gm = dt::mean(a.d, reduce, keepdim).to_vector();
            const auto wm = torch_values<T>(torch::mean(a.t, reduce, keepdim));
            REQUIRE(gm.size() == wm.size());
            for (std::size_t i = 0; i < gm.size(); ++i)
                if (std::isnan(wm[i])) CHECK(std::isnan(gm[i]));
                else CHECK(std::abs(double(gm[i]) - double(wm[i])) <= eps * double(bound[i]));
        } else {
            CHECK(g == w);  // integers: exact (int64, wrapping)
        }
    }
}

namespace {
/// Within `ulps` units in the last place of T, NaN matching NaN, equal infinities equal.
template <class T>
bool within_ulps(const std::vector<T>& got, const std::vector<T>& want, int ulps) {
    if (got.size() != want.size()) return false;
    for (std::size_t i = 0; i < got.size(); ++i) {
        if (std::isnan(got[i]) || std::isnan(want[i])) {
            if (std::isnan(got[i]) != std::isnan(want[i])) return false;
            continue;
        }
        if (got[i] == want[i]) continue;
        T lo = want[i], hi = want[i];
        for (int k = 0; k < ulps; ++k) {
            lo = std::nextafter(lo, -std::numeric_limits<T>::infinity());
            hi = std::nextafter(hi, std::numeric_limits<T>::infinity());
        }
        if (got[i] < lo || got[i] > hi) return false;
    }
    return true;
}
}  // namespace

TEST_CASE_TEMPLATE("the everyday elementwise ops equal torch's on strided and broadcast operands", T, float, double,
                   std::int32_t, std::int64_t, std::int8_t) {
    rng_t r(77);
    for (int c = 0; c < 200; ++c) {
        const dims_t dims = random_shape(r);
        const operand<T> a = strided_operand<T>(dims, r, false);
        const operand<T> b = strided_operand<T>(dims, r, true);
        INFO("shape ", str(dims), "; a: ", a.how, "; b: ", b.how);
        const auto same = [](const auto& got, const torch::Tensor& want) {
            using U = typename std::remove_cvref_t<decltype(got)>::value_type;
            CHECK(sizes_of(got) == want.sizes().vec());
            CHECK(same_values(got.to_vector(), torch_values<U>(want)));
        };
        same(dt::sub(a.d, b.d), torch::sub(a.t, b.t));
        same(b.d - a.d, b.t - a.t);
        same(a.d - T(3), a.t - 3);
        same(T(3) - a.d, 3 - a.t);
        same(dt::maximum(a.d, b.d), torch::maximum(a.t, b.t));
        same(dt::minimum(a.d, b.d), torch::minimum(a.t, b.t));
        same(-a.d, -a.t);
        same(dt::abs(a.d), torch::abs(a.t));
        same(dt::clamp(a.d, -2, 3), torch::clamp(a.t, -2, 3));
        same(a.d < b.d, a.t < b.t);
        same(a.d <= b.d, a.t <= b.t);
        same(a.d > b.d, a.t > b.t);
        same(a.d >= T(1), a.t >= 1);
        same(a.d == b.d, a.t == b.t);
        same(a.d != b.d, a.t != b.t);
        same(dt::where(a.d > b.d, a.d, b.d), torch::where(a.t > b.t, a.t, b.t));
        if constexpr (std::is_integral_v<T>) same(dt::pow(a.d, T(3)), torch::pow(a.t, 3));  // wrapping alike
        if constexpr (std::is_floating_point_v<T>) {
            same(dt::div(a.d, b.d), torch::div(a.t, b.t));
            same(a.d / T(4), a.t / 4);
            same(dt::sqrt(dt::abs(a.d)), torch::sqrt(torch::abs(a.t)));
            // devtensor's own math vs torch's (SLEEF, libm; about 1 ulp each): 3 ulp apart at most
            const auto close = [](const host_tensor<T>& got, const torch::Tensor& want) {
                CHECK(sizes_of(got) == want.sizes().vec());
                CHECK(within_ulps(got.to_vector(), torch_values<T>(want), 3));
            };
            close(dt::exp(a.d), torch::exp(a.t));
            close(dt::log(dt::abs(a.d)), torch::log(torch::abs(a.t)));
            close(dt::tanh(a.d), torch::tanh(a.t));
            close(dt::sigmoid(a.d), torch::sigmoid(a.t));
            close(dt::pow(a.d, b.d), torch::pow(a.t, b.t));  // a negative base: NaN unless b is an integer
            close(dt::pow(dt::abs(a.d), b.d), torch::pow(torch::abs(a.t), b.t));
            close(dt::pow(T(2), b.d), torch::pow(2, b.t));
            close(dt::pow(a.d, T(3)), torch::pow(a.t, 3));  // torch: x * x * x, rounded twice
        }
    }
}

TEST_CASE_TEMPLATE("the everyday ops on NaN, infinities, signed zeros and subnormals, broadcast at rank 8, equal torch's",
                   T, float, double) {
    using lim = std::numeric_limits<T>;
    const std::vector<T> specials = {lim::quiet_NaN(), lim::infinity(), -lim::infinity(), T(0), -T(0),
                                     lim::denorm_min(), -3 * lim::denorm_min(), lim::min(), -lim::max(), T(1.5),
                                     T(-2), T(0.5), T(3), T(-0.25), T(20), T(-20)};  // ±20: torch's float sigmoid(-100) flushes to 0
    // a [2, 1, 2, 1, 2, 1, 2, 1] against b [1, 2, 1, 2, 1, 2, 1, 2]: every pair of the 16 values meets
    const dims_t da = {2, 1, 2, 1, 2, 1, 2, 1}, db = {1, 2, 1, 2, 1, 2, 1, 2};
    std::vector<T> va(specials), vb(specials.rbegin(), specials.rend());
    const auto ad = dt_from(va, da), bd = dt_from(vb, db);
    const auto at = torch_from(va, da), bt = torch_from(vb, db);
    const auto same = [](const auto& got, const torch::Tensor& want) {
        using U = typename std::remove_cvref_t<decltype(got)>::value_type;
        CHECK(sizes_of(got) == want.sizes().vec());
        CHECK(same_values(got.to_vector(), torch_values<U>(want)));
    };
    const auto close = [](const host_tensor<T>& got, const torch::Tensor& want) {
        CHECK(sizes_of(got) == want.sizes().vec());
        CHECK(within_ulps(got.to_vector(), torch_values<T>(want), 3));
    };
    same(ad + bd, at + bt);
    same(ad - bd, at - bt);
    same(ad * bd, at * bt);
    same(ad / bd, at / bt);
    same(dt::maximum(ad, bd), torch::maximum(at, bt));
    same(dt::minimum(ad, bd), torch::minimum(at, bt));
    same(ad < bd, at < bt);
    same(ad == bd, at == bt);
    same(ad != bd, at != bt);
    same(dt::where(ad > bd, ad, bd), torch::where(at > bt, at, bt));
    same(dt::abs(ad), torch::abs(at));
    same(-ad, -at);
    same(dt::sqrt(ad), torch::sqrt(at));
    same(dt::clamp(ad, -1, 1), torch::clamp(at, -1, 1));
    close(dt::exp(ad), torch::exp(at));
    close(dt::log(ad), torch::log(at));
    close(dt::tanh(ad), torch::tanh(at));
    close(dt::sigmoid(ad), torch::sigmoid(at));
    close(dt::pow(ad, bd), torch::pow(at, bt));
    same(dt::amax(ad, {0, 2, 4}), torch::amax(at, {0, 2, 4}));
    same(dt::argmax(ad.reshape({16}), 0), torch::argmax(at.reshape({16}), 0));
}

TEST_CASE_TEMPLATE("amax, amin, argmax, argmin, softmax and any agree with torch over random dims", T, float, double,
                   std::int32_t, std::int8_t) {
    rng_t r(91);
    for (int c = 0; c < 200; ++c) {
        dims_t dims = random_shape(r);
        for (auto& d : dims) d = std::max<std::int64_t>(d, 1);  // no empty reductions (refused, as torch's)
        const operand<T> a = strided_operand<T>(dims, r, false);
        const auto rank = static_cast<std::int64_t>(dims.size());
        dims_t reduce;
        for (std::int64_t d = 0; d < rank; ++d)
            if (r.chance(0.5)) reduce.push_back(d);
        const bool keepdim = r.chance(0.5);
        INFO("shape ", str(dims), "; ", a.how, "; dims ", str(reduce), keepdim ? " keepdim" : "");
        const auto same = [](const auto& got, const torch::Tensor& want) {
            using U = typename std::remove_cvref_t<decltype(got)>::value_type;
            CHECK(sizes_of(got) == want.sizes().vec());
            CHECK(same_values(got.to_vector(), torch_values<U>(want)));
        };
        if (!reduce.empty()) {
            same(dt::amax(a.d, reduce, keepdim), torch::amax(a.t, reduce, keepdim));
            same(dt::amin(a.d, reduce, keepdim), torch::amin(a.t, reduce, keepdim));
        }
        same(dt::amax(a.d), torch::amax(a.t, dims_t{}));  // a 0-dim result
        same(dt::any(a.d > T(0)), (a.t > 0).any());
        same(dt::all(a.d > T(0)), (a.t > 0).all());
        if (rank > 0) {
            const std::int64_t d = r.uni(-rank, rank - 1);
            // torch's argmax picks the first maximum too (documented since 1.7)
            same(dt::argmax(a.d, d, keepdim), torch::argmax(a.t, d, keepdim));
            same(dt::argmin(a.d, d, keepdim), torch::argmin(a.t, d, keepdim));
            same(dt::any(a.d > T(0), {d}, keepdim), (a.t > 0).any(d, keepdim));
            same(dt::all(a.d > T(0), {d}, keepdim), (a.t > 0).all(d, keepdim));
            if constexpr (std::is_floating_point_v<T>) {
                const auto s = dt::softmax(a.d, d).to_vector(), w = torch_values<T>(torch::softmax(a.t, d));
                REQUIRE(s.size() == w.size());
                for (std::size_t i = 0; i < s.size(); ++i) CHECK(std::abs(double(s[i]) - double(w[i])) <= 1e-6);
                const auto l = dt::log_softmax(a.d, d).to_vector(), lw = torch_values<T>(torch::log_softmax(a.t, d));
                for (std::size_t i = 0; i < l.size(); ++i)
                    CHECK(std::abs(double(l[i]) - double(lw[i])) <= 1e-5 * (1 + std::abs(double(lw[i]))));
            }
        }
        if (rank > 0) same(dt::argmax(a.d), torch::argmax(a.t));
    }
}

TEST_CASE_TEMPLATE("matmul as torch.matmul, cat and stack equal torch's", T, float, double, std::int32_t, std::int64_t) {
    rng_t r(123);
    for (int c = 0; c < 150; ++c) {
        // operand ranks 1-4, batch dims that broadcast (some 1), k, m, n of 0-6
        const std::int64_t m = r.uni(0, 6), k = r.uni(0, 6), n = r.uni(0, 6);
        const auto batch = [&] {
            dims_t b(static_cast<std::size_t>(r.uni(0, 2)));
            for (auto& d : b) d = r.chance(0.3) ? 1 : r.uni(1, 3);
            return b;
        };
        dims_t sa = batch(), sb = sa;
        if (r.chance(0.3)) sb = batch();
        const bool a_vector = r.chance(0.2), b_vector = r.chance(0.2);
        if (a_vector) sa = {k};
        else sa.insert(sa.end(), {m, k});
        if (b_vector) sb = {k};
        else sb.insert(sb.end(), {k, n});
        const operand<T> a = strided_operand<T>(sa, r, false), b = strided_operand<T>(sb, r, false);
        INFO("a ", str(sa), " (", a.how, "); b ", str(sb), " (", b.how, ")");
        bool torch_ok = true;
        torch::Tensor want;
        try {
            want = torch::matmul(a.t, b.t);
        } catch (const c10::Error&) {
            torch_ok = false;
        }
        if (!torch_ok) {
            CHECK_THROWS_AS((void)dt::matmul(a.d, b.d), dt::shape_error);
            continue;
        }
        const auto got = dt::matmul(a.d, b.d);
        CHECK(sizes_of(got) == want.sizes().vec());
        const auto g = got.to_vector(), w = torch_values<T>(want);
        REQUIRE(g.size() == w.size());
        for (std::size_t i = 0; i < g.size(); ++i) {
            if constexpr (std::is_floating_point_v<T>) CHECK(std::abs(double(g[i]) - double(w[i])) <= 1e-5 * (1 + std::abs(double(w[i]))));
            else CHECK(g[i] == w[i]);
        }
    }
    for (int c = 0; c < 150; ++c) {
        dims_t dims = random_shape(r, 4, 4);
        if (dims.empty()) dims = {2};
        const auto rank = static_cast<std::int64_t>(dims.size());
        const std::int64_t d = r.uni(-rank, rank - 1);
        std::vector<host_tensor<T>> ds;
        std::vector<torch::Tensor> ts;
        const int count = static_cast<int>(r.uni(1, 3));
        for (int i = 0; i < count; ++i) {
            dims_t s = dims;
            s[static_cast<std::size_t>(d < 0 ? d + rank : d)] = r.uni(0, 3);
            const operand<T> o = strided_operand<T>(s, r, false);
            ds.push_back(o.d);
            ts.push_back(o.t);
        }
        INFO("cat of ", count, " along ", d, " of ", str(dims));
        const auto got = dt::cat(ds, d);
        const torch::Tensor want = torch::cat(ts, d);
        CHECK(sizes_of(got) == want.sizes().vec());
        CHECK(got.to_vector() == torch_values<T>(want));
        // stack needs one shape: the first tensor, several times
        const std::vector<host_tensor<T>> same(static_cast<std::size_t>(count), ds[0]);
        const std::vector<torch::Tensor> same_t(static_cast<std::size_t>(count), ts[0]);
        const std::int64_t sd = r.uni(-rank - 1, rank);
        const auto st = dt::stack(same, sd);
        const torch::Tensor sw = torch::stack(same_t, sd);
        CHECK(sizes_of(st) == sw.sizes().vec());
        CHECK(st.to_vector() == torch_values<T>(sw));
    }
}
