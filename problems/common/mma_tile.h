// The one per-vendor matrix-instruction layer: a warp computes C[16 x N] += A[16 x 16] * B[16 x N]
// with fp32 accumulation, on f16 or bf16 inputs.
//
// Fragments use a *logical* k order so that every vendor looks alike to the caller: each lane
// holds four consecutive logical k values (4*kq .. 4*kq+3) of one B column, and of one or two A
// rows, packed as two 32-bit words (.x = k 0,1; .y = k 2,3 of the four). On NVIDIA the logical k
// differs from the instruction's k order, which is harmless: A and B use the same mapping, and a
// dot product does not depend on the order of its terms.
//
// Lane geometry (which rows / columns / k group a lane holds) comes from the a_/b_/c_ functions.
//   NVIDIA (sm_80+):  mma.sync m16n8k16, N = 8, two A rows per lane.
//   AMD CDNA (gfx90a, gfx94x, gfx950): MFMA 16x16x16, N = 16 (wave64), one A row per lane.
//   Elsewhere: a portable shuffle-based emulation with the AMD-style layout, N = warpSize / 4.
#pragma once
#include "problems/common/lowp_pack.h"
#include "problems/common/warp_reduce.h"

#if defined(HARNESS_GPU)

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(HARNESS_MMA_PORTABLE)
#define MMA_TILE_NVIDIA 1
#elif defined(__HIP_DEVICE_COMPILE__) && !defined(HARNESS_MMA_PORTABLE) && \
    (defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__) || defined(__gfx950__))
#define MMA_TILE_AMD 1
#endif

namespace mma {

enum class Elem { f16, bf16 };

constexpr int kM = 16;
constexpr int kK = 16;
#if defined(MMA_TILE_NVIDIA)
constexpr int kN = 8;
constexpr int kARows = 2;
#else
constexpr int kN = kernel_warp_size() / 4;
constexpr int kARows = kM * 4 / kernel_warp_size();  // 16 rows x 4 k groups spread over the warp
#endif

struct FragA { uint2 row[kARows]; };
using FragB = uint2;
struct FragC { float v[4]; };

#if defined(MMA_TILE_NVIDIA)
__device__ inline int a_row(int lane, int r) { return (lane >> 2) + 8 * r; }
__device__ inline int a_kq(int lane) { return lane & 3; }
__device__ inline int b_col(int lane) { return lane >> 2; }
__device__ inline int b_kq(int lane) { return lane & 3; }
__device__ inline int c_row(int lane, int i) { return (lane >> 2) + 8 * (i >> 1); }
__device__ inline int c_col(int lane, int i) { return 2 * (lane & 3) + (i & 1); }
#else
constexpr int kAGroup = kM / kARows;  // lanes sharing a k group in A
__device__ inline int a_row(int lane, int r) { return lane % kAGroup + r * kAGroup; }
__device__ inline int a_kq(int lane) { return lane / kAGroup; }
__device__ inline int b_col(int lane) { return lane % kN; }
__device__ inline int b_kq(int lane) { return lane / kN; }
__device__ inline int c_row(int lane, int i) { return 4 * (lane / kN) + i; }
__device__ inline int c_col(int lane, int) { return lane % kN; }
#endif

__device__ inline float elem_to_f32(uint32_t bits16, Elem e) {
  return e == Elem::f16 ? f16_bits_to_f32(uint16_t(bits16)) : bf16_bits_to_f32(uint16_t(bits16));
}

template <Elem E>
__device__ inline void mma(FragC& c, const FragA& a, const FragB& b) {
#if defined(MMA_TILE_NVIDIA)
  // Register order of m16n8k16: a0 = (row g, k 2t..), a1 = (row g+8, k 2t..), a2 = (row g, k 2t+8..),
  // a3 = (row g+8, k 2t+8..); b0 = k 2t.., b1 = k 2t+8... Logical k 4t+{0,1} -> 2t+{0,1}, 4t+{2,3} -> 2t+8+{0,1}.
  // Not volatile: a pure function of its operands, so the compiler may interleave independent ones.
  if constexpr (E == Elem::f16) {
    asm(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c.v[0]), "+f"(c.v[1]), "+f"(c.v[2]), "+f"(c.v[3])
        : "r"(a.row[0].x), "r"(a.row[1].x), "r"(a.row[0].y), "r"(a.row[1].y), "r"(b.x), "r"(b.y));
  } else {
    asm(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c.v[0]), "+f"(c.v[1]), "+f"(c.v[2]), "+f"(c.v[3])
        : "r"(a.row[0].x), "r"(a.row[1].x), "r"(a.row[0].y), "r"(a.row[1].y), "r"(b.x), "r"(b.y));
  }
#elif defined(MMA_TILE_AMD)
  typedef float f32x4 __attribute__((ext_vector_type(4)));
  f32x4 acc = {c.v[0], c.v[1], c.v[2], c.v[3]};
  if constexpr (E == Elem::f16) {
    typedef _Float16 f16x4 __attribute__((ext_vector_type(4)));
    f16x4 av, bv;
    __builtin_memcpy(&av, &a.row[0], sizeof av);
    __builtin_memcpy(&bv, &b, sizeof bv);
    acc = __builtin_amdgcn_mfma_f32_16x16x16f16(av, bv, acc, 0, 0, 0);
  } else {
    typedef short i16x4 __attribute__((ext_vector_type(4)));
    i16x4 av, bv;
    __builtin_memcpy(&av, &a.row[0], sizeof av);
    __builtin_memcpy(&bv, &b, sizeof bv);
    acc = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(av, bv, acc, 0, 0, 0);
  }
  for (int i = 0; i < 4; ++i) c.v[i] = acc[i];
#else
  // Portable emulation: each lane gathers its C element's A row and B column with shuffles.
  const int lane = threadIdx.x % kernel_warp_size();
  for (int i = 0; i < 4; ++i) {
    const int m = c_row(lane, i), n = c_col(lane, i);
    float acc = c.v[i];
    for (int kq = 0; kq < 4; ++kq) {
      const int b_src = n + kq * kN;
      const int a_src = m % kAGroup + kq * kAGroup;
      const uint32_t b0 = __shfl(b.x, b_src), b1 = __shfl(b.y, b_src);
      uint32_t a0 = 0, a1 = 0;
      for (int r = 0; r < kARows; ++r) {
        const uint32_t x = __shfl(a.row[r].x, a_src), y = __shfl(a.row[r].y, a_src);
        if (r == m / kAGroup) { a0 = x; a1 = y; }
      }
      acc += elem_to_f32(a0 & 0xffffu, E) * elem_to_f32(b0 & 0xffffu, E);
      acc += elem_to_f32(a0 >> 16, E) * elem_to_f32(b0 >> 16, E);
      acc += elem_to_f32(a1 & 0xffffu, E) * elem_to_f32(b1 & 0xffffu, E);
      acc += elem_to_f32(a1 >> 16, E) * elem_to_f32(b1 >> 16, E);
    }
    c.v[i] = acc;
  }
#endif
}

}  // namespace mma
#endif
