// moe_w32: the 32-row MoE shapes (bs x k / routed experts in (8, 40]: E 257 bs 512, E 33 bs 128) as
// moe_wide27's path (docs/perf.md, section "moe_mxfp4 v27": fp8 e4m3 wgmma with small N, the same kernels, numerics
// and summation order) with down overlapping gate_up (helper moe-w32, session 8; docs/perf.md, section "moe_mxfp4 v31"):
//  - gate_up's grid is tile-major ((S x column blocks, tiles): a tile's column blocks and split-K parts adjacent in
//    launch order) and counts its finished blocks per tile (ready[x], after a fence).
//  - down (down_comb: moe_wide27::down_slices' work, NS slices of BM rows a block, blocks group-major) is a
//    programmatic dependent of gate_up (released at gate_up's start): after prefetching its first weight stages a
//    block waits for its own tile's count (thread 0 polls with ld.acquire) instead of for the whole gate_up grid, so
//    down blocks run on the SMs that gate_up's last, partial wave leaves idle (moe_fp8r2's OVL, session 7). gate_up's
//    outputs are read through L2 (cp.async.cg, __ldcg flags, exact_dot_a<FORCE, true> in the fix-up).
//  - combine: FC 0, moe_rows8::combine as a dependent launch (v31); FC 4, combine_groups: per column group, each
//    block waiting for its group's down blocks (gcnt[g]) instead of for the whole down grid (v31c, measurement).
//    Combines inside the down grid (combine blocks between the groups, or down blocks taking combine shares) were
//    measured slower (docs/perf.md, section "moe_mxfp4 v31", calls 1-4) and removed.
// The block bodies are moe_wide27's (gate_up_block, down_run with CG reads and a per-tile wait); this file holds the
// grids, the waits and counts around them, and the combines.
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

__device__ inline void spin_until(const int32_t* p, int need) {
  while (moe_wg8::ld_acquire_gpu(p) < need) __nanosleep(128);
#if !MOE_SPIN_ACQUIRE  // v48: the acquire load is enough
  __threadfence();
#endif
}

// Stage 1 (dependent launch of the prologue): moe_wide27's gate_up block (A16 off) on a tile-major grid
// (S x column blocks, tiles_max): a tile's blocks adjacent in launch order, so that tiles finish (and their down
// blocks may start) from the first wave on; then the per-tile count.
template <class C, int FORCE, int S>
__global__ __launch_bounds__(C::kThreads, C::kMinBlocks) void gate_up(MoeArgs a, Ws ws, Split sp, int32_t* ready) {
  const int bx = int(blockIdx.y), nby = int(gridDim.x) / S, by = int(blockIdx.x) % nby;
  if (!moe_wide27::gate_up_block<C, false, FORCE, S>(a, ws, sp, bx, by, nby, S > 1 ? int(blockIdx.x) / nby : 0))
    return;
  // OVL: this block's a8 / as / aflag stores before the tile's count (down waits for I / (BM / 2) of them).
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(ready + bx, 1);
}

// The combine of column group g (columns [g gw, min(H, (g + 1) gw))) for items (token, 4 columns) begin + kIt t +
// step i (t: the thread) below end (-1: all): out = bf16 of the token's slots summed in slot order from 0.0f
// (moe_pipeline::combine_rows' order), every slot's float4 loaded (L2) before the sums.
#if defined(MOE_Y_BF16)
// bf16 y (moe_pipeline::YBf16): items of (token, 8 columns), one 16-byte load a slot; the same sums in slot order.
// The callers' item counts use kItemCols.
constexpr int kItemCols = 8;
template <int kThreads>
__device__ inline void combine_items(const MoeArgs& a, const Ws& ws, int g, int gw, int64_t begin, int64_t step, int64_t end) {
  const int H = a.cfg.d_hidden;
  const int c0 = g * gw, w = min(H, c0 + gw) - c0, w8 = w / 8;
  const int M = a.cfg.bs, T = a.cfg.total_top_k;
  const int64_t items = end < 0 ? int64_t(M) * w8 : min(end, int64_t(M) * w8);
  constexpr int kIt = 2, kMaxT = 12;
  for (int64_t it0 = begin + int64_t(threadIdx.x) * kIt; it0 < items; it0 += step) {
    uint4 v[kIt][kMaxT];
    const moe_pipeline::YBf16* yt[kIt];
#pragma unroll
    for (int q = 0; q < kIt; ++q) {
      const int64_t it = min(it0 + q, items - 1);
      const int t = int(it / w8), n = c0 + int(it % w8) * 8;
      yt[q] = ws.p.y + int64_t(t) * T * H + n;
#pragma unroll
      for (int j = 0; j < kMaxT; ++j)
        if (j < T) v[q][j] = __ldcg(reinterpret_cast<const uint4*>(yt[q] + int64_t(j) * H));
    }
#pragma unroll
    for (int q = 0; q < kIt; ++q) {
      const int64_t it = it0 + q;
      if (it >= items) break;
      const int t = int(it / w8), n = c0 + int(it % w8) * 8;
      float s[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) s[e] = 0.0f;
#pragma unroll
      for (int j = 0; j < kMaxT; ++j)
        if (j < T) moe_pipeline::add_bf16x8(s, v[q][j]);
      for (int j = kMaxT; j < T; ++j)
        moe_pipeline::add_bf16x8(s, __ldcg(reinterpret_cast<const uint4*>(yt[q] + int64_t(j) * H)));
      *reinterpret_cast<uint4*>(a.out + int64_t(t) * H + n) = moe_pipeline::bf16x8_of(s);
    }
  }
}
#else
constexpr int kItemCols = 4;
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
#endif

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
    moe_wide27::down_run<C, decltype(n_tag)::value, FORCE, decltype(wait), true>(a, ws, tile, s0, s1, pair, weight,
                                                                              aflg, rref, wflag, smem, wait);
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
    const int64_t items = s.M * (NS * G2::BM / kItemCols);
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
      moe_rows8::launch_ex(moe_rows8::combine, dim3(unsigned((n / moe_pipeline::kYVec + kCombineThreads - 1) / kCombineThreads)),
                           dim3(kCombineThreads), 0, true, "combine", static_cast<const moe_pipeline::YElem*>(ws.p.y),
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
