// moe_rows8.h's 8-row chain (prologue, f16 gate_up, persistent wgmma down, combine; the same arithmetic, so
// the output is v16's bit for bit) with the gate_up -> down edge overlapped per tile instead of per grid
// (measured in docs/perf.md, section "moe_mxfp4 v19"):
//  - the prologue also zeroes a per-tile counter ready[tile] and a work-queue head, and writes each sorted
//    row's routing weight next to the pair list;
//  - gate_up (moe_wg8::gate_up_f16's body) runs on the grid (I / 32 slices, tiles), so a tile's slices are
//    consecutive blocks; each block, after its activations a8 / as are stored, fences and adds 1 to
//    ready[tile];
//  - down_dyn: a dependent launch (its blocks become resident as gate_up's last wave drains) that takes
//    work items (tile, 256-row slice of H) from the queue head, in tile order, with moe_rows8's down stage
//    pipeline continued across items. Taking an item is spread over an earlier item's stages (queue atomic,
//    then the tile's loads issued before a stage's compute and stored after it) so that no warp of the
//    warpgroup waits on a global round trip; an item's weights are copied at once, its activations after
//    ready[tile] == I / 32. No grid-wide wait: the down work of finished tiles fills gate_up's tail;
//  - FOLD: the quantizer stores a 32-block as f16 of value x 2^s (exact for -13 <= s <= 13) with the scale
//    word of s = 0, and flags per (token, 256 values) any block it could not fold; a gate_up block whose 8
//    tokens are all folded skips the activation scale words (v15's FOLD decided this per stage with a
//    block-wide or-reduction, which cost more than it saved);
//  - combine: moe_rows8::combine (dependent launch, waits for down_dyn's grid).
// NVIDIA only (MOE_WG8_HOST); sm_90a for the wgmma down as in moe_wg8.h.
#pragma once
#include <type_traits>

#include "problems/common/moe_rows8.h"

namespace moe_rows8b {
namespace {

using moe_pipeline::Tile;
using moe_pipeline::Workspace;

#if defined(MOE_WG8_HOST)
using moe_wg8::kLanes;
using moe_wg8::kThreads;

// Per-call counters after moe_rows8's workspace: ready[tiles_max], then the queue head; then the
// quantizer's fold flags: one byte per (token, kLanes x 8 hidden values), nonzero where some 32-block of
// those values could not be folded (FOLD, see quantize_route_b).
struct Sync {
  int* ready;
  int* head;
  uint8_t* unfolded;
  float* row_w;  // [rows_max] routing weight of each sorted row (0 for padding), written by the route
};

inline size_t fold_flag_bytes(const MoeConfig& c) { return size_t(c.bs) * (c.d_hidden / (8 * moe_tile::kMmaLanes)); }

inline size_t workspace8b(const MoeConfig& c) {
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(c, 8);
  return moe_rows8::workspace8(c) + moe_pipeline::align256(size_t(s.tiles_max + 1) * sizeof(int)) +
         moe_pipeline::align256(fold_flag_bytes(c)) + moe_pipeline::align256(size_t(s.rows_max) * sizeof(float));
}

inline Sync sync_of(const MoeConfig& c, void* base) {
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(c, 8);
  char* b = static_cast<char*>(base) + moe_rows8::workspace8(c);
  int* p = reinterpret_cast<int*>(b);
  char* f = b + moe_pipeline::align256(size_t(s.tiles_max + 1) * sizeof(int));
  return Sync{p, p + s.tiles_max, reinterpret_cast<uint8_t*>(f),
              reinterpret_cast<float*>(f + moe_pipeline::align256(fold_flag_bytes(c)))};
}

// f16 bits of (e2m1 value of code) x 2^s, exact for -13 <= s <= 13 (every value normal or zero); s = 0 gives
// moe_tile::F16Decode::encode.
__device__ inline uint32_t encode_folded(uint32_t code, int s) {
  const uint32_t e = (code >> 1) & 3u, m = code & 1u;
  const uint32_t mag = e ? (uint32_t(int(e) + 14 + s) << 10) | (m << 9) : (m ? uint32_t(14 + s) << 10 : 0u);
  return mag | ((code & 8u) << 12);
}

// A relaxed gpu-scope load of a counter (an acquire load also invalidates L1, CCTL.IVALL, measured 6% of
// down_dyn's stall samples). What it guards is read by cp.async.cg (L2, no L1) issued after a branch on
// the value and, for the other threads of the block, after a block barrier.
__device__ inline int ld_relaxed(const int* p) {
  int v = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
#else
  v = *const_cast<volatile const int*>(p);
#endif
  return v;
}

constexpr int kPrologueThreads = 1024;
// moe_rows8::quantize_route, plus: block 0 zeroes the counters (n_sync = tiles_max + 1 ints). FOLD: a 32-block
// whose scale exponent s is in [-13, 13] is stored as f16 of value x 2^s with the scale word of s = 0 (the same
// products, exactly: d x 2^s is exact), others as before; one flag byte per (token, kLanes x 8 values)
// says whether any of its 32-blocks was not folded.
template <bool FOLD>
__global__ __launch_bounds__(kPrologueThreads) void quantize_route_b(MoeArgs a, Workspace ws, int P, int E, int rows_max,
                                                                     int64_t n8, int* sync_base, int n_sync,
                                                                     uint8_t* unfolded, float* row_w) {
  moe_wg8::dep_release();
  extern __shared__ int smem_route_b[];
  const int tid = threadIdx.x;
  if (blockIdx.x == 0) {
    constexpr int tile_rows = 8;
    for (int i = tid; i < n_sync; i += blockDim.x) sync_base[i] = 0;
    moe_tiled::route_block(a, ws, P, E, tile_rows, rows_max, tid, smem_route_b, [&](int r) { row_w[r] = 0.0f; },
                           [&](int r, int p) { row_w[r] = a.topk_weights[p]; });
    return;
  }
  using D = moe_tile::F16Decode;
  const int64_t i = int64_t(blockIdx.x - 1) * blockDim.x + tid;
  float v[8];
  const int s = moe_tiled::hidden8_block_scale(a.hidden_states, i, n8, v);
  if (i >= n8) return;
  const float mul = numerics::exp2_f32(-s);
  const bool fold = FOLD && s >= -13 && s <= 13;
  uint32_t out[4] = {};
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const int pos = D::position(k);
    const uint32_t code = moe_wg8::e2m1_code(v[k], mul);
    const uint32_t h = fold ? encode_folded(code, s) : D::encode(code, s);
    out[pos / 2] |= h << (16 * (pos % 2));
  }
  reinterpret_cast<uint4*>(ws.x8)[i] = make_uint4(out[0], out[1], out[2], out[3]);
  if (i % 4 == 0) reinterpret_cast<int32_t*>(ws.xs)[i / 4] = int32_t(uint32_t((fold ? 0 : s) + 14) << 23);
  if constexpr (FOLD) {  // n8 is a multiple of the warp's lanes (H / 8 is)
    const unsigned any = __ballot_sync(0xffffffffu, !fold);
    if (i % kLanes == 0) unfolded[i / kLanes] = any != 0u;
  }
}

// moe_wg8::gate_up_f16<C, MINB, true> on the grid (I / 32, tiles_max), signalling ready[tile] at the end.
// FOLD: when no 32-block of the tile's 8 tokens is unfolded (the quantizer's flags, checked once a block),
// the mainloop skips the activation scale words (copies, loads, one add a product scale): the activations
// carry their scale, the product scale is 2^(sw + 14); otherwise v16's mainloop (exact either way).
template <class C, int MINB, bool FOLD = false>
__global__ __launch_bounds__(kThreads, MINB) void gate_up_f16b(MoeArgs a, Workspace ws, Sync sy) {
  extern __shared__ __align__(128) uint8_t smem_wg8b[];
  uint8_t* smem = smem_wg8b;
  __shared__ int rg[C::BM / 16];
  __shared__ const uint8_t* xrow[C::BN];
  __shared__ const uint8_t* xsrow[C::BN];
  __shared__ int token_s[C::BN];
  moe_wg8::dep_wait();
  moe_wg8::dep_release();
  const int tile_index = int(blockIdx.y);
  if (tile_index >= *ws.n_tiles) return;
  const Tile tile = ws.tiles[tile_index];
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, T = a.cfg.total_top_k, KB = H / 32;
  constexpr int kHalf = C::BM / 2, KS = C::KS_;
  const int n0 = blockIdx.x * kHalf;
  for (int i = threadIdx.x; i < C::BM / 16; i += kThreads) rg[i] = (i < kHalf / 16 ? n0 : I + n0 - kHalf) / 16 + i;
  for (int c = threadIdx.x; c < C::BN; c += kThreads) {
    const int p = ws.sorted_pair[tile.row0 + c];
    const int64_t token = p >= 0 ? p / T : 0;  // padding rows borrow token 0; never written back
    xrow[c] = ws.x8 + token * H * 2;
    xsrow[c] = ws.xs + token * KB * 4;
    token_s[c] = int(token);
  }
  __syncthreads();
  bool folded = false;
  if constexpr (FOLD) {
    const int fpt = H / (8 * kLanes);  // flag bytes a token
    int unf = 0;
    for (int i = threadIdx.x; i < C::BN * fpt; i += kThreads) unf |= sy.unfolded[int64_t(token_s[i / fpt]) * fpt + i % fpt];
    folded = __syncthreads_or(unf) == 0;
  }
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
  const int a_off = C::kW + warp * KS * 256 + 4 * lane;
  const int ws_off = C::kWs + (warp * 16 + g) * KS;
  const int b_off = C::kX + g * C::kXStride + 16 * t;
  const int xs_off = C::kXs + 2 * t * KS * 4;
  auto run = [&](auto fold_tag) {
    constexpr bool F = decltype(fold_tag)::value;
    auto load = [&](int slot, int kb0) {
      uint8_t* st = smem + slot * C::kStageBytes;
      const uint8_t* wb = wbase + kb0 * 256;
#pragma unroll
      for (int j = 0; j < 4; ++j) moe_tile::cp_async<16>(st + C::kW + j * KS * 256 + tid * 16, wb + woff[j]);
      if (tid < 64) moe_tile::cp_async<KS>(st + C::kWs + tid * KS, sbase + soff + kb0);
#pragma unroll
      for (int j = 0; j < 2; ++j) moe_tile::cp_async<16>(st + xdst[j], xsrc[j] + kb0 * 64);
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
          int4 v = make_int4(14 << 23, 14 << 23, 14 << 23, 14 << 23);
          if constexpr (!F) v = *reinterpret_cast<const int4*>(st + xs_off + c * KS * 4 + q * 16);
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
      __syncthreads();  // stage ks landed for every thread; stage ks - 1 is no longer read
      const int next = ks + C::ST - 1;
      if (next < nk) load(next % C::ST, next * KS);
      moe_tile::cp_commit();
      compute(ks % C::ST);
    }
    moe_tile::cp_wait<0>();
  };
  if (FOLD && folded) run(std::true_type{});
  else run(std::false_type{});
#else
  (void)wbase, (void)sbase, (void)tid, (void)lane, (void)warp, (void)g, (void)t, (void)folded;
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

// The down stage over work items taken from the queue (see the header comment). Ring of 4 items in
// shared memory: item j of this block in slot j % 4. Item j + AHEAD is taken in two halves spread over item
// j's stages, so that no warp waits for a global access: at item j's first stage lane 0 of warp 0 takes the
// queue index (atomicAdd, result not used yet); at its last stage warp 0 issues the loads of the item's
// tile (expert, the 8 pairs and their routing weights, the tile's ready count) before computing the stage
// and stores them to the ring after it (visible after the next barrier, one stage before the item's first
// copies are issued). Tiles are 8 consecutive sorted rows: row0 = 8 x tile index.
template <class C, int AHEAD = 2>
__global__ __launch_bounds__(kThreads, C::kMinBlocks) void down_dyn(MoeArgs a, Workspace ws, Sync sy) {
  static_assert(AHEAD >= 2 && AHEAD <= 3, "ring of 4 items");
#if defined(MOE_WG8_DEVICE)
  using namespace moe_wg8;
  extern __shared__ __align__(128) uint8_t smem_rows8b[];
  uint8_t* smem = smem_rows8b;
  __shared__ int4 info[4];  // (weight offset / 16, scale offset / 16, row0, H column n0)
  __shared__ int tile_s[4];  // tile index, -1: no item
  __shared__ int ready_s[4];  // the tile's ready count when the item was taken
  __shared__ int pair_s[4][8];
  __shared__ float weight_s[4][8];
  dep_release();  // combine's blocks may be scheduled; they wait for this grid's completion
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, KB = I / 32;
  const int NS = H / C::BM;
  const int need = I / 32;  // gate_up blocks of a tile
  const int n_all = __ldcg(ws.n_tiles) * NS;
  const int tid = threadIdx.x, lane = tid % kLanes, warp = tid / kLanes;
  const int t = lane % 4;
  // Warp 0's registers of the item being taken.
  int q_item = 0, q_p = -1, q_rdy = 0;
  int2 q_tv = make_int2(0, 0);
  float q_w = 0.0f;
  auto take = [&] {  // lane 0 of warp 0
    if (warp == 0 && lane == 0) q_item = atomicAdd(sy.head, 1);
  };
  auto issue_loads = [&] {  // warp 0, after take
    if (warp != 0) return;
    q_item = __shfl_sync(0xffffffffu, q_item, 0);
    if (q_item < n_all) {
      const int ti = q_item / NS;
      q_tv = __ldcg(reinterpret_cast<const int2*>(ws.tiles) + ti);  // (expert, row0)
      if (lane < 8) {
        q_p = __ldcg(ws.sorted_pair + ti * 8 + lane);
        q_w = __ldcg(sy.row_w + ti * 8 + lane);
      }
      if (lane == 0) q_rdy = ld_relaxed(sy.ready + ti);
    }
  };
  auto store = [&](int j) {  // warp 0, into ring slot j % 4
    if (warp != 0) return;
    const int r = j & 3;
    if (q_item < n_all) {
      const int ti = q_item / NS, n0 = (q_item % NS) * C::BM;
      if (lane == 0) {
        const int64_t wo = int64_t(q_tv.x) * H * (I / 2) + int64_t(n0) * (I / 2);
        const int64_t so = int64_t(q_tv.x) * H * KB + int64_t(n0) * KB;
        info[r] = make_int4(int(wo >> 4), int(so >> 4), q_tv.y, n0);
        tile_s[r] = ti;
        ready_s[r] = q_rdy;
      }
      if (lane < 8) {
        pair_s[r][lane] = q_p;
        weight_s[r][lane] = q_w;
      }
    } else if (lane == 0) {
      tile_s[r] = -1;
    }
  };
#pragma unroll
  for (int j = 0; j < AHEAD; ++j) {
    take();
    issue_loads();
    store(j);
  }
  __syncthreads();
  if (tile_s[0] < 0) return;

  const int nk = KB / C::KS;  // stages an item (the host checks (AHEAD - 1) nk >= STAGES - 1)
  const uint32_t rg_bytes = uint32_t(I / 64) * 512u;  // a 16-row group: 16 rows x I / 2 bytes
  float acc[C::MT][4];
#pragma unroll
  for (int m = 0; m < C::MT; ++m)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[m][i] = 0.0f;
  constexpr int kWChunks = C::BM * C::KS;
  constexpr int kWPer = kWChunks / kThreads;
  uint32_t woff[kWPer];
#pragma unroll
  for (int j = 0; j < kWPer; ++j) {
    const int i = tid + kThreads * j, r = i / (C::KS * 16), ch = i % (C::KS * 16);
    woff[j] = uint32_t(r) * rg_bytes + ch * 16;
  }
  constexpr int kSPer = (C::BM + kThreads - 1) / kThreads;
  uint32_t soff[kSPer];
#pragma unroll
  for (int j = 0; j < kSPer; ++j) soff[j] = uint32_t((tid + kThreads * j) % C::BM) * uint32_t(KB);
  constexpr int kXChunks = C::BN * C::KS * 2;
  const int xc = tid / (C::KS * 2), xch = tid % (C::KS * 2);
  const uint32_t xoff = uint32_t(xc) * uint32_t(KB * 32) + xch * 16;
  const int xdst = C::kX + xch * 128 + xc * 16;
  constexpr int kXsChunks = C::BN * C::KS / 4;
  const int sc_c = tid / (C::KS / 4), sc_ch = tid % (C::KS / 4);
  const uint32_t xsoff = uint32_t(sc_c) * uint32_t(KB * 4) + sc_ch * 16;
  const int xsdst = C::kXs + sc_c * C::KS * 4 + sc_ch * 16;
  const uint32_t smem_s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint8_t* wglob = a.down_weight_shuffled;
  const uint8_t* sglob = a.down_weight_scale;

  auto valid = [&](int j) { return tile_s[j & 3] >= 0; };
  auto load_w = [&](int g) {
    const int slot = g % C::STAGES, kb0 = (g % nk) * C::KS;
    const int4 it = info[(g / nk) & 3];
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
  auto wait_ready = [&](int j) {  // the item's activations are stored (every gate_up block of its tile signalled)
    if (ready_s[j & 3] >= need) return;  // seen by warp 0 before a barrier
    const int* flag = sy.ready + tile_s[j & 3];
    while (ld_relaxed(flag) < need) __nanosleep(128);
  };
  auto load_x = [&](int g) {
    const int slot = g % C::STAGES, kb0 = (g % nk) * C::KS;
    const int row0 = info[(g / nk) & 3].z;
    uint8_t* st = smem + slot * C::kStageBytes;
    if (tid < kXChunks) moe_tile::cp_async<16>(st + xdst, ws.a8 + int64_t(row0) * (KB * 32) + xoff + kb0 * 32);
    if (tid < kXsChunks) moe_tile::cp_async<16>(st + xsdst, ws.as + int64_t(row0) * (KB * 4) + xsoff + kb0 * 4);
  };
  const int a_off = C::kW + warp * C::KS * 256 + 4 * lane;
  const int ws_off = C::kWs + (warp * 16 + lane / 4) * C::KS;
  const int xs_off = C::kXs + 2 * t * C::KS * 4;
  const int r0 = warp * 16 + lane / 4, c0 = 2 * (lane % 4);
  auto epi = [&](int j) {
    const int r = j & 3, n0 = info[r].w;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int c = c0 + h, p = pair_s[r][c];
      if (p < 0) continue;
      const float wt = weight_s[r][c];
      moe_pipeline::YElem* dst = ws.y + int64_t(p) * H + n0;
#pragma unroll
      for (int m = 0; m < C::MT; ++m) {
        dst[64 * m + r0] = wt * acc[m][h];
        dst[64 * m + r0 + 8] = wt * acc[m][h + 2];
      }
    }
  };

#pragma unroll
  for (int s = 0; s < C::STAGES - 1; ++s)
    if (valid(s / nk)) load_w(s);
#pragma unroll
  for (int s = 0; s < C::STAGES - 1; ++s) {
    if (valid(s / nk)) {
      if (s % nk == 0) wait_ready(s / nk);
      load_x(s);
    }
    moe_tile::cp_commit();
  }
  for (int gs = 0;; ++gs) {
    const int j = gs / nk;
    if (!valid(j)) break;
    moe_tile::cp_wait<C::STAGES - 2>();
    proxy_fence();
    __syncthreads();
    const bool first = gs % nk == 0, last = gs % nk == nk - 1;
    if (first) take();  // item j + AHEAD's queue index
    if (last) issue_loads();
    const int next = gs + C::STAGES - 1, jn = next / nk;
    if (valid(jn)) {
      if (next % nk == 0) wait_ready(jn);
      load_w(next);
      load_x(next);
    }
    moe_tile::cp_commit();
    down_stage<C>(smem, smem_s, gs % C::STAGES, a_off, ws_off, xs_off, acc);
    if (last) {
      store(j + AHEAD);  // slot of item j + AHEAD - 4, whose epilogue ran before the last barrier
      epi(j);
#pragma unroll
      for (int m = 0; m < C::MT; ++m)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[m][i] = 0.0f;
    }
  }
  moe_tile::cp_wait<0>();
#else
  (void)a, (void)ws, (void)sy;
#if defined(__CUDA_ARCH__)
  __trap();  // built without sm_90a features: never dispatched to
#endif
#endif
}

// moe_rows8::combine with one thread per 4 consecutive outputs (16-byte loads of y; the same sum in slot
// order per output, so the same bits). H % 4 == 0. (MOE_Y_BF16: 8-byte loads of bf16 y, same grid.)
__global__ void combine4(const moe_pipeline::YElem* y, int64_t M, int H, int total_top_k, uint16_t* out) {
  moe_wg8::dep_wait();
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= M * H / 4) return;
  const int64_t token = 4 * i / H, n = 4 * i % H;
  const moe_pipeline::YElem* yt = y + token * total_top_k * H + n;
  float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  for (int j = 0; j < total_top_k; ++j) {
#if defined(MOE_Y_BF16)
    const uint2 u = __ldcs(reinterpret_cast<const uint2*>(yt + int64_t(j) * H));
    const float4 v = make_float4(numerics::bits_f32(u.x << 16), numerics::bits_f32(u.x & 0xFFFF0000u),
                                 numerics::bits_f32(u.y << 16), numerics::bits_f32(u.y & 0xFFFF0000u));
#else
    const float4 v = __ldcs(reinterpret_cast<const float4*>(yt + int64_t(j) * H));
#endif
    sum.x += v.x;
    sum.y += v.y;
    sum.z += v.z;
    sum.w += v.w;
  }
  const uint32_t lo = uint32_t(numerics::f32_to_bf16(sum.x)) | uint32_t(numerics::f32_to_bf16(sum.y)) << 16;
  const uint32_t hi = uint32_t(numerics::f32_to_bf16(sum.z)) | uint32_t(numerics::f32_to_bf16(sum.w)) << 16;
  reinterpret_cast<uint2*>(out)[i] = make_uint2(lo, hi);
}

template <class G2, int AHEAD = 2>
int dyn_slots(int sm2) {
  static const int n = [sm2] {
    int dev = 0, sms = 0, per = 0;
    moe_pipeline::check(hipGetDevice(&dev), "device");
    moe_pipeline::check(hipDeviceGetAttribute(&sms, hipDeviceAttributeMultiprocessorCount, dev), "SM count");
    moe_wg8::allow_smem(down_dyn<G2, AHEAD>, sm2);  // before the occupancy query (> 48 KB)
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, down_dyn<G2, AHEAD>, kThreads, sm2) != cudaSuccess || per < 1) {
      (void)cudaGetLastError();
      per = 1;
    }
    return sms * per;
  }();
  return n;
}

// Whether launch8b<FC, *, G2, *, *, *, AHEAD> runs this shape.
template <class FC, class G2, int AHEAD = 2>
bool supports8b(const MoeConfig& c) {
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(c, 8);
  return !(s.I % 32 || s.H % G2::BM || (s.H / 32) % FC::KS_ || (s.I / 32) % G2::KS || s.E > kPrologueThreads ||
           (AHEAD - 1) * (s.I / 32 / G2::KS) < G2::STAGES - 1 || s.H % (8 * kLanes));
}

// The chain: prologue (route + quantize + counters), gate_up_f16b (FC, MINB; dependent), down_dyn (G2;
// dependent; DOWN_PER_SM_ blocks per SM, 0: as many as fit), combine (dependent). FOLD: see
// quantize_route_b, gate_up_f16b.
template <class FC, int MINB, class G2, int DOWN_PER_SM_ = 0, bool FOLD = false, bool COMBINE4 = false, int AHEAD = 2>
void launch8b(const MoeArgs& a) {
  if (a.workspace_size < workspace8b(a.cfg)) throw std::invalid_argument("moe_mxfp4: workspace too small");
  Workspace ws;
  moe_wg8::carve(a.cfg, a.workspace, &ws, 2);
  const Sync sy = sync_of(a.cfg, a.workspace);
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(a.cfg, 8);
  if (!supports8b<FC, G2, AHEAD>(a.cfg)) throw std::invalid_argument("moe_mxfp4: shape not supported by the 8-row kernels");
  const int64_t n8 = s.M * s.H / 8;
  const unsigned qblocks = unsigned((n8 + kPrologueThreads - 1) / kPrologueThreads);
  moe_rows8::launch_ex(quantize_route_b<FOLD>, dim3(1 + qblocks), dim3(kPrologueThreads),
                       size_t(2 * s.E + kPrologueThreads) * sizeof(int), false, "quantize + route", a, ws, int(s.P),
                       int(s.E), int(s.rows_max), n8, sy.ready, int(s.tiles_max + 1), sy.unfolded, sy.row_w);
  constexpr int sm1 = FC::kPipeBytes > 8 * 68 * 4 ? FC::kPipeBytes : 8 * 68 * 4, sm2 = G2::kPipeBytes;
  moe_wg8::allow_smem(gate_up_f16b<FC, MINB, FOLD>, sm1);
  moe_rows8::launch_ex(gate_up_f16b<FC, MINB, FOLD>, dim3(unsigned(s.I / 32), unsigned(s.tiles_max)),
                       dim3(kThreads), sm1, true, "f16 gate_up", a, ws, sy);
  moe_wg8::allow_smem(down_dyn<G2, AHEAD>, sm2);
  int64_t grid = DOWN_PER_SM_ > 0 ? 0 : dyn_slots<G2, AHEAD>(sm2);
  if (DOWN_PER_SM_ > 0) {
    int dev = 0, sms = 0;
    moe_pipeline::check(hipGetDevice(&dev), "device");
    moe_pipeline::check(hipDeviceGetAttribute(&sms, hipDeviceAttributeMultiprocessorCount, dev), "SM count");
    grid = int64_t(sms) * DOWN_PER_SM_;
  }
  grid = std::min<int64_t>(grid, s.tiles_max * (s.H / G2::BM));
  moe_rows8::launch_ex(down_dyn<G2, AHEAD>, dim3(unsigned(grid)), dim3(kThreads), sm2, true, "wgmma down", a, ws, sy);
  constexpr int kCombineThreads = 256;
  const int64_t n = int64_t(a.cfg.bs) * a.cfg.d_hidden;
  if (COMBINE4 && s.H % 4 == 0)
    moe_rows8::launch_ex(combine4, dim3(unsigned((n / 4 + kCombineThreads - 1) / kCombineThreads)),
                         dim3(kCombineThreads), 0, true, "combine", static_cast<const moe_pipeline::YElem*>(ws.y),
                         int64_t(a.cfg.bs), int(a.cfg.d_hidden), int(a.cfg.total_top_k), a.out);
  else
    moe_rows8::launch_ex(moe_rows8::combine, dim3(unsigned((n / moe_pipeline::kYVec + kCombineThreads - 1) / kCombineThreads)),
                         dim3(kCombineThreads), 0, true, "combine", static_cast<const moe_pipeline::YElem*>(ws.y),
                         int64_t(a.cfg.bs), int(a.cfg.d_hidden), int(a.cfg.total_top_k), a.out);
}
#endif  // MOE_WG8_HOST

}  // namespace
}  // namespace moe_rows8b
