#include "harness/matrix_rate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace harness {
namespace {

struct Known {
  const char* name_part;
  double flops_per_s;
  const char* source;
};

// bf16 dense rates from the spec's ceilings (roofline.md): the H200 figure was measured there with a
// large matrix product; MI355X's is its datasheet number.
constexpr Known kKnown[] = {
    {"H200", 790e12, "790 TFLOP/s bf16 dense, a large matmul measured on the H200 (spec roofline.md)"},
    {"MI355X", 2.5e15, "2.5 PFLOP/s bf16 dense, datasheet (spec roofline.md)"},
};

}  // namespace

MatrixRate matrix_rate_for(const std::string& device_name) {
  if (const char* env = std::getenv("HARNESS_MATRIX_TFLOPS"); env && *env) {
    char* end = nullptr;
    const double tflops = std::strtod(env, &end);
    if (end == env || *end != '\0' || !(tflops > 0) || !std::isfinite(tflops))
      throw std::invalid_argument(std::string("HARNESS_MATRIX_TFLOPS must be a positive number, got '") + env + "'");
    return {tflops * 1e12, std::string("HARNESS_MATRIX_TFLOPS=") + env};
  }
  for (const auto& k : kKnown)
    if (device_name.find(k.name_part) != std::string::npos) return {k.flops_per_s, k.source};
  return {};
}

double floor_ns(double bytes, double flops, double bandwidth_bytes_per_s, double matrix_flops_per_s) {
  const double memory = bytes > 0 && bandwidth_bytes_per_s > 0 ? bytes / bandwidth_bytes_per_s * 1e9 : 0;
  const double matrix = flops > 0 && matrix_flops_per_s > 0 ? flops / matrix_flops_per_s * 1e9 : 0;
  return std::max(memory, matrix);
}

}  // namespace harness
