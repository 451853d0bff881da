// What to run instead of nvidia-smi for devtensor: every device it can use, the
// CPU included, with memory as the system and as devtensor see it (allocated by
// live tensors, and the peak), compute capability, multiprocessors, driver and
// runtime versions, and utilisation, temperature and power from NVML where the
// driver's libnvidia-ml.so.1 is present. Without a GPU it says why.
//
//   device_query          a table
//   device_query --json   the same as JSON (null for figures that are not known)
//   device_query --memory memory_snapshot() of a small demo: what holds memory, made where
#include <devtensor/devtensor.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

namespace dt = devtensor;

namespace {

/// One device as the table and the JSON show it.
struct row {
    dt::device_properties p;
    std::size_t allocated = 0, peak = 0;  // devtensor's own figures
};

std::vector<row> all_devices() {
    std::vector<row> rows;
    auto add = [&rows](const dt::device& d) {
        rows.push_back({dt::properties(d), dt::memory_allocated(d), dt::max_memory_allocated(d)});
    };
    add(dt::cpu_device{});
    for (int i = 0; i < dt::cuda_device_count(); ++i) add(dt::device(dt::device_kind::cuda, i));
    return rows;
}

/// 13000 -> "13.0"; 0 -> "none".
std::string cuda_version(int v) {
    if (v <= 0) return "none";
    return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

std::string mib(std::size_t bytes) { return std::to_string(bytes >> 20) + "MiB"; }

std::string json_string(std::string_view s) {
    std::string out = "\"";
    for (const char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

/// A figure that may be unknown (-1): the number, or null.
std::string json_int(int v) { return v < 0 ? "null" : std::to_string(v); }

void print_json(const std::vector<row>& rows) {
    std::cout << "{\n"
              << "  \"devtensor_version\": " << json_string(DEVTENSOR_VERSION_STRING) << ",\n"
              << "  \"cuda_available\": " << (dt::cuda_available() ? "true" : "false") << ",\n"
              << "  \"cuda_unavailable_reason\": " << json_string(dt::cuda_unavailable_reason()) << ",\n"
              << "  \"cuda_device_count\": " << dt::cuda_device_count() << ",\n"
              << "  \"cuda_driver_version\": " << dt::cuda_driver_version() << ",\n"
              << "  \"cuda_runtime_version\": " << dt::cuda_runtime_version() << ",\n"
              << "  \"nvml_available\": " << (dt::nvml_unavailable_reason().empty() ? "true" : "false") << ",\n"
              << "  \"nvml_unavailable_reason\": " << json_string(dt::nvml_unavailable_reason()) << ",\n"
              << "  \"devices\": [";
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const auto& [p, allocated, peak] = rows[i];
        std::cout << (i ? "," : "") << "\n    {\"device\": " << json_string(dt::to_string(p.dev))
                  << ", \"kind\": " << json_string(dt::kind_name(p.dev.kind()))
                  << ", \"index\": " << p.dev.index() << ", \"name\": " << json_string(p.name)
                  << ",\n     \"total_memory\": " << p.total_memory
                  << ", \"free_memory\": " << p.free_memory
                  << ", \"used_memory\": " << p.total_memory - p.free_memory
                  << ", \"allocated\": " << allocated << ", \"max_allocated\": " << peak;
        if (p.dev.is_cpu()) {
            std::cout << ",\n     \"cores\": " << p.multiprocessors;
        } else {
            std::cout << ",\n     \"compute_capability\": \"" << p.compute_major << "." << p.compute_minor
                      << "\", \"multiprocessors\": " << p.multiprocessors
                      << ", \"clock_khz\": " << p.clock_khz << ", \"memory_bus_width\": " << p.memory_bus_width
                      << ", \"driver_version\": " << p.driver_version
                      << ", \"runtime_version\": " << p.runtime_version
                      << ",\n     \"driver_release\": "
                      << (p.driver_release.empty() ? "null" : json_string(p.driver_release))
                      << ", \"utilization_gpu\": " << json_int(p.utilization_gpu)
                      << ", \"utilization_memory\": " << json_int(p.utilization_memory)
                      << ", \"temperature_c\": " << json_int(p.temperature_c)
                      << ", \"power_mw\": " << json_int(p.power_mw)
                      << ", \"power_limit_mw\": " << json_int(p.power_limit_mw);
        }
        std::cout << "}";
    }
    std::cout << "\n  ]\n}\n";
}

/// `text` inside the table's frame, wrapped at spaces to its width.
void print_boxed(std::string_view text) {
    constexpr std::size_t width = 100;
    while (!text.empty()) {
        std::size_t n = text.size() <= width ? text.size() : text.rfind(' ', width);
        if (n == std::string_view::npos || n == 0) n = std::min(width, text.size());
        std::printf("| %-100s |\n", std::string(text.substr(0, n)).c_str());
        text.remove_prefix(n);
        while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
    }
}

/// "12%", or "n/a" where NVML gave nothing.
std::string percent(int v) { return v < 0 ? "n/a" : std::to_string(v) + "%"; }

void print_table(const std::vector<row>& rows) {
    const std::string rule = "+" + std::string(102, '-') + "+";
    const std::string thin = "|" + std::string(102, '-') + "|";
    const int driver_cuda = dt::cuda_driver_version();
    std::string driver = driver_cuda > 0 ? "CUDA " + cuda_version(driver_cuda) : "none found";
    if (rows.size() > 1 && !rows[1].p.driver_release.empty())
        driver = rows[1].p.driver_release + " (CUDA " + cuda_version(driver_cuda) + ")";
    std::printf("%s\n", rule.c_str());
    print_boxed("devtensor " DEVTENSOR_VERSION_STRING "   Driver: " + driver +
                "   CUDA Runtime: " + cuda_version(dt::cuda_runtime_version()));
    if (!dt::cuda_available())
        print_boxed("No CUDA device: " + dt::cuda_unavailable_reason());
    else if (!dt::nvml_unavailable_reason().empty())
        print_boxed("Utilisation, temperature and power n/a: " + dt::nvml_unavailable_reason());
    std::printf("%s\n", rule.c_str());
    std::printf("| %-6s | %-33s | %-4s | %-5s | %-21s | %-8s | %-5s |\n", "Device", "Name", "CC", "SMs",
                "Memory used / total", "GPU-Util", "Temp");
    std::printf("| %-6s | %-33s | %-4s | %-5s | %-21s | %-8s | %-5s |\n", "", "devtensor allocated / peak", "",
                "", "free", "Mem-Util", "Power");
    std::printf("%s\n", rule.c_str());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const auto& [p, allocated, peak] = rows[i];
        const bool gpu = p.dev.is_cuda();
        const std::string cc = gpu ? std::to_string(p.compute_major) + "." + std::to_string(p.compute_minor) : "-";
        const std::string units = gpu ? std::to_string(p.multiprocessors) : std::to_string(p.multiprocessors) + "c";
        const std::string used = mib(p.total_memory - p.free_memory) + " / " + mib(p.total_memory);
        const std::string temp = !gpu ? "-" : p.temperature_c < 0 ? "n/a" : std::to_string(p.temperature_c) + "C";
        const std::string power = !gpu ? "-" : p.power_mw < 0 ? "n/a" : std::to_string(p.power_mw / 1000) + "W";
        std::printf("| %-6s | %-33.33s | %-4s | %5s | %-21s | %-8s | %-5s |\n", dt::to_string(p.dev).c_str(),
                    p.name.c_str(), cc.c_str(), units.c_str(), used.c_str(),
                    gpu ? percent(p.utilization_gpu).c_str() : "-", temp.c_str());
        std::printf("| %-6s | %-33s | %-4s | %5s | %-21s | %-8s | %-5s |\n", "",
                    (mib(allocated) + " / " + mib(peak)).c_str(), "", "", mib(p.free_memory).c_str(),
                    gpu ? percent(p.utilization_memory).c_str() : "-", power.c_str());
        std::printf("%s\n", i + 1 < rows.size() ? thin.c_str() : rule.c_str());
    }
    std::printf("CPU: SMs = logical cores (c); memory used = total - available.\n");
}

/// One snapshot as a table, largest first.
void print_snapshot(const std::vector<dt::allocation_record>& records) {
    std::printf("  %-10s %-5s %-14s %-14s %5s  %s\n", "bytes", "count", "shape", "dtype", "age", "made");
    for (const auto& r : records)
        std::printf("  %-10s %5zu %-14s %-14s %5llu  %s\n", dt::detail::format_bytes(r.bytes).c_str(), r.count,
                    r.shape.to_string().c_str(), r.dtype.c_str(), static_cast<unsigned long long>(r.age),
                    dt::to_string(r.made).c_str());
}

/// --memory: a small demo's live tensors on try_gpu(), as memory_snapshot() lists them
/// (made by copies and empty(), which need no kernel, so a g++ build shows a GPU too).
void print_memory() {
    const dt::device dev = dt::try_gpu();
    const auto weights = dt::empty<float>({1024, 1024}, dev);
    std::vector<dt::tensor<float>> batches;
    for (int i = 0; i < 3; ++i) batches.push_back(dt::empty<float>({256, 1024}, dev));
    const auto labels = dt::from_values<std::int64_t>({1, 2, 3, 4}, {4}, dev);
    std::printf("memory_snapshot(%s): the demo's live allocations, largest first\n", dt::to_string(dev).c_str());
    print_snapshot(dt::memory_snapshot(dev));
    std::printf("\nmemory_snapshot(%s, snapshot_grouping::by_site)\n", dt::to_string(dev).c_str());
    print_snapshot(dt::memory_snapshot(dev, dt::snapshot_grouping::by_site));
    std::printf("\nage: allocations on %s since this one. memory_allocated: %s\n", dt::to_string(dev).c_str(),
                dt::detail::format_bytes(dt::memory_allocated(dev)).c_str());
}

}  // namespace

int main(int argc, char** argv) {
    const std::string_view option = argc > 1 ? argv[1] : "";
    if (argc > 2 || (argc > 1 && option != "--json" && option != "--memory")) {
        std::cerr << "usage: " << argv[0] << " [--json | --memory]\n"
                  << "Lists every device devtensor can use, the CPU included, like nvidia-smi;\n"
                  << "--memory shows memory_snapshot() of a small demo.\n";
        return 2;
    }
    if (option == "--memory") return print_memory(), 0;
    const auto rows = all_devices();
    if (option == "--json") print_json(rows);
    else print_table(rows);
}
