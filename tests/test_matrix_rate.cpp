// Floors: max(bytes / bandwidth, FLOPs / matrix rate), and where the matrix rate comes from.
#include <cstdlib>

#include "harness/matrix_rate.hpp"
#include "tests/catch.hpp"
#include "tests/env_override.hpp"

using namespace harness;

TEST_CASE("floor: the larger of the memory and the matrix time") {
  // 4 GB at 4 TB/s = 1 ms; 1.58e12 FLOPs at 790 TFLOP/s = 2 ms.
  CHECK(floor_ns(4e9, 1.58e12, 4e12, 790e12) == Approx(2e6));
  CHECK(floor_ns(4e9, 1e9, 4e12, 790e12) == Approx(1e6));
  CHECK(floor_ns(4e9, 1.58e12, 4e12, 0) == Approx(1e6));  // unknown matrix rate: memory only
  CHECK(floor_ns(0, 1.58e12, 0, 790e12) == Approx(2e6));
  CHECK(floor_ns(4e9, 1e12, 0, 0) == 0);  // nothing known
}

TEST_CASE("matrix rate: known devices, unknown ones, and the environment override") {
  EnvOverride none("HARNESS_MATRIX_TFLOPS", nullptr);
  const MatrixRate h200 = matrix_rate_for("NVIDIA H200");
  CHECK(h200.flops_per_s == Approx(790e12));
  CHECK(h200.source.find("roofline") != std::string::npos);
  CHECK(matrix_rate_for("AMD Instinct MI355X").flops_per_s == Approx(2.5e15));
  const MatrixRate other = matrix_rate_for("host CPU (x86_64, 2 threads)");
  CHECK(other.flops_per_s == 0);
  CHECK(other.source.empty());
  {
    EnvOverride set("HARNESS_MATRIX_TFLOPS", "1500");
    const MatrixRate r = matrix_rate_for("NVIDIA H200");
    CHECK(r.flops_per_s == Approx(1500e12));
    CHECK(r.source == "HARNESS_MATRIX_TFLOPS=1500");
  }
  for (const char* bad : {"fast", "-3", "0", "12x"}) {
    EnvOverride set("HARNESS_MATRIX_TFLOPS", bad);
    CHECK_THROWS_WITH(matrix_rate_for("NVIDIA H200"), Catch::Contains("HARNESS_MATRIX_TFLOPS"));
  }
}

TEST_CASE("matrix rate: 8-bit operands have their own figures and override") {
  EnvOverride none("HARNESS_MATRIX8_TFLOPS", nullptr);
  EnvOverride bf16("HARNESS_MATRIX_TFLOPS", "100");  // the bf16 override leaves the 8-bit rate alone
  const MatrixRate h200 = matrix_rate_for("NVIDIA H200", MatrixOperands::eight_bit);
  CHECK(h200.flops_per_s == Approx(1440e12));
  CHECK(h200.source.find("measure_matrix_rate") != std::string::npos);
  CHECK(matrix_rate_for("AMD Instinct MI355X", MatrixOperands::eight_bit).flops_per_s == Approx(5e15));
  CHECK(matrix_rate_for("host CPU", MatrixOperands::eight_bit).flops_per_s == 0);
  {
    EnvOverride set("HARNESS_MATRIX8_TFLOPS", "3000");
    CHECK(matrix_rate_for("NVIDIA H200", MatrixOperands::eight_bit).flops_per_s == Approx(3000e12));
    CHECK(matrix_rate_for("NVIDIA H200").flops_per_s == Approx(100e12));
  }
  EnvOverride set("HARNESS_MATRIX8_TFLOPS", "fast");
  CHECK_THROWS_WITH(matrix_rate_for("NVIDIA H200", MatrixOperands::eight_bit), Catch::Contains("HARNESS_MATRIX8_TFLOPS"));
  CHECK_NOTHROW(matrix_rate_for("NVIDIA H200"));
}
