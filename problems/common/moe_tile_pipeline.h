// The sorted MoE pipeline (moe_pipeline.h) on the block-tile GEMM core (moe_tile_gemm.h):
//   quantize hidden (dynamic MXFP4; e4m3 bytes in the decode's activation order, 8 values a thread)
//   -> route with a block-wide scan (tiles of BN sorted rows)
//   -> gate_up: BM/2 gate + BM/2 up rows x BN rows; SwiGLU, bf16 rounding and the dynamic requantization
//      of a from the fp32 tile in shared memory
//   -> down: BM rows of W_down x BN rows, times the routing weight, into y [P, H] fp32
//   -> combine (moe_pipeline.h): deterministic, slot order.
// Tile shapes follow the expected rows per expert: 8-16 (bandwidth-bound: many small blocks with deep
// copy pipelines), 32 and 64 (matrix-bound: 8 warps, bigger tiles). Builds without mma.sync run the
// portable scalar kernels of v2 instead.
#pragma once
#include <algorithm>
#if defined(MOE_Y_BF16X2)
#include <type_traits>
#endif

#include "problems/common/moe_tile_gemm.h"
#include "problems/moe_mxfp4/moe_pipeline.h"
#include "problems/moe_mxfp4/moe_scalar_gemm.h"

namespace moe_tiled {
namespace {

using moe_pipeline::Tile;
using moe_pipeline::Workspace;

// Rows per tile from the expected rows per routed expert.
inline int tile_rows_for(const MoeConfig& c) {
  const int per_expert = c.bs * c.n_experts_per_token / c.n_routed_experts;
#if defined(MOE_HAVE_MMA_SYNC)
  return per_expert <= 8 ? 8 : per_expert <= 16 ? 16 : per_expert <= 40 ? 32 : 64;
#else
  return per_expert <= 8 ? 8 : (per_expert <= 16 ? 16 : 32);
#endif
}

template <class D>
size_t workspace_bytes(const MoeConfig& c) {
  return moe_pipeline::carve(c, tile_rows_for(c), nullptr, nullptr, D::kActBytes);
}

#if defined(MOE_HAVE_MMA_SYNC)
using moe_tile::Cfg;

// Per tile rows: the gate_up and down block shapes <WM, WN, MT, NG, KS, STAGES, MIN_BLOCKS>.
template <int BN>
struct Plan;
template <>
struct Plan<8> {
  using G1 = Cfg<4, 1, 1, 1, 8, 4>;  // 64 rows (32 gate + 32 up) x 8
  using G2 = Cfg<4, 1, 4, 1, 4, 2>;  // 256 rows x 8 (K = d_expert is short: two stages)
};
template <>
struct Plan<16> {
  using G1 = Cfg<4, 1, 1, 2, 8, 4>;
  using G2 = Cfg<4, 1, 4, 2, 4, 2>;
};
template <>
struct Plan<32> {
  using G1 = Cfg<4, 1, 2, 4, 4, 4>;  // 128 x 32
  using G2 = Cfg<4, 1, 2, 4, 4, 3>;
};
template <>
struct Plan<64> {
  using G1 = Cfg<8, 1, 2, 8, 4, 3, 2>;  // 256 x 64, 8 warps, two blocks per SM
  using G2 = Cfg<8, 1, 2, 8, 4, 3, 2>;
};

// Alternative shapes for the matrix-bound tiles: one block of 8 warps per SM, unrolled K (measured:
// better for 64 rows with f16, worse for 32 rows).
template <int BN>
struct PlanWide : Plan<BN> {};
template <>
struct PlanWide<32> {
  using G1 = Cfg<4, 1, 2, 4, 8, 3>;
  using G2 = Cfg<4, 1, 2, 4, 4, 3>;
};
template <>
struct PlanWide<64> {
  using G1 = Cfg<8, 1, 2, 8, 4, 3>;
  using G2 = Cfg<8, 1, 2, 8, 4, 3>;
};

// Thread i's 8 hidden values (one 16-byte load; zeros past n8) and the MXFP4 scale exponent of their
// 32-value block: the 4 threads of a block reduce its amax with xor shuffles inside their aligned group
// of 4, so every thread of the group must call this (also those past n8).
__device__ __forceinline__ int hidden8_block_scale(const uint16_t* hidden, int64_t i, int64_t n8, float (&v)[8]) {
  const uint4 raw = i < n8 ? reinterpret_cast<const uint4*>(hidden)[i] : make_uint4(0, 0, 0, 0);
  const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
  float amax = 0.0f;
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    v[k] = numerics::bf16_to_f32(static_cast<uint16_t>(words[k / 2] >> (16 * (k % 2))));
    amax = fmaxf(amax, mxfp4::abs_for_amax(v[k]));
  }
  amax = fmaxf(amax, __shfl_xor(amax, 1));
  amax = fmaxf(amax, __shfl_xor(amax, 2));
  return numerics::mxfp4_dynamic_scale_exp(amax);
}

// One thread per 8 values (a 16-byte load); the 4 threads of a 32-block reduce its amax with xor
// shuffles inside their aligned group of 4. Writes the activation format of D.
template <class D>
__global__ void quantize_hidden8(const uint16_t* hidden, int64_t n8, uint8_t* x8, uint8_t* xs) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  float v[8];
  const int s = hidden8_block_scale(hidden, i, n8, v);
  if (i >= n8) return;
  constexpr int kPer = 4 / D::kActBytes;  // values a 32-bit word
  uint32_t out[2 * D::kActBytes] = {};
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const int pos = D::position(k);
    out[pos / kPer] |= D::encode(mxfp4::quantize_dynamic_code(v[k], s), s) << (8 * D::kActBytes * (pos % kPer));
  }
  if constexpr (D::kActBytes == 1) reinterpret_cast<uint2*>(x8)[i] = make_uint2(out[0], out[1]);
  else reinterpret_cast<uint4*>(x8)[i] = make_uint4(out[0], out[1], out[2], out[3]);
  if (i % 4 == 0) xs[i / 4] = static_cast<uint8_t>(s + 127);
}

// One block of blockDim >= E threads: counts per expert, an inclusive scan of the tiles per expert
// (Hillis-Steele in shared memory), the tile list, the sorted pair list. Pairs inside an expert are
// placed in atomic order, which changes no value (every row of a tile is computed independently).
__global__ void route_scan(const int32_t* topk_ids, int P, int E, int tile_rows, int rows_max, int32_t* sorted_pair,
                           Tile* tiles, int32_t* n_tiles) {
  extern __shared__ int smem_route[];
  int* count = smem_route;          // [E]
  int* row_off = smem_route + E;    // [E]
  int* scan = smem_route + 2 * E;   // [blockDim.x]
  const int tid = threadIdx.x;
  for (int e = tid; e < E; e += blockDim.x) count[e] = 0;
  for (int r = tid; r < rows_max; r += blockDim.x) sorted_pair[r] = -1;
  __syncthreads();
  for (int p = tid; p < P; p += blockDim.x) {
    const int e = topk_ids[p];
    if (e >= 0 && e < E) atomicAdd(&count[e], 1);
  }
  __syncthreads();
  const int mine = tid < E ? (count[tid] + tile_rows - 1) / tile_rows : 0;
  scan[tid] = mine;
  __syncthreads();
  for (int o = 1; o < int(blockDim.x); o <<= 1) {
    const int add = tid >= o ? scan[tid - o] : 0;
    __syncthreads();
    scan[tid] += add;
    __syncthreads();
  }
  if (tid < E) {
    const int first = scan[tid] - mine;
    row_off[tid] = first * tile_rows;
    for (int i = 0; i < mine; ++i) tiles[first + i] = Tile{tid, (first + i) * tile_rows};
    count[tid] = 0;  // now the fill cursor
  }
  if (tid == int(blockDim.x) - 1) *n_tiles = scan[tid];
  __syncthreads();
  for (int p = tid; p < P; p += blockDim.x) {
    const int e = topk_ids[p];
    if (e >= 0 && e < E) sorted_pair[row_off[e] + atomicAdd(&count[e], 1)] = p;
  }
}

#ifndef MOE_ROUTE_FAST  // moe v50: the routes read their topk ids first, once, and scan with warp shuffles
#define MOE_ROUTE_FAST 0
#endif

// MOE_ROUTE_FAST: a route thread's first kRouteHeld pairs' expert ids (pair tid + k blockDim.x), loaded before the
// list resets so that their memory latency overlaps those stores, and held for both passes; pairs past them are read
// where used. (The old form read every id twice, after the resets: ~3 us of a flushed call's ~9 us route.)
constexpr int kRouteHeld = 8;
struct RouteIds {
  int e[kRouteHeld];
  __device__ __forceinline__ void load(const int32_t* ids, int P, int tid) {
#pragma unroll
    for (int k = 0; k < kRouteHeld; ++k) {
      const int p = tid + k * int(blockDim.x);
      e[k] = p < P ? ids[p] : -1;
    }
  }
  // f(p, expert) for each of this thread's pairs.
  template <class F>
  __device__ __forceinline__ void each(const int32_t* ids, int P, int tid, F&& f) const {
#pragma unroll
    for (int k = 0; k < kRouteHeld; ++k)
      if (tid + k * int(blockDim.x) < P) f(tid + k * int(blockDim.x), e[k]);
    for (int p = tid + kRouteHeld * int(blockDim.x); p < P; p += blockDim.x) f(p, int(ids[p]));
  }
};

// Inclusive sum of v over the block's threads in thread order, by warp shuffles and one pass over the warp sums
// (two block barriers instead of the Hillis-Steele scan's 2 log2(blockDim.x)); wsum: blockDim.x / warpSize ints of
// shared memory; *total: the block's sum. blockDim.x a multiple of warpSize, at most warpSize warps; every thread calls.
__device__ __forceinline__ int block_inclusive_sum(int v, int* wsum, int* total) {
  const int lane = int(threadIdx.x) % warpSize, warp = int(threadIdx.x) / warpSize, nw = int(blockDim.x) / warpSize;
  for (int o = 1; o < warpSize; o <<= 1) {
    const int n = __shfl_up(v, o);
    if (lane >= o) v += n;
  }
  if (lane == warpSize - 1) wsum[warp] = v;
  __syncthreads();
  if (warp == 0) {
    int w = lane < nw ? wsum[lane] : 0;
    for (int o = 1; o < warpSize; o <<= 1) {
      const int n = __shfl_up(w, o);
      if (lane >= o) w += n;
    }
    if (lane < nw) wsum[lane] = w;
  }
  __syncthreads();
  *total = wsum[nw - 1];
  return v + (warp > 0 ? wsum[warp - 1] : 0);
}

// MOE_ROUTE_FAST's route, shared by route_block and moe_fp8r2::route_even_body (thread tid of blockDim.x >= E threads;
// smem: 2 E + blockDim.x ints): reset() clears the lists (every thread, before the counts), tiles(e, first, mine, n)
// writes expert e's `mine` tile entries from tile index `first` (n: its pairs), place(r, p) puts pair p at sorted row
// r. Pairs inside an expert are placed in atomic order, which changes no value.
template <class Reset, class Tiles, class Place>
__device__ __forceinline__ void route_fast(const int32_t* topk_ids, int P, int E, int tile_rows, int tid, int* smem,
                                           int32_t* n_tiles, Reset reset, Tiles tiles, Place place) {
  int* count = smem;
  int* row_off = smem + E;
  int* scan = smem + 2 * E;
  RouteIds ids;
  ids.load(topk_ids, P, tid);
  for (int e = tid; e < E; e += blockDim.x) count[e] = 0;
  reset();
  __syncthreads();
  ids.each(topk_ids, P, tid, [&](int, int e) {
    if (e >= 0 && e < E) atomicAdd(&count[e], 1);
  });
  __syncthreads();
  const int mine = tid < E ? (count[tid] + tile_rows - 1) / tile_rows : 0;
  int total;
  const int first = block_inclusive_sum(mine, scan, &total) - mine;
  if (tid < E) {
    row_off[tid] = first * tile_rows;
    tiles(tid, first, mine, count[tid]);
    count[tid] = 0;  // now the fill cursor
  }
  if (tid == 0) *n_tiles = total;
  __syncthreads();
  ids.each(topk_ids, P, tid, [&](int p, int e) {
    if (e >= 0 && e < E) place(row_off[e] + atomicAdd(&count[e], 1), p);
  });
}

// route_scan's work inside a kernel's block 0 (thread tid of blockDim.x >= E threads; smem: 2 E + blockDim.x
// ints), on the workspace's lists; clear(r) is called for every padding row as it is reset, place(r, p) for
// every pair as it is placed (the 8-row chains' per-row routing weights).
template <class Clear, class Place>
__device__ __forceinline__ void route_block(const MoeArgs& a, const moe_pipeline::Workspace& ws, int P, int E,
                                            int tile_rows, int rows_max, int tid, int* smem, Clear clear,
                                            Place place) {
#if MOE_ROUTE_FAST
  route_fast(
      a.topk_ids, P, E, tile_rows, tid, smem, ws.n_tiles,
      [&] {
        for (int r = tid; r < rows_max; r += blockDim.x) {
          ws.sorted_pair[r] = -1;
          clear(r);
        }
      },
      [&](int e, int first, int mine, int) {
        for (int i = 0; i < mine; ++i) ws.tiles[first + i] = Tile{e, (first + i) * tile_rows};
      },
      [&](int r, int p) {
        ws.sorted_pair[r] = p;
        place(r, p);
      });
#else
  int* count = smem;
  int* row_off = smem + E;
  int* scan = smem + 2 * E;
  for (int e = tid; e < E; e += blockDim.x) count[e] = 0;
  for (int r = tid; r < rows_max; r += blockDim.x) {
    ws.sorted_pair[r] = -1;
    clear(r);
  }
  __syncthreads();
  for (int p = tid; p < P; p += blockDim.x) {
    const int e = a.topk_ids[p];
    if (e >= 0 && e < E) atomicAdd(&count[e], 1);
  }
  __syncthreads();
  const int mine = tid < E ? (count[tid] + tile_rows - 1) / tile_rows : 0;
  scan[tid] = mine;
  __syncthreads();
  for (int o = 1; o < int(blockDim.x); o <<= 1) {
    const int add = tid >= o ? scan[tid - o] : 0;
    __syncthreads();
    scan[tid] += add;
    __syncthreads();
  }
  if (tid < E) {
    const int first = scan[tid] - mine;
    row_off[tid] = first * tile_rows;
    for (int i = 0; i < mine; ++i) ws.tiles[first + i] = Tile{tid, (first + i) * tile_rows};
    count[tid] = 0;  // now the fill cursor
  }
  if (int(blockDim.x) - 1 == tid) *ws.n_tiles = scan[tid];
  __syncthreads();
  for (int p = tid; p < P; p += blockDim.x) {
    const int e = a.topk_ids[p];
    if (e >= 0 && e < E) {
      const int r = row_off[e] + atomicAdd(&count[e], 1);
      ws.sorted_pair[r] = p;
      place(r, p);
    }
  }
#endif
}

template <class C, class D>
constexpr int gate_up_smem() {
  return std::max(moe_tile::Layout<C, D>::kPipeBytes, C::BN * (C::BM + 4) * 4);
}

// SwiGLU of one gate/up pair, rounded to bf16, and the dynamic MXFP4 scale exponent of the block of 32
// such values held by the lane's 32-lane group (every lane of the group calls it).
__device__ __forceinline__ float swiglu_bf16_block_scale(float gate, float up, int& s) {
  const float silu = gate / (1.0f + expf(-gate));
  const float x = numerics::bf16_to_f32(numerics::f32_to_bf16(silu * up));
  float amax = mxfp4::abs_for_amax(x);
  for (int o = mxfp4::kBlock / 2; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor(amax, o));
  s = numerics::mxfp4_dynamic_scale_exp(amax);
  return x;
}

// Stage 1. grid (tiles_max, I / (BM / 2)).
template <class C, class D>
__global__ __launch_bounds__(C::kThreads, C::kMinBlocks) void gate_up(MoeArgs a, Workspace ws) {
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ int rg[C::BM / 16];
  __shared__ const uint8_t* xrow[C::BN];
  __shared__ const uint8_t* xsrow[C::BN];
  if (int(blockIdx.x) >= *ws.n_tiles) return;
  const Tile tile = ws.tiles[blockIdx.x];
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, T = a.cfg.total_top_k, KB = H / 32;
  constexpr int kHalf = C::BM / 2;
  const int n0 = blockIdx.y * kHalf;
  for (int i = threadIdx.x; i < C::BM / 16; i += C::kThreads) rg[i] = (i < kHalf / 16 ? n0 : I + n0 - kHalf) / 16 + i;
  for (int c = threadIdx.x; c < C::BN; c += C::kThreads) {
    const int p = ws.sorted_pair[tile.row0 + c];
    const int64_t token = p >= 0 ? p / T : 0;  // padding rows borrow token 0; never written back
    xrow[c] = ws.x8 + token * H * D::kActBytes;
    xsrow[c] = ws.xs + token * KB;
  }
  __syncthreads();
  const moe_tile::Operands op{a.gate_up_weight_shuffled + int64_t(tile.expert) * 2 * I * (H / 2),
                              a.gate_up_weight_scale + int64_t(tile.expert) * 2 * I * KB, H / 2, KB};
  float acc[C::MT][C::NG][4];
  moe_tile::mainloop<C, D>(op, rg, xrow, xsrow, smem, acc);
  __syncthreads();  // the pipeline buffers become the fp32 tile [BN][BM + 4]

  constexpr int kStride = C::BM + 4;
  float* tile_f = reinterpret_cast<float*>(smem);
  const moe_tile::AccIndex<C> ix;
#pragma unroll
  for (int m = 0; m < C::MT; ++m)
#pragma unroll
    for (int j = 0; j < C::NG; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) tile_f[ix.col(j, i) * kStride + ix.row(m, i)] = acc[m][j][i];
  __syncthreads();

  // SwiGLU, bf16 rounding, dynamic MXFP4: one 32-lane group per (column, 32 outputs).
  constexpr int kB = mxfp4::kBlock, kGroups = C::BN * (kHalf / kB);
  const int lane = threadIdx.x % kB, KBI = I / kB;
  for (int grp = threadIdx.x / kB; grp < kGroups; grp += C::kThreads / kB) {
    const int c = grp / (kHalf / kB), n = (grp % (kHalf / kB)) * kB + lane;
    const float gate = tile_f[c * kStride + n], up = tile_f[c * kStride + kHalf + n];
    int s;
    const float x = swiglu_bf16_block_scale(gate, up, s);
    const int64_t row = tile.row0 + c;
    const int col = n0 + (n & ~7) + D::position(n & 7);
    const uint32_t bits = D::encode(mxfp4::quantize_dynamic_code(x, s), s);
    if constexpr (D::kActBytes == 1) ws.a8[row * I + col] = uint8_t(bits);
    else reinterpret_cast<uint16_t*>(ws.a8)[row * I + col] = uint16_t(bits);
    if (lane == 0) ws.as[row * KBI + (n0 + n) / kB] = uint8_t(s + 127);
  }
}

#if defined(MOE_Y_BF16X2)
}  // namespace
}  // namespace moe_tiled
namespace moe_wide16 {
namespace {
template <class C>
struct AccIndex;  // (moe_wide16.h: the wgmma accumulator layout of the 32- and 64-row fp8 paths)
}  // namespace
}  // namespace moe_wide16
namespace moe_tiled {
namespace {
// (MOE_Y_BF16X2, with MOE_Y_BF16 and MOE_Y_BF16_CVT) IX types whose y stores go out as bf16 pairs of adjacent rows:
// the wgmma layout's moe_wide16::AccIndex (row0 = warp * MT * 16 + lane / 4, col0 = 2 * (lane % 4)). Other IX
// types (moe_tile::AccIndex of the mma.sync paths) keep the scalar stores.
template <class IX>
struct YRowPairs {
  static constexpr bool value = false;
};
template <class C>
struct YRowPairs<moe_wide16::AccIndex<C>> {
  static constexpr bool value = true;
};

// store_weighted_rows for bf16 y in 4-byte stores: a lane holds rows g and g + 8 (g = lane / 4) of columns 2t and
// 2t + 1 per (m, j); lanes lane and lane ^ 4 (rows g and g ^ 1) swap one column's values, so the lane of even g
// holds rows (g, g + 1) and (g + 8, g + 9) of column 2t and the lane of odd g those of column 2t + 1. Each value is
// still the fp32 product weight[c] * acc rounded once to bf16 by cvt.rn (the same bits as the scalar stores). The
// shuffles run in every lane before the pair test.
template <class C, class IX>
__device__ __forceinline__ void store_weighted_row_pairs(const IX& ix, const float (&acc)[C::MT][C::NG][4],
                                                         const int* pair, const float* weight,
                                                         moe_pipeline::YBf16* y, int H, int n0) {
  const int odd = ix.row(0, 0) & 1;  // g & 1: this lane keeps column 2t + odd (h = odd)
#pragma unroll
  for (int j = 0; j < C::NG; ++j) {
    float keep[C::MT][2], got[C::MT][2];
#pragma unroll
    for (int m = 0; m < C::MT; ++m)
#pragma unroll
      for (int e = 0; e < 2; ++e) {  // e: row g (0) or g + 8 (1)
        const float a0 = acc[m][j][2 * e], a1 = acc[m][j][2 * e + 1];
        keep[m][e] = odd ? a1 : a0;
        got[m][e] = __shfl_xor(odd ? a0 : a1, 4);
      }
    const int c = ix.col(j, odd), p = pair[c];
    if (p < 0) continue;
    const float w = weight[c];
    uint32_t* dst = reinterpret_cast<uint32_t*>(y + int64_t(p) * H + n0);
#pragma unroll
    for (int m = 0; m < C::MT; ++m)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float lo = w * (odd ? got[m][e] : keep[m][e]), hi = w * (odd ? keep[m][e] : got[m][e]);
        uint32_t b;
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(b) : "f"(hi), "f"(lo));  // hi -> upper half, lo -> lower half
        dst[(ix.row(m, 2 * e) - odd) / 2] = b;                               // rows (even, even + 1)
      }
  }
}
#endif

// Whether a down configuration stages its y rows (store_weighted_rows_staged): with MOE_Y_STAGED, every configuration
// unless it says otherwise (a member kYStage; v54's 32-row plan for E33 bs128).
template <class C, class = void>
struct YStage {
#if defined(MOE_Y_STAGED)
  static constexpr bool value = true;
#else
  static constexpr bool value = false;
#endif
};
template <class C>
struct YStage<C, std::void_t<decltype(C::kYStage)>> {
  static constexpr bool value = C::kYStage;
};
// Bytes of the staged y tile a kernel adds to its shared memory (0 where it does not stage).
template <class C>
constexpr int y_stage_bytes() {
  return YStage<C>::value ? C::BN * (C::BM / 2 + 4) * 4 : 0;
}
#if defined(MOE_Y_STAGED)
// store_weighted_row_pairs' words (the same exchange, the same cvt.rn of weight[c] * acc) written to shared memory
// as [column][row pair] first, then copied to y one whole column (BM bf16 = BM * 2 bytes) a warp at a time in 16-byte
// stores: full 32-byte sectors instead of the pairs' half sectors scattered over 8 y rows a store. A column's words
// sit kStride = BM / 2 + 4 apart: the 8 columns of one exchange store land on distinct banks (4 c + g / 2 mod 32).
// stage: y_stage_bytes<C>(), free (the pipeline buffers after the mainloop's last barrier); ncols: the
// tile's columns that may hold a pair (the rest are never copied). Ends with the copies issued (no barrier after).
template <class C, class IX>
__device__ __forceinline__ void store_weighted_rows_staged(const IX& ix, const float (&acc)[C::MT][C::NG][4],
                                                           const int* pair, const float* weight,
                                                           moe_pipeline::YBf16* y, int H, int n0, uint8_t* stage,
                                                           int ncols) {
  constexpr int kStride = C::BM / 2 + 4, kVecs = C::BM / 8;  // words a column; 16-byte pieces a column
  static_assert(C::BM % 8 == 0 && kStride % 4 == 0, "16-byte column pieces");
  uint32_t* st = reinterpret_cast<uint32_t*>(stage);
  const int odd = ix.row(0, 0) & 1;
#pragma unroll
  for (int j = 0; j < C::NG; ++j) {
    float keep[C::MT][2], got[C::MT][2];
#pragma unroll
    for (int m = 0; m < C::MT; ++m)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float a0 = acc[m][j][2 * e], a1 = acc[m][j][2 * e + 1];
        keep[m][e] = odd ? a1 : a0;
        got[m][e] = __shfl_xor(odd ? a0 : a1, 4);
      }
    const int c = ix.col(j, odd);
    const float w = weight[c];
#pragma unroll
    for (int m = 0; m < C::MT; ++m)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float lo = w * (odd ? got[m][e] : keep[m][e]), hi = w * (odd ? keep[m][e] : got[m][e]);
        uint32_t b;
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(b) : "f"(hi), "f"(lo));
        st[c * kStride + (ix.row(m, 2 * e) - odd) / 2] = b;
      }
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < ncols * kVecs; idx += C::kThreads) {
    const int c = idx / kVecs, q = idx % kVecs, p = pair[c];
    if (p < 0) continue;
    const uint4 v = *reinterpret_cast<const uint4*>(st + c * kStride + 4 * q);
    *reinterpret_cast<uint4*>(y + int64_t(p) * H + n0 + 8 * q) = v;
  }
}
#endif

// Stage 2's epilogue: each tile column c with a pair p >= 0 writes its routing weight times the
// accumulator rows into y[p, n0 + row] (IX maps accumulator registers to rows and columns). YT: float, or
// moe_pipeline::YBf16 (MOE_Y_BF16). (MOE_Y_BF16X2: bf16 y of the YRowPairs layouts in 4-byte row pairs.)
template <class C, class IX, class YT>
__device__ __forceinline__ void store_weighted_rows(const IX& ix, const float (&acc)[C::MT][C::NG][4], const int* pair,
                                                    const float* weight, YT* y, int H, int n0) {
#if defined(MOE_Y_BF16X2) && defined(MOE_Y_BF16_CVT) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (YRowPairs<IX>::value && std::is_same<YT, moe_pipeline::YBf16>::value)
    store_weighted_row_pairs<C>(ix, acc, pair, weight, y, H, n0);
  else
#endif
  {
#pragma unroll
  for (int j = 0; j < C::NG; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int c = ix.col(j, h), p = pair[c];
      if (p < 0) continue;
      YT* dst = y + int64_t(p) * H + n0;
#pragma unroll
      for (int m = 0; m < C::MT; ++m) {
        dst[ix.row(m, h)] = weight[c] * acc[m][j][h];
        dst[ix.row(m, h + 2)] = weight[c] * acc[m][j][h + 2];
      }
    }
  }
}

// Stage 2. grid (tiles_max, H / BM): y[pair, n] = weight * (a_q W_down^T).
template <class C, class D>
__global__ __launch_bounds__(C::kThreads, C::kMinBlocks) void down(MoeArgs a, Workspace ws) {
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ int rg[C::BM / 16];
  __shared__ const uint8_t* xrow[C::BN];
  __shared__ const uint8_t* xsrow[C::BN];
  __shared__ int pair[C::BN];
  __shared__ float weight[C::BN];
  if (int(blockIdx.x) >= *ws.n_tiles) return;
  const Tile tile = ws.tiles[blockIdx.x];
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, KB = I / 32;
  const int n0 = blockIdx.y * C::BM;
  for (int i = threadIdx.x; i < C::BM / 16; i += C::kThreads) rg[i] = n0 / 16 + i;
  for (int c = threadIdx.x; c < C::BN; c += C::kThreads) {
    const int64_t row = tile.row0 + c;
    const int p = ws.sorted_pair[row];
    xrow[c] = ws.a8 + row * I * D::kActBytes;
    xsrow[c] = ws.as + row * KB;
    pair[c] = p;
    weight[c] = p >= 0 ? a.topk_weights[p] : 0.0f;
  }
  __syncthreads();
  const moe_tile::Operands op{a.down_weight_shuffled + int64_t(tile.expert) * H * (I / 2),
                              a.down_weight_scale + int64_t(tile.expert) * H * KB, I / 2, KB};
  float acc[C::MT][C::NG][4];
  moe_tile::mainloop<C, D>(op, rg, xrow, xsrow, smem, acc);

  store_weighted_rows<C>(moe_tile::AccIndex<C>(), acc, pair, weight, ws.y, H, n0);
}

template <class K>
void allow_smem(K* kernel, int bytes) {
  if (bytes > 48 * 1024)
    moe_pipeline::check(hipFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                            hipFuncAttributeMaxDynamicSharedMemorySize, bytes),
                        "shared memory attribute");
}

template <int BN, template <int> class P, class D>
void launch_tiled(const MoeArgs& a, const Workspace& ws) {
  using G1 = typename P<BN>::G1;
  using G2 = typename P<BN>::G2;
  static_assert(G1::BN == BN && G2::BN == BN, "plan");
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(a.cfg, BN);
  if (s.I % (G1::BM / 2) || s.H % G2::BM || (s.H / 32) % G1::KS || (s.I / 32) % G2::KS || s.E > 1024)
    throw std::invalid_argument("moe_mxfp4: shape not supported by the tiled kernels");

  const int64_t n8 = s.M * s.H / 8;
  constexpr int kQuantThreads = 256;
  quantize_hidden8<D><<<unsigned((n8 + kQuantThreads - 1) / kQuantThreads), kQuantThreads>>>(a.hidden_states, n8,
                                                                                              ws.x8, ws.xs);
  moe_pipeline::check(hipGetLastError(), "quantize hidden");
  const int route_threads = int((s.E + 63) / 64 * 64);
  route_scan<<<1, route_threads, size_t(2 * s.E + route_threads) * sizeof(int)>>>(
      a.topk_ids, int(s.P), int(s.E), BN, int(s.rows_max), ws.sorted_pair, ws.tiles, ws.n_tiles);
  moe_pipeline::check(hipGetLastError(), "route");

  constexpr int sm1 = gate_up_smem<G1, D>(), sm2 = moe_tile::Layout<G2, D>::kPipeBytes;
  allow_smem(gate_up<G1, D>, sm1);
  allow_smem(down<G2, D>, sm2);
  gate_up<G1, D><<<dim3(unsigned(s.tiles_max), unsigned(s.I / (G1::BM / 2))), G1::kThreads, sm1>>>(a, ws);
  moe_pipeline::check(hipGetLastError(), "tiled gate_up");
  down<G2, D><<<dim3(unsigned(s.tiles_max), unsigned(s.H / G2::BM)), G2::kThreads, sm2>>>(a, ws);
  moe_pipeline::check(hipGetLastError(), "tiled down");
  moe_pipeline::launch_combine(a, ws);
}

#else
template <int BN>
struct Plan {};
template <int BN>
struct PlanWide {};
#endif

// One tile size: workspace, then the tiled kernels (or, without mma.sync, v2's scalar ones).
template <int BN, template <int> class P, class D>
void launch_one(const MoeArgs& a) {
  moe_pipeline::require_workspace(a, BN, D::kActBytes);
  Workspace ws;
  moe_pipeline::carve(a.cfg, BN, a.workspace, &ws, D::kActBytes);
#if defined(MOE_HAVE_MMA_SYNC)
  launch_tiled<BN, P, D>(a, ws);
#else
  moe_pipeline::launch_prologue(a, ws, BN);
  moe_scalar_gemm::launch<(BN < 32 ? BN : 32)>(a, ws);
  moe_pipeline::launch_combine(a, ws);
#endif
}

template <template <int> class P, class D>
void launch(const MoeArgs& a) {
  switch (tile_rows_for(a.cfg)) {
    case 8: launch_one<8, P, D>(a); break;
    case 16: launch_one<16, P, D>(a); break;
    case 32: launch_one<32, P, D>(a); break;
    default: launch_one<64, P, D>(a); break;
  }
}

}  // namespace
}  // namespace moe_tiled
