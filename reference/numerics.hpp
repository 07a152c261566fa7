// Scalar numeric formats shared by host references and GPU kernels: bf16, fp8 e4m3fn, e2m1 (fp4),
// e8m0, and the two MXFP4 block rules of the spec (mla_decode.md "Quantization rules", moe_mxfp4.md
// "Weight quantization rule"). Everything is header-only, `HD inline`, without exceptions, heap or
// library calls (but fabsf / fminf, which every compiler here inlines), so the same code runs on the host, under
// nvcc and under hip-clang.
#pragma once
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "problems/common/portability.h"

namespace numerics {

// ---- bit casts (device intrinsics on the GPU, memcpy on the host) ----
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define NUMERICS_DEVICE_PASS 1
#endif

HD inline uint32_t f32_bits(float f) {
#ifdef NUMERICS_DEVICE_PASS
  return __float_as_uint(f);
#else
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
#endif
}

HD inline float bits_f32(uint32_t u) {
#ifdef NUMERICS_DEVICE_PASS
  return __uint_as_float(u);
#else
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
#endif
}

HD inline uint64_t f64_bits(double d) {
#ifdef NUMERICS_DEVICE_PASS
  return static_cast<uint64_t>(__double_as_longlong(d));
#else
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
#endif
}

HD inline double bits_f64(uint64_t u) {
#ifdef NUMERICS_DEVICE_PASS
  return __longlong_as_double(static_cast<long long>(u));
#else
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
#endif
}

HD inline bool is_nan_f32(float f) { return (f32_bits(f) & 0x7FFFFFFFu) > 0x7F800000u; }

// m / 2^s rounded to nearest, ties to even (s >= 0; m < 2^63).
HD inline uint64_t shift_right_rne(uint64_t m, int s) {
  if (s <= 0) return m;
  if (s >= 64) return 0;
  const uint64_t q = m >> s;
  const uint64_t rem = m & ((uint64_t{1} << s) - 1);
  const uint64_t half = uint64_t{1} << (s - 1);
  return (rem > half || (rem == half && (q & 1))) ? q + 1 : q;
}

// Exact power of two as a float for k in [-149, 127] (2^-127 is subnormal, used by e8m0 byte 0).
HD inline float exp2_f32(int k) {
  if (k >= -126) return bits_f32(static_cast<uint32_t>(k + 127) << 23);
  return bits_f32(uint32_t{1} << (k + 149));
}

// ---- bf16 ----
HD inline float bf16_to_f32(uint16_t b) { return bits_f32(static_cast<uint32_t>(b) << 16); }

HD inline uint16_t f32_to_bf16(float f) {
  const uint32_t u = f32_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // quiet NaN
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

// One rounding from double (going through float would round twice).
HD inline uint16_t f64_to_bf16(double d) {
  const uint64_t u = f64_bits(d);
  const uint16_t sign = static_cast<uint16_t>((u >> 48) & 0x8000u);
  const int exp_field = static_cast<int>((u >> 52) & 0x7FF);
  const uint64_t frac = u & ((uint64_t{1} << 52) - 1);
  if (exp_field == 0x7FF) return frac ? static_cast<uint16_t>(sign | 0x7FC0u) : static_cast<uint16_t>(sign | 0x7F80u);
  if (exp_field == 0 && frac == 0) return sign;
  // value = m * 2^(e - 52) with m holding the implicit bit for normals.
  const int e = exp_field ? exp_field - 1023 : -1022;
  const uint64_t m = exp_field ? (frac | (uint64_t{1} << 52)) : frac;
  if (e > 127) return static_cast<uint16_t>(sign | 0x7F80u);
  // Quantum of the target: 2^(e-7) for bf16 normals, 2^-133 for bf16 subnormals.
  const int base = e > -126 ? e : -126;
  const uint64_t count = shift_right_rne(m, (base - 7) - (e - 52));
  // count in [128, 256] for normals (256 carries into the exponent); [0, 128] for subnormals.
  uint32_t mag = (static_cast<uint32_t>(base + 126) << 7) + static_cast<uint32_t>(count);
  if (mag >= 0x7F80u) mag = 0x7F80u;
  return static_cast<uint16_t>(sign | mag);
}

// ---- fp8 e4m3fn: bias 7, subnormals, no infinity, 0x7F/0xFF are NaN, max 448 ----
HD inline float fp8_e4m3fn_to_f32(uint8_t c) {
  const uint32_t sign = static_cast<uint32_t>(c & 0x80u) << 24;
  const uint32_t e = (c >> 3) & 0xFu;
  const uint32_t m = c & 0x7u;
  if (e == 0xF && m == 0x7) return bits_f32(sign | 0x7FC00000u);
  if (e == 0) return bits_f32(sign | f32_bits(static_cast<float>(m) * exp2_f32(-9)));
  return bits_f32(sign | ((e + 120u) << 23) | (m << 20));
}

HD inline uint8_t f32_to_fp8_e4m3fn(float f) {
  const uint32_t u = f32_bits(f);
  const uint8_t sign = static_cast<uint8_t>((u >> 24) & 0x80u);
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return 0x7F;
  if (a >= 0x43E00000u) return static_cast<uint8_t>(sign | 0x7E);  // >= 448 (and inf): saturate
  const int exp_field = static_cast<int>(a >> 23);
  const int e = exp_field ? exp_field - 127 : -126;
  const uint64_t m = exp_field ? ((a & 0x7FFFFFu) | 0x800000u) : (a & 0x7FFFFFu);
  // Quantum of the target: 2^(e-3) for fp8 normals (e >= -6), 2^-9 for fp8 subnormals.
  const int base = e > -6 ? e : -6;
  const uint64_t count = shift_right_rne(m, (base - 3) - (e - 23));
  // count in [8, 16] for normals (16 carries into the exponent); [0, 8] for subnormals.
  const uint32_t mag = (static_cast<uint32_t>(base + 6) << 3) + static_cast<uint32_t>(count);
  return static_cast<uint8_t>(sign | mag);
}

// ---- per-tensor fp8, as the official code computes it on bf16 tensors ----
// Checked against the golden mla_* vectors: the official code works in bf16 arithmetic, so the
// scale amax / 448 and each quotient x / scale are rounded to bf16 (fp32 math, one RNE) before the
// clamp to +-448 and the RNE conversion. The spec's plain fp32 wording misses both roundings (it
// disagrees with the official kv_fp8 on ~2% of elements and with its scale bits).
HD inline float bf16_round(float f) { return bf16_to_f32(f32_to_bf16(f)); }

HD inline float fp8_per_tensor_scale(float amax) {
  const float floor_amax = bf16_round(1e-12f);
  return bf16_round((amax < floor_amax ? floor_amax : amax) / 448.0f);
}

HD inline uint8_t fp8_per_tensor_code(float x, float scale) {
  float v = bf16_round(x / scale);
  v = v < -448.0f ? -448.0f : (v > 448.0f ? 448.0f : v);
  return f32_to_fp8_e4m3fn(v);
}

// ---- e2m1 (fp4): magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6 for codes 0-7, bit 3 is the sign ----
HD inline float e2m1_to_f32(uint8_t code) {
  const uint32_t k = code & 0x7u;
  const float mag = k < 2 ? 0.5f * static_cast<float>(k)
                          : (1.0f + 0.5f * static_cast<float>(k & 1u)) * exp2_f32(static_cast<int>(k >> 1) - 1);
  return (code & 0x8u) ? -mag : mag;
}

// Round-to-nearest-even (weight rule). Ties go to the even code: 0.25->0, 1.25->1.0, 2.5->2, 5->4.
// NaN gives code 0, as the official quantizer does (golden e2m1_code_rne).
HD inline uint8_t f32_to_e2m1_rne(float f) {
  if (is_nan_f32(f)) return 0;
  const uint8_t sign = (f32_bits(f) >> 31) ? 0x8 : 0x0;
  const float a = bits_f32(f32_bits(f) & 0x7FFFFFFFu);
  uint8_t k;
  if (a <= 0.25f) k = 0;
  else if (a < 0.75f) k = 1;
  else if (a <= 1.25f) k = 2;
  else if (a < 1.75f) k = 3;
  else if (a <= 2.5f) k = 4;
  else if (a < 3.5f) k = 5;
  else if (a <= 5.0f) k = 6;
  else k = 7;
  return static_cast<uint8_t>(sign | k);
}

// Ties away from zero (dynamic rule). NaN gives the saturated code 7 (golden e2m1_code_ties_away).
HD inline uint8_t f32_to_e2m1_ties_away(float f) {
  if (is_nan_f32(f)) return 7;
  const uint8_t sign = (f32_bits(f) >> 31) ? 0x8 : 0x0;
  const float a = bits_f32(f32_bits(f) & 0x7FFFFFFFu);
  uint8_t k;
  if (a < 0.25f) k = 0;
  else if (a < 0.75f) k = 1;
  else if (a < 1.25f) k = 2;
  else if (a < 1.75f) k = 3;
  else if (a < 2.5f) k = 4;
  else if (a < 3.5f) k = 5;
  else if (a < 5.0f) k = 6;
  else k = 7;
  return static_cast<uint8_t>(sign | k);
}

// The e2m1 magnitude code (0..7, no sign) of |f| = bits ab, ties away, without branches: |f| >= 1 rounds to one
// mantissa bit on the bits (code 2 + 2 (exponent) + mantissa bit, clamped at 7: inf and NaN too); below 1 the two
// thresholds 0.25 / 0.75.
HD inline uint32_t e2m1_magnitude_code_branchless(uint32_t ab) {
  const uint32_t r = (ab + 0x200000u) >> 22;
  const uint32_t hi = (r < 259u ? r : 259u) - 252u;
  const uint32_t lo = uint32_t(ab >= 0x3E800000u) + uint32_t(ab >= 0x3F400000u);
  return ab >= 0x3F800000u ? hi : lo;
}

// f32_to_e2m1_ties_away without branches, for kernels (the same code for every float, NaN included; a test checks
// them against each other): NaN has no sign.
HD inline uint32_t f32_to_e2m1_ties_away_branchless(float f) {
  const uint32_t b = f32_bits(f), ab = b & 0x7FFFFFFFu;
  const uint32_t k = e2m1_magnitude_code_branchless(ab);
  return ab > 0x7F800000u ? 7u : (k | ((b >> 28) & 8u));
}

// The same for finite f, without the NaN test (moe v46's first pass, whose values are finite; a NaN keeps its sign).
HD inline uint32_t f32_to_e2m1_ties_away_finite(float f) {
  const uint32_t b = f32_bits(f);
  return e2m1_magnitude_code_branchless(b & 0x7FFFFFFFu) | ((b >> 28) & 8u);
}

// The value of f32_to_e2m1_ties_away(x)'s code (e2m1 value, sign kept: -0 where a negative x rounds to 0) without the
// code, for x whose significand fits in 16 bits (a bf16 value times a power of two: moe's hidden-state quantizer) or
// |x| >= 1. From 1 up the float's own bits round to one mantissa bit (the carry may step the exponent); below 1,
// |x| + 1 is exact for such x and rounds on [1, 2)'s grid of 1/2, which is e2m1's grid on [0, 1) moved up by 1.
// Saturates at 6 (infinity too); NaN is not handled.
HD inline float e2m1_value_ties_away(float x) {
  const float a = fminf(fabsf(x), 6.0f);
  const float c = a < 1.0f ? 1.0f : 0.0f;
  const float r = bits_f32((f32_bits(a + c) + 0x200000u) & 0xFFC00000u) - c;
  return bits_f32(f32_bits(r) | (f32_bits(x) & 0x80000000u));
}

// ---- e8m0: 2^(byte - 127); 255 is NaN ----
HD inline float e8m0_to_f32(uint8_t b) {
  if (b == 0xFF) return bits_f32(0x7FC00000u);
  return exp2_f32(static_cast<int>(b) - 127);
}

// e8m0 of a positive fp32 s (weight rule): its exponent field, plus one when mantissa bit 22 is set
// (for subnormals: bit 22 and any lower bit). Saturates at 255.
HD inline uint8_t e8m0_from_f32_weight_rule(float s) {
  const uint32_t u = f32_bits(s) & 0x7FFFFFFFu;
  const uint32_t exp_field = u >> 23;
  const uint32_t frac = u & 0x7FFFFFu;
  uint32_t r = exp_field;
  if (exp_field != 0) {
    if (frac & 0x400000u) ++r;
  } else if ((frac & 0x400000u) && (frac & 0x3FFFFFu)) {
    ++r;
  }
  return static_cast<uint8_t>(r > 255u ? 255u : r);
}

// MoE weight rule: scale of amax / 4.
HD inline uint8_t e8m0_per1x32(float amax) { return e8m0_from_f32_weight_rule(amax / 4.0f); }

// Dynamic rule: round amax's bits as (bits + 0x200000) & 0xFF800000, take the exponent field e;
// scale_exp = clamp(e - 129, -127, 127) (floor(log2(amax)) - 2 after rounding). Byte = scale_exp + 127.
HD inline int mxfp4_dynamic_scale_exp(float amax) {
  const uint32_t r = (f32_bits(amax) + 0x200000u) & 0xFF800000u;
  const int e = static_cast<int>((r >> 23) & 0xFFu);
  const int s = e - 129;
  return s < -127 ? -127 : (s > 127 ? 127 : s);
}

// Largest |x| of a block; NaN entries are skipped.
HD inline float block32_amax(const float* x32) {
  float amax = 0.0f;
  for (int i = 0; i < 32; ++i) {
    const float a = bits_f32(f32_bits(x32[i]) & 0x7FFFFFFFu);
    if (a > amax) amax = a;
  }
  return amax;
}

// One block of 32 values -> 16 bytes (low nibble = even element) and one e8m0 byte.
HD inline void quantize_block32_dynamic(const float* x32, uint8_t* packed16, uint8_t* scale_byte) {
  const int scale_exp = mxfp4_dynamic_scale_exp(block32_amax(x32));
  const float inv_scale = exp2_f32(-scale_exp);
  for (int i = 0; i < 16; ++i) {
    const uint8_t lo = f32_to_e2m1_ties_away(x32[2 * i] * inv_scale);
    const uint8_t hi = f32_to_e2m1_ties_away(x32[2 * i + 1] * inv_scale);
    packed16[i] = static_cast<uint8_t>(lo | (hi << 4));
  }
  *scale_byte = static_cast<uint8_t>(scale_exp + 127);
}

HD inline void quantize_block32_per1x32(const float* x32, uint8_t* packed16, uint8_t* scale_byte) {
  const uint8_t b = e8m0_per1x32(block32_amax(x32));
  const float scale = e8m0_to_f32(b);
  for (int i = 0; i < 16; ++i) {
    const uint8_t lo = f32_to_e2m1_rne(x32[2 * i] / scale);
    const uint8_t hi = f32_to_e2m1_rne(x32[2 * i + 1] / scale);
    packed16[i] = static_cast<uint8_t>(lo | (hi << 4));
  }
  *scale_byte = b;
}

}  // namespace numerics
