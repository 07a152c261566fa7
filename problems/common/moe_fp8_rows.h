// 64-row MoE shapes (v20's rows_for() == 64: E33 bs512 d_expert 512 / 2048) on fp8 e4m3 wgmma
// (sm_90a, m64nNk32, A = decoded weights in registers, B = the tile's sorted token rows in shared
// memory), 128-row tiles. The MXFP4 values are e2m1 x 2^e8m0; an e2m1 value times 2^d is exact in e4m3
// for d in [-8, 6] (subnormals included), so both operands carry their per-32 block
// scale folded into the e4m3 value relative to a per-row reference exponent; the reference is applied
// to the fp32 accumulator in the epilogue (a power of two: exact). Every product is exact; the sums
// are the tensor unit's fp8 accumulation (fp32 accumulator registers, k order = the stored k order).
//  - Weights (registers, A): a word of 8 e2m1 codes -> two e4m3 words by a byte-permute table lookup
//    (prmt on the magnitudes, the table T0/T1 built per row and k-block from the e8m0 byte with two
//    integer multiply-adds, valid while d = b - ref is in [-5, 6]) and a sign-replicating prmt (its
//    0x01010101 source an immediate) + one multiply-add for the signs: 10 ops a word + 3 a row and
//    k-block + 1 for the window check. The row's reference comes from its first stage's scale bytes
//    (largest byte at d = 3); each thread tracks max(b - lo) per row and a row that left the window is
//    flagged and recomputed exactly (fix-up, below). The next k-block's weight words are read before
//    the wgmma wait.
//  - Hidden states: our quantizer (one block a token) writes e4m3 of e2m1 x 2^(s - R), R = the token's
//    largest block exponent - 6; a token whose nonzero blocks span more than 14 exponents is flagged
//    (stored unfolded, recomputed by the fix-up).
//  - SwiGLU output a (gate_up's epilogue, 8 values a thread, cvt.rn.satfinite.e4m3x2): e4m3 of
//    e2m1 x 2^s (fixed reference 0, s in [-8, 6]); rows with a nonzero block outside are flagged
//    (unfolded, recomputed by the down's fix-up).
//  - Fix-up: flagged (weight row, token) entries of a tile are recomputed from the unshuffled weights
//    and the stored e4m3 activations with their block exponents, one warp an entry, fp32 (exact
//    products). Never taken on the benchmark data; FORCE variants force it for some rows and tokens.
//  - Activation k order inside each 32-value block: value k at position(k) = 16 ((k >> 2) & 1) +
//    4 (k >> 3) + (k & 3), so that nibbles 0-3 / 4-7 of a thread's weight word (k 8t .. 8t + 7) meet B
//    at wgmma k 4t + i / 16 + 4t + i (the m64nNk32 register A layout: a0 / a1 rows g / g + 8, k 4t + i;
//    a2 / a3 the same at k + 16).
//  - Pipeline as moe_wgmma_rows.h (v14): cp.async stages, the next stage's copies spread over the
//    k-blocks, fence.proxy.async before each stage barrier, one wgmma group in flight.
//  - Tiles with <= 64 real rows run m64n64k32 (and copy only those rows).
// Route: moe_wg8's 1024-thread route with 128-row tiles; combine: moe_pipeline's. Measured against
// v20 in docs/perf.md, section "moe_mxfp4 v23" (a shared-memory A form, decoded by every thread one stage ahead, and a
// 16-warp form were slower and are not kept). That is Path (G1 / G2, v23). Tiles of up to 256 rows split
// evenly per expert (wgmma N up to 256) measured slower (458.9 / 1132.9 us against 374.6 / 903.3 on E33
// bs512 d_expert 512 / 2048; docs/perf.md, section "Session 6, final integration call"); that form is in
// the commit that removed it from this file.
#pragma once
#include <type_traits>
#include <utility>

#include "problems/common/lowp_pack.h"
#include "problems/common/moe_mma.h"
#include "problems/common/moe_wide16.h"
#include "problems/common/mxfp4_near_midpoint.h"

#ifndef MOE_NEAR_BAND  // moe v42: recompute the SwiGLU values near a deciding bf16 midpoint (swiglu_requant_near)
#define MOE_NEAR_BAND 0
#endif
#ifndef MOE_NEAR_MIN_STEP
#define MOE_NEAR_MIN_STEP 0.0f
#endif
#ifndef MOE_NEAR_STATS  // diagnostics (v42s): near_stats
#define MOE_NEAR_STATS 0
#endif
#ifndef MOE_NEAR_MMA  // moe v43: the listed values' exact dot products on f16 mma.sync (near_dots_mma), k-blocks a step
#define MOE_NEAR_MMA 0
#endif
#ifndef MOE_REQ_GROUP  // moe v45: 1: swiglu_requant's item loop rolled, one item a step (0: v44's loop, two a step)
#define MOE_REQ_GROUP 0
#endif
#ifndef MOE_REQ_FAST  // moe v45: the near rule's first pass with __expf / __fdividef and bf16 by cvt (requant_math)
#define MOE_REQ_FAST 0
#endif
#ifndef MOE_QUANT_FAST  // moe v50: the fp8 prologues' hidden-state quantizer without e2m1 codes (token_scales)
#define MOE_QUANT_FAST 0
#endif
#ifndef MOE_NEAR_VALUES  // moe v44: candidates listed a value each (not an item each), so the full test is one a thread
#define MOE_NEAR_VALUES 0
#endif

namespace moe_fp8r {
namespace {

using moe_pipeline::Tile;

// Position of value k (0..31) of a 32-value block in the stored e4m3 activation row.
HD constexpr int position(int k) { return 16 * ((k >> 2) & 1) + 4 * (k >> 3) + (k & 3); }

// The e4m3 byte of a float that is exactly representable in e4m3 (|v| <= 448, a multiple of 2^-9).
HD inline uint32_t e4m3_exact(float v) {
  const uint32_t b = numerics::f32_bits(v), sign = (b >> 24) & 0x80u, mag = b & 0x7FFFFFFFu;
  if (mag == 0) return 0u;
  const int e = int(mag >> 23) - 127;
  const uint32_t m3 = (mag >> 20) & 7u;
  if (e >= -6) return sign | (uint32_t(e + 7) << 3) | m3;
  return sign | ((8u | m3) >> (-6 - e));
}
// e2m1 code times 2^d as e4m3 (d in [-8, 6]).
HD inline uint32_t e4m3_of(uint32_t code, int d) { return e4m3_exact(mxfp4::e2m1_value(code) * numerics::exp2_f32(d)); }
// The e4m3 bytes of four values that are e4m3 values (byte k = v[k]).
__device__ inline uint32_t e4m3x4_exact(const float (&v)[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  uint16_t lo, hi;  // cvt packs its first source into the upper byte; exact (the values are e4m3 values)
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(lo) : "f"(v[1]), "f"(v[0]));
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(hi) : "f"(v[3]), "f"(v[2]));
  return uint32_t(lo) | (uint32_t(hi) << 16);
#else
  return e4m3_exact(v[0]) | (e4m3_exact(v[1]) << 8) | (e4m3_exact(v[2]) << 16) | (e4m3_exact(v[3]) << 24);
#endif
}
// Four e2m1 codes (nibbles 0..3 of q) times 2^d as four e4m3 bytes (byte i = nibble i).
__device__ inline uint32_t e4m3x4_of(uint32_t q, int d) {
  const float m = numerics::exp2_f32(d);
  float v[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) v[k] = mxfp4::e2m1_value(q >> (4 * k)) * m;
  return e4m3x4_exact(v);
}

// A block's tile: its expert, first sorted row and rows (T = the configuration's BN).
struct TileR {
  int expert, row0, rows;
};

struct Ws {
  moe_pipeline::Workspace p;  // x8 [M, H] e4m3 (folded), xs [M, H/32] s + 127, a8 [rows, I] e4m3, as [rows, I/32]
  int32_t* xr;                // [M][2]: the token's reference R, flag
  int32_t* aflag;             // [rows_max]: a row stored unfolded
};

inline size_t carve(const MoeConfig& c, int T, void* base, Ws* w) {
  moe_pipeline::Workspace p;
  size_t off = moe_pipeline::carve(c, T, base, &p, 1);
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(c, T);
  auto take = [&](size_t bytes) {
    void* q = base ? static_cast<char*>(base) + off : nullptr;
    off += moe_pipeline::align256(bytes);
    return q;
  };
  int32_t* xr = static_cast<int32_t*>(take(s.M * 2 * sizeof(int32_t)));
  int32_t* af = static_cast<int32_t*>(take(s.rows_max * sizeof(int32_t)));
  if (w) *w = Ws{p, xr, af};
  return off;
}
inline size_t workspace_bytes(const MoeConfig& c, int T) { return carve(c, T, nullptr, nullptr); }

#if defined(MOE_WG8_HOST)
using moe_tile::cp_async;
using moe_tile::cp_commit;
using moe_tile::cp_wait;
constexpr int kLanes = moe_tile::kMmaLanes;

// WM warps (WM / 4 warpgroups), each MT 16-row groups; BN (128) tile rows; KS (4 or 8)
// k-blocks a stage. PF: the next k-block's weight words are read before the wgmma wait.
template <int WM_, int MT_, int KS_, int STAGES_, int NB_ = 2, bool PF_ = false, int BN_ = 128>
struct Cfg {
  static constexpr int WM = WM_, MT = MT_, BN = BN_, NG = BN_ / 8, KS = KS_, STAGES = STAGES_, NB = NB_;
  static constexpr int kMinBlocks = 1;
  static constexpr bool PF = PF_;
  static constexpr int kThreads = WM * kLanes;
  static constexpr int BM = WM * MT * 16;
  static constexpr int kXChunks = KS * 2;              // 16-byte chunks of a row per stage
  static constexpr int kSBO = kXChunks * 128;          // bytes between 8-row core-matrix groups
  static constexpr int kW = 0;                         // [BM/16 groups][KS][256]
  static constexpr int kWs = kW + BM * KS * 16;        // [BM][KS] scale bytes
  static constexpr int kX = kWs + moe_tile::align16(BM * KS);
  static constexpr int kStageBytes = kX + BN * KS * 32;
  static constexpr int kPipeBytes = STAGES * kStageBytes;
  static constexpr int kWPer = BM * KS / kThreads;
  static constexpr int kXPer = BN * kXChunks / kThreads;
  static_assert(WM % 4 == 0 && (BM == kThreads || BM * 2 == kThreads), "whole warpgroups, one scale row a thread");
  static_assert(KS % NB == 0 && (KS == 8 || KS == 4), "a scale row slice is one 8- or 4-byte copy");
  static_assert(BN == 128 && BN <= kThreads, "128-row tiles, one setup row a thread");
  static_assert(BM * KS % kThreads == 0 && BN * kXChunks % kThreads == 0, "copy split");
};


#if defined(MOE_WG8_DEVICE)
__device__ inline uint64_t smem_desc(uint32_t saddr, uint32_t sbo) {  // no swizzle, K-major
  return uint64_t((saddr & 0x3ffffu) >> 4) | (uint64_t(128 >> 4) << 16) | (uint64_t(sbo >> 4) << 32);
}
__device__ __forceinline__ uint32_t prmt(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
// 8 e2m1 codes (nibble i = k 8t + i) -> e4m3 bytes of value x 2^d: lo = k 0..3, hi = k 4..7. t0 / t1:
// the magnitude table (bytes for codes 0..3 / 4..7) with bit 7 of every byte set. The sign: prmt's
// sign mode on the raw nibble turns a 0x01 byte into 0x00 where the nibble is negative, so
// byte - (that << 7) clears bit 7 exactly where the value is positive (no borrow between bytes).
__device__ __forceinline__ void decode8(uint32_t w, uint32_t t0, uint32_t t1, uint32_t& lo, uint32_t& hi) {
  const uint32_t mag = w & 0x77777777u;
  const uint32_t ql = prmt(t0, t1, mag), qh = prmt(t0, t1, mag >> 16);
  // Selector nibbles with bit 2 set pick bytes 4..7: the immediate 0x01010101 (no register for it).
  const uint32_t ws4 = w | 0x44444444u;
  uint32_t sl, sh;
  asm("prmt.b32 %0, %1, 0x01010101, %2;" : "=r"(sl) : "r"(w), "r"(ws4));
  asm("prmt.b32 %0, %1, 0x01010101, %2;" : "=r"(sh) : "r"(w), "r"(ws4 >> 16));
  lo = ql - (sl << 7);
  hi = qh - (sh << 7);
}
constexpr uint32_t kT0 = 0x3C383000u | 0x80808080u;  // d = 0: e2m1 magnitudes 0, .5, 1, 1.5 (| 0x80)
constexpr uint32_t kT1 = 0x4C484440u | 0x80808080u;  // 2, 3, 4, 6 (| 0x80)
constexpr uint32_t kK0 = 0x08080800u, kK1 = 0x08080808u;  // + d per exponent step (bytes of normal values)

// acc[0 .. N/8) (+)= A (64 x 32 e4m3, registers) x B (32 x N e4m3, shared memory at desc); acc has NG >= N / 8
// groups. N: 8 .. 64 in steps of 8 (moe_wide27's small tiles), 128, 160 (moe_fp8r2's 160-row tiles).
template <int N, int NG>
__device__ __forceinline__ void wgmma_e4m3(float (&d)[NG][4], const uint32_t (&a)[4], uint64_t desc) {
  static_assert(N % 8 == 0 && N <= 8 * NG && (N <= 64 || N == 128 || N == 160), "wgmma N");
  if constexpr (N == 8) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0,%1,%2,%3}, "
        "{%4,%5,%6,%7}, %8, p, 1, 1;\n}\n"
        : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "n"(1));
  } else if constexpr (N == 16) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %13, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3 {%0,%1,%2,%3,%4,%5,%6,%7}, "
        "{%8,%9,%10,%11}, %12, p, 1, 1;\n}\n"
        : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "n"(1));
  } else if constexpr (N == 24) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %17, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n24k32.f32.e4m3.e4m3 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11}, "
        "{%12,%13,%14,%15}, %16, p, 1, 1;\n}\n"
        : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "n"(1));
  } else if constexpr (N == 32) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, "
        "{%16,%17,%18,%19}, %20, p, 1, 1;\n}\n"
        : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "n"(1));
  } else if constexpr (N == 40) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %25, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n40k32.f32.e4m3.e4m3 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19}, "
        "{%20,%21,%22,%23}, %24, p, 1, 1;\n}\n"
        : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "n"(1));
  } else if constexpr (N == 48) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %29, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n48k32.f32.e4m3.e4m3 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23}, "
        "{%24,%25,%26,%27}, %28, p, 1, 1;\n}\n"
        : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "n"(1));
  } else if constexpr (N == 56) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %33, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n56k32.f32.e4m3.e4m3 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27}, "
        "{%28,%29,%30,%31}, %32, p, 1, 1;\n}\n"
        : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "n"(1));
  } else if constexpr (N == 64) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, "
        "{%32,%33,%34,%35}, %36, p, 1, 1;\n}\n"
        : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "n"(1));
  } else if constexpr (N == 128) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, "
        "{%64,%65,%66,%67}, %68, p, 1, 1;\n}\n"
        : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "n"(1));
  } else if constexpr (N == 160) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %85, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n160k32.f32.e4m3.e4m3 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79}, "
        "{%80,%81,%82,%83}, %84, p, 1, 1;\n}\n"
        : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3]), "+f"(d[16][0]), "+f"(d[16][1]), "+f"(d[16][2]), "+f"(d[16][3]), "+f"(d[17][0]), "+f"(d[17][1]), "+f"(d[17][2]), "+f"(d[17][3]), "+f"(d[18][0]), "+f"(d[18][1]), "+f"(d[18][2]), "+f"(d[18][3]), "+f"(d[19][0]), "+f"(d[19][1]), "+f"(d[19][2]), "+f"(d[19][3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "n"(1));
  }
}
#endif  // MOE_WG8_DEVICE

// Options a tile configuration may carry (moe_wide27's Cfg does): EF, weight copies with an L2 evict_first
// policy; kNoBranch, the next stage's copies issued without a branch (past the end, the last stage again, which
// needs the next k-block index clamped). Configurations with these options clamp that index whether or not they
// set kNoBranch, as they were measured (docs/perf.md, section "moe_mxfp4 v27").
// DIST: how many stages ahead the copies run. STAGES - 1 (the default) writes the slot stage ks - 1 read, so each
// stage barrier first drains this warp's wgmma groups; a configuration with DIST = STAGES - 2 (moe_ws30's) writes
// stage ks - 2's slot, whose groups every warp retired before the barrier: no drain (docs/perf.md, section
// "moe_mxfp4 v30").
template <class C, class = void>
struct LoopDist {
  static constexpr int value = C::STAGES - 1;
};
template <class C>
struct LoopDist<C, std::void_t<decltype(C::DIST)>> {
  static constexpr int value = C::DIST;
};

// XRes: a configuration whose activations (B) stay in shared memory for the whole K (kXResOff: their offset from the
// pipeline's base; [8-row group][2 x KB chunks of 16 bytes][8 rows][16 bytes], so KB x 256 bytes from one group to the
// next) instead of coming with each stage (kXPer == 0): moe_fp8r2's down_xr (session 22) loads a tile's rows once for
// several column blocks.
template <class C, class = void>
struct XRes {
  static constexpr bool value = false;
  static constexpr int off = 0;
};
template <class C>
struct XRes<C, std::void_t<decltype(C::kXResOff)>> {
  static constexpr bool value = true;
  static constexpr int off = C::kXResOff;
  static_assert(C::kXPer == 0, "resident activations: the stages carry weights and scales only");
};

template <class C, class = void>
struct LoopOpts {
  static constexpr bool EF = false, kNoBranch = false, kClampNext = false;
};
template <class C>
struct LoopOpts<C, std::void_t<decltype(C::kNoBranch)>> {
  static constexpr bool EF = C::EF, kNoBranch = C::kNoBranch, kClampNext = true;
};

__device__ inline uint64_t policy_evict_first() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
  return p;
}
// Ran in moe_wide27 (v27e: no gain); the same instruction stopped moe_rows8x's kernels with an illegal instruction
// (docs/perf.md, sections "moe_mxfp4 v27" and "moe_mxfp4 v26"). No committed variant sets EF. Session 16: ptxas 13.0
// can give such a copy's 64-bit policy descriptor an odd uniform register (`desc[UR1]` in the SASS), which the
// hardware rejects; whether it does depends on the kernel, not on how the policy is made (docs/perf.md, "Session 16",
// calls 7-14: the 64-row kernels ran, -0.3..-0.6%; the 8-row gate_up ran, no gain; the others stopped).
__device__ inline void cp_async16_ef(void* smem_dst, const void* gmem_src, uint64_t pol) {
  const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n" ::"r"(d), "l"(gmem_src), "l"(pol)
               : "memory");
}

// acc (+)= A (the BM weight rows of the 16-row groups rg[], decoded) x B (NCOLS activation rows at
// x + xoff_row[c]) over K = 32 KBp (KB: the row's k-blocks, KBp: this split-K part's). lo[m][h]: the window's
// first scale byte of row g + 8 h of group m (from the first stage); chk[m][h]: the largest b - lo seen (the row is
// exact while <= 11).
template <class C, int NCOLS>
__device__ inline void mainloop(const uint8_t* w, const uint8_t* wsc, const uint8_t* x, int KB, int KBp, const int* rg,
                                const uint32_t* xoff_row, uint8_t* smem, float (&acc)[C::MT][C::NG][4],
                                int (&lo)[C::MT][2], uint32_t (&chk)[C::MT][2]) {
#pragma unroll
  for (int m = 0; m < C::MT; ++m) {
#pragma unroll
    for (int j = 0; j < C::NG; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[m][j][i] = 0.0f;
    lo[m][0] = lo[m][1] = 0;
    chk[m][0] = chk[m][1] = 0u;
  }
#if defined(MOE_WG8_DEVICE)
  const int tid = threadIdx.x, lane = tid % kLanes, wm = tid / kLanes;
  const int g = lane / 4;
  const int nk = KBp / C::KS;
  using O = LoopOpts<C>;
  uint64_t pol = 0;
  if constexpr (O::EF) pol = policy_evict_first();
  const uint32_t rg_bytes = uint32_t(KB) * 256u;

  uint32_t woff[C::kWPer], xoff[C::kXPer > 0 ? C::kXPer : 1];
#pragma unroll
  for (int n = 0; n < C::kWPer; ++n) {
    const int i = tid + n * C::kThreads, r = i / (C::KS * 16), ch = i % (C::KS * 16);
    woff[n] = uint32_t(rg[r]) * rg_bytes + uint32_t(ch) * 16u;
  }
  const int srow = tid % C::BM;  // the scale row this thread copies (threads tid < BM)
  const uint32_t soff = (uint32_t(rg[srow / 16]) * 16u + uint32_t(srow % 16)) * uint32_t(KB);
  // Activation chunk i = tid + n kThreads: row c = (i / (8 kXChunks)) 8 + i % 8, chunk ch = (i / 8) % kXChunks.
  auto xrow_of = [&](int i) { return (i / (8 * C::kXChunks)) * 8 + i % 8; };
  auto xch_of = [&](int i) { return (i / 8) % C::kXChunks; };
#pragma unroll
  for (int n = 0; n < C::kXPer; ++n) {
    const int i = tid + n * C::kThreads;
    xoff[n] = xoff_row[xrow_of(i)] + uint32_t(xch_of(i)) * 16u;
  }

  // Copies of a stage: W (kWPer), X (kXPer, rows < NCOLS), S (1), in KS portions (P < 0: all).
  constexpr int kCopies = C::kWPer + C::kXPer + 1, kPortion = (kCopies + C::KS - 1) / C::KS;
  auto load_part = [&](auto p_tag, int slot, int kb0) {
    constexpr int P = decltype(p_tag)::value;
    uint8_t* st = smem + slot * C::kStageBytes;
    const uint8_t* wb = w + uint32_t(kb0) * 256u;
#pragma unroll
    for (int n = 0; n < C::kWPer; ++n)
      if (P < 0 || n / kPortion == P) {
        if constexpr (O::EF) cp_async16_ef(st + C::kW + (tid + n * C::kThreads) * 16, wb + woff[n], pol);
        else cp_async<16>(st + C::kW + (tid + n * C::kThreads) * 16, wb + woff[n]);
      }
    const uint8_t* xb = x + uint32_t(kb0) * 32u;
#pragma unroll
    for (int n = 0; n < C::kXPer; ++n) {
      if (P >= 0 && (C::kWPer + n) / kPortion != P) continue;
      const int i = tid + n * C::kThreads, c = xrow_of(i);
      if (NCOLS == C::BN || c < NCOLS)
        cp_async<16>(st + C::kX + (c / 8) * C::kSBO + xch_of(i) * 128 + (c % 8) * 16, xb + xoff[n]);
    }
    if ((P < 0 || (C::kWPer + C::kXPer) / kPortion == P) && (C::BM == C::kThreads || tid < C::BM))
      cp_async<C::KS>(st + C::kWs + srow * C::KS, wsc + kb0 + soff);
  };

  const uint32_t smem_s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  uint32_t a[C::NB][C::MT][4];
  uint32_t c0[C::MT][2], c1[C::MT][2];

  auto body = [&](int slot, int next_slot, int next_kb, bool has_next, int kb) {
    const uint8_t* st = smem + slot * C::kStageBytes;
    const uint64_t desc0 = XRes<C>::value
                               ? smem_desc(smem_s + XRes<C>::off, uint32_t(KB) * 256u) + uint64_t(kb * 16)
                               : smem_desc(smem_s + slot * C::kStageBytes + C::kX, C::kSBO);
    uint32_t sw[C::MT][2][C::KS / 4];  // scale words of rows g and g + 8 of each group
#pragma unroll
    for (int m = 0; m < C::MT; ++m)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const uint8_t* p = st + C::kWs + ((wm * C::MT + m) * 16 + g + 8 * h) * C::KS;
        if constexpr (C::KS == 8) {
          const uint2 v = *reinterpret_cast<const uint2*>(p);
          sw[m][h][0] = v.x;
          sw[m][h][1] = v.y;
        } else {
          sw[m][h][0] = *reinterpret_cast<const uint32_t*>(p);
        }
      }
    uint32_t wn[C::MT][2];  // PF: the weight words of the next k-block
    auto read_words = [&](int u) {
#pragma unroll
      for (int m = 0; m < C::MT; ++m) {
        const uint8_t* kb = st + C::kW + ((wm * C::MT + m) * C::KS + u) * 256;
        wn[m][0] = *reinterpret_cast<const uint32_t*>(kb + 4 * lane);
        wn[m][1] = *reinterpret_cast<const uint32_t*>(kb + 128 + 4 * lane);
      }
    };
    if constexpr (C::PF) read_words(0);
    auto kblock = [&](auto u_tag) {
      constexpr int u = decltype(u_tag)::value;
      constexpr int b = u % C::NB;
      if constexpr (!C::PF) read_words(u);
      uint32_t wc[C::MT][2];
#pragma unroll
      for (int m = 0; m < C::MT; ++m) {
        wc[m][0] = wn[m][0];
        wc[m][1] = wn[m][1];
      }
#pragma unroll
      for (int m = 0; m < C::MT; ++m) {
        const uint32_t w0 = wc[m][0], w1 = wc[m][1];
        uint32_t t0[2], t1[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint32_t bb = __byte_perm(sw[m][h][u / 4], 0u, 0x4440u + (u % 4));
          t0[h] = bb * kK0 + c0[m][h];
          t1[h] = bb * kK1 + c1[m][h];
          chk[m][h] = max(chk[m][h], bb - uint32_t(lo[m][h]));
        }
        decode8(w0, t0[0], t1[0], a[b][m][0], a[b][m][2]);
        decode8(w1, t0[1], t1[1], a[b][m][1], a[b][m][3]);
      }
      moe_wg8::wg_fence();
#pragma unroll
      for (int m = 0; m < C::MT; ++m) wgmma_e4m3<NCOLS, C::NG>(acc[m], a[b][m], desc0 + uint64_t(u * 256 / 16));
      moe_wg8::wg_commit();
      if constexpr (C::PF && u + 1 < C::KS) read_words(u + 1);
      if (O::kNoBranch || has_next) load_part(u_tag, next_slot, next_kb);
      moe_wg8::wg_wait<C::NB - 1>();
    };
    [&]<int... U>(std::integer_sequence<int, U...>) {
      (kblock(std::integral_constant<int, U>{}), ...);
    }(std::make_integer_sequence<int, C::KS>{});
  };

  constexpr int kDist = LoopDist<C>::value;
  static_assert(kDist >= 1 && kDist <= C::STAGES - 1 && (kDist == C::STAGES - 1 || C::NB - 1 <= C::KS),
                "copy distance; without the drain the groups in flight at a stage barrier must be the last stage's");
#pragma unroll
  for (int s = 0; s < kDist; ++s) {
    if (s < nk) load_part(std::integral_constant<int, -1>{}, s, s * C::KS);
    cp_commit();
  }
  for (int ks = 0; ks < nk; ++ks) {
    cp_wait<kDist - 1>();  // this thread's copies of stage ks landed
    if constexpr (kDist == C::STAGES - 1) moe_wg8::wg_wait<0>();  // this warp's wgmma reads of stage ks - 1 are done
    moe_wg8::proxy_fence();  // the landed copies -> visible to wgmma's shared-memory reads
    __syncthreads();
    const int slot = ks % C::STAGES;
    if (ks == 0) {
      // Each row's window from its first stage: the largest byte at d = 3, window d in [-5, 6].
#pragma unroll
      for (int m = 0; m < C::MT; ++m)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint8_t* p = smem + C::kWs + ((wm * C::MT + m) * 16 + g + 8 * h) * C::KS;
          uint32_t q;
          if constexpr (C::KS == 8) {
            const uint2 v = *reinterpret_cast<const uint2*>(p);
            q = __vmaxu4(v.x, v.y);
          } else {
            q = *reinterpret_cast<const uint32_t*>(p);
          }
          q = __vmaxu4(q, q >> 16);
          q = __vmaxu4(q, q >> 8);
          lo[m][h] = int(q & 0xFFu) - 8;
          c0[m][h] = kT0 - uint32_t(lo[m][h] + 5) * kK0;
          c1[m][h] = kT1 - uint32_t(lo[m][h] + 5) * kK1;
        }
    }
    const int next = ks + kDist;
    body(slot, next % C::STAGES, (O::kClampNext ? (next < nk ? next : nk - 1) : next) * C::KS, next < nk, ks * C::KS);
    cp_commit();
  }
  moe_wg8::wg_wait<0>();
#pragma unroll
  for (int m = 0; m < C::MT; ++m)
#pragma unroll
    for (int j = 0; j < C::NG; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) moe_wg8::reg_fence(acc[m][j][i]);
  cp_wait<0>();
#else
  (void)w, (void)wsc, (void)x, (void)KB, (void)rg, (void)xoff_row, (void)smem;
#if defined(__CUDA_ARCH__)
  __trap();  // built without sm_90a features: never dispatched to (needs sm_90a)
#endif
#endif
}

// The mainloop, then rref[r] / wflag[r] (block row r's reference exponent and out-of-window flag) in
// shared memory for every row, after a barrier.
template <class C, int NCOLS, int FORCE>
__device__ inline void run_mainloop(const uint8_t* w, const uint8_t* wsc, const uint8_t* x, int KB, int KBp, const int* rg,
                                    const uint32_t* xoff_row, uint8_t* smem, float (&acc)[C::MT][C::NG][4], int* rref,
                                    int* wflag) {
  int lo[C::MT][2];
  uint32_t chk[C::MT][2];
  mainloop<C, NCOLS>(w, wsc, x, KB, KBp, rg, xoff_row, smem, acc, lo, chk);
  const moe_wide16::AccIndex<C> ix;
#pragma unroll
  for (int m = 0; m < C::MT; ++m)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = ix.row(m, 2 * h);
      if (threadIdx.x % 4 == 0) {
        rref[r] = lo[m][h] + 5 - 127;
        wflag[r] = chk[m][h] > 11u || (FORCE && r % 97 == 11);
      }
    }
  __syncthreads();
}

// The operands of one exact dot product: a weight row (unshuffled e2m1 bytes w + e8m0 scales s) and a stored e4m3
// activation row x (value x 2^(flag ? its block exponent xs : ref)).
struct ExactRow {
  const uint8_t *w, *s, *x, *xs;
  bool flag;
  int ref;
  __device__ float scale(int kb) const {  // k-block kb's weight and activation scales
    return mxfp4::e8m0_value(s[kb]) * act_scale(flag ? xs[kb] : 0u);
  }
  __device__ float act_scale(uint32_t xs_byte) const {  // the activation scale, given the k-block's xs byte (used if flag)
    return numerics::exp2_f32(flag ? int(xs_byte) - 127 : ref);
  }
  // act_scale with the exponent selected by bit operations (v45's dots): a branch on flag, a global load, let the
  // compiler sink the xs byte's load into it and issue later loads after it (a second memory round trip a step).
  __device__ float act_scale_select(uint32_t xs_byte) const {
    const int fl = -int(flag);
    return numerics::exp2_f32((fl & (int(xs_byte) - 127)) | (~fl & ref));
  }
};

// One k-block (kb) of exact_dot's product, scaled: the block's 16 weight bytes and 32 activation bytes in three
// 16-byte loads (rows start 16-byte aligned: H / 2 and H are multiples of 16), then k in order from registers, the
// products exact without a decode branch (mxfp4::e2m1_value_x2p120 x e4m3_value_x2m120), in four chains.
#if defined(__USE_FAST_MATH__)
#error "moe_fp8r::exact_block needs fp32 subnormals: build without --use_fast_math (and without -ftz=true)"
#endif
__device__ inline float exact_block(const ExactRow& er, int kb) {
  const uint4 w4 = *reinterpret_cast<const uint4*>(er.w + kb * 16);
  const uint4 x0 = *reinterpret_cast<const uint4*>(er.x + kb * 32), x1 = *reinterpret_cast<const uint4*>(er.x + kb * 32 + 16);
  const uint32_t w[4] = {w4.x, w4.y, w4.z, w4.w}, x[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
  float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};  // four chains (any order: a block's sum is exact, ~13 bits)
#pragma unroll
  for (int k = 0; k < 32; ++k) {
    const int p = position(k);
    part[k % 4] = fmaf(mxfp4::e2m1_value_x2p120(w[k / 8] >> (4 * (k % 8))),
                       mxfp4::e4m3_value_x2m120(x[p / 4] >> (8 * (p % 4))), part[k % 4]);
  }
  return ((part[0] + part[1]) + (part[2] + part[3])) * er.scale(kb);
}
// Exact dot product of one ExactRow, lanes over the k-blocks, fp32.
__device__ inline float exact_dot(const ExactRow& er, int KB) {
  const int lane = threadIdx.x % kLanes;
  float sum = 0.0f;
  for (int kb = lane; kb < KB; kb += kLanes) sum += exact_block(er, kb);
#pragma unroll
  for (int o = kLanes / 2; o > 0; o >>= 1) sum += __shfl_xor(sum, o);
  return sum;
}

// The ExactRow maker of a gate_up tile (its fix-up and swiglu_requant_near): the dot product of tile row r (a gate / up
// weight row of `expert`, rg: the tile's 16-row groups) with sorted row c's activations (tok: its token).
__device__ inline auto gate_up_exact_rows(const MoeArgs& a, const Ws& ws, int expert, const int* rg, const int* tok) {
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, KB = H / 32;
  return [&a, &ws, expert, rg, tok, H, I, KB](int c, int r) {
    const int64_t n = int64_t(expert) * 2 * I + rg[r / 16] * 16 + r % 16;
    const int t = tok[c];
    return ExactRow{a.gate_up_weight + n * (H / 2), a.gate_up_weight_scale + n * KB, ws.p.x8 + int64_t(t) * H,
                    ws.p.xs + int64_t(t) * KB, ws.xr[2 * t + 1] != 0, ws.xr[2 * t]};
  };
}

// The stored form of a SwiGLU activation block (swiglu_requant): e2m1 x 2^s folded into e4m3 (d = s) when s is in
// [-8, 6] and the block is not forced, else unfolded (d = 0). A row is flagged when one of its blocks is unfolded with
// nonzero values, so a flagged row can hold both forms (its column blocks are requantized by different gate_up blocks).
// FORCE 1 forces every block of some rows, FORCE 2 one block in three of those rows (test variants). The forced rows
// are chosen by their pair index (key = sorted_pair[row]), not by the sorted row: the route places an expert's pairs
// in shared-memory atomic order, which varies from call to call, and a forced row's fix-up sums in another order
// than the wgmma, so a choice by sorted row made the forced variants' output vary with the placement.
template <int FORCE>
__device__ __forceinline__ bool a_block_forced(int64_t key, int block) {
  return FORCE != 0 && key % 41 == 3 && (FORCE != 2 || block % 3 == 1);
}
template <int FORCE>
__device__ __forceinline__ bool a_block_unfolded(int s, int64_t key, int block) {
  return s < -8 || s > 6 || a_block_forced<FORCE>(key, block);
}

// The exact dot product of one down weight row with a stored activation row (the down's fix-up): each block
// scaled by what its stored form left out (2^s unfolded, 1 folded). key: the row's pair index (a_block_forced).
// CG: the activations read through L2.
template <int FORCE, bool CG>
__device__ inline float exact_dot_a(const uint8_t* wrow, const uint8_t* srow, const uint8_t* arow, const uint8_t* asrow,
                                    int64_t key, int KB) {
  const int lane = threadIdx.x % kLanes;
  float sum = 0.0f;
  for (int kb = lane; kb < KB; kb += kLanes) {
    float part = 0.0f;
    for (int k = 0; k < 32; ++k) {
      const float wv = mxfp4::e2m1_value(uint32_t(wrow[kb * 16 + k / 2]) >> (4 * (k & 1)));
      const uint8_t xb = CG ? __ldcg(arow + kb * 32 + position(k)) : arow[kb * 32 + position(k)];
      part = fmaf(wv, mxfp4::e4m3_small_value(xb), part);
    }
    const int s = int(CG ? __ldcg(asrow + kb) : asrow[kb]) - 127;
    sum += part * mxfp4::e8m0_value(srow[kb]) * (a_block_unfolded<FORCE>(s, key, kb) ? numerics::exp2_f32(s) : 1.0f);
  }
#pragma unroll
  for (int o = kLanes / 2; o > 0; o >>= 1) sum += __shfl_xor(sum, o);
  return sum;
}

// One token's hidden row, 8 values a thread and step over QT threads (tid: the thread's index among them): up to
// kMaxJ groups of e2m1 codes (cw) with their dynamic block scale exponents (s), and the thread's largest / smallest
// exponent over its nonzero blocks (mx / mn, -100000 / 100000 where none). Shared by every fp8 path's quantizer.
template <int QT, int kMaxJ>
__device__ __forceinline__ void token_codes(const uint16_t* hrow, int tid, int n8, uint32_t (&cw)[kMaxJ], int (&s)[kMaxJ],
                                            int& mx, int& mn) {
  mx = -100000;
  mn = 100000;
#pragma unroll
  for (int j = 0; j < kMaxJ; ++j) {
    cw[j] = 0u;
    s[j] = 0;
    if (j * QT >= n8) continue;  // uniform
    const int i = tid + j * QT;
    float v[8];
    s[j] = moe_tiled::hidden8_block_scale(hrow, i, n8, v);
    const float inv = numerics::exp2_f32(-s[j]);
#pragma unroll
    for (int k = 0; k < 8; ++k) cw[j] |= numerics::f32_to_e2m1_ties_away_branchless(v[k] * inv) << (4 * k);
    int nz = (cw[j] & 0x77777777u) != 0u;
    nz |= __shfl_xor(nz, 1);
    nz |= __shfl_xor(nz, 2);
    if (i < n8 && nz) {
      mx = max(mx, s[j]);
      mn = min(mn, s[j]);
    }
  }
}

// Token t's e4m3 values (exponent R below each block's, or the block's own where flag) in position order, and its
// scale bytes; words(j, d, lo, hi) gives group j's two words of e4m3 bytes at exponent d.
template <int QT, int kMaxJ, class Words>
__device__ __forceinline__ void token_store_words(Words&& words, const int (&s)[kMaxJ], int tid, int n8, bool flag, int R,
                                                  uint8_t* x8, uint8_t* xs, int t, int H) {
#pragma unroll
  for (int j = 0; j < kMaxJ; ++j) {
    const int i = tid + j * QT;
    if (i >= n8) continue;
    const int d = flag ? 0 : s[j] - R;
    uint32_t lo, hi;
    words(j, d, lo, hi);
    const int q = i % 4;
    uint8_t* blk = x8 + int64_t(t) * H + (i / 4) * 32;
    *reinterpret_cast<uint32_t*>(blk + 4 * q) = lo;
    *reinterpret_cast<uint32_t*>(blk + 16 + 4 * q) = hi;
    if (q == 0) xs[int64_t(t) * (H / 32) + i / 4] = uint8_t(s[j] + 127);
  }
}
// ... from the e2m1 codes (token_codes).
template <int QT, int kMaxJ>
__device__ __forceinline__ void token_store(const uint32_t (&cw)[kMaxJ], const int (&s)[kMaxJ], int tid, int n8, bool flag,
                                            int R, uint8_t* x8, uint8_t* xs, int t, int H) {
  token_store_words<QT, kMaxJ>(
      [&](int j, int d, uint32_t& lo, uint32_t& hi) {
        lo = e4m3x4_of(cw[j], d);
        hi = e4m3x4_of(cw[j] >> 16, d);
      },
      s, tid, n8, flag, R, x8, xs, t, H);
}

// MOE_QUANT_FAST (moe v50): the same bytes without e2m1 codes. token_scales keeps a thread's up to kMaxJ groups of 8
// bf16 values as loaded, with their blocks' scale exponents s and the thread's largest / smallest s over nonzero blocks
// (a block is nonzero when its amax, the largest |x 2^-s|, reaches 1/4: e2m1 rounds the rest to 0); token_store's
// uint4 form rounds each x 2^-s to its e2m1 value directly (numerics::e2m1_value_ties_away: exact for bf16 values
// times a power of two), then times 2^d into e4m3: token_codes + token_store's bytes for every finite hidden state,
// at about a third of their instructions (the prologue was ALU-bound on them: docs/perf.md, section "moe_mxfp4 v50").
#if MOE_QUANT_FAST
using TokenHeld = uint4;  // what a prologue thread keeps between its scan and its stores: the values as loaded
#else
using TokenHeld = uint32_t;  // their e2m1 codes (token_codes)
#endif
template <int QT, int kMaxJ>
__device__ __forceinline__ void token_scales(const uint16_t* hrow, int tid, int n8, uint4 (&raw)[kMaxJ], int (&s)[kMaxJ],
                                             int& mx, int& mn) {
  mx = -100000;
  mn = 100000;
#pragma unroll
  for (int j = 0; j < kMaxJ; ++j) {  // every load first (measured: no change; the prologue waits on DRAM traffic)
    const int i = tid + j * QT;
    raw[j] = i < n8 ? reinterpret_cast<const uint4*>(hrow)[i] : make_uint4(0u, 0u, 0u, 0u);
  }
#pragma unroll
  for (int j = 0; j < kMaxJ; ++j) {
    s[j] = 0;
    if (j * QT >= n8) continue;  // uniform
    const int i = tid + j * QT;
    const uint32_t w[4] = {raw[j].x, raw[j].y, raw[j].z, raw[j].w};
    float amax = 0.0f;  // fmaxf skips NaN, as mxfp4::abs_for_amax does
#pragma unroll
    for (int k = 0; k < 4; ++k)
      amax = fmaxf(amax, fmaxf(fabsf(numerics::bits_f32(w[k] << 16)), fabsf(numerics::bits_f32(w[k] & 0xFFFF0000u))));
    amax = fmaxf(amax, __shfl_xor(amax, 1));
    amax = fmaxf(amax, __shfl_xor(amax, 2));
    s[j] = numerics::mxfp4_dynamic_scale_exp(amax);
    if (i < n8 && amax * numerics::exp2_f32(-s[j]) >= 0.25f) {
      mx = max(mx, s[j]);
      mn = min(mn, s[j]);
    }
  }
}

// ... from the values as loaded (token_scales).
template <int QT, int kMaxJ>
__device__ __forceinline__ void token_store(const uint4 (&raw)[kMaxJ], const int (&s)[kMaxJ], int tid, int n8, bool flag,
                                            int R, uint8_t* x8, uint8_t* xs, int t, int H) {
  token_store_words<QT, kMaxJ>(
      [&](int j, int d, uint32_t& lo_word, uint32_t& hi_word) {
        const float inv = numerics::exp2_f32(-s[j]), m = numerics::exp2_f32(d);
        const uint32_t w[4] = {raw[j].x, raw[j].y, raw[j].z, raw[j].w};
        float lo[4], hi[4];
#pragma unroll
        for (int k = 0; k < 2; ++k) {
          lo[2 * k] = numerics::e2m1_value_ties_away(numerics::bits_f32(w[k] << 16) * inv) * m;
          lo[2 * k + 1] = numerics::e2m1_value_ties_away(numerics::bits_f32(w[k] & 0xFFFF0000u) * inv) * m;
          hi[2 * k] = numerics::e2m1_value_ties_away(numerics::bits_f32(w[k + 2] << 16) * inv) * m;
          hi[2 * k + 1] = numerics::e2m1_value_ties_away(numerics::bits_f32(w[k + 2] & 0xFFFF0000u) * inv) * m;
        }
        lo_word = e4m3x4_exact(lo);
        hi_word = e4m3x4_exact(hi);
      },
      s, tid, n8, flag, R, x8, xs, t, H);
}

// The hidden states: one block (256 threads) a token, 8 values a thread and step.
template <int FORCE>
__global__ __launch_bounds__(256) void quantize_hidden(const uint16_t* hidden, int H, uint8_t* x8, uint8_t* xs,
                                                       int32_t* xr, int32_t* aflag, int rows_max) {
  constexpr int kThreadsQ = 256, kMaxJ = 4;
  __shared__ int red[2][kThreadsQ / kLanes];
  const int t = blockIdx.x, tid = threadIdx.x, n8 = H / 8;
  for (int i = blockIdx.x * kThreadsQ + tid; i < rows_max; i += gridDim.x * kThreadsQ) aflag[i] = 0;
  const uint16_t* hrow = hidden + int64_t(t) * H;
  uint32_t cw[kMaxJ];
  int s[kMaxJ];
  int mx, mn;
  token_codes<kThreadsQ>(hrow, tid, n8, cw, s, mx, mn);
  for (int o = kLanes / 2; o > 0; o >>= 1) {
    mx = max(mx, __shfl_xor(mx, o));
    mn = min(mn, __shfl_xor(mn, o));
  }
  if (tid % kLanes == 0) {
    red[0][tid / kLanes] = mx;
    red[1][tid / kLanes] = mn;
  }
  __syncthreads();
  mx = red[0][0];
  mn = red[1][0];
  for (int w = 1; w < kThreadsQ / kLanes; ++w) {
    mx = max(mx, red[0][w]);
    mn = min(mn, red[1][w]);
  }
  const bool any = mx > -100000;
  const bool flag = (any && mx - mn > 14) || (FORCE && t % 37 == 5);
  const int R = any ? mx - 6 : 0;
  token_store<kThreadsQ>(cw, s, tid, n8, flag, R, x8, xs, t, H);
  if (tid == 0) {
    xr[2 * t] = R;
    xr[2 * t + 1] = flag;
  }
}

// The block's tile: moe_wg8::route's list (T rows each, an expert's last tile shorter, the real rows
// counted from the pair list: rows = T here, padding pairs are -1).
template <class C>
__device__ inline TileR tile_of(const Ws& ws) {
  const Tile t = ws.p.tiles[blockIdx.x];
  return TileR{t.expert, t.row0, C::BN};
}

// Runs f(integral_constant<N>) with the tile's wgmma N for `rows` real rows: 64, 128, or the tile's BN where it
// is larger (moe_fp8r2's 160-row tiles).
template <class C, class F>
__device__ inline void dispatch_cols(int rows, F&& f) {
  if (rows <= 64) f(std::integral_constant<int, 64>{});
  else if constexpr (C::BN <= 128) f(std::integral_constant<int, 128>{});
  else if (rows <= 128) f(std::integral_constant<int, 128>{});
  else f(std::integral_constant<int, C::BN>{});
}

template <class C>
constexpr int gate_up_smem() {
  return C::kPipeBytes > C::BN * (C::BM + 4) * 4 ? C::kPipeBytes : C::BN * (C::BM + 4) * 4;
}

// One item of swiglu_requant: row c's 8 columns from nq (of kHalf: a quarter of a 32-value block), SwiGLU, bf16
// rounding, the block's amax over the 4 lanes of its quarters (an aligned group of 4 lanes, all of them here), e2m1
// codes, two 4-byte stores in position order; blocks outside the e4m3 window flagged for the exact fix-up. With a
// NearList, the items holding candidate values (mxfp4_near::near_candidate) are listed for swiglu_requant_near.
struct NearList;
template <class C, int FORCE>
__device__ __forceinline__ void requant_item(const float* tile_f, const int* tok, int row0, int n0, int I, const Ws& ws,
                                             int c, int nq, NearList* near);
// requant_math's results: an item's e2m1 codes, block scale exponent and amax, whether the block has a nonzero
// code, and which of its values are near-midpoint candidates (when asked).
struct ReqVals {
  uint32_t q, mask;
  int s, nz;
  float amax;
};
template <class C>
__device__ __forceinline__ ReqVals requant_math(const float* tile_f, int c, int nq, bool want_mask);
template <class C, int FORCE>
__device__ __forceinline__ void requant_store(const ReqVals& v, const int* tok, int row0, int n0, int I, const Ws& ws,
                                              int c, int nq, NearList* near);

#if MOE_NEAR_STATS
// Diagnostics (v42s): how far the fp8 values of the recomputed entries were from the exact ones, and what the pass
// costs. [0]: entries, [1]: bf16 roundings that differed, [2]: the largest midpoint_distance of such an exact value,
// [3]: tiles over kMax, [4]: tiles, [5]: tiles with entries, [6]: clock cycles of the first pass (thread 0, summed over
// tiles), [7]: cycles from the list to the end (tiles with entries), [8 + b]: entries with |x - exact x| / |exact x|
// in [2^(b - 40), 2^(b - 39)) (b 0: below 2^-40, exact included); [56] / [57]: thread 0's cycles in the
// requantization loop (swiglu_requant, or the first pass) and their count; [58]: cycles from the list to the dot
// products' end (tiles with entries).
__device__ unsigned long long near_stats[64];
#endif

// SwiGLU, bf16 rounding and requantization of the fp32 tile [BN][BM + 4] (kHalf gate columns, then kHalf up) into
// e4m3 a: 8 consecutive columns a thread (requant_item), two items a step; with a NearList, swiglu_requant_near's first
// pass. ~25k cycles a 64-row tile on the H200 (docs/perf.md, section "moe_mxfp4 v42", calls 3 / 4).
template <class C, int FORCE, int kNear = -1>  // kNear 0 / 1: whether near is null, known at compile time (v46)
__device__ __forceinline__ void swiglu_requant(const float* tile_f, const int* tok, int row0, int n0, int I, const Ws& ws,
                                              NearList* near = nullptr) {
  const bool want_mask = kNear < 0 ? near != nullptr : kNear != 0;
  (void)want_mask;
  constexpr int kQuarters = C::BM / 2 / 8, kItems = C::BN * kQuarters;
#if MOE_NEAR_STATS
  const long long t0 = clock64();
#endif
#if MOE_REQ_GROUP
  // One item a step, the loop rolled: the loop is bound by its instruction count, and 2 / 5 / 10 items computed before
  // their stores were slower (docs/perf.md, section "moe_mxfp4 v45", calls 1-2).
  static_assert(MOE_REQ_GROUP == 1, "MOE_REQ_GROUP: 0 or 1");
  static_assert(kItems % C::kThreads == 0, "whole steps: every lane of a group of 4 in every shuffle");
#pragma unroll 1
  for (int it = threadIdx.x; it < kItems; it += C::kThreads) {
    const ReqVals v = requant_math<C>(tile_f, it / kQuarters, (it % kQuarters) * 8, want_mask);
    requant_store<C, FORCE>(v, tok, row0, n0, I, ws, it / kQuarters, (it % kQuarters) * 8, near);
  }
#else
#pragma unroll 2
  for (int it = threadIdx.x; it < kItems; it += C::kThreads)
    requant_item<C, FORCE>(tile_f, tok, row0, n0, I, ws, it / kQuarters, (it % kQuarters) * 8, near);
#endif
#if MOE_NEAR_STATS
  if (threadIdx.x == 0) {
    atomicAdd(&near_stats[56], (unsigned long long)(clock64() - t0));
    atomicAdd(&near_stats[57], 1ull);
  }
#endif
}

#if MOE_NEAR_BAND
// The values of a tile that must be exact (mxfp4_near::flip_step within MOE_NEAR_BAND units of a deciding midpoint,
// mxfp4_near::must_be_exact at MOE_NEAR_MIN_STEP): (c << 16) | column, up to kMax; more fall back to the whole tile.
struct NearList {
  static constexpr int kMax = 128, kCandMax = 256;
  int n, ncand;
  uint32_t at[kMax];
  float dot[2 * kMax];          // the exact gate (2 i) and up (2 i + 1) values of entry i
  uint32_t cand[kCandMax];      // items with candidate values: (c << 16) | (nq << 8) | 8-bit mask of the values
                                // (MOE_NEAR_VALUES: candidate values, (c << 16) | column)
  float cand_amax[kCandMax];    // their block's largest bf16 |value|
};
#endif

// requant_item's arithmetic (loads from the tile and the shuffles of its group of 4 lanes, no stores); ReqVals above.
template <class C>
__device__ __forceinline__ ReqVals requant_math(const float* tile_f, int c, int nq, bool want_mask) {
  constexpr int kHalf = C::BM / 2, kStride = C::BM + 4;
  const float* gp = tile_f + c * kStride + nq;
  const float4 g0 = *reinterpret_cast<const float4*>(gp), g1 = *reinterpret_cast<const float4*>(gp + 4);
  const float4 u0 = *reinterpret_cast<const float4*>(gp + kHalf), u1 = *reinterpret_cast<const float4*>(gp + kHalf + 4);
  const float gv[8] = {g0.x, g0.y, g0.z, g0.w, g1.x, g1.y, g1.z, g1.w};
  const float uv[8] = {u0.x, u0.y, u0.z, u0.w, u1.x, u1.y, u1.z, u1.w};
  float xv[8], amax = 0.0f;
  ReqVals v;
  v.mask = 0u;
#if MOE_REQ_FAST && MOE_NEAR_BAND && defined(__CUDA_ARCH__)
  // v45: in the first pass of the near-midpoint rule, SiLU with __expf and __fdividef (error <= 2^-21 of the value for
  // |gate| < 8, inside the band the listed values' rule covers: a value it moves across a bf16 rounding that decides
  // the stored block is listed, fully tested and recomputed exactly with expf and IEEE division; docs/perf.md, section
  // "moe_mxfp4 v45"), and bf16 rounding by cvt.rn.bf16x2 (numerics::f32_to_bf16's result for every non-NaN float).
  if (want_mask) {
    float p[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) {
#if MOE_REQ_FAST >= 2
      // v46: ex2 / rcp without the range handling of __expf / __fdividef (ftz: a result below 2^-126 is 0, which
      // changes nothing here: 1 + e and g x rcp(1 + e) round the same way for such e).
      float e, r;
      asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(gv[k] * -1.44269504088896341f));
      asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(1.0f + e));
      p[k] = gv[k] * r * uv[k];
#else
      p[k] = __fdividef(gv[k], 1.0f + __expf(-gv[k])) * uv[k];
#endif
#if MOE_NEAR_MMA
      v.mask |= uint32_t(mxfp4_near::near_candidate_finite(p[k], MOE_NEAR_BAND)) << k;
#else
      v.mask |= uint32_t(mxfp4_near::near_candidate(p[k], MOE_NEAR_BAND)) << k;
#endif
    }
#pragma unroll
    for (int k = 0; k < 8; k += 2) {
      uint32_t b2;
      asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(b2) : "f"(p[k + 1]), "f"(p[k]));
      xv[k] = __uint_as_float(b2 << 16);
      xv[k + 1] = __uint_as_float(b2 & 0xFFFF0000u);
      amax = fmaxf(amax, fmaxf(mxfp4::abs_for_amax(xv[k]), mxfp4::abs_for_amax(xv[k + 1])));
    }
  } else
#endif
  {
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const float silu = gv[k] / (1.0f + expf(-gv[k]));
#if MOE_NEAR_BAND
      // Candidates only (integer operations): ~1 value in 256. The full test (flip_step, the row's weight) runs after
      // the loop on the listed values: inline here, its code doubled the loop's time.
      if (want_mask) {
#if MOE_NEAR_MMA  // v43: the three-operation filter (the full test after the loop repeats near_candidate)
        v.mask |= uint32_t(mxfp4_near::near_candidate_finite(silu * uv[k], MOE_NEAR_BAND)) << k;
#else
        v.mask |= uint32_t(mxfp4_near::near_candidate(silu * uv[k], MOE_NEAR_BAND)) << k;
#endif
      }
#endif
      xv[k] = numerics::bf16_to_f32(numerics::f32_to_bf16(silu * uv[k]));
      amax = fmaxf(amax, mxfp4::abs_for_amax(xv[k]));
    }
  }
  (void)want_mask;
  amax = fmaxf(amax, __shfl_xor(amax, 1));
  amax = fmaxf(amax, __shfl_xor(amax, 2));
  v.amax = amax;
  v.s = numerics::mxfp4_dynamic_scale_exp(amax);
  const float inv = numerics::exp2_f32(-v.s);
  v.q = 0u;
#if MOE_REQ_FAST >= 2 && MOE_NEAR_BAND && defined(__CUDA_ARCH__)
  if (want_mask) {  // v46: the first pass's values are finite (no NaN test), and the block's largest value decides nz
#pragma unroll
    for (int k = 0; k < 8; ++k) v.q |= numerics::f32_to_e2m1_ties_away_finite(xv[k] * inv) << (4 * k);
    v.nz = amax * inv >= 0.25f;  // its code is nonzero (codes grow with |x|; 0.25 rounds away to code 1)
    return v;
  }
#endif
#pragma unroll
  for (int k = 0; k < 8; ++k) v.q |= numerics::f32_to_e2m1_ties_away_branchless(xv[k] * inv) << (4 * k);
  v.nz = (v.q & 0x77777777u) != 0u;
  v.nz |= __shfl_xor(v.nz, 1);
  v.nz |= __shfl_xor(v.nz, 2);
  return v;
}

// requant_item's stores: the candidates listed (near), the e4m3 values, the block's scale byte and the row's flag.
template <class C, int FORCE>
__device__ __forceinline__ void requant_store(const ReqVals& v, const int* tok, int row0, int n0, int I, const Ws& ws,
                                              int c, int nq, NearList* near) {
  if (tok[c] < 0) return;  // padding rows: never read back
  const int64_t row = row0 + c;
#if MOE_NEAR_BAND
  if (near != nullptr && v.mask != 0u) {
#if MOE_NEAR_VALUES
    int i = atomicAdd(&near->ncand, __popc(v.mask));
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      if (!((v.mask >> k) & 1u)) continue;
      if (i < NearList::kCandMax) {
        near->cand[i] = (uint32_t(c) << 16) | uint32_t(nq + k);
        near->cand_amax[i] = v.amax;
      }
      ++i;
    }
#else
    const int i = atomicAdd(&near->ncand, 1);
    if (i < NearList::kCandMax) {
      near->cand[i] = (uint32_t(c) << 16) | (uint32_t(nq) << 8) | v.mask;
      near->cand_amax[i] = v.amax;
    }
#endif
  }
#else
  (void)near;
#endif
  const int64_t key = FORCE ? int64_t(ws.p.sorted_pair[row]) : row;  // the forced rows' choice (a_block_forced)
  const bool unfolded = a_block_unfolded<FORCE>(v.s, key, (n0 + nq) / 32);
  const bool flag = (v.nz && unfolded) || a_block_forced<FORCE>(key, (n0 + nq) / 32);
  const int d = unfolded ? 0 : v.s;
  uint8_t* dst = ws.p.a8 + row * I + n0 + (nq & ~31) + 4 * ((nq / 8) % 4);
  uint32_t elo, ehi;
#if MOE_REQ_FAST && defined(MOE_WG8_DEVICE)
  if (d >= -5) {  // the mainloop's byte-permute table (decode8, valid for d in [-5, 6]): the same bytes as e4m3x4_of
    decode8(v.q, kT0 + uint32_t(d) * kK0, kT1 + uint32_t(d) * kK1, elo, ehi);
  } else
#endif
  {
    elo = e4m3x4_of(v.q, d);
    ehi = e4m3x4_of(v.q >> 16, d);
  }
  *reinterpret_cast<uint32_t*>(dst) = elo;
  *reinterpret_cast<uint32_t*>(dst + 16) = ehi;
  if (nq % 32 == 0) {
    ws.p.as[row * (I / 32) + (n0 + nq) / 32] = uint8_t(v.s + 127);
    if (flag) ws.aflag[row] = 1;
  }
}

template <class C, int FORCE>
__device__ __forceinline__ void requant_item(const float* tile_f, const int* tok, int row0, int n0, int I, const Ws& ws,
                                             int c, int nq, NearList* near) {
  requant_store<C, FORCE>(requant_math<C>(tile_f, c, nq, near != nullptr), tok, row0, n0, I, ws, c, nq, near);
}

#if MOE_NEAR_BAND && MOE_NEAR_MMA
// The listed values' exact dot products on the tensor unit (moe v43). A warp step takes one listed value (entry e: its
// gate and up rows, rows(c, r) as for exact_dot) and 8 U k-blocks: lane (g, t) holds k-block kb0 + 8 u + g's values
// k = 8t .. 8t + 7 (gate and up weight words t; activation words t and 4 + t in moe_fp8r::position's order: 16-byte
// runs across the 4 lanes of a block, so a load touches 2 lines) as A's rows g (gate) and g + 8 (up) and B's column g
// of two f16 m16n8k16 mma.sync with fp32 accumulation (e2m1 x 2^-14 by lowp_pack's e2m1x4_to_f16x4_scaled, e4m3 by
// cvt). D[g][g] and D[g + 8][g] are k-block g's gate and up sums: every f16 product is exact and a block's sum (~13
// bits wide) is exact in the fp32 accumulation; D's other entries are unused (the tensor unit has the time; the loads
// and the decode are what cost). The diagonal lanes (t = g / 2) scale their blocks by ExactRow::scale's value x 2^14
// into fp32 sums, as exact_block does; two shared float atomics a step (the order varies; see swiglu_requant_near).
template <int kWarps, int U, class RowsF>
__device__ __forceinline__ void near_dots_mma(const uint32_t* at, float* dot, int n, int KB, int half, RowsF rows) {
  static_assert(kLanes == 32, "NVIDIA m16n8k16 lane geometry");
  constexpr int kChunk = 8 * U;  // k-blocks a warp step
  const int warp = threadIdx.x / kLanes, lane = threadIdx.x % kLanes, g = lane / 4, t = lane % 4;
  const int chunks = (KB + kChunk - 1) / kChunk;
  for (int j = warp; j < n * chunks; j += kWarps) {
    const int e = j / chunks, kb0 = j % chunks * kChunk;
    const int c = int(at[e] >> 16), col = int(at[e] & 0xFFFFu);
    const ExactRow gr = rows(c, col), ur = rows(c, half + col);  // the same activations (x, xs, flag, ref)
    uint32_t xw[U][2], gw[U], uw[U];
    float gs[U], us[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int kb = kb0 + 8 * u + g, kbc = min(kb, KB - 1);
      xw[u][0] = *reinterpret_cast<const uint32_t*>(gr.x + kbc * 32 + 4 * t);
      xw[u][1] = *reinterpret_cast<const uint32_t*>(gr.x + kbc * 32 + 16 + 4 * t);
      gw[u] = *reinterpret_cast<const uint32_t*>(gr.w + kbc * 16 + 4 * t);
      uw[u] = *reinterpret_cast<const uint32_t*>(ur.w + kbc * 16 + 4 * t);
      const uint32_t gsb = gr.s[kbc], usb = ur.s[kbc], xsb = gr.xs[kbc];  // all loaded: none waits on gr.flag
#if MOE_REQ_FAST  // v45: no branch, so every load of the step is issued before the first use
      const float xscale = gr.act_scale_select(xsb) * float(kb < KB);
#else
      const float xscale = kb < KB ? gr.act_scale(xsb) : 0.0f;
#endif
      gs[u] = mxfp4::e8m0_value(gsb) * xscale;  // = ExactRow::scale(kb), a power of two
      us[u] = mxfp4::e8m0_value(usb) * xscale;
    }
    float gsum = 0.0f, usum = 0.0f;
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const uint2 g03 = e2m1x4_to_f16x4_scaled(gw[u]), g47 = e2m1x4_to_f16x4_scaled(gw[u] >> 16);
      const uint2 u03 = e2m1x4_to_f16x4_scaled(uw[u]), u47 = e2m1x4_to_f16x4_scaled(uw[u] >> 16);
      const uint32_t a0[4] = {g03.x, u03.x, g03.y, u03.y}, a1[4] = {g47.x, u47.x, g47.y, u47.y};
      const uint32_t b0[2] = {fp8x2_to_f16x2_hw(xw[u][0]), fp8x2_to_f16x2_hw(xw[u][0] >> 16)};
      const uint32_t b1[2] = {fp8x2_to_f16x2_hw(xw[u][1]), fp8x2_to_f16x2_hw(xw[u][1] >> 16)};
      const float zero[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      float d[4];
      moe_mma::mma_f16_16x8x16(d, a0, b0, zero);
      moe_mma::mma_f16_16x8x16(d, a1, b1, d);
      gsum = fmaf((g & 1 ? d[1] : d[0]) * 0x1p14f, gs[u], gsum);
      usum = fmaf((g & 1 ? d[3] : d[2]) * 0x1p14f, us[u], usum);
    }
    if (t != g / 2) gsum = usum = 0.0f;
#pragma unroll
    for (int o = kLanes / 2; o > 0; o >>= 1) {
      gsum += __shfl_xor(gsum, o);
      usum += __shfl_xor(usum, o);
    }
    if (lane == 0) {
      atomicAdd(&dot[2 * e], gsum);
      atomicAdd(&dot[2 * e + 1], usum);
    }
  }
}
#endif

#if MOE_NEAR_BAND
// swiglu_requant listing the items with candidate values, their full test (mxfp4_near::flip_step, must_be_exact),
// then the listed values' g and u recomputed exactly and their blocks requantized again. rows(c, r): the ExactRow of
// tile row r's (gate / up weight row) dot product with row c's activations (the fix-up's). The listed values' dot
// products are spread over the whole block as (dot product, k-block) items (float atomics into shared memory: the sums
// are exact, so their order does not matter). A block requantized again stores its final values after a barrier;
// blocks listed twice are written twice with equal bytes. An aflag set by the first pass stays: a row flagged without
// need takes the down's exact fix-up, exact either way.
template <class C, int FORCE, class RowsF>
__device__ __forceinline__ void swiglu_requant_near(float* tile_f, const int* tok, int row0, int n0, int I, int KB,
                                                    const Ws& ws, const float* row_weight, RowsF rows) {
  constexpr int kHalf = C::BM / 2, kStride = C::BM + 4;
  constexpr int kWarps = C::kThreads / kLanes;
  static_assert(kHalf <= 256 && C::BN <= 65536, "NearList packs (c << 16) | (nq << 8) | mask and (c << 16) | column");
  __shared__ NearList near;
  if (threadIdx.x == 0) near.n = near.ncand = 0;
  __syncthreads();
#if MOE_NEAR_STATS
  const long long t0 = clock64();
#endif
  swiglu_requant<C, FORCE, MOE_REQ_FAST >= 2 ? 1 : -1>(tile_f, tok, row0, n0, I, ws, &near);
  __syncthreads();
  // The candidates' full test (requant_item's values again from the tile: the same operations, the same bits).
  const int nc = near.ncand;
#if MOE_NEAR_VALUES
  for (int i = threadIdx.x; i < min(nc, NearList::kCandMax); i += C::kThreads) {  // one value a thread
    const uint32_t cd = near.cand[i];
    const int c = int(cd >> 16), col = int(cd & 0xFFFFu);
    const float amax = near.cand_amax[i];
    const float g = tile_f[c * kStride + col], u = tile_f[c * kStride + kHalf + col];
    const float silu = g / (1.0f + expf(-g));
    const float step = mxfp4_near::flip_step(silu * u, amax, numerics::mxfp4_dynamic_scale_exp(amax), MOE_NEAR_BAND);
    if (mxfp4_near::must_be_exact(step, row_weight[c], MOE_NEAR_MIN_STEP)) {
      const int e = atomicAdd(&near.n, 1);
      if (e < NearList::kMax) near.at[e] = (uint32_t(c) << 16) | uint32_t(col);
    }
  }
#else
  for (int i = threadIdx.x; i < min(nc, NearList::kCandMax); i += C::kThreads) {
    const uint32_t cd = near.cand[i];
    const int c = int(cd >> 16), nq = int((cd >> 8) & 0xFFu);
    const float amax = near.cand_amax[i], w = row_weight[c];
    const int s = numerics::mxfp4_dynamic_scale_exp(amax);
    for (int k = 0; k < 8; ++k) {
      if (!((cd >> k) & 1u)) continue;
      const float g = tile_f[c * kStride + nq + k], u = tile_f[c * kStride + kHalf + nq + k];
      const float silu = g / (1.0f + expf(-g));
      if (mxfp4_near::must_be_exact(mxfp4_near::flip_step(silu * u, amax, s, MOE_NEAR_BAND), w, MOE_NEAR_MIN_STEP)) {
        const int e = atomicAdd(&near.n, 1);
        if (e < NearList::kMax) near.at[e] = (uint32_t(c) << 16) | uint32_t(nq + k);
      }
    }
  }
#endif
  // Never seen: more candidates than the list holds, so the whole tile exact (atomicMax: other threads' atomicAdds on
  // near.n may still be in flight).
  if (nc > NearList::kCandMax && threadIdx.x == 0) atomicMax(&near.n, NearList::kMax + 1);
  __syncthreads();
  const int n = near.n;
#if MOE_NEAR_STATS
  const long long t1 = clock64();
  if (threadIdx.x == 0) {
    atomicAdd(&near_stats[4], 1ull);
    atomicAdd(&near_stats[5], n > 0 ? 1ull : 0ull);
    atomicAdd(&near_stats[6], (unsigned long long)(t1 - t0));
  }
  struct Clock {  // the cycles from here to the return (tiles with entries)
    long long t;
    __device__ ~Clock() {
      if (threadIdx.x == 0) atomicAdd(&near_stats[7], (unsigned long long)(clock64() - t));
    }
  } clock_rest{n > 0 ? t1 : clock64()};
#endif
  if (n == 0) return;
  const int warp = threadIdx.x / kLanes, lane = threadIdx.x % kLanes;
  if (n > NearList::kMax) {  // never seen: every value of the tile exact, one warp a value, then the whole tile again
    for (int idx = warp; idx < C::BN * C::BM; idx += kWarps) {
      const int c = idx / C::BM, r = idx % C::BM;
      if (tok[c] < 0) continue;
      const ExactRow er = rows(c, r);
      const float v = exact_dot(er, KB);
      if (lane == 0) tile_f[c * kStride + r] = v;
    }
#if MOE_NEAR_STATS
    if (threadIdx.x == 0) atomicAdd(&near_stats[3], 1ull);
#endif
    __syncthreads();
    swiglu_requant<C, FORCE>(tile_f, tok, row0, n0, I, ws);
    return;
  }
  for (int d = threadIdx.x; d < 2 * n; d += C::kThreads) near.dot[d] = 0.0f;
  __syncthreads();
#if MOE_NEAR_MMA
  near_dots_mma<C::kThreads / kLanes, MOE_NEAR_MMA>(near.at, near.dot, n, KB, kHalf, rows);
#else
  // Items i = d KB + kb (dot product d: entry d / 2, gate or up; k-block kb), a thread kU of them a step: their 48
  // bytes each loaded first, then exact_block's products over four words at a time, rotating the registers so that the
  // loop stays rolled (code run once a tile is fetched cold: fully unrolled, 4 items were ~30 KB of instructions and
  // ran at a quarter of the issue rate). A warp whose 32 items are one dot product's adds their sum once.
  constexpr int kU = 4;
  const int items = 2 * n * KB;
  for (int i0 = threadIdx.x - lane; i0 < items; i0 += C::kThreads * kU) {
    uint32_t w[kU][4], x[kU][8];
    float scale[kU], v[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int i = i0 + u * C::kThreads + lane, d = min(i, items - 1) / KB, kb = min(i, items - 1) % KB;
      const uint32_t at = near.at[d >> 1];
      const ExactRow er = rows(int(at >> 16), (d & 1) * kHalf + int(at & 0xFFFFu));
      const uint4 w4 = *reinterpret_cast<const uint4*>(er.w + kb * 16);
      const uint4 x0 = *reinterpret_cast<const uint4*>(er.x + kb * 32), x1 = *reinterpret_cast<const uint4*>(er.x + kb * 32 + 16);
      w[u][0] = w4.x, w[u][1] = w4.y, w[u][2] = w4.z, w[u][3] = w4.w;
      x[u][0] = x0.x, x[u][1] = x0.y, x[u][2] = x0.z, x[u][3] = x0.w, x[u][4] = x1.x, x[u][5] = x1.y, x[u][6] = x1.z;
      x[u][7] = x1.w;
      scale[u] = i < items ? er.scale(kb) : 0.0f;
    }
    float part[kU][4] = {};
#pragma unroll 1
    for (int j = 0; j < 4; ++j) {  // k = 8 j + t: weight word j, activation words j (t < 4) and 4 + j (exact_block)
#pragma unroll
      for (int u = 0; u < kU; ++u) {
#pragma unroll
        for (int t = 0; t < 8; ++t) {
          part[u][t & 3] = fmaf(mxfp4::e2m1_value_x2p120(w[u][0] >> (4 * t)),
                                mxfp4::e4m3_value_x2m120((t < 4 ? x[u][0] : x[u][4]) >> (8 * (t & 3))), part[u][t & 3]);
        }
        w[u][0] = w[u][1], w[u][1] = w[u][2], w[u][2] = w[u][3];
        x[u][0] = x[u][1], x[u][1] = x[u][2], x[u][2] = x[u][3], x[u][4] = x[u][5], x[u][5] = x[u][6], x[u][6] = x[u][7];
      }
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) v[u] = ((part[u][0] + part[u][1]) + (part[u][2] + part[u][3])) * scale[u];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int w0 = i0 + u * C::kThreads, i = w0 + lane;
      if (w0 >= items) break;  // uniform over the warp
      const int d0 = w0 / KB, d1 = min(w0 + kLanes - 1, items - 1) / KB;
      if (d0 == d1) {
        float t = v[u];
#pragma unroll
        for (int o = kLanes / 2; o > 0; o >>= 1) t += __shfl_xor(t, o);
        if (lane == 0) atomicAdd(&near.dot[d0], t);
      } else if (i < items) {
        atomicAdd(&near.dot[i / KB], v[u]);
      }
    }
  }
#endif
  __syncthreads();
#if MOE_NEAR_STATS
  if (threadIdx.x == 0) atomicAdd(&near_stats[58], (unsigned long long)(clock64() - t1));
#endif
  for (int e = threadIdx.x; e < n; e += C::kThreads) {
    const int c = int(near.at[e] >> 16), col = int(near.at[e] & 0xFFFFu);
    const float g = near.dot[2 * e], u = near.dot[2 * e + 1];
#if MOE_NEAR_STATS
    const float g0 = tile_f[c * kStride + col], u0 = tile_f[c * kStride + kHalf + col];
    const float x0 = g0 / (1.0f + expf(-g0)) * u0, x = g / (1.0f + expf(-g)) * u;
    const float rel = x != 0.0f ? fabsf(x0 - x) / fabsf(x) : 0.0f;
    const int b = rel < 0x1p-40f ? 0 : min(47, 40 + int(floorf(log2f(rel))));
    atomicAdd(&near_stats[0], 1ull);
    atomicAdd(&near_stats[8 + b], 1ull);
    if (numerics::f32_to_bf16(x0) != numerics::f32_to_bf16(x)) {
      atomicAdd(&near_stats[1], 1ull);
      atomicMax(&near_stats[2], (unsigned long long)mxfp4_near::midpoint_distance(x));
    }
#endif
    tile_f[c * kStride + col] = g;
    tile_f[c * kStride + kHalf + col] = u;
  }
  __syncthreads();
  // Again, the listed values' blocks: 8 a warp and step, the 4 lanes of a group one block's quarters (every lane of
  // the warp takes part in the shuffles: groups past the list repeat its last block).
  for (int base = warp * 8; base < n; base += kWarps * 8) {
    const uint32_t at = near.at[min(base + lane / 4, n - 1)];
    const int c = int(at >> 16), nq = int(at & 0xFFFFu) / 32 * 32 + (lane % 4) * 8;
    requant_item<C, FORCE>(tile_f, tok, row0, n0, I, ws, c, nq, nullptr);
  }
}
#endif

// The gate_up kernel's work once its tile is known (shared with moe_fp8r2::gate_up): the tile's rows and weight
// row groups, the mainloop into fp32, the exact fix-up of flagged (row, column) pairs, then SwiGLU, bf16 rounding
// and requantization into e4m3 values + e8m0 scales. col() gives the block's column block; the shared arrays are
// the kernel's own.
template <class C, int FORCE, class TileT, class ColF>
__device__ __forceinline__ void gate_up_tile(const MoeArgs& a, const Ws& ws, const TileT& tile, ColF col, uint8_t* smem,
                                             int* rg, uint32_t* xoff, float* colmul, int* tok, int* xflag, int* wflag,
                                             int* rref) {
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, T = a.cfg.total_top_k, KB = H / 32;
  constexpr int kHalf = C::BM / 2;
  const int n0 = col() * kHalf;
  for (int i = threadIdx.x; i < C::BM / 16; i += C::kThreads) rg[i] = (i < kHalf / 16 ? n0 : I + n0 - kHalf) / 16 + i;
#if MOE_NEAR_BAND
  __shared__ float near_weight[C::BN];  // the rows' routing weights (swiglu_requant_near's filter)
#endif
  bool real = false;
  if (threadIdx.x < C::BN) {
    const int c = threadIdx.x;
    const int p = c < tile.rows ? ws.p.sorted_pair[tile.row0 + c] : -1;
    const int token = p >= 0 ? p / T : 0;  // padding rows borrow token 0; never written back
    xoff[c] = uint32_t(token) * uint32_t(H);
    colmul[c] = numerics::exp2_f32(ws.xr[2 * token]);
    tok[c] = p >= 0 ? token : -1;
    xflag[c] = p >= 0 && ws.xr[2 * token + 1];
    real = p >= 0;
#if MOE_NEAR_BAND
    near_weight[c] = p >= 0 ? a.topk_weights[p] : 0.0f;  // loaded under the mainloop
#endif
  }
  const int nreal = __syncthreads_count(real);
  float acc[C::MT][C::NG][4];
  const uint8_t* wq = a.gate_up_weight_shuffled + int64_t(tile.expert) * 2 * I * (H / 2);
  const uint8_t* wsc = a.gate_up_weight_scale + int64_t(tile.expert) * 2 * I * KB;
  dispatch_cols<C>(nreal, [&](auto n_tag) {
    run_mainloop<C, decltype(n_tag)::value, FORCE>(wq, wsc, ws.p.x8, KB, KB, rg, xoff, smem, acc, rref, wflag);
  });
  // (run_mainloop ends with a barrier: the pipeline buffers become the fp32 tile [BN][BM + 4])

  constexpr int kStride = C::BM + 4;
  float* tile_f = reinterpret_cast<float*>(smem);
  const moe_wide16::AccIndex<C> ix;
  bool mine = false;
#pragma unroll
  for (int m = 0; m < C::MT; ++m) {
    float rowmul[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = ix.row(m, 2 * h);
      rowmul[h] = numerics::exp2_f32(rref[r]);
      mine |= wflag[r] != 0;
    }
#pragma unroll
    for (int j = 0; j < C::NG; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int c = ix.col(j, i);
        tile_f[c * kStride + ix.row(m, i)] = acc[m][j][i] * rowmul[i >> 1] * colmul[c];
      }
  }
  if (threadIdx.x < C::BN) mine |= xflag[threadIdx.x] != 0;
  const auto rows = gate_up_exact_rows(a, ws, tile.expert, rg, tok);
  if (__syncthreads_or(mine)) {
    const int warp = threadIdx.x / kLanes;
    for (int idx = warp; idx < C::BN * C::BM; idx += C::kThreads / kLanes) {
      const int c = idx / C::BM, r = idx % C::BM;
      if (tok[c] < 0 || !(wflag[r] || xflag[c])) continue;
      const ExactRow er = rows(c, r);
      const float v = exact_dot(er, KB);
      if (threadIdx.x % kLanes == 0) tile_f[c * kStride + r] = v;
    }
    __syncthreads();
  }

#if MOE_NEAR_BAND
  swiglu_requant_near<C, FORCE>(tile_f, tok, tile.row0, n0, I, KB, ws, near_weight, rows);
#else
  swiglu_requant<C, FORCE>(tile_f, tok, tile.row0, n0, I, ws);
#endif
}

// Stage 1. grid (tiles_max, I / (BM / 2)): BM/2 gate + BM/2 up rows x 128 sorted rows, SwiGLU, bf16
// rounding, dynamic MXFP4 requantization into e4m3 a (position order, reference 0).
template <class C, int FORCE>
__global__ __launch_bounds__(C::kThreads, 1) void gate_up(MoeArgs a, Ws ws) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ int rg[C::BM / 16];
  __shared__ uint32_t xoff[C::BN];
  __shared__ float colmul[C::BN];
  __shared__ int tok[C::BN];
  __shared__ int xflag[C::BN];
  __shared__ int wflag[C::BM];
  __shared__ int rref[C::BM];
  if (int(blockIdx.x) >= *ws.p.n_tiles) return;
  const TileR tile = tile_of<C>(ws);
  gate_up_tile<C, FORCE>(a, ws, tile, [] { return int(blockIdx.y); }, smem, rg, xoff, colmul, tok, xflag, wflag, rref);
}

// The down's epilogue once the mainloop of the block's column block n0 .. n0 + BM is done (run_mainloop's rref /
// wflag written, its last barrier passed): the rows' reference exponents applied, the weighted rows into y (staged
// through smem, the pipeline's buffers, with MOE_Y_STAGED), the exact fix-up of flagged (row, column) pairs. Shared
// by down_tile and moe_fp8r2::down_xr. CGD: the fix-up's activation rows read through L2.
template <class C, int FORCE, bool CGD, class TileT>
__device__ __forceinline__ void down_store(const MoeArgs& a, const Ws& ws, const TileT& tile, int n0,
                                           float (&acc)[C::MT][C::NG][4], uint8_t* smem, const int* pair,
                                           const float* weight, const int* aflg, const int* wflag, const int* rref,
                                           int nreal) {
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, KB = I / 32;
  const moe_wide16::AccIndex<C> ix;
  bool mine = false;
#pragma unroll
  for (int m = 0; m < C::MT; ++m)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = ix.row(m, 2 * h);
      const float rowmul = numerics::exp2_f32(rref[r]);
      mine |= wflag[r] != 0;
#pragma unroll
      for (int j = 0; j < C::NG; ++j) {
        acc[m][j][2 * h] *= rowmul;
        acc[m][j][2 * h + 1] *= rowmul;
      }
    }
#if defined(MOE_Y_STAGED) && defined(MOE_Y_BF16X2) && defined(MOE_Y_BF16_CVT) && defined(__CUDA_ARCH__) && \
    __CUDA_ARCH__ >= 800
  // v51: the weighted rows through shared memory (the pipeline buffers, free after run_mainloop's last barrier; with
  // resident activations, everything before them).
  static_assert(moe_tiled::y_stage_bytes<C>() <= (XRes<C>::value ? XRes<C>::off : C::kPipeBytes),
                "the staged y tile fits the pipeline buffers");
  moe_tiled::store_weighted_rows_staged<C>(ix, acc, pair, weight, ws.p.y, H, n0, smem, nreal);
#else
  moe_tiled::store_weighted_rows<C>(ix, acc, pair, weight, ws.p.y, H, n0);
#endif
  if (threadIdx.x < C::BN) mine |= aflg[threadIdx.x] != 0;
  if (__syncthreads_or(mine)) {
    const int warp = threadIdx.x / kLanes;
    for (int idx = warp; idx < C::BN * C::BM; idx += C::kThreads / kLanes) {
      const int c = idx / C::BM, r = idx % C::BM;
      if (pair[c] < 0 || !(wflag[r] || aflg[c])) continue;
      const int64_t n = int64_t(tile.expert) * H + n0 + r;
      const int64_t row = tile.row0 + c;
      const uint8_t* wrow = a.down_weight + n * (I / 2);
      const uint8_t* srow = a.down_weight_scale + n * KB;
      const float v = exact_dot_a<FORCE, CGD>(wrow, srow, ws.p.a8 + row * I, ws.p.as + row * KB, pair[c], KB);
      if (threadIdx.x % kLanes == 0) ws.p.y[int64_t(pair[c]) * H + n0 + r] = weight[c] * v;
    }
  }
}

// A down block's tile columns (threads < BN, then a barrier): activation row offsets, pairs, routing weights and row
// flags; returns the real columns. Rows past the tile's: its first row, never stored. CGF: the flags read through L2.
template <class C, bool CGF, class TileT>
__device__ __forceinline__ int down_rows(const MoeArgs& a, const Ws& ws, const TileT& tile, int I, uint32_t* xoff,
                                         int* pair, float* weight, int* aflg) {
  bool real = false;
  if (threadIdx.x < C::BN) {
    const int c = threadIdx.x;
    const int row = tile.row0 + (c < tile.rows ? c : 0);
    const int p = c < tile.rows ? ws.p.sorted_pair[row] : -1;
    xoff[c] = uint32_t(row) * uint32_t(I);
    pair[c] = p;
    weight[c] = p >= 0 ? a.topk_weights[p] : 0.0f;
    aflg[c] = p >= 0 && (CGF ? __ldcg(ws.aflag + row) : ws.aflag[row]);
    real = p >= 0;
  }
  return __syncthreads_count(real);
}

// The down kernel's work once its tile is known (shared with moe_fp8r2::down): the tile's pairs and weights, the
// mainloop into fp32, the weighted rows into y, the exact fix-up of flagged (row, column) pairs. col() gives the
// block's column block; CGF / CGD: the row flags / the fix-up's activation rows read through L2.
template <class C, int FORCE, bool CGF, bool CGD, class TileT, class ColF>
__device__ __forceinline__ void down_tile(const MoeArgs& a, const Ws& ws, const TileT& tile, ColF col, uint8_t* smem,
                                          int* rg, uint32_t* xoff, int* pair, float* weight, int* aflg, int* wflag,
                                          int* rref) {
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, KB = I / 32;
  const int n0 = col() * C::BM;
  for (int i = threadIdx.x; i < C::BM / 16; i += C::kThreads) rg[i] = n0 / 16 + i;
  const int nreal = down_rows<C, CGF>(a, ws, tile, I, xoff, pair, weight, aflg);
  float acc[C::MT][C::NG][4];
  const uint8_t* wq = a.down_weight_shuffled + int64_t(tile.expert) * H * (I / 2);
  const uint8_t* wsc = a.down_weight_scale + int64_t(tile.expert) * H * KB;
  dispatch_cols<C>(nreal, [&](auto n_tag) {
    run_mainloop<C, decltype(n_tag)::value, FORCE>(wq, wsc, ws.p.a8, KB, KB, rg, xoff, smem, acc, rref, wflag);
  });

  down_store<C, FORCE, CGD>(a, ws, tile, n0, acc, smem, pair, weight, aflg, wflag, rref, nreal);
}

// Stage 2. grid (tiles_max, H / BM): y[pair, n] = weight * (a W_down^T).
template <class C, int FORCE>
__global__ __launch_bounds__(C::kThreads, 1) void down(MoeArgs a, Ws ws) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ int rg[C::BM / 16];
  __shared__ uint32_t xoff[C::BN];
  __shared__ int pair[C::BN];
  __shared__ float weight[C::BN];
  __shared__ int aflg[C::BN];
  __shared__ int wflag[C::BM];
  __shared__ int rref[C::BM];
  if (int(blockIdx.x) >= *ws.p.n_tiles) return;
  const TileR tile = tile_of<C>(ws);
  down_tile<C, FORCE, false, false>(a, ws, tile, [] { return blockIdx.y; }, smem, rg, xoff, pair, weight, aflg,
                                    wflag, rref);
}

inline bool supports(const MoeConfig& c) {
  return c.d_expert % 128 == 0 && c.d_hidden % 256 == 0 && (c.d_hidden / 32) % 8 == 0 && (c.d_expert / 32) % 8 == 0 &&
         c.d_hidden <= 8192 && c.n_routed_experts + c.n_shared_experts <= 1024;
}

// The whole layer: quantizer, route (tiles of up to G1::BN rows), gate_up, down, combine.
template <class G1, class G2, int FORCE = 0>
void launch(const MoeArgs& a) {
  static_assert(G1::BN == G2::BN, "one tile list");
  constexpr int T = G1::BN;
  if (a.workspace_size < workspace_bytes(a.cfg, G1::BN)) throw std::invalid_argument("moe_mxfp4: workspace too small");
  if (!supports(a.cfg)) throw std::invalid_argument("moe_mxfp4: shape not supported by the fp8 kernels");
  Ws ws;
  carve(a.cfg, G1::BN, a.workspace, &ws);
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(a.cfg, T);
  quantize_hidden<FORCE><<<unsigned(s.M), 256>>>(a.hidden_states, int(s.H), ws.p.x8, ws.p.xs, ws.xr, ws.aflag,
                                                 int(s.rows_max));
  moe_pipeline::check(hipGetLastError(), "fp8 quantize hidden");
  moe_wg8::route(a, ws.p, T);
  constexpr int sm1 = gate_up_smem<G1>(), sm2 = G2::kPipeBytes;
  moe_wg8::allow_smem(gate_up<G1, FORCE>, sm1);
  moe_wg8::allow_smem(down<G2, FORCE>, sm2);
  gate_up<G1, FORCE><<<dim3(unsigned(s.tiles_max), unsigned(s.I / (G1::BM / 2))), G1::kThreads, sm1>>>(a, ws);
  moe_pipeline::check(hipGetLastError(), "fp8 gate_up");
  down<G2, FORCE><<<dim3(unsigned(s.tiles_max), unsigned(s.H / G2::BM)), G2::kThreads, sm2>>>(a, ws);
  moe_pipeline::check(hipGetLastError(), "fp8 down");
  moe_pipeline::launch_combine(a, ws.p);
}

// The measured configuration (docs/perf.md, section "moe_mxfp4 v23", call 6): 128-row tiles (T rows each but an
// expert's last), 256 weight rows (8 warps x two 16-row groups) x 128 tile rows (wgmma N 64 for tiles
// with <= 64 real rows), 8 k-blocks a stage, 3 stages (198 KB), the weight words one k-block ahead.
using G1 = Cfg<8, 2, 8, 3, 2, true, 128>;
using G2 = Cfg<8, 2, 8, 3, 2, true, 128>;

// The path as one unit for a composed variant: the 64-row shapes of v20 (bs x k / routed > 40).
// FORCE: the exact fix-up forced on some rows (test variants).
template <class A, class B, int FORCE = 0>
struct PathOf {
  static bool applies(const MoeConfig& c) {
    return c.bs * c.n_experts_per_token / c.n_routed_experts > 40 && supports(c);
  }
  static size_t workspace_bytes(const MoeConfig& c) { return moe_fp8r::workspace_bytes(c, A::BN); }
  static void launch(const MoeArgs& a) { moe_fp8r::launch<A, B, FORCE>(a); }
};
using Path = PathOf<G1, G2>;  // measured (v23, v25)
#endif  // MOE_WG8_HOST

}  // namespace
}  // namespace moe_fp8r
