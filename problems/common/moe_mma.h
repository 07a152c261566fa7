// Matrix-instruction pieces for MXFP4 GEMMs whose two operands are e2m1 values with e8m0 scales
// per 32-block along K: the values go exactly into fp8 e4m3 and one k32 MMA step covers exactly one
// scale block, so each step's fp32 product is scaled by (weight scale x activation scale) afterwards.
#pragma once
#include "problems/common/mxfp4_decode.h"

// NVIDIA builds have mma.sync e4m3 (sm_89+); other builds use the variants' scalar path.
#if defined(__CUDACC__) && !defined(__HIP_PLATFORM_AMD__)
#define MOE_HAVE_MMA_SYNC 1
#endif

namespace moe_mma {

// d = A (16 x 32, row-major fragments) * B (32 x 8, column fragments), fresh fp32 accumulator.
// Fragment layout (PTX m16n8k32, 8-bit types), g = lane / 4, t = lane % 4:
//   a[0]: row g,   k 4t..4t+3      a[1]: row g+8, k 4t..4t+3
//   a[2]: row g,   k 16+4t..       a[3]: row g+8, k 16+4t..
//   b[0]: col g,   k 4t..4t+3      b[1]: col g,   k 16+4t..
//   d[0], d[1]: row g, cols 2t, 2t+1     d[2], d[3]: row g+8, cols 2t, 2t+1
__device__ inline void mma_e4m3_16x8x32(float d[4], const uint32_t a[4], const uint32_t b[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%10,%10,%10};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(0.0f));
#else
  d[0] = d[1] = d[2] = d[3] = 0.0f;  // never called: callers compile this path for sm_89+ only
#endif
}

// d = A (16 x 16 f16, row) * B (16 x 8 f16, col) + c, fp32 accumulation (the native mma.sync shape on
// sm_80+; sm_90 runs the e4m3 form above through f16 conversions in software). Fragments, g = lane / 4,
// t = lane % 4, two values a register (low half first):
//   a[0]: row g, k 2t, 2t+1    a[1]: row g+8, k 2t, 2t+1    a[2]: row g, k 2t+8, 2t+9    a[3]: row g+8, ...
//   b[0]: col g, k 2t, 2t+1    b[1]: col g, k 2t+8, 2t+9    c, d: as mma_e4m3_16x8x32's d
__device__ inline void mma_f16_16x8x16(float d[4], const uint32_t a[4], const uint32_t b[2], const float c[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
        "f"(c[3]));
#else
  d[0] = c[0];  // never called: callers compile this path for sm_80+ only
  d[1] = c[1];
  d[2] = c[2];
  d[3] = c[3];
#endif
}

// d = A (16 x 16 bf16, row) * B (16 x 8 bf16, col) + c: fragments as mma_f16_16x8x16.
__device__ inline void mma_bf16_16x8x16(float d[4], const uint32_t a[4], const uint32_t b[2], const float c[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
        "f"(c[3]));
#else
  d[0] = c[0];  // never called: callers compile this path for sm_80+ only
  d[1] = c[1];
  d[2] = c[2];
  d[3] = c[3];
#endif
}

// Byte address of one k-block (32 values = 16 bytes per row) of a 16-row group in the official
// 16x16-shuffled weight layout [N/16, Kbytes/32, 2, 16 rows, 16 bytes]: 16 rows x 16 bytes, contiguous.
// Lane l's 32-bit words at +4l (row l/4) and +128+4l (row l/4 + 8) are exactly the e2m1 codes of
// the A fragment's rows g and g+8, with k permuted inside the block as the B side must match:
// byte 4t..4t+3 of a row (k 8t..8t+7) feeds MMA k 4t..4t+3 (low half) and 16+4t.. (high half).
__device__ inline const uint8_t* shuffled_kblock(const uint8_t* w, int k_bytes, int row16, int kb) {
  return w + (int64_t(row16) * (k_bytes / 32) + kb / 2) * 512 + (kb & 1) * 256;
}

// A fragment of one 16-row group and one k-block from the shuffled layout.
__device__ inline void load_a_fragment(const uint8_t* kblock, int lane, uint32_t a[4]) {
  const uint32_t w0 = *reinterpret_cast<const uint32_t*>(kblock + 4 * lane);
  const uint32_t w1 = *reinterpret_cast<const uint32_t*>(kblock + 128 + 4 * lane);
  mxfp4::e2m1x8_to_e4m3x8(w0, a[0], a[2]);
  mxfp4::e2m1x8_to_e4m3x8(w1, a[1], a[3]);
}

// B fragment of one token: its e4m3 activation bytes k 8t..8t+7 of the k-block (matching the A side).
__device__ inline void load_b_fragment(const uint8_t* row_kblock, int lane, uint32_t b[2]) {
  const uint2 v = *reinterpret_cast<const uint2*>(row_kblock + 8 * (lane % 4));
  b[0] = v.x;
  b[1] = v.y;
}

}  // namespace moe_mma
