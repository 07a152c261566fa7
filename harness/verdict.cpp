#include "harness/verdict.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

namespace harness {

namespace {

bool element_matches(float o, float r, float atol, float rtol) {
  if (std::isnan(r)) return std::isnan(o);
  if (std::isinf(r)) return o == r;
  if (!std::isfinite(o)) return false;
  return std::fabs(o - r) <= atol + rtol * std::fabs(r);
}

}  // namespace

std::vector<int64_t> unravel_index(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] <= 0) continue;
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}

OfficialVerdict official_verdict(const float* out, const double* ref, std::size_t n,
                                 const std::vector<int64_t>& shape, const Tolerance& tol) {
  OfficialVerdict v;
  v.total = static_cast<int64_t>(n);
  v.allowance = tol.max_mismatch_fraction;
  const auto atol = static_cast<float>(tol.atol);
  const auto rtol = static_cast<float>(tol.rtol);
  for (std::size_t i = 0; i < n; ++i) {
    if (element_matches(out[i], static_cast<float>(ref[i]), atol, rtol)) continue;
    if (v.mismatches < kMaxReportedLocations)
      v.first_locations.push_back(unravel_index(static_cast<int64_t>(i), shape));
    ++v.mismatches;
  }
  v.fraction = n ? static_cast<double>(v.mismatches) / static_cast<double>(n) : 0.0;
  // Compare counts, not the rounded fraction: exactly at the allowance passes.
  v.passed = n > 0 && static_cast<double>(v.mismatches) <= tol.max_mismatch_fraction * static_cast<double>(n);
  return v;
}

StrictVerdict strict_verdict(const float* out, const double* ref, std::size_t n, double limit) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  StrictVerdict v;
  v.limit = limit;
  double diff2 = 0, ref2 = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double o = out[i], r = ref[i];
    const double d = std::fabs(o - r);
    if (std::isnan(d)) {  // NaN anywhere, or inf - inf
      diff2 = inf;
      v.max_abs = inf;
      continue;
    }
    diff2 += d * d;
    ref2 += r * r;
    if (d > v.max_abs) v.max_abs = d;
  }
  if (!std::isfinite(ref2)) v.rel_l2 = inf;  // a non-finite reference cannot vouch for anything
  else if (ref2 > 0) v.rel_l2 = std::sqrt(diff2) / std::sqrt(ref2);
  else v.rel_l2 = diff2 == 0 ? 0.0 : inf;
  v.passed = n > 0 && std::isfinite(v.rel_l2) && v.rel_l2 <= limit;
  return v;
}

std::vector<float> decode_to_float(const void* data, DType dtype, std::size_t n) {
  std::vector<float> f(n);
  if (dtype == DType::f32) {
    std::memcpy(f.data(), data, n * sizeof(float));
  } else if (dtype == DType::bf16) {
    const auto* h = static_cast<const uint16_t*>(data);
    for (std::size_t i = 0; i < n; ++i) {
      const uint32_t bits = static_cast<uint32_t>(h[i]) << 16;
      std::memcpy(&f[i], &bits, sizeof(float));
    }
  } else {
    throw std::invalid_argument("cannot check an output of dtype " + std::string(dtype_name(dtype)));
  }
  return f;
}

}  // namespace harness
