// dlpack.hpp with CUDA memory, compiled by nvcc. Debian's libtorch has no CUDA,
// so the GPU cases exchange with devtensor itself and with memory from
// cudaMalloc behind a hand-made DLManagedTensor; they skip without a GPU.
#include "test_support.hpp"

#include <devtensor/dlpack.hpp>

#include <cuda_runtime_api.h>

#include <vector>

namespace {
/// A DLManagedTensor over `data` on cuda:0 whose deleter counts its calls and frees nothing.
struct fake_producer {
    std::int64_t sizes[2] = {2, 3};
    DLManagedTensor managed{};
    int deleted = 0;

    explicit fake_producer(void* data) {
        managed.dl_tensor.data = data;
        managed.dl_tensor.device = DLDevice{kDLCUDA, 0};
        managed.dl_tensor.ndim = 2;
        managed.dl_tensor.dtype = DLDataType{kDLFloat, 32, 1};
        managed.dl_tensor.shape = sizes;
        managed.manager_ctx = this;
        managed.deleter = [](DLManagedTensor* self) {
            ++static_cast<fake_producer*>(self->manager_ctx)->deleted;
        };
    }
};
}  // namespace

TEST_CASE("a CUDA DLPack tensor where there is no GPU is device_unavailable, saying why") {
    if (dt::cuda_available()) return;  // the GPU cases below cover it
    float data[6] = {};
    fake_producer producer(data);
    CHECK_ERROR(dt::device_unavailable, dt::from_dlpack<float>(&producer.managed), "from_dlpack",
                "cuda:0", dt::cuda_unavailable_reason().c_str());
    CHECK(producer.deleted == 0);
}

DEVTENSOR_GPU_TEST_CASE("gpu: to_dlpack and from_dlpack share CUDA memory, either side may die first") {
    const dt::cuda_device gpu{0};
    auto t = dt::rand<float>({3, 5}, gpu);
    const auto expected = t.to_vector();
    const std::size_t base = dt::memory_allocated(gpu);

    DLManagedTensor* m = dt::to_dlpack(t);
    CHECK(m->dl_tensor.device.device_type == kDLCUDA);
    CHECK(m->dl_tensor.device.device_id == 0);
    CHECK(m->dl_tensor.data == t.data());
    auto u = dt::from_dlpack<float, dt::cuda_device>(m);
    CHECK(u.data() == t.data());
    t = {};  // the first handle dies first; the DLManagedTensor keeps the memory
    CHECK(dt::memory_allocated(gpu) == base);
    CHECK(u.to_vector() == expected);
    const auto doubled = (u + u).to_vector();  // a kernel on the shared memory
    for (std::size_t i = 0; i < expected.size(); ++i) CHECK(doubled[i] == expected[i] * 2);
    u = {};
    CHECK(dt::memory_allocated(gpu) == base - expected.size() * sizeof(float));
}

DEVTENSOR_GPU_TEST_CASE("gpu: from_dlpack wraps cudaMalloc'd memory and calls its deleter once") {
    const std::vector<float> values = {1, 2, 3, 4, 5, 6};
    float* p = nullptr;
    REQUIRE(cudaMalloc(&p, values.size() * sizeof(float)) == cudaSuccess);
    REQUIRE(cudaMemcpy(p, values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice) ==
            cudaSuccess);
    fake_producer producer(p);
    {
        const auto t = dt::from_dlpack<float>(&producer.managed);  // run-time device
        CHECK(t.device() == dt::device("cuda:0"));
        CHECK(t.data() == p);
        CHECK(t.to_vector() == values);
        CHECK((t + t).to_vector() == std::vector<float>{2, 4, 6, 8, 10, 12});
        const auto copy = t;
        CHECK(producer.deleted == 0);
    }
    CHECK(producer.deleted == 1);
    CHECK(cudaFree(p) == cudaSuccess);
}
