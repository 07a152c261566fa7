// Human-readable report of one run: a table per run, one row per shape.
#pragma once
#include <cstdio>
#include <string>

#include "harness/results.hpp"

namespace harness::cli {

// "12.34 us", "1.234 ms", "2.500 s".
std::string format_duration_ns(double ns);

void print_run_table(const RunResult& r, std::FILE* out = stdout);

}  // namespace harness::cli
