// moe_fp8r2: v23's fp8 e4m3 wgmma path for the 64-row MoE shapes (moe_fp8_rows.h, namespace moe_fp8r: the same
// operands, weight decode, mainloop, epilogues and exact fix-up; the output is v23's bit for bit) with a
// different tile list and launch chain (measured in docs/perf.md, section "moe_mxfp4 v28"):
//  - Tiles of up to 160 sorted rows, each expert's rows split evenly (route_even, the tile list of the removed
//    256-row form of moe_fp8_rows.h), 256 weight rows a block as v23 (8 warps x two 16-row groups), wgmma N
//    64 / 128 / 160 by the tile's real rows (accumulators 2 x 20 x 4 = 160 registers a thread), 4 k-blocks
//    a stage, 5 stages (G160s; 8 k-blocks x 3 stages spill ~110 B and ran 17% slower). On the E33 bs512
//    routing (32 routed experts with 105-151 pairs, the shared expert 512) that is 36 tiles instead of 49
//    (13 of them with 2-23 real rows): the blocks' time is set by the weight decode, the same for every
//    tile, so fewer tiles = fewer blocks (gate_up at d_expert 2048 784 -> 576, down 1372 -> 1008).
//  - OVL: gate_up and down grids tile-major; gate_up releases the dependent launch at its start and counts
//    its finished blocks per tile (after a fence); down is a programmatic dependent launch whose blocks wait
//    only for their own tile's count, so down runs on the SMs gate_up's last, partial wave leaves idle
//    (d_expert 512: 144 gate_up blocks = 1.09 waves).
//  - PRO: the quantizer (4 tokens a 1024-thread block) and route_even (the last block) in one launch, gate_up
//    a dependent launch of it, the combine a dependent launch of down (moe_pipeline's combine order).
// Measured and not kept (docs/perf.md, section "moe_mxfp4 v28", call 1): one 16-row group a warp (128 weight rows a block)
// costs ~1.75x the time per weight row of two groups (the per-k-block latency chain does not shrink with
// the work), which is why the 256-row tile form of moe_fp8_rows.h lost; down at two blocks an SM (128 rows);
// the combine fused into down (the last-arriving block sums a token's rows: no gain).
#pragma once
#include <utility>

#include "problems/common/launch_check.h"
#include "problems/common/moe_fp8_rows.h"
#include "problems/common/moe_rows8.h"


namespace moe_fp8r2 {
namespace {

#ifndef MOE_DOWN_QUEUE  // v52: down blocks take tiles in the order their gate_up blocks finish (a queue after the counts)
#define MOE_DOWN_QUEUE 0
#endif
// ready[]'s ints for tiles_max tiles: the per-tile gate_up counts, then (MOE_DOWN_QUEUE) the queue of finished tiles
// (-1 = not yet) and its length; reset by the route: counts 0, queue -1, length 0.
__host__ __device__ constexpr int ready_ints(int tiles_max) { return MOE_DOWN_QUEUE ? 2 * tiles_max + 1 : tiles_max; }
__host__ __device__ constexpr int ready_reset(int t, int tiles_max) {
  return MOE_DOWN_QUEUE && t >= tiles_max && t < 2 * tiles_max ? -1 : 0;
}

// A block's tile: its expert, first sorted row and real rows.
struct TileE {
  int expert, row0, rows;
};

struct Ws2 {
  moe_fp8r::Ws w;  // moe_fp8r's workspace (moe_pipeline's with tile_rows T, xr, aflag)
  TileE* tiles;    // [tiles_max]
  int32_t* ready;  // [ready_ints(tiles_max)]: gate_up blocks done per tile (OVL) (+ the down queue), reset by route_even
  int need;        // gate_up blocks a tile (OVL)
#if MOE_DOWN_QUEUE
  bool queue;      // down takes tiles from the queue (else in tile order, waiting on the counts)
#endif
};

inline size_t carve2(const MoeConfig& c, int T, void* base, Ws2* w) {
  moe_fp8r::Ws ws;
  size_t off = moe_fp8r::carve(c, T, base, &ws);
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(c, T);
  TileE* tl = base ? reinterpret_cast<TileE*>(static_cast<char*>(base) + off) : nullptr;
  off += moe_pipeline::align256(s.tiles_max * sizeof(TileE));
  int32_t* rd = base ? reinterpret_cast<int32_t*>(static_cast<char*>(base) + off) : nullptr;
  off += moe_pipeline::align256(ready_ints(int(s.tiles_max)) * sizeof(int32_t));
  if (w) *w = Ws2{ws, tl, rd, 0};
  return off;
}

#if defined(MOE_WG8_HOST)
using moe_fp8r::kLanes;

// moe_fp8r::Cfg for tiles of up to BN (<= 256 threads, a multiple of 8) rows.
template <int WM_, int MT_, int KS_, int STAGES_, int NB_, bool PF_, int BN_>
struct Cfg {
  static constexpr int WM = WM_, MT = MT_, BN = BN_, NG = BN_ / 8, KS = KS_, STAGES = STAGES_, NB = NB_;
  static constexpr bool PF = PF_;
  static constexpr int kThreads = WM * kLanes;
  static constexpr int BM = WM * MT * 16;
  static constexpr int kXChunks = KS * 2;
  static constexpr int kSBO = kXChunks * 128;
  static constexpr int kW = 0;
  static constexpr int kWs = kW + BM * KS * 16;
  static constexpr int kX = kWs + moe_tile::align16(BM * KS);
  static constexpr int kStageBytes = kX + BN * KS * 32;
  static constexpr int kPipeBytes = STAGES * kStageBytes;
  static constexpr int kWPer = BM * KS / kThreads;
  static constexpr int kXPer = BN * kXChunks / kThreads;
  static_assert(WM % 4 == 0 && (BM == kThreads || BM * 2 == kThreads), "whole warpgroups, one scale row a thread");
  static_assert(KS % NB == 0 && (KS == 8 || KS == 4), "a scale row slice is one 8- or 4-byte copy");
  static_assert(BN % 8 == 0 && BN >= 128 && BN <= kThreads, "one setup row a thread");
  static_assert(BM * KS % kThreads == 0 && BN * kXChunks % kThreads == 0, "copy split");
  static_assert(kPipeBytes + 5 * 1024 <= 227 * 1024, "shared memory");
};

// A down configuration B (moe_fp8r2::Cfg or derived) with the tile's activation rows resident in shared memory for
// K up to 32 KBMAX (moe_fp8r::XRes: the stages carry weights and scales only) after max(the pipeline, the staged y
// tile): down_xr's.
template <class B, int KBMAX>
struct XResCfg : B {
  using Base = B;  // the configuration down runs where d_expert does not fit
  static constexpr int kXPer = 0;
  static constexpr int kStageBytes = B::kX;  // weights and scales
  static constexpr int kPipeBytes = B::STAGES * kStageBytes;
  static constexpr int kKBMax = KBMAX;
  static constexpr int kXResOff = moe_tile::align16(
      kPipeBytes > moe_tiled::y_stage_bytes<B>() ? kPipeBytes : moe_tiled::y_stage_bytes<B>());
  static constexpr int kSmemBytes = kXResOff + B::BN * KBMAX * 32;
  static_assert(kSmemBytes + 5 * 1024 <= 227 * 1024, "shared memory");
};

// One block of blockDim >= E threads: counts per expert, a scan of the tiles per expert, the tile list
// (ceil(n / T) tiles of about equal size an expert; its row region is that many x T rows) and the sorted
// pair list. Pairs inside an expert are placed in atomic order, which changes no value.
__device__ inline void route_even_body(const int32_t* topk_ids, int P, int E, int T, int rows_max, int32_t* sorted_pair,
                                       TileE* tiles, int32_t* n_tiles, int32_t* ready, int tiles_max, int* smem_route) {
  const int tid = threadIdx.x;
#if MOE_ROUTE_FAST
  moe_tiled::route_fast(
      topk_ids, P, E, T, tid, smem_route, n_tiles,
      [&] {
        for (int r = tid; r < rows_max; r += blockDim.x) sorted_pair[r] = -1;
        for (int t = tid; t < ready_ints(tiles_max); t += blockDim.x) ready[t] = ready_reset(t, tiles_max);
      },
      [&](int e, int first, int mine, int n) {
        const int q = mine ? (n + mine - 1) / mine : 0;
        for (int i = 0; i < mine; ++i) tiles[first + i] = TileE{e, first * T + i * q, min(q, n - i * q)};
      },
      [&](int r, int p) { sorted_pair[r] = p; });
#else
  int* count = smem_route;        // [E]
  int* row_off = smem_route + E;  // [E]
  int* scan = smem_route + 2 * E; // [blockDim.x]
  for (int e = tid; e < E; e += blockDim.x) count[e] = 0;
  for (int r = tid; r < rows_max; r += blockDim.x) sorted_pair[r] = -1;
  for (int t = tid; t < ready_ints(tiles_max); t += blockDim.x) ready[t] = ready_reset(t, tiles_max);
  __syncthreads();
  for (int p = tid; p < P; p += blockDim.x) {
    const int e = topk_ids[p];
    if (e >= 0 && e < E) atomicAdd(&count[e], 1);
  }
  __syncthreads();
  const int mine = tid < E ? (count[tid] + T - 1) / T : 0;
  scan[tid] = mine;
  __syncthreads();
  for (int o = 1; o < int(blockDim.x); o <<= 1) {
    const int add = tid >= o ? scan[tid - o] : 0;
    __syncthreads();
    scan[tid] += add;
    __syncthreads();
  }
  if (tid < E) {
    const int first = scan[tid] - mine, n = count[tid];
    row_off[tid] = first * T;
    const int q = mine ? (n + mine - 1) / mine : 0;
    for (int i = 0; i < mine; ++i) tiles[first + i] = TileE{tid, first * T + i * q, min(q, n - i * q)};
    count[tid] = 0;  // now the fill cursor
  }
  if (tid == int(blockDim.x) - 1) *n_tiles = scan[tid];
  __syncthreads();
  for (int p = tid; p < P; p += blockDim.x) {
    const int e = topk_ids[p];
    if (e >= 0 && e < E) sorted_pair[row_off[e] + atomicAdd(&count[e], 1)] = p;
  }
#endif
}

__global__ void route_even(const int32_t* topk_ids, int P, int E, int T, int rows_max, int32_t* sorted_pair,
                           TileE* tiles, int32_t* n_tiles, int32_t* ready, int tiles_max) {
  extern __shared__ int smem_route[];
  route_even_body(topk_ids, P, E, T, rows_max, sorted_pair, tiles, n_tiles, ready, tiles_max, smem_route);
}

// PRO: quantizer and route in one launch of kQGroups x 256 threads a block: blocks [0, ceil(M / kQGroups))
// quantize a token a 256-thread group (moe_fp8r::quantize_hidden's code, FORCE 0), the last block runs
// route_even (which needs blockDim >= E), so the single-block route overlaps the quantizer. Releases the
// dependent launch (gate_up) at its start.
constexpr int kQGroups = 4, kQThreads = 256;
__global__ __launch_bounds__(kQGroups * kQThreads) void prologue(const uint16_t* hidden, int M, int H, uint8_t* x8,
                                                                 uint8_t* xs, int32_t* xr, int32_t* aflag,
                                                                 const int32_t* topk_ids, int P, int E, int T,
                                                                 int rows_max, int32_t* sorted_pair, TileE* tiles,
                                                                 int32_t* n_tiles, int32_t* ready, int tiles_max) {
  extern __shared__ int smem_route[];
  moe_wg8::dep_release();
  const int nqb = (M + kQGroups - 1) / kQGroups;
  if (int(blockIdx.x) == nqb) {
    route_even_body(topk_ids, P, E, T, rows_max, sorted_pair, tiles, n_tiles, ready, tiles_max, smem_route);
    return;
  }
  constexpr int kMaxJ = 4, kW = kQThreads / kLanes;
  __shared__ int red[kQGroups][2][kW];
  const int grp = threadIdx.x / kQThreads, tid = threadIdx.x % kQThreads;
  const int t = blockIdx.x * kQGroups + grp, n8 = H / 8;
  const bool valid = t < M;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < rows_max; i += nqb * blockDim.x) aflag[i] = 0;
  const uint16_t* hrow = hidden + int64_t(valid ? t : 0) * H;
  moe_fp8r::TokenHeld cw[kMaxJ];
  int s[kMaxJ];
  int mx, mn;
#if MOE_QUANT_FAST
  moe_fp8r::token_scales<kQThreads>(hrow, tid, n8, cw, s, mx, mn);
#else
  moe_fp8r::token_codes<kQThreads>(hrow, tid, n8, cw, s, mx, mn);
#endif
  for (int o = kLanes / 2; o > 0; o >>= 1) {
    mx = max(mx, __shfl_xor(mx, o));
    mn = min(mn, __shfl_xor(mn, o));
  }
  if (tid % kLanes == 0) {
    red[grp][0][tid / kLanes] = mx;
    red[grp][1][tid / kLanes] = mn;
  }
  __syncthreads();
  mx = red[grp][0][0];
  mn = red[grp][1][0];
  for (int w = 1; w < kW; ++w) {
    mx = max(mx, red[grp][0][w]);
    mn = min(mn, red[grp][1][w]);
  }
  if (!valid) return;
  const bool any = mx > -100000;
  const bool flag = any && mx - mn > 14;
  const int R = any ? mx - 6 : 0;
  moe_fp8r::token_store<kQThreads>(cw, s, tid, n8, flag, R, x8, xs, t, H);
  if (tid == 0) {
    xr[2 * t] = R;
    xr[2 * t + 1] = flag;
  }
}

// PRO: the combine (moe_pipeline's, same order) as a programmatic dependent of down.
__global__ void combine_dep(const moe_pipeline::YElem* y, int64_t M, int H, int total_top_k, uint16_t* out) {
  moe_wg8::dep_wait();
  moe_pipeline::combine_rows(y, M, H, total_top_k, out);
}

// The block's tile: route_even's list in reverse order (the shared expert's tiles first).
__device__ inline TileE tile_of(const Ws2& ws2, int bt) { return ws2.tiles[*ws2.w.p.n_tiles - 1 - bt]; }

// OVL: the grids are (column blocks, tiles) (a tile's column blocks adjacent in launch order), gate_up
// releases the dependent launch at its start and counts its finished blocks per tile (ready[bt], after a
// fence), and down, launched as a programmatic dependent, waits for its tile's count instead of for the
// whole gate_up grid: down blocks fill the SMs that gate_up's last, partial wave leaves idle.
template <bool OVL>
__device__ inline int tile_index() { return OVL ? int(blockIdx.y) : int(blockIdx.x); }
template <bool OVL>
__device__ inline int col_index() { return OVL ? int(blockIdx.x) : int(blockIdx.y); }

// Stage 1. grid (tiles_max, I / (BM / 2)): BM/2 gate + BM/2 up rows x BN sorted rows, SwiGLU, bf16
// rounding, dynamic MXFP4 requantization into e4m3 a (position order, reference 0).
template <class C, int FORCE, bool OVL, bool PRO>
__global__ __launch_bounds__(C::kThreads, 1) void gate_up(MoeArgs a, Ws2 ws2) {
  const moe_fp8r::Ws& ws = ws2.w;
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ int rg[C::BM / 16];
  __shared__ uint32_t xoff[C::BN];
  __shared__ float colmul[C::BN];
  __shared__ int tok[C::BN];
  __shared__ int xflag[C::BN];
  __shared__ int wflag[C::BM];
  __shared__ int rref[C::BM];
  const int bt = tile_index<OVL>();
  if constexpr (PRO) moe_wg8::dep_wait();  // the prologue's output
  if constexpr (OVL) moe_wg8::dep_release();
  if (bt >= *ws.p.n_tiles) return;
  const TileE tile = tile_of(ws2, bt);
  moe_fp8r::gate_up_tile<C, FORCE>(a, ws, tile, [] { return col_index<OVL>(); }, smem, rg, xoff, colmul, tok, xflag, wflag,
                                  rref);
  if constexpr (OVL) {
    __threadfence();  // this thread's a8 / as / aflag stores before the tile's count
    __syncthreads();
#if MOE_DOWN_QUEUE
    if (threadIdx.x == 0 && atomicAdd(ws2.ready + bt, 1) == ws2.need - 1 && ws2.queue) {
      // The tile's last gate_up block: the fence orders the other blocks' stores (fenced before their counts, which
      // this block's count observed) before the queue entry that down's acquire load reads.
      __threadfence();
      const int tiles_max = int(gridDim.y);
      const int slot = atomicAdd(ws2.ready + 2 * tiles_max, 1);
      atomicExch(ws2.ready + tiles_max + slot, bt);
    }
#else
    if (threadIdx.x == 0) atomicAdd(ws2.ready + bt, 1);
#endif
  }
}

// A down block's tile (route_even's list index) once its gate_up blocks have stored its a8 rows (OVL; else slot
// itself): the block's thread 0 waits, then a block barrier.
template <bool OVL>
__device__ __forceinline__ int down_wait(const Ws2& ws2, int slot) {
#if MOE_DOWN_QUEUE
  __shared__ int bt_s;
#endif
  if constexpr (OVL) {
    // The tile's gate_up blocks (I / (G1::BM / 2) of them) have stored its a8 rows.
    if (threadIdx.x == 0) {
#if MOE_DOWN_QUEUE
      // v52: block row y takes the y-th tile whose gate_up blocks have all finished (the queue holds whole tiles).
      const int* q = ws2.ready + int(gridDim.y) + slot;
      int v = slot;
      if (ws2.queue)
        while ((v = moe_wg8::ld_acquire_gpu(q)) < 0) __nanosleep(256);
      else
        while (moe_wg8::ld_acquire_gpu(ws2.ready + slot) < ws2.need) __nanosleep(256);
      bt_s = v;
#elif MOE_SPIN_ACQUIRE  // v48: an acquire load polls (no read-modify-write, no sequentially consistent fence after it)
      while (moe_wg8::ld_acquire_gpu(ws2.ready + slot) < ws2.need) __nanosleep(256);
#else
      while (atomicAdd(ws2.ready + slot, 0) < ws2.need) __nanosleep(256);
      __threadfence();
#endif
    }
    __syncthreads();
  }
#if MOE_DOWN_QUEUE
  return OVL ? bt_s : slot;
#else
  return slot;
#endif
}

// Stage 2. grid (tiles_max, H / BM): y[pair, n] = weight * (a W_down^T).
template <class C, int FORCE, bool OVL, bool PRO>
__global__ __launch_bounds__(C::kThreads, 1) void down(MoeArgs a, Ws2 ws2) {
  const moe_fp8r::Ws& ws = ws2.w;
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ int rg[C::BM / 16];
  __shared__ uint32_t xoff[C::BN];
  __shared__ int pair[C::BN];
  __shared__ float weight[C::BN];
  __shared__ int aflg[C::BN];
  __shared__ int wflag[C::BM];
  __shared__ int rref[C::BM];
  const int slot = tile_index<OVL>();
  if constexpr (PRO) moe_wg8::dep_release();  // the combine may be scheduled once every down block started
  if (slot >= *ws.p.n_tiles) return;
  const TileE tile = tile_of(ws2, down_wait<OVL>(ws2, slot));
  moe_fp8r::down_tile<C, FORCE, OVL, true>(a, ws, tile, [] { return col_index<OVL>(); }, smem, rg, xoff, pair, weight,
                                          aflg, wflag, rref);
}


// Stage 2 with the tile's activations loaded once (session 22): C an XResCfg, grid (H / BM, tiles_max) as down's;
// the block of column block cb runs NS consecutive BM-row column blocks of d_hidden from cb when cb % NS == 0 (the
// others leave at once), each its own mainloop over the weights and scales only (the next column block's prefetched
// into L2 while the current one runs) and down_tile's epilogue (down_store). Tiles at queue slots >= late_from (those
// whose gate_up blocks are past gate_up's first wave, so they finish last) take one column block a block: their downs
// are what the layer waits for at its end. Needs d_expert <= 32 C::kKBMax.
template <class C, int FORCE, bool OVL, bool PRO, int NS>
__global__ __launch_bounds__(C::kThreads, 1) void down_xr(MoeArgs a, Ws2 ws2, int late_from) {
  const moe_fp8r::Ws& ws = ws2.w;
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ int rg[C::BM / 16];
  __shared__ uint32_t xoff[C::BN];
  __shared__ int pair[C::BN];
  __shared__ float weight[C::BN];
  __shared__ int aflg[C::BN];
  __shared__ int wflag[C::BM];
  __shared__ int rref[C::BM];
  const int slot = tile_index<OVL>();
  if constexpr (PRO) moe_wg8::dep_release();  // the combine may be scheduled once every down block started
  const int ns = slot >= late_from ? 1 : NS, cb0 = col_index<OVL>();
  if (cb0 % ns != 0) return;  // the group's first block runs it (decided before any load: these leave at once)
  if (slot >= *ws.p.n_tiles) return;
  const int bt = down_wait<OVL>(ws2, slot);
  const TileE tile = tile_of(ws2, bt);
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, KB = I / 32;
  for (int i = threadIdx.x; i < C::BM / 16; i += C::kThreads) rg[i] = i;  // the column block's weights: w + its offset
  const int nreal = moe_fp8r::down_rows<C, OVL>(a, ws, tile, I, xoff, pair, weight, aflg);
  const uint8_t* wq = a.down_weight_shuffled + int64_t(tile.expert) * H * (I / 2);
  const uint8_t* wsc = a.down_weight_scale + int64_t(tile.expert) * H * KB;
  const int cb1 = min(H / C::BM, cb0 + ns);
  const uint32_t w_bytes = uint32_t(C::BM) * uint32_t(KB) * 16u, s_bytes = uint32_t(C::BM) * uint32_t(KB);
  moe_fp8r::dispatch_cols<C>(nreal, [&](auto n_tag) {
    constexpr int NC = decltype(n_tag)::value;
    // The tile's NC activation rows, all of K, in the mainloop's B layout (8-row groups 2 x KB x 128 bytes apart, the
    // two 16-byte chunks of a k-block 128 bytes apart): one commit group, before the first mainloop's stages.
    uint8_t* xr = smem + C::kXResOff;
    const int nch = 2 * KB;
    for (int i = threadIdx.x; i < NC * nch; i += C::kThreads) {
      const int c = (i / (8 * nch)) * 8 + i % 8, ch = (i / 8) % nch;
      moe_tile::cp_async<16>(xr + (c / 8) * (nch * 128) + ch * 128 + (c % 8) * 16, ws.p.a8 + xoff[c] + ch * 16);
    }
    moe_tile::cp_commit();
    for (int cb = cb0; cb < cb1; ++cb) {
      const int n0 = cb * C::BM;
      if (threadIdx.x == 0 && cb + 1 < cb1) {  // the next column block's weights and scales into L2
        moe_tile::prefetch_l2(wq + int64_t(n0 + C::BM) * (I / 2), w_bytes);
        moe_tile::prefetch_l2(wsc + int64_t(n0 + C::BM) * KB, s_bytes);
      }
      float acc[C::MT][C::NG][4];
      moe_fp8r::run_mainloop<C, NC, FORCE>(wq + int64_t(n0) * (I / 2), wsc + int64_t(n0) * KB, ws.p.a8, KB, KB, rg,
                                           xoff, smem, acc, rref, wflag);
      moe_fp8r::down_store<C, FORCE, true>(a, ws, tile, n0, acc, smem, pair, weight, aflg, wflag, rref, nreal);
      __syncthreads();  // the staged y tile (the pipeline's buffers) and rref / wflag read before the next mainloop
    }
  });
}

// The per-column-block down's configuration of G2: its Base where G2 is an XResCfg, else G2.
template <class C, class = void>
struct DownOfT {
  using type = C;
};
template <class C>
struct DownOfT<C, std::void_t<typename C::Base>> {
  using type = typename C::Base;
};
template <class C>
using DownOf = typename DownOfT<C>::type;

// The whole layer: moe_fp8r's quantizer, route_even (tiles of up to BN rows), gate_up, down, moe_pipeline's combine.
// NS > 0 (OVL only): down_xr with NS column blocks a block where d_expert fits G2's resident activations (G2 an
// XResCfg), else down.
template <class G1, class G2, bool OVL, bool PRO = false, int FORCE = 0, int NS = 0>
void launch(const MoeArgs& a) {
  static_assert(G1::BN == G2::BN, "one tile list");
  static_assert(!PRO || (OVL && FORCE == 0), "PRO: the overlapped form, no forced fix-up");
  constexpr int T = G1::BN;
  if (a.workspace_size < carve2(a.cfg, T, nullptr, nullptr)) throw std::invalid_argument("moe_mxfp4: workspace too small");
  if (!moe_fp8r::supports(a.cfg)) throw std::invalid_argument("moe_mxfp4: shape not supported by the fp8 kernels");
  Ws2 ws2;
  carve2(a.cfg, T, a.workspace, &ws2);
  const moe_fp8r::Ws& ws = ws2.w;
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(a.cfg, T);
  const unsigned cols1 = unsigned(s.I / (G1::BM / 2)), cols2 = unsigned(s.H / G2::BM), tiles = unsigned(s.tiles_max);
  ws2.need = int(cols1);
#if MOE_DOWN_QUEUE
  // The queue pays where gate_up's grid (its tile bound) is at most two waves: its first-wave tiles then finish in an
  // order unrelated to the tile order, and down blocks in tile order wait on the slowest (docs/perf.md, v52).
  ws2.queue = int64_t(cols1) * tiles <= 2 * int64_t(current_device_shape().compute_units);
#endif
  constexpr int kRouteThreads = 1024;
  const size_t route_smem = size_t(2 * s.E + kRouteThreads) * sizeof(int);
  if constexpr (PRO) {
    static_assert(kQGroups * kQThreads == kRouteThreads, "the route block's size");
    const unsigned nqb = unsigned((s.M + kQGroups - 1) / kQGroups);
    prologue<<<nqb + 1, kRouteThreads, route_smem>>>(a.hidden_states, int(s.M), int(s.H), ws.p.x8, ws.p.xs, ws.xr,
                                                     ws.aflag, a.topk_ids, int(s.P), int(s.E), T, int(s.rows_max),
                                                     ws.p.sorted_pair, ws2.tiles, ws.p.n_tiles, ws2.ready,
                                                     int(s.tiles_max));
    moe_pipeline::check(hipGetLastError(), "fp8 prologue");
  } else {
    moe_fp8r::quantize_hidden<FORCE><<<unsigned(s.M), 256>>>(a.hidden_states, int(s.H), ws.p.x8, ws.p.xs, ws.xr,
                                                             ws.aflag, int(s.rows_max));
    moe_pipeline::check(hipGetLastError(), "fp8 quantize hidden");
    route_even<<<1, kRouteThreads, route_smem>>>(a.topk_ids, int(s.P), int(s.E), T, int(s.rows_max), ws.p.sorted_pair,
                                                 ws2.tiles, ws.p.n_tiles, ws2.ready, int(s.tiles_max));
    moe_pipeline::check(hipGetLastError(), "fp8 route");
  }
  constexpr int sm1 = moe_fp8r::gate_up_smem<G1>();
  moe_wg8::allow_smem(gate_up<G1, FORCE, OVL, PRO>, sm1);
  if constexpr (OVL) {
    moe_rows8::launch_ex(gate_up<G1, FORCE, OVL, PRO>, dim3(cols1, tiles), dim3(G1::kThreads), size_t(sm1), PRO,
                         "fp8 gate_up", a, ws2);
    bool xres = false;
    if constexpr (NS > 0) {
      if (s.I / 32 <= G2::kKBMax) {
        constexpr int sm2 = G2::kSmemBytes;
        moe_wg8::allow_smem(down_xr<G2, FORCE, OVL, PRO, NS>, sm2);
        // gate_up runs one block an SM: the tiles past the first wave's whole tiles finish last.
        const int late_from = current_device_shape().compute_units / int(cols1);
        moe_rows8::launch_ex(down_xr<G2, FORCE, OVL, PRO, NS>, dim3(cols2, tiles), dim3(G2::kThreads), size_t(sm2),
                             true, "fp8 down (resident activations)", a, ws2, late_from);
        xres = true;
      }
    }
    if (!xres) {
      using D2 = DownOf<G2>;
      constexpr int sm2 = D2::kPipeBytes;
      moe_wg8::allow_smem(down<D2, FORCE, OVL, PRO>, sm2);
      moe_rows8::launch_ex(down<D2, FORCE, OVL, PRO>, dim3(cols2, tiles), dim3(D2::kThreads), size_t(sm2), true,
                           "fp8 down", a, ws2);
    }
  } else {
    static_assert(NS == 0, "down_xr: the overlapped launch chain only");
    constexpr int sm2 = G2::kPipeBytes;
    moe_wg8::allow_smem(down<G2, FORCE, OVL, PRO>, sm2);
    gate_up<G1, FORCE, OVL, PRO><<<dim3(tiles, cols1), G1::kThreads, sm1>>>(a, ws2);
    moe_pipeline::check(hipGetLastError(), "fp8 gate_up");
    down<G2, FORCE, OVL, PRO><<<dim3(tiles, cols2), G2::kThreads, sm2>>>(a, ws2);
    moe_pipeline::check(hipGetLastError(), "fp8 down");
  }
  if constexpr (PRO) {
    constexpr int kThreadsC = 256;
    const int64_t n = s.M * s.H;
    moe_rows8::launch_ex(combine_dep, dim3(unsigned((n / moe_pipeline::kYVec + kThreadsC - 1) / kThreadsC)), dim3(kThreadsC), 0, true,
                         "fp8 combine", static_cast<const moe_pipeline::YElem*>(ws.p.y), int64_t(s.M), int(s.H), a.cfg.total_top_k,
                         a.out);
  } else {
    moe_pipeline::launch_combine(a, ws.p);
  }
}

// Tiles of up to 160 rows, 256 weight rows a block (8 warps x two 16-row groups), 4 k-blocks a stage, 5 stages
// (185 KB), weight words one k-block ahead (v23's options otherwise). Measured slower (docs/perf.md, section "moe_mxfp4 v28"):
// 8 k-blocks x 3 stages (~110 B of spills, +16%) and 4 k-blocks x 6 stages (+6%).
using G160s = Cfg<8, 2, 4, 5, 2, true, 160>;

// The path as one unit for a composed variant: the 64-row shapes of v20 (bs x k / routed > 40).
template <class A, class B, bool OVL, bool PRO = false, int FORCE = 0, int NS = 0>
struct PathOf {
  static bool applies(const MoeConfig& c) {
    return c.bs * c.n_experts_per_token / c.n_routed_experts > 40 && moe_fp8r::supports(c);
  }
  static size_t workspace_bytes(const MoeConfig& c) { return carve2(c, A::BN, nullptr, nullptr); }
  static void launch(const MoeArgs& a) { moe_fp8r2::launch<A, B, OVL, PRO, FORCE, NS>(a); }
};
using Path = PathOf<G160s, G160s, true, true>;  // v28 (docs/perf.md, section "moe_mxfp4 v28", call 4 and the final call)
#endif  // MOE_WG8_HOST

}  // namespace
}  // namespace moe_fp8r2
