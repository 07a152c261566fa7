// Correctness verdicts: the official elementwise check and our strict relative-L2 check.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "harness/problem.hpp"
#include "harness/tensor.hpp"

namespace harness {

struct OfficialVerdict {
  bool passed = false;
  int64_t mismatches = 0;
  int64_t total = 0;
  double fraction = 0;          // mismatches / total
  double allowance = 0;         // largest passing fraction
  std::vector<std::vector<int64_t>> first_locations;  // multi-indices of the first mismatches
};

struct StrictVerdict {
  bool passed = false;
  double rel_l2 = 0;   // ||out - ref|| / ||ref||; infinite if out has a NaN/inf where ref is finite
  double max_abs = 0;  // largest |out - ref|; infinite likewise
  double limit = 0;
};

constexpr int kMaxReportedLocations = 5;

// Official rule (evaluation.md): in fp32, |out - ref| <= atol + rtol * |ref|; NaN and inf must
// match (a NaN output where ref is finite fails); passes if mismatches / total <= allowance.
OfficialVerdict official_verdict(const float* out, const double* ref, std::size_t n,
                                 const std::vector<int64_t>& shape, const Tolerance& tol);

StrictVerdict strict_verdict(const float* out, const double* ref, std::size_t n, double limit);

// Row-major multi-index of a flat offset.
std::vector<int64_t> unravel_index(int64_t flat, const std::vector<int64_t>& shape);

// Decodes an output tensor (bf16 or f32 storage) to float; throws for other dtypes.
std::vector<float> decode_to_float(const void* data, DType dtype, std::size_t n);

}  // namespace harness
