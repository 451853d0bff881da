// nn/serialize.hpp: nn::save / nn::load and optim::save / optim::load in the
// safetensors format: round trips, files written byte by byte (every way a file can
// be malformed is an error naming the file, never a crash), and, when
// tests/safetensors_check.py runs them, files the Python safetensors package reads
// and writes.
#include "test_support.hpp"

#include <devtensor/nn/serialize.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {
namespace fs = std::filesystem;

/// A directory of its own under the system's temporary directory, removed at the end.
struct temp_dir {
    fs::path path;
    temp_dir() {
        std::random_device seed;
        path = fs::temp_directory_path() / ("devtensor-serialize-" + std::to_string(seed()) + std::to_string(seed()));
        fs::create_directories(path);
    }
    ~temp_dir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
    std::string operator/(const std::string& name) const { return (path / name).string(); }
};

std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}
/// The 8-byte little-endian length n.
std::string length_bytes(std::uint64_t n) {
    std::string s(8, '\0');
    for (std::size_t i = 0; i < 8; ++i) s[i] = static_cast<char>(static_cast<unsigned char>(n >> (8 * i)));
    return s;
}
/// A safetensors file: the header (padded with spaces to a multiple of 8), then the data.
std::string file_of(std::string json, const std::string& data = "") {
    json.append((8 - json.size() % 8) % 8, ' ');
    return length_bytes(json.size()) + json + data;
}
/// The header's JSON in a file.
std::string header_of(const std::string& file) {
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = n << 8 | static_cast<unsigned char>(file[static_cast<std::size_t>(i)]);
    return file.substr(8, n);
}
/// The bytes of these floats, little-endian (the tests run on little-endian hosts).
std::string float_bytes(std::initializer_list<float> values) {
    std::string s(values.size() * 4, '\0');
    std::memcpy(s.data(), values.begin(), s.size());
    return s;
}

/// A user's module: named tensors of any element type (what nn::load sees of any module).
template <class T>
struct bag {
    std::vector<std::pair<std::string, dt::tensor<T, dt::device>>> tensors;
    std::vector<dt::tensor<T, dt::device>> parameters() const {
        std::vector<dt::tensor<T, dt::device>> result;
        for (const auto& named : tensors) result.push_back(named.second);
        return result;
    }
    std::vector<std::pair<std::string, dt::tensor<T, dt::device>>> named_parameters() const { return tensors; }
    template <dt::Device E>
    bag to(const E&) const { return *this; }
};
static_assert(dt::nn::Module<bag<float>>);

/// A tensor of shape s whose element i is value(i).
template <class T, class F>
dt::tensor<T, dt::device> filled(const dt::shape& s, F value) {
    auto t = dt::empty<T>(s);
    for (std::int64_t i = 0; i < t.numel(); ++i) t.data()[i] = value(i);
    return t;
}

template <class T>
auto mlp(std::uint64_t seed) {
    dt::generator gen(seed);
    return dt::nn::sequential(dt::nn::linear<T>(3, 5, true, gen), dt::nn::relu{}, dt::nn::linear<T>(5, 2, true, gen));
}

/// Every parameter's elements, in named_parameters() order.
template <class M>
auto values_of(const M& module) {
    using T = typename std::remove_cvref_t<decltype(module.parameters())>::value_type::value_type;
    std::vector<std::vector<T>> result;
    for (const auto& p : module.parameters()) result.push_back(p.to_vector());
    return result;
}

/// One step of training on fixed data: the same step for every optimizer under test.
template <class Net, class Opt>
void train_step(const Net& net, Opt& opt, int k) {
    using T = typename std::remove_cvref_t<decltype(net.parameters())>::value_type::value_type;
    dt::generator gen(static_cast<std::uint64_t>(100 + k));
    const auto x = dt::rand<T>({4, 3}, dt::cpu_device{}, gen);
    const auto y = dt::rand<T>({4, 2}, dt::cpu_device{}, gen);
    auto loss = dt::nn::mse_loss(net(x), y);
    opt.zero_grad();
    loss.backward();
    opt.step();
}

/// Adam state for every parameter of `net`, written as a file by hand and loaded into
/// `opt`: state from elsewhere (as a file PyTorch wrote), not from devtensor's own steps.
template <class Net, class Opt>
void seed_adam_state(const Net& net, Opt& opt, const std::string& path, bool amsgrad, int step) {
    using T = typename std::remove_cvref_t<decltype(net.parameters())>::value_type::value_type;
    bag<T> state;
    std::size_t k = 0;
    for (const auto& [name, p] : net.named_parameters()) {
        const std::string prefix = "state." + std::to_string(k++) + ".";
        state.tensors.emplace_back(prefix + "step", filled<T>({}, [&](std::int64_t) { return T(step); }));
        state.tensors.emplace_back(prefix + "exp_avg", filled<T>(p.shape(), [](std::int64_t i) { return T(0.01) * T(i % 5 - 2); }));
        state.tensors.emplace_back(prefix + "exp_avg_sq", filled<T>(p.shape(), [](std::int64_t i) { return T(1e-4) * T(1 + i % 3); }));
        if (amsgrad)
            state.tensors.emplace_back(prefix + "max_exp_avg_sq", filled<T>(p.shape(), [](std::int64_t i) { return T(2e-4) * T(1 + i % 3); }));
    }
    dt::nn::save(state, path);
    dt::optim::load(opt, path);
}

const char* interop_dir() { return std::getenv("DEVTENSOR_SAFETENSORS_DIR"); }
}  // namespace

// ---- round trips -------------------------------------------------------------------------

TEST_CASE_TEMPLATE("nn::save and nn::load round-trip a sequential MLP", T, float, double) {
    const temp_dir dir;
    const std::string path = dir / "mlp.safetensors";
    const auto a = mlp<T>(1);
    dt::nn::save(a, path);

    auto b = mlp<T>(2);
    REQUIRE(values_of(b) != values_of(a));
    const auto weight = get<0>(b).weight;  // a handle: load writes through it
    dt::nn::load(b, path);
    CHECK(values_of(b) == values_of(a));  // bit for bit
    CHECK(weight.is_same(get<0>(b).weight));
    CHECK(weight.to_vector() == get<0>(a).weight.to_vector());
    CHECK(get<2>(b).bias.requires_grad());
    dt::generator gen(3);
    const auto x = dt::rand<T>({4, 3}, dt::cpu_device{}, gen);
    CHECK(b(x).to_vector() == a(x).to_vector());

    // the layout the reference writes: length, header padded to 8 bytes, data in order
    const std::string file = read_bytes(path), header = header_of(file);
    CHECK(header.size() % 8 == 0);
    CHECK(header.front() == '{');
    const std::string f = std::is_same_v<T, float> ? "F32" : "F64";
    const std::size_t s = sizeof(T);
    CHECK(test::contains(header, "\"__metadata__\":{\"format\":\"pt\"}"));
    CHECK(test::contains(header, "\"0.weight\":{\"dtype\":\"" + f + "\",\"shape\":[5,3],\"data_offsets\":[0," +
                                     std::to_string(15 * s) + "]}"));
    CHECK(test::contains(header, "\"2.bias\":{\"dtype\":\"" + f + "\",\"shape\":[2],\"data_offsets\":[" +
                                     std::to_string(30 * s) + "," + std::to_string(32 * s) + "]}"));
    CHECK(file.size() == 8 + header.size() + 32 * s);
    CHECK(std::memcmp(file.data() + 8 + header.size(), get<0>(a).weight.to_vector().data(), 15 * s) == 0);
}

TEST_CASE("nn::load writes in place while autograd records: gradients kept, versions bumped") {
    const temp_dir dir;
    const std::string path = dir / "mlp.safetensors";
    dt::nn::save(mlp<float>(1), path);
    auto net = mlp<float>(2);
    dt::generator gen(3);
    const auto x = dt::rand<float>({4, 3}, dt::cpu_device{}, gen);
    const auto out = dt::sum(net(x));  // saved the weights it read
    out.backward(true);
    const auto grad = get<0>(net).weight.grad().to_vector();
    CHECK(dt::is_grad_enabled());
    dt::nn::load(net, path);  // no no_grad needed: load uses its own
    CHECK(dt::is_grad_enabled());
    CHECK(get<0>(net).weight.grad().to_vector() == grad);
    CHECK(get<0>(net).weight.is_leaf());
    CHECK_ERROR(dt::autograd_error, out.backward(), "modified by an in-place operation");
}

TEST_CASE("a file with its keys, data and metadata in another order loads: what another writer may write") {
    const temp_dir dir;
    const std::string path = dir / "other.safetensors";
    // 2.weight's data first, the metadata last, escapes and newlines in the JSON
    const std::string json =
        "{\n  \"2.bias\": {\"shape\": [2], \"dtype\": \"F32\", \"data_offsets\": [40, 48]},\n"
        "  \"\\u0030.bias\" : {\"data_offsets\":[0,4],\"dtype\":\"F32\",\"shape\":[1]},\r\n"
        "\t\"2.weight\": {\"dtype\": \"F32\", \"shape\": [2, 1], \"data_offsets\": [32, 40]},\n"
        "  \"0.weight\": {\"dtype\": \"F32\", \"shape\": [1, 3], \"data_offsets\": [4, 16]},\n"
        "  \"unused\": {\"dtype\": \"U8\", \"shape\": [0], \"data_offsets\": [16, 16]},\n"
        "  \"pad\": {\"dtype\": \"I64\", \"shape\": [2], \"data_offsets\": [16, 32]},\n"
        "  \"__metadata__\": {\"format\": \"pt\", \"note\": \"caf\\u00e9 \\ud83d\\ude00\"}\n}";
    const std::string data = float_bytes({0.5f, 1, 2, 3}) + std::string(16, '\0') + float_bytes({-1, -2, 7, 8});
    write_bytes(path, file_of(json, data));
    dt::generator gen(0);
    auto net = dt::nn::sequential(dt::nn::linear<float>(3, 1, true, gen), dt::nn::relu{},
                                  dt::nn::linear<float>(1, 2, true, gen));
    CHECK_ERROR(dt::error, dt::nn::load(net, path), "unexpected", "'unused'", "'pad'");

    const dt::detail::safetensors::file_reader file(path, "test");  // what the reader made of it
    CHECK(file.head().tensors.size() == 6);
    CHECK(file.head().find("0.bias") != nullptr);  // \u0030 is '0'
    REQUIRE(file.head().meta("note") != nullptr);
    CHECK(*file.head().meta("note") == "caf\xc3\xa9 \xf0\x9f\x98\x80");

    // without the two extra tensors, it loads
    const std::string json2 =
        "{\"2.bias\":{\"shape\":[2],\"dtype\":\"F32\",\"data_offsets\":[24,32]},"
        "\"0.bias\":{\"data_offsets\":[0,4],\"dtype\":\"F32\",\"shape\":[1]},"
        "\"2.weight\":{\"dtype\":\"F32\",\"shape\":[2,1],\"data_offsets\":[16,24]},"
        "\"0.weight\":{\"dtype\":\"F32\",\"shape\":[1,3],\"data_offsets\":[4,16]}}";
    write_bytes(path, file_of(json2, float_bytes({0.5f, 1, 2, 3, -1, -2, 7, 8})));
    dt::nn::load(net, path);
    CHECK(get<0>(net).weight.to_vector() == std::vector<float>{1, 2, 3});
    CHECK(get<0>(net).bias.to_vector() == std::vector<float>{0.5f});
    CHECK(get<2>(net).weight.to_vector() == std::vector<float>{-1, -2});
    CHECK(get<2>(net).bias.to_vector() == std::vector<float>{7, 8});
}

TEST_CASE_TEMPLATE("every element type, empty and scalar tensors round-trip", T, bool, std::int8_t, std::uint8_t,
                   std::int16_t, std::uint16_t, std::int32_t, std::uint32_t, std::int64_t, std::uint64_t) {
    const temp_dir dir;
    const std::string path = dir / "bag.safetensors";
    const auto value = [](std::int64_t i) { return static_cast<T>(std::is_same_v<T, bool> ? i % 3 == 1 : i * 7 - 3); };
    const bag<T> saved{{{"matrix", filled<T>({2, 3}, value)}, {"empty", filled<T>({0, 4}, value)},
                        {"scalar", filled<T>({}, [](std::int64_t) { return T{1}; })}}};
    dt::nn::save(saved, path);
    const std::string header = header_of(read_bytes(path));
    CHECK(test::contains(header, std::string("\"dtype\":\"") + dt::detail::safetensors::dtype_code<T>() + "\""));
    CHECK(test::contains(header, "\"empty\":{\"dtype\":\""));
    CHECK(test::contains(header, "\"shape\":[0,4]"));
    CHECK(test::contains(header, "\"shape\":[],"));

    const auto zero = [](std::int64_t) { return T{}; };
    bag<T> loaded{{{"matrix", filled<T>({2, 3}, zero)}, {"empty", filled<T>({0, 4}, zero)},
                   {"scalar", filled<T>({}, zero)}}};
    dt::nn::load(loaded, path);
    for (std::size_t i = 0; i < 3; ++i)
        CHECK(loaded.tensors[i].second.to_vector() == saved.tensors[i].second.to_vector());
}

TEST_CASE("names with quotes, backslashes, control characters and UTF-8 round-trip") {
    const temp_dir dir;
    const std::string path = dir / "names.safetensors";
    const std::vector<std::string> names = {"a\"b", "c\\d", "tab\there\n", "caf\xc3\xa9", "", "emoji \xf0\x9f\x98\x80"};
    bag<float> saved, loaded;
    for (std::size_t i = 0; i < names.size(); ++i) {
        saved.tensors.emplace_back(names[i], filled<float>({2}, [&](std::int64_t k) { return float(i * 10) + float(k); }));
        loaded.tensors.emplace_back(names[i], filled<float>({2}, [](std::int64_t) { return 0.f; }));
    }
    dt::nn::save(saved, path);
    const std::string header = header_of(read_bytes(path));
    CHECK(test::contains(header, "\"a\\\"b\""));
    CHECK(test::contains(header, "\"c\\\\d\""));
    CHECK(test::contains(header, "\"tab\\u0009here\\u000a\""));
    dt::nn::load(loaded, path);
    for (std::size_t i = 0; i < names.size(); ++i)
        CHECK(loaded.tensors[i].second.to_vector() == saved.tensors[i].second.to_vector());
}

TEST_CASE("a parameter that is a non-contiguous view is saved row-major and loaded through the view") {
    const temp_dir dir;
    const std::string path = dir / "view.safetensors";
    const auto base = dt::from_values<float>({1, 2, 3, 4, 5, 6}, {2, 3});
    const bag<float> saved{{{"w", base.t()}}};  // [3, 2], strides [1, 3]
    dt::nn::save(saved, path);
    const std::string file = read_bytes(path);
    CHECK(file.substr(file.size() - 24) == float_bytes({1, 4, 2, 5, 3, 6}));
    const auto target = dt::zeros<float>({2, 3});
    bag<float> loaded{{{"w", dt::tensor<float, dt::device>(target).t()}}};
    dt::nn::load(loaded, path);
    CHECK(target.to_vector() == std::vector<float>{1, 2, 3, 4, 5, 6});
}

// ---- files that do not fit the module ----------------------------------------------------

TEST_CASE("nn::load refuses a file that does not fit the module, and changes nothing") {
    const temp_dir dir;
    const std::string path = dir / "mlp.safetensors";
    dt::nn::save(mlp<float>(1), path);
    dt::generator gen(5);

    auto deeper = dt::nn::sequential(dt::nn::linear<float>(3, 5, true, gen), dt::nn::relu{},
                                     dt::nn::linear<float>(5, 2, true, gen), dt::nn::relu{},
                                     dt::nn::linear<float>(2, 1, true, gen));
    auto before = values_of(deeper);
    CHECK_ERROR(dt::error, dt::nn::load(deeper, path), "devtensor::nn::load", "mlp.safetensors", "does not fit",
                "missing from the file: '4.weight', '4.bias'");
    CHECK(values_of(deeper) == before);

    auto shallower = dt::nn::sequential(dt::nn::linear<float>(3, 5, true, gen));
    CHECK_ERROR(dt::error, dt::nn::load(shallower, path), "unexpected in the file", "'2.weight', '2.bias'");

    auto no_bias = dt::nn::sequential(dt::nn::linear<float>(3, 5, false, gen), dt::nn::relu{},
                                      dt::nn::linear<float>(5, 2, false, gen));
    CHECK_ERROR(dt::error, dt::nn::load(no_bias, path), "unexpected in the file", "'0.bias', '2.bias'");

    auto narrower = dt::nn::sequential(dt::nn::linear<float>(3, 4, true, gen), dt::nn::relu{},
                                       dt::nn::linear<float>(4, 2, true, gen));
    before = values_of(narrower);
    CHECK_ERROR(dt::shape_error, dt::nn::load(narrower, path), "'0.weight' has shape [5, 3] in the file but [4, 3]",
                "'0.bias' has shape [5] in the file but [4]", "'2.weight' has shape [2, 5] in the file but [2, 4]");
    CHECK(values_of(narrower) == before);

    auto in_double = mlp<double>(1);
    const auto before_double = values_of(in_double);
    CHECK_ERROR(dt::error, dt::nn::load(in_double, path), "'0.weight' has dtype F32 in the file but F64 in the module");
    CHECK(values_of(in_double) == before_double);
}

// ---- malformed files: every one an error naming the file, none a crash -------------------

namespace {
/// What loading `bytes` as a file into a one-tensor float module ("w", [2]) throws.
std::string load_message(const temp_dir& dir, const std::string& bytes) {
    const std::string path = dir / "bad.safetensors";
    write_bytes(path, bytes);
    bag<float> m{{{"w", filled<float>({2}, [](std::int64_t) { return 0.f; })}}};
    try {
        dt::nn::load(m, path);
    } catch (const dt::error& e) {
        CHECK(m.tensors[0].second.to_vector() == std::vector<float>{0, 0});  // untouched
        return e.what();
    }
    FAIL_CHECK("no error for the bytes of: ", bytes);
    return "";
}
/// The message for a file whose header is `json` (and data `data`), checked to name the
/// file and to hold `words`; `at` (when given) is where in json the error lies.
void check_bad(const temp_dir& dir, const std::string& json, const std::string& data,
               std::initializer_list<std::string> words, std::string::size_type at = std::string::npos) {
    const std::string message = load_message(dir, file_of(json, data));
    INFO("header: ", json);
    INFO("message: ", message);
    CHECK(test::contains(message, "devtensor::nn::load: '"));
    CHECK(test::contains(message, "bad.safetensors'"));
    for (const std::string& w : words) CHECK(test::contains(message, w));
    if (at != std::string::npos) CHECK(test::contains(message, "at byte " + std::to_string(8 + at) + " of the file"));
}
const std::string good_w = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
}  // namespace

TEST_CASE("the reference file this suite mutates loads") {
    const temp_dir dir;
    const std::string path = dir / "good.safetensors";
    write_bytes(path, file_of(good_w, float_bytes({1.5f, -2})));
    bag<float> m{{{"w", filled<float>({2}, [](std::int64_t) { return 0.f; })}}};
    dt::nn::load(m, path);
    CHECK(m.tensors[0].second.to_vector() == std::vector<float>{1.5f, -2});
    // no padding at all is fine too (the reference pads; readers must not insist)
    write_bytes(path, length_bytes(good_w.size()) + good_w + float_bytes({3, 4}));
    dt::nn::load(m, path);
    CHECK(m.tensors[0].second.to_vector() == std::vector<float>{3, 4});
}

TEST_CASE("files too short, or whose header length is wrong, are errors naming the file") {
    const temp_dir dir;
    bag<float> m{{{"w", filled<float>({2}, [](std::int64_t) { return 0.f; })}}};
    CHECK_ERROR(dt::error, dt::nn::load(m, dir / "absent.safetensors"), "devtensor::nn::load",
                "absent.safetensors", "cannot read the file");
    CHECK_ERROR(dt::error, dt::nn::load(m, dir.path.string()), "is a directory");
    CHECK(test::contains(load_message(dir, ""), "holds 0 bytes"));
    CHECK(test::contains(load_message(dir, std::string("\x10\0\0\0\0", 5)), "holds 5 bytes"));
    CHECK(test::contains(load_message(dir, length_bytes(1000) + "{}      "), "header length 1000 reaches past the end"));
    CHECK(test::contains(load_message(dir, length_bytes(~std::uint64_t{0}) + "{}"), "reaches past the end of the file"));
    CHECK(test::contains(load_message(dir, length_bytes(0) + "{}"), "the header is empty"));
    CHECK(test::contains(load_message(dir, length_bytes(2) + "[]"), "starting with '{'"));
    // a header longer than the limit is refused before it is read (a sparse file)
    const std::string huge = dir / "huge.safetensors";
    write_bytes(huge, length_bytes(150'000'000) + "{");
    fs::resize_file(huge, 150'000'100);
    CHECK_ERROR(dt::error, dt::nn::load(m, huge), "header length 150000000 is over the limit");
    // the data cut short: the last tensor reaches past the end
    const std::string whole = file_of(good_w, float_bytes({1, 2}));
    CHECK(test::contains(load_message(dir, whole.substr(0, whole.size() - 1)), "past the end of the data"));
}

TEST_CASE("malformed JSON in the header is an error naming the file and the byte") {
    const temp_dir dir;
    const std::string d = float_bytes({1, 2});
    const auto at = [](const std::string& json, const std::string& marker) { return json.find(marker); };
    std::string j;

    j = "{\"w\" {\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    check_bad(dir, j, d, {"expected ':' after a key, found '{'"}, at(j, " {") + 1);
    j = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},}";
    check_bad(dir, j, d, {"expected a tensor name in quotes, found '}'"}, at(j, ",}") + 1);
    j = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,],\"data_offsets\":[0,8]}}";
    check_bad(dir, j, d, {"non-negative integer, found ']'"}, at(j, ",]") + 1);
    j = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}";  // the object never closes
    check_bad(dir, j, d, {"found the end of the header"});
    j = "{\"w";
    check_bad(dir, j, d, {"a string that never ends"}, 1);
    j = "{\"w\\q\":{}}";
    check_bad(dir, j, d, {"unknown escape \\'q'"}, 3);
    j = "{\"w\\udc00\":{}}";
    check_bad(dir, j, d, {"lone low surrogate"}, 3);
    j = "{\"w\\ud800x\":{}}";
    check_bad(dir, j, d, {"without its low surrogate"}, 3);
    j = "{\"w\\u12g4\":{}}";
    check_bad(dir, j, d, {"four hex digits, found 'g'"}, 7);
    j = "{\"w\xff\":{}}";
    check_bad(dir, j, d, {"invalid UTF-8 (byte 0xff)"}, 3);
    j = "{\"w\xc0\xaf\":{}}";  // an overlong '/'
    check_bad(dir, j, d, {"invalid UTF-8"}, 3);
    j = "{\"w\xed\xa0\x80\":{}}";  // a surrogate in UTF-8
    check_bad(dir, j, d, {"invalid UTF-8"}, 3);
    j = "{\"w\x01\":{}}";
    check_bad(dir, j, d, {"control character (byte 0x01)"}, 3);
    j = "{\"w\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}";
    check_bad(dir, j, d, {"a negative number"}, at(j, "-2"));
    j = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}";
    check_bad(dir, j, d, {"not an integer"}, at(j, "2.0"));
    j = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2e0],\"data_offsets\":[0,8]}}";
    check_bad(dir, j, d, {"not an integer"}, at(j, "2e0"));
    j = "{\"w\":{\"dtype\":\"F32\",\"shape\":[02],\"data_offsets\":[0,8]}}";
    check_bad(dir, j, d, {"leading zero"}, at(j, "02"));
    j = "{\"w\":{\"dtype\":\"F32\",\"shape\":[18446744073709551616],\"data_offsets\":[0,8]}}";
    check_bad(dir, j, d, {"too large for 64 bits"}, at(j, "1844"));
    j = "{\"w\":{\"dtype\":\"F32\",\"shape\":\"2\",\"data_offsets\":[0,8]}}";
    check_bad(dir, j, d, {"expected '[' to start a shape, found '\"'"}, at(j, "\"2\""));
    j = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2]}}";
    check_bad(dir, j, d, {"the tensor 'w' has no data_offsets"}, 1);
    j = "{\"w\":{\"shape\":[2],\"data_offsets\":[0,8]}}";
    check_bad(dir, j, d, {"the tensor 'w' has no dtype"}, 1);
    j = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"foo\":1}}";
    check_bad(dir, j, d, {"unknown field 'foo' in tensor 'w'"}, at(j, "\"foo"));
    j = "{\"w\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    check_bad(dir, j, d, {"the field 'dtype' of tensor 'w' appears twice"}, at(j, ",\"dtype") + 1);
    j = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,8]}}";
    check_bad(dir, j, d, {"must be [begin, end], found 3 numbers"}, at(j, "[0,8,8]"));
    j = good_w + ",\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    j.erase(good_w.size() - 1, 1);  // the same tensor twice in one object
    check_bad(dir, j, d, {"the tensor 'w' appears twice"}, good_w.size());
    j = good_w + "x";
    check_bad(dir, j, d, {"only spaces may follow the header's object, found 'x'"}, good_w.size());
    j = good_w + "\n{}";
    check_bad(dir, j, d, {"only spaces may follow"}, good_w.size() + 1);
    j = "{\"w\":[1]}";
    check_bad(dir, j, d, {"expected '{' to start the description of tensor 'w', found '['"}, 5);
    j = "{\"w\":{\"dtype\":2,\"shape\":[2],\"data_offsets\":[0,8]}}";
    check_bad(dir, j, d, {"expected a dtype in quotes, found '2'"}, at(j, "2,"));
    j = "{\"__metadata__\":{\"a\":1}," + good_w.substr(1);
    check_bad(dir, j, d, {"metadata values are strings"}, at(j, "1,"));
    j = "{\"__metadata__\":{\"a\":\"x\",\"a\":\"y\"}," + good_w.substr(1);
    check_bad(dir, j, d, {"the metadata key 'a' appears twice"}, at(j, ",\"a") + 1);
    j = "{\"__metadata__\":{},\"__metadata__\":{}," + good_w.substr(1);
    check_bad(dir, j, d, {"__metadata__ appears twice"}, at(j, ",\"__") + 1);
    j = "{\"__metadata__\":[]," + good_w.substr(1);
    check_bad(dir, j, d, {"expected '{' to start __metadata__"}, at(j, "[]"));
    j = "{1:2}";
    check_bad(dir, j, d, {"expected a tensor name in quotes, found '1'"}, 1);
    j = "{\"w\":null}";
    check_bad(dir, j, d, {"found 'n'"}, 5);
    j = " {}";
    check_bad(dir, j, d, {"starting with '{', found ' '"}, 0);
}

TEST_CASE("data offsets outside the data, overlapping, leaving holes or not matching the shape are errors") {
    const temp_dir dir;
    const auto two = [](const char* a, const char* b) {
        return std::string("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":") + a +
               "},\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":" + b + "}}";
    };
    const std::string d8 = float_bytes({1, 2}), d16 = float_bytes({1, 2, 3, 4});
    check_bad(dir, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", float_bytes({1}),
              {"'w' has data_offsets [0, 8], past the end of the data, which holds 4 bytes"});
    check_bad(dir, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[18446744073709551608,0]}}", d8,
              {"end before they begin"});
    check_bad(dir, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,18446744073709551615]}}", d8,
              {"past the end of the data"});
    check_bad(dir, two("[0,8]", "[4,12]"), d16 + "xxxx", {"the data of tensors 'a' [0, 8] and 'w' [4, 12] overlap"});
    check_bad(dir, two("[0,8]", "[0,8]"), d16, {"overlap"});
    check_bad(dir, two("[0,8]", "[12,20]"), d16 + "xxxx", {"a hole of 4 bytes before tensor 'w' [12, 20]"});
    check_bad(dir, two("[8,16]", "[12,20]"), d16 + "xxxx", {"a hole of 8 bytes before tensor 'a' [8, 16]"});
    check_bad(dir, good_w, d16, {"the data holds 16 bytes, but its tensors end at byte 8"});
    check_bad(dir, "{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", d8,
              {"'w' (F32, shape [3]) needs 12 bytes, but its data_offsets [0, 8] span 8"});
    check_bad(dir, "{\"w\":{\"dtype\":\"F12\",\"shape\":[2],\"data_offsets\":[0,8]}}", d8,
              {"the tensor 'w' has dtype 'F12', which is not a safetensors dtype"});
    check_bad(dir, "{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4],\"data_offsets\":[0,8]}}", d8,
              {"holds more than 2^64 bytes"});
    check_bad(dir, "{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,0],\"data_offsets\":[0,0]}}", "",
              {"does not fit the module", "'w' has shape [4294967296, 4294967296, 0] in the file but [2]"});
    check_bad(dir, "{}", "", {"missing from the file: 'w'"});
    check_bad(dir, "{\"w\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", d8,
              {"'w' has dtype F64 in the file but F32 in the module"});

    // a BOOL byte other than 0 or 1 is no bool
    const std::string path = dir / "bool.safetensors";
    write_bytes(path, file_of("{\"b\":{\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[0,3]}}", std::string("\1\0\2", 3)));
    bag<bool> flags{{{"b", filled<bool>({3}, [](std::int64_t) { return false; })}}};
    CHECK_ERROR(dt::error, dt::nn::load(flags, path), "element 2 of the BOOL tensor 'b' is 2, not 0 or 1");
}

TEST_CASE("nn::save refuses what it cannot write, naming the file") {
    const temp_dir dir;
    CHECK_ERROR(dt::error, dt::nn::save(mlp<float>(1), dir / "no/such/dir/mlp.safetensors"), "devtensor::nn::save",
                "mlp.safetensors", "cannot create the file");
    const auto one = filled<float>({1}, [](std::int64_t) { return 1.f; });
    CHECK_ERROR(dt::error, dt::nn::save(bag<float>{{{"__metadata__", one}}}, dir / "a"), "may not be named '__metadata__'");
    CHECK_ERROR(dt::error, dt::nn::save(bag<float>{{{"x", one}, {"x", one}}}, dir / "a"), "two tensors are named 'x'");
    CHECK_ERROR(dt::error, dt::nn::save(bag<float>{{{"bad\xff", one}}}, dir / "a"), "is not valid UTF-8");
    CHECK_ERROR(dt::error, dt::nn::save(bag<float>{{{"u", dt::tensor<float, dt::device>{}}}}, dir / "a"),
                "the tensor 'u' is undefined");
}

// ---- optimizer state ----------------------------------------------------------------------

TEST_CASE_TEMPLATE("optim::save and optim::load restore sgd's momentum buffers", T, float, double) {
    const temp_dir dir;
    const auto a = mlp<T>(1);
    auto opt_a = dt::optim::sgd(a, {.lr = 0.1, .momentum = 0.9, .nesterov = true});
    train_step(a, opt_a, 0);
    train_step(a, opt_a, 1);
    dt::nn::save(a, dir / "net");
    dt::optim::save(opt_a, dir / "opt");
    const std::string header = header_of(read_bytes(dir / "opt"));
    CHECK(test::contains(header, "\"state.0.momentum_buffer\":{\"dtype\":\""));
    CHECK(test::contains(header, "\"state.3.momentum_buffer\""));
    CHECK(test::contains(header, "\"optimizer\":\"sgd\""));
    CHECK(test::contains(header, "\"param_groups.0.lr\":\"0.1\""));

    const auto b = mlp<T>(2);
    auto opt_b = dt::optim::sgd(b, {.lr = 0.1, .momentum = 0.9, .nesterov = true});
    train_step(b, opt_b, 7);  // state of its own, replaced by load
    dt::nn::load(b, dir / "net");
    dt::optim::load(opt_b, dir / "opt");
    for (std::size_t i = 0; i < 4; ++i)
        CHECK(opt_b.momentum_buffer(i).to_vector() == opt_a.momentum_buffer(i).to_vector());
    train_step(a, opt_a, 2);
    train_step(b, opt_b, 2);
    CHECK(values_of(b) == values_of(a));  // training goes on as if never interrupted

    auto fresh = dt::optim::sgd(mlp<T>(3), {.lr = 0.1, .momentum = 0.9});
    dt::optim::save(fresh, dir / "empty");  // no state yet: a file with no tensors
    dt::optim::load(opt_b, dir / "empty");
    for (std::size_t i = 0; i < 4; ++i) CHECK(!opt_b.momentum_buffer(i).defined());
}

TEST_CASE_TEMPLATE("optim::save and optim::load restore adam's and adamw's state, amsgrad too", O,
                   dt::optim::adam<float>, dt::optim::adamw<double>) {
    using T = typename std::remove_cvref_t<decltype(std::declval<O&>().parameters())>::value_type::value_type;
    for (const bool amsgrad : {false, true}) {
        CAPTURE(amsgrad);
        const temp_dir dir;
        typename O::options_type options{};
        options.lr = 0.01;
        options.amsgrad = amsgrad;
        const auto a = mlp<T>(1);
        O opt_a(a, options);
        seed_adam_state(a, opt_a, dir / "seed", amsgrad, 1);
        for (int k = 0; k < 2; ++k) train_step(a, opt_a, k);
        dt::nn::save(a, dir / "net");
        dt::optim::save(opt_a, dir / "opt");
        const std::string header = header_of(read_bytes(dir / "opt"));
        CHECK(test::contains(header, "\"state.0.step\":{\"dtype\":\"F32\",\"shape\":[],"));
        CHECK(test::contains(header, "\"state.3.exp_avg\""));
        CHECK(test::contains(header, "\"state.3.exp_avg_sq\""));
        CHECK(test::contains(header, "\"state.3.max_exp_avg_sq\"") == amsgrad);

        const auto b = mlp<T>(2);
        O opt_b(b, options);
        dt::nn::load(b, dir / "net");
        dt::optim::load(opt_b, dir / "opt");
        for (std::size_t i = 0; i < 4; ++i) {
            CHECK(opt_b.steps(i) == 3);
            CHECK(opt_b.state_of(i).exp_avg.to_vector() == opt_a.state_of(i).exp_avg.to_vector());
            CHECK(opt_b.state_of(i).exp_avg_sq.to_vector() == opt_a.state_of(i).exp_avg_sq.to_vector());
            CHECK(opt_b.state_of(i).max_exp_avg_sq.defined() == amsgrad);
        }
        train_step(a, opt_a, 3);
        train_step(b, opt_b, 3);
        CHECK(values_of(b) == values_of(a));
        CHECK(opt_b.steps(0) == 4);
    }
}

TEST_CASE("optim::load refuses state that does not fit the optimizer, and changes nothing") {
    const temp_dir dir;
    const auto net = mlp<float>(1);
    auto adam = dt::optim::adam(net, {.lr = 0.01});
    auto sgd = dt::optim::sgd(net, {.lr = 0.01, .momentum = 0.5});
    seed_adam_state(net, adam, dir / "seed", false, 0);
    train_step(net, adam, 0);
    train_step(net, sgd, 0);
    dt::optim::save(adam, dir / "adam");
    dt::optim::save(sgd, dir / "sgd");
    const auto kept = sgd.momentum_buffer(0).to_vector();

    CHECK_ERROR(dt::error, dt::optim::load(sgd, dir / "adam"), "devtensor::optim::load", "'", "adam'",
                "holds the state of optim::adam, not of optim::sgd");
    CHECK_ERROR(dt::error, dt::optim::load(adam, dir / "sgd"), "holds the state of optim::sgd, not of optim::adam");
    auto adamw = dt::optim::adamw(net);
    CHECK_ERROR(dt::error, dt::optim::load(adamw, dir / "adam"), "not of optim::adamw");
    auto amsgrad = dt::optim::adam(net, {.amsgrad = true});
    CHECK_ERROR(dt::error, dt::optim::load(amsgrad, dir / "adam"), "missing from the file: 'state.0.max_exp_avg_sq'");

    // state saved for a wider net: shapes differ; for a deeper one: names this one lacks
    dt::generator gen(0);
    const auto narrower = dt::nn::sequential(dt::nn::linear<float>(3, 4, true, gen), dt::nn::relu{},
                                             dt::nn::linear<float>(4, 2, true, gen));
    auto narrower_sgd = dt::optim::sgd(narrower, {.lr = 0.01, .momentum = 0.5});
    train_step(narrower, narrower_sgd, 0);
    const auto narrower_kept = narrower_sgd.momentum_buffer(0).to_vector();
    CHECK_ERROR(dt::shape_error, dt::optim::load(narrower_sgd, dir / "sgd"),
                "'state.0.momentum_buffer' has shape [5, 3] in the file but [4, 3]",
                "'state.2.momentum_buffer' has shape [2, 5] in the file but [2, 4]");
    CHECK(narrower_sgd.momentum_buffer(0).to_vector() == narrower_kept);
    const auto shallower = dt::nn::sequential(dt::nn::linear<float>(3, 5, true, gen));
    auto shallower_sgd = dt::optim::sgd(shallower, {.lr = 0.01, .momentum = 0.5});
    CHECK_ERROR(dt::error, dt::optim::load(shallower_sgd, dir / "sgd"), "unexpected in the file",
                "'state.2.momentum_buffer', 'state.3.momentum_buffer'");

    // files written by hand (a module's file is the same format): what a reader of
    // PyTorch's flattened state_dict may meet
    const auto t = [](const dt::shape& s, float v) { return filled<float>(s, [v](std::int64_t) { return v; }); };
    const auto write = [&](bag<float> b) { dt::nn::save(b, dir / "hand"); };
    write({{{"state.0.step", t({}, 1)}, {"state.0.exp_avg", t({5, 3}, 0)}}});
    CHECK_ERROR(dt::error, dt::optim::load(adam, dir / "hand"), "missing from the file: 'state.0.exp_avg_sq'");
    write({{{"state.0.step", t({}, 1.5f)}, {"state.0.exp_avg", t({5, 3}, 0)}, {"state.0.exp_avg_sq", t({5, 3}, 0)}}});
    CHECK_ERROR(dt::error, dt::optim::load(adam, dir / "hand"), "'state.0.step' holds 1.5, which is not a step count");
    write({{{"state.0.step", t({2}, 1)}, {"state.0.exp_avg", t({5, 3}, 0)}, {"state.0.exp_avg_sq", t({5, 3}, 0)}}});
    CHECK_ERROR(dt::error, dt::optim::load(adam, dir / "hand"), "'state.0.step' has shape [2]; a step count is one number");
    write({{{"state.00.momentum_buffer", t({5, 3}, 0)}, {"state.x.momentum_buffer", t({5, 3}, 0)},
            {"state.0.velocity", t({5, 3}, 0)}, {"step", t({}, 0)}}});
    CHECK_ERROR(dt::error, dt::optim::load(sgd, dir / "hand"), "unexpected in the file", "'state.00.momentum_buffer'",
                "'state.x.momentum_buffer'", "'state.0.velocity'", "'step'");
    CHECK(sgd.momentum_buffer(0).to_vector() == kept);
    CHECK(adam.steps(0) == 1);

    // a whole-number step of another dtype is taken (PyTorch keeps float32; I64 is exact)
    bag<std::int64_t> steps{{{"state.0.step", filled<std::int64_t>({}, [](std::int64_t) { return 41; })}}};
    dt::nn::save(steps, dir / "steps");
    const std::string steps_file = read_bytes(dir / "steps"), header = header_of(steps_file);
    // splice: the I64 step and the float moments into one file, the way another writer might
    const std::string json = "{\"state.1.step\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[0,8]},"
                             "\"state.1.exp_avg\":{\"dtype\":\"F32\",\"shape\":[5],\"data_offsets\":[8,28]},"
                             "\"state.1.exp_avg_sq\":{\"dtype\":\"F32\",\"shape\":[5],\"data_offsets\":[28,48]}}";
    write_bytes(dir / "hand", file_of(json, steps_file.substr(8 + header.size()) + float_bytes({1, 2, 3, 4, 5}) +
                                                 float_bytes({6, 7, 8, 9, 10})));
    dt::optim::load(adam, dir / "hand");
    CHECK(adam.steps(0) == 0);
    CHECK(!adam.state_of(0).exp_avg.defined());
    CHECK(adam.steps(1) == 41);
    CHECK(adam.state_of(1).exp_avg.to_vector() == std::vector<float>{1, 2, 3, 4, 5});
    CHECK(adam.state_of(1).exp_avg_sq.to_vector() == std::vector<float>{6, 7, 8, 9, 10});
}

// ---- GPUs ---------------------------------------------------------------------------------

DEVTENSOR_GPU_TEST_CASE("gpu: nn::save copies parameters from the GPU; nn::load writes into them where they are") {
    const temp_dir dir;
    const auto cpu = mlp<float>(1);
    const auto on_gpu = mlp<float>(2).to(dt::cuda_device{0});  // static device type
    static_assert(std::is_same_v<decltype(get<0>(on_gpu).weight), dt::tensor<float, dt::cuda_device>>);
    dt::nn::save(on_gpu, dir / "gpu");
    auto back = mlp<float>(3);
    dt::nn::load(back, dir / "gpu");
    CHECK(values_of(back) == values_of(on_gpu));

    dt::nn::save(cpu, dir / "cpu");
    auto into = mlp<float>(4).to(dt::cuda_device{0});
    dt::nn::load(into, dir / "cpu");
    CHECK(get<0>(into).weight.device() == dt::cuda_device{0});
    CHECK(values_of(into) == values_of(cpu));
    auto into_run_time = mlp<float>(5).to(dt::device("cuda:0"));
    dt::nn::load(into_run_time, dir / "cpu");
    CHECK(values_of(into_run_time) == values_of(cpu));

    // optimizer state is made on its parameter's device
    bag<float> state{{{"state.0.momentum_buffer", filled<float>({5, 3}, [](std::int64_t i) { return float(i); })}}};
    dt::nn::save(state, dir / "state");
    auto opt = dt::optim::sgd(into_run_time, {.lr = 0.1, .momentum = 0.9});
    dt::optim::load(opt, dir / "state");
    CHECK(opt.momentum_buffer(0).device() == dt::device("cuda:0"));
    CHECK(opt.momentum_buffer(0).to_vector() == state.tensors[0].second.to_vector());
    CHECK(!opt.momentum_buffer(1).defined());
}

// ---- the Python safetensors package (tests/safetensors_check.py runs these) --------------

namespace {
/// The values both sides agree on: element i of the k-th tensor written by devtensor
/// is (k + 1) + i/8; by Python, -(k + 1) - i/16 (exact in float and double).
template <class T>
T devtensor_value(std::size_t k, std::int64_t i) { return static_cast<T>(static_cast<double>(k + 1) + static_cast<double>(i) / 8); }
template <class T>
T python_value(std::size_t k, std::int64_t i) { return static_cast<T>(-static_cast<double>(k + 1) - static_cast<double>(i) / 16); }

template <class T>
void set_values(const auto& module, T (*value)(std::size_t, std::int64_t)) {
    const dt::no_grad off;
    std::size_t k = 0;
    for (const auto& p : module.parameters()) {
        for (std::int64_t i = 0; i < p.numel(); ++i) p.data()[i] = value(k, i);
        ++k;
    }
}
template <class T>
void check_values(const auto& module, T (*value)(std::size_t, std::int64_t)) {
    std::size_t k = 0;
    for (const auto& p : module.parameters()) {
        const auto v = p.to_vector();
        for (std::size_t i = 0; i < v.size(); ++i) CHECK(v[i] == value(k, static_cast<std::int64_t>(i)));
        ++k;
    }
}
}  // namespace

TEST_CASE("safetensors interop: devtensor writes" * doctest::skip(interop_dir() == nullptr)) {
    const std::string dir = interop_dir();
    const auto f = mlp<float>(1);
    const auto d = mlp<double>(1);
    set_values<float>(f, devtensor_value<float>);
    set_values<double>(d, devtensor_value<double>);
    dt::nn::save(f, dir + "/devtensor_f32.safetensors");
    dt::nn::save(d, dir + "/devtensor_f64.safetensors");
    // optimizer state: adam after two steps (Python checks the names, dtypes and steps)
    auto opt = dt::optim::adam(f, {.lr = 0.01});
    seed_adam_state(f, opt, dir + "/devtensor_adam_seed.safetensors", false, 0);
    train_step(f, opt, 0);
    train_step(f, opt, 1);
    dt::optim::save(opt, dir + "/devtensor_adam.safetensors");
}

TEST_CASE("safetensors interop: devtensor reads" * doctest::skip(interop_dir() == nullptr)) {
    const std::string dir = interop_dir();
    auto f = mlp<float>(2);
    auto d = mlp<double>(2);
    dt::nn::load(f, dir + "/python_f32.safetensors");
    dt::nn::load(d, dir + "/python_f64.safetensors");
    check_values<float>(f, python_value<float>);
    check_values<double>(d, python_value<double>);
    auto opt = dt::optim::adam(f, {.lr = 0.01});
    dt::optim::load(opt, dir + "/python_adam.safetensors");
    for (std::size_t i = 0; i < 4; ++i) {
        CHECK(opt.steps(i) == 7);
        const auto m = opt.state_of(i).exp_avg.to_vector(), v = opt.state_of(i).exp_avg_sq.to_vector();
        for (std::size_t e = 0; e < m.size(); ++e) {
            CHECK(m[e] == python_value<float>(i, static_cast<std::int64_t>(e)));
            CHECK(v[e] == -python_value<float>(i, static_cast<std::int64_t>(e)));
        }
    }
}
