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

// bf16 dense: the H200 figure was measured with a large matmul (spec roofline.md), MI355X's is its datasheet
// number. 8-bit dense: the H200 figure is the best of scripts/measure_matrix_rate.py on 2026-11-30 (torch
// _scaled_mm, e4m3, m = n = k = 16384; int8 through torch._int_mm reached only 941, and the hardware's int8 and
// fp8 peaks are equal, so the higher figure serves both); MI355X's is its fp8 datasheet number.
constexpr Known kKnownBf16[] = {
    {"H200", 790e12, "790 TFLOP/s bf16 dense, a large matmul measured on the H200 (spec roofline.md)"},
    {"MI355X", 2.5e15, "2.5 PFLOP/s bf16 dense, datasheet (spec roofline.md)"},
};
constexpr Known kKnown8bit[] = {
    {"H200", 1440e12, "1440 TFLOP/s 8-bit dense, fp8 e4m3 matmul measured on the H200 (scripts/measure_matrix_rate.py)"},
    {"MI355X", 5.0e15, "5 PFLOP/s fp8 dense, datasheet (spec roofline.md)"},
};

template <std::size_t N>
MatrixRate pick(const char* env_name, const Known (&known)[N], const std::string& device_name) {
  if (const char* env = std::getenv(env_name); env && *env) {
    char* end = nullptr;
    const double tflops = std::strtod(env, &end);
    if (end == env || *end != '\0' || !(tflops > 0) || !std::isfinite(tflops))
      throw std::invalid_argument(std::string(env_name) + " must be a positive number, got '" + env + "'");
    return {tflops * 1e12, std::string(env_name) + "=" + env};
  }
  for (const auto& k : known)
    if (device_name.find(k.name_part) != std::string::npos) return {k.flops_per_s, k.source};
  return {};
}

}  // namespace

MatrixRate matrix_rate_for(const std::string& device_name, MatrixOperands operands) {
  return operands == MatrixOperands::eight_bit ? pick("HARNESS_MATRIX8_TFLOPS", kKnown8bit, device_name)
                                               : pick("HARNESS_MATRIX_TFLOPS", kKnownBf16, device_name);
}

double floor_ns(double bytes, double flops, double bandwidth_bytes_per_s, double matrix_flops_per_s) {
  const double memory = bytes > 0 && bandwidth_bytes_per_s > 0 ? bytes / bandwidth_bytes_per_s * 1e9 : 0;
  const double matrix = flops > 0 && matrix_flops_per_s > 0 ? flops / matrix_flops_per_s * 1e9 : 0;
  return std::max(memory, matrix);
}

}  // namespace harness
