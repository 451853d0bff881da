// dlpack.hpp against libtorch: to_dlpack -> at::fromDLPack and at::toDLPack ->
// from_dlpack share the same bytes (equal pointers, writes seen both ways), and
// the memory lives until both sides are done, whichever dies first. Plus what
// from_dlpack rejects. libtorch's headers are slow to compile: one file only.
#include <ATen/ATen.h>
#include <ATen/DLConvertor.h>
// libtorch's logging defines a one-argument CHECK; doctest's (below) is the one meant here
#undef CHECK

#include "test_support.hpp"

#include <devtensor/dlpack.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

namespace {
std::vector<std::int64_t> dims(const dt::shape& s) { return {s.begin(), s.end()}; }

/// A hand-made DLManagedTensor over `data` whose deleter counts its calls.
struct fake_producer {
    std::int64_t sizes[9] = {2, 3, 1, 1, 1, 1, 1, 1, 1};
    DLManagedTensor managed{};
    int deleted = 0;

    fake_producer(void* data, DLDevice device, DLDataType dtype, int ndim = 2) {
        managed.dl_tensor.data = data;
        managed.dl_tensor.device = device;
        managed.dl_tensor.ndim = ndim;
        managed.dl_tensor.dtype = dtype;
        managed.dl_tensor.shape = sizes;
        managed.dl_tensor.strides = nullptr;  // DLPack: compact row-major
        managed.manager_ctx = this;
        managed.deleter = [](DLManagedTensor* self) {
            ++static_cast<fake_producer*>(self->manager_ctx)->deleted;
        };
    }
};
constexpr DLDataType float32{kDLFloat, 32, 1};
}  // namespace

TEST_CASE("to_dlpack: libtorch uses devtensor's memory, no copy") {
    const dt::cpu_device cpu;
    const std::size_t base = dt::memory_allocated(cpu);
    auto t = dt::from_values<float>({1, 2, 3, 4, 5, 6}, {2, 3});
    const std::size_t bytes = 6 * sizeof(float);
    REQUIRE(dt::memory_allocated(cpu) == base + bytes);

    DLManagedTensor* m = dt::to_dlpack(t);
    const DLTensor& dl = m->dl_tensor;
    CHECK(dl.data == t.data());
    CHECK(dl.device.device_type == kDLCPU);
    CHECK(dl.device.device_id == 0);
    CHECK(dl.ndim == 2);
    CHECK(dl.shape[0] == 2);
    CHECK(dl.shape[1] == 3);
    CHECK(dl.strides[0] == 3);
    CHECK(dl.strides[1] == 1);
    CHECK(dl.dtype.code == kDLFloat);
    CHECK(dl.dtype.bits == 32);
    CHECK(dl.dtype.lanes == 1);
    CHECK(dl.byte_offset == 0);

    at::Tensor a = at::fromDLPack(m);  // libtorch owns m now
    REQUIRE(a.data_ptr() == static_cast<void*>(t.data()));
    CHECK(a.sizes().vec() == dims(t.shape()));
    CHECK((a.scalar_type() == at::kFloat));
    CHECK(std::memcmp(a.data_ptr(), t.data(), bytes) == 0);
    a[0][1] = 20.0f;  // one memory: writes show on the other side
    CHECK(t(0, 1) == 20.0f);
    t(1, 2) = 60.0f;
    CHECK(a[1][2].item<float>() == 60.0f);

    SUBCASE("devtensor's handle dies first") {
        t = {};
        CHECK(dt::memory_allocated(cpu) == base + bytes);  // libtorch still holds it
        CHECK(a.sum().item<float>() == 1 + 20 + 3 + 4 + 5 + 60);
        a = at::Tensor();
        CHECK(dt::memory_allocated(cpu) == base);  // the deleter ran
    }
    SUBCASE("libtorch's tensor dies first") {
        a = at::Tensor();
        CHECK(dt::memory_allocated(cpu) == base + bytes);
        CHECK(t.to_vector() == std::vector<float>{1, 20, 3, 4, 5, 60});
        t = {};
        CHECK(dt::memory_allocated(cpu) == base);
    }
}

TEST_CASE("from_dlpack: devtensor uses libtorch's memory, no copy") {
    const dt::cpu_device cpu;
    const std::size_t base = dt::memory_allocated(cpu);
    at::Tensor a = at::arange(6, at::kFloat).reshape({2, 3});
    const auto watch = a.storage().getWeakStorageImpl();  // expires with libtorch's memory
    const auto users = a.storage().use_count();

    auto t = dt::from_dlpack<float>(at::toDLPack(a));
    static_assert(std::same_as<decltype(t), dt::tensor<float, dt::device>>);
    REQUIRE(static_cast<void*>(t.data()) == a.data_ptr());
    CHECK(t.device() == dt::device("cpu"));
    CHECK(dims(t.shape()) == a.sizes().vec());
    CHECK(std::memcmp(t.data(), a.data_ptr(), 6 * sizeof(float)) == 0);
    CHECK(dt::memory_allocated(cpu) == base);  // not devtensor's allocation
    CHECK(a.storage().use_count() > users);    // the DLManagedTensor devtensor holds
    t(1, 1) = 40.0f;
    CHECK(a[1][1].item<float>() == 40.0f);

    SUBCASE("libtorch's tensor dies first") {
        a = at::Tensor();
        CHECK_FALSE(watch.expired());  // the DLManagedTensor keeps it
        const auto copy = t;           // handles share; so does .to() on the same device
        const auto same = t.to(dt::cpu_device{});
        CHECK(same.data() == t.data());
        t = {};
        CHECK_FALSE(watch.expired());
        CHECK(copy.to_vector() == std::vector<float>{0, 1, 2, 3, 40, 5});
        CHECK(same.to_vector() == std::vector<float>{0, 1, 2, 3, 40, 5});
    }
    SUBCASE("devtensor's handle dies first") {
        t = {};
        CHECK(a.storage().use_count() == users);  // the deleter dropped libtorch's extra references
        CHECK(a[1][1].item<float>() == 40.0f);
        a = at::Tensor();
    }
    a = at::Tensor();
    CHECK(watch.expired());
}

TEST_CASE("round trips keep the pointer") {
    SUBCASE("devtensor -> libtorch -> devtensor") {
        const auto t = dt::from_values<std::int64_t>({7, 8, 9, 10}, {4}, dt::cpu_device{});
        const at::Tensor a = at::fromDLPack(dt::to_dlpack(t));
        const auto back = dt::from_dlpack<std::int64_t, dt::cpu_device>(at::toDLPack(a));
        CHECK(back.data() == t.data());
        CHECK(back.to_vector() == t.to_vector());
    }
    SUBCASE("libtorch -> devtensor -> libtorch") {
        const at::Tensor a = at::rand({3, 4, 5}, at::kDouble);
        const auto t = dt::from_dlpack<double>(at::toDLPack(a));
        const at::Tensor back = at::fromDLPack(dt::to_dlpack(t));
        CHECK(back.data_ptr() == a.data_ptr());
        CHECK(at::equal(back, a));
    }
}

TEST_CASE("element types, scalars, empty tensors and size-1 strides") {
    SUBCASE("integers") {
        const at::Tensor i32 = at::arange(5, at::kInt);
        CHECK(dt::from_dlpack<std::int32_t>(at::toDLPack(i32)).to_vector() ==
              std::vector<std::int32_t>{0, 1, 2, 3, 4});
        const at::Tensor u8 = at::arange(3, at::kByte);
        CHECK(dt::from_dlpack<std::uint8_t>(at::toDLPack(u8)).to_vector() ==
              std::vector<std::uint8_t>{0, 1, 2});
        const at::Tensor i16 = at::fromDLPack(dt::to_dlpack(dt::from_values<std::int16_t>({-1, 2}, {2})));
        CHECK((i16.scalar_type() == at::kShort));
    }
    SUBCASE("bool: uint8 in DLPack 0.6") {
        const auto flags = dt::from_values<bool>({true, false, true}, {3});
        const at::Tensor a = at::fromDLPack(dt::to_dlpack(flags));
        CHECK(a.data_ptr() == static_cast<void*>(flags.data()));
        CHECK(a.sum().item<std::int64_t>() == 2);
        const auto back = dt::from_dlpack<bool>(at::toDLPack(a));
        CHECK(back.to_vector() == std::vector<bool>{true, false, true});
    }
    SUBCASE("a scalar") {
        const at::Tensor a = at::scalar_tensor(2.5, at::kFloat);
        const auto t = dt::from_dlpack<float>(at::toDLPack(a));
        CHECK(t.dim() == 0);
        CHECK(t.item() == 2.5f);
        const at::Tensor back = at::fromDLPack(dt::to_dlpack(t));
        CHECK(back.dim() == 0);
        CHECK(back.item<float>() == 2.5f);
    }
    SUBCASE("no elements") {
        const auto t = dt::from_dlpack<float>(at::toDLPack(at::empty({0, 3}, at::kFloat)));
        CHECK(t.numel() == 0);
        CHECK(dims(t.shape()) == std::vector<std::int64_t>{0, 3});
        DLManagedTensor* m = dt::to_dlpack(dt::empty<float>({2, 0}));
        CHECK(m->dl_tensor.data != nullptr);  // libtorch 1.13 leaks a null one: no deleter call
        const at::Tensor a = at::fromDLPack(m);
        CHECK(a.sizes().vec() == std::vector<std::int64_t>{2, 0});
    }
    SUBCASE("dimensions of size 1 may have any stride") {
        const at::Tensor base = at::arange(12, at::kFloat);
        const at::Tensor odd = base.as_strided({3, 1, 4}, {4, 99, 1});
        const auto t = dt::from_dlpack<float>(at::toDLPack(odd));
        CHECK(t.data() == base.data_ptr<float>());
        CHECK(t(2, 0, 3) == 11.0f);
    }
    SUBCASE("a slice: libtorch's offset") {
        const at::Tensor base = at::arange(12, at::kFloat).reshape({4, 3});
        const auto t = dt::from_dlpack<float>(at::toDLPack(base.narrow(0, 2, 2)));
        CHECK(t.data() == base.data_ptr<float>() + 6);
        CHECK(t.to_vector() == std::vector<float>{6, 7, 8, 9, 10, 11});
    }
}

TEST_CASE("strided tensors cross DLPack both ways as views, strides kept") {
    const at::Tensor a = at::arange(6, at::kFloat).reshape({2, 3});
    const auto t = dt::from_dlpack<float>(at::toDLPack(a.t()));
    CHECK(t.shape() == dt::shape{3, 2});
    CHECK(t.strides() == dt::strides(std::vector<std::int64_t>{1, 3}));
    CHECK(!t.is_contiguous());
    CHECK(t.to_vector() == std::vector<float>{0, 3, 1, 4, 2, 5});
    CHECK(t(2, 1) == 5.0f);
    // and back: torch sees the same view of the same memory
    const auto base = dt::arange<float>(12).view({3, 4});
    const at::Tensor back = at::fromDLPack(dt::to_dlpack(base.narrow(1, 1, 2).t()));
    CHECK(back.sizes().vec() == std::vector<std::int64_t>{2, 3});
    CHECK(back.strides().vec() == std::vector<std::int64_t>{1, 4});
    CHECK(back.data_ptr<float>() == base.data() + 1);
    CHECK(back.contiguous().equal(at::arange(12, at::kFloat).reshape({3, 4}).narrow(1, 1, 2).t()));
}

TEST_CASE("from_dlpack rejects what devtensor cannot hold, and leaves it to the caller") {
    SUBCASE("another element type") {
        DLManagedTensor* m = at::toDLPack(at::ones({2, 2}, at::kDouble));
        CHECK_ERROR(dt::error, dt::from_dlpack<float>(m), "from_dlpack", "float64", "float32");
        CHECK_ERROR(dt::error, dt::from_dlpack<std::int64_t>(m), "float64", "int64");
        m->deleter(m);  // still ours after the throw
    }
    SUBCASE("a negative stride") {
        float data[6] = {};
        fake_producer flipped(data + 5, DLDevice{kDLCPU, 0}, float32);
        std::int64_t sizes[1] = {6}, steps[1] = {-1};
        flipped.managed.dl_tensor.ndim = 1;
        flipped.managed.dl_tensor.shape = sizes;
        flipped.managed.dl_tensor.strides = steps;
        CHECK_ERROR(dt::shape_error, dt::from_dlpack<float>(&flipped.managed), "from_dlpack", "negative stride");
        CHECK(flipped.deleted == 0);
    }
    SUBCASE("devices") {
        float data[6] = {};
        fake_producer rocm(data, DLDevice{kDLROCM, 0}, float32);
        CHECK_ERROR(dt::device_error, dt::from_dlpack<float>(&rocm.managed), "from_dlpack", "kDLROCM",
                    "kDLCUDA");
        // a GPU in a program without one (and here without the CUDA runtime)
        fake_producer gpu(data, DLDevice{kDLCUDA, 0}, float32);
        CHECK_ERROR(dt::device_unavailable, dt::from_dlpack<float>(&gpu.managed), "from_dlpack", "cuda:0");
        // a static device of the other kind
        fake_producer host(data, DLDevice{kDLCPU, 0}, float32);
        CHECK_ERROR(dt::device_mismatch, (dt::from_dlpack<float, dt::cuda_device>(&host.managed)),
                    "from_dlpack", "cpu", "cuda");
        CHECK(rocm.deleted + gpu.deleted + host.deleted == 0);
    }
    SUBCASE("more than 8 dimensions, vector lanes, no data") {
        float data[6] = {};
        fake_producer deep(data, DLDevice{kDLCPU, 0}, float32, 9);
        CHECK_ERROR(dt::shape_error, dt::from_dlpack<float>(&deep.managed), "9 dimensions");
        fake_producer lanes(data, DLDevice{kDLCPU, 0}, DLDataType{kDLFloat, 32, 4});
        CHECK_ERROR(dt::error, dt::from_dlpack<float>(&lanes.managed), "float32x4");
        fake_producer null(nullptr, DLDevice{kDLCPU, 0}, float32);
        CHECK_ERROR(dt::error, dt::from_dlpack<float>(&null.managed), "no data");
        CHECK_ERROR(dt::error, dt::from_dlpack<float>(nullptr), "null");
        CHECK(deep.deleted + lanes.deleted + null.deleted == 0);
    }
    SUBCASE("an undefined tensor has nothing to share") {
        CHECK_ERROR(dt::error, dt::to_dlpack(dt::tensor<float>()), "to_dlpack", "undefined");
    }
}

TEST_CASE("from_dlpack calls the producer's deleter once, with the last handle") {
    float data[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    fake_producer producer(data, DLDevice{kDLCUDAHost, 0}, float32);  // pinned host memory: the CPU
    producer.managed.dl_tensor.byte_offset = 2 * sizeof(float);
    {
        auto t = dt::from_dlpack<float, dt::cpu_device>(&producer.managed);
        CHECK(t.data() == data + 2);
        CHECK(t(1, 2) == 7.0f);
        const dt::tensor<float> runtime = t;  // static -> run-time view: same storage
        CHECK(runtime.is_same(t));
        t = {};
        CHECK(producer.deleted == 0);
    }
    CHECK(producer.deleted == 1);
}
