// mla_decode on fp8 KV, wgmma pieces (session 21, NVIDIA sm_90a only):
//  - The KV tile arrives by 5 TMA tensor copies: 4 boxes of 128 dims x 64 tokens with a 128-byte swizzle (box c at
//    c * 8192, token row r at 128 r, its 16-byte chunk u at chunk u ^ (r & 7)) and the rope's 64 dims x 64 tokens with
//    a 64-byte swizzle (at 32768, row r at 64 r, chunk u at u ^ ((r >> 1) & 3)), so that wgmma reads it as its A
//    operand (K-major) straight from shared memory: no K fragments, no conversions for Q K^T.
//  - Q in e4m3 as two terms (v10's hi / lo, docs/perf.md "mla_decode v10"): sq = 2^-e with max |q| sq <= 1/4,
//    hi = e4m3(q sq), lo = e4m3(16 (q sq - hi)), rows 0-15 hi and 16-31 lo of the B operand (N 32), in the same
//    boxes and swizzles (32-row boxes: 4 x 4096 + 2048 bytes); logit = (K.hi + K.lo / 16) / sq.
// Hopper has no fp8 mma.sync (m16n8k32 e4m3 compiles to conversions + HMMA) and its mma.sync f16 runs at half the
// wgmma rate (scripts/microbench/conv_rate.cu: 0.48 m16n8k16 an SM and clock): measurements in docs/perf.md,
// session 21. Used by mla_tok (problems/common/mla_fp8_tok.h).
#pragma once
#include <cstdint>
#include <cstring>
#include <stdexcept>

#if defined(HARNESS_GPU) && !defined(__HIP_PLATFORM_AMD__)
#include <cudaTypedefs.h>
#endif

namespace mla_wgqk {

constexpr int kWide = 128;                      // dims (bytes) a row of the 4 wide boxes (dims 0-511)
constexpr int kWideBytes = 64 * kWide;          // 8192: one wide box of the KV tile (64 tokens)
constexpr int kRopeOff = 4 * kWideBytes;        // 32768: the rope box (64 dims x 64 tokens)
constexpr int kQRows = 32;                      // hi (heads 0-15), lo (heads 0-15)
constexpr int kQWideBytes = kQRows * kWide;     // 4096
constexpr int kQRopeOff = 4 * kQWideBytes;      // 16384
constexpr int kQBytes = kQRopeOff + kQRows * 64;  // 18 KB
constexpr int kSteps = 18;                      // k32 steps over 576 dims
constexpr float kQMax = 0.25f;                  // max |q| sq

// The TMA tensor map of the KV rows, passed by value (__grid_constant__) to the kernel: CUtensorMap's 128 bytes.
struct alignas(64) KvMap {
  uint64_t w[16];
};

// Byte offset of (row r, dim d of 576) in the tile (rows of 64 tokens, box bytes wb / rope offset ro) or in the Q
// operand (32 rows: kQWideBytes, kQRopeOff).
inline constexpr uint32_t swz(int r, int d, int wb, int ro) {
  return d < 512 ? uint32_t((d >> 7) * wb + r * kWide + ((((d & 127) >> 4) ^ (r & 7)) << 4) + (d & 15))
                 : uint32_t(ro + r * 64 + ((((d - 512) >> 4) ^ ((r >> 1) & 3)) << 4) + (d & 15));
}

#if defined(HARNESS_GPU) && !defined(__HIP_PLATFORM_AMD__)
// Host: the map of kv_fp8 (total_kv rows of 576 bytes), boxes of box_dims x 64 tokens (128: 128-byte swizzle, 64:
// 64-byte swizzle).
inline KvMap kv_map(const uint8_t* kv, int64_t rows, int box_dims) {
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
    const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q);
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || fn == nullptr)
      throw std::runtime_error("mla_wgqk: cuTensorMapEncodeTiled is not available from the driver");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  CUtensorMap m;
  const cuuint64_t dims[2] = {cuuint64_t(576), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {cuuint64_t(576)};
  const cuuint32_t box[2] = {cuuint32_t(box_dims), 64u};
  const cuuint32_t estr[2] = {1u, 1u};
  const CUresult r = encode(&m, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<uint8_t*>(kv), dims, strides, box, estr,
                            CU_TENSOR_MAP_INTERLEAVE_NONE,
                            box_dims == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) throw std::runtime_error("mla_wgqk: cuTensorMapEncodeTiled failed");
  static_assert(sizeof(CUtensorMap) == sizeof(KvMap), "CUtensorMap is 128 bytes");
  KvMap k;
  std::memcpy(&k, &m, sizeof(k));
  return k;
}
#endif

#if defined(HARNESS_GPU) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && !defined(__HIP_PLATFORM_AMD__)
// One box (dims d0 .., tokens row0 ..) of the tile into dst (aligned to the swizzle's span), completing on bar.
__device__ __forceinline__ void tma_box(uint32_t dst, const KvMap* map, int d0, int row0, uint32_t bar, uint64_t pol) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(d0), "r"(row0), "r"(bar), "l"(pol)
      : "memory");
}
// K-major, 64-byte swizzle, 8-row groups 512 bytes apart.
__device__ __forceinline__ uint64_t desc_sw64(uint32_t saddr) {
  return uint64_t((saddr & 0x3FFFFu) >> 4) | (uint64_t(1) << 16) | (uint64_t(512 >> 4) << 32) | (uint64_t(2) << 62);
}
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
// d (+)= A (64 x 32 e4m3 at da) x B (32 x 32 e4m3 at db); d[4 j + e]: n8 block j, rows g (e 0, 1), g + 8 (e 2, 3).
__device__ __forceinline__ void wgmma_n32(float (&d)[16], uint64_t da, uint64_t db, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, "
      "%16, %17, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "l"(da), "l"(db), "r"(accumulate));
}
// Partial logits of the tile at st against the Q operand at q over k32 steps s0 .. s0 + N - 1 (steps 0-15: the wide
// boxes, 128-byte swizzle, 8-row groups 1024 bytes apart; 16-17: the rope box, 64-byte swizzle, 512), alternately into
// d0 and d1 (the caller adds them after wg_wait0). A descriptor's low word (start address / 16 in bits 0-13, no carry
// out of them below 256 KB) advances by 32-bit adds; its high word holds the layout.
template <int N>
__device__ __forceinline__ void qk_steps(float (&d0)[16], float (&d1)[16], uint32_t st, uint32_t q, int s0) {
  constexpr uint32_t kHi128 = uint32_t(1024 >> 4) | (1u << 30), kHi64 = uint32_t(512 >> 4) | (2u << 30);
  const uint32_t la = ((st & 0x3FFFFu) >> 4) | (1u << 16), lb = ((q & 0x3FFFFu) >> 4) | (1u << 16);
  wg_fence();
#pragma unroll
  for (int i = 0; i < N; ++i) {
    const int s = s0 + i;
    const bool wide = s < 16;
    const uint32_t oa = wide ? uint32_t((s >> 2) * kWideBytes + (s & 3) * 32) >> 4 : uint32_t(kRopeOff + (s - 16) * 32) >> 4;
    const uint32_t ob = wide ? uint32_t((s >> 2) * kQWideBytes + (s & 3) * 32) >> 4 : uint32_t(kQRopeOff + (s - 16) * 32) >> 4;
    const uint64_t hi = uint64_t(wide ? kHi128 : kHi64) << 32;
    const uint64_t da = hi | (la + oa), db = hi | (lb + ob);
    if (i % 2 == 0)
      wgmma_n32(d0, da, db, i > 0);
    else
      wgmma_n32(d1, da, db, i > 1);
  }
  wg_commit();
}
// d (+)= A (64 x 16 f16, registers: rows g / g + 8 of the warp's 16, k 2t.. / 2t + 8..) x B (16 x 16 f16 at db).
__device__ __forceinline__ void wgmma_rs_n16(float (&d)[8], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %13, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9,%10,%11}, %12, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}
// K-major, 128-byte swizzle, 8-row groups 1024 bytes apart (the P^T operand: 16 rows of 64 f16).
__device__ __forceinline__ uint64_t desc_sw128(uint32_t saddr) {
  return uint64_t((saddr & 0x3FFFFu) >> 4) | (uint64_t(1) << 16) | (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t addr, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}
__device__ __forceinline__ uint32_t e4m3x2_of(float lo, float hi) {  // bytes: lo, hi
  uint16_t r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ float2 f32x2_of_e4m3x2(uint32_t b) {  // bytes 0, 1 of b
  uint32_t h;
  asm("{\n.reg .b16 l, u;\nmov.b32 {l, u}, %1;\ncvt.rn.f16x2.e4m3x2 %0, l;\n}" : "=r"(h) : "r"(b));
  float lo, hi;
  asm("{\n.reg .b16 l, u;\nmov.b32 {l, u}, %2;\ncvt.f32.f16 %0, l;\ncvt.f32.f16 %1, u;\n}" : "=f"(lo), "=f"(hi) : "r"(h));
  return make_float2(lo, hi);
}
// The Q operand of one item from its bf16 rows ([16][576], generic or shared memory) into q_sm (kQBytes, 512-byte
// aligned), by all threads of the block; returns sq. Two block barriers (the max, then the operand's stores,
// fenced for the async proxy). red_sm: one float a warp.
template <int kThreads>
__device__ float stage_q(const uint16_t* qsrc, unsigned char* q_sm, float* red_sm) {
  const int tid = int(threadIdx.x), WS = 32;
  float mx = 0.f;
  for (int i = tid; i < 16 * 144; i += kThreads) {
    const uint2 v = *reinterpret_cast<const uint2*>(qsrc + (i / 144) * 576 + 4 * (i % 144));
    mx = fmaxf(mx, fmaxf(fmaxf(fabsf(__uint_as_float(v.x << 16)), fabsf(__uint_as_float(v.x & 0xffff0000u))),
                         fmaxf(fabsf(__uint_as_float(v.y << 16)), fabsf(__uint_as_float(v.y & 0xffff0000u)))));
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
  if (tid % WS == 0) red_sm[tid / WS] = mx;
  __syncthreads();
  mx = 0.f;
#pragma unroll
  for (int w = 0; w < kThreads / 32; ++w) mx = fmaxf(mx, red_sm[w]);
  // sq = 2^-e, the largest power of two with mx sq <= kQMax (1 when Q is all zeros)
  const float sq = mx > 0.f ? exp2f(-ceilf(log2f(mx / kQMax))) : 1.f;
  for (int i = tid; i < 16 * 144; i += kThreads) {
    const int h = i / 144, d = 4 * (i % 144);
    const uint2 v = *reinterpret_cast<const uint2*>(qsrc + h * 576 + d);
    const float x[4] = {__uint_as_float(v.x << 16) * sq, __uint_as_float(v.x & 0xffff0000u) * sq,
                        __uint_as_float(v.y << 16) * sq, __uint_as_float(v.y & 0xffff0000u) * sq};
    const uint32_t hi01 = e4m3x2_of(x[0], x[1]), hi23 = e4m3x2_of(x[2], x[3]);
    const float2 h01 = f32x2_of_e4m3x2(hi01), h23 = f32x2_of_e4m3x2(hi23);
    const uint32_t lo01 = e4m3x2_of(16.f * (x[0] - h01.x), 16.f * (x[1] - h01.y));
    const uint32_t lo23 = e4m3x2_of(16.f * (x[2] - h23.x), 16.f * (x[3] - h23.y));
    *reinterpret_cast<uint32_t*>(q_sm + swz(h, d, kQWideBytes, kQRopeOff)) = hi01 | (hi23 << 16);
    *reinterpret_cast<uint32_t*>(q_sm + swz(16 + h, d, kQWideBytes, kQRopeOff)) = lo01 | (lo23 << 16);
  }
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  return sq;
}
#endif

}  // namespace mla_wgqk
