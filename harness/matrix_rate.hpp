// The dense matrix rate a device's floors use (FLOPs / rate), where no engine kernel measures one.
#pragma once
#include <string>

namespace harness {

// The operand width a variant feeds its matrix instructions: floors use the matching dense rate.
enum class MatrixOperands { bf16, eight_bit };

struct MatrixRate {
  double flops_per_s = 0;  // 0 = unknown: floors are bytes / bandwidth only
  std::string source;
};

// The override (HARNESS_MATRIX_TFLOPS for bf16, HARNESS_MATRIX8_TFLOPS for 8-bit; dense TFLOP/s) when set,
// else a known figure for the device's name, else unknown. A malformed override throws.
MatrixRate matrix_rate_for(const std::string& device_name, MatrixOperands operands = MatrixOperands::bf16);

// Per-shape floor in ns: max(bytes / bandwidth, flops / matrix rate); 0 if neither is known.
double floor_ns(double bytes, double flops, double bandwidth_bytes_per_s, double matrix_flops_per_s);

}  // namespace harness
