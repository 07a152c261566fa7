#include <cmath>
#include <limits>
#include <vector>

#include "harness/verdict.hpp"
#include "tests/catch.hpp"

using namespace harness;

namespace {
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();
const Tolerance kMla{0.1, 0.1, 0.05};
const Tolerance kMoe{5e-2, 5e-2, 0.0};

std::vector<double> ramp(size_t n) {
  std::vector<double> r(n);
  for (size_t i = 0; i < n; ++i) r[i] = 0.37 * std::sin(0.7 * static_cast<double>(i) + 0.1) + 0.02;
  return r;
}
std::vector<float> as_float(const std::vector<double>& r) { return std::vector<float>(r.begin(), r.end()); }
}  // namespace

TEST_CASE("official verdict: tolerance atol + rtol*|ref| elementwise") {
  const auto ref = ramp(100);
  auto out = as_float(ref);
  auto v = official_verdict(out.data(), ref.data(), out.size(), {100}, kMoe);
  CHECK(v.passed);
  CHECK(v.mismatches == 0);
  out[10] = static_cast<float>(ref[10] + 0.05 + 0.05 * std::fabs(ref[10]) + 1e-3);  // just outside
  out[20] = static_cast<float>(ref[20] + 0.049);                                      // inside
  v = official_verdict(out.data(), ref.data(), out.size(), {100}, kMoe);
  CHECK_FALSE(v.passed);
  CHECK(v.mismatches == 1);
  REQUIRE(v.first_locations.size() == 1);
  CHECK(v.first_locations[0] == std::vector<int64_t>{10});
}

TEST_CASE("official verdict: NaN in output fails, inf must match") {
  const auto ref = ramp(64);
  auto out = as_float(ref);
  out[3] = kNaN;
  auto v = official_verdict(out.data(), ref.data(), out.size(), {64}, kMla);
  CHECK(v.mismatches == 1);
  CHECK(v.passed);  // 1/64 < 5%: the official allowance tolerates it ...
  CHECK_FALSE(strict_verdict(out.data(), ref.data(), out.size(), 1.0).passed);  // ... the strict one never

  auto ref_inf = ref;
  ref_inf[5] = std::numeric_limits<double>::infinity();
  auto out2 = as_float(ref);
  out2[5] = kInf;
  CHECK(official_verdict(out2.data(), ref_inf.data(), out2.size(), {64}, kMoe).passed);
  out2[5] = -kInf;
  CHECK_FALSE(official_verdict(out2.data(), ref_inf.data(), out2.size(), {64}, kMoe).passed);
  out2[5] = 1e30f;
  CHECK_FALSE(official_verdict(out2.data(), ref_inf.data(), out2.size(), {64}, kMoe).passed);
  auto out3 = as_float(ref);
  out3[7] = kInf;  // inf where ref is finite
  CHECK_FALSE(official_verdict(out3.data(), ref.data(), out3.size(), {64}, kMoe).passed);
  // NaN in both places matches (official rule).
  auto ref_nan = ref;
  ref_nan[9] = std::nan("");
  auto out4 = as_float(ref);
  out4[9] = kNaN;
  CHECK(official_verdict(out4.data(), ref_nan.data(), out4.size(), {64}, kMoe).passed);
  out4[9] = 0.0f;
  CHECK_FALSE(official_verdict(out4.data(), ref_nan.data(), out4.size(), {64}, kMoe).passed);
}

TEST_CASE("official verdict: mismatch allowance edge exactly at 5%") {
  const auto ref = ramp(200);
  auto out = as_float(ref);
  for (int i = 0; i < 10; ++i) out[i * 20 + 1] += 1.0f;  // 10 / 200 = exactly 5%
  auto v = official_verdict(out.data(), ref.data(), out.size(), {2, 100}, kMla);
  CHECK(v.mismatches == 10);
  CHECK(v.fraction == Approx(0.05));
  CHECK(v.passed);
  CHECK(v.first_locations.size() == 5);
  CHECK(v.first_locations[0] == std::vector<int64_t>{0, 1});
  CHECK(v.first_locations[4] == std::vector<int64_t>{0, 81});
  out[2] += 1.0f;  // 11 / 200
  v = official_verdict(out.data(), ref.data(), out.size(), {2, 100}, kMla);
  CHECK(v.mismatches == 11);
  CHECK_FALSE(v.passed);
  CHECK(v.first_locations[1] == std::vector<int64_t>{0, 2});  // in flat order
}

TEST_CASE("official verdict: the zero-allowance problem fails on a single mismatch") {
  const auto ref = ramp(1000);
  auto out = as_float(ref);
  out[999] += 0.5f;
  auto v = official_verdict(out.data(), ref.data(), out.size(), {10, 10, 10}, kMoe);
  CHECK_FALSE(v.passed);
  CHECK(v.first_locations[0] == std::vector<int64_t>{9, 9, 9});
}

TEST_CASE("strict verdict: relative L2 and max abs") {
  const auto ref = ramp(500);
  auto out = as_float(ref);
  double ref2 = 0;
  for (double r : ref) ref2 += r * r;
  // Perturb one element by d: rel L2 = |d + rounding| / ||ref||.
  const double d = 0.01;
  out[17] = static_cast<float>(ref[17] + d);
  double diff2 = 0, maxabs = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double e = static_cast<double>(out[i]) - ref[i];
    diff2 += e * e;
    maxabs = std::max(maxabs, std::fabs(e));
  }
  auto s = strict_verdict(out.data(), ref.data(), out.size(), 1e-2);
  CHECK(s.rel_l2 == Approx(std::sqrt(diff2 / ref2)).epsilon(1e-12));
  CHECK(s.max_abs == Approx(maxabs));
  CHECK(s.max_abs == Approx(d).epsilon(1e-5));
  CHECK(s.passed == (s.rel_l2 <= 1e-2));
  CHECK_FALSE(strict_verdict(out.data(), ref.data(), out.size(), s.rel_l2 * 0.99).passed);
  CHECK(strict_verdict(out.data(), ref.data(), out.size(), s.rel_l2 * 1.01).passed);
  // All-zero output: rel L2 is exactly 1.
  std::vector<float> zeros(ref.size(), 0.0f);
  CHECK(strict_verdict(zeros.data(), ref.data(), zeros.size(), 0.5).rel_l2 == Approx(1.0));
  // NaN / inf in the output: infinite error, fails any limit.
  out[3] = kNaN;
  s = strict_verdict(out.data(), ref.data(), out.size(), 1e9);
  CHECK(std::isinf(s.rel_l2));
  CHECK(std::isinf(s.max_abs));
  CHECK_FALSE(s.passed);
  out[3] = kInf;
  CHECK_FALSE(strict_verdict(out.data(), ref.data(), out.size(), 1e9).passed);
}

TEST_CASE("decode_to_float and unravel_index") {
  const uint16_t bf[3] = {0x3F80, 0xC000, 0xFFFF};  // 1, -2, NaN
  auto f = decode_to_float(bf, DType::bf16, 3);
  CHECK(f[0] == 1.0f);
  CHECK(f[1] == -2.0f);
  CHECK(std::isnan(f[2]));
  const float g[2] = {0.25f, -3.5f};
  CHECK(decode_to_float(g, DType::f32, 2)[1] == -3.5f);
  CHECK_THROWS(decode_to_float(g, DType::i32, 2));
  CHECK(unravel_index(0, {4, 16, 512}) == std::vector<int64_t>{0, 0, 0});
  CHECK(unravel_index(16 * 512 + 3 * 512 + 7, {4, 16, 512}) == std::vector<int64_t>{1, 3, 7});
}
