// moe_w32: the 32-row MoE shapes (bs x k / routed experts in (8, 40]: E 257 bs 512, E 33 bs 128) as
// moe_wide27's path (docs/perf.md, section "moe_mxfp4 v27": fp8 e4m3 wgmma with small N, the same kernels, numerics
// and summation order) with down overlapping gate_up (helper moe-w32, session 8; docs/perf.md, section "moe_mxfp4 v31"):
//  - gate_up's grid is tile-major ((S x column blocks, tiles): a tile's column blocks and split-K parts adjacent in
//    launch order) and counts its finished blocks per tile (ready[x], after a fence).
//  - down (down_comb: moe_wide27::down_slices' work, NS slices of BM rows a block, blocks group-major) is a
//    programmatic dependent of gate_up (released at gate_up's start): after prefetching its first weight stages a
//    block waits for its own tile's count (thread 0 polls with ld.acquire) instead of for the whole gate_up grid, so
//    down blocks run on the SMs that gate_up's last, partial wave leaves idle (moe_fp8r2's OVL, session 7). gate_up's
//    outputs are read through L2 (cp.async.cg, __ldcg flags, exact_dot_cg in the fix-up).
//  - combine: FC 0, moe_rows8::combine as a dependent launch (v31); FC 4, combine_groups: per column group, each
//    block waiting for its group's down blocks (gcnt[g]) instead of for the whole down grid (v31c, measurement).
//    Combines inside the down grid (combine blocks between the groups, or down blocks taking combine shares) were
//    measured slower (docs/perf.md, section "moe_mxfp4 v31", calls 1-4) and removed.
// The counters are zeroed by moe_wide27's prologue (its split-K counter region, extended). No block waits for a
// block that may not have started: down blocks wait for gate_up blocks (all started before the dependent grid is
// scheduled), combine blocks for down blocks (likewise).
// Measured (docs/perf.md, section "moe_mxfp4 v31", final call): E 257 bs 512 366.1 us (v29 397.7), E 33 bs 128 138.5 us (v29 143.0);
// leaderboard mode 366.9 / 146.7 us (v29 401.6 / 164.6); bit-identical to the reference on both shapes.
// NVIDIA only (MOE_WG8_HOST) like moe_wide27.h.
#pragma once
#include <algorithm>

#include "problems/common/moe_wide27.h"

namespace moe_w32 {
namespace {

using moe_pipeline::Tile;
using Ws = moe_fp8r::Ws;
using moe_wide27::Split;

#if defined(MOE_WG8_HOST)
using moe_tile::cp_async;
using moe_tile::cp_commit;
using moe_tile::cp_wait;
constexpr int kLanes = moe_tile::kMmaLanes;

__device__ inline int ld_acquire(const int32_t* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ inline void spin_until(const int32_t* p, int need) {
  while (ld_acquire(p) < need) __nanosleep(128);
  __threadfence();
}

// Stage 1 (dependent launch of the prologue): moe_wide27::gate_up (A16 off) on a tile-major grid + the per-tile count.
template <class C, int FORCE, int S>
__global__ __launch_bounds__(C::kThreads, C::kMinBlocks) void gate_up(MoeArgs a, Ws ws, Split sp, int32_t* ready) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ int rg[C::BM / 16];
  __shared__ uint32_t xoff[C::BN];
  __shared__ float colmul[C::BN];
  __shared__ int tok[C::BN];
  __shared__ int xflag[C::BN];
  __shared__ int wflag[C::BM];
  __shared__ int rref[C::BM];
  __shared__ int last;
  moe_wg8::dep_wait();
  moe_wg8::dep_release();
  const int n_tiles = *ws.p.n_tiles;
  // Tile-major grid (S x column blocks, tiles_max): a tile's blocks adjacent in launch order, so that tiles finish
  // (and their down blocks may start) from the first wave on.
  const int bx = int(blockIdx.y), nby = int(gridDim.x) / S, by = int(blockIdx.x) % nby;
  if (bx >= n_tiles) return;
  const Tile tile = ws.p.tiles[n_tiles - 1 - bx];
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, T = a.cfg.total_top_k, KB = H / 32;
  constexpr int kHalf = C::BM / 2;
  const int n0 = by * kHalf;
  for (int i = threadIdx.x; i < C::BM / 16; i += C::kThreads) rg[i] = (i < kHalf / 16 ? n0 : I + n0 - kHalf) / 16 + i;
  bool real = false;
  if (int(threadIdx.x) < C::BN) {
    const int c = threadIdx.x;
    const int p = ws.p.sorted_pair[tile.row0 + c];
    // Padding rows borrow the tile's first (real) row's token, never written back: not one token's row
    // for every tile (a hot L2 line when all of them are copied).
    const int token = (p >= 0 ? p : ws.p.sorted_pair[tile.row0]) / T;
    xoff[c] = uint32_t(token) * uint32_t(H);
    colmul[c] = numerics::exp2_f32(ws.xr[2 * token]);
    tok[c] = p >= 0 ? token : -1;
    xflag[c] = p >= 0 && ws.xr[2 * token + 1];
    real = p >= 0;
  }
  const int nreal = __syncthreads_count(real);
  float acc[C::MT][C::NG][4];
  // Split K (S > 1): block z runs k-blocks [z KBp, (z + 1) KBp); the last part to arrive sums the parts
  // in part order (deterministic) and runs the epilogue; the others return.
  const int z = S > 1 ? int(blockIdx.x) / nby : 0, KBp = KB / S;
  const uint8_t* wq = a.gate_up_weight_shuffled + int64_t(tile.expert) * 2 * I * (H / 2) + z * KBp * 256;
  const uint8_t* wsc = a.gate_up_weight_scale + int64_t(tile.expert) * 2 * I * KB + z * KBp;
  bool done = false;
  moe_wide27::dispatch_cols<C>(nreal, [&](auto n_tag) {
    constexpr int NC = decltype(n_tag)::value;
    moe_fp8r::run_mainloop<C, NC, FORCE>(wq, wsc, ws.p.x8 + z * KBp * 32, KB, KBp, rg, xoff, smem, acc, rref, wflag);
    if constexpr (S > 1) {
      const moe_wide16::AccIndex<C> ixs;
#pragma unroll
      for (int m = 0; m < C::MT; ++m)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float rowmul = numerics::exp2_f32(rref[ixs.row(m, 2 * h)]);
#pragma unroll
          for (int j = 0; j < NC / 8; ++j) {
            acc[m][j][2 * h] *= rowmul;
            acc[m][j][2 * h + 1] *= rowmul;
          }
        }
      const size_t blk = size_t(bx) * nby + by;
      constexpr int kVec = C::MT * C::NG * C::kThreads;  // float4 a part
      float4* parts = reinterpret_cast<float4*>(sp.part) + blk * S * kVec;
      const int tid = threadIdx.x;
#pragma unroll
      for (int m = 0; m < C::MT; ++m)
#pragma unroll
        for (int j = 0; j < NC / 8; ++j)
          parts[z * kVec + (m * C::NG + j) * C::kThreads + tid] =
              make_float4(acc[m][j][0], acc[m][j][1], acc[m][j][2], acc[m][j][3]);
      int32_t* pf = sp.pflag + blk * S * C::BM;
      for (int r = tid; r < C::BM; r += C::kThreads) pf[z * C::BM + r] = wflag[r];
      __threadfence();
      __syncthreads();
      if (tid == 0) last = atomicAdd(&sp.cnt[blk], 1) == S - 1;
      __syncthreads();
      if (!last) {
        done = true;
        return;
      }
      __threadfence();
#pragma unroll
      for (int m = 0; m < C::MT; ++m)
#pragma unroll
        for (int j = 0; j < NC / 8; ++j) {
          const float4 own = make_float4(acc[m][j][0], acc[m][j][1], acc[m][j][2], acc[m][j][3]);
          float4 t = z == 0 ? own : __ldcg(parts + (m * C::NG + j) * C::kThreads + tid);
          for (int q = 1; q < S; ++q) {
            const float4 v = q == z ? own : __ldcg(parts + q * kVec + (m * C::NG + j) * C::kThreads + tid);
            t.x += v.x;
            t.y += v.y;
            t.z += v.z;
            t.w += v.w;
          }
          acc[m][j][0] = t.x;
          acc[m][j][1] = t.y;
          acc[m][j][2] = t.z;
          acc[m][j][3] = t.w;
        }
      __syncthreads();  // every thread read rref above
      for (int r = tid; r < C::BM; r += C::kThreads) {
        int f = 0;
        for (int q = 0; q < S; ++q) f |= __ldcg(pf + q * C::BM + r);
        wflag[r] = f;
        rref[r] = 0;  // the parts are scaled already
      }
      if (tid == 0) sp.cnt[blk] = 0;  // ready for the next call (the prologue zeroes it too)
      __syncthreads();
    }
  });
  if (done) return;
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
  if (int(threadIdx.x) < C::BN) mine |= xflag[threadIdx.x] != 0;
  if (__syncthreads_or(mine)) {
    const int warp = threadIdx.x / kLanes;
    for (int idx = warp; idx < C::BN * C::BM; idx += C::kThreads / kLanes) {
      const int c = idx / C::BM, r = idx % C::BM;
      if (tok[c] < 0 || !(wflag[r] || xflag[c])) continue;
      const int64_t n = int64_t(tile.expert) * 2 * I + rg[r / 16] * 16 + r % 16;
      const int t = tok[c];
      const float v = moe_fp8r::exact_dot(a.gate_up_weight + n * (H / 2), a.gate_up_weight_scale + n * KB,
                                          ws.p.x8 + int64_t(t) * H, ws.p.xs + int64_t(t) * KB, ws.xr[2 * t + 1] != 0,
                                          ws.xr[2 * t], KB);
      if (threadIdx.x % kLanes == 0) tile_f[c * kStride + r] = v;
    }
    __syncthreads();
  }

  {
    static_assert(C::BN * (C::BM / 16) % C::kThreads == 0, "whole passes");
    moe_fp8r::swiglu_requant<C, FORCE>(tile_f, tok, tile.row0, n0, I, ws);  // moe_fp8r's epilogue
  }
  // OVL: this block's a8 / as / aflag stores before the tile's count (down waits for I / (BM / 2) of them).
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(ready + bx, 1);
}

template <class C, int NCOLS, int FORCE, class Wait>
__device__ inline void down_run(const MoeArgs& a, const Ws& ws, const Tile& tile, int s0, int s1, const int* pair,
                                const float* weight, int* aflg, int* rref, int* wflag, uint8_t* smem, Wait wait) {
#if defined(MOE_WG8_DEVICE)
  using L = moe_wide27::DLayout<C>;
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, KB = I / 32;
  const int tid = threadIdx.x, lane = tid % kLanes, wm = tid / kLanes;
  const int g = lane / 4;
  const int nk = KB / C::KS;
  const int nf = (s1 - s0) * nk;
  const uint32_t rg_bytes = uint32_t(KB) * 256u;
  const uint8_t* w = a.down_weight_shuffled + int64_t(tile.expert) * H * (I / 2);
  const uint8_t* wsc = a.down_weight_scale + int64_t(tile.expert) * H * KB;
  const uint32_t slice_w = uint32_t(C::BM / 16) * rg_bytes, slice_s = uint32_t(C::BM) * uint32_t(KB);
  uint8_t* act = smem + L::kPipeBytes;
  const uint32_t sbo = uint32_t(I) * 8u;  // bytes between 8-row core-matrix groups of act
  uint64_t pol = 0;
  if constexpr (C::EF) pol = moe_fp8r::policy_evict_first();

  uint32_t woff[C::kWPer];
#pragma unroll
  for (int n = 0; n < C::kWPer; ++n) {
    const int i = tid + n * C::kThreads, r = i / (C::KS * 16), ch = i % (C::KS * 16);
    woff[n] = uint32_t(r) * rg_bytes + uint32_t(ch) * 16u;
  }
  const int srow = tid % C::BM;
  const uint32_t soff = uint32_t(srow) * uint32_t(KB);
  auto load = [&](int slot, int sl, int q) {
    uint8_t* st = smem + slot * L::kStageBytes;
    const uint8_t* wb = w + uint32_t(sl) * slice_w + uint32_t(q * C::KS) * 256u;
#pragma unroll
    for (int n = 0; n < C::kWPer; ++n) {
      if constexpr (C::EF) moe_fp8r::cp_async16_ef(st + C::kW + (tid + n * C::kThreads) * 16, wb + woff[n], pol);
      else cp_async<16>(st + C::kW + (tid + n * C::kThreads) * 16, wb + woff[n]);
    }
    if (C::BM == C::kThreads || tid < C::BM)
      cp_async<C::KS>(st + C::kWs + srow * C::KS, wsc + uint32_t(sl) * slice_s + q * C::KS + soff);
  };
  auto load_act = [&]() {
    const int chunks = I / 16;  // 16-byte chunks of a row
    const uint8_t* src = ws.p.a8 + int64_t(tile.row0) * I;
    for (int i = tid; i < NCOLS * chunks; i += C::kThreads) {
      const int c = (i / (8 * chunks)) * 8 + i % 8, ch = (i / 8) % chunks;
      cp_async<16>(act + (c / 8) * sbo + ch * 128 + (c % 8) * 16, src + int64_t(c) * I + ch * 16);
    }
  };

  float acc[C::MT][C::NG][4];
  int lo[C::MT][2];
  uint32_t chk[C::MT][2], c0[C::MT][2], c1[C::MT][2];
  auto zero = [&]() {
#pragma unroll
    for (int m = 0; m < C::MT; ++m)
#pragma unroll
      for (int j = 0; j < C::NG; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[m][j][i] = 0.0f;
  };
  zero();
  const uint32_t act_s = static_cast<uint32_t>(__cvta_generic_to_shared(act));
  const uint64_t desc_act = moe_fp8r::smem_desc(act_s, sbo);
  uint32_t areg[C::NB][C::MT][4];

  auto body = [&](const uint8_t* st, int q) {
    uint32_t sw[C::MT][2][C::KS / 4];
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
    uint32_t wn[C::MT][2];
    auto read_words = [&](int u) {
#pragma unroll
      for (int m = 0; m < C::MT; ++m) {
        const uint8_t* kb = st + C::kW + ((wm * C::MT + m) * C::KS + u) * 256;
        wn[m][0] = *reinterpret_cast<const uint32_t*>(kb + 4 * lane);
        wn[m][1] = *reinterpret_cast<const uint32_t*>(kb + 128 + 4 * lane);
      }
    };
    read_words(0);
    const uint64_t desc0 = desc_act + uint64_t(q * C::KS * 256 / 16);
    auto kblock = [&](auto u_tag) {
      constexpr int u = decltype(u_tag)::value;
      constexpr int b = u % C::NB;
      uint32_t wc[C::MT][2];
#pragma unroll
      for (int m = 0; m < C::MT; ++m) {
        wc[m][0] = wn[m][0];
        wc[m][1] = wn[m][1];
      }
#pragma unroll
      for (int m = 0; m < C::MT; ++m) {
        uint32_t t0[2], t1[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint32_t bb = __byte_perm(sw[m][h][u / 4], 0u, 0x4440u + (u % 4));
          t0[h] = bb * moe_fp8r::kK0 + c0[m][h];
          t1[h] = bb * moe_fp8r::kK1 + c1[m][h];
          chk[m][h] = max(chk[m][h], bb - uint32_t(lo[m][h]));
        }
        moe_fp8r::decode8(wc[m][0], t0[0], t1[0], areg[b][m][0], areg[b][m][2]);
        moe_fp8r::decode8(wc[m][1], t0[1], t1[1], areg[b][m][1], areg[b][m][3]);
      }
      moe_wg8::wg_fence();
#pragma unroll
      for (int m = 0; m < C::MT; ++m) moe_fp8r::wgmma_e4m3<NCOLS, C::NG>(acc[m], areg[b][m], desc0 + uint64_t(u * 256 / 16));
      moe_wg8::wg_commit();
      if constexpr (u + 1 < C::KS) read_words(u + 1);
      moe_wg8::wg_wait<C::NB - 1>();
    };
    [&]<int... U>(std::integer_sequence<int, U...>) {
      (kblock(std::integral_constant<int, U>{}), ...);
    }(std::make_integer_sequence<int, C::KS>{});
  };

  int ld_sl = s0, ld_q = 0;
#pragma unroll
  for (int s = 0; s < C::STAGES - 1; ++s) {
    if (s < nf) {
      load(s, ld_sl, ld_q);
      if (++ld_q == nk) ld_q = 0, ++ld_sl;
    }
    cp_commit();
  }
  // DEP (dependent launch): the weight stages above do not depend on gate_up; its output (the SwiGLU
  // rows and their flags) is read after the wait.
  wait();  // the tile's gate_up blocks are done (their stores visible through L2)
  int flg = 0;
  if (tid < C::BN) {
    aflg[tid] = pair[tid] >= 0 && __ldcg(ws.aflag + tile.row0 + tid);
    flg = aflg[tid];
  }
  const bool any_aflag = __syncthreads_or(flg) != 0;
  load_act();
  cp_commit();

  const moe_wide16::AccIndex<C> ix;
  int f = 0;
  for (int sl = s0; sl < s1; ++sl) {  // (slices outside, stages inside: no accumulator access in a branch)
    for (int q = 0; q < nk; ++q, ++f) {
      if (f == 0) cp_wait<0>();
      else cp_wait<C::STAGES - 2>();
      moe_wg8::wg_wait<0>();
      moe_wg8::proxy_fence();
      __syncthreads();  // step f landed everywhere; step f - 1 no longer read
      const uint8_t* st = smem + (f % C::STAGES) * L::kStageBytes;
      if (f + C::STAGES - 1 < nf) {
        load((f + C::STAGES - 1) % C::STAGES, ld_sl, ld_q);
        if (++ld_q == nk) ld_q = 0, ++ld_sl;
      }
      cp_commit();
      if (q == 0) {  // the slice's window from its first stage (largest byte at d = 3)
#pragma unroll
        for (int m = 0; m < C::MT; ++m)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const uint8_t* p = st + C::kWs + ((wm * C::MT + m) * 16 + g + 8 * h) * C::KS;
            uint32_t v;
            if constexpr (C::KS == 8) {
              const uint2 vv = *reinterpret_cast<const uint2*>(p);
              v = __vmaxu4(vv.x, vv.y);
            } else {
              v = *reinterpret_cast<const uint32_t*>(p);
            }
            v = __vmaxu4(v, v >> 16);
            v = __vmaxu4(v, v >> 8);
            lo[m][h] = int(v & 0xFFu) - 8;
            c0[m][h] = moe_fp8r::kT0 - uint32_t(lo[m][h] + 5) * moe_fp8r::kK0;
            c1[m][h] = moe_fp8r::kT1 - uint32_t(lo[m][h] + 5) * moe_fp8r::kK1;
            chk[m][h] = 0u;
          }
      }
      body(st, q);
    }
    // The slice's last stage is in: weighted rows out, then its fix-up.
    moe_wg8::wg_wait<0>();
#pragma unroll
    for (int m = 0; m < C::MT; ++m)
#pragma unroll
      for (int j = 0; j < C::NG; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) moe_wg8::reg_fence(acc[m][j][i]);
    bool bad = false;
#pragma unroll
    for (int m = 0; m < C::MT; ++m)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float rowmul = numerics::exp2_f32(lo[m][h] + 5 - 127);
        bad |= chk[m][h] > 11u || (FORCE && ix.row(m, 2 * h) % 97 == 11);
#pragma unroll
        for (int j = 0; j < C::NG; ++j) {
          acc[m][j][2 * h] *= rowmul;
          acc[m][j][2 * h + 1] *= rowmul;
        }
      }
    const int n0 = sl * C::BM;
    moe_tiled::store_weighted_rows<C>(ix, acc, pair, weight, ws.p.y, H, n0);
    if (__syncthreads_or(bad || any_aflag)) {
#pragma unroll
      for (int m = 0; m < C::MT; ++m)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = ix.row(m, 2 * h);
          if (tid % 4 == 0) {
            rref[r] = lo[m][h] + 5 - 127;
            wflag[r] = chk[m][h] > 11u || (FORCE && r % 97 == 11);
          }
        }
      __syncthreads();
      const int warp = tid / kLanes;
      for (int idx = warp; idx < C::BN * C::BM; idx += C::kThreads / kLanes) {
        const int c = idx / C::BM, r = idx % C::BM;
        if (pair[c] < 0 || !(wflag[r] || aflg[c])) continue;
        const int64_t n = int64_t(tile.expert) * H + n0 + r;
        const int64_t row = tile.row0 + c;
        const float v = moe_fp8r::exact_dot_cg(a.down_weight + n * (I / 2), a.down_weight_scale + n * KB,
                                            ws.p.a8 + row * I, ws.p.as + row * KB, aflg[c] != 0, 0, KB);
        if (lane == 0) ws.p.y[int64_t(pair[c]) * H + n0 + r] = weight[c] * v;
      }
      __syncthreads();
    }
    zero();
  }
  cp_wait<0>();
#else
  (void)a, (void)ws, (void)tile, (void)s0, (void)s1, (void)pair, (void)weight, (void)aflg;
  (void)rref, (void)wflag, (void)smem;
#if defined(__CUDA_ARCH__)
  __trap();  // built without sm_90a features: never dispatched to (needs sm_90a)
#endif
#endif
}


// The combine of column group g (columns [g gw, min(H, (g + 1) gw))) for items (token, 4 columns) begin + kIt t +
// step i (t: the thread) below end (-1: all): out = bf16 of the token's slots summed in slot order from 0.0f
// (moe_pipeline::combine_rows' order), every slot's float4 loaded (L2) before the sums.
template <int kThreads>
__device__ inline void combine_items(const MoeArgs& a, const Ws& ws, int g, int gw, int64_t begin, int64_t step, int64_t end) {
  const int H = a.cfg.d_hidden;
  const int c0 = g * gw, w = min(H, c0 + gw) - c0, w4 = w / 4;
  const int M = a.cfg.bs, T = a.cfg.total_top_k;
  const int64_t items = end < 0 ? int64_t(M) * w4 : min(end, int64_t(M) * w4);
  // kIt items a thread and step, every slot's float4 loaded before the sums (kMaxT slots unrolled)
  constexpr int kIt = 2, kMaxT = 12;
  for (int64_t it0 = begin + int64_t(threadIdx.x) * kIt; it0 < items; it0 += step) {
    float4 v[kIt][kMaxT];
    const float* yt[kIt];
#pragma unroll
    for (int q = 0; q < kIt; ++q) {
      const int64_t it = min(it0 + q, items - 1);
      const int t = int(it / w4), n = c0 + int(it % w4) * 4;
      yt[q] = ws.p.y + int64_t(t) * T * H + n;
#pragma unroll
      for (int j = 0; j < kMaxT; ++j)
        if (j < T) v[q][j] = __ldcg(reinterpret_cast<const float4*>(yt[q] + int64_t(j) * H));
    }
#pragma unroll
    for (int q = 0; q < kIt; ++q) {
      const int64_t it = it0 + q;
      if (it >= items) break;
      const int t = int(it / w4), n = c0 + int(it % w4) * 4;
      float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
#pragma unroll
      for (int j = 0; j < kMaxT; ++j)
        if (j < T) {
          s0 += v[q][j].x;
          s1 += v[q][j].y;
          s2 += v[q][j].z;
          s3 += v[q][j].w;
        }
      for (int j = kMaxT; j < T; ++j) {  // (more slots than unrolled: in order after the first kMaxT)
        const float4 u = __ldcg(reinterpret_cast<const float4*>(yt[q] + int64_t(j) * H));
        s0 += u.x;
        s1 += u.y;
        s2 += u.z;
        s3 += u.w;
      }
      const uint32_t lo = uint32_t(numerics::f32_to_bf16(s0)) | (uint32_t(numerics::f32_to_bf16(s1)) << 16);
      const uint32_t hi = uint32_t(numerics::f32_to_bf16(s2)) | (uint32_t(numerics::f32_to_bf16(s3)) << 16);
      *reinterpret_cast<uint2*>(a.out + int64_t(t) * H + n) = make_uint2(lo, hi);
    }
  }
}

// Stage 2 + combine, one 1-D grid (see the header comment). Down blocks: NS slices of tile n_tiles - 1 - x
// (moe_wide27::down_slices' work), waiting for ready[x] == need. FC: combine blocks (CB a column group).
struct Sync {
  int32_t* ready;  // [tiles_max] gate_up blocks done per tile
  int32_t* gcnt;   // [n_groups] down blocks done per column group
  int need;        // gate_up blocks a tile
  int tiles_max, n_groups;
};

template <class C, int FORCE, int FC>
__global__ __launch_bounds__(C::kThreads, C::kMinBlocks) void down_comb(MoeArgs a, Ws ws, Sync sy, int NS) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ int pair[C::BN];
  __shared__ float weight[C::BN];
  __shared__ int aflg[C::BN];
  __shared__ int wflag[C::BM];
  __shared__ int rref[C::BM];
  moe_wg8::dep_release();  // the combine kernel may be scheduled once every block of this grid started
  const int x = int(blockIdx.x) % sy.tiles_max, g = int(blockIdx.x) / sy.tiles_max;  // group-major
  const int n_tiles = *ws.p.n_tiles;
  const int H = a.cfg.d_hidden;
  if (x >= n_tiles) return;
  const Tile tile = ws.p.tiles[n_tiles - 1 - x];
  const int n_slices = H / C::BM;
  const int s0 = g * NS, s1 = min(n_slices, s0 + NS);
  int real = 0;
  if (int(threadIdx.x) < C::BN) {
    const int c = threadIdx.x;
    const int p = ws.p.sorted_pair[tile.row0 + c];
    pair[c] = p;
    weight[c] = p >= 0 ? a.topk_weights[p] : 0.0f;
    real = p >= 0;
  }
  const int nreal = __syncthreads_count(real);
  auto wait = [&]() {
    if (threadIdx.x == 0) spin_until(sy.ready + x, sy.need);
    __syncthreads();
  };
  moe_wide27::dispatch_cols<C>(nreal, [&](auto n_tag) {
    down_run<C, decltype(n_tag)::value, FORCE>(a, ws, tile, s0, s1, pair, weight, aflg, rref, wflag, smem, wait);
  });
  if constexpr (FC == 4) {
    __threadfence();  // this thread's y stores before the group's count
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(sy.gcnt + g, 1);
  }
}

// FC 4: the combine as a programmatic dependent of down_comb (released at down's start, so its blocks are scheduled
// once every down block started, as down's SMs drain), blocks in column-group order (CB a group), each waiting only for
// its own group's down blocks (gcnt[g] == n_tiles) instead of for the whole down grid.
template <int kThreads>
__global__ __launch_bounds__(kThreads) void combine_groups(MoeArgs a, Ws ws, const int32_t* gcnt, int gw, int CB) {
  const int g = int(blockIdx.x) / CB, ci = int(blockIdx.x) % CB;
  if (threadIdx.x == 0) spin_until(gcnt + g, *ws.p.n_tiles);
  __syncthreads();
  combine_items<kThreads>(a, ws, g, gw, int64_t(ci) * kThreads * 2, int64_t(CB) * kThreads * 2, -1);
}

inline bool supports(const MoeConfig& c, int bn) { return moe_wide27::supports(c, bn) && c.d_hidden % 4 == 0; }

// The layer: moe_wide27's quantize_route (zeroes the split-K, ready and group counters), gate_up<G1> (S K-parts,
// counts per tile), down_comb<G2> (NS slices a block, OVL; FC: the combine inside, else moe_rows8::combine as a
// dependent launch).
template <class G1, class G2, int S, int NS, int FC, int FORCE = 0, int QT = 1024>
struct Plan {
  static constexpr int T = G1::BN;
  static_assert(G1::BN == G2::BN, "one tile list");
  static_assert(FC == 0 || FC == 4, "FC: 0 (combine after down) or 4 (per column group)");
  static constexpr int kCT = 256;  // FC 4: combine threads a block
  static int64_t blocks_y(const moe_pipeline::Sizes& s) { return s.I / (G1::BM / 2); }
  static int n_groups(const moe_pipeline::Sizes& s) { return int((s.H / G2::BM + NS - 1) / NS); }
  static int n_cb(const MoeConfig& c) {  // FC 4: combine blocks a group, 2 float4 items a thread
    const moe_pipeline::Sizes s = moe_pipeline::sizes_of(c, T);
    const int64_t items = s.M * (NS * G2::BM / 4);
    return int(std::max<int64_t>(1, (items + 2 * kCT - 1) / (2 * kCT)));
  }
  static size_t part_floats(const moe_pipeline::Sizes& s) {
    return S > 1 ? size_t(s.tiles_max * blocks_y(s)) * S * G1::MT * G1::NG * 4 * G1::kThreads : 0;
  }
  static size_t n_flags(const moe_pipeline::Sizes& s) { return S > 1 ? size_t(s.tiles_max * blocks_y(s)) * S * G1::BM : 0; }
  static size_t n_split(const moe_pipeline::Sizes& s) { return S > 1 ? size_t(s.tiles_max * blocks_y(s)) : 0; }
  static size_t n_cnt(const moe_pipeline::Sizes& s) { return n_split(s) + size_t(s.tiles_max) + size_t(n_groups(s)); }
  static size_t workspace_bytes(const MoeConfig& c) {
    const moe_pipeline::Sizes s = moe_pipeline::sizes_of(c, T);
    return moe_wide27::carve27(c, T, nullptr, nullptr, nullptr, part_floats(s), n_flags(s), n_cnt(s));
  }
  static bool fits(const MoeConfig& c) {
    if (!supports(c, T)) return false;
    const moe_pipeline::Sizes s = moe_pipeline::sizes_of(c, T);
    const int KB = int(s.H / 32);
    return s.I % (G1::BM / 2) == 0 && s.H % G2::BM == 0 && KB % (S * G1::KS) == 0 && (s.I / 32) % G2::KS == 0 &&
           moe_wide27::down_slices_smem<G2>(int(s.I)) <= 227 * 1024 && s.tiles_max * blocks_y(s) < (int64_t(1) << 30);
  }
  static void launch(const MoeArgs& a) {
    if (a.workspace_size < workspace_bytes(a.cfg)) throw std::invalid_argument("moe_mxfp4: workspace too small");
    if (!fits(a.cfg)) throw std::invalid_argument("moe_mxfp4: shape not supported by the w32 kernels");
    const moe_pipeline::Sizes s = moe_pipeline::sizes_of(a.cfg, T);
    Ws ws;
    Split sp;
    moe_wide27::carve27(a.cfg, T, a.workspace, &ws, &sp, part_floats(s), n_flags(s), n_cnt(s));
    int32_t* ready = sp.cnt + n_split(s);
    int32_t* gcnt = ready + s.tiles_max;
    constexpr int kQTokens = moe_wide27::kPrologueThreads / QT;
    const unsigned qblocks = unsigned((s.M + kQTokens - 1) / kQTokens);
    moe_rows8::launch_ex(moe_wide27::quantize_route<FORCE, QT>, dim3(1 + qblocks), dim3(moe_wide27::kPrologueThreads),
                         size_t(2 * s.E + moe_wide27::kPrologueThreads) * sizeof(int), false, "w32 quantize + route", a,
                         ws, int(s.P), int(s.E), T, int(s.rows_max), sp.cnt, int(n_cnt(s)));
    constexpr int sm1 = moe_wide27::gate_up_smem<G1>();
    auto* gk = gate_up<G1, FORCE, S>;
    moe_wg8::allow_smem(gk, sm1);
    moe_rows8::launch_ex(gk, dim3(unsigned(S * blocks_y(s)), unsigned(s.tiles_max)), dim3(G1::kThreads), sm1,
                         true, "w32 gate_up", a, ws, sp, ready);
    const int G = n_groups(s);
    const Sync sy{ready, gcnt, int(blocks_y(s)), int(s.tiles_max), G};
    const int sm2 = moe_wide27::down_slices_smem<G2>(int(s.I));
    auto* dk = down_comb<G2, FORCE, FC>;
    moe_wg8::allow_smem(dk, sm2);
    moe_rows8::launch_ex(dk, dim3(unsigned(int64_t(G) * s.tiles_max)), dim3(G2::kThreads), size_t(sm2), true,
                         "w32 down", a, ws, sy, NS);
    if constexpr (FC == 0) {
      constexpr int kCombineThreads = 256;
      const int64_t n = int64_t(a.cfg.bs) * a.cfg.d_hidden;
      moe_rows8::launch_ex(moe_rows8::combine, dim3(unsigned((n + kCombineThreads - 1) / kCombineThreads)),
                           dim3(kCombineThreads), 0, true, "combine", static_cast<const float*>(ws.p.y),
                           int64_t(a.cfg.bs), int(a.cfg.d_hidden), int(a.cfg.total_top_k), a.out);
    } else {
      const int CB = n_cb(a.cfg);
      moe_rows8::launch_ex(combine_groups<kCT>, dim3(unsigned(int64_t(G) * CB)), dim3(kCT), 0, true, "w32 combine", a,
                           ws, static_cast<const int32_t*>(gcnt), int(NS * G2::BM), CB);
    }
  }
};

// The path for a composed variant: moe_wide27::PathOf's shape split (PMany: tiles_max x d_expert / 64 >= 1000, i.e.
// E 257 bs 512; PFew otherwise).
template <class PMany, class PFew>
using PathOf = moe_wide27::PathOf<PMany, PFew>;

using G27 = moe_wide27::G27;
// v31: v27's configuration (gate_up 1 part + 4 slices a down block at E 257 bs 512, 2 parts + 2 slices at E 33 bs 128;
// prologue 256 / 1024 threads a token) with OVL (the tile-major gate_up grid) and the combine after down (FC 0).
using Path = PathOf<Plan<G27, G27, 1, 4, 0, 0, 256>, Plan<G27, G27, 2, 2, 0, 0, 1024>>;
using PathForced = PathOf<Plan<G27, G27, 1, 4, 0, 1, 256>, Plan<G27, G27, 2, 2, 0, 1, 1024>>;
// v31c (measurement): the combine per column group (FC 4).
using PathC = PathOf<Plan<G27, G27, 1, 4, 4, 0, 256>, Plan<G27, G27, 2, 2, 4, 0, 1024>>;
#endif  // MOE_WG8_HOST

}  // namespace
}  // namespace moe_w32
