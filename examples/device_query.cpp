// An nvidia-smi-like table of every device devtensor can use, the CPU
// included; --json prints the same as JSON.
#include <devtensor/devtensor.hpp>

#include <cstdio>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

namespace dt = devtensor;

namespace {
std::string json_string(std::string_view s) {
    std::string out = "\"";
    for (const char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

std::vector<dt::device_properties> all_devices() {
    std::vector<dt::device_properties> result{dt::properties(dt::cpu_device{})};
    for (int i = 0; i < dt::cuda_device_count(); ++i) result.push_back(dt::properties(dt::cuda_device{i}));
    return result;
}

std::string mib(std::size_t bytes) { return std::to_string(bytes >> 20) + "MiB"; }

void print_json(const std::vector<dt::device_properties>& devices) {
    std::cout << "{\n  \"devtensor_version\": " << json_string(DEVTENSOR_VERSION_STRING)
              << ",\n  \"cuda_available\": " << (dt::cuda_available() ? "true" : "false")
              << ",\n  \"cuda_unavailable_reason\": " << json_string(dt::cuda_unavailable_reason())
              << ",\n  \"devices\": [\n";
    for (std::size_t i = 0; i < devices.size(); ++i) {
        const auto& p = devices[i];
        std::cout << "    {\"device\": " << json_string(dt::to_string(p.dev)) << ", \"name\": " << json_string(p.name)
                  << ", \"total_memory\": " << p.total_memory << ", \"free_memory\": " << p.free_memory
                  << ", \"allocated\": " << dt::memory_allocated(p.dev)
                  << ", \"max_allocated\": " << dt::max_memory_allocated(p.dev)
                  << ", \"multiprocessors\": " << p.multiprocessors;
        if (p.dev.is_cuda())
            std::cout << ", \"compute_capability\": \"" << p.compute_major << "." << p.compute_minor
                      << "\", \"driver_version\": " << p.driver_version
                      << ", \"runtime_version\": " << p.runtime_version;
        std::cout << "}" << (i + 1 < devices.size() ? "," : "") << "\n";
    }
    std::cout << "  ]\n}\n";
}

void print_table(const std::vector<dt::device_properties>& devices) {
    const std::string rule(86, '-');
    std::cout << "devtensor " << DEVTENSOR_VERSION_STRING << " device query\n" << rule << "\n";
    if (devices.size() > 1)
        std::cout << "| Driver Version: " << devices[1].driver_version
                  << "   CUDA Runtime Version: " << devices[1].runtime_version << "\n" << rule << "\n";
    else
        std::cout << "| No CUDA device: " << dt::cuda_unavailable_reason() << "\n" << rule << "\n";
    std::printf("| %-7s | %-36s | %-21s | %-5s | %-4s |\n", "Device", "Name", "Memory-Usage", "CC", "SMs");
    std::cout << rule << "\n";
    for (const auto& p : devices) {
        const std::string usage = mib(p.total_memory - p.free_memory) + " / " + mib(p.total_memory);
        const std::string cc = p.dev.is_cuda() ? std::to_string(p.compute_major) + "." + std::to_string(p.compute_minor) : "-";
        std::printf("| %-7s | %-36.36s | %-21s | %-5s | %4d |\n", dt::to_string(p.dev).c_str(), p.name.c_str(),
                    usage.c_str(), cc.c_str(), p.multiprocessors);
    }
    std::cout << rule << "\n(CPU: SMs column = logical cores)\n";
}
}  // namespace

int main(int argc, char** argv) {
    const bool json = argc > 1 && std::string_view(argv[1]) == "--json";
    if (argc > 1 && !json) {
        std::cerr << "usage: " << argv[0] << " [--json]\n";
        return 2;
    }
    const auto devices = all_devices();
    if (json) print_json(devices);
    else print_table(devices);
}
