// In-register MXFP4 helpers for kernels: e2m1 nibble decode (to float and to fp8 e4m3 bytes), e8m0
// scale decode, and the dynamic activation quantizer of the spec applied to one value once its
// block's scale is known. The bit-exact rules live in reference/numerics.hpp; these are the fast forms.
#pragma once
#include "problems/common/portability.h"
#include "reference/numerics.hpp"

namespace mxfp4 {

constexpr int kBlock = 32;  // MXFP4 block length along K (elements per e8m0 scale)

// e2m1 code (low 4 bits) -> float. Magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6; bit 3 is the sign.
// Normal codes (exponent field e > 0) are 2^(e-1) * (1 + m/2): exponent e + 126 in fp32.
HD inline float e2m1_value(uint32_t code) {
  const uint32_t em = code & 0x7u;
  const uint32_t mag = (em >> 1) ? ((em + 252u) << 22) : (em ? 0x3F000000u : 0u);
  return numerics::bits_f32(mag | ((code & 0x8u) << 28));
}

// e8m0 byte -> 2^(byte - 127): the byte is the fp32 exponent field; byte 0 (2^-127) is the subnormal
// 0x00400000. Byte 255 (NaN) gives infinity here; neither quantization rule writes it.
HD inline float e8m0_value(uint32_t b) { return numerics::bits_f32(b ? (b << 23) : 0x00400000u); }

// e2m1 code -> fp8 e4m3fn byte of the same value (every e2m1 value is exact in e4m3).
HD inline uint32_t e2m1_to_e4m3(uint32_t code) {
  const uint32_t em = code & 0x7u;
  const uint32_t mag = (em >> 1) ? ((em + 12u) << 2) : (em ? 0x30u : 0u);
  return mag | ((code & 0x8u) << 4);
}

// Eight e2m1 codes (a 32-bit word, element i in nibble i) -> eight e4m3 bytes:
// lo holds elements 0-3 (byte i = element i), hi elements 4-7.
HD inline void e2m1x8_to_e4m3x8(uint32_t w, uint32_t& lo, uint32_t& hi) {
#if defined(__CUDA_ARCH__)
  // Byte permute as an 8-entry table lookup on the magnitudes; signs moved from nibble to byte bit 7.
  constexpr uint32_t kLut0 = 0x3C383000u;  // magnitudes 0..3: 0, 0.5, 1, 1.5
  constexpr uint32_t kLut1 = 0x4C484440u;  // magnitudes 4..7: 2, 3, 4, 6
  const uint32_t mag = w & 0x77777777u;
  lo = __byte_perm(kLut0, kLut1, mag & 0xFFFFu);
  hi = __byte_perm(kLut0, kLut1, mag >> 16);
  const uint32_t s = w & 0x88888888u;
  lo |= ((s & 0x8u) << 4) | ((s & 0x80u) << 8) | ((s & 0x800u) << 12) | ((s & 0x8000u) << 16);
  hi |= ((s >> 12) & 0x80u) | ((s >> 8) & 0x8000u) | ((s >> 4) & 0x800000u) | (s & 0x80000000u);
#else
  lo = 0;
  hi = 0;
  for (int i = 0; i < 4; ++i) {
    lo |= e2m1_to_e4m3(w >> (4 * i)) << (8 * i);
    hi |= e2m1_to_e4m3(w >> (4 * i + 16)) << (8 * i);
  }
#endif
}

// fp8 e4m3 byte of an e2m1 value (as written by the activation quantizers below) -> float.
HD inline float e4m3_small_value(uint32_t b) { return numerics::fp8_e4m3fn_to_f32(static_cast<uint8_t>(b)); }

// The two factors of an exact e2m1 x e4m3 product without a decode branch (moe's exact dot products): the e4m3 byte's
// bits shifted into an fp32 pattern are its value x 2^-120 (exponent field 0: an fp32 subnormal, exactly e4m3's
// subnormal x 2^-120; 0x7F, e4m3's NaN, excluded), and the e2m1 value x 2^120, so their product is the exact product
// (normal range). Needs fp32 subnormals kept (no flush to zero).
HD inline float e4m3_value_x2m120(uint32_t b) { return numerics::bits_f32(((b & 0x7Fu) << 20) | ((b & 0x80u) << 24)); }
HD inline float e2m1_value_x2p120(uint32_t code) { return e2m1_value(code) * 0x1p120f; }

// Dynamic rule, per value: with the block's scale exponent s (numerics::mxfp4_dynamic_scale_exp of
// the block amax), the e2m1 code of x * 2^-s, ties away from zero.
HD inline uint32_t quantize_dynamic_code(float x, int scale_exp) {
  return numerics::f32_to_e2m1_ties_away(x * numerics::exp2_f32(-scale_exp));
}

// |x| with NaN mapped to 0, so that a block amax skips NaN as the reference quantizer does.
HD inline float abs_for_amax(float x) {
  const float a = numerics::bits_f32(numerics::f32_bits(x) & 0x7FFFFFFFu);
  return a > 0.0f ? a : 0.0f;  // NaN compares false
}

}  // namespace mxfp4
