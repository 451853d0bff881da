// Catch2's main for the benchmarks, plus a listener that writes each benchmark's
// median and minimum to DEVTENSOR_BENCH_SAMPLES (a TSV file) when that is set:
// Catch2 v2's XML has only the mean, which one preempted sample on a shared
// machine drags far off.
#define CATCH_CONFIG_MAIN
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <vector>

namespace {

class sample_statistics : public Catch::TestEventListenerBase {
public:
    using TestEventListenerBase::TestEventListenerBase;

    void testRunStarting(Catch::TestRunInfo const& info) override {
        TestEventListenerBase::testRunStarting(info);
        if (const char* path = std::getenv("DEVTENSOR_BENCH_SAMPLES")) {
            out_ = std::make_unique<std::ofstream>(path);
            *out_ << "name\tsamples\tmedian_ns\tmin_ns\tmean_ns\n";
        }
    }

    void benchmarkEnded(Catch::BenchmarkStats<> const& stats) override {
        if (!out_ || stats.samples.empty()) return;
        std::vector<double> ns;
        for (const auto& s : stats.samples) ns.push_back(s.count());
        std::sort(ns.begin(), ns.end());
        const std::size_t n = ns.size();
        const double median = n % 2 ? ns[n / 2] : (ns[n / 2 - 1] + ns[n / 2]) / 2;
        *out_ << stats.info.name << '\t' << n << '\t' << median << '\t' << ns.front() << '\t'
              << stats.mean.point.count() << '\n'
              << std::flush;  // a benchmark that crashes later keeps the earlier rows
    }

private:
    std::unique_ptr<std::ofstream> out_;
};

}  // namespace

CATCH_REGISTER_LISTENER(sample_statistics)
