// Kernel-side conversions between storage formats and the 16-bit pairs that matrix instructions
// take (two values per 32-bit word, the lower k in the low half). All exact except where noted.
#pragma once
#include "problems/common/portability.h"

#if defined(HARNESS_GPU)
#if defined(__HIP_PLATFORM_AMD__) || defined(__HIP__)
#include <hip/hip_fp16.h>
#endif

__device__ inline float bf16_bits_to_f32(uint16_t b) { return __uint_as_float(uint32_t(b) << 16); }

// Round to nearest even; NaN stays NaN.
__device__ inline uint16_t f32_to_bf16_bits(float f) {
  uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// Round to nearest even (f16 subnormals below 2^-14 keep fewer bits; |x| > 65504 becomes inf).
__device__ inline uint16_t f32_to_f16_bits(float f) { return __half_as_ushort(__float2half_rn(f)); }
__device__ inline float f16_bits_to_f32(uint16_t h) { return __half2float(__ushort_as_half(h)); }

__device__ inline uint32_t pack16(uint16_t lo, uint16_t hi) { return uint32_t(lo) | (uint32_t(hi) << 16); }

// Byte select with the semantics of CUDA's __byte_perm: result byte i = byte sel[i] of (b:a).
__device__ inline uint32_t byte_perm(uint32_t a, uint32_t b, uint32_t sel) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(a, b, sel);
#else
  uint64_t x = (uint64_t(b) << 32) | a;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) r |= uint32_t((x >> (8 * ((sel >> (4 * i)) & 7))) & 0xffu) << (8 * i);
  return r;
#endif
}

// Four fp8 e4m3fn bytes -> four f16 values equal to (fp8 value * 2^-8), exactly: the 7 magnitude
// bits move into the f16 exponent/mantissa fields unchanged, so fp8 subnormals become f16
// subnormals. Callers fold 2^8 into their scale. (fp8 NaN, never produced by the quantizer, would
// decode as a finite value.) Result: .x = elements (0, 1), .y = elements (2, 3).
__device__ inline uint2 fp8x4_to_f16x4_scaled(uint32_t w) {
  uint32_t e01 = byte_perm(w, 0u, 0x4140u);  // byte0 -> bits 0..7, byte1 -> bits 16..23
  uint32_t e23 = byte_perm(w, 0u, 0x4342u);
  auto cvt = [](uint32_t x) { return ((x & 0x00800080u) << 8) | ((x & 0x007f007fu) << 7); };
  return make_uint2(cvt(e01), cvt(e23));
}

// Byte transpose of a 4x4 block: out[j] byte r = byte j of w[r].
__device__ inline void transpose_bytes_4x4(const uint32_t w[4], uint32_t out[4]) {
  uint32_t lo01 = byte_perm(w[0], w[1], 0x5140u);  // w0.b0 w1.b0 w0.b1 w1.b1
  uint32_t lo23 = byte_perm(w[2], w[3], 0x5140u);
  uint32_t hi01 = byte_perm(w[0], w[1], 0x7362u);  // w0.b2 w1.b2 w0.b3 w1.b3
  uint32_t hi23 = byte_perm(w[2], w[3], 0x7362u);
  out[0] = byte_perm(lo01, lo23, 0x5410u);
  out[1] = byte_perm(lo01, lo23, 0x7632u);
  out[2] = byte_perm(hi01, hi23, 0x5410u);
  out[3] = byte_perm(hi01, hi23, 0x7632u);
}

// One e2m1 code (low 4 bits) times 2^(scale_byte - 127) as bf16 bits. Exact for scale bytes
// 2..251, the range any finite block amax above 2^-125 produces; code 0 is zero for every byte
// (an all-zero block stores byte 0).
__device__ inline uint16_t e2m1_scaled_to_bf16_bits(uint32_t code, uint32_t scale_byte) {
  uint32_t m = code & 7u;
  uint32_t sign = (code & 8u) << 12;
  if (m == 0) return uint16_t(sign);
  // magnitudes 0.5,1,1.5,2,3,4,6: exponent step (m+2)/2 relative to 0.5, mantissa .5 for odd m>1
  uint32_t exp_field = scale_byte + ((m + 2u) >> 1) - 2u;
  uint32_t mant = (m > 1u && (m & 1u)) ? 0x40u : 0u;
  return uint16_t(sign | (exp_field << 7) | mant);
}
// Four e2m1 codes (16 bits, element 0 in the low nibble) -> four f16 values equal to
// (e2m1 value * 2^-14), exactly: the 3 magnitude bits land in the f16 exponent/mantissa fields
// unchanged (code 1, the e2m1 subnormal 0.5, becomes an f16 subnormal). .x = elements (0, 1).
__device__ inline uint2 e2m1x4_to_f16x4_scaled(uint32_t codes) {
  const uint32_t hi = codes >> 4;
  const uint32_t e01 = byte_perm(codes, hi, 0x4400u);  // element 0 -> bits 0..3, element 1 -> bits 16..19
  const uint32_t e23 = byte_perm(codes, hi, 0x5511u);
  auto cvt = [](uint32_t y) { return ((y & 0x00070007u) << 9) | ((y & 0x00080008u) << 12); };
  return make_uint2(cvt(e01), cvt(e23));
}

// f16 bits of 2^d for d <= 0 (subnormals down to 2^-24, zero below).
__device__ inline uint32_t f16_pow2_bits(int d) {
  if (d >= -14) return uint32_t(d + 15) << 10;
  return d >= -24 ? 1u << (d + 24) : 0u;
}

// Lane-wise product of two f16 pairs (exact when one factor is a power of two and nothing underflows).
__device__ inline uint32_t hmul2_bits(uint32_t a, uint32_t b) {
  __half2 x, y;
  __builtin_memcpy(&x, &a, 4);
  __builtin_memcpy(&y, &b, 4);
  const __half2 r = __hmul2(x, y);
  uint32_t out;
  __builtin_memcpy(&out, &r, 4);
  return out;
}
// Two fp8 e4m3fn bytes (the low 16 bits; the lower byte first) -> their f16 pair, exactly (every e4m3 value is an f16),
// through the hardware conversion where there is one (NVIDIA sm_89+).
__device__ inline uint32_t fp8x2_to_f16x2_hw(uint32_t w) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  uint32_t r;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(r) : "h"(uint16_t(w & 0xffffu)));
  return r;
#else
  constexpr uint32_t kTwoTo8 = 0x5c005c00u;  // f16 2^8 in both halves
  return hmul2_bits(fp8x4_to_f16x4_scaled(w & 0xffffu).x, kTwoTo8);
#endif
}
// Same result as fp8x4_to_f16x4_scaled, through the hardware conversion where there is one
// (NVIDIA sm_89+): cvt to f16 (exact), then times 2^-8 (exact).
__device__ inline uint2 fp8x4_to_f16x4_scaled_hw(uint32_t w) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  uint32_t lo, hi;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(lo) : "h"(uint16_t(w & 0xffffu)));
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(hi) : "h"(uint16_t(w >> 16)));
  constexpr uint32_t kTwoToMinus8 = 0x1c001c00u;  // f16 2^-8 in both halves
  return make_uint2(hmul2_bits(lo, kTwoToMinus8), hmul2_bits(hi, kTwoToMinus8));
#else
  return fp8x4_to_f16x4_scaled(w);
#endif
}
#endif
