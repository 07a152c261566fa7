// Which SwiGLU values of moe_mxfp4's gate_up must be exact for the requantization to match the reference?
//
// The reference rounds x = silu(g) u (fp32) to bf16 and requantizes each 32-value block to MXFP4 (e2m1 codes, ties
// away, and the dynamic block scale of numerics::mxfp4_dynamic_scale_exp). Both decisions depend on x only through its
// bf16 value, and every decision boundary (e2m1: 0.25 / 0.75 / 1.25 / 1.75 / 2.5 / 3.5 / 5 x 2^s; scale: 1.75 x 2^e)
// is itself a bf16 value with a 2-bit mantissa. So a kernel whose fp32 x differs slightly from the reference's (the fp8
// tensor unit's accumulation is not exact, the reference's fp32 sums here are) can only store a different block when
// x lies near the bf16 rounding midpoint just below such a boundary. flip_step() finds those values from the kernel's
// own x: callers recompute their g and u exactly and requantize the block again (docs/perf.md, section "moe_mxfp4 v42").
#pragma once
#include <cstdint>

#include "problems/common/mxfp4_decode.h"
#include "reference/numerics.hpp"

namespace mxfp4_near {

// Distance of x from the nearest bf16 rounding midpoint, in units of x's last fp32 place (the low 16 bits of its
// pattern against 0x8000). A band of b units is a relative distance between b 2^-24 and b 2^-23.
HD inline uint32_t midpoint_distance(float x) {
  const uint32_t low = numerics::f32_bits(x) & 0xFFFFu;
  return low > 0x8000u ? low - 0x8000u : 0x8000u - low;
}

// The cheap part of flip_step (integer operations only): x is within `band` units of a bf16 midpoint whose upper
// neighbour could be a decision boundary (low 5 mantissa bits zero). Only such values can have a nonzero flip_step.
HD inline bool near_candidate(float x, uint32_t band) {
  const uint32_t ab = numerics::f32_bits(x) & 0x7FFFFFFFu;
  return ab < 0x7F800000u && midpoint_distance(x) < band && (((ab >> 16) + 1u) & 0x1Fu) == 0u;
}

// near_candidate for a finite x in three integer operations: |x|'s low 21 bits lie within `band` (<= 0x8000) of
// 0x1F8000 (bits 16-20 all ones: the bf16 above has its low 5 mantissa bits zero; the low 16 bits near 0x8000). Not
// NaN-safe (a NaN may pass): for a first filter whose hits are tested again with near_candidate.
HD inline bool near_candidate_finite(float x, uint32_t band) {
  return (numerics::f32_bits(x) & 0x1FFFFFu) - (0x1F8001u - band) < 2u * band - 1u;
}

// How far the stored block can move if x's bf16 rounding went the other way: 0 when x is not within `band` units
// (midpoint_distance) of a bf16 midpoint whose two neighbours decide differently; the difference of their e2m1 values
// times 2^s for a code decision (s: the block's scale exponent, amax: its largest bf16 |value|); infinity when the
// two neighbours give the block different scales (x is its largest value).
HD inline float flip_step(float x, float amax, int s, uint32_t band) {
  if (!near_candidate(x, band)) return 0.0f;
  // The bf16 magnitudes around |x| (bit order is value order).
  const uint32_t below = (numerics::f32_bits(x) & 0x7FFFFFFFu) >> 16;
  const float lo = numerics::bf16_to_f32(uint16_t(below)), hi = numerics::bf16_to_f32(uint16_t(below + 1u));
  if (amax <= hi && numerics::mxfp4_dynamic_scale_exp(lo) != numerics::mxfp4_dynamic_scale_exp(hi))
    return numerics::bits_f32(0x7F800000u);
  const float inv = numerics::exp2_f32(-s);
  const float vlo = mxfp4::e2m1_value(numerics::f32_to_e2m1_ties_away_branchless(lo * inv));
  const float vhi = mxfp4::e2m1_value(numerics::f32_to_e2m1_ties_away_branchless(hi * inv));
  return (vhi - vlo) * numerics::exp2_f32(s);
}

// Whether a value of flip step `step` in a row of routing weight `w` must be exact: every scale decision, and code
// steps that move the row's output by more than min_step (units of the down weights' values). Smaller flips cost at
// most min_step x max |W_down| on an output (docs/perf.md, section "moe_mxfp4 v42").
HD inline bool must_be_exact(float step, float w, float min_step) { return step > 0.0f && step * w >= min_step; }

}  // namespace mxfp4_near
