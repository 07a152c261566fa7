// 32- and 64-row MoE tiles (bs x k / routed experts > 8) on the Hopper warpgroup MMA (wgmma, sm_90a)
// with the decoded weights as the register A operand ("swap AB": weight rows are M, 64 per warpgroup
// instruction; the BN tile rows (tokens) are N, read by the tensor unit from shared memory):
//  - the operands are moe_wide16.h's (v13's) bf16-folded ones: weights decoded by the same instructions
//    to bf16 pairs of value x 2^s (e2m1 x e8m0, exact), activations bf16 with their scale folded, all
//    products exact in fp32, accumulated over the whole K in fp32 (one accumulator set per warp);
//  - per k-block and 16-row group a warp decodes the same two words as v13 into the mma.sync m16n8k16
//    A fragment layout (which is wgmma's register-A layout: warp w of the warpgroup holds rows
//    16 w .. 16 w + 15 of each 64-row instruction), then issues MT x 2 wgmma m64nBNk16 (one group per
//    k-block, NB A register buffers: the next k-block is decoded while NB - 1 groups are in flight);
//  - B in shared memory in the canonical no-swizzle K-major layout: core matrix = 8 tile rows x 16 bytes
//    (8 k values), K-adjacent core matrices 128 bytes apart, 8-row groups KS x 512 bytes apart; the
//    copies write 16-byte chunk ch of tile row c to (c / 8) KS 512 + ch 128 + (c % 8) 16; a warp's
//    32 chunks are 8 rows x 64 bytes (XROWS 8) or 4 rows x 128 bytes (XROWS 4) of the source;
//  - SPREAD: the next stage's copies are issued in KS portions, one after each k-block's wgmma group,
//    instead of in one burst after the stage barrier (the burst stalled every warp on the copy
//    issue: measured -12% on the d 2048 shape, see docs/perf.md, section "moe_mxfp4 v14");
//  - the activations (hidden states by our quantizer, the SwiGLU output by gate_up's epilogue) are
//    stored in wgmma-k order inside each 32-value block: value k at 8 (k % 4) + 2 (k / 8) + (k / 4) % 2,
//    so that a thread's decoded pair j (nibbles j, j + 4 of its word, logical k 8 t + j, 8 t + j + 4)
//    meets B at k16 step j / 2, k = 8 (j % 2) + 2 t (+1);
//  - weight scales as v13: words a stage, a stage holding a scale > 128 (two multiplies) runs the
//    per-word decode (detected in the stage barrier), 32-bit copy offsets hoisted;
//  - cp.async copies made visible to wgmma by fence.proxy.async before each stage's barrier; before
//    that barrier (which lets the slot of the previous stage be overwritten) every warp waits for its
//    wgmma groups.
// Quantizer (wgmma-k order), route (moe_wg8's 1024 threads), combine as before.
#pragma once
#include <utility>

#include "problems/common/moe_wide16.h"

namespace moe_wgrows {
namespace {

using moe_pipeline::Tile;
using moe_pipeline::Workspace;
using moe_tile::Bf16Folded;

// Position of value k (0..31) of a 32-value block in the stored activation row (wgmma-k order).
HD constexpr int position32(int k) { return 8 * (k & 3) + 2 * (k >> 3) + ((k >> 2) & 1); }

#if defined(MOE_WG8_HOST)
using moe_tile::cp_async;
using moe_tile::cp_commit;
using moe_tile::cp_wait;
constexpr int kLanes = moe_tile::kMmaLanes;

// WM warps (a multiple of 4: WM / 4 warpgroups), each MT 16-row groups; BN tile rows (32 or 64); KS
// k-blocks a stage; STAGES stages; MIN_BLOCKS blocks per SM for the register budget.
template <int WM_, int MT_, int BN_, int KS_, int STAGES_, int MIN_BLOCKS_ = 1, int XROWS_ = 8, int NB_ = 2, bool SPREAD_ = false>
struct Cfg {
  // SPREAD: the next stage's copies are issued in KS portions, one after each k-block's wgmma group,
  // instead of all at once after the stage barrier.
  static constexpr bool SPREAD = SPREAD_;
  static constexpr int NB = NB_;  // A register buffers: NB - 1 wgmma groups in flight while the next k-block is decoded
  static constexpr int XROWS = XROWS_;  // tile rows a warp's activation copy covers (8: 64 bytes a row; 4: 128)
  static constexpr int WM = WM_, MT = MT_, NG = BN_ / 8, KS = KS_, STAGES = STAGES_, kMinBlocks = MIN_BLOCKS_;
  static constexpr int kThreads = WM * kLanes;
  static constexpr int BM = WM * MT * 16, BN = BN_;
  static constexpr int kXChunks = KS * 4;              // 16-byte chunks of a row per stage
  static constexpr int kSBO = KS * 4 * 128;            // bytes between 8-row core-matrix groups
  static constexpr int kW = 0;                         // [BM/16 groups][KS][256]
  static constexpr int kWs = kW + BM * KS * 16;        // [BM][KS] scale bytes
  static constexpr int kX = kWs + moe_tile::align16(BM * KS);
  static constexpr int kStageBytes = kX + BN * KS * 64;
  static constexpr int kPipeBytes = STAGES * kStageBytes;
  static constexpr int kWPer = BM * KS / kThreads;
  static constexpr int kSPer = (BM + kThreads - 1) / kThreads;  // scale rows a thread (tid < BM when BM < kThreads)
  static constexpr int kXPer = BN * kXChunks / kThreads;
  static_assert(WM % 4 == 0, "whole warpgroups");
  static_assert(KS % NB == 0, "the A buffer index restarts with each stage");
  static_assert(BN == 32 || BN == 64, "wgmma N");
  static_assert(KS == 4 || KS == 8, "a scale row slice is one 4- or 8-byte copy");
  static_assert(BM * KS % kThreads == 0 && (BM % kThreads == 0 || kThreads % BM == 0) && BN * kXChunks % kThreads == 0, "copy split");
};

#if defined(MOE_WG8_DEVICE)
__device__ inline uint64_t smem_desc(uint32_t saddr, uint32_t sbo) {  // no swizzle, K-major
  return uint64_t((saddr & 0x3ffffu) >> 4) | (uint64_t(128 >> 4) << 16) | (uint64_t(sbo >> 4) << 32);
}

// acc (+)= A (64 x 16 bf16, registers) x B (16 x N bf16, shared memory at desc), N = 8 NG.
template <int NG>
__device__ inline void wg_mma_bf16(float (&d)[NG][4], const uint32_t (&a)[4], uint64_t desc);

template <>
__device__ inline void wg_mma_bf16<8>(float (&d)[8][4], const uint32_t (&a)[4], uint64_t desc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
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
__device__ inline void wg_mma_bf16<4>(float (&d)[4][4], const uint32_t (&a)[4], uint64_t desc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, "
      "{%16,%17,%18,%19}, %20, p, 1, 1, 0;\n}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),
        "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]),
        "+f"(d[3][2]), "+f"(d[3][3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "n"(1));
}
#endif

// acc = A (BM weight rows of the 16-row groups rg[]) x B (BN activation rows at x + xoff_row[c]), fp32,
// accumulator layout of moe_wide16 (acc[m][j][i]: row warp MT 16 + 16 m + g (+8), column 8 j + 2 t (+1)).
template <class C>
__device__ inline void mainloop(const uint8_t* w, const uint8_t* wsc, const uint8_t* x, int KB, const int* rg,
                                const uint32_t* xoff_row, uint8_t* smem, float (&acc)[C::MT][C::NG][4]) {
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
  // Activation chunk i = tid + n kThreads: row c = (i / (8 kXChunks)) 8 + i % 8, chunk ch = (i / 8) % kXChunks.
  // XROWS 4: lanes = 4 rows x 8 chunks (128 contiguous bytes of a row); chunk column ch = 8 (i / 32 % (kXChunks / 8)) + i % 8.
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

  auto load = [&](int slot, int kb0) {
    uint8_t* st = smem + slot * C::kStageBytes;
    const uint8_t* wb = w + uint32_t(kb0) * 256u;
#pragma unroll
    for (int n = 0; n < C::kWPer; ++n) cp_async<16>(st + C::kW + (tid + n * C::kThreads) * 16, wb + woff[n]);
    const uint8_t* sb = wsc + kb0;
#pragma unroll
    for (int n = 0; n < C::kSPer; ++n)
      if (C::BM % C::kThreads == 0 || tid < C::BM) cp_async<C::KS>(st + C::kWs + (tid + n * C::kThreads) * C::KS, sb + soff[n]);
    const uint8_t* xb = x + uint32_t(kb0) * 64u;
#pragma unroll
    for (int n = 0; n < C::kXPer; ++n) {
      const int i = tid + n * C::kThreads, c = xrow_of(i);
      cp_async<16>(st + C::kX + (c / 8) * C::kSBO + xch_of(i) * 128 + (c % 8) * 16, xb + xoff[n]);
    }
  };

  // Portion P (of KS) of load(): copies j = [P per, (P + 1) per) of the list W (kWPer), X (kXPer), S (kSPer).
  constexpr int kCopies = C::kWPer + C::kXPer + C::kSPer, kPortion = (kCopies + C::KS - 1) / C::KS;
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
  };

  const uint32_t smem_s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  uint32_t a[C::NB][C::MT][2][4];

  auto body = [&](int slot, auto slow_tag, int next_slot, int next_kb, bool has_next) {
    constexpr bool kSlow = decltype(slow_tag)::value;
    const uint8_t* st = smem + slot * C::kStageBytes;
    const uint64_t desc0 = smem_desc(smem_s + slot * C::kStageBytes + C::kX, C::kSBO);
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
    auto kblock = [&](auto u_tag) {
      constexpr int u = decltype(u_tag)::value;
      constexpr int b = u % C::NB;  // KS % NB == 0: the buffer index restarts with each stage
#pragma unroll
      for (int m = 0; m < C::MT; ++m) {
        const uint8_t* kb = st + C::kW + ((wm * C::MT + m) * C::KS + u) * 256;
        const uint32_t w0 = *reinterpret_cast<const uint32_t*>(kb + 4 * lane);
        const uint32_t w1 = *reinterpret_cast<const uint32_t*>(kb + 128 + 4 * lane);
        uint32_t lo[4], hi[4];
        if constexpr (kSlow) {
          Bf16Folded::decode(w0, (sw[m][0][u / 4] >> (8 * (u % 4))) & 0xFFu, lo);
          Bf16Folded::decode(w1, (sw[m][1][u / 4] >> (8 * (u % 4))) & 0xFFu, hi);
        } else {
          moe_wide16::decode_fast(w0, moe_wide16::mult_of<u>(sw[m][0][u / 4]), lo);
          moe_wide16::decode_fast(w1, moe_wide16::mult_of<u>(sw[m][1][u / 4]), hi);
        }
        a[b][m][0][0] = lo[0];
        a[b][m][0][1] = hi[0];
        a[b][m][0][2] = lo[1];
        a[b][m][0][3] = hi[1];
        a[b][m][1][0] = lo[2];
        a[b][m][1][1] = hi[2];
        a[b][m][1][2] = lo[3];
        a[b][m][1][3] = hi[3];
      }
      moe_wg8::wg_fence();
#pragma unroll
      for (int m = 0; m < C::MT; ++m)
#pragma unroll
        for (int s = 0; s < 2; ++s) wg_mma_bf16<C::NG>(acc[m], a[b][m][s], desc0 + uint64_t((4 * u + 2 * s) * 128 / 16));
      moe_wg8::wg_commit();
      if constexpr (C::SPREAD) {
        if (has_next) load_part(u_tag, next_slot, next_kb);
      }
      moe_wg8::wg_wait<C::NB - 1>();  // the group of k-block u + 1 - NB is done: its A buffer may be rewritten
    };
    [&]<int... U>(std::integer_sequence<int, U...>) {
      (kblock(std::integral_constant<int, U>{}), ...);
    }(std::make_integer_sequence<int, C::KS>{});
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
      if (C::BM % C::kThreads == 0 || tid < C::BM) wide |= moe_wide16::any_wide<C::KS>(st + C::kWs + (tid + n * C::kThreads) * C::KS);
    const bool slow = __syncthreads_or(wide) != 0;
    const int next = ks + C::STAGES - 1;
    if constexpr (!C::SPREAD) {
      if (next < nk) load(next % C::STAGES, next * C::KS);
    }
    if (slow) body(slot, std::true_type{}, next % C::STAGES, next * C::KS, next < nk);
    else body(slot, std::false_type{}, next % C::STAGES, next * C::KS, next < nk);
    cp_commit();  // this stage's group: the copies of stage next (or none)
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

// The hidden states as bf16-folded activations in wgmma-k order (moe_wg8::quantize_hidden8's values).
__global__ void quantize_hidden_wg(const uint16_t* hidden, int64_t n8, uint8_t* x8) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  float v[8];
  const int s = moe_tiled::hidden8_block_scale(hidden, i, n8, v);
  if (i >= n8) return;
  const float mul = numerics::exp2_f32(-s);
  // Values 8 q + j and 8 q + j + 4 (q = i % 4) -> the pair at position 8 j + 2 q of the 32-value block.
  uint16_t* blk = reinterpret_cast<uint16_t*>(x8) + (i / 4) * 32 + 2 * (i % 4);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const uint32_t lo = Bf16Folded::encode(moe_wg8::e2m1_code(v[j], mul), s);
    const uint32_t hi = Bf16Folded::encode(moe_wg8::e2m1_code(v[j + 4], mul), s);
    *reinterpret_cast<uint32_t*>(blk + 8 * j) = lo | (hi << 16);
  }
}

// Stage 1. grid (tiles_max, I / (BM / 2)): BM/2 gate + BM/2 up rows x BN sorted rows, SwiGLU, bf16
// rounding, dynamic MXFP4 requantization into bf16-folded a (wgmma-k order).
template <class C>
__global__ __launch_bounds__(C::kThreads, C::kMinBlocks) void gate_up(MoeArgs a, Workspace ws) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ int rg[C::BM / 16];
  __shared__ uint32_t xoff[C::BN];
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
  }
  __syncthreads();
  float acc[C::MT][C::NG][4];
  mainloop<C>(a.gate_up_weight_shuffled + int64_t(tile.expert) * 2 * I * (H / 2),
              a.gate_up_weight_scale + int64_t(tile.expert) * 2 * I * KB, ws.x8, KB, rg, xoff, smem, acc);
  __syncthreads();  // the pipeline buffers become the fp32 tile [BN][BM + 4]

  constexpr int kStride = C::BM + 4;
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
  const int lane = threadIdx.x % kB;
  for (int grp = threadIdx.x / kB; grp < kGroups; grp += C::kThreads / kB) {
    const int c = grp / (kHalf / kB), n = (grp % (kHalf / kB)) * kB + lane;
    const float gate = tile_f[c * kStride + n], up = tile_f[c * kStride + kHalf + n];
    int s;
    const float xv = moe_tiled::swiglu_bf16_block_scale(gate, up, s);
    const int64_t row = tile.row0 + c;
    const int col = n0 + (n & ~31) + position32(n & 31);
    const uint32_t bits = Bf16Folded::encode(mxfp4::quantize_dynamic_code(xv, s), s);
    reinterpret_cast<uint16_t*>(ws.a8)[row * I + col] = uint16_t(bits);
  }
}

// Stage 2. grid (tiles_max, H / BM): y[pair, n] = weight * (a W_down^T).
template <class C>
__global__ __launch_bounds__(C::kThreads, C::kMinBlocks) void down(MoeArgs a, Workspace ws) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ int rg[C::BM / 16];
  __shared__ uint32_t xoff[C::BN];
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
    pair[c] = p;
    weight[c] = p >= 0 ? a.topk_weights[p] : 0.0f;
  }
  __syncthreads();
  float acc[C::MT][C::NG][4];
  mainloop<C>(a.down_weight_shuffled + int64_t(tile.expert) * H * (I / 2),
              a.down_weight_scale + int64_t(tile.expert) * H * KB, ws.a8, KB, rg, xoff, smem, acc);

  moe_tiled::store_weighted_rows<C>(moe_wide16::AccIndex<C>(), acc, pair, weight, ws.y, H, n0);
}

// The wgmma-k order quantizer, then moe_wide16::launch_stages on this header's kernels.
template <int BN, class G1, class G2>
void launch(const MoeArgs& a) {
  constexpr int kQuantThreads = 256;
  moe_wide16::launch_stages<BN, G1, G2>(
      a,
      [&](const Workspace& ws, const moe_pipeline::Sizes& s) {
        const int64_t n8 = s.M * s.H / 8;
        quantize_hidden_wg<<<unsigned((n8 + kQuantThreads - 1) / kQuantThreads), kQuantThreads>>>(a.hidden_states, n8,
                                                                                                 ws.x8);
      },
      gate_up<G1>, down<G2>, "wgmma rows");
}
#endif  // MOE_WG8_HOST

}  // namespace
}  // namespace moe_wgrows
