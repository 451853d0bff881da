// What the diagnostics of DESIGN §14 cost when nothing goes wrong: creation sites in
// every handle, the transfer guard's check, the live-allocation registry. Built
// twice by scripts/diagnostics-cost.sh, with DEVTENSOR_DIAGNOSTICS=1 and =0, and
// run under valgrind's callgrind, whose instruction counts do not depend on the
// machine's load. Two workloads, chosen by argv[1]:
//   small  a loop of small-tensor ops (factories, add, +, +=, matmul, linear): the
//          per-op overhead, where the cost would show;
//   add    the add benchmark's shape: 4M floats, a few times.
#include <devtensor/devtensor.hpp>

#include <cstdio>
#include <string_view>

namespace dt = devtensor;

int main(int argc, char** argv) {
    const std::string_view workload = argc > 1 ? argv[1] : "small";
    dt::set_num_threads(1);
    double sink = 0;
    if (workload == "small") {
        const auto w = dt::ones<float>({4, 4});
        const auto bias = dt::ones<float>({4});
        for (int i = 0; i < 20000; ++i) {
            const auto x = dt::full<float>({2, 4}, 0.5f);
            auto y = dt::add(x, bias) + x;
            y += bias;
            const auto z = dt::linear(dt::matmul(y, w), w, bias);
            sink += static_cast<double>(z.data()[0]);
        }
    } else {
        const auto a = dt::ones<float>({std::int64_t{1} << 22}), b = dt::ones<float>({std::int64_t{1} << 22});
        auto out = dt::empty<float>({std::int64_t{1} << 22});
        for (int i = 0; i < 10; ++i) {
            dt::add(a, b, out);
            const auto fresh = a + b;
            sink += static_cast<double>(fresh.data()[0] + out.data()[1]);
        }
    }
    std::printf("%s: %g\n", workload.data(), sink);
}
