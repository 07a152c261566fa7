// moe_rows8b.h's 8-row chain (prologue, gate_up with per-tile ready counters, down_dyn taking work items as
// tiles finish, combine) with the gate_up on the Hopper warpgroup MMA instead of f16 mma.sync:
//  - gate_up_wg: one warpgroup a block, 64 weight rows (32 gate + 32 up, as gate_up_f16b) x the tile's 8
//    sorted rows; A = the weights decoded into e4m3 registers (moe_wg8::decode, 7 integer ops a word
//    against the f16 decode's 11; value x 2^-6), B = the activations as e4m3 in MMA-k order read by the
//    tensor unit from shared memory (the down kernel's canonical no-swizzle K-major stage layout); one
//    wgmma m64n8k32 per k-block into a fresh accumulator, G k-blocks a group, the group before the one
//    in flight scaled into acc (acc += d x 2^(sw + sx + 6) in k order, as moe_wg8::down_stage); the
//    A words read by ldmatrix.x4 (two k-blocks' fragments in one instruction); the last group of a
//    stage finished after the next stage's copy wait (CARRY), so its wgmma latency overlaps the wait;
//  - FOLD: the prologue stores a 32-block of the hidden states as e4m3 of value x 2^s when -5 <= s <= 6
//    (every value a normal e4m3) with the scale word of s = 0, flags per (token, 256 values) any block it
//    could not fold; a gate_up block whose 8 tokens are all folded runs without the activation scale
//    words (scale = 2^(sw + 6): one byte permute and one shift-add a row and k-block);
//  - everything after gate_up (down_dyn, combine) is moe_rows8b's code.
// Every per-k-block product d is exact in fp32 (as in the f16 form: <= 32 products of e2m1 values with
// one power-of-two scale), and acc += d x scale is the same fmaf sequence in the same k order, so the
// output is v19 / v20's bit for bit. NVIDIA only (MOE_WG8_HOST); the wgmma needs sm_90a (MOE_WG8_DEVICE).
#pragma once
#include <type_traits>

#include "problems/common/moe_rows8b.h"

namespace moe_rows8w {
namespace {

using moe_pipeline::Tile;
using moe_pipeline::Workspace;

#if defined(MOE_WG8_HOST)
using moe_wg8::kLanes;
using moe_wg8::kThreads;
using moe_rows8b::Sync;

// e4m3 bits of (e2m1 value of code) x 2^s, exact and normal (or zero) for -5 <= s <= 6; s = 0 gives
// mxfp4::e2m1_to_e4m3.
__device__ inline uint32_t e4m3_folded(uint32_t code, int s) {
  const uint32_t em = code & 7u;
  const uint32_t mag = (em >> 1) ? uint32_t(int(em) + 12 + 2 * s) << 2 : (em ? uint32_t(6 + s) << 3 : 0u);
  return mag | ((code & 8u) << 4);
}

constexpr int kPrologueThreads = moe_rows8b::kPrologueThreads;
// moe_rows8b::quantize_route_b's route (block 0: pair sort, tiles, counters, routing weight per sorted
// row) with the activations as e4m3 in MMA-k order (moe_wg8::position: element 8t + 2i of a 32-block at
// byte 4t + i, 8t + 2i + 1 at 16 + 4t + i), int32 scale words (s + 6) << 23 (moe_wg8::scale_word), FOLD
// as described above.
template <bool FOLD>
__global__ __launch_bounds__(kPrologueThreads) void quantize_route_w(MoeArgs a, Workspace ws, int P, int E, int rows_max,
                                                                     int64_t n8, int* sync_base, int n_sync,
                                                                     uint8_t* unfolded, float* row_w) {
  moe_wg8::dep_release();
  extern __shared__ int smem_route_w[];
  const int tid = threadIdx.x;
  if (blockIdx.x == 0) {
    constexpr int tile_rows = 8;
    int* count = smem_route_w;
    int* row_off = smem_route_w + E;
    int* scan = smem_route_w + 2 * E;
    for (int i = tid; i < n_sync; i += blockDim.x) sync_base[i] = 0;
    for (int e = tid; e < E; e += blockDim.x) count[e] = 0;
    for (int r = tid; r < rows_max; r += blockDim.x) {
      ws.sorted_pair[r] = -1;
      row_w[r] = 0.0f;
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
      count[tid] = 0;
    }
    if (tid == int(blockDim.x) - 1) *ws.n_tiles = scan[tid];
    __syncthreads();
    for (int p = tid; p < P; p += blockDim.x) {
      const int e = a.topk_ids[p];
      if (e >= 0 && e < E) {
        const int r = row_off[e] + atomicAdd(&count[e], 1);
        ws.sorted_pair[r] = p;
        row_w[r] = a.topk_weights[p];
      }
    }
    return;
  }
  const int64_t i = int64_t(blockIdx.x - 1) * blockDim.x + tid;
  float v[8];
  const int s = moe_tiled::hidden8_block_scale(a.hidden_states, i, n8, v);
  if (i >= n8) return;
  const float mul = numerics::exp2_f32(-s);
  const bool fold = FOLD && s >= -5 && s <= 6;
  // Thread q = i % 4 of its 32-block holds elements 8q .. 8q + 7: even ones to bytes 4q + j, odd ones to
  // bytes 16 + 4q + j (moe_wg8::position).
  uint32_t lo = 0, hi = 0;
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const uint32_t code = moe_wg8::e2m1_code(v[k], mul);
    const uint32_t b = fold ? e4m3_folded(code, s) : mxfp4::e2m1_to_e4m3(code);
    if (k % 2 == 0) lo |= b << (8 * (k / 2));
    else hi |= b << (8 * (k / 2));
  }
  uint8_t* blk = ws.x8 + (i / 4) * 32 + (i % 4) * 4;
  *reinterpret_cast<uint32_t*>(blk) = lo;
  *reinterpret_cast<uint32_t*>(blk + 16) = hi;
  if (i % 4 == 0) reinterpret_cast<int32_t*>(ws.xs)[i / 4] = moe_wg8::scale_word(fold ? 0 : s);
  if constexpr (FOLD) {  // n8 is a multiple of the warp's lanes (H / 8 is)
    const unsigned any = __ballot_sync(0xffffffffu, !fold);
    if (i % kLanes == 0) unfolded[i / kLanes] = any != 0u;
  }
}

#if defined(MOE_WG8_DEVICE)
__device__ inline void ldsm_x4(uint32_t addr, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
#endif

// gate_up on wgmma. C: moe_wg8::Cfg<1, KS, STAGES, G, *> (64 rows, 8 columns, KS k-blocks a stage, G
// k-blocks a wgmma group). grid (I / 32 slices, tiles_max): a tile's slices are consecutive blocks;
// each block adds 1 to ready[tile] after its requantized activations are stored (moe_rows8b's protocol).
template <class C, int MINB, bool FOLD = true, bool LDSM = true, bool CARRY = true, bool FOLD_ONLY = false>
__global__ __launch_bounds__(kThreads, MINB) void gate_up_wg(MoeArgs a, Workspace ws, Sync sy) {
  static_assert(C::MT == 1 && C::BN == 8 && C::KS == 8, "64 rows x 8 columns, 8 k-blocks a stage");
  static_assert((C::KS / C::G) % 2 == 0, "an even number of groups a stage (A / d double buffers)");
  static_assert(!LDSM || C::G % 2 == 0, "ldmatrix.x4 reads two k-blocks");
  extern __shared__ __align__(128) uint8_t smem_r8w[];
  uint8_t* smem = smem_r8w;
  __shared__ int rg[4];
  __shared__ const uint8_t* xrow[8];
  __shared__ const uint8_t* xsrow[8];
  __shared__ int token_s[8];
  moe_wg8::dep_wait();
  moe_wg8::dep_release();
  const int tile_index = int(blockIdx.y);
  if (tile_index >= *ws.n_tiles) return;
  const Tile tile = ws.tiles[tile_index];
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, T = a.cfg.total_top_k, KB = H / 32;
  constexpr int kHalf = 32, KS = C::KS, G = C::G, NG = KS / G;
  const int n0 = blockIdx.x * kHalf;
  if (threadIdx.x < 4) {
    const int i = threadIdx.x;
    rg[i] = (i < 2 ? n0 : I + n0 - kHalf) / 16 + i;
  }
  if (threadIdx.x < 8) {
    const int c = threadIdx.x;
    const int p = ws.sorted_pair[tile.row0 + c];
    const int64_t token = p >= 0 ? p / T : 0;  // padding rows borrow token 0; never written back
    xrow[c] = ws.x8 + token * H;
    xsrow[c] = ws.xs + token * KB * 4;
    token_s[c] = int(token);
  }
  __syncthreads();
  bool folded = false;
  if constexpr (FOLD) {
    const int fpt = H / (8 * kLanes);  // flag bytes a token
    int unf = 0;
    for (int i = threadIdx.x; i < 8 * fpt; i += kThreads) unf |= sy.unfolded[int64_t(token_s[i / fpt]) * fpt + i % fpt];
    folded = __syncthreads_or(unf) == 0;
  }
  const uint8_t* wbase = a.gate_up_weight_shuffled + int64_t(tile.expert) * 2 * I * (H / 2);
  const uint8_t* sbase = a.gate_up_weight_scale + int64_t(tile.expert) * 2 * I * KB;
  const int tid = threadIdx.x, lane = tid % kLanes, warp = tid / kLanes, g = lane / 4, t = lane % 4;
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#if defined(MOE_WG8_DEVICE)
  using namespace moe_wg8;
  const int nk = KB / KS;
  const uint32_t rg_bytes = uint32_t(H / 64) * 512u;  // a 16-row group: 16 rows x H / 2 bytes
  // Copy plan: all of stage s is copied by warp s % 4 (kWarps), so that the warp's proxy fence after its
  // copy wait (the stage's activations are read by wgmma, the async proxy) waits for that stage only: a
  // fence waits for every copy its thread has in flight, and with every thread copying a share of every
  // stage it waited for all the stages ahead (measured: the pipeline collapsed to one stage of look-ahead,
  // gate_up 2.3x slower). A lane copies 16 weight chunks (group r: chunks 32 q + lane), 2 scale rows (lane,
  // lane + 32), 4 activation chunks (chunk lane + 32 q: row lane / 16 + 2 q, 16-byte chunk lane % 16).
  constexpr int kWarps = kThreads / kLanes;
  uint32_t woff[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) woff[j] = uint32_t(rg[j]) * rg_bytes + lane * 16;
  uint32_t soff[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) soff[h] = (uint32_t(rg[(lane + 32 * h) / 16]) * 16 + lane % 16) * uint32_t(KB);
  const uint32_t smem_s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const int a_off = C::kW + warp * KS * 256 + 4 * lane;
  // ldmatrix.x4 row addresses: lane i gives row i % 8 of matrix i / 8 = (k-block + i / 16, half (i / 8) % 2).
  const uint32_t a_ldsm = uint32_t(C::kW + warp * KS * 256 + (lane / 16) * 256 + ((lane / 8) % 2) * 128 + (lane % 8) * 16);
  const int ws_off = C::kWs + (warp * 16 + g) * KS;
  const int xs_off = C::kXs + 2 * t * KS * 4;

  auto run = [&](auto fold_tag) {
    constexpr bool F = decltype(fold_tag)::value;
    auto load = [&](int slot, int kb0) {  // the owner warp's 32 lanes
      uint8_t* st = smem + slot * C::kStageBytes;
      const uint8_t* wb = wbase + kb0 * 256;
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q)
          moe_tile::cp_async<16>(st + C::kW + j * KS * 256 + q * 512 + lane * 16, wb + woff[j] + q * 512);
#pragma unroll
      for (int h = 0; h < 2; ++h) moe_tile::cp_async<KS>(st + C::kWs + (lane + 32 * h) * KS, sbase + soff[h] + kb0);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int c = lane / 16 + 2 * q, xch = lane % 16;
        moe_tile::cp_async<16>(st + C::kX + xch * 128 + c * 16, xrow[c] + kb0 * 32 + xch * 16);
      }
      if (!F && lane < 16)
        moe_tile::cp_async<16>(st + C::kXs + (lane / 2) * KS * 4 + (lane % 2) * 16, xsrow[lane / 2] + kb0 * 4 + (lane % 2) * 16);
    };
    uint32_t av[2][G][4];
    float d[2][G][4];
    float pend[G][4];  // scales of the group carried into the next iteration
    auto issue = [&](const uint8_t* st, uint32_t st_s, uint64_t desc0, int grp) {
      const int b = grp & 1;
      if constexpr (LDSM) {
#pragma unroll
        for (int uu = 0; uu < G; uu += 2) {
          const int u = grp * G + uu;
          uint32_t r[4];
          ldsm_x4(st_s + a_ldsm + uint32_t(u * 256), r);
          decode(r[0], av[b][uu][0], av[b][uu][2]);
          decode(r[1], av[b][uu][1], av[b][uu][3]);
          decode(r[2], av[b][uu + 1][0], av[b][uu + 1][2]);
          decode(r[3], av[b][uu + 1][1], av[b][uu + 1][3]);
        }
      } else {
#pragma unroll
        for (int uu = 0; uu < G; ++uu) {
          const uint8_t* p = st + a_off + (grp * G + uu) * 256;
          decode(*reinterpret_cast<const uint32_t*>(p), av[b][uu][0], av[b][uu][2]);
          decode(*reinterpret_cast<const uint32_t*>(p + 128), av[b][uu][1], av[b][uu][3]);
        }
      }
      wg_fence();
#pragma unroll
      for (int uu = 0; uu < G; ++uu) wg_mma(d[b][uu], av[b][uu], desc0 + uint64_t((grp * G + uu) * 16));
      wg_commit();
    };
    auto finish = [&](int b, const float (&sc)[G][4]) {
#pragma unroll
      for (int uu = 0; uu < G; ++uu) {
#pragma unroll
        for (int i = 0; i < 4; ++i) reg_fence(d[b][uu][i]);
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[i] = fmaf(d[b][uu][i], sc[uu][i], acc[i]);
      }
    };
    // Scales of group grp: [uu][2 r + c] for rows g + 8 r, columns 2 t + c. Unfolded: the activation scale
    // words are read from the stage here (a rare path: kept out of registers).
    auto scales = [&](const uint8_t* st, int grp, const uint32_t (&wsw)[2][2], float (&sc)[G][4]) {
#pragma unroll
      for (int uu = 0; uu < G; ++uu) {
        const int u = grp * G + uu;
        int32_t xw[2] = {scale_word(0), scale_word(0)};
        if constexpr (!F) {
#pragma unroll
          for (int c = 0; c < 2; ++c) xw[c] = *reinterpret_cast<const int32_t*>(st + xs_off + c * KS * 4 + u * 4);
        }
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const uint32_t bw = __byte_perm(wsw[r][u / 4], 0u, 0x4440u + (u % 4));
#pragma unroll
          for (int c = 0; c < 2; ++c) sc[uu][2 * r + c] = __int_as_float(int32_t(bw << 23) + xw[c]);
        }
      }
    };
    auto compute = [&](int slot) {
      const uint8_t* st = smem + slot * C::kStageBytes;
      const uint32_t st_s = smem_s + uint32_t(slot * C::kStageBytes);
      const uint64_t desc0 = smem_desc(st_s + C::kX);
      const uint2 wg0 = *reinterpret_cast<const uint2*>(st + ws_off);
      const uint2 wg8 = *reinterpret_cast<const uint2*>(st + ws_off + 8 * KS);
      const uint32_t wsw[2][2] = {{wg0.x, wg0.y}, {wg8.x, wg8.y}};
#pragma unroll
      for (int grp = 0; grp < NG; ++grp) {
        issue(st, st_s, desc0, grp);
        if (grp > 0) {
          wg_wait<1>();
          float sc[G][4];
          scales(st, grp - 1, wsw, sc);
          finish((grp - 1) & 1, sc);
        }
      }
      scales(st, NG - 1, wsw, pend);
      if constexpr (!(CARRY && F)) {
        wg_wait<0>();
        finish((NG - 1) & 1, pend);
      }
    };
    static_assert(C::STAGES <= kWarps + 1, "a warp has one stage in flight when it waits");
#pragma unroll
    for (int s = 0; s < C::STAGES - 1; ++s)
      if (s < nk && warp == s % kWarps) {
        load(s, s * KS);
        moe_tile::cp_commit();
      }
    for (int ks = 0; ks < nk; ++ks) {
      if (warp == ks % kWarps) {  // stage ks is this warp's only copy group in flight
        moe_tile::cp_wait<0>();
        proxy_fence();  // the landed copies -> visible to wgmma's shared-memory reads
      }
      if constexpr (CARRY && F) {
        if (ks > 0) {  // the previous stage's last group: its wgmma ran during the copy wait
          wg_wait<0>();
          finish((NG - 1) & 1, pend);
        }
      }
      __syncthreads();  // stage ks landed for every thread; stage ks - 1 is no longer read
      const int next = ks + C::STAGES - 1;
      if (next < nk && warp == next % kWarps) {
        load(next % C::STAGES, next * KS);
        moe_tile::cp_commit();
      }
      compute(ks % C::STAGES);
    }
    if constexpr (CARRY && F) {
      wg_wait<0>();
      finish((NG - 1) & 1, pend);
    }
    moe_tile::cp_wait<0>();
  };
  if (FOLD_ONLY || (FOLD && folded)) run(std::true_type{});
  else run(std::false_type{});
#else
  (void)wbase, (void)sbase, (void)tid, (void)lane, (void)warp, (void)folded;
#if defined(__CUDA_ARCH__)
  __trap();  // built without sm_90a features: never dispatched to
#endif
#endif
  __syncthreads();  // the pipeline buffers become the fp32 tile [8][64 + 4]
  constexpr int kStride = 64 + 4;
  float* tile_f = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int i = 0; i < 4; ++i) tile_f[(2 * t + (i & 1)) * kStride + warp * 16 + g + 8 * (i >> 1)] = acc[i];
  __syncthreads();
  moe_wg8::swiglu_requant<8, kHalf, kThreads>(tile_f, kStride, tile, n0, I, ws);
  __threadfence();  // this thread's a8 / as stores, before the block's signal
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(sy.ready + tile_index, 1);
}

// moe_rows8b::down_dyn with the copy plan of gate_up_wg: stage g copied by warp g % 4 alone, so that the
// owner's proxy fence (the activations are read by wgmma) waits for that stage only, not for the stages
// ahead; only the owner warp waits for the item's ready count. Everything else (work queue, item ring, stage
// compute, epilogue) is down_dyn's.
template <class C, int AHEAD = 2>
__global__ __launch_bounds__(kThreads, C::kMinBlocks) void down_rot(MoeArgs a, Workspace ws, Sync sy) {
  static_assert(AHEAD >= 2 && AHEAD <= 3, "ring of 4 items");
#if defined(MOE_WG8_DEVICE)
  using namespace moe_wg8;
  using moe_rows8b::ld_relaxed;
  extern __shared__ __align__(128) uint8_t smem_rot[];
  uint8_t* smem = smem_rot;
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
  // Copy plan: all of stage g is copied by warp g % kWarps (see gate_up_wg: a proxy fence waits for every
  // copy its thread has in flight). Weights: chunk 32 j + lane of the stage (16-row group j / 2, chunk
  // 32 (j % 2) + lane of the group's KS x 256 bytes); scales: rows lane + 32 j; activations: chunk lane + 32 q
  // (row (lane + 32 q) / (2 KS), 16-byte chunk (lane + 32 q) % (2 KS)); activation scale words: lanes < 8 KS / 4.
  constexpr int kWarps = kThreads / kLanes;
  static_assert(C::STAGES <= kWarps + 1, "a warp has one stage in flight when it waits");
  constexpr int kWPer = C::BM * C::KS / kLanes;
  static_assert(C::KS * 16 == 2 * kLanes, "two lane rows of chunks a 16-row group");
  constexpr int kSPer = C::BM / kLanes;
  constexpr int kXPer = C::BN * C::KS * 2 / kLanes;
  static_assert(C::BN * C::KS * 2 % kLanes == 0, "activation chunks");
  constexpr int kXsChunks = C::BN * C::KS / 4;
  const uint32_t smem_s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint8_t* wglob = a.down_weight_shuffled;
  const uint8_t* sglob = a.down_weight_scale;

  auto valid = [&](int j) { return tile_s[j & 3] >= 0; };
  auto load_w = [&](int g) {  // the owner warp
    const int slot = g % C::STAGES, kb0 = (g % nk) * C::KS;
    const int4 it = info[(g / nk) & 3];
    uint8_t* st = smem + slot * C::kStageBytes;
    const uint8_t* wb = wglob + (int64_t(uint32_t(it.x)) << 4) + kb0 * 256 + lane * 16;
#pragma unroll
    for (int j = 0; j < kWPer; ++j)
      moe_tile::cp_async<16>(st + C::kW + j * 512 + lane * 16, wb + (j / 2) * rg_bytes + (j % 2) * 512);
    const uint8_t* sb = sglob + (int64_t(uint32_t(it.y)) << 4) + kb0 + lane * KB;
#pragma unroll
    for (int j = 0; j < kSPer; ++j) moe_tile::cp_async<C::KS>(st + C::kWs + (lane + kLanes * j) * C::KS, sb + j * kLanes * KB);
  };
  auto wait_ready = [&](int j) {  // the item's activations are stored (every gate_up block of its tile signalled)
    if (ready_s[j & 3] >= need) return;  // seen by warp 0 before a barrier
    const int* flag = sy.ready + tile_s[j & 3];
    while (ld_relaxed(flag) < need) __nanosleep(128);
  };
  auto load_x = [&](int g) {  // the owner warp
    const int slot = g % C::STAGES, kb0 = (g % nk) * C::KS;
    const int row0 = info[(g / nk) & 3].z;
    uint8_t* st = smem + slot * C::kStageBytes;
#pragma unroll
    for (int q = 0; q < kXPer; ++q) {
      const int i = lane + kLanes * q, xc = i / (C::KS * 2), xch = i % (C::KS * 2);
      moe_tile::cp_async<16>(st + C::kX + xch * 128 + xc * 16, ws.a8 + int64_t(row0 + xc) * (KB * 32) + kb0 * 32 + xch * 16);
    }
    if (lane < kXsChunks) {
      const int sc_c = lane / (C::KS / 4), sc_ch = lane % (C::KS / 4);
      moe_tile::cp_async<16>(st + C::kXs + sc_c * C::KS * 4 + sc_ch * 16,
                             ws.as + int64_t(row0 + sc_c) * (KB * 4) + kb0 * 4 + sc_ch * 16);
    }
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
      float* dst = ws.y + int64_t(p) * H + n0;
#pragma unroll
      for (int m = 0; m < C::MT; ++m) {
        dst[64 * m + r0] = wt * acc[m][h];
        dst[64 * m + r0 + 8] = wt * acc[m][h + 2];
      }
    }
  };

  // Weights of the first stages before the ready waits (as down_dyn), each by its owner warp.
#pragma unroll
  for (int s = 0; s < C::STAGES - 1; ++s)
    if (warp == s % kWarps && valid(s / nk)) load_w(s);
#pragma unroll
  for (int s = 0; s < C::STAGES - 1; ++s)
    if (warp == s % kWarps) {
      if (valid(s / nk)) {
        wait_ready(s / nk);  // every owner warp of the item's stages (not only the first stage's)
        load_x(s);
      }
      moe_tile::cp_commit();
    }
  for (int gs = 0;; ++gs) {
    const int j = gs / nk;
    if (!valid(j)) break;
    if (warp == gs % kWarps) {  // stage gs is this warp's only copy group in flight
      moe_tile::cp_wait<0>();
      proxy_fence();
    }
    __syncthreads();
    const bool first = gs % nk == 0, last = gs % nk == nk - 1;
    if (first) take();  // item j + AHEAD's queue index
    if (last) issue_loads();
    const int next = gs + C::STAGES - 1, jn = next / nk;
    if (warp == next % kWarps) {
      if (valid(jn)) {
        wait_ready(jn);  // this warp may not have seen the item's count yet (call 2's race: only the first stage's owner waited)
        load_w(next);
        load_x(next);
      }
      moe_tile::cp_commit();
    }
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

template <class G2, int AHEAD = 2>
int rot_slots(int sm2) {
  static const int n = [sm2] {
    int dev = 0, sms = 0, per = 0;
    moe_pipeline::check(hipGetDevice(&dev), "device");
    moe_pipeline::check(hipDeviceGetAttribute(&sms, hipDeviceAttributeMultiprocessorCount, dev), "SM count");
    moe_wg8::allow_smem(down_rot<G2, AHEAD>, sm2);  // before the occupancy query (> 48 KB)
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, down_rot<G2, AHEAD>, kThreads, sm2) != cudaSuccess || per < 1) {
      (void)cudaGetLastError();
      per = 1;
    }
    return sms * per;
  }();
  return n;
}

// Whether launch8w<GC, *, G2> runs this shape.
template <class GC, class G2, int AHEAD = 2>
bool supports8w(const MoeConfig& c) {
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(c, 8);
  return !(s.I % 32 || s.H % G2::BM || (s.H / 32) % GC::KS || (s.I / 32) % G2::KS || s.E > kPrologueThreads ||
           (AHEAD - 1) * (s.I / 32 / G2::KS) < G2::STAGES - 1 || s.H % (8 * kLanes));
}

// The workspace: moe_rows8b's (x8 sized for f16; this chain uses its first byte per value).
inline size_t workspace8w(const MoeConfig& c) { return moe_rows8b::workspace8b(c); }

// The chain: prologue (route + e4m3 quantize + counters), gate_up_wg (GC, MINB; dependent), moe_rows8b::
// down_dyn or (DROT) down_rot (G2; dependent; as many blocks as fit), moe_rows8::combine (dependent).
template <class GC, int MINB, class G2, bool FOLD = true, bool LDSM = true, bool CARRY = true, bool DROT = true>
void launch8w(const MoeArgs& a) {
  constexpr int AHEAD = 2;
  if (a.workspace_size < workspace8w(a.cfg)) throw std::invalid_argument("moe_mxfp4: workspace too small");
  Workspace ws;
  moe_wg8::carve(a.cfg, a.workspace, &ws, 2);
  const Sync sy = moe_rows8b::sync_of(a.cfg, a.workspace);
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(a.cfg, 8);
  if (!supports8w<GC, G2, AHEAD>(a.cfg)) throw std::invalid_argument("moe_mxfp4: shape not supported by the 8-row kernels");
  const int64_t n8 = s.M * s.H / 8;
  const unsigned qblocks = unsigned((n8 + kPrologueThreads - 1) / kPrologueThreads);
  moe_rows8::launch_ex(quantize_route_w<FOLD>, dim3(1 + qblocks), dim3(kPrologueThreads),
                       size_t(2 * s.E + kPrologueThreads) * sizeof(int), false, "quantize + route", a, ws, int(s.P),
                       int(s.E), int(s.rows_max), n8, sy.ready, int(s.tiles_max + 1), sy.unfolded, sy.row_w);
  constexpr int sm1 = GC::kPipeBytes > 8 * 68 * 4 ? GC::kPipeBytes : 8 * 68 * 4, sm2 = G2::kPipeBytes;
  moe_wg8::allow_smem(gate_up_wg<GC, MINB, FOLD, LDSM, CARRY>, sm1);
  moe_rows8::launch_ex(gate_up_wg<GC, MINB, FOLD, LDSM, CARRY>, dim3(unsigned(s.I / 32), unsigned(s.tiles_max)),
                       dim3(kThreads), sm1, true, "wgmma gate_up", a, ws, sy);
  if constexpr (DROT) {
    moe_wg8::allow_smem(down_rot<G2, AHEAD>, sm2);
    int64_t grid = rot_slots<G2, AHEAD>(sm2);
    grid = std::min<int64_t>(grid, s.tiles_max * (s.H / G2::BM));
    moe_rows8::launch_ex(down_rot<G2, AHEAD>, dim3(unsigned(grid)), dim3(kThreads), sm2, true, "wgmma down", a, ws, sy);
  } else {
    moe_wg8::allow_smem(moe_rows8b::down_dyn<G2, AHEAD>, sm2);
    int64_t grid = moe_rows8b::dyn_slots<G2, AHEAD>(sm2);
    grid = std::min<int64_t>(grid, s.tiles_max * (s.H / G2::BM));
    moe_rows8::launch_ex(moe_rows8b::down_dyn<G2, AHEAD>, dim3(unsigned(grid)), dim3(kThreads), sm2, true, "wgmma down", a,
                         ws, sy);
  }
  constexpr int kCombineThreads = 256;
  const int64_t n = int64_t(a.cfg.bs) * a.cfg.d_hidden;
  moe_rows8::launch_ex(moe_rows8::combine, dim3(unsigned((n + kCombineThreads - 1) / kCombineThreads)),
                       dim3(kCombineThreads), 0, true, "combine", static_cast<const float*>(ws.y), int64_t(a.cfg.bs),
                       int(a.cfg.d_hidden), int(a.cfg.total_top_k), a.out);
}
#endif  // MOE_WG8_HOST

}  // namespace
}  // namespace moe_rows8w
