// moe_rows8x.h's 8-row chain (helper moe-r8d, session 8; docs/perf.md, section "moe_mxfp4 v33") with options on the s8 gate_up and
// the chain (Path<PF, LR, ST, MINB, G2, AHEAD, C4, TB>; v33 = Path<>: LR + TB, measured -2.4% / -1.0% at E257 bs16 /
// bs128 against v32):
//  - LR (on): each gate_up block of the first wave finds its tile's expert from topk_ids itself (counts per expert
//    in the pipeline buffers, a scan of ceil(count / 8) over the experts: the route block's tile list, tile t at
//    row 8 t), so its first weight copies do not wait for the route flag; blocks that start after the flag is
//    set read the route's tile; the sorted pairs are read after the dependency wait (prologue grid complete);
//  - TB (on): the gate_up grid has rows for at most (P + 7 min(E, P)) / 8 >= sum ceil(count / 8) tiles instead
//    of ceil(P / 8) + E (E257 bs16: 144 rows of 8 blocks instead of 275; the empty blocks cost time because the
//    down grid, a dependent launch, starts only when every gate_up block has started);
//  - PF (off: measured 6-30% slower): cp.async.bulk.prefetch.L2 of each stage's 4 row-group chunks PF stages ahead
//    of the cp.async pipeline (4 threads issue one each), and the block's weight scales once at the start;
//  - G2 / AHEAD: moe_rows8b::down_dyn's configuration (v15's Cfg<4, 4, 3, 1, 3>, AHEAD 2 by default: 4 stages or
//    128-row items measured no better); C4 (off): moe_rows8b::combine4 (no gain measured).
// Tried and not kept (docs/perf.md, session 26 v91): gate_up as a persistent grid of 2 / 3 / 4 blocks an SM so the
// down's blocks start beside it: +22% / +8% / +0.2% (code in 0c62122); session 27's ST / MINB 4 / 5 and 3 / 6 (v82:
// 5 / 4, 94 registers, shared memory the limit): -0.4% / +2.7% (code in ebaa925), 6 / 3: +0.7%. The time follows
// the stages an SM holds, not its blocks.
// Compute, k order, down, combine and the prologue are moe_rows8x's / moe_rows8b's: output bit for bit v32's.
// NVIDIA only (MOE_WG8_HOST).
#pragma once
#include <type_traits>

#include "problems/common/moe_rows8x.h"

namespace moe_r8d {
namespace {

#if defined(MOE_WG8_HOST)
using moe_pipeline::Tile;
using moe_pipeline::Workspace;
using moe_rows8b::Sync;
using moe_wg8::kLanes;
using moe_wg8::kThreads;
using moe_rows8x::kTabLo;
using moe_rows8x::kTabHi;
using moe_rows8x::kFoldR;
#if defined(__CUDA_ARCH__)
using moe_rows8x::ldsm_x4;
#endif
using moe_rows8x::mma_s8;
using moe_rows8x::prmt;

constexpr int kMaxE = 512;  // LR: experts counted in shared memory

using moe_tile::prefetch_l2;

// LR: the expert of tile tile_index and the tile count, as moe_tiled::route_block computes them (tiles in expert
// order, ceil(count / 8) tiles an expert). Every thread of the block calls it; the result is in *out after the
// last barrier (x: expert or -1, y: n_tiles).
__device__ inline void local_tile(const int32_t* topk_ids, int P, int E, int tile_index, int* cnt, int* wsum,
                                  int2* out) {
  const int tid = threadIdx.x, nt = blockDim.x;
  for (int e = tid; e < E; e += nt) cnt[e] = 0;
  __syncthreads();
  for (int p = tid; p < P; p += nt) {
    const int e = __ldg(topk_ids + p);
    if (e >= 0 && e < E) atomicAdd(&cnt[e], 1);
  }
  __syncthreads();
  const int per = (E + nt - 1) / nt, e0 = tid * per, e1 = min(E, e0 + per);
  int mine = 0;
  for (int e = e0; e < e1; ++e) mine += (cnt[e] + 7) / 8;
  // inclusive scan of mine over the block's threads (warp shuffles, then the warps' totals)
  const int lane = tid % kLanes, warp = tid / kLanes, nw = nt / kLanes;
  int v = mine;
  for (int o = 1; o < kLanes; o <<= 1) {
    const int u = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= o) v += u;
  }
  if (lane == kLanes - 1) wsum[warp] = v;
  __syncthreads();
  int before = 0, total = 0;
  for (int w = 0; w < nw; ++w) {
    const int s = wsum[w];
    if (w < warp) before += s;
    total += s;
  }
  int first = before + v - mine;
  if (tid == 0) *out = make_int2(-1, total);
  __syncthreads();
  for (int e = e0; e < e1; ++e) {
    const int m = (cnt[e] + 7) / 8;
    if (tile_index >= first && tile_index < first + m) out->x = e;
    first += m;
  }
  __syncthreads();
}

template <class C, int MINB, int PF, bool LR>
__global__ __launch_bounds__(kThreads, MINB) void gate_up_r8d(MoeArgs a, Workspace ws, Sync sy, const int* flag, int P,
                                                              int E) {
  constexpr bool OPQ = true, FOLD = true;
  static_assert(C::KS_ % 2 == 0, "ldmatrix.x4 reads two k-blocks");
  extern __shared__ __align__(128) uint8_t smem_r8d[];
  uint8_t* smem = smem_r8d;
  __shared__ int rg[C::BM / 16];
  __shared__ const uint8_t* xrow[C::BN];
  __shared__ const uint8_t* xsrow[C::BN];
  __shared__ int token_s[C::BN];
  __shared__ int2 tile_sh;
  __shared__ volatile uint32_t tab_sh;
  const int tile_index = int(blockIdx.y);
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, T = a.cfg.total_top_k, KB = H / 32;
  constexpr int kHalf = C::BM / 2, KS = C::KS_;
  const int n0 = blockIdx.x * kHalf;
  const int tid = threadIdx.x, lane = tid % kLanes, warp = tid / kLanes, g = lane / 4, t = lane % 4;
  if constexpr (LR) {
    __shared__ int routed_sh;  // the route flag was already set: take the route's tile (the blocks after the first wave)
    if (tid == 0) {
      tab_sh = kTabLo;
      routed_sh = moe_wg8::ld_acquire_gpu(flag);
      if (routed_sh) {
        const int nt = __ldcg(ws.n_tiles);
        tile_sh = tile_index < nt ? __ldcg(reinterpret_cast<const int2*>(ws.tiles) + tile_index) : make_int2(-1, 0);
      }
    }
    __syncthreads();
    if (!routed_sh) {  // the pipeline buffers hold the counts until the first copies
      int2* lr = reinterpret_cast<int2*>(smem);
      local_tile(a.topk_ids, P, E, tile_index, reinterpret_cast<int*>(smem) + 2, reinterpret_cast<int*>(smem) + 2 + E,
                 lr);
      if (tid == 0) {
        const int2 v = *lr;
        tile_sh = v.x >= 0 && tile_index < v.y ? make_int2(v.x, tile_index * 8) : make_int2(-1, 0);
      }
      __syncthreads();
    }
  } else {
    (void)P, (void)E;
    if (tid == 0) {
      tab_sh = kTabLo;
      while (moe_wg8::ld_acquire_gpu(flag) == 0) __nanosleep(64);
      const int nt = __ldcg(ws.n_tiles);
      tile_sh = tile_index < nt ? __ldcg(reinterpret_cast<const int2*>(ws.tiles) + tile_index) : make_int2(-1, 0);
    }
    __syncthreads();
  }
  if (tile_sh.x < 0) return;
  const Tile tile{tile_sh.x, tile_sh.y};
  for (int i = tid; i < C::BM / 16; i += kThreads) rg[i] = (i < kHalf / 16 ? n0 : I + n0 - kHalf) / 16 + i;
  __syncthreads();
  const uint8_t* wbase = a.gate_up_weight_shuffled + int64_t(tile.expert) * 2 * I * (H / 2);
  const uint8_t* sbase = a.gate_up_weight_scale + int64_t(tile.expert) * 2 * I * KB;
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#if defined(__CUDA_ARCH__)
  const int nk = KB / KS;
  const uint32_t rg_bytes = uint32_t(H / 64) * 512u;
  uint32_t woff[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) woff[j] = uint32_t(rg[j]) * rg_bytes + tid * 16;
  const uint32_t soff = (uint32_t(rg[(tid % 64) / 16]) * 16 + tid % 16) * uint32_t(KB);
  auto load_w = [&](int slot, int kb0) {
    uint8_t* st = smem + slot * C::kStageBytes;
    const uint8_t* wb = wbase + kb0 * 256;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      moe_tile::cp_async<16>(st + C::kW + j * KS * 256 + tid * 16, wb + woff[j]);
    }
    if (tid < 64) moe_tile::cp_async<KS>(st + C::kWs + tid * KS, sbase + soff + kb0);
  };
  auto prefetch_w = [&](int kb0) {  // one stage's 4 row-group chunks into L2
    if (tid < 4) prefetch_l2(wbase + uint32_t(rg[tid]) * rg_bytes + kb0 * 256, KS * 256);
  };
#pragma unroll
  for (int s = 0; s < C::ST - 1; ++s)
    if (s < nk) load_w(s, s * KS);
  if constexpr (PF > 0) {
    if (tid < 2) prefetch_l2(sbase + int64_t(tid == 0 ? n0 : I + n0) * KB, uint32_t(kHalf * KB));
    for (int s = C::ST - 1; s < C::ST - 1 + PF && s < nk; ++s) prefetch_w(s * KS);
  }
  moe_wg8::dep_wait();
  moe_wg8::dep_release();
#endif
  for (int c = tid; c < C::BN; c += kThreads) {
    const int p = __ldcg(ws.sorted_pair + tile.row0 + c);
    const int64_t token = p >= 0 ? p / T : 0;  // padding rows borrow token 0; never written back
    xrow[c] = ws.x8 + token * H * C::kXBytes;
    xsrow[c] = ws.xs + token * KB * 4;
    token_s[c] = int(token);
  }
  __syncthreads();
  bool folded = false;
  if constexpr (FOLD) {
    const int fpt = H / (8 * kLanes);  // flag bytes a token
    int unf = 0;
    for (int i = tid; i < C::BN * fpt; i += kThreads) unf |= sy.unfolded[int64_t(token_s[i / fpt]) * fpt + i % fpt];
    folded = __syncthreads_or(unf) == 0;
  }
#if defined(__CUDA_ARCH__)
  const uint32_t tab_lo = OPQ ? tab_sh : kTabLo;
  constexpr int kXChunks = C::kXBytes;  // 16-byte activation chunks a thread and stage (8 rows x KS x 32 x bytes)
  constexpr int kRowChunks = KS * 2 * C::kXBytes;
  const uint8_t* xsrc[kXChunks];
  int xdst[kXChunks];
#pragma unroll
  for (int j = 0; j < kXChunks; ++j) {
    const int i = tid + kThreads * j, c = i / kRowChunks, ch = i % kRowChunks;
    xsrc[j] = xrow[c] + ch * 16;
    xdst[j] = C::kX + c * C::kXStride + ch * 16;
  }
  const uint8_t* xssrc = xsrow[(tid / 2) % 8] + (tid % 2) * 16;
  const int xsdst = C::kXs + ((tid / 2) % 8) * KS * 4 + (tid % 2) * 16;
  const uint32_t a_ldsm = static_cast<uint32_t>(__cvta_generic_to_shared(smem)) +
                          uint32_t(C::kW + warp * KS * 256 + (lane / 16) * 256 + ((lane / 8) % 2) * 128 + (lane % 8) * 16);
  const int ws_off = C::kWs + (warp * 16 + g) * KS;
  const int b_off = C::kX + g * C::kXStride + 8 * C::kXBytes * t;
  const int xs_off = C::kXs + 2 * t * KS * 4;
  auto run = [&](auto fold_tag) {
  constexpr bool F = decltype(fold_tag)::value;
  auto load_x = [&](int slot, int kb0) {
    uint8_t* st = smem + slot * C::kStageBytes;
#pragma unroll
    for (int j = 0; j < kXChunks; ++j) moe_tile::cp_async<16>(st + xdst[j], xsrc[j] + kb0 * 32 * C::kXBytes);
    if (!F && tid < 16) moe_tile::cp_async<16>(st + xsdst, xssrc + kb0 * 4);
  };
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
        constexpr int32_t kF = int32_t(uint32_t(kFoldR - 2) << 23);
        int4 v = make_int4(kF, kF, kF, kF);
        if constexpr (!F) v = *reinterpret_cast<const int4*>(st + xs_off + c * KS * 4 + q * 16);
        xsw[c][4 * q] = v.x;
        xsw[c][4 * q + 1] = v.y;
        xsw[c][4 * q + 2] = v.z;
        xsw[c][4 * q + 3] = v.w;
      }
    uint32_t wpair[4];
#pragma unroll
    for (int u = 0; u < KS; ++u) {
      if (u % 2 == 0) ldsm_x4(a_ldsm + uint32_t(slot * C::kStageBytes + u * 256), wpair);
      const uint32_t w0 = wpair[2 * (u % 2)], w1 = wpair[2 * (u % 2) + 1];  // rows g, g + 8
      const uint32_t f0 = w0 ^ 0x88888888u, f1 = w1 ^ 0x88888888u;
      const uint32_t ap[4] = {prmt(tab_lo, kTabHi, w0), prmt(tab_lo, kTabHi, w1), prmt(tab_lo, kTabHi, w0 >> 16),
                              prmt(tab_lo, kTabHi, w1 >> 16)};
      const uint32_t an[4] = {prmt(tab_lo, kTabHi, f0), prmt(tab_lo, kTabHi, f1), prmt(tab_lo, kTabHi, f0 >> 16),
                              prmt(tab_lo, kTabHi, f1 >> 16)};
      const int32_t zero[4] = {0, 0, 0, 0};
      int32_t h[4], d[4];
      if constexpr (C::kXBytes == 1) {
        const uint2 bv = *reinterpret_cast<const uint2*>(st + b_off + u * 32);
        int32_t e[4];
        mma_s8(h, ap, bv.x, bv.y, zero);
        mma_s8(e, an, bv.x, bv.y, zero);
#pragma unroll
        for (int i = 0; i < 4; ++i) d[i] = h[i] - e[i];
      } else {
        const uint4 bv = *reinterpret_cast<const uint4*>(st + b_off + u * 64);
        mma_s8(h, ap, bv.x, bv.y, zero);
        mma_s8(d, an, bv.z, bv.w, h);
      }
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const uint32_t bw = __byte_perm(wsw[r][u / 4], 0u, 0x4440u + (u % 4));
#pragma unroll
        for (int c = 0; c < 2; ++c)
          acc[2 * r + c] =
              fmaf(float(d[2 * r + c]), __int_as_float(int32_t(bw << 23) + xsw[c][u]), acc[2 * r + c]);
      }
    }
  };
#pragma unroll
  for (int s = 0; s < C::ST - 1; ++s) {
    if (s < nk) load_x(s, s * KS);
    moe_tile::cp_commit();
  }
  for (int ks = 0; ks < nk; ++ks) {
    moe_tile::cp_wait<C::ST - 2>();
    __syncthreads();  // stage ks landed for every thread; stage ks - 1 is no longer read
    const int next = ks + C::ST - 1;
    if (next < nk) {
      load_w(next % C::ST, next * KS);
      load_x(next % C::ST, next * KS);
    }
    if (PF > 0 && next + PF < nk) prefetch_w((next + PF) * KS);
    moe_tile::cp_commit();
    compute(ks % C::ST);
  }
  moe_tile::cp_wait<0>();
  };
  if (FOLD && folded) run(std::true_type{});
  else run(std::false_type{});
#else
  (void)wbase, (void)sbase, (void)lane, (void)warp, (void)g, (void)t, (void)folded;
#endif
  __syncthreads();  // the pipeline buffers become the fp32 tile [BN][BM + 4]
  constexpr int kStride = C::BM + 4;
  float* tile_f = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int i = 0; i < 4; ++i) tile_f[(2 * t + (i & 1)) * kStride + warp * 16 + g + 8 * (i >> 1)] = acc[i];
  __syncthreads();
  moe_wg8::swiglu_requant<C::BN, kHalf, kThreads>(tile_f, kStride, tile, n0, I, ws);
  __threadfence();  // this thread's a8 / as stores, before the block's signal
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(sy.ready + tile_index, 1);
}


// moe_rows8x::launch8x with gate_up_r8d<FC, MINB, PF, LR> (OPQ and FOLD on, as Rows8XPath<>).
template <class FC, int MINB, class G2, int PF, bool LR, int AHEAD, bool C4, bool TB>
void launch_r8d(const MoeArgs& a) {
  constexpr int kPrologueThreads = moe_rows8b::kPrologueThreads;
  if (a.workspace_size < moe_rows8x::workspace8x(a.cfg)) throw std::invalid_argument("moe_mxfp4: workspace too small");
  Workspace ws;
  moe_wg8::carve(a.cfg, a.workspace, &ws, 2);
  const Sync sy = moe_rows8b::sync_of(a.cfg, a.workspace);
  int* flag = moe_rows8w::route_flag(a.cfg, a.workspace);
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(a.cfg, 8);
  if (!moe_rows8b::supports8b<FC, G2, AHEAD>(a.cfg))
    throw std::invalid_argument("moe_mxfp4: shape not supported by the 8-row kernels");
  const int64_t n8 = s.M * s.H / 8;
  const unsigned qblocks = unsigned((n8 + kPrologueThreads - 1) / kPrologueThreads);
  moe_rows8::launch_ex(moe_rows8x::quantize_route_x<true, FC::kXBytes == 1>, dim3(1 + qblocks), dim3(kPrologueThreads),
                       size_t(2 * s.E + kPrologueThreads) * sizeof(int), false, "quantize + route", a, ws, int(s.P),
                       int(s.E), int(s.rows_max), n8, sy.ready, int(s.tiles_max + 1), sy.row_w, flag, sy.unfolded);
  constexpr int sm1 = FC::kPipeBytes > 8 * 68 * 4 ? FC::kPipeBytes : 8 * 68 * 4, sm2 = G2::kPipeBytes;
  static_assert(!LR || sm1 >= int(sizeof(int)) * (2 + kMaxE + 64), "LR counts in the pipeline buffers");
  moe_wg8::allow_smem(gate_up_r8d<FC, MINB, PF, LR>, sm1);
  // TB: gate_up rows of the grid for at most sum over the experts of ceil(count / 8) <= (P + 7 min(E, P)) / 8 tiles
  // (tiles_max = ceil(P / 8) + E: ~1.9x as many at E 257 bs 16; the extra blocks only read the tile count and exit,
  // but the down grid starts only after every gate_up block has started)
  const int64_t tiles = TB ? std::min<int64_t>(s.tiles_max, (s.P + 7 * std::min(s.E, s.P)) / 8) : s.tiles_max;
  moe_rows8::launch_ex(gate_up_r8d<FC, MINB, PF, LR>, dim3(unsigned(s.I / 32), unsigned(tiles)), dim3(kThreads),
                       sm1, true, "s8 gate_up", a, ws, sy, static_cast<const int*>(flag), int(s.P), int(s.E));
  moe_wg8::allow_smem(moe_rows8b::down_dyn<G2, AHEAD>, sm2);
  int64_t grid = moe_rows8b::dyn_slots<G2, AHEAD>(sm2);  // blocks that fit (occupancy query)
  grid = std::min<int64_t>(grid, s.tiles_max * (s.H / G2::BM));
  moe_rows8::launch_ex(moe_rows8b::down_dyn<G2, AHEAD>, dim3(unsigned(grid)), dim3(kThreads), sm2, true, "wgmma down", a,
                       ws, sy);
  constexpr int kCombineThreads = 256;
  const int64_t n = int64_t(a.cfg.bs) * a.cfg.d_hidden;
  if (C4 && s.H % 4 == 0) {
    moe_rows8::launch_ex(moe_rows8b::combine4, dim3(unsigned((n / 4 + kCombineThreads - 1) / kCombineThreads)),
                         dim3(kCombineThreads), 0, true, "combine", static_cast<const moe_pipeline::YElem*>(ws.y), int64_t(a.cfg.bs),
                         int(a.cfg.d_hidden), int(a.cfg.total_top_k), a.out);
    return;
  }
  moe_rows8::launch_ex(moe_rows8::combine, dim3(unsigned((n / moe_pipeline::kYVec + kCombineThreads - 1) / kCombineThreads)),
                       dim3(kCombineThreads), 0, true, "combine", static_cast<const moe_pipeline::YElem*>(ws.y), int64_t(a.cfg.bs),
                       int(a.cfg.d_hidden), int(a.cfg.total_top_k), a.out);
}

// The 8-row path (moe_rows8x::Rows8XPath<>'s shapes, stages and down) with the gate_up's L2 prefetch distance PF
// (stages; 0: none) and local routing LR.
template <int PF = 0, bool LR = true, int ST = 5, int MINB = 4, class G2 = moe_wg8::Cfg<4, 4, 3, 1, 3>, int AHEAD = 2,
          bool C4 = false, bool TB = true>
struct Path {
  using FC = moe_rows8x::S8Cfg<ST, true>;
  static bool applies(const MoeConfig& c) {
    return moe_rows8x::Rows8XPath<ST, MINB>::applies(c) && moe_rows8b::supports8b<FC, G2, AHEAD>(c) &&
           c.n_routed_experts + c.n_shared_experts <= kMaxE;
  }
  static size_t workspace_bytes(const MoeConfig& c) { return moe_rows8x::workspace8x(c); }
  static void launch(const MoeArgs& a) { launch_r8d<FC, MINB, G2, PF, LR, AHEAD, C4, TB>(a); }
};
#endif  // MOE_WG8_HOST

}  // namespace
}  // namespace moe_r8d
