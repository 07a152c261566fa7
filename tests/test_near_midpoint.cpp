// mxfp4_near::flip_step, the choice of SwiGLU values that moe v42 recomputes exactly: it must flag the values measured
// to fail the official check (docs/perf.md, section "Session 10, fresh-seed failures"), leave values far from a
// deciding midpoint alone, and agree with the reference's rounding rules on random values.
#include <cmath>
#include <cstdint>
#include <random>

#include "problems/common/mxfp4_near_midpoint.h"
#include "reference/numerics.hpp"
#include "tests/catch.hpp"

using namespace numerics;
using mxfp4_near::flip_step;

namespace {
constexpr uint32_t kBand = 1u << 12;

// The slow rule: do the two bf16 values around |x| give the block a different scale (x its largest value) or x a
// different e2m1 value at scale s?
bool decisions_differ(float x, float amax, int s) {
  const uint32_t below = (f32_bits(x) & 0x7FFFFFFFu) >> 16;
  const float lo = bf16_to_f32(uint16_t(below)), hi = bf16_to_f32(uint16_t(below + 1));
  if (amax <= hi && mxfp4_dynamic_scale_exp(lo) != mxfp4_dynamic_scale_exp(hi)) return true;
  const float inv = exp2_f32(-s);
  return e2m1_to_f32(f32_to_e2m1_ties_away(lo * inv)) != e2m1_to_f32(f32_to_e2m1_ties_away(hi * inv));
}
}  // namespace

TEST_CASE("flip_step flags the measured failing SwiGLU values", "[near_midpoint]") {
  // Block scales: the largest value of each block (3.49 / 6.98 / 1.75) decides its scale.
  CHECK(std::isinf(flip_step(3.49221597f, 3.5f, 0, kBand)));
  CHECK(std::isinf(flip_step(6.98485298f, 7.0f, 1, kBand)));
  CHECK(std::isinf(flip_step(1.74622028f, 1.75f, -1, kBand)));
  CHECK(std::isinf(flip_step(-1.74622028f, 1.75f, -1, kBand)));  // signs do not matter
  // Codes: 1.0 or 1.5 at scale 2^0, 4 or 6 at scale 2^1.
  CHECK(flip_step(1.24611261f, 4.0f, 0, kBand) == 0.5f);
  CHECK(flip_step(9.96901697f, 12.0f, 1, kBand) == 4.0f);
  CHECK(mxfp4_near::must_be_exact(0.5f, 1.0f, 0.02f));
  CHECK(mxfp4_near::must_be_exact(4.0f, 0.166f, 0.02f));
}

TEST_CASE("flip_step leaves other values alone", "[near_midpoint]") {
  CHECK(flip_step(1.3f, 4.0f, 0, kBand) == 0.0f);                       // far from any midpoint
  CHECK(flip_step(1.30078125f + 1e-6f, 4.0f, 0, kBand) == 0.0f);        // a midpoint, but no boundary above it
  CHECK(flip_step(3.49221597f, 16.0f, 2, kBand) == 0.0f);               // not the largest; 0.873 x 2^2 is no boundary
  CHECK(flip_step(1.24611261f, 4.0f, 0, 16u) == 0.0f);                  // outside a narrower band
  CHECK(flip_step(std::nanf(""), 4.0f, 0, kBand) == 0.0f);
  CHECK(flip_step(INFINITY, 4.0f, 0, kBand) == 0.0f);
  CHECK_FALSE(mxfp4_near::must_be_exact(0.0f, 1.0f, 0.02f));
  CHECK_FALSE(mxfp4_near::must_be_exact(0.5f, 0.03f, 0.02f));           // a small step in a light row
}

TEST_CASE("flip_step agrees with the reference's rounding rules", "[near_midpoint]") {
  std::mt19937 rng(20261130);
  std::uniform_int_distribution<int> exp_d(-12, 8), bits_d(0, (1 << 23) - 1), near_d(-5000, 5000);
  std::uniform_int_distribution<int> boundary_d(0, 7), sign_d(0, 1);
  const float boundaries[8] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 1.75f};
  int flagged = 0, checked = 0;
  for (int i = 0; i < 200000; ++i) {
    const int s = exp_d(rng);
    float x;
    if (i % 2) {  // near the midpoint just below a boundary
      const float b = boundaries[boundary_d(rng)] * exp2_f32(s);
      x = bits_f32(f32_bits(b) - 0x8000u + uint32_t(near_d(rng)));
    } else {
      x = bits_f32((uint32_t(s + 127) << 23) | uint32_t(bits_d(rng)));
    }
    if (sign_d(rng)) x = -x;
    const float ax = std::fabs(x);
    const float amax = sign_d(rng) ? bf16_round(ax) : 6.0f * exp2_f32(s);  // x the block's largest, or not
    const int bs = amax == bf16_round(ax) ? mxfp4_dynamic_scale_exp(amax) : s;
    const float step = flip_step(x, amax, bs, kBand);
    const bool near = mxfp4_near::midpoint_distance(x) < kBand;
    CHECK((step != 0.0f) == (near && decisions_differ(x, amax, bs)));
    flagged += step != 0.0f;
    ++checked;
  }
  CHECK(flagged > 1000);  // the near half reaches boundaries often
  CHECK(checked == 200000);
}

// moe_fp8r::exact_block and swiglu_requant_near's dot products multiply mxfp4::e2m1_value_x2p120 by
// mxfp4::e4m3_value_x2m120 (the e4m3 bits shifted into an fp32 pattern, an fp32 subnormal for e4m3's subnormals):
// every product must be the exact e2m1 x e4m3 product (needs fp32 subnormals, as on the host here).
TEST_CASE("exact dot products: shifted e4m3 bits times the scaled e2m1 value are exact", "[near_midpoint]") {
  int checked = 0;
  for (uint32_t b = 0; b < 256; ++b) {
    if ((b & 0x7Fu) == 0x7Fu) continue;  // e4m3's NaN: never in the activation rows
    const float shifted = mxfp4::e4m3_value_x2m120(b);
    CHECK(shifted * 0x1p120f == fp8_e4m3fn_to_f32(uint8_t(b)));
    for (uint32_t code = 0; code < 16; ++code) {
      const float w = mxfp4::e2m1_value(code);
      CHECK(mxfp4::e2m1_value_x2p120(code) == w * 0x1p120f);
      CHECK(std::fma(mxfp4::e2m1_value_x2p120(code), shifted, 0.0f) ==
            static_cast<float>(double(w) * fp8_e4m3fn_to_f32(uint8_t(b))));
      ++checked;
    }
  }
  CHECK(checked == 254 * 16);
}

TEST_CASE("near_candidate_finite equals near_candidate on finite values", "[near_midpoint]") {
  std::mt19937 rng(12);
  int hits = 0;
  for (uint32_t band : {1u, 1u << 10, kBand, 1u << 14, 0x8000u}) {
    // Random patterns, and patterns at the band's edges (low 21 bits around 0x1F8000 +- band).
    for (int i = 0; i < 400000; ++i) {
      uint32_t bits = rng();
      if (i % 4 == 0) bits = (bits & ~0x1FFFFFu) | ((0x1F8000u + band - 2u + (bits & 3u)) & 0x1FFFFFu);
      if (i % 4 == 1) bits = (bits & ~0x1FFFFFu) | ((0x1F8000u - band - 1u + (bits & 3u)) & 0x1FFFFFu);
      const float x = bits_f32(bits);
      if (!std::isfinite(x)) continue;
      const bool want = mxfp4_near::near_candidate(x, band);
      CHECK(mxfp4_near::near_candidate_finite(x, band) == want);
      hits += want;
    }
  }
  CHECK(hits > 1000);  // the edge patterns hit the band
}
