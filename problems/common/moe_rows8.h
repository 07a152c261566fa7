// 8-row MoE tiles (bs x k / routed experts <= 8) as v12/v13 run them (moe_wg8.h: f16 mma.sync gate_up,
// wgmma e4m3 down; same operands, same k order, so the output is v13's bit for bit), launched as a
// chain that overlaps the kernels' edges (launch8; options measured in docs/perf.md, section "moe_mxfp4 v15"):
//  - one prologue kernel: block 0 sorts the pairs (v12's 1024-thread route), blocks 1.. quantize the
//    hidden states (v12's branch-free quantizer, 1024 threads a block): one launch instead of two;
//  - DEP: gate_up / down / combine may be launched with programmatic dependent launch (launch
//    attribute 6): the blocks become resident while the previous kernel drains and wait for it with
//    griddepcontrol.wait; every kernel releases its dependent right after its own wait (gate_up: after
//    its mainloop with OPT 1). v15 uses gate_up + combine; a dependent down measured slower;
//  - down_persist: a persistent down kernel (grid = resident blocks) walking work items
//    (tile, 256-row slice) round-robin with one continuous copy pipeline across items: the next item's
//    stages are in flight while the current item computes and writes y; it reads only the route's
//    output and the weights before its wait, so a dependent launch has its first weight stages in
//    flight while gate_up finishes. Optionally (FUSE) the combine in its epilogue (measured slower);
//  - FOLD (measured slower, off in v15): activation scales folded into the f16 activations.
// NVIDIA only (MOE_WG8_HOST); sm_90a for the wgmma down as in moe_wg8.h.
#pragma once
#include <cstring>
#include <type_traits>
#include <utility>

#include "problems/common/moe_wg8.h"

namespace moe_rows8 {
namespace {

using moe_pipeline::Tile;
using moe_pipeline::Workspace;

#if defined(MOE_WG8_HOST)
using moe_wg8::kLanes;
using moe_wg8::kThreads;

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

constexpr int kPrologueThreads = 1024;
// FOLD: activation blocks whose scale exponent s is in [-kFoldRange, kFoldRange] are stored as f16 of
// value x 2^s (exact: every e2m1 value x 2^s is a normal f16 there) with the scale word 14 << 23 (the
// x 2^s is already in the MMA's d, exactly: a power of two); other blocks as v13 (value, (s + 14) << 23).
// gate_up then runs a stage whose 8 x KS scale words all equal 14 << 23 without reading them.
constexpr int kFoldRange = 13;
constexpr int32_t kFoldedWord = 14 << 23;

// Block 0: moe_tiled::route_scan (tile_rows 8, 1024 threads); blocks 1..: moe_wg8::quantize_hidden8<
// F16Decode, 14> over 1024 threads a block.
template <bool FOLD>
__global__ __launch_bounds__(kPrologueThreads) void quantize_route(MoeArgs a, Workspace ws, int P, int E, int rows_max,
                                                                   int64_t n8, int32_t* counters, int n_counters) {
  dep_release();  // gate_up's blocks may be scheduled now; they wait for this grid's completion
  extern __shared__ int smem_route[];
  const int tid = threadIdx.x;
  if (blockIdx.x == 0) {
    constexpr int tile_rows = 8;
    int* count = smem_route;
    int* row_off = smem_route + E;
    int* scan = smem_route + 2 * E;
    for (int e = tid; e < E; e += blockDim.x) count[e] = 0;
    for (int r = tid; r < rows_max; r += blockDim.x) ws.sorted_pair[r] = -1;
    for (int r = tid; r < n_counters; r += blockDim.x) counters[r] = 0;
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
      count[tid] = 0;
    }
    if (tid == int(blockDim.x) - 1) *ws.n_tiles = scan[tid];
    __syncthreads();
    for (int p = tid; p < P; p += blockDim.x) {
      const int e = a.topk_ids[p];
      if (e >= 0 && e < E) ws.sorted_pair[row_off[e] + atomicAdd(&count[e], 1)] = p;
    }
    return;
  }
  using D = moe_tile::F16Decode;
  const int64_t i = int64_t(blockIdx.x - 1) * blockDim.x + tid;
  float v[8];
  const int s = moe_tiled::hidden8_block_scale(a.hidden_states, i, n8, v);
  if (i >= n8) return;
  const float mul = numerics::exp2_f32(-s);
  const bool fold = FOLD && s >= -kFoldRange && s <= kFoldRange;
  uint32_t out[4] = {};
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const int pos = D::position(k);
    uint32_t h = D::encode(moe_wg8::e2m1_code(v[k], mul), s);  // f16 bits of the e2m1 value
    if (fold && (h & 0x7fffu)) h = uint32_t(int32_t(h) + s * 1024);  // x 2^s: exponent field + s, stays normal
    out[pos / 2] |= h << (16 * (pos % 2));
  }
  reinterpret_cast<uint4*>(ws.x8)[i] = make_uint4(out[0], out[1], out[2], out[3]);
  if (i % 4 == 0) reinterpret_cast<int32_t*>(ws.xs)[i / 4] = int32_t(uint32_t((fold ? 0 : s) + 14) << 23);
}

// moe_wg8::gate_up_f16 with the dependent-launch wait (before the first read of the route's output)
// and release.
// OPT: 1 = release the dependent launch after the mainloop instead of after the wait; 2 = grid
// (slices, tiles) instead of (tiles, slices): the real tiles' blocks first, one tile's slices together.
template <class C, int MINB, bool FOLD, int OPT = 0>
__global__ __launch_bounds__(kThreads, MINB) void gate_up_f16(MoeArgs a, Workspace ws) {
  extern __shared__ __align__(128) uint8_t smem_rows8[];
  uint8_t* smem = smem_rows8;
  __shared__ int rg[C::BM / 16];
  __shared__ const uint8_t* xrow[C::BN];
  __shared__ const uint8_t* xsrow[C::BN];
  dep_wait();
  if constexpr (!(OPT & 1)) dep_release();
  const int tile_i = (OPT & 2) ? int(blockIdx.y) : int(blockIdx.x), slice = (OPT & 2) ? int(blockIdx.x) : int(blockIdx.y);
  if (tile_i >= *ws.n_tiles) return;
  const Tile tile = ws.tiles[tile_i];
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, T = a.cfg.total_top_k, KB = H / 32;
  constexpr int kHalf = C::BM / 2, KS = C::KS_;
  const int n0 = slice * kHalf;
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
#if defined(__CUDA_ARCH__)
  const int nk = KB / KS;
  const uint32_t rg_bytes = uint32_t(H / 64) * 512u;
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
  auto compute = [&](int slot, auto folded) {
    constexpr bool kF = decltype(folded)::value;
    const uint8_t* st = smem + slot * C::kStageBytes;
    const uint2 wg0 = *reinterpret_cast<const uint2*>(st + ws_off);
    const uint2 wg8 = *reinterpret_cast<const uint2*>(st + ws_off + 8 * KS);
    const uint32_t wsw[2][2] = {{wg0.x, wg0.y}, {wg8.x, wg8.y}};
    int32_t xsw[2][KS];
#pragma unroll
    for (int c = 0; c < 2; ++c)
#pragma unroll
      for (int q = 0; q < KS / 4; ++q) {
        if constexpr (kF) {
          xsw[c][4 * q] = xsw[c][4 * q + 1] = xsw[c][4 * q + 2] = xsw[c][4 * q + 3] = kFoldedWord;
          continue;
        }
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
      moe_wg8::decode_f16(*reinterpret_cast<const uint32_t*>(p), lo);
      moe_wg8::decode_f16(*reinterpret_cast<const uint32_t*>(p + 128), hi);
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
    bool folded = false;
    if constexpr (FOLD) {
      // Each of threads 0..15 checks the 4 scale words it copied itself (landed: its own wait);
      // the stage is folded when all 8 x KS words are.
      int other = 0;
      if (tid < 16) {
        const int4 v = *reinterpret_cast<const int4*>(smem + (ks % C::ST) * C::kStageBytes + xsdst);
        other = (v.x != kFoldedWord) | (v.y != kFoldedWord) | (v.z != kFoldedWord) | (v.w != kFoldedWord);
      }
      folded = !__syncthreads_or(other);
    } else {
      __syncthreads();
    }
    const int next = ks + C::ST - 1;
    if (next < nk) load(next % C::ST, next * KS);
    moe_tile::cp_commit();
    if (folded) compute(ks % C::ST, std::true_type{});
    else compute(ks % C::ST, std::false_type{});
  }
  moe_tile::cp_wait<0>();
#else
  (void)wbase, (void)sbase, (void)tid, (void)lane, (void)warp, (void)g, (void)t;
#endif
  if constexpr ((OPT & 1) != 0) dep_release();
  __syncthreads();
  constexpr int kStride = C::BM + 4;
  float* tile_f = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int i = 0; i < 4; ++i) tile_f[(2 * t + (i & 1)) * kStride + warp * 16 + g + 8 * (i >> 1)] = acc[i];
  __syncthreads();
  moe_wg8::swiglu_requant<C::BN, kHalf, kThreads>(tile_f, kStride, tile, n0, I, ws);
}

// The wgmma down mainloop over a sequence of work items (moe_wg8::mainloop's stage, copies and
// compute; the items' stages form one pipeline). Item j of this block: info[j] = (weight base offset
// of the slice, scale base offset, first sorted row); each item is KB / KS stages. Weights of the
// first STAGES - 1 stages are issued before dep_wait(), everything the previous kernel writes after.
// epi(j, acc) is called after item j's last stage.
template <class C, class Pre, class Epi>
__device__ inline void mainloop_items(const uint8_t* wglob, const uint8_t* sglob, const uint8_t* a8, const uint8_t* as,
                                      const int4* info, int n_items, int k_bytes, int KB, uint8_t* smem, Pre&& pre,
                                      Epi&& epi) {
#if defined(MOE_WG8_DEVICE)
  using namespace moe_wg8;
  const int tid = threadIdx.x, lane = tid % kLanes, warp = tid / kLanes;
  const int t = lane % 4;
  const int nk = KB / C::KS;
  const int n_stages = n_items * nk;
  const uint32_t rg_bytes = uint32_t(k_bytes / 32) * 512u;
  float acc[C::MT][4];
#pragma unroll
  for (int m = 0; m < C::MT; ++m)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[m][i] = 0.0f;

  constexpr int kWChunks = C::BM * C::KS;
  constexpr int kWPer = kWChunks / kThreads;
  uint32_t woff[kWPer];  // relative to the slice's first 16-row group
#pragma unroll
  for (int j = 0; j < kWPer; ++j) {
    const int i = tid + kThreads * j, r = i / (C::KS * 16), ch = i % (C::KS * 16);
    woff[j] = uint32_t(r) * rg_bytes + ch * 16;
  }
  constexpr int kSPer = (C::BM + kThreads - 1) / kThreads;
  uint32_t soff[kSPer];  // relative to the slice's first row
#pragma unroll
  for (int j = 0; j < kSPer; ++j) soff[j] = uint32_t((tid + kThreads * j) % C::BM) * uint32_t(KB);
  constexpr int kXChunks = C::BN * C::KS * 2;
  const int xc = tid / (C::KS * 2), xch = tid % (C::KS * 2);
  const uint32_t xoff = uint32_t(xc) * uint32_t(KB * 32) + xch * 16;  // + row0 * I
  const int xdst = C::kX + xch * 128 + xc * 16;
  constexpr int kXsChunks = C::BN * C::KS / 4;
  const int sc_c = tid / (C::KS / 4), sc_ch = tid % (C::KS / 4);
  const uint32_t xsoff = uint32_t(sc_c) * uint32_t(KB * 4) + sc_ch * 16;
  const int xsdst = C::kXs + sc_c * C::KS * 4 + sc_ch * 16;
  const uint32_t smem_s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));

  auto load_w = [&](int g) {
    const int slot = g % C::STAGES, kb0 = (g % nk) * C::KS;
    const int4 it = info[g / nk];
    uint8_t* st = smem + slot * C::kStageBytes;
    const uint8_t* wb = wglob + (int64_t(uint32_t(it.x)) << 4) + kb0 * 256;
#pragma unroll
    for (int j = 0; j < kWPer; ++j) {
      const int i = tid + kThreads * j, r = i / (C::KS * 16), ch = i % (C::KS * 16);
      moe_tile::cp_async<16>(st + C::kW + r * C::KS * 256 + ch * 16, wb + woff[j]);
    }
    const uint8_t* sb = sglob + (int64_t(uint32_t(it.y)) << 4) + kb0;
#pragma unroll
    for (int j = 0; j < kSPer; ++j)
      if (tid + kThreads * j < C::BM) moe_tile::cp_async<C::KS>(st + C::kWs + (tid + kThreads * j) * C::KS, sb + soff[j]);
  };
  auto load_x = [&](int g) {
    const int slot = g % C::STAGES, kb0 = (g % nk) * C::KS;
    const int row0 = info[g / nk].z;
    uint8_t* st = smem + slot * C::kStageBytes;
    if (tid < kXChunks) moe_tile::cp_async<16>(st + xdst, a8 + int64_t(row0) * (KB * 32) + xoff + kb0 * 32);
    if (tid < kXsChunks) moe_tile::cp_async<16>(st + xsdst, as + int64_t(row0) * (KB * 4) + xsoff + kb0 * 4);
  };

  const int a_off = C::kW + warp * C::KS * 256 + 4 * lane;
  const int ws_off = C::kWs + (warp * 16 + lane / 4) * C::KS;
  const int xs_off = C::kXs + 2 * t * C::KS * 4;

  auto compute = [&](int slot) { down_stage<C>(smem, smem_s, slot, a_off, ws_off, xs_off, acc); };

#pragma unroll
  for (int s = 0; s < C::STAGES - 1; ++s)
    if (s < n_stages) load_w(s);
  pre();  // while the first weight copies are in flight
  moe_rows8::dep_wait();  // the activations are the previous kernel's output
#pragma unroll
  for (int s = 0; s < C::STAGES - 1; ++s) {
    if (s < n_stages) load_x(s);
    moe_tile::cp_commit();
  }
  for (int gs = 0; gs < n_stages; ++gs) {
    moe_tile::cp_wait<C::STAGES - 2>();
    proxy_fence();
    __syncthreads();
    const int next = gs + C::STAGES - 1;
    if (next < n_stages) {
      load_w(next);
      load_x(next);
    }
    moe_tile::cp_commit();
    compute(gs % C::STAGES);
    if (gs % nk == nk - 1) {
      epi(gs / nk, acc);
#pragma unroll
      for (int m = 0; m < C::MT; ++m)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[m][i] = 0.0f;
    }
  }
  moe_tile::cp_wait<0>();
#else
  (void)wglob, (void)sglob, (void)a8, (void)as, (void)info, (void)n_items, (void)k_bytes, (void)KB, (void)smem, (void)pre, (void)epi;
#if defined(__CUDA_ARCH__)
  __trap();  // built without sm_90a features: never dispatched to
#endif
#endif
}

// Stage 2 over work items (tile, BM-row slice of H): item = blockIdx.x + j * gridDim.x (all of a
// tile's slices are consecutive items, so the resident blocks read one expert's rows together).
// kMaxItems bounds the items of one block (the host sizes the grid so).
// FUSE: the combine in the epilogue: after writing an item's y rows, each pair's (token, slice) counter
// is incremented (after a fence); the block that brings it to total_top_k sums the token's y rows of
// that slice in slot order (moe_pipeline::combine's order and rounding) and writes out.
constexpr int kMaxItems = 64;
template <class C, bool FUSE = false>
__global__ __launch_bounds__(kThreads, C::kMinBlocks) void down_persist(MoeArgs a, Workspace ws, int32_t* counters) {
  extern __shared__ __align__(128) uint8_t smem_rows8[];
  __shared__ int4 info[kMaxItems];       // (weight offset / 16, scale offset / 16, row0, H column n0)
  __shared__ int pair_s[kMaxItems][8];
  __shared__ float weight_s[kMaxItems][8];
  __shared__ int done_s[8];
  dep_release();  // combine's blocks may be scheduled; they wait for this grid's completion
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, KB = I / 32;
  const int NS = H / C::BM;
  // The route's output is complete: this grid starts only after every gate_up block passed its wait.
  const int n_all = __ldcg(ws.n_tiles) * NS;
  const int G = gridDim.x;
  const int n_items = n_all > int(blockIdx.x) ? (n_all - int(blockIdx.x) + G - 1) / G : 0;
  if (n_items == 0) return;
  for (int j = threadIdx.x; j < n_items; j += kThreads) {
    const int item = int(blockIdx.x) + j * G, ti = item / NS, n0 = (item % NS) * C::BM;
    const int2 tv = __ldcg(reinterpret_cast<const int2*>(ws.tiles) + ti);  // (expert, row0)
    const int64_t wo = int64_t(tv.x) * H * (I / 2) + int64_t(n0) * (I / 2);  // 16-row groups: 16 * I / 2 bytes
    const int64_t so = int64_t(tv.x) * H * KB + int64_t(n0) * KB;
    info[j] = make_int4(int(wo >> 4), int(so >> 4), tv.y, n0);
  }
  __syncthreads();
  // The pair list of every item: read while the first weight stages are in flight; the main loop's
  // stage barrier orders it before the first epilogue.
  auto pre = [&] {
    for (int idx = threadIdx.x; idx < n_items * 8; idx += kThreads) {
      const int j = idx / 8, c = idx % 8;
      const int p = __ldcg(ws.sorted_pair + info[j].z + c);
      pair_s[j][c] = p;
      weight_s[j][c] = p >= 0 ? a.topk_weights[p] : 0.0f;
    }
  };
  const int lane = threadIdx.x % kLanes, warp = threadIdx.x / kLanes;
  const int r0 = warp * 16 + lane / 4, c0 = 2 * (lane % 4);
  auto epi = [&](int j, float (&acc)[C::MT][4]) {
    const int n0 = info[j].w;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int c = c0 + h, p = pair_s[j][c];
      if (p < 0) continue;
      const float wt = weight_s[j][c];
      float* dst = ws.y + int64_t(p) * H + n0;
#pragma unroll
      for (int m = 0; m < C::MT; ++m) {
        dst[64 * m + r0] = wt * acc[m][h];
        dst[64 * m + r0 + 8] = wt * acc[m][h + 2];
      }
    }
    if constexpr (FUSE) {
      const int T = a.cfg.total_top_k;
      __threadfence();
      __syncthreads();
      if (threadIdx.x < 8) {
        const int p = pair_s[j][threadIdx.x];
        int done = -1;
        if (p >= 0) {
          const int token = p / T;
          if (atomicAdd(&counters[token * NS + n0 / C::BM], 1) == T - 1) done = token;
        }
        done_s[threadIdx.x] = done;
      }
      __syncthreads();
      __threadfence();
#pragma unroll 1
      for (int c = 0; c < 8; ++c) {
        const int token = done_s[c];
        if (token < 0) continue;
        for (int n = threadIdx.x; n < C::BM; n += kThreads) {
          const float* yt = ws.y + int64_t(token) * T * H + n0 + n;
          float sum = 0.0f;
          for (int k = 0; k < T; ++k) sum += __ldcg(yt + int64_t(k) * H);
          a.out[int64_t(token) * H + n0 + n] = numerics::f32_to_bf16(sum);
        }
      }
    }
  };
  mainloop_items<C>(a.down_weight_shuffled, a.down_weight_scale, ws.a8, ws.as, info, n_items, I / 2, KB,
                    smem_rows8, pre, epi);
}

// moe_pipeline::combine after the dependent-launch wait.
__global__ void combine(const float* y, int64_t M, int H, int total_top_k, uint16_t* out) {
  dep_wait();
  moe_pipeline::combine_rows(y, M, H, total_top_k, out);
}

// Host: cudaLaunchKernelEx with attribute 6 (programmatic dependent launch; the enumerator's name
// holds a word these files avoid) when dep is set.
template <class... P, class... Args>
void launch_ex(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, bool dep, const char* what, Args&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute attr[1];
  std::memset(attr, 0, sizeof(attr));
  attr[0].id = static_cast<cudaLaunchAttributeID>(6);
  const int one = 1;
  std::memcpy(&attr[0].val, &one, sizeof(one));
  cfg.attrs = attr;
  cfg.numAttrs = dep ? 1 : 0;
  moe_pipeline::check(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...), what);
}

// Resident blocks of down_persist<G2> (occupancy calculator, once per instance).
template <class G2, bool FUSE>
int persist_slots(int sm2) {
  static const int n = [sm2] {
    int dev = 0, sms = 0, per = 0;
    moe_pipeline::check(hipGetDevice(&dev), "device");
    moe_pipeline::check(hipDeviceGetAttribute(&sms, hipDeviceAttributeMultiprocessorCount, dev), "SM count");
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, down_persist<G2, FUSE>, kThreads, sm2) != cudaSuccess || per < 1) {
      (void)cudaGetLastError();
      per = 1;
    }
    return sms * per;
  }();
  return n;
}

// The 8-row chain: prologue (route + quantize), gate_up_f16 (FC, MINB), persistent down (G2), combine.
// DEP: which launches are dependent (1 gate_up, 2 down, 4 combine); FOLD: folded activation scales.
// moe_wg8::carve (f16 activations) plus one int per (token, 64 columns of H): the combine counters.
inline size_t workspace8(const MoeConfig& c, int32_t** counters = nullptr, void* base = nullptr) {
  const size_t off = moe_wg8::carve(c, nullptr, nullptr, 2);
  if (counters) *counters = reinterpret_cast<int32_t*>(static_cast<char*>(base) + off);
  return off + moe_pipeline::align256(size_t(c.bs) * (c.d_hidden / 64) * sizeof(int32_t));
}

// PERSIST: 0 = moe_wg8::down (v13's grid), 1 = down_persist, 2 = down_persist with the combine fused;
// -1 / -2: 1 / 2 when the grid's work items (tiles_max x H / 256) are >= 8 per resident block, else 0.
template <class FC, int MINB, class G2, int DEP, bool FOLD, int PERSIST = 1, int OPT = 0>
void launch8(const MoeArgs& a) {
  if (a.workspace_size < workspace8(a.cfg)) throw std::invalid_argument("moe_mxfp4: workspace too small");
  Workspace ws;
  moe_wg8::carve(a.cfg, a.workspace, &ws, 2);
  int32_t* counters = nullptr;
  workspace8(a.cfg, &counters, a.workspace);
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(a.cfg, 8);
  if (s.I % 32 || s.H % G2::BM || (s.H / 32) % FC::KS_ || (s.I / 32) % G2::KS || s.E > kPrologueThreads)
    throw std::invalid_argument("moe_mxfp4: shape not supported by the 8-row kernels");
  constexpr bool kFuse = PERSIST == 2 || PERSIST == -2;
  const int64_t n8 = s.M * s.H / 8;
  const unsigned qblocks = unsigned((n8 + kPrologueThreads - 1) / kPrologueThreads);
  launch_ex(quantize_route<FOLD>, dim3(1 + qblocks), dim3(kPrologueThreads), size_t(2 * s.E + kPrologueThreads) * sizeof(int),
            false, "quantize + route", a, ws, int(s.P), int(s.E), int(s.rows_max), n8, counters,
            kFuse ? int(s.M * (s.H / G2::BM)) : 0);
  constexpr int sm1 = FC::kPipeBytes > 8 * 68 * 4 ? FC::kPipeBytes : 8 * 68 * 4, sm2 = G2::kPipeBytes;
  moe_wg8::allow_smem(gate_up_f16<FC, MINB, FOLD, OPT>, sm1);
  const dim3 grid1 = (OPT & 2) ? dim3(unsigned(s.I / 32), unsigned(s.tiles_max)) : dim3(unsigned(s.tiles_max), unsigned(s.I / 32));
  launch_ex(gate_up_f16<FC, MINB, FOLD, OPT>, grid1, dim3(kThreads), sm1, DEP & 1,
            "f16 gate_up", a, ws);
  const int64_t items_max = s.tiles_max * (s.H / G2::BM);
  bool persist = PERSIST != 0;
  if constexpr (PERSIST != 0) moe_wg8::allow_smem(down_persist<G2, kFuse>, sm2);
  if constexpr (PERSIST < 0) persist = items_max >= 8 * int64_t(persist_slots<G2, kFuse>(sm2));
  if (persist) {
    if constexpr (PERSIST != 0) {
      int64_t grid = persist_slots<G2, kFuse>(sm2);
      grid = std::max<int64_t>(grid, (items_max + kMaxItems - 1) / kMaxItems);
      grid = std::min<int64_t>(grid, items_max);
      launch_ex(down_persist<G2, kFuse>, dim3(unsigned(grid)), dim3(kThreads), sm2, (DEP & 2) != 0, "wgmma down", a, ws,
                counters);
    }
  } else {  // moe_wg8::down (no dependent-launch wait: launched plainly)
    static_assert((DEP & 2) == 0 || PERSIST > 0, "moe_wg8::down has no dependent-launch wait");
    moe_wg8::allow_smem(moe_wg8::down<G2>, sm2);
    launch_ex(moe_wg8::down<G2>, dim3(unsigned(s.tiles_max), unsigned(s.H / G2::BM)), dim3(kThreads), sm2, false,
              "wgmma down", a, ws);
  }
  if (kFuse && persist) return;
  constexpr int kCombineThreads = 256;
  const int64_t n = int64_t(a.cfg.bs) * a.cfg.d_hidden;
  launch_ex(combine, dim3(unsigned((n + kCombineThreads - 1) / kCombineThreads)), dim3(kCombineThreads), 0, (DEP & 4) != 0,
            "combine", static_cast<const float*>(ws.y), int64_t(a.cfg.bs), int(a.cfg.d_hidden), int(a.cfg.total_top_k),
            a.out);
}
#endif  // MOE_WG8_HOST

}  // namespace
}  // namespace moe_rows8
