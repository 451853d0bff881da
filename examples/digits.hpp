// Reads the handwritten-digits data set of train_digits.cpp and data_parallel.cpp:
// the gzip-compressed CSV of Debian's python3-sklearn (scripts/get-digits.sh), 1,797
// rows of 64 pixels (0 ... 16) and a label. Link zlib.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

/// The rows of the file: pixels scaled to [0, 1], 64 a row, and a label each; exits
/// with a message when the file cannot be opened.
inline void read_digits(const char* path, std::vector<float>& pixels, std::vector<std::int64_t>& labels) {
    gzFile file = gzopen(path, "rb");
    if (file == nullptr) {
        std::fprintf(stderr, "cannot open %s (run scripts/get-digits.sh)\n", path);
        std::exit(2);
    }
    char line[4096];
    while (gzgets(file, line, sizeof line) != nullptr) {
        std::stringstream row(line);
        std::string cell;
        std::vector<float> values;
        while (std::getline(row, cell, ',')) values.push_back(std::stof(cell));
        if (values.size() != 65) continue;
        for (int i = 0; i < 64; ++i) pixels.push_back(values[static_cast<std::size_t>(i)] / 16.0f);
        labels.push_back(static_cast<std::int64_t>(values[64]));
    }
    gzclose(file);
}
