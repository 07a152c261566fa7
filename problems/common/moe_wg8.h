// 8-row MoE tiles (bs x k / routed experts <= 8: the bandwidth-bound shapes) for the sorted pipeline of
// moe_tile_pipeline.h, with fewer instructions per weight byte than v11's e4m3 mma.sync path (which
// ptxas runs as F2FP conversions of A and B to f16, two f16 HMMA and an FADD of the zero accumulator):
//  - gate_up on native f16 mma.sync m16n8k16 (gate_up_f16): a word of 8 e2m1 codes -> four f16 pairs
//    of value * 2^-14 in 11 integer ops (see decode_f16), activations stored as f16 by the quantizer;
//  - down on the Hopper warpgroup MMA (wgmma e4m3 m64n8k32, sm_90a): A = the weights decoded into e4m3
//    registers (value * 2^-6, 7 integer ops a word: the odd nibbles already have their sign at bit 7 of
//    their byte, hi = (w & 0x80808080) | ((w >> 2) & 0x1C1C1C1C), lo the same on w << 4), the fragment
//    layout of mma.sync m16n8k32 (warp w of the warpgroup holds rows 16 w .. 16 w + 15 of each 64-row
//    slice); B = the 8 activation rows read by the tensor unit from shared memory in the canonical
//    no-swizzle K-major layout (core matrix 8 rows x 16 bytes; the two 16-byte halves of a k-block 128
//    bytes apart), each 32-value k-block stored in MMA-k order (element 8t + 2i at 4t + i, 8t + 2i + 1 at
//    16 + 4t + i); one m64n8k32 per (64-row slice, k-block) into a fresh accumulator, issued in groups
//    with one group in flight while the next is decoded;
//  - in both, per k-block acc += d * 2^(sw + sx + U) in k order, the scale built as float bits with one
//    shift-add: (weight scale byte << 23) + an activation scale word (s + U) << 23 written by our
//    quantizers (U = 14 for f16 A, 6 for e4m3 A; exact while the product is a normal float), and the
//    stage copies use 32-bit offsets computed once per block.
// Products and every k-block's d are exact in fp32 and the k-block order is v11's, so the output is
// v11's bit for bit. Also: a branch-free quantizer of the hidden states and a 1024-thread route, used
// for every tile size (launch_tiled runs v11's 32/64-row kernels with them).
#pragma once

#ifndef MOE_SPIN_ACQUIRE  // moe v48: down blocks wait for their tile's gate_up count with acquire loads only
#define MOE_SPIN_ACQUIRE 0
#endif
#include "problems/common/moe_tile_pipeline.h"

#if defined(MOE_HAVE_MMA_SYNC)
#define MOE_WG8_HOST 1
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define MOE_WG8_DEVICE 1
#endif
#endif

namespace moe_wg8 {
namespace {

using moe_pipeline::Tile;
using moe_pipeline::Workspace;

// Position of element k (0..31) of a k-block in the stored activation row (MMA-k order).
HD constexpr int position(int k) { return (k & 1) * 16 + (k >> 3) * 4 + ((k & 7) >> 1); }
HD constexpr int32_t scale_word(int s) { return int32_t(uint32_t(s + 6) << 23); }

// The workspace of moe_pipeline::carve with 4-byte activation scale words (x_bytes: bytes per hidden
// activation value in x8, 2 for gate_up_f16).
inline size_t carve(const MoeConfig& c, void* base, Workspace* w, int x_bytes = 1) {
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(c, 8);
  size_t off = 0;
  auto take = [&](size_t bytes) {
    void* p = base ? static_cast<char*>(base) + off : nullptr;
    off += moe_pipeline::align256(bytes);
    return p;
  };
  Workspace t;
  t.x8 = static_cast<uint8_t*>(take(s.M * s.H * x_bytes));
  t.xs = static_cast<uint8_t*>(take(s.M * s.H / 32 * 4));
  t.sorted_pair = static_cast<int32_t*>(take(s.rows_max * sizeof(int32_t)));
  t.tiles = static_cast<Tile*>(take(s.tiles_max * sizeof(Tile)));
  t.n_tiles = static_cast<int32_t*>(take(sizeof(int32_t)));
  t.a8 = static_cast<uint8_t*>(take(s.rows_max * s.I));
  t.as = static_cast<uint8_t*>(take(s.rows_max * s.I / 32 * 4));
  t.y = static_cast<moe_pipeline::YElem*>(take(s.P * s.H * sizeof(moe_pipeline::YElem)));
  if (w) *w = t;
  return off;
}

#if defined(MOE_WG8_HOST)
constexpr int kLanes = moe_tile::kMmaLanes;
constexpr int kThreads = 4 * kLanes;  // one warpgroup

// wgmma tiles: MT 64-row slices x 8 columns, KS k-blocks a stage, STAGES stages, G k-blocks per wgmma
// group. The activations arrive by cp.async and are made visible to wgmma by fence.proxy.async before
// each stage's barrier (16-byte cp.async.bulk copies instead measured much slower: ptxas issues them
// lane by lane).
template <int MT_, int KS_, int STAGES_, int G_, int MIN_BLOCKS_ = 1>
struct Cfg {
  static constexpr int MT = MT_, KS = KS_, STAGES = STAGES_, G = G_, kMinBlocks = MIN_BLOCKS_;
  static constexpr int BM = 64 * MT, BN = 8;
  static constexpr int kW = 0;                          // [BM/16 groups][KS][256]
  static constexpr int kWs = kW + BM * KS * 16;         // [BM][KS] bytes
  static constexpr int kX = kWs + moe_tile::align16(BM * KS);  // [2 KS chunks][8 rows][16]
  static constexpr int kXs = kX + BN * KS * 32;         // [BN][KS] int32
  static constexpr int kStageBytes = kXs + BN * KS * 4;
  static constexpr int kPipeBytes = STAGES * kStageBytes;
  static_assert(KS % G == 0 && (KS == 4 || KS == 8), "stage shape");
  static_assert((BM * KS) % kThreads == 0, "weight chunks per thread");
};

#if defined(MOE_WG8_DEVICE)
__device__ inline void decode(uint32_t w, uint32_t& lo, uint32_t& hi) {
  hi = (w & 0x80808080u) | ((w >> 2) & 0x1C1C1C1Cu);
  const uint32_t v = w << 4;
  lo = (v & 0x80808080u) | ((w << 2) & 0x1C1C1C1Cu);
}
__device__ inline uint64_t smem_desc(uint32_t saddr) {  // no swizzle; K-direction core matrices 128 B apart
  return uint64_t((saddr & 0x3ffffu) >> 4) | (uint64_t(128 >> 4) << 16) | (uint64_t(256 >> 4) << 32);
}
__device__ inline void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ inline void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ inline void wg_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
__device__ inline void proxy_fence() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ inline void reg_fence(float& x) { asm volatile("" : "+f"(x)::"memory"); }
__device__ inline void reg_fence(uint32_t& x) { asm volatile("" : "+r"(x)::"memory"); }
// d = A (64 x 32 e4m3, registers) x B (32 x 8 e4m3, shared memory), fresh accumulator.
__device__ inline void wg_mma(float (&d)[4], const uint32_t (&a)[4], uint64_t desc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, p, 1, 1;\n}\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "n"(0));
}
#endif

#if defined(MOE_WG8_DEVICE)
// One stage of the down mainloop (its copies have landed): the stage's weight and activation scales,
// then per group of G k-blocks the weights decoded into e4m3 A fragments and a wgmma group issued while
// the previous group's products are scaled into acc. Shared by mainloop and moe_rows8.h's persistent down.
template <class C>
__device__ __forceinline__ void down_stage(const uint8_t* smem, uint32_t smem_s, int slot, int a_off, int ws_off,
                                           int xs_off, float (&acc)[C::MT][4]) {
  const uint8_t* st = smem + slot * C::kStageBytes;
  const uint64_t desc0 = smem_desc(smem_s + slot * C::kStageBytes + C::kX);
  // Scales of the stage.
  uint32_t wsw[C::MT][2][C::KS / 4];
#pragma unroll
  for (int m = 0; m < C::MT; ++m)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint8_t* p = st + ws_off + (64 * m + 8 * h) * C::KS;
      if constexpr (C::KS == 8) {
        const uint2 v = *reinterpret_cast<const uint2*>(p);
        wsw[m][h][0] = v.x;
        wsw[m][h][1] = v.y;
      } else {
        wsw[m][h][0] = *reinterpret_cast<const uint32_t*>(p);
      }
    }
  int32_t xsw[2][C::KS];
#pragma unroll
  for (int c = 0; c < 2; ++c)
#pragma unroll
    for (int q = 0; q < C::KS / 4; ++q) {
      const int4 v = *reinterpret_cast<const int4*>(st + xs_off + c * C::KS * 4 + q * 16);
      xsw[c][4 * q] = v.x;
      xsw[c][4 * q + 1] = v.y;
      xsw[c][4 * q + 2] = v.z;
      xsw[c][4 * q + 3] = v.w;
    }

  constexpr int kGroups = C::KS / C::G;
  uint32_t a[2][C::G][C::MT][4];
  float d[2][C::G][C::MT][4];
  auto issue = [&](int grp) {
    const int b = grp & 1;
#pragma unroll
    for (int uu = 0; uu < C::G; ++uu) {
      const int u = grp * C::G + uu;
#pragma unroll
      for (int m = 0; m < C::MT; ++m) {
        const uint8_t* p = st + a_off + (4 * m * C::KS + u) * 256;
        const uint32_t w0 = *reinterpret_cast<const uint32_t*>(p);
        const uint32_t w1 = *reinterpret_cast<const uint32_t*>(p + 128);
        decode(w0, a[b][uu][m][0], a[b][uu][m][2]);
        decode(w1, a[b][uu][m][1], a[b][uu][m][3]);
      }
    }
    wg_fence();
#pragma unroll
    for (int uu = 0; uu < C::G; ++uu)
#pragma unroll
      for (int m = 0; m < C::MT; ++m) wg_mma(d[b][uu][m], a[b][uu][m], desc0 + uint64_t((grp * C::G + uu) * 16));
    wg_commit();
  };
  auto finish = [&](int grp) {
    const int b = grp & 1;
#pragma unroll
    for (int uu = 0; uu < C::G; ++uu) {
      const int u = grp * C::G + uu;
#pragma unroll
      for (int m = 0; m < C::MT; ++m) {
#pragma unroll
        for (int i = 0; i < 4; ++i) reg_fence(d[b][uu][m][i]);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint32_t bw = __byte_perm(wsw[m][h][u / 4], 0u, 0x4440u + (u % 4));
#pragma unroll
          for (int c = 0; c < 2; ++c) {
            const float s = __int_as_float(int32_t(bw << 23) + xsw[c][u]);
            acc[m][2 * h + c] = fmaf(d[b][uu][m][2 * h + c], s, acc[m][2 * h + c]);
          }
        }
      }
    }
  };
#pragma unroll
  for (int grp = 0; grp < kGroups; ++grp) {
    issue(grp);
    if (grp > 0) {
      wg_wait<1>();
      finish(grp - 1);
    }
  }
  wg_wait<0>();
  finish(kGroups - 1);
}

#endif

// The wgmma mainloop (the down kernel): acc[m] (rows 64 m + 16 warp + g, + 8; columns 2t, 2t + 1) =
// A x B over the whole K.
// wbase: the expert's shuffled weights; woff[j]: byte offset of the 16-row group of this thread's
// j-th weight chunk (group j * kThreads / (KS * 16) ...), see the copy plan below.
template <class C>
__device__ inline void mainloop(const uint8_t* wbase, const uint8_t* sbase, const int* rg, const uint8_t* const* xrow,
                                const uint8_t* const* xsrow, int k_bytes, int KB, uint8_t* smem,
                                float (&acc)[C::MT][4]) {
#if defined(MOE_WG8_DEVICE)
  const int tid = threadIdx.x, lane = tid % kLanes, warp = tid / kLanes;
  const int t = lane % 4;
  const int nk = KB / C::KS;
  const uint32_t rg_bytes = uint32_t(k_bytes / 32) * 512u;
#pragma unroll
  for (int m = 0; m < C::MT; ++m)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[m][i] = 0.0f;

  // Copy plan. Weights: chunk i = tid + kThreads j of the stage (16 bytes): group r = i / (KS*16),
  // ch = i % (KS*16); since kThreads is a multiple of KS*16 or vice versa, per thread fixed offsets.
  constexpr int kWChunks = C::BM * C::KS;  // 16-byte chunks
  constexpr int kWPer = kWChunks / kThreads;
  uint32_t woff[kWPer];
#pragma unroll
  for (int j = 0; j < kWPer; ++j) {
    const int i = tid + kThreads * j, r = i / (C::KS * 16), ch = i % (C::KS * 16);
    woff[j] = uint32_t(rg[r]) * rg_bytes + ch * 16;
  }
  // Weight scales: row tid (tid < BM), KS bytes; rows BM > kThreads: two per thread.
  constexpr int kSPer = (C::BM + kThreads - 1) / kThreads;
  uint32_t soff[kSPer];
#pragma unroll
  for (int j = 0; j < kSPer; ++j) {
    const int r = tid + kThreads * j;
    soff[j] = (uint32_t(rg[(r % C::BM) / 16]) * 16 + r % 16) * uint32_t(KB);
  }
  // Activations: BN rows x KS*2 chunks; chunk (c, ch) -> X + ch*128 + c*16.
  constexpr int kXChunks = C::BN * C::KS * 2;  // <= kThreads
  const int xc = tid / (C::KS * 2), xch = tid % (C::KS * 2);
  const uint8_t* xsrc = tid < kXChunks ? xrow[xc] + xch * 16 : nullptr;
  const int xdst = C::kX + xch * 128 + xc * 16;
  // Activation scales: BN rows x KS int32 = KS/4 chunks a row.
  constexpr int kXsChunks = C::BN * C::KS / 4;
  const int sc_c = tid / (C::KS / 4), sc_ch = tid % (C::KS / 4);
  const uint8_t* xssrc = tid < kXsChunks ? xsrow[sc_c] + sc_ch * 16 : nullptr;
  const int xsdst = C::kXs + sc_c * C::KS * 4 + sc_ch * 16;

  const uint32_t smem_s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));

  auto load = [&](int slot, int kb0) {
    uint8_t* st = smem + slot * C::kStageBytes;
    const uint8_t* wb = wbase + kb0 * 256;
#pragma unroll
    for (int j = 0; j < kWPer; ++j) {
      const int i = tid + kThreads * j, r = i / (C::KS * 16), ch = i % (C::KS * 16);
      moe_tile::cp_async<16>(st + C::kW + r * C::KS * 256 + ch * 16, wb + woff[j]);
    }
    const uint8_t* sb = sbase + kb0;
#pragma unroll
    for (int j = 0; j < kSPer; ++j)
      if (tid + kThreads * j < C::BM) moe_tile::cp_async<C::KS>(st + C::kWs + (tid + kThreads * j) * C::KS, sb + soff[j]);
    if (tid < kXChunks) moe_tile::cp_async<16>(st + xdst, xsrc + kb0 * 32);
    if (tid < kXsChunks) moe_tile::cp_async<16>(st + xsdst, xssrc + kb0 * 4);
  };

  // Fragment addresses inside a stage.
  const int a_off = C::kW + warp * C::KS * 256 + 4 * lane;  // + (4 m) * KS * 256 + u * 256
  const int ws_off = C::kWs + (warp * 16 + lane / 4) * C::KS;  // + 64 m * KS (+ 8 KS for row g + 8)
  const int xs_off = C::kXs + 2 * t * C::KS * 4;             // column 2t; + KS*4 for 2t + 1

  auto compute = [&](int slot) { down_stage<C>(smem, smem_s, slot, a_off, ws_off, xs_off, acc); };

#pragma unroll
  for (int s = 0; s < C::STAGES - 1; ++s) {
    if (s < nk) load(s, s * C::KS);
    moe_tile::cp_commit();
  }
  for (int ks = 0; ks < nk; ++ks) {
    moe_tile::cp_wait<C::STAGES - 2>();
    proxy_fence();    // the landed copies -> visible to wgmma's shared-memory reads
    __syncthreads();  // stage ks landed for every thread; stage ks - 1 is no longer read
    const int next = ks + C::STAGES - 1;
    if (next < nk) load(next % C::STAGES, next * C::KS);
    moe_tile::cp_commit();
    compute(ks % C::STAGES);
  }
  moe_tile::cp_wait<0>();
#else
  (void)wbase, (void)sbase, (void)rg, (void)xrow, (void)xsrow, (void)k_bytes, (void)KB, (void)smem;
#pragma unroll
  for (int m = 0; m < C::MT; ++m)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[m][i] = 0.0f;
#if defined(__CUDA_ARCH__)
  __trap();  // built without sm_90a features: never dispatched to (v12 needs sm_90a)
#endif
#endif
}

// numerics::f32_to_e2m1_ties_away(x * mul) without branches (its thresholds as a count of compares;
// NaN -> 7 as there). mul = 2^-s is exact, so this is quantize_dynamic_code(x, s).
__device__ inline uint32_t e2m1_code(float x, float mul) {
  const float v = x * mul;
  const float a = fabsf(v);
  const uint32_t k = uint32_t(a >= 0.25f) + uint32_t(a >= 0.75f) + uint32_t(a >= 1.25f) + uint32_t(a >= 1.75f) +
                     uint32_t(a >= 2.5f) + uint32_t(a >= 3.5f) + uint32_t(a >= 5.0f);
  return a == a ? k | ((__float_as_uint(v) >> 28) & 8u) : 7u;
}

// moe_tiled::quantize_hidden8 with the branch-free code (same output; for v11's activation formats).
// SW >= 0: the scales are written as int32 words (s + SW) << 23 instead of e8m0 bytes.
template <class D, int SW = -1>
__global__ void quantize_hidden8(const uint16_t* hidden, int64_t n8, uint8_t* x8, uint8_t* xs) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  float v[8];
  const int s = moe_tiled::hidden8_block_scale(hidden, i, n8, v);
  if (i >= n8) return;
  const float mul = numerics::exp2_f32(-s);
  constexpr int kPer = 4 / D::kActBytes;  // values a 32-bit word
  uint32_t out[2 * D::kActBytes] = {};
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const int pos = D::position(k);
    out[pos / kPer] |= D::encode(e2m1_code(v[k], mul), s) << (8 * D::kActBytes * (pos % kPer));
  }
  if constexpr (D::kActBytes == 1) reinterpret_cast<uint2*>(x8)[i] = make_uint2(out[0], out[1]);
  else reinterpret_cast<uint4*>(x8)[i] = make_uint4(out[0], out[1], out[2], out[3]);
  if (i % 4 == 0) {
    if constexpr (SW >= 0) reinterpret_cast<int32_t*>(xs)[i / 4] = int32_t(uint32_t(s + SW) << 23);
    else xs[i / 4] = static_cast<uint8_t>(s + 127);
  }
}

// The requantized SwiGLU output of a BN x BM/2 fp32 tile in shared memory (row stride kStride):
// e4m3 bytes in MMA-k order and int32 scale words, as the wgmma down kernel reads them.
template <int BN, int kHalf, int kThreadsT>
__device__ inline void swiglu_requant(const float* tile_f, int kStride, const Tile& tile, int n0, int I, Workspace& ws) {
  constexpr int kB = mxfp4::kBlock, kGroups = BN * (kHalf / kB);
  const int lane = threadIdx.x % kB, KBI = I / kB;
  int32_t* as = reinterpret_cast<int32_t*>(ws.as);
  for (int grp = threadIdx.x / kB; grp < kGroups; grp += kThreadsT / kB) {
    const int c = grp / (kHalf / kB), n = (grp % (kHalf / kB)) * kB + lane;
    const float gate = tile_f[c * kStride + n], up = tile_f[c * kStride + kHalf + n];
    int s;
    const float x = moe_tiled::swiglu_bf16_block_scale(gate, up, s);
    const int64_t row = tile.row0 + c;
    const int col = n0 + (n & ~31) + position(n & 31);
    ws.a8[row * I + col] = uint8_t(mxfp4::e2m1_to_e4m3(mxfp4::quantize_dynamic_code(x, s)));
    if (lane == 0) as[row * KBI + (n0 + n) / kB] = scale_word(s);
  }
}

// Stage 1 for 8-row tiles on f16 mma.sync m16n8k16 (native on sm_80+; no F2FP, no emulated e4m3
// MMA): 4 warps, warp w = weight rows 16 w .. 16 w + 15 of the block's 64 (32 gate + 32 up), 8 columns,
// KS k-blocks a stage. A: a word of 8 e2m1 codes -> four f16 pairs of value * 2^-14 in 11 integer ops
// (bytes s << 7 | m << 1 of the even nibbles from w << 4 and w << 1, of the odd ones from w and w >> 3,
// then a byte permute each), the same pairs as moe_tile::F16Decode; B: the activations as f16 in
// F16Decode's order (one 16-byte load a k-block); per k-block acc += d * 2^(sw + sx + 14) with the scale
// as float bits (weight byte << 23) + activation word ((s + 14) << 23). grid (tiles_max, I / 32).
template <int KS, int STAGES>
struct F16Cfg {
  static constexpr int BM = 64, BN = 8, KS_ = KS, ST = STAGES;
  static constexpr int kXStride = KS * 64 + 64;  // f16 row of a stage, padded: B loads conflict-free
  static constexpr int kW = 0;
  static constexpr int kWs = kW + BM * KS * 16;
  static constexpr int kX = kWs + BM * KS;
  static constexpr int kXs = kX + BN * kXStride;
  static constexpr int kStageBytes = kXs + BN * KS * 4;
  static constexpr int kPipeBytes = STAGES * kStageBytes;
  static_assert(KS == 8, "scale words: two per row and stage");
};

#if defined(MOE_WG8_HOST)
__device__ inline void decode_f16(uint32_t w, uint32_t q[4]) {
  const uint32_t e = ((w << 4) & 0x80808080u) | ((w << 1) & 0x0E0E0E0Eu);  // nibbles 0, 2, 4, 6
  const uint32_t o = (w & 0x80808080u) | ((w >> 3) & 0x0E0E0E0Eu);         // nibbles 1, 3, 5, 7
  q[0] = __byte_perm(e, 0u, 0x1404u);
  q[1] = __byte_perm(e, 0u, 0x3424u);
  q[2] = __byte_perm(o, 0u, 0x1404u);
  q[3] = __byte_perm(o, 0u, 0x3424u);
}
#endif

// Programmatic dependent launch, device side (no-ops for a kernel launched without the attribute).
__device__ inline void dep_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ inline void dep_release() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// Thread 0 of a block waits until a producer count reaches need: an acquire load in the poll, so no fence after it
// (the block's barrier after the wait then orders the other threads' reads, as a grid barrier fenced in one thread).
__device__ inline int ld_acquire_gpu(const int* p) {
  int v;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
#else
  v = __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
  return v;
}

// DEP: launched as a programmatic dependent launch (moe_rows8.h's chain): wait for the previous grid
// (the route's output and the activations) before anything, then let the next launch be scheduled.
template <class C, int MINB, bool DEP = false>
__global__ __launch_bounds__(kThreads, MINB) void gate_up_f16(MoeArgs a, Workspace ws) {
  extern __shared__ __align__(128) uint8_t smem_wg8[];
  uint8_t* smem = smem_wg8;
  __shared__ int rg[C::BM / 16];
  __shared__ const uint8_t* xrow[C::BN];
  __shared__ const uint8_t* xsrow[C::BN];
  if constexpr (DEP) {
    dep_wait();
    dep_release();
  }
  if (int(blockIdx.x) >= *ws.n_tiles) return;
  const Tile tile = ws.tiles[blockIdx.x];
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, T = a.cfg.total_top_k, KB = H / 32;
  constexpr int kHalf = C::BM / 2, KS = C::KS_;
  const int n0 = blockIdx.y * kHalf;
  for (int i = threadIdx.x; i < C::BM / 16; i += kThreads) rg[i] = (i < kHalf / 16 ? n0 : I + n0 - kHalf) / 16 + i;
  for (int c = threadIdx.x; c < C::BN; c += kThreads) {
    const int p = ws.sorted_pair[tile.row0 + c];
    const int64_t token = p >= 0 ? p / T : 0;  // padding rows borrow token 0; never written back
    xrow[c] = ws.x8 + token * H * 2;
    xsrow[c] = ws.xs + token * KB * 4;
  }
  __syncthreads();
  const uint8_t* wbase = a.gate_up_weight_shuffled + int64_t(tile.expert) * 2 * I * (H / 2);
  const uint8_t* sbase = a.gate_up_weight_scale + int64_t(tile.expert) * 2 * I * KB;
  const int tid = threadIdx.x, lane = tid % kLanes, warp = tid / kLanes, g = lane / 4, t = lane % 4;
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#if defined(MOE_WG8_HOST) && defined(__CUDA_ARCH__)
  const int nk = KB / KS;
  const uint32_t rg_bytes = uint32_t(H / 64) * 512u;
  // Copy plan (per stage): weights 4 chunks a thread (group j, chunk tid); scales rows 0..63; activations
  // 2 chunks a thread (row i / (KS*4), chunk i % (KS*4)); activation scale words 16 chunks.
  uint32_t woff[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) woff[j] = uint32_t(rg[j]) * rg_bytes + tid * 16;
  const uint32_t soff = (uint32_t(rg[(tid % 64) / 16]) * 16 + tid % 16) * uint32_t(KB);
  const uint8_t* xsrc[2];
  int xdst[2];
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int i = tid + kThreads * j, c = i / (KS * 4), ch = i % (KS * 4);
    xsrc[j] = xrow[c] + ch * 16;
    xdst[j] = C::kX + c * C::kXStride + ch * 16;
  }
  const uint8_t* xssrc = xsrow[(tid / 2) % 8] + (tid % 2) * 16;
  const int xsdst = C::kXs + ((tid / 2) % 8) * KS * 4 + (tid % 2) * 16;
  auto load = [&](int slot, int kb0) {
    uint8_t* st = smem + slot * C::kStageBytes;
    const uint8_t* wb = wbase + kb0 * 256;
#pragma unroll
    for (int j = 0; j < 4; ++j) moe_tile::cp_async<16>(st + C::kW + j * KS * 256 + tid * 16, wb + woff[j]);
    if (tid < 64) moe_tile::cp_async<KS>(st + C::kWs + tid * KS, sbase + soff + kb0);
#pragma unroll
    for (int j = 0; j < 2; ++j) moe_tile::cp_async<16>(st + xdst[j], xsrc[j] + kb0 * 64);
    if (tid < 16) moe_tile::cp_async<16>(st + xsdst, xssrc + kb0 * 4);
  };
  const int a_off = C::kW + warp * KS * 256 + 4 * lane;
  const int ws_off = C::kWs + (warp * 16 + g) * KS;
  const int b_off = C::kX + g * C::kXStride + 16 * t;
  const int xs_off = C::kXs + 2 * t * KS * 4;
  auto compute = [&](int slot) {
    const uint8_t* st = smem + slot * C::kStageBytes;
    const uint2 wg0 = *reinterpret_cast<const uint2*>(st + ws_off);
    const uint2 wg8 = *reinterpret_cast<const uint2*>(st + ws_off + 8 * KS);
    const uint32_t wsw[2][2] = {{wg0.x, wg0.y}, {wg8.x, wg8.y}};
    int32_t xsw[2][KS];
#pragma unroll
    for (int c = 0; c < 2; ++c)
#pragma unroll
      for (int q = 0; q < KS / 4; ++q) {
        const int4 v = *reinterpret_cast<const int4*>(st + xs_off + c * KS * 4 + q * 16);
        xsw[c][4 * q] = v.x;
        xsw[c][4 * q + 1] = v.y;
        xsw[c][4 * q + 2] = v.z;
        xsw[c][4 * q + 3] = v.w;
      }
#pragma unroll
    for (int u = 0; u < KS; ++u) {
      const uint8_t* p = st + a_off + u * 256;
      uint32_t lo[4], hi[4];
      decode_f16(*reinterpret_cast<const uint32_t*>(p), lo);
      decode_f16(*reinterpret_cast<const uint32_t*>(p + 128), hi);
      const uint4 bv = *reinterpret_cast<const uint4*>(st + b_off + u * 64);
      const uint32_t a1[4] = {lo[0], hi[0], lo[1], hi[1]}, a2[4] = {lo[2], hi[2], lo[3], hi[3]};
      const uint32_t b1[2] = {bv.x, bv.y}, b2[2] = {bv.z, bv.w};
      const float zero[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      float h[4], d[4];
      moe_mma::mma_f16_16x8x16(h, a1, b1, zero);
      moe_mma::mma_f16_16x8x16(d, a2, b2, h);
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const uint32_t bw = __byte_perm(wsw[r][u / 4], 0u, 0x4440u + (u % 4));
#pragma unroll
        for (int c = 0; c < 2; ++c)
          acc[2 * r + c] = fmaf(d[2 * r + c], __int_as_float(int32_t(bw << 23) + xsw[c][u]), acc[2 * r + c]);
      }
    }
  };
#pragma unroll
  for (int s = 0; s < C::ST - 1; ++s) {
    if (s < nk) load(s, s * KS);
    moe_tile::cp_commit();
  }
  for (int ks = 0; ks < nk; ++ks) {
    moe_tile::cp_wait<C::ST - 2>();
    __syncthreads();  // stage ks landed for every thread; stage ks - 1 is no longer read
    const int next = ks + C::ST - 1;
    if (next < nk) load(next % C::ST, next * KS);
    moe_tile::cp_commit();
    compute(ks % C::ST);
  }
  moe_tile::cp_wait<0>();
#else
  (void)wbase, (void)sbase, (void)tid, (void)lane, (void)warp, (void)g, (void)t;
#endif
  __syncthreads();  // the pipeline buffers become the fp32 tile [BN][BM + 4]
  constexpr int kStride = C::BM + 4;
  float* tile_f = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int i = 0; i < 4; ++i) tile_f[(2 * t + (i & 1)) * kStride + warp * 16 + g + 8 * (i >> 1)] = acc[i];
  __syncthreads();
  swiglu_requant<C::BN, kHalf, kThreads>(tile_f, kStride, tile, n0, I, ws);
}

// Stage 2. grid (tiles_max, H / BM): y[pair, n] = weight * (a_q W_down^T).
template <class C>
__global__ __launch_bounds__(kThreads, C::kMinBlocks) void down(MoeArgs a, Workspace ws) {
  extern __shared__ __align__(128) uint8_t smem_wg8[];
  uint8_t* smem = smem_wg8;
  __shared__ int rg[C::BM / 16];
  __shared__ const uint8_t* xrow[C::BN];
  __shared__ const uint8_t* xsrow[C::BN];
  __shared__ int pair[C::BN];
  __shared__ float weight[C::BN];
  if (int(blockIdx.x) >= *ws.n_tiles) return;
  const Tile tile = ws.tiles[blockIdx.x];
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, KB = I / 32;
  const int n0 = blockIdx.y * C::BM;
  for (int i = threadIdx.x; i < C::BM / 16; i += kThreads) rg[i] = n0 / 16 + i;
  for (int c = threadIdx.x; c < C::BN; c += kThreads) {
    const int64_t row = tile.row0 + c;
    const int p = ws.sorted_pair[row];
    xrow[c] = ws.a8 + row * I;
    xsrow[c] = ws.as + row * KB * 4;
    pair[c] = p;
    weight[c] = p >= 0 ? a.topk_weights[p] : 0.0f;
  }
  __syncthreads();
  float acc[C::MT][4];
  mainloop<C>(a.down_weight_shuffled + int64_t(tile.expert) * H * (I / 2), a.down_weight_scale + int64_t(tile.expert) * H * KB,
              rg, xrow, xsrow, I / 2, KB, smem, acc);
  const int lane = threadIdx.x % kLanes, warp = threadIdx.x / kLanes;
  const int r0 = warp * 16 + lane / 4, c0 = 2 * (lane % 4);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int c = c0 + h, p = pair[c];
    if (p < 0) continue;
    moe_pipeline::YElem* dst = ws.y + int64_t(p) * H + n0;
#pragma unroll
    for (int m = 0; m < C::MT; ++m) {
      dst[64 * m + r0] = weight[c] * acc[m][h];
      dst[64 * m + r0 + 8] = weight[c] * acc[m][h + 2];
    }
  }
}

template <class K>
void allow_smem(K* kernel, int bytes) {
  if (bytes > 48 * 1024)
    moe_pipeline::check(hipFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                            hipFuncAttributeMaxDynamicSharedMemorySize, bytes),
                        "shared memory attribute");
}

inline void route(const MoeArgs& a, const Workspace& ws, int BN) {
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(a.cfg, BN);
  constexpr int kRouteThreads = 1024;  // v11: E rounded up to 64 (64 threads at E 33: 38 us at P 4608)
  moe_tiled::route_scan<<<1, kRouteThreads, size_t(2 * s.E + kRouteThreads) * sizeof(int)>>>(
      a.topk_ids, int(s.P), int(s.E), BN, int(s.rows_max), ws.sorted_pair, ws.tiles, ws.n_tiles);
  moe_pipeline::check(hipGetLastError(), "route");
}

// 8-row tiles: gate_up on f16 mma.sync (gate_up_f16), down on wgmma (G2).
template <class FC, int MINB, class G2>
void launch8_f16(const MoeArgs& a) {
  using D = moe_tile::F16Decode;
  if (a.workspace_size < carve(a.cfg, nullptr, nullptr, 2)) throw std::invalid_argument("moe_mxfp4: workspace too small");
  Workspace ws;
  carve(a.cfg, a.workspace, &ws, 2);
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(a.cfg, 8);
  if (s.I % 32 || s.H % G2::BM || (s.H / 32) % FC::KS_ || (s.I / 32) % G2::KS || s.E > 1024)
    throw std::invalid_argument("moe_mxfp4: shape not supported by the 8-row kernels");
  const int64_t n8 = s.M * s.H / 8;
  constexpr int kQuantThreads = 256;
  quantize_hidden8<D, 14><<<unsigned((n8 + kQuantThreads - 1) / kQuantThreads), kQuantThreads>>>(a.hidden_states, n8,
                                                                                                  ws.x8, ws.xs);
  moe_pipeline::check(hipGetLastError(), "quantize hidden");
  route(a, ws, 8);
  constexpr int sm1 = FC::kPipeBytes > 8 * 68 * 4 ? FC::kPipeBytes : 8 * 68 * 4, sm2 = G2::kPipeBytes;
  allow_smem(gate_up_f16<FC, MINB>, sm1);
  allow_smem(down<G2>, sm2);
  gate_up_f16<FC, MINB><<<dim3(unsigned(s.tiles_max), unsigned(s.I / 32)), kThreads, sm1>>>(a, ws);
  moe_pipeline::check(hipGetLastError(), "f16 gate_up");
  down<G2><<<dim3(unsigned(s.tiles_max), unsigned(s.H / G2::BM)), kThreads, sm2>>>(a, ws);
  moe_pipeline::check(hipGetLastError(), "wgmma down");
  moe_pipeline::launch_combine(a, ws);
}

// v11's tiled kernels (moe_tile_pipeline.h, same template instances) with the 1024-thread route.
template <int BN, template <int> class P, class D>
void launch_tiled(const MoeArgs& a) {
  moe_pipeline::require_workspace(a, BN, D::kActBytes);
  Workspace ws;
  moe_pipeline::carve(a.cfg, BN, a.workspace, &ws, D::kActBytes);
  using G1 = typename P<BN>::G1;
  using G2 = typename P<BN>::G2;
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(a.cfg, BN);
  if (s.I % (G1::BM / 2) || s.H % G2::BM || (s.H / 32) % G1::KS || (s.I / 32) % G2::KS || s.E > 1024)
    throw std::invalid_argument("moe_mxfp4: shape not supported by the tiled kernels");
  const int64_t n8 = s.M * s.H / 8;
  constexpr int kQuantThreads = 256;
  quantize_hidden8<D><<<unsigned((n8 + kQuantThreads - 1) / kQuantThreads), kQuantThreads>>>(
      a.hidden_states, n8, ws.x8, ws.xs);
  moe_pipeline::check(hipGetLastError(), "quantize hidden");
  route(a, ws, BN);
  constexpr int sm1 = moe_tiled::gate_up_smem<G1, D>(), sm2 = moe_tile::Layout<G2, D>::kPipeBytes;
  moe_tiled::allow_smem(moe_tiled::gate_up<G1, D>, sm1);
  moe_tiled::allow_smem(moe_tiled::down<G2, D>, sm2);
  moe_tiled::gate_up<G1, D><<<dim3(unsigned(s.tiles_max), unsigned(s.I / (G1::BM / 2))), G1::kThreads, sm1>>>(a, ws);
  moe_pipeline::check(hipGetLastError(), "tiled gate_up");
  moe_tiled::down<G2, D><<<dim3(unsigned(s.tiles_max), unsigned(s.H / G2::BM)), G2::kThreads, sm2>>>(a, ws);
  moe_pipeline::check(hipGetLastError(), "tiled down");
  moe_pipeline::launch_combine(a, ws);
}
#endif  // MOE_WG8_HOST

}  // namespace
}  // namespace moe_wg8
