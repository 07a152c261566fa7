// 64-row MoE tiles (bs x k / routed experts > 40: E 33 bs 512, d 512 and 2048) on the Hopper warpgroup
// MMA with f16 operands: moe_wgmma_rows.h's (v14's) kernels with v12's cheaper f16 weight decode.
//  - A (weights, registers): a word of 8 e2m1 codes -> four f16 pairs of value x 2^-14 (moe_wg8::decode_f16:
//    bytes s << 7 | m << 1 from two shift/mask LOP3s, one byte permute a pair), then one exact f16x2
//    multiply by 2^(s + 14) of the row's e8m0 scale s (the multiplier from the scale byte b in two ops:
//    byte permute, then (b - 98) << 10 by one multiply-add). 13 ops a word + 2 for the multiplier
//    instead of v13/v14's ~20 + 2 (bf16: 4 x shift, mask, sign move, bf16 multiply).
//    Exact while b is in [104, 128] (s in [-23, 1]: the multiplier is a normal f16 and every value x 2^s
//    is an f16, normal or subnormal).
//  - B (activations, shared memory, the tensor unit reads them): f16 of the e2m1 value x 2^s of their
//    dynamic MXFP4 scale, exact for s in [-23, 13]; a block outside that range is stored as its raw e2m1
//    value (x 2^0) and its byte in the exponent array (ws.xs for the hidden states, ws.as for the SwiGLU
//    output; one byte per 32 values) is s + 128, otherwise 0.
//  - Inside each 32-value block value k = 8 t + j is stored at position
//    16 (j & 1) + 8 ((j >> 2) & 1) + 2 t + ((j >> 1) & 1) (decode_f16's pairs (j, j + 2) meet B there).
//  - The per-stage fallback (v13's mechanism): every thread checks the scale row and the exponent row it
//    copied itself, the stage barrier or-reduces (__syncthreads_or); a stage with a weight scale outside
//    [104, 128] or any activation block outside the f16 range converts its activation slot in place to
//    v14's bf16-folded values (f16 -> fp32 x 2^s -> bf16: the same bits as v14's encode) and runs v14's
//    bf16 decode (Bf16Folded::decode, any scale) and bf16 wgmma. The benchmark data never takes it.
//  - Products of both paths are exact and the k order and grouping are v14's, so the fp32 sums are v14's
//    (exact here: few significant bits), hence its output.
// Copies, stage shapes and spreading, route and combine as moe_wgmma_rows.h.
// Measured (docs/perf-moe-f16w.md): bit-identical, but the f16 gate_up is slower than v14's bf16 one on
// the H200 (d 2048: ~1090 vs 1037 us; latency-bound with 8 warps per SM, not decode-bound); the f16 down
// is equal (d 2048) or slightly faster (K = 512).
#pragma once
#include <utility>

#include "problems/common/moe_wgmma_rows.h"

namespace moe_wgf16 {
namespace {

using moe_pipeline::Tile;
using moe_pipeline::Workspace;
using moe_tile::Bf16Folded;

// Position of value k (0..31) of a 32-value block in the stored f16 activation row.
HD constexpr int position32(int k) {
  const int t = k >> 3, j = k & 7;
  return 16 * (j & 1) + 8 * ((j >> 2) & 1) + 2 * t + ((j >> 1) & 1);
}
constexpr int kMinExp = -23, kMaxExp = 13;  // activation scale exponents exact as folded f16

#if defined(MOE_WG8_HOST)
using moe_tile::cp_async;
using moe_tile::cp_commit;
using moe_tile::cp_wait;
constexpr int kLanes = moe_tile::kMmaLanes;

// moe_wgrows::Cfg's shape plus the activation exponent bytes of a stage (BN rows x KS).
// FORCE (tests of the fallback only): 1 runs every stage on the bf16 fallback, 2 also stores every
// activation block raw with its exponent byte.
// PF: the next k-block's weight words are read from shared memory before the wgmma wait (the wait's
// memory clobber otherwise puts every k-block's loads right before their decode).
// GK: k-blocks decoded per wgmma group (GK x MT x 2 wgmma a group, NB buffers of GK k-blocks' A).
template <int WM_, int MT_, int BN_, int KS_, int STAGES_, int MIN_BLOCKS_ = 1, int XROWS_ = 4, int NB_ = 2, int FORCE_ = 0,
          bool PF_ = true, int GK_ = 1>
struct Cfg {
  static constexpr int FORCE = FORCE_;
  static constexpr bool PF = PF_;
  static constexpr int GK = GK_;
  static_assert(KS_ % (NB_ * GK_) == 0, "the A buffer index restarts with each stage");
  static_assert(GK_ == 1 || !PF_, "prefetch only with one k-block a group");
  static constexpr int XROWS = XROWS_;  // tile rows a warp's activation copy covers (8: 64 bytes a row; 4: 128)
  static constexpr int NB = NB_;
  static constexpr int WM = WM_, MT = MT_, NG = BN_ / 8, KS = KS_, STAGES = STAGES_, kMinBlocks = MIN_BLOCKS_;
  static constexpr int kThreads = WM * kLanes;
  static constexpr int BM = WM * MT * 16, BN = BN_;
  static constexpr int kXChunks = KS * 4;
  static constexpr int kSBO = KS * 4 * 128;
  static constexpr int kW = 0;
  static constexpr int kWs = kW + BM * KS * 16;
  static constexpr int kX = kWs + moe_tile::align16(BM * KS);
  static constexpr int kXe = kX + BN * KS * 64;        // [BN][KS] activation exponent bytes
  static constexpr int kStageBytes = kXe + moe_tile::align16(BN * KS);
  static constexpr int kPipeBytes = STAGES * kStageBytes;
  static constexpr int kWPer = BM * KS / kThreads;
  static constexpr int kSPer = (BM + kThreads - 1) / kThreads;
  static constexpr int kXPer = BN * kXChunks / kThreads;
  static_assert(WM % 4 == 0, "whole warpgroups");
  static_assert(KS % NB == 0, "the A buffer index restarts with each stage");
  static_assert(BN == 32 || BN == 64, "wgmma N");
  static_assert(BN <= kThreads, "one exponent row a thread");
  static_assert(KS == 4 || KS == 8, "a scale row slice is one 4- or 8-byte copy");
  static_assert(BM * KS % kThreads == 0 && (BM % kThreads == 0 || kThreads % BM == 0) && BN * kXChunks % kThreads == 0, "copy split");
};

#if defined(MOE_WG8_DEVICE)
template <int NG>
__device__ inline void wg_mma_f16(float (&d)[NG][4], const uint32_t (&a)[4], uint64_t desc);

template <>
__device__ inline void wg_mma_f16<8>(float (&d)[8][4], const uint32_t (&a)[4], uint64_t desc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
      "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, "
      "{%32,%33,%34,%35}, %36, p, 1, 1, 0;\n}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),
        "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]),
        "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]),
        "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]),
        "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "n"(1));
}

template <>
__device__ inline void wg_mma_f16<4>(float (&d)[4][4], const uint32_t (&a)[4], uint64_t desc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, "
      "{%16,%17,%18,%19}, %20, p, 1, 1, 0;\n}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),
        "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]),
        "+f"(d[3][2]), "+f"(d[3][3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "n"(1));
}

__device__ inline uint32_t mul_f16x2(uint32_t x, uint32_t y) {  // exact here (both powers-of-two scaled)
  uint32_t r;
  asm("mul.rn.f16x2 %0, %1, %2;\n" : "=r"(r) : "r"(x), "r"(y));
  return r;
}
__device__ inline float f16_to_f32(uint32_t h) {
  float f;
  asm("cvt.f32.f16 %0, %1;\n" : "=f"(f) : "h"(static_cast<unsigned short>(h)));
  return f;
}
#endif

#if defined(MOE_WG8_DEVICE)
__device__ inline uint32_t f32_to_f16_bits(float f) {  // exact for the values used here
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;\n" : "=h"(h) : "f"(f));
  return h;
}
#else
__device__ inline uint32_t f32_to_f16_bits(float) { return 0u; }
#endif

// f16x2 2^(b - 127 + 14) of scale byte U % 4 of word (b in [99, 128]): the exponent field b - 98.
template <int U>
__device__ inline uint32_t mult16_of(uint32_t word) {
  constexpr uint32_t sel = 0x4040u | uint32_t(U % 4) * 0x0101u;
  return (__byte_perm(word, 0u, sel) - 0x00620062u) * 1024u;  // one IMAD: x * 1024 - 0x88018800
}

// True when any of the KS weight scale bytes at p is outside [104, 128].
template <int KS>
__device__ inline bool any_out_f16(const uint8_t* p) {
  uint32_t f = 0;
#pragma unroll
  for (int i = 0; i < KS / 4; ++i) {
    const uint32_t v = reinterpret_cast<const uint32_t*>(p)[i];
    const uint32_t l = v & 0x7F7F7F7Fu;
    f |= (v & (l + 0x7F7F7F7Fu)) | (~v & ~(l + 0x18181818u));  // bit 7: b > 128, or b < 104
  }
  return (f & 0x80808080u) != 0;
}
template <int KS>
__device__ inline bool any_nonzero(const uint8_t* p) {
  uint32_t f = 0;
#pragma unroll
  for (int i = 0; i < KS / 4; ++i) f |= reinterpret_cast<const uint32_t*>(p)[i];
  return f != 0;
}

// acc = A (BM weight rows of the 16-row groups rg[]) x B (BN activation rows at x + xoff_row[c], their
// exponent bytes at xe + eoff_row[c]), fp32, accumulator layout of moe_wide16.
template <class C>
__device__ inline void mainloop(const uint8_t* w, const uint8_t* wsc, const uint8_t* x, const uint8_t* xe, int KB,
                                const int* rg, const uint32_t* xoff_row, const uint32_t* eoff_row, uint8_t* smem,
                                float (&acc)[C::MT][C::NG][4]) {
#pragma unroll
  for (int m = 0; m < C::MT; ++m)
#pragma unroll
    for (int j = 0; j < C::NG; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[m][j][i] = 0.0f;
#if defined(MOE_WG8_DEVICE)
  const int tid = threadIdx.x, lane = tid % kLanes, wm = tid / kLanes;
  const int g = lane / 4;
  const int nk = KB / C::KS;
  const uint32_t rg_bytes = uint32_t(KB) * 256u;

  uint32_t woff[C::kWPer], soff[C::kSPer], xoff[C::kXPer];
#pragma unroll
  for (int n = 0; n < C::kWPer; ++n) {
    const int i = tid + n * C::kThreads, r = i / (C::KS * 16), ch = i % (C::KS * 16);
    woff[n] = uint32_t(rg[r]) * rg_bytes + uint32_t(ch) * 16u;
  }
#pragma unroll
  for (int n = 0; n < C::kSPer; ++n) {
    const int r = (tid + n * C::kThreads) % C::BM;
    soff[n] = (uint32_t(rg[r / 16]) * 16u + uint32_t(r % 16)) * uint32_t(KB);
  }
  auto xrow_of = [&](int i) {
    if constexpr (C::XROWS == 8) return (i / (8 * C::kXChunks)) * 8 + i % 8;
    else return (i / (4 * C::kXChunks)) * 4 + (i / 8) % 4;
  };
  auto xch_of = [&](int i) {
    if constexpr (C::XROWS == 8) return (i / 8) % C::kXChunks;
    else return ((i / 32) % (C::kXChunks / 8)) * 8 + i % 8;
  };
#pragma unroll
  for (int n = 0; n < C::kXPer; ++n) {
    const int i = tid + n * C::kThreads;
    xoff[n] = xoff_row[xrow_of(i)] + uint32_t(xch_of(i)) * 16u;
  }
  const uint32_t eoff = tid < C::BN ? eoff_row[tid] : 0u;

  // Portion P (of KS) of a stage's copies: j = [P per, (P + 1) per) of the list W, X, S, E.
  constexpr int kCopies = C::kWPer + C::kXPer + C::kSPer + 1, kPortion = (kCopies + C::KS - 1) / C::KS;
  auto load_part = [&](auto p_tag, int slot, int kb0) {
    constexpr int P = decltype(p_tag)::value;
    uint8_t* st = smem + slot * C::kStageBytes;
    const uint8_t* wb = w + uint32_t(kb0) * 256u;
#pragma unroll
    for (int n = 0; n < C::kWPer; ++n)
      if (n / kPortion == P) cp_async<16>(st + C::kW + (tid + n * C::kThreads) * 16, wb + woff[n]);
    const uint8_t* xb = x + uint32_t(kb0) * 64u;
#pragma unroll
    for (int n = 0; n < C::kXPer; ++n) {
      if ((C::kWPer + n) / kPortion != P) continue;
      const int i = tid + n * C::kThreads, c = xrow_of(i);
      cp_async<16>(st + C::kX + (c / 8) * C::kSBO + xch_of(i) * 128 + (c % 8) * 16, xb + xoff[n]);
    }
    const uint8_t* sb = wsc + kb0;
#pragma unroll
    for (int n = 0; n < C::kSPer; ++n)
      if ((C::kWPer + C::kXPer + n) / kPortion == P && (C::BM % C::kThreads == 0 || tid < C::BM))
        cp_async<C::KS>(st + C::kWs + (tid + n * C::kThreads) * C::KS, sb + soff[n]);
    if constexpr ((C::kWPer + C::kXPer + C::kSPer) / kPortion == P) {
      if (tid < C::BN) cp_async<C::KS>(st + C::kXe + tid * C::KS, xe + eoff + kb0);
    }
  };
  auto load = [&](int slot, int kb0) {
    [&]<int... U>(std::integer_sequence<int, U...>) {
      (load_part(std::integral_constant<int, U>{}, slot, kb0), ...);
    }(std::make_integer_sequence<int, C::KS>{});
  };

  const uint32_t smem_s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  uint32_t a[C::NB][C::GK][C::MT][2][4];

  auto body = [&](int slot, auto slow_tag, int next_slot, int next_kb, bool has_next) {
    constexpr bool kSlow = decltype(slow_tag)::value;
    const uint8_t* st = smem + slot * C::kStageBytes;
    const uint64_t desc0 = moe_wgrows::smem_desc(smem_s + slot * C::kStageBytes + C::kX, C::kSBO);
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
    uint32_t wbuf[2][C::MT][2];  // PF: the weight words of k-blocks u (u % 2) and u + 1
    auto read_words = [&](int u, uint32_t (&wd)[C::MT][2]) {
#pragma unroll
      for (int m = 0; m < C::MT; ++m) {
        const uint8_t* kb = st + C::kW + ((wm * C::MT + m) * C::KS + u) * 256;
        wd[m][0] = *reinterpret_cast<const uint32_t*>(kb + 4 * lane);
        wd[m][1] = *reinterpret_cast<const uint32_t*>(kb + 128 + 4 * lane);
      }
    };
    if constexpr (C::PF) read_words(0, wbuf[0]);
    auto kblock = [&](auto u_tag) {
      constexpr int u = decltype(u_tag)::value;
      constexpr int b = (u / C::GK) % C::NB, q = u % C::GK;
      if constexpr (!C::PF) read_words(u, wbuf[u % 2]);
#pragma unroll
      for (int m = 0; m < C::MT; ++m) {
        const uint32_t w0 = wbuf[u % 2][m][0];
        const uint32_t w1 = wbuf[u % 2][m][1];
        uint32_t lo[4], hi[4];
        if constexpr (kSlow) {  // v14's bf16 pairs (j, j + 4), at the f16 layout's positions
          uint32_t l[4], h[4];
          Bf16Folded::decode(w0, (sw[m][0][u / 4] >> (8 * (u % 4))) & 0xFFu, l);
          Bf16Folded::decode(w1, (sw[m][1][u / 4] >> (8 * (u % 4))) & 0xFFu, h);
          // bf16 pair j holds nibbles (j, j + 4); the f16 layout wants (0, 2), (4, 6), (1, 3), (5, 7).
          lo[0] = __byte_perm(l[0], l[2], 0x5410u);
          lo[1] = __byte_perm(l[0], l[2], 0x7632u);
          lo[2] = __byte_perm(l[1], l[3], 0x5410u);
          lo[3] = __byte_perm(l[1], l[3], 0x7632u);
          hi[0] = __byte_perm(h[0], h[2], 0x5410u);
          hi[1] = __byte_perm(h[0], h[2], 0x7632u);
          hi[2] = __byte_perm(h[1], h[3], 0x5410u);
          hi[3] = __byte_perm(h[1], h[3], 0x7632u);
        } else {
          moe_wg8::decode_f16(w0, lo);
          moe_wg8::decode_f16(w1, hi);
          const uint32_t m0 = mult16_of<u>(sw[m][0][u / 4]), m1 = mult16_of<u>(sw[m][1][u / 4]);
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            lo[k] = mul_f16x2(lo[k], m0);
            hi[k] = mul_f16x2(hi[k], m1);
          }
        }
        a[b][q][m][0][0] = lo[0];
        a[b][q][m][0][1] = hi[0];
        a[b][q][m][0][2] = lo[1];
        a[b][q][m][0][3] = hi[1];
        a[b][q][m][1][0] = lo[2];
        a[b][q][m][1][1] = hi[2];
        a[b][q][m][1][2] = lo[3];
        a[b][q][m][1][3] = hi[3];
      }
      if constexpr (q + 1 < C::GK) {  // the group is issued after its last k-block's decode
        if (has_next) load_part(u_tag, next_slot, next_kb);
        return;
      }
      // Materialise every A register before the fence (ptxas otherwise sinks the slow path's byte
      // permutes between the wgmma instructions and serialises them with injected arrives).
#pragma unroll
      for (int qq = 0; qq < C::GK; ++qq)
#pragma unroll
        for (int m = 0; m < C::MT; ++m)
#pragma unroll
          for (int s = 0; s < 2; ++s)
#pragma unroll
            for (int i = 0; i < 4; ++i) moe_wg8::reg_fence(a[b][qq][m][s][i]);
      moe_wg8::wg_fence();
#pragma unroll
      for (int qq = 0; qq < C::GK; ++qq)
#pragma unroll
        for (int m = 0; m < C::MT; ++m)
#pragma unroll
          for (int s = 0; s < 2; ++s) {
            const uint64_t d = desc0 + uint64_t((4 * (u - q + qq) + 2 * s) * 128 / 16);
            if constexpr (kSlow) moe_wgrows::wg_mma_bf16<C::NG>(acc[m], a[b][qq][m][s], d);
            else wg_mma_f16<C::NG>(acc[m], a[b][qq][m][s], d);
          }
      moe_wg8::wg_commit();
      if constexpr (C::PF && u + 1 < C::KS) read_words(u + 1, wbuf[(u + 1) % 2]);
      if (has_next) load_part(u_tag, next_slot, next_kb);
      moe_wg8::wg_wait<C::NB - 1>();
    };
    [&]<int... U>(std::integer_sequence<int, U...>) {
      (kblock(std::integral_constant<int, U>{}), ...);
    }(std::make_integer_sequence<int, C::KS>{});
  };

  // The slow stage's activations: f16 (x 2^s, or raw with the exponent byte) -> v14's bf16-folded bits.
  auto to_bf16 = [&](int slot) {
    uint8_t* st = smem + slot * C::kStageBytes;
#pragma unroll
    for (int n = 0; n < C::kXPer; ++n) {
      const int i = tid + n * C::kThreads, c = xrow_of(i), ch = xch_of(i);
      uint4* p = reinterpret_cast<uint4*>(st + C::kX + (c / 8) * C::kSBO + ch * 128 + (c % 8) * 16);
      const uint32_t eb = st[C::kXe + c * C::KS + ch / 4];
      const float mul = eb ? numerics::exp2_f32(int(eb) - 128) : 1.0f;
      uint4 v = *p;
      uint32_t r[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const uint32_t b0 = numerics::f32_to_bf16(f16_to_f32(r[q] & 0xFFFFu) * mul);
        const uint32_t b1 = numerics::f32_to_bf16(f16_to_f32(r[q] >> 16) * mul);
        r[q] = b0 | (b1 << 16);
      }
      *p = make_uint4(r[0], r[1], r[2], r[3]);
    }
    moe_wg8::proxy_fence();  // the generic writes -> visible to wgmma's shared-memory reads
    __syncthreads();
  };

#pragma unroll
  for (int s = 0; s < C::STAGES - 1; ++s) {
    if (s < nk) load(s, s * C::KS);
    cp_commit();
  }
  for (int ks = 0; ks < nk; ++ks) {
    cp_wait<C::STAGES - 2>();  // this thread's copies of stage ks landed
    moe_wg8::wg_wait<0>();     // this warp's wgmma reads of stage ks - 1 are done
    moe_wg8::proxy_fence();    // the landed copies -> visible to wgmma's shared-memory reads
    const int slot = ks % C::STAGES;
    const uint8_t* st = smem + slot * C::kStageBytes;
    bool wide = false;
#pragma unroll
    for (int n = 0; n < C::kSPer; ++n)
      if (C::BM % C::kThreads == 0 || tid < C::BM) wide |= any_out_f16<C::KS>(st + C::kWs + (tid + n * C::kThreads) * C::KS);
    if (tid < C::BN) wide |= any_nonzero<C::KS>(st + C::kXe + tid * C::KS);
    const bool slow = __syncthreads_or(wide || C::FORCE > 0) != 0;
    const int next = ks + C::STAGES - 1;
    if (slow) {
      to_bf16(slot);
      body(slot, std::true_type{}, next % C::STAGES, next * C::KS, next < nk);
    } else {
      body(slot, std::false_type{}, next % C::STAGES, next * C::KS, next < nk);
    }
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
  (void)w, (void)wsc, (void)x, (void)xe, (void)KB, (void)rg, (void)xoff_row, (void)eoff_row, (void)smem;
#if defined(__CUDA_ARCH__)
  __trap();  // built without sm_90a features: never dispatched to (needs sm_90a)
#endif
#endif
}

// f16 bits of an activation with e2m1 code and block scale exponent s (raw value outside the range).
template <int FORCE = 0>
__device__ inline uint32_t act_f16(uint32_t code, int s) {
  const bool in = s >= kMinExp && s <= kMaxExp && FORCE < 2;
  return f32_to_f16_bits(mxfp4::e2m1_value(code) * (in ? numerics::exp2_f32(s) : 1.0f));
}
template <int FORCE = 0>
__device__ inline uint8_t act_exp_byte(int s) {
  return s >= kMinExp && s <= kMaxExp && FORCE < 2 ? 0 : uint8_t(s + 128);
}

// The hidden states as f16-folded activations (position32 order) and their exponent bytes.
template <int FORCE>
__global__ void quantize_hidden_f16(const uint16_t* hidden, int64_t n8, uint8_t* x16, uint8_t* xe) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  float v[8];
  const int s = moe_tiled::hidden8_block_scale(hidden, i, n8, v);
  if (i >= n8) return;
  const float mul = numerics::exp2_f32(-s);
  // Values 8 q + j, 8 q + j + 2 (j in 0, 1, 4, 5; q = i % 4) -> the pair at position32(8 q + j).
  uint16_t* blk = reinterpret_cast<uint16_t*>(x16) + (i / 4) * 32;
  const int q = int(i % 4);
#pragma unroll
  for (int jj = 0; jj < 4; ++jj) {
    const int j = (jj & 1) + 4 * (jj >> 1);
    const uint32_t lo = act_f16<FORCE>(moe_wg8::e2m1_code(v[j], mul), s);
    const uint32_t hi = act_f16<FORCE>(moe_wg8::e2m1_code(v[j + 2], mul), s);
    *reinterpret_cast<uint32_t*>(blk + position32(8 * q + j)) = lo | (hi << 16);
  }
  if (q == 0) xe[i / 4] = act_exp_byte<FORCE>(s);
}

// gate_up's epilogue: the fp32 tile (acc in moe_wide16's layout) -> SwiGLU, bf16 rounding, dynamic MXFP4
// requantization into f16-folded a (position32 order) and its exponent bytes.
template <class C, int FORCE>
__device__ inline void gate_up_epilogue(const float (&acc)[C::MT][C::NG][4], uint8_t* smem, const Tile& tile, int n0, int I,
                                        Workspace& ws) {
  __syncthreads();  // the pipeline buffers become the fp32 tile [BN][BM + 4]
  constexpr int kStride = C::BM + 4, kHalf = C::BM / 2;
  float* tile_f = reinterpret_cast<float*>(smem);
  const moe_wide16::AccIndex<C> ix;
#pragma unroll
  for (int m = 0; m < C::MT; ++m)
#pragma unroll
    for (int j = 0; j < C::NG; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) tile_f[ix.col(j, i) * kStride + ix.row(m, i)] = acc[m][j][i];
  __syncthreads();

  constexpr int kB = mxfp4::kBlock, kGroups = C::BN * (kHalf / kB);
  const int lane = threadIdx.x % kB, KBI = I / kB;
  for (int grp = threadIdx.x / kB; grp < kGroups; grp += C::kThreads / kB) {
    const int c = grp / (kHalf / kB), n = (grp % (kHalf / kB)) * kB + lane;
    const float gate = tile_f[c * kStride + n], up = tile_f[c * kStride + kHalf + n];
    int s;
    const float xv = moe_tiled::swiglu_bf16_block_scale(gate, up, s);
    const int64_t row = tile.row0 + c;
    const int col = n0 + (n & ~31) + position32(n & 31);
    reinterpret_cast<uint16_t*>(ws.a8)[row * I + col] = uint16_t(act_f16<FORCE>(mxfp4::quantize_dynamic_code(xv, s), s));
    if (lane == 0) ws.as[row * KBI + (n0 + n) / kB] = act_exp_byte<FORCE>(s);
  }
}

// Stage 1. grid (tiles_max, I / (BM / 2)): BM/2 gate + BM/2 up rows x BN sorted rows on this header's f16
// mainloop, then gate_up_epilogue.
template <class C>
__global__ __launch_bounds__(C::kThreads, C::kMinBlocks) void gate_up(MoeArgs a, Workspace ws) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ int rg[C::BM / 16];
  __shared__ uint32_t xoff[C::BN], eoff[C::BN];
  if (int(blockIdx.x) >= *ws.n_tiles) return;
  const Tile tile = ws.tiles[blockIdx.x];
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, T = a.cfg.total_top_k, KB = H / 32;
  constexpr int kHalf = C::BM / 2;
  const int n0 = blockIdx.y * kHalf;
  for (int i = threadIdx.x; i < C::BM / 16; i += C::kThreads) rg[i] = (i < kHalf / 16 ? n0 : I + n0 - kHalf) / 16 + i;
  for (int c = threadIdx.x; c < C::BN; c += C::kThreads) {
    const int p = ws.sorted_pair[tile.row0 + c];
    const uint32_t token = p >= 0 ? uint32_t(p / T) : 0u;  // padding rows borrow token 0; never written back
    xoff[c] = token * uint32_t(H) * 2u;
    eoff[c] = token * uint32_t(KB);
  }
  __syncthreads();
  float acc[C::MT][C::NG][4];
  mainloop<C>(a.gate_up_weight_shuffled + int64_t(tile.expert) * 2 * I * (H / 2),
              a.gate_up_weight_scale + int64_t(tile.expert) * 2 * I * KB, ws.x8, ws.xs, KB, rg, xoff, eoff, smem, acc);
  gate_up_epilogue<C, C::FORCE>(acc, smem, tile, n0, I, ws);
}

// Stage 1 on v14's bf16 mainloop (moe_wgrows::mainloop, bf16-folded hidden states from
// moe_wgrows::quantize_hidden_wg) with this header's f16 epilogue, for the f16 down kernel.
template <class CW>
__global__ __launch_bounds__(CW::kThreads, CW::kMinBlocks) void gate_up_bf16(MoeArgs a, Workspace ws) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ int rg[CW::BM / 16];
  __shared__ uint32_t xoff[CW::BN];
  if (int(blockIdx.x) >= *ws.n_tiles) return;
  const Tile tile = ws.tiles[blockIdx.x];
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, T = a.cfg.total_top_k, KB = H / 32;
  constexpr int kHalf = CW::BM / 2;
  const int n0 = blockIdx.y * kHalf;
  for (int i = threadIdx.x; i < CW::BM / 16; i += CW::kThreads) rg[i] = (i < kHalf / 16 ? n0 : I + n0 - kHalf) / 16 + i;
  for (int c = threadIdx.x; c < CW::BN; c += CW::kThreads) {
    const int p = ws.sorted_pair[tile.row0 + c];
    const uint32_t token = p >= 0 ? uint32_t(p / T) : 0u;
    xoff[c] = token * uint32_t(H) * 2u;
  }
  __syncthreads();
  float acc[CW::MT][CW::NG][4];
  moe_wgrows::mainloop<CW>(a.gate_up_weight_shuffled + int64_t(tile.expert) * 2 * I * (H / 2),
                           a.gate_up_weight_scale + int64_t(tile.expert) * 2 * I * KB, ws.x8, KB, rg, xoff, smem, acc);
  gate_up_epilogue<CW, 0>(acc, smem, tile, n0, I, ws);
}

// Stage 2. grid (tiles_max, H / BM): y[pair, n] = weight * (a W_down^T).
template <class C>
__global__ __launch_bounds__(C::kThreads, C::kMinBlocks) void down(MoeArgs a, Workspace ws) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ int rg[C::BM / 16];
  __shared__ uint32_t xoff[C::BN], eoff[C::BN];
  __shared__ int pair[C::BN];
  __shared__ float weight[C::BN];
  if (int(blockIdx.x) >= *ws.n_tiles) return;
  const Tile tile = ws.tiles[blockIdx.x];
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, KB = I / 32;
  const int n0 = blockIdx.y * C::BM;
  for (int i = threadIdx.x; i < C::BM / 16; i += C::kThreads) rg[i] = n0 / 16 + i;
  for (int c = threadIdx.x; c < C::BN; c += C::kThreads) {
    const int row = tile.row0 + c;
    const int p = ws.sorted_pair[row];
    xoff[c] = uint32_t(row) * uint32_t(I) * 2u;
    eoff[c] = uint32_t(row) * uint32_t(KB);
    pair[c] = p;
    weight[c] = p >= 0 ? a.topk_weights[p] : 0.0f;
  }
  __syncthreads();
  float acc[C::MT][C::NG][4];
  mainloop<C>(a.down_weight_shuffled + int64_t(tile.expert) * H * (I / 2),
              a.down_weight_scale + int64_t(tile.expert) * H * KB, ws.a8, ws.as, KB, rg, xoff, eoff, smem, acc);

  moe_tiled::store_weighted_rows<C>(moe_wide16::AccIndex<C>(), acc, pair, weight, ws.y, H, n0);
}

// The f16 quantizer, then moe_wide16::launch_stages on this header's kernels.
template <int BN, class G1, class G2>
void launch(const MoeArgs& a) {
  constexpr int kQuantThreads = 256;
  moe_wide16::launch_stages<BN, G1, G2>(
      a,
      [&](const Workspace& ws, const moe_pipeline::Sizes& s) {
        const int64_t n8 = s.M * s.H / 8;
        quantize_hidden_f16<G1::FORCE><<<unsigned((n8 + kQuantThreads - 1) / kQuantThreads), kQuantThreads>>>(a.hidden_states, n8,
                                                                                                  ws.x8, ws.xs);
      },
      gate_up<G1>, down<G2>, "wgmma f16 rows");
}
// v14's quantizer and bf16 gate_up mainloop (G1: a moe_wgrows::Cfg) with the f16 epilogue, then this
// header's f16 down (G2).
template <int BN, class G1, class G2>
void launch_bf16_gate(const MoeArgs& a) {
  constexpr int kQuantThreads = 256;
  moe_wide16::launch_stages<BN, G1, G2>(
      a,
      [&](const Workspace& ws, const moe_pipeline::Sizes& s) {
        const int64_t n8 = s.M * s.H / 8;
        moe_wgrows::quantize_hidden_wg<<<unsigned((n8 + kQuantThreads - 1) / kQuantThreads), kQuantThreads>>>(
            a.hidden_states, n8, ws.x8);
      },
      gate_up_bf16<G1>, down<G2>, "wgmma bf16 gate_up / f16 down rows");
}
#endif  // MOE_WG8_HOST

}  // namespace
}  // namespace moe_wgf16
