// Tests for format.hpp: every expected string is what PyTorch's repr() prints for the
// same values (torch/_tensor_str.py, default print options).
#include <devtensor/format.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

using namespace devtensor;

namespace {

// repr of a CPU tensor holding `values` with shape `s`.
template <class T>
std::string repr(std::initializer_list<T> values, const shape& s) {
    return to_string(from_values<T>(values, s));
}

// repr of torch.arange(numel(s)).reshape(s) with element type T.
template <class T>
std::string repr_arange(const shape& s) {
    std::vector<T> values;
    for (std::int64_t i = 0; i < s.numel(); ++i) values.push_back(static_cast<T>(i));
    return to_string(from_values<T>(values, s));
}

constexpr float nan_f = std::numeric_limits<float>::quiet_NaN();
constexpr float inf_f = std::numeric_limits<float>::infinity();

}  // namespace

TEST_CASE("format: integral floats print with a trailing dot") {
    CHECK(repr<float>({1, 1, 1, 1, 1, 1}, {2, 3}) ==
          "tensor([[1., 1., 1.],\n"
          "        [1., 1., 1.]])");
    CHECK(repr<float>({1, 100, -5}, {3}) == "tensor([  1., 100.,  -5.])");
    CHECK(repr<float>({0, 0, 0}, {3}) == "tensor([0., 0., 0.])");
}

TEST_CASE("format: four decimals in fixed mode") {
    CHECK(repr<float>({0.3045f, 0.4398f, 0.9162f, 0.5351f, 0.1256f, 0.8916f}, {2, 3}) ==
          "tensor([[0.3045, 0.4398, 0.9162],\n"
          "        [0.5351, 0.1256, 0.8916]])");
    CHECK(repr<float>({0.7668f, 0.7668f}, {2, 1}) ==
          "tensor([[0.7668],\n"
          "        [0.7668]])");
}

TEST_CASE("format: negative values share one right-justified width") {
    CHECK(repr<float>({-1.5f, 2.25f, -0.125f, 10.0f}, {4}) ==
          "tensor([-1.5000,  2.2500, -0.1250, 10.0000])");
    CHECK(repr<float>({-1.5f, 2.0f, 3.25f, -4.0f}, {2, 2}) ==
          "tensor([[-1.5000,  2.0000],\n"
          "        [ 3.2500, -4.0000]])");
    CHECK(repr<float>({12345.5f, 100.25f}, {2}) == "tensor([12345.5000,   100.2500])");
}

TEST_CASE("format: negative zero keeps its sign, and zeros do not count for the width") {
    CHECK(repr<float>({-0.0f, 1.5f}, {2}) == "tensor([-0.0000, 1.5000])");
    CHECK(repr<float>({-0.0f, 1.0f}, {2}) == "tensor([-0., 1.])");
}

TEST_CASE("format: scientific mode") {
    CHECK(repr<float>({1e-5f, 1.0f}, {2}) == "tensor([1.0000e-05, 1.0000e+00])");
    CHECK(repr<float>({-1e-5f, 1.0f}, {2}) == "tensor([-1.0000e-05,  1.0000e+00])");
    CHECK(repr<float>({1e9f}, {1}) == "tensor([1.0000e+09])");
    // Integers too, when max / min > 1000.
    CHECK(repr<float>({1.0f, 2000.0f}, {2}) == "tensor([1.0000e+00, 2.0000e+03])");
}

TEST_CASE("format: nan and inf") {
    CHECK(repr<float>({1.5f, nan_f, inf_f, -inf_f}, {4}) ==
          "tensor([1.5000,    nan,    inf,   -inf])");
    CHECK(repr<float>({1.0f, -nan_f, -inf_f}, {3}) == "tensor([1., nan, -inf])");
    CHECK(repr<float>({nan_f, inf_f}, {2}) == "tensor([nan, inf])");
}

TEST_CASE("format: integer and bool tensors, dtype suffixes") {
    CHECK(repr<std::int32_t>({1, -20, 300}, {3}) == "tensor([  1, -20, 300], dtype=torch.int32)");
    CHECK(repr<std::int64_t>({1, -20, 300}, {3}) == "tensor([  1, -20, 300])");
    CHECK(repr<std::uint8_t>({0, 255, 7}, {3}) == "tensor([  0, 255,   7], dtype=torch.uint8)");
    CHECK(repr<std::int8_t>({-3, 65}, {2}) == "tensor([-3, 65], dtype=torch.int8)");
    CHECK(repr<double>({1.5, 2.0}, {2}) == "tensor([1.5000, 2.0000], dtype=torch.float64)");
    CHECK(repr<bool>({true, false, true}, {3}) == "tensor([ True, False,  True])");
}

TEST_CASE("format: dtype names follow size and signedness") {
    CHECK(detail::dtype_name<float>() == "torch.float32");
    CHECK(detail::dtype_name<double>() == "torch.float64");
    CHECK(detail::dtype_name<long long>() == "torch.int64");
    CHECK(detail::dtype_name<long>() == (sizeof(long) == 8 ? "torch.int64" : "torch.int32"));
    CHECK(detail::dtype_name<unsigned char>() == "torch.uint8");
    CHECK(detail::dtype_name<char>() ==
          (std::numeric_limits<char>::is_signed ? "torch.int8" : "torch.uint8"));
    CHECK(detail::dtype_name<std::int16_t>() == "torch.int16");
    CHECK(detail::dtype_name<std::uint16_t>() == "torch.uint16");
    CHECK(detail::dtype_name<std::uint32_t>() == "torch.uint32");
    CHECK(detail::dtype_name<std::uint64_t>() == "torch.uint64");
    CHECK(detail::dtype_name<bool>() == "torch.bool");
}

TEST_CASE("format: scalars") {
    CHECK(repr<float>({1.0f}, {}) == "tensor(1.)");
    CHECK(repr<double>({3.14159}, {}) == "tensor(3.1416, dtype=torch.float64)");
    CHECK(repr<std::int64_t>({7}, {}) == "tensor(7)");
}

TEST_CASE("format: empty tensors") {
    CHECK(repr<float>({}, {0}) == "tensor([])");
    CHECK(repr<float>({}, {0, 3}) == "tensor([], size=(0, 3))");
    // No element shows the dtype, so even int64 gets a suffix.
    CHECK(repr<std::int64_t>({}, {0}) == "tensor([], dtype=torch.int64)");
}

TEST_CASE("format: a 3-D tensor puts a blank line between matrices") {
    CHECK(repr_arange<float>({2, 2, 2}) ==
          "tensor([[[0., 1.],\n"
          "         [2., 3.]],\n"
          "\n"
          "        [[4., 5.],\n"
          "         [6., 7.]]])");
}

TEST_CASE("format: long rows wrap at 80 columns") {
    CHECK(repr_arange<std::int64_t>({100}) ==
          "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n"
          "        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,\n"
          "        36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53,\n"
          "        54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71,\n"
          "        72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89,\n"
          "        90, 91, 92, 93, 94, 95, 96, 97, 98, 99])");
    CHECK(repr_arange<float>({100}) ==
          "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
          "        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.,\n"
          "        28., 29., 30., 31., 32., 33., 34., 35., 36., 37., 38., 39., 40., 41.,\n"
          "        42., 43., 44., 45., 46., 47., 48., 49., 50., 51., 52., 53., 54., 55.,\n"
          "        56., 57., 58., 59., 60., 61., 62., 63., 64., 65., 66., 67., 68., 69.,\n"
          "        70., 71., 72., 73., 74., 75., 76., 77., 78., 79., 80., 81., 82., 83.,\n"
          "        84., 85., 86., 87., 88., 89., 90., 91., 92., 93., 94., 95., 96., 97.,\n"
          "        98., 99.])");
    CHECK(repr_arange<std::int64_t>({2, 20}) ==
          "tensor([[ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n"
          "         18, 19],\n"
          "        [20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37,\n"
          "         38, 39]])");
}

TEST_CASE("format: more than 1000 elements are summarised") {
    // The formatter sees only the shown values: 0, 1, 2, 1997, 1998, 1999 (max/min > 1000).
    CHECK(repr_arange<float>({2000}) ==
          "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n"
          "        1.9990e+03])");
    CHECK(repr_arange<std::int64_t>({2000}) == "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
    CHECK(repr_arange<std::int64_t>({40, 40}) ==
          "tensor([[   0,    1,    2,  ...,   37,   38,   39],\n"
          "        [  40,   41,   42,  ...,   77,   78,   79],\n"
          "        [  80,   81,   82,  ...,  117,  118,  119],\n"
          "        ...,\n"
          "        [1480, 1481, 1482,  ..., 1517, 1518, 1519],\n"
          "        [1520, 1521, 1522,  ..., 1557, 1558, 1559],\n"
          "        [1560, 1561, 1562,  ..., 1597, 1598, 1599]])");
}

TEST_CASE("format: a suffix that does not fit goes on its own line") {
    CHECK(repr<double>({0.5, 1.5, 2.5, 3.5, 4.5}, {5}) ==
          "tensor([0.5000, 1.5000, 2.5000, 3.5000, 4.5000], dtype=torch.float64)");
    CHECK(repr<double>({0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5}, {9}) ==
          "tensor([0.5000, 1.5000, 2.5000, 3.5000, 4.5000, 5.5000, 6.5000, 7.5000, 8.5000],\n"
          "       dtype=torch.float64)");
    CHECK(repr<double>({1.5, 2, 3, 4}, {2, 2}) ==
          "tensor([[1.5000, 2.0000],\n"
          "        [3.0000, 4.0000]], dtype=torch.float64)");
    // PyTorch overcounts the last line by two: this one would end at column 80, yet wraps.
    std::vector<std::int32_t> digits;
    for (int i = 0; i < 34; ++i) digits.push_back(i % 10);
    CHECK(to_string(from_values<std::int32_t>(digits, {2, 17})) ==
          "tensor([[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5, 6],\n"
          "        [7, 8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3]],\n"
          "       dtype=torch.int32)");
    digits.resize(32);
    CHECK(to_string(from_values<std::int32_t>(digits, {2, 16})) ==
          "tensor([[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5],\n"
          "        [6, 7, 8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1]], dtype=torch.int32)");
}

TEST_CASE("format: the device suffix comes first (checked without a GPU)") {
    CHECK(detail::format_tensor(std::vector<float>{1, 2}, {2}, "cuda:0") ==
          "tensor([1., 2.], device='cuda:0')");
    CHECK(detail::format_tensor(std::vector<std::int32_t>{1, 2}, {2}, "cuda:0") ==
          "tensor([1, 2], device='cuda:0', dtype=torch.int32)");
    CHECK(detail::format_tensor(std::vector<std::int32_t>{}, {0, 3}, "cuda:1") ==
          "tensor([], device='cuda:1', size=(0, 3), dtype=torch.int32)");
    CHECK(detail::format_tensor(std::vector<float>{1, 2}, {2}, "cpu") == "tensor([1., 2.])");
}

TEST_CASE("format: operator<< and run-time device handles") {
    const tensor<float, device> t = from_values<float>({0.5f, -2.0f}, {2});
    std::ostringstream os;
    os << t;
    CHECK(os.str() == "tensor([ 0.5000, -2.0000])");
    CHECK(to_string(t) == os.str());
    CHECK(to_string(tensor<float>()) == "[ Tensor (undefined) ]");
}

namespace {

// What a counting fetch saw: it reads no memory, it writes each element's own row-major
// offset, so the gathered array says where every shown value came from.
struct fetch_log {
    std::int64_t calls = 0;
    std::int64_t elements = 0;
    bool in_range = true;
};

detail::shown_values<std::int64_t> gather_offsets(const shape& s, fetch_log& log) {
    return detail::gather_shown<std::int64_t>(
        s, [&](std::int64_t first, std::int64_t count, std::int64_t* dst) {
            ++log.calls;
            log.elements += count;
            if (count <= 0 || first < 0 || first + count > s.numel()) log.in_range = false;
            for (std::int64_t i = 0; i < count; ++i) dst[i] = first + i;
        });
}

// The row-major offsets PyTorch prints for shape `s` (summarised: the first and last 3
// indices of each dimension longer than 6), in print order; written out independently.
std::vector<std::int64_t> expected_offsets(const shape& s) {
    std::vector<std::int64_t> offsets{0};
    for (const std::int64_t n : s) {
        std::vector<std::int64_t> kept;
        for (std::int64_t i = 0; i < n; ++i)
            if (s.numel() <= 1000 || n <= 6 || i < 3 || i >= n - 3) kept.push_back(i);
        std::vector<std::int64_t> next;
        for (const std::int64_t o : offsets)
            for (const std::int64_t i : kept) next.push_back(o * n + i);
        offsets = next;
    }
    return offsets;
}

std::vector<std::int64_t> as_vector(const detail::shown_values<std::int64_t>& v) {
    const auto span = v.values();
    return {span.begin(), span.end()};
}

// A CPU tensor of shape `s` holding f(i) at row-major offset i, filled through data().
template <class T, class F>
tensor<T> filled(const shape& s, F f) {
    auto t = empty<T>(s);
    for (std::int64_t i = 0; i < s.numel(); ++i) t.data()[i] = f(i);
    return t;
}

// to_string (which copies only the shown elements) against format_tensor of all of them.
template <class T>
void check_paths_agree(const tensor<T>& t) {
    INFO("shape ", t.shape());
    CHECK(to_string(t) == detail::format_tensor(t.to_vector(), t.shape(), "cpu"));
    const tensor<T, device> runtime = t;
    CHECK(to_string(runtime) == to_string(t));
}

}  // namespace

TEST_CASE("format: a summarised tensor fetches only the elements it prints") {
    SUBCASE("[50'000'000]: 6 elements, in two runs") {
        fetch_log log;
        const auto shown = gather_offsets({50'000'000}, log);
        CHECK(shown.dims == shape{6});
        CHECK(log.in_range);
        CHECK(log.elements == 6);
        CHECK(log.calls == 2);
        CHECK(as_vector(shown) ==
              std::vector<std::int64_t>{0, 1, 2, 49'999'997, 49'999'998, 49'999'999});
    }
    SUBCASE("[3000, 4000]: 36 elements; a row's end and the next row's start are one run") {
        fetch_log log;
        const shape s{3000, 4000};
        const auto shown = gather_offsets(s, log);
        CHECK(shown.dims == shape{6, 6});
        CHECK(log.in_range);
        CHECK(log.elements == 36);
        // [0, 3), [3997, 4003), [7997, 8003), [11997, 12000), and the same at the end.
        CHECK(log.calls == 8);
        CHECK(as_vector(shown) == expected_offsets(s));
        CHECK(as_vector(shown)[7] == 4001);
        CHECK(as_vector(shown)[35] == 3000 * 4000 - 1);
    }
    SUBCASE("rank 8, dimensions of 1, 2, 6, 7 and more") {
        fetch_log log;
        const shape s{2, 7, 3, 100, 1, 6, 9, 1000};
        const auto shown = gather_offsets(s, log);
        CHECK(shown.dims == shape{2, 6, 3, 6, 1, 6, 6, 6});
        CHECK(log.in_range);
        CHECK(log.elements == shown.dims.numel());
        CHECK(log.elements == 46'656);
        CHECK(as_vector(shown) == expected_offsets(s));
    }
    SUBCASE("rows that touch are fetched as one run") {
        fetch_log log;
        const shape s{3000, 4};  // rows 0-2 and 2997-2999 are two contiguous blocks
        const auto shown = gather_offsets(s, log);
        CHECK(shown.dims == shape{6, 4});
        CHECK(log.elements == 24);
        CHECK(log.calls == 2);
        CHECK(as_vector(shown) == expected_offsets(s));
    }
    SUBCASE("not summarised: everything, in one call") {
        for (const shape& s : {shape{1000}, shape{10, 100}, shape{7, 7, 7}, shape{}}) {
            INFO("shape ", s);
            fetch_log log;
            const auto shown = gather_offsets(s, log);
            CHECK(shown.dims == s);
            CHECK(log.calls == 1);
            CHECK(log.elements == s.numel());
            CHECK(as_vector(shown) == expected_offsets(s));
        }
    }
    SUBCASE("no elements: no call") {
        for (const shape& s : {shape{0}, shape{0, 5000}, shape{5000, 0, 3}}) {
            fetch_log log;
            const auto shown = gather_offsets(s, log);
            CHECK(shown.dims.numel() == 0);
            CHECK(log.calls == 0);
        }
    }
}

TEST_CASE("format: printing a large tensor copies little and prints the same") {
    // 2'000'000 floats: to_string reads 6 of them, format_tensor is handed all of them.
    const auto big = filled<float>({2'000'000}, [](std::int64_t i) {
        return static_cast<float>(i % 1000) * 0.37f - 50.0f;
    });
    check_paths_agree(big);
    CHECK(to_string(big) ==
          "tensor([-50.0000, -49.6300, -49.2600,  ..., 318.8900, 319.2600, 319.6300])");
    const auto iota = [](std::int64_t i) { return static_cast<float>(i); };
    check_paths_agree(filled<float>({1000, 2000}, iota));
    check_paths_agree(filled<std::int64_t>({3000, 4, 5}, [](std::int64_t i) { return i * 7 - 100; }));
    check_paths_agree(filled<bool>({40, 50, 3}, [](std::int64_t i) { return i % 3 == 1; }));
}

TEST_CASE("format: dimensions of exactly 6 and 7, summarised or not, print the same both ways") {
    const auto value = [](std::int64_t i) { return static_cast<float>(i) * 0.5f; };
    // [7, 7, 7] holds 343 elements, under the threshold: printed in full.
    check_paths_agree(filled<float>({7, 7, 7}, value));
    CHECK(to_string(filled<float>({7, 7, 7}, value)).find("...") == std::string::npos);
    // Summarised, with dimensions of 6 (kept whole) and 7 (cut to 3 + 3).
    for (const shape& s : {shape{1001}, shape{6, 7, 30}, shape{7, 6, 7, 7}, shape{6, 6, 6, 6},
                           shape{1, 1001}, shape{1001, 1}, shape{7, 1, 1, 200}}) {
        check_paths_agree(filled<float>(s, value));
        check_paths_agree(filled<std::int64_t>(s, [](std::int64_t i) { return i; }));
        check_paths_agree(filled<bool>(s, [](std::int64_t i) { return i % 2 == 0; }));
    }
    CHECK(to_string(filled<std::int64_t>({1001}, [](std::int64_t i) { return i; })) ==
          "tensor([   0,    1,    2,  ...,  998,  999, 1000])");
    const std::string cut = to_string(filled<std::int64_t>({6, 7, 30}, [](std::int64_t i) { return i; }));
    CHECK(cut.find("...") != std::string::npos);
}

TEST_CASE("format: a CUDA tensor prints from the few elements it copies" *
          doctest::skip(!devtensor::cuda_available())) {
    const auto host = filled<float>({3000, 4000}, [](std::int64_t i) {
        return static_cast<float>(i % 977) * 0.25f;
    });
    const auto gpu = host.cuda();
    CHECK(to_string(gpu) == detail::format_tensor(host.to_vector(), host.shape(), "cuda:0"));
    const auto flags = filled<bool>({7, 6, 7, 7}, [](std::int64_t i) { return i % 5 == 0; }).cuda();
    CHECK(to_string(flags) == detail::format_tensor(flags.to_vector(), flags.shape(), "cuda:0"));
    CHECK(to_string(empty<std::int32_t>({0, 3}).cuda()) ==
          "tensor([], device='cuda:0', size=(0, 3), dtype=torch.int32)");
}
