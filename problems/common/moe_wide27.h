// The 32-row MoE shapes (bs x k / routed experts in (8, 40]: E 257 bs 512, E 33 bs 128) on fp8 e4m3
// wgmma with small N (helper moe-wide3, session 7; docs/perf.md, section "moe_mxfp4 v27"). v22's path (moe_wide22.h)
// decodes every weight into bf16 for mma.sync m16n8k16 (~20 instructions per 8 values + 2 HMMA per
// column group and 16 rows); these shapes are decode-bound (few rows per expert), so this path runs the
// weight decode of moe_fp8_rows.h (moe_fp8r: e2m1 -> e4m3 by a prmt table with the e8m0 scale folded
// against a per-row reference; ~12 instructions per 8 values) and feeds wgmma m64nNk32 with A in
// registers and the tile's sorted token rows as B in shared memory, N = the tile's real rows rounded
// up to BN / 2, 3 BN / 4 or BN. Numerics as moe_fp8r (exact products; the tensor unit's fp32
// accumulation order; out-of-window rows / tokens recomputed exactly by a fix-up that the benchmark
// data never takes).
//  - quantize_route: one launch; block 0 routes the pairs into BN-row tiles (moe_tiled::route_block,
//    clearing the SwiGLU row flags and the split-K counters), blocks 1.. quantize 1024 / QT tokens each
//    into e4m3 folded against the token's reference (moe_fp8r::quantize_hidden's rule, QT threads a token).
//  - gate_up (dependent launch): BM/2 gate + BM/2 up rows x BN tile rows a block, optionally split over S
//    K-parts (each part scaled by its row references into the workspace; the last part to arrive sums
//    them in part order, deterministic, and runs the epilogue), SwiGLU, bf16 rounding, requantization
//    into moe_fp8r's e4m3 format (reference 0, flags); A16: into v22's bf16-folded format for v22's down.
//  - down: down_slices (NS 128/256-row slices of d_hidden a block; the tile's activations in shared memory
//    once, one weight pipeline; optionally a dependent launch that prefetches its first weight stages
//    before waiting for gate_up) or one block a tile and slice; weighted rows into y; combine.
// Padding rows of a tile borrow its first row's token: with one token for every tile's padding rows the
// copies of those rows hit one L2 line from every SM (gate_up +46%, docs/perf.md, section "moe_mxfp4 v27", call 2).
// Measured (docs/perf.md, section "moe_mxfp4 v27", call 5, as v27b = v27): E 257 bs 512 402.1 us (v25 420.6), E 33 bs 128
// 143.6 us (v25 174.2); the 32-row outputs are bit-identical to the reference on the benchmark data.
// NVIDIA only (MOE_WG8_HOST) like moe_fp8_rows.h.
#pragma once
#include <algorithm>
#include <utility>

#include "problems/common/moe_fp8_rows.h"
#include "problems/common/moe_wide22.h"

namespace moe_wide27 {
namespace {

using moe_pipeline::Tile;
using moe_pipeline::Workspace;
using moe_tile::Bf16Folded;
using Ws = moe_fp8r::Ws;

// moe_pipeline's workspace with 2-byte activations (x8: the e4m3 hidden states in its first M H bytes;
// a8: bf16-folded a (A16) or e4m3 a in its first rows_max I bytes), then xr [M][2] and aflag [rows_max].
// Split-K buffers of gate_up (S > 1): per (tile, column block, part) the part's fp32 accumulators (scaled by
// their row references) and row flags, per (tile, column block) an arrival counter (zeroed by the prologue).
struct Split {
  float* part;
  int32_t* pflag;
  int32_t* cnt;
};

inline size_t carve27(const MoeConfig& c, int T, void* base, Ws* w, Split* sp = nullptr, size_t part_floats = 0,
                      size_t n_flags = 0, size_t n_cnt = 0) {
  Workspace p;
  size_t off = moe_pipeline::carve(c, T, base, &p, 2);
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(c, T);
  auto take = [&](size_t bytes) {
    void* q = base ? static_cast<char*>(base) + off : nullptr;
    off += moe_pipeline::align256(bytes);
    return q;
  };
  int32_t* xr = static_cast<int32_t*>(take(s.M * 2 * sizeof(int32_t)));
  int32_t* af = static_cast<int32_t*>(take(s.rows_max * sizeof(int32_t)));
  if (w) *w = Ws{p, xr, af};
  float* part = static_cast<float*>(take(part_floats * sizeof(float)));
  int32_t* pflag = static_cast<int32_t*>(take(n_flags * sizeof(int32_t)));
  int32_t* cnt = static_cast<int32_t*>(take(n_cnt * sizeof(int32_t)));
  if (sp) *sp = Split{part, pflag, cnt};
  return off;
}

#if defined(MOE_WG8_HOST)
using moe_tile::cp_async;
using moe_tile::cp_commit;
using moe_tile::cp_wait;
constexpr int kLanes = moe_tile::kMmaLanes;

// WM warps (whole warpgroups), each MT (1 or 2) 16-row groups; BN tile rows (NG = BN / 8 column groups);
// KS k-blocks a stage; STAGES stages; NB: wgmma groups in flight + 1; PF: the next k-block's weight
// words read before the wgmma wait; MINB: blocks per SM for the register budget; EF: weight copies with
// an L2 evict_first policy; NOBR: the next stage's copies issued without a branch (the last stage again past
// the end).
template <int WM_, int MT_, int BN_, int KS_, int STAGES_, int NB_ = 2, bool PF_ = true, int MINB_ = 1, bool EF_ = false,
          bool NOBR_ = false>
struct Cfg {
  static constexpr bool kNoBranch = NOBR_;
  static constexpr bool kZeroPad = false;  // down: the tile's padding rows of activations zero-filled, not read (v72)
  static constexpr int WM = WM_, MT = MT_, BN = BN_, NG = BN_ / 8, KS = KS_, STAGES = STAGES_, NB = NB_;
  static constexpr int kMinBlocks = MINB_;
  static constexpr bool PF = PF_, EF = EF_;
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
  static_assert(BN % 8 == 0 && BN <= 64 && BN <= kThreads, "one setup row a thread");
  static_assert(BM * KS % kThreads == 0 && BN * kXChunks % kThreads == 0, "copy split");
};

// Runs f(integral_constant<N>) with the tile's wgmma N for `rows` real rows: BN / 2, 3 BN / 4 or BN
// (BN 32: 16 / 24 / 32; BN 64: 32 / 48 / 64).
template <class C, class F>
__device__ inline void dispatch_cols(int rows, F&& f) {
  if (rows <= C::BN / 2) f(std::integral_constant<int, C::BN / 2>{});
  else if (rows <= 3 * C::BN / 4) f(std::integral_constant<int, 3 * C::BN / 4>{});
  else f(std::integral_constant<int, C::BN>{});
}

// Prologue: block 0 routes (BN-row tiles; clears the SwiGLU row flags and the split-K counters), blocks 1..
// quantize 1024 / QT tokens each (moe_fp8r::quantize_hidden's rule, QT threads a token, up to 4 groups of 8
// values a thread).
constexpr int kPrologueThreads = 1024, kQThreadsMin = 256;

template <int FORCE, int QT>
__global__ __launch_bounds__(kPrologueThreads) void quantize_route(MoeArgs a, Ws ws, int P, int E, int T, int rows_max,
                                                                   int32_t* cnt, int n_cnt) {
  moe_wg8::dep_release();
  extern __shared__ int smem_route[];
  const int tid = threadIdx.x;
  if (blockIdx.x == 0) {
    int32_t* af = ws.aflag;
    moe_tiled::route_block(a, ws.p, P, E, T, rows_max, tid, smem_route, [af](int r) { af[r] = 0; },
                           [](int, int) {});
    for (int i = tid; i < n_cnt; i += blockDim.x) cnt[i] = 0;
    return;
  }
  constexpr int kQThreads = QT, kQTokens = kPrologueThreads / QT;
  static_assert(kPrologueThreads % QT == 0 && QT >= kQThreadsMin, "whole tokens a block");
  constexpr int kWarps = kQThreads / kLanes, kMaxJ = 4;
  __shared__ int red[kQTokens][2][kWarps];
  const int sub = tid / kQThreads, st = tid % kQThreads;
  const int t = (int(blockIdx.x) - 1) * kQTokens + sub;
  const int M = a.cfg.bs, H = a.cfg.d_hidden, n8 = H / 8;
  const bool live = t < M;
  const uint16_t* hrow = a.hidden_states + int64_t(live ? t : 0) * H;
  moe_fp8r::TokenHeld cw[kMaxJ];
  int s[kMaxJ];
  int mx, mn;
#if MOE_QUANT_FAST
  moe_fp8r::token_scales<kQThreads>(hrow, st, n8, cw, s, mx, mn);
#else
  moe_fp8r::token_codes<kQThreads>(hrow, st, n8, cw, s, mx, mn);
#endif
  for (int o = kLanes / 2; o > 0; o >>= 1) {
    mx = max(mx, __shfl_xor(mx, o));
    mn = min(mn, __shfl_xor(mn, o));
  }
  if (st % kLanes == 0) {
    red[sub][0][st / kLanes] = mx;
    red[sub][1][st / kLanes] = mn;
  }
  __syncthreads();
  if (!live) return;
  mx = red[sub][0][0];
  mn = red[sub][1][0];
  for (int w = 1; w < kWarps; ++w) {
    mx = max(mx, red[sub][0][w]);
    mn = min(mn, red[sub][1][w]);
  }
  const bool any = mx > -100000;
  const bool flag = (any && mx - mn > 14) || (FORCE && t % 37 == 5);
  const int R = any ? mx - 6 : 0;
  moe_fp8r::token_store<kQThreads>(cw, s, st, n8, flag, R, ws.p.x8, ws.p.xs, t, H);
  if (st == 0) {
    ws.xr[2 * t] = R;
    ws.xr[2 * t + 1] = flag;
  }
}

template <class C>
constexpr int gate_up_smem() {
  return C::kPipeBytes > C::BN * (C::BM + 4) * 4 ? C::kPipeBytes : C::BN * (C::BM + 4) * 4;
}

// Stage 1 (dependent launch). grid (tiles_max, I / (BM / 2)), tiles in reverse route order (the shared
// expert's full tiles first): BM/2 gate + BM/2 up rows x BN sorted rows, SwiGLU, bf16 rounding,
// requantization (A16: v22's bf16-folded a; else moe_fp8r's e4m3 a with its scale bytes and row flags).
// One block's work: tile bt (in reverse route order), column block by of nby, split-K part z. Returns whether the
// block ran the epilogue (false: no such tile, or a split-K part that was not the last to arrive).
template <class C, bool A16, int FORCE, int S>
__device__ inline bool gate_up_block(const MoeArgs& a, const Ws& ws, const Split& sp, int bt, int by, int nby, int z) {
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
  if (bt >= n_tiles) return false;
  const Tile tile = ws.p.tiles[n_tiles - 1 - bt];
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, T = a.cfg.total_top_k, KB = H / 32;
  constexpr int kHalf = C::BM / 2;
  const int n0 = by * kHalf;
  for (int i = threadIdx.x; i < C::BM / 16; i += C::kThreads) rg[i] = (i < kHalf / 16 ? n0 : I + n0 - kHalf) / 16 + i;
#if MOE_NEAR_BAND
  __shared__ float near_weight[C::BN];  // the rows' routing weights (swiglu_requant_near's filter)
#endif
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
#if MOE_NEAR_BAND
    near_weight[c] = p >= 0 ? a.topk_weights[p] : 0.0f;  // loaded under the mainloop
#endif
  }
  const int nreal = __syncthreads_count(real);
  float acc[C::MT][C::NG][4];
  // Split K (S > 1): block z runs k-blocks [z KBp, (z + 1) KBp); the last part to arrive sums the parts
  // in part order (deterministic) and runs the epilogue; the others return.
  const int KBp = KB / S;
  const uint8_t* wq = a.gate_up_weight_shuffled + int64_t(tile.expert) * 2 * I * (H / 2) + z * KBp * 256;
  const uint8_t* wsc = a.gate_up_weight_scale + int64_t(tile.expert) * 2 * I * KB + z * KBp;
  bool done = false;
  dispatch_cols<C>(nreal, [&](auto n_tag) {
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
      const size_t blk = size_t(bt) * nby + by;
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
  if (done) return false;
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
  const auto rows = moe_fp8r::gate_up_exact_rows(a, ws, tile.expert, rg, tok);
  if (__syncthreads_or(mine)) {
    const int warp = threadIdx.x / kLanes;
    for (int idx = warp; idx < C::BN * C::BM; idx += C::kThreads / kLanes) {
      const int c = idx / C::BM, r = idx % C::BM;
      if (tok[c] < 0 || !(wflag[r] || xflag[c])) continue;
      const moe_fp8r::ExactRow er = rows(c, r);
      const float v = moe_fp8r::exact_dot(er, KB);
      if (threadIdx.x % kLanes == 0) tile_f[c * kStride + r] = v;
    }
    __syncthreads();
  }

  if constexpr (A16) {
    // v22's epilogue (moe_wide16n::gate_up_tile): one value a lane, the block's amax over 32 lanes.
    constexpr int kB = mxfp4::kBlock, kGroups = C::BN * (kHalf / kB);
    const int lane = threadIdx.x % kB;
    for (int grp = threadIdx.x / kB; grp < kGroups; grp += C::kThreads / kB) {
      const int c = grp / (kHalf / kB), n = (grp % (kHalf / kB)) * kB + lane;
      const float gate = tile_f[c * kStride + n], up = tile_f[c * kStride + kHalf + n];
      int s;
      const float xv = moe_tiled::swiglu_bf16_block_scale(gate, up, s);
      if (tok[c] < 0) continue;
      const int64_t row = tile.row0 + c;
      const int col = n0 + (n & ~7) + Bf16Folded::position(n & 7);
      const uint32_t bits = Bf16Folded::encode(mxfp4::quantize_dynamic_code(xv, s), s);
      reinterpret_cast<uint16_t*>(ws.p.a8)[row * I + col] = uint16_t(bits);
    }
  } else {
    static_assert(C::BN * (C::BM / 16) % C::kThreads == 0, "whole passes");
#if MOE_NEAR_BAND
    moe_fp8r::swiglu_requant_near<C, FORCE>(tile_f, tok, tile.row0, n0, I, KB, ws, near_weight, rows);
#else
    moe_fp8r::swiglu_requant<C, FORCE>(tile_f, tok, tile.row0, n0, I, ws);  // moe_fp8r's epilogue
#endif
  }
  return true;
}

template <class C, bool A16, int FORCE, int S>
__global__ __launch_bounds__(C::kThreads, C::kMinBlocks) void gate_up(MoeArgs a, Ws ws, Split sp) {
  gate_up_block<C, A16, FORCE, S>(a, ws, sp, int(blockIdx.x), int(blockIdx.y), int(gridDim.y), S > 1 ? int(blockIdx.z) : 0);
}

// Stage 2. grid (tiles_max, H / BM), tiles in reverse route order: y[pair, n] = weight * (a W_down^T)
// from gate_up's e4m3 a (moe_fp8r::down with BN-row tiles).
template <class C, int FORCE>
__global__ __launch_bounds__(C::kThreads, C::kMinBlocks) void down(MoeArgs a, Ws ws) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ int rg[C::BM / 16];
  __shared__ uint32_t xoff[C::BN];
  __shared__ int pair[C::BN];
  __shared__ float weight[C::BN];
  __shared__ int aflg[C::BN];
  __shared__ int wflag[C::BM];
  __shared__ int rref[C::BM];
  const int n_tiles = *ws.p.n_tiles;
  if (int(blockIdx.x) >= n_tiles) return;
  const Tile tile = ws.p.tiles[n_tiles - 1 - int(blockIdx.x)];
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, KB = I / 32;
  const int n0 = blockIdx.y * C::BM;
  for (int i = threadIdx.x; i < C::BM / 16; i += C::kThreads) rg[i] = n0 / 16 + i;
  bool real = false;
  if (int(threadIdx.x) < C::BN) {
    const int c = threadIdx.x;
    const int row = tile.row0 + c;
    const int p = ws.p.sorted_pair[row];
    xoff[c] = uint32_t(row) * uint32_t(I);
    pair[c] = p;
    weight[c] = p >= 0 ? a.topk_weights[p] : 0.0f;
    aflg[c] = p >= 0 && ws.aflag[row];
    real = p >= 0;
  }
  const int nreal = __syncthreads_count(real);
  float acc[C::MT][C::NG][4];
  const uint8_t* wq = a.down_weight_shuffled + int64_t(tile.expert) * H * (I / 2);
  const uint8_t* wsc = a.down_weight_scale + int64_t(tile.expert) * H * KB;
  dispatch_cols<C>(nreal, [&](auto n_tag) {
    moe_fp8r::run_mainloop<C, decltype(n_tag)::value, FORCE>(wq, wsc, ws.p.a8, KB, KB, rg, xoff, smem, acc, rref, wflag);
  });

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
  moe_tiled::store_weighted_rows<C>(ix, acc, pair, weight, ws.p.y, H, n0);
  if (int(threadIdx.x) < C::BN) mine |= aflg[threadIdx.x] != 0;
  if (__syncthreads_or(mine)) {
    const int warp = threadIdx.x / kLanes;
    for (int idx = warp; idx < C::BN * C::BM; idx += C::kThreads / kLanes) {
      const int c = idx / C::BM, r = idx % C::BM;
      if (pair[c] < 0 || !(wflag[r] || aflg[c])) continue;
      const int64_t n = int64_t(tile.expert) * H + n0 + r;
      const int64_t row = tile.row0 + c;
      const float v = moe_fp8r::exact_dot_a<FORCE, false>(a.down_weight + n * (I / 2), a.down_weight_scale + n * KB,
                                                          ws.p.a8 + row * I, ws.p.as + row * KB, pair[c], KB);
      if (threadIdx.x % kLanes == 0) ws.p.y[int64_t(pair[c]) * H + n0 + r] = weight[c] * v;
    }
  }
}

// Stage 2 as runs of slices (moe_wide22::down_slices' plan on this header's operands): block (x, y) runs
// the 128- or 256-row slices [y NS, min((y + 1) NS, H / BM)) of tile n_tiles - 1 - x. The tile's e4m3
// activations (NCOLS rows x I) are copied into shared memory once (core-matrix layout, K-major); the
// slices' weight stages (W + scales, no activations) form one continuous cp.async pipeline; each
// slice's window comes from its first stage, its weighted rows are stored from the registers after its
// last stage, then its out-of-window rows / flagged columns are recomputed (fix-up, block-uniform).
template <class C>
struct DLayout {
  static constexpr int kStageBytes = C::kX;  // [BM/16][KS][256] weights + [BM][KS] scales
  static constexpr int kPipeBytes = C::STAGES * kStageBytes;
};
template <class C>
constexpr int down_slices_smem(int I) {  // + the staged y tile (MOE_Y_STAGED) after the activations
  return DLayout<C>::kPipeBytes + C::BN * I + moe_tiled::y_stage_bytes<C>();
}

// wait(): called once the weight stages that do not depend on gate_up are in flight; gate_up's output (the
// SwiGLU rows and their flags) is read after it. CG: that output is read through L2 (moe_w32's overlapped down
// reads it while gate_up's grid still runs).
template <class C, int NCOLS, int FORCE, class Wait, bool CG = false>
__device__ inline void down_run(const MoeArgs& a, const Ws& ws, const Tile& tile, int s0, int s1, const int* pair,
                                const float* weight, int* aflg, int* rref, int* wflag, uint8_t* smem, Wait wait) {
#if defined(MOE_WG8_DEVICE)
  using L = DLayout<C>;
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
      uint8_t* to = act + (c / 8) * sbo + ch * 128 + (c % 8) * 16;
      const uint8_t* from = src + int64_t(c) * I + ch * 16;
      // kZeroPad: padding rows (no gate_up block writes them) as zeros; their products went to unstored columns anyway
      if constexpr (C::kZeroPad) moe_tile::cp_async16_zfill(to, from, pair[c] >= 0);
      else cp_async<16>(to, from);
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
  wait();
  int flg = 0;
  if (tid < C::BN) {
    aflg[tid] = pair[tid] >= 0 && (CG ? __ldcg(ws.aflag + tile.row0 + tid) : ws.aflag[tile.row0 + tid]);
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
#if defined(MOE_Y_STAGED) && defined(MOE_Y_BF16X2) && defined(MOE_Y_BF16_CVT) && __CUDA_ARCH__ >= 800
    // v51: through the staged tile after the activations (the pipeline keeps the next slice's stages in flight).
    if constexpr (moe_tiled::YStage<C>::value)
      moe_tiled::store_weighted_rows_staged<C>(ix, acc, pair, weight, ws.p.y, H, n0, act + C::BN * I, NCOLS);
    else
#endif
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
        const uint8_t *wrow = a.down_weight + n * (I / 2), *srow = a.down_weight_scale + n * KB;
        const float v = moe_fp8r::exact_dot_a<FORCE, CG>(wrow, srow, ws.p.a8 + row * I, ws.p.as + row * KB, pair[c], KB);
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

template <class C, int FORCE, bool DEP>
__global__ __launch_bounds__(C::kThreads, C::kMinBlocks) void down_slices(MoeArgs a, Ws ws, int NS) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ int pair[C::BN];
  __shared__ float weight[C::BN];
  __shared__ int aflg[C::BN];
  __shared__ int wflag[C::BM];
  __shared__ int rref[C::BM];
  moe_wg8::dep_release();  // the combine's blocks may be scheduled; they wait for this grid's completion
  // The route's output is complete here (also as a dependent launch: the prologue finished before any
  // gate_up block passed its wait, and this grid starts only after every gate_up block released it).
  const int n_tiles = *ws.p.n_tiles;
  if (int(blockIdx.x) >= n_tiles) {
    if constexpr (DEP) moe_wg8::dep_wait();
    return;
  }
  const Tile tile = ws.p.tiles[n_tiles - 1 - int(blockIdx.x)];
  const int n_slices = a.cfg.d_hidden / C::BM;
  const int s0 = int(blockIdx.y) * NS, s1 = min(n_slices, s0 + NS);
  int real = 0;
  if (int(threadIdx.x) < C::BN) {
    const int c = threadIdx.x;
    const int p = ws.p.sorted_pair[tile.row0 + c];
    pair[c] = p;
    weight[c] = p >= 0 ? a.topk_weights[p] : 0.0f;
    real = p >= 0;
  }
  const int nreal = __syncthreads_count(real);
  dispatch_cols<C>(nreal, [&](auto n_tag) {
    down_run<C, decltype(n_tag)::value, FORCE>(a, ws, tile, s0, s1, pair, weight, aflg, rref, wflag, smem, [] {
      if constexpr (DEP) moe_wg8::dep_wait();  // a dependent launch: gate_up's output is read after this
    });
  });
}

inline bool supports(const MoeConfig& c, int bn) {
  return moe_fp8r::supports(c) && c.n_routed_experts + c.n_shared_experts <= kPrologueThreads &&
         (bn == 32 || bn == 64) && c.d_hidden / 8 <= 4 * kQThreadsMin;
}

// The layer: quantize_route, gate_up<G1> (dependent; S K-parts), down, combine (dependent). A16: gate_up
// writes v22's bf16-folded a and v22's down runs (moe_wide22::Path32's: down_slices at d_expert <= 256,
// else moe_wide16n::down; 32-row tiles only); else NS == 0: this header's down<G2> (one block a tile and
// slice), NS > 0: down_slices<G2> (NS slices a block; DEPD: as a dependent launch that prefetches its
// first weight stages before waiting for gate_up). QT: prologue threads a token (256 or 1024).
template <class G1, class G2, bool A16, int S, int NS, int FORCE = 0, int QT = 1024, bool DEPD = false>
struct Plan {
  static constexpr int T = G1::BN;
  static_assert(G1::BN == G2::BN && (!A16 || T == 32), "one tile list");
  static int64_t blocks_y(const moe_pipeline::Sizes& s) { return s.I / (G1::BM / 2); }
  static size_t part_floats(const moe_pipeline::Sizes& s) {
    return S > 1 ? size_t(s.tiles_max * blocks_y(s)) * S * G1::MT * G1::NG * 4 * G1::kThreads : 0;
  }
  static size_t n_flags(const moe_pipeline::Sizes& s) { return S > 1 ? size_t(s.tiles_max * blocks_y(s)) * S * G1::BM : 0; }
  static size_t n_cnt(const moe_pipeline::Sizes& s) { return S > 1 ? size_t(s.tiles_max * blocks_y(s)) : 0; }
  static size_t workspace_bytes(const MoeConfig& c) {
    const moe_pipeline::Sizes s = moe_pipeline::sizes_of(c, T);
    return carve27(c, T, nullptr, nullptr, nullptr, part_floats(s), n_flags(s), n_cnt(s));
  }
  static bool fits(const MoeConfig& c) {
    if (!supports(c, T)) return false;
    const moe_pipeline::Sizes s = moe_pipeline::sizes_of(c, T);
    const int KB = int(s.H / 32);
    return s.I % (G1::BM / 2) == 0 && s.H % G2::BM == 0 && KB % (S * G1::KS) == 0 && (s.I / 32) % G2::KS == 0 &&
           (A16 || NS == 0 || down_slices_smem<G2>(int(s.I)) <= 227 * 1024);
  }
  static void launch(const MoeArgs& a) {
    if (a.workspace_size < workspace_bytes(a.cfg)) throw std::invalid_argument("moe_mxfp4: workspace too small");
    if (!fits(a.cfg)) throw std::invalid_argument("moe_mxfp4: shape not supported by the wide27 kernels");
    const moe_pipeline::Sizes s = moe_pipeline::sizes_of(a.cfg, T);
    Ws ws;
    Split sp;
    carve27(a.cfg, T, a.workspace, &ws, &sp, part_floats(s), n_flags(s), n_cnt(s));
    constexpr int kQTokens = kPrologueThreads / QT;
    const unsigned qblocks = unsigned((s.M + kQTokens - 1) / kQTokens);
    moe_rows8::launch_ex(quantize_route<FORCE, QT>, dim3(1 + qblocks), dim3(kPrologueThreads),
                         size_t(2 * s.E + kPrologueThreads) * sizeof(int), false, "wide27 quantize + route", a, ws,
                         int(s.P), int(s.E), T, int(s.rows_max), sp.cnt, int(n_cnt(s)));
    constexpr int sm1 = gate_up_smem<G1>();
    auto* gk = gate_up<G1, A16, FORCE, S>;
    moe_wg8::allow_smem(gk, sm1);
    moe_rows8::launch_ex(gk, dim3(unsigned(s.tiles_max), unsigned(blocks_y(s)), unsigned(S)), dim3(G1::kThreads), sm1,
                         true, "wide27 gate_up", a, ws, sp);
    if constexpr (A16) {
      using D2 = moe_wide22::G2;
      using D2V = moe_wide22::G2V;
      if (s.I <= 256 && s.H % D2::BM == 0 && (s.I / 32) % D2::KS == 0) {
        constexpr int kNS = 8;
        const int n_slices = int(s.H / D2::BM);
        const int sm2 = moe_wide22::down_smem_for<D2>(int(s.I), 32);
        auto* dk = moe_wide22::down_slices<D2, 2, true, true, false>;
        moe_pipeline::check(hipFuncSetAttribute(reinterpret_cast<const void*>(dk),
                                                hipFuncAttributeMaxDynamicSharedMemorySize, sm2),
                            "shared memory attribute");
        moe_rows8::launch_ex(dk, dim3(unsigned(s.tiles_max), unsigned((n_slices + kNS - 1) / kNS)),
                             dim3(D2::kThreads), size_t(sm2), false, "wide22 down", a, ws.p, kNS);
      } else {
        if (s.H % D2V::BM || (s.I / 32) % D2V::KS) throw std::invalid_argument("moe_mxfp4: wide16n down shape");
        constexpr int sm2 = D2V::kPipeBytes;
        auto* dk = moe_wide16n::down<D2V, 2, true, true, true>;
        moe_wg8::allow_smem(dk, sm2);
        moe_rows8::launch_ex(dk, dim3(unsigned(s.tiles_max), unsigned(s.H / D2V::BM)), dim3(D2V::kThreads), sm2,
                             false, "wide16n down", a, ws.p);
      }
    } else if constexpr (NS > 0) {
      const int n_slices = int(s.H / G2::BM);
      const int sm2 = down_slices_smem<G2>(int(s.I));
      auto* dk = down_slices<G2, FORCE, DEPD>;
      moe_wg8::allow_smem(dk, sm2);
      moe_rows8::launch_ex(dk, dim3(unsigned(s.tiles_max), unsigned((n_slices + NS - 1) / NS)), dim3(G2::kThreads),
                           size_t(sm2), DEPD, "wide27 down_slices", a, ws, NS);
    } else {
      constexpr int sm2 = G2::kPipeBytes;
      auto* dk = down<G2, FORCE>;
      moe_wg8::allow_smem(dk, sm2);
      moe_rows8::launch_ex(dk, dim3(unsigned(s.tiles_max), unsigned(s.H / G2::BM)), dim3(G2::kThreads), sm2, false,
                           "wide27 down", a, ws);
    }
    constexpr int kCombineThreads = 256;
    const int64_t n = int64_t(a.cfg.bs) * a.cfg.d_hidden;
    moe_rows8::launch_ex(moe_rows8::combine, dim3(unsigned((n / moe_pipeline::kYVec + kCombineThreads - 1) / kCombineThreads)),
                         dim3(kCombineThreads), 0, true, "combine", static_cast<const moe_pipeline::YElem*>(ws.p.y),
                         int64_t(a.cfg.bs), int(a.cfg.d_hidden), int(a.cfg.total_top_k), a.out);
  }
};

// The path for a composed variant: the 32-row shapes (bs x k / routed experts in (8, 40]). PMany where the
// 32-row gate_up grid is large (tiles_max x d_expert / 64 >= 1000, as moe_wide22::Path32: E 257 bs 512),
// PFew otherwise (E 33 bs 128); each falls back to the other where its kernels do not fit the shape.
template <class PMany, class PFew>
struct PathOf {
  static bool many(const MoeConfig& c) {
    const moe_pipeline::Sizes s = moe_pipeline::sizes_of(c, 32);
    return s.tiles_max * (s.I / 64) >= 1000;
  }
  static bool applies(const MoeConfig& c) {
    const int pe = c.bs * c.n_experts_per_token / c.n_routed_experts;
    return pe > 8 && pe <= 40 && (PMany::fits(c) || PFew::fits(c));
  }
  static size_t workspace_bytes(const MoeConfig& c) {
    return std::max(PMany::workspace_bytes(c), PFew::workspace_bytes(c));
  }
  static void launch(const MoeArgs& a) {
    const bool m = many(a.cfg);
    if ((m && PMany::fits(a.cfg)) || !PFew::fits(a.cfg)) PMany::launch(a);
    else PFew::launch(a);
  }
};

// v27's configuration (docs/perf.md, section "moe_mxfp4 v27"; measured there as v27b in call 5): gate_up and
// down_slices with 8 warps x 2 groups, 4 k-blocks x 4 stages. E 257 bs 512: gate_up in one part, down_slices NS 4,
// prologue at 256 threads a token; E 33 bs 128: gate_up in 2 K-parts, down_slices NS 2, prologue at 1024 threads a
// token; down_slices a dependent launch on both.
using G27 = Cfg<8, 2, 32, 4, 4, 2, true, 2>;
using Path = PathOf<Plan<G27, G27, false, 1, 4, 0, 256, true>, Plan<G27, G27, false, 2, 2, 0, 1024, true>>;
// v27f (test only): the same kernels with the exact fix-up forced (FORCE 1), down_slices not dependent,
// prologue at 1024 threads a token (the form run in calls 4 and 5).
using PathForced = PathOf<Plan<G27, G27, false, 1, 4, 1>, Plan<G27, G27, false, 2, 2, 1>>;
#endif  // MOE_WG8_HOST

}  // namespace
}  // namespace moe_wide27
