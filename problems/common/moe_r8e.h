// moe_r8d.h's 8-row chain (helper moe-r8e, session 10; docs/perf-moe-r8e.md) with options measured on E257 bs16 / bs128
// and E33 bs16 (H200, benchmark mode): none beats v38 beyond noise.
//  - TB2 (on in v40 / v40b): the gate_up grid's tile bound from the routing structure: the shared experts hold exactly bs
//    pairs each (ceil(bs / 8) tiles each), the routed pairs at most (bs k + 7 min(E_routed, bs k)) / 8 tiles (E257 bs16:
//    130 rows instead of moe_r8d's 144). The down never takes a tile past the bound (no wait on a tile without gate_up
//    blocks; inputs that break the bound would give wrong outputs, not a hang). Measured -0.6..0.0 us (noise).
//  - MAXREG (160 in v40, 0 = launch bounds' 168 in v40b): the down at __maxnreg__(160), so that two down blocks fit an
//    SM's registers next to two gate_up blocks in gate_up's last wave (ptxas: 16 B of spills). Measured 0 / +1.4 us.
//  - FC (off; measured +24 / +59 / +20 us): the combine inside the down: per-(token, 256-column slice) counters zeroed
//    by the prologue's quantize threads; after an item's y stores (ordered by the next stage's barrier) the last warp
//    adds 1 to the counter of each of the item's pairs; the add that completes a count sums that slice over the
//    token's slots in slot order from 0.0f (y read back through L2: moe_pipeline::combine_rows' bits) and writes out.
//    Every gpu-scope release in the loop (fence.sc, or a release atom = MEMBAR.ALL.GPU + ERRBAR) waits with the
//    pipeline's copies in flight: ~3.7 us an item. REL (release atoms, on by default under FC) and SPLIT (the sums
//    one stage after the counts) change nothing.
//  - TC (off; measured +6 / +16 / +5 us): the combine at the down's end: each block without more items counts itself
//    done on a grid counter, waits for the whole grid (all resident) and the grid sums out (combine8, slot order).
//  - BULK (off; measured +5 / +14 / +4 us): the down's weight copies as cp.async.bulk on one mbarrier a stage slot.
//  - G2 / AHEAD: the down's configuration (Cfg<2, 8, 3, 1, 3> and Cfg<4, 8, 3, 1, 2> with AHEAD 3, whole-K contiguous
//    16 / 32 KB stages: measured +5 / +4 us at bs16); default v15's Cfg<4, 4, 3, 1, 3>, AHEAD 2.
// gate_up is moe_r8d::gate_up_r8d (LR on, PF off) unchanged; the down's mainloop and epilogue are
// moe_rows8b::down_dyn's (down_body). Output bit for bit v38's on the 8-row shapes.
// NVIDIA only (MOE_WG8_HOST).
#pragma once
#include <type_traits>

#include "problems/common/moe_r8d.h"

namespace moe_r8e {
namespace {

#if defined(MOE_WG8_HOST)
using moe_pipeline::Tile;
using moe_pipeline::Workspace;
using moe_rows8b::Sync;
using moe_wg8::kLanes;
using moe_wg8::kThreads;

constexpr int kPrologueThreads = moe_rows8b::kPrologueThreads;

// Counters after moe_rows8x::workspace8x: [M][H / BM] ints.
inline size_t counter_bytes(const MoeConfig& c, int bm) {
  return moe_pipeline::align256(size_t(c.bs) * size_t(c.d_hidden / bm) * sizeof(int));
}
inline int* counters(const MoeConfig& c, void* base) {
  return reinterpret_cast<int*>(static_cast<char*>(base) + moe_rows8x::workspace8x(c));
}

// moe_rows8x::quantize_route_x<true, true> (FOLD, 1-byte activations), plus: quantize thread i < n_cnt zeroes cnt[i].
__global__ __launch_bounds__(kPrologueThreads) void quantize_route_e(MoeArgs a, Workspace ws, int P, int E, int rows_max,
                                                                     int64_t n8, int* sync_base, int n_sync, float* row_w,
                                                                     int* flag, uint8_t* unfolded, int* cnt, int n_cnt) {
  using moe_rows8x::kFoldR;
  extern __shared__ int smem_route_e[];
  const int tid = threadIdx.x;
  if (blockIdx.x == 0) {
    if (tid == 0) {
      *flag = 0;
      __threadfence();
    }
    __syncthreads();
    moe_wg8::dep_release();
    constexpr int tile_rows = 8;
    for (int i = tid; i < n_sync; i += blockDim.x) sync_base[i] = 0;
    moe_tiled::route_block(a, ws, P, E, tile_rows, rows_max, tid, smem_route_e, [&](int r) { row_w[r] = 0.0f; },
                           [&](int r, int p) { row_w[r] = a.topk_weights[p]; });
    __threadfence();
    __syncthreads();
    if (tid == 0) atomicExch(flag, 1);
    return;
  }
  moe_wg8::dep_release();
  const int64_t i = int64_t(blockIdx.x - 1) * blockDim.x + tid;
  if (i < n_cnt) cnt[i] = 0;  // read by the down only (it starts after this grid completes)
  float v[8];
  const int s = moe_tiled::hidden8_block_scale(a.hidden_states, i, n8, v);
  if (i >= n8) return;
  const float mul = numerics::exp2_f32(-s);
  const bool fold = s >= kFoldR && s <= kFoldR + 3;
  const int sh = fold ? s - kFoldR : 0;
  uint32_t pos[2] = {0u, 0u};
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const int32_t q = moe_rows8x::code_i8(moe_wg8::e2m1_code(v[k], mul)) * (1 << sh);
    pos[k / 4] |= (uint32_t(q) & 0xffu) << (8 * (k % 4));
  }
  reinterpret_cast<uint2*>(ws.x8)[i] = make_uint2(pos[0], pos[1]);
  if (i % 4 == 0) reinterpret_cast<int32_t*>(ws.xs)[i / 4] = int32_t(uint32_t((fold ? kFoldR : s) - 2) << 23);
  {  // n8 is a multiple of the warp's lanes (H / 8 is)
    const unsigned any = __ballot_sync(0xffffffffu, !fold);
    if (i % kLanes == 0) unfolded[i / kLanes] = any != 0u;
  }
}

// out[token][n, n + 8) = bf16(sum over the token's slots j of y[token T + j][n, n + 8), in slot order from 0.0f):
// moe_pipeline::combine_rows' sums for one thread's 8 consecutive outputs (y read through L2).
__device__ __forceinline__ void combine8(const moe_pipeline::YElem* y, int64_t token, int n, int H, int T, uint16_t* out) {
  constexpr int kMaxT = 12;
  const moe_pipeline::YElem* yt = y + token * T * H + n;
  float s[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) s[e] = 0.0f;
#if defined(MOE_Y_BF16)
  uint4 v[kMaxT];
#pragma unroll
  for (int j = 0; j < kMaxT; ++j)
    if (j < T) v[j] = __ldcg(reinterpret_cast<const uint4*>(yt + int64_t(j) * H));
#pragma unroll
  for (int j = 0; j < kMaxT; ++j)
    if (j < T) moe_pipeline::add_bf16x8(s, v[j]);
  for (int j = kMaxT; j < T; ++j) moe_pipeline::add_bf16x8(s, __ldcg(reinterpret_cast<const uint4*>(yt + int64_t(j) * H)));
  *reinterpret_cast<uint4*>(out + token * H + n) = moe_pipeline::bf16x8_of(s);
#else
  float4 v[kMaxT][2];
#pragma unroll
  for (int j = 0; j < kMaxT; ++j)
    if (j < T) {
      v[j][0] = __ldcg(reinterpret_cast<const float4*>(yt + int64_t(j) * H));
      v[j][1] = __ldcg(reinterpret_cast<const float4*>(yt + int64_t(j) * H + 4));
    }
  auto add = [&](const float4& a0, const float4& a1) {
    s[0] += a0.x, s[1] += a0.y, s[2] += a0.z, s[3] += a0.w;
    s[4] += a1.x, s[5] += a1.y, s[6] += a1.z, s[7] += a1.w;
  };
#pragma unroll
  for (int j = 0; j < kMaxT; ++j)
    if (j < T) add(v[j][0], v[j][1]);
  for (int j = kMaxT; j < T; ++j)
    add(__ldcg(reinterpret_cast<const float4*>(yt + int64_t(j) * H)),
        __ldcg(reinterpret_cast<const float4*>(yt + int64_t(j) * H + 4)));
  uint32_t o[4];
#pragma unroll
  for (int e = 0; e < 4; ++e)
    o[e] = uint32_t(numerics::f32_to_bf16(s[2 * e])) | (uint32_t(numerics::f32_to_bf16(s[2 * e + 1])) << 16);
  *reinterpret_cast<uint4*>(out + token * H + n) = make_uint4(o[0], o[1], o[2], o[3]);
#endif
}

// One warp: out[token][n0, n0 + bm) with combine8 (8 consecutive outputs a lane).
__device__ __forceinline__ void combine_slice(const moe_pipeline::YElem* y, int64_t token, int n0, int bm, int H, int T,
                                              uint16_t* out, int lane) {
  for (int n = n0 + 8 * lane; n < n0 + bm; n += 8 * kLanes) combine8(y, token, n, H, T, out);
}

// REL: the counts as release adds and the completing warp's acquire as fence.acq_rel (instead of fence.sc = __threadfence
// around relaxed adds).
__device__ __forceinline__ int atom_add_release(int* p) {
  int old = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  asm volatile("atom.add.release.gpu.global.s32 %0, [%1], 1;\n" : "=r"(old) : "l"(p) : "memory");
#else
  old = atomicAdd(p, 1);
#endif
  return old;
}
__device__ __forceinline__ void fence_acq_rel_gpu() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
#else
  __threadfence();
#endif
}

// BULK: the down's weight copies as cp.async.bulk (one 16-row group's KS k-blocks, contiguous, a copy) on one mbarrier
// a stage slot, issued by warp 0's first BM / 16 lanes; scales and activations stay on cp.async.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ void mbar_init_e(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx_e(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bulk_copy_e(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}
__device__ __forceinline__ void mbar_wait_e(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred P1;\n"
      "LAB_WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
      "@P1 bra DONE;\n"
      "bra LAB_WAIT;\n"
      "DONE:\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
#endif

// moe_rows8b::down_dyn<C, AHEAD> with FC (see the header comment): item j's pairs are counted at item j + 1's first
// stage (after its barrier) by the last warp, or after the loop for the block's last item. tiles_cap: the gate_up
// grid's tile rows (items of tiles past it are not taken).
template <class C, int AHEAD, bool FC, bool SPLIT, bool REL, bool BULK, bool TC>
__device__ __forceinline__ void down_body(MoeArgs a, Workspace ws, Sync sy, int* cnt, int tiles_cap) {
  static_assert(AHEAD >= 2 && AHEAD <= 3, "ring of 4 items");
  static_assert(!SPLIT || AHEAD == 2, "SPLIT reads item j - 1's ring slot at item j's second stage");
  static_assert(!(FC && TC), "one combine form");
#if defined(MOE_WG8_DEVICE)
  using namespace moe_wg8;
  using moe_rows8b::ld_relaxed;
  extern __shared__ __align__(128) uint8_t smem_r8e[];
  uint8_t* smem = smem_r8e;
  __shared__ int4 info[4];  // (weight offset / 16, scale offset / 16, row0, H column n0)
  __shared__ int tile_s[4];  // tile index, -1: no item
  __shared__ int ready_s[4];  // the tile's ready count when the item was taken
  __shared__ int pair_s[4][8];
  __shared__ float weight_s[4][8];
  __shared__ __align__(8) uint64_t wbar[C::STAGES];  // BULK: the stage slots' weight barriers
  static_assert(!BULK || C::BM / 16 <= kLanes, "BULK: one lane of warp 0 a 16-row group");
  if (BULK && threadIdx.x == 0) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    for (int i = 0; i < C::STAGES; ++i) mbar_init_e(static_cast<uint32_t>(__cvta_generic_to_shared(wbar + i)), 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
  }
  if (!FC) dep_release();  // combine's blocks may be scheduled; they wait for this grid's completion
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, KB = I / 32, T = a.cfg.total_top_k;
  const int NS = H / C::BM;
  const int need = I / 32;  // gate_up blocks of a tile
  const int n_all = min(__ldcg(ws.n_tiles), tiles_cap) * NS;
  const int tid = threadIdx.x, lane = tid % kLanes, warp = tid / kLanes;
  const int t = lane % 4;
  constexpr int kSigWarp = kThreads / kLanes - 1;  // the last warp counts the pairs (warp 0 takes items)
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
  // FC: count item jj's pairs (its y stores are ordered before this by a block barrier; count), then sum the
  // completed slices (finish; SPLIT: one stage later, so that the atomics' round trip overlaps a stage).
  int sig_old = 0, sig_p = -1;
  auto count = [&](int jj) {
    if (!FC || warp != kSigWarp) return;
    const int r = jj & 3, n0 = info[r].w;
    sig_p = lane < 8 ? pair_s[r][lane] : -1;
    if constexpr (REL) {  // release adds: the block's y stores of item jj (after the barrier) before the counts
      sig_old = sig_p >= 0 ? atom_add_release(cnt + (sig_p / T) * NS + n0 / C::BM) : 0;
    } else {
      __threadfence();  // (fence.sc: measured far slower, docs/perf-moe-r8e.md call 1)
      sig_old = sig_p >= 0 ? atomicAdd(cnt + (sig_p / T) * NS + n0 / C::BM, 1) : 0;
    }
  };
  auto finish = [&](int jj) {
    if (!FC || warp != kSigWarp) return;
    unsigned m = __ballot_sync(0xffffffffu, sig_p >= 0 && sig_old == T - 1);
    if (m == 0u) return;
    const int n0 = info[jj & 3].w;
    if constexpr (REL) fence_acq_rel_gpu();  // the other blocks' counted y stores before the reads below
    else __threadfence();
    while (m) {
      const int c = __ffs(m) - 1;
      m &= m - 1u;
      const int pc = __shfl_sync(0xffffffffu, sig_p, c);
      combine_slice(ws.y, pc / T, n0, C::BM, H, T, a.out, lane);
    }
  };
#pragma unroll
  for (int j = 0; j < AHEAD; ++j) {
    take();
    issue_loads();
    store(j);
  }
  __syncthreads();
  // TC: once the block has no more items, count it done (one fence, no copies in flight), wait for every block of the
  // grid (all resident: the grid is the occupancy-limited slot count), then sum the outputs over the whole grid as
  // moe_pipeline::combine_rows does (8 consecutive outputs a thread, slot order from 0.0f: its bits).
  auto tail = [&] {
    if constexpr (TC) {
      __syncthreads();  // every thread's y stores of this block's items
      if (tid == 0) {
        __threadfence();
        atomicAdd(cnt, 1);
        while (moe_rows8w::ld_acquire(cnt) < int(gridDim.x)) __nanosleep(256);
      }
      __syncthreads();
      const int64_t n8 = int64_t(a.cfg.bs) * H / 8;
      for (int64_t i = int64_t(blockIdx.x) * kThreads + tid; i < n8; i += int64_t(gridDim.x) * kThreads)
        combine8(ws.y, 8 * i / H, int(8 * i % H), H, T, a.out);
    }
  };
  if (tile_s[0] < 0) {
    tail();
    return;
  }

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
    if constexpr (BULK) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      if (warp == 0) {
        const uint32_t bar = static_cast<uint32_t>(__cvta_generic_to_shared(wbar + slot));
        if (lane == 0) mbar_expect_tx_e(bar, uint32_t(C::BM * C::KS * 16));
        __syncwarp();
        if (lane < C::BM / 16)
          bulk_copy_e(smem_s + uint32_t(slot * C::kStageBytes + C::kW + lane * C::KS * 256), wb + lane * rg_bytes,
                      uint32_t(C::KS * 256), bar);
      }
#endif
    } else {
#pragma unroll
      for (int j = 0; j < kWPer; ++j) {
        const int i = tid + kThreads * j, r = i / (C::KS * 16), ch = i % (C::KS * 16);
        moe_tile::cp_async<16>(st + C::kW + r * C::KS * 256 + ch * 16, wb + woff[j]);
      }
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
  int gs = 0;
  for (;; ++gs) {
    const int j = gs / nk;
    if (!valid(j)) break;
    moe_tile::cp_wait<C::STAGES - 2>();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if constexpr (BULK)
      mbar_wait_e(static_cast<uint32_t>(__cvta_generic_to_shared(wbar + gs % C::STAGES)), uint32_t(gs / C::STAGES) & 1u);
#endif
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
    if (first && j > 0) {  // item j - 1's y stores ran before this stage's barrier
      count(j - 1);
      if (!SPLIT) finish(j - 1);
    }
    if (SPLIT && gs % nk == 1 && j > 0) finish(j - 1);  // (its ring slot is rewritten at item j + 1's last stage)
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
  tail();
  if constexpr (FC) {
    __syncthreads();  // the last item's y stores
    const int j = gs / nk;
    if (j > 0) {
      count(j - 1);
      finish(j - 1);
    }
  }
#else
  (void)a, (void)ws, (void)sy, (void)cnt, (void)tiles_cap;
#if defined(__CUDA_ARCH__)
  __trap();  // built without sm_90a features: never dispatched to
#endif
#endif
}

// down_body with __launch_bounds__(kThreads, C::kMinBlocks) (MAXREG 0: 168 registers at 3 blocks/SM), or with
// __maxnreg__(MAXREG) (MAXREG 160: two gate_up blocks (96 registers) and two down blocks fit an SM's registers
// together while the down fills gate_up's last wave; at 168 only one down block does).
template <class C, int AHEAD, bool FC, bool SPLIT, bool REL, bool BULK, bool TC = false>
__global__ __launch_bounds__(kThreads, C::kMinBlocks) void down_e(MoeArgs a, Workspace ws, Sync sy, int* cnt, int tiles_cap) {
  down_body<C, AHEAD, FC, SPLIT, REL, BULK, TC>(a, ws, sy, cnt, tiles_cap);
}
template <class C, int AHEAD, bool FC, bool SPLIT, bool REL, bool BULK, int MAXREG, bool TC = false>
__global__ __maxnreg__(MAXREG) void down_m(MoeArgs a, Workspace ws, Sync sy, int* cnt, int tiles_cap) {
  down_body<C, AHEAD, FC, SPLIT, REL, BULK, TC>(a, ws, sy, cnt, tiles_cap);
}

// Resident blocks of kernel K at sm2 bytes of dynamic shared memory (occupancy query, once per kernel).
template <auto K>
int down_slots(int sm2) {
  static const int n = [sm2] {
    int dev = 0, sms = 0, per = 0;
    moe_pipeline::check(hipGetDevice(&dev), "device");
    moe_pipeline::check(hipDeviceGetAttribute(&sms, hipDeviceAttributeMultiprocessorCount, dev), "SM count");
    moe_wg8::allow_smem(K, sm2);  // before the occupancy query (> 48 KB)
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, K, kThreads, sm2) != cudaSuccess || per < 1) {
      (void)cudaGetLastError();
      per = 1;
    }
    return sms * per;
  }();
  return n;
}

// The gate_up grid's tile rows: moe_r8d's bound (P + 7 min(E, P)) / 8, or with TB2 the shared experts' ceil(bs / 8)
// tiles each plus the routed pairs' (bs k + 7 min(E_routed, bs k)) / 8.
inline int64_t tile_rows_bound(const MoeConfig& c, bool tb2) {
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(c, 8);
  const int64_t b1 = std::min<int64_t>(s.tiles_max, (s.P + 7 * std::min(s.E, s.P)) / 8);
  if (!tb2 || c.n_experts_per_token + c.n_shared_experts != c.total_top_k) return b1;
  const int64_t pr = int64_t(c.bs) * c.n_experts_per_token;
  const int64_t b2 = int64_t(c.n_shared_experts) * ((c.bs + 7) / 8) +
                     (pr + 7 * std::min<int64_t>(c.n_routed_experts, pr)) / 8;
  return std::min(b1, b2);
}

// moe_r8d::launch_r8d<FC, MINB, G2, PF 0, LR, AHEAD, C4 off, TB on> with the prologue quantize_route_e, the down
// down_e<G2, AHEAD, FUSED, SPLIT, REL, BULK> and, unless FUSED, moe_rows8::combine.
template <class FC, int MINB, class G2, int AHEAD, bool FUSED, bool TB2, bool SPLIT, bool REL, bool BULK, int MAXREG,
          bool TC = false>
void launch_r8e(const MoeArgs& a) {
  if (a.workspace_size < moe_rows8x::workspace8x(a.cfg) + counter_bytes(a.cfg, G2::BM))
    throw std::invalid_argument("moe_mxfp4: workspace too small");
  Workspace ws;
  moe_wg8::carve(a.cfg, a.workspace, &ws, 2);
  const Sync sy = moe_rows8b::sync_of(a.cfg, a.workspace);
  int* flag = moe_rows8w::route_flag(a.cfg, a.workspace);
  int* cnt = counters(a.cfg, a.workspace);
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(a.cfg, 8);
  if (!moe_rows8b::supports8b<FC, G2, AHEAD>(a.cfg))
    throw std::invalid_argument("moe_mxfp4: shape not supported by the 8-row kernels");
  const int64_t n8 = s.M * s.H / 8;
  const int n_cnt = FUSED ? int(s.M * (s.H / G2::BM)) : TC ? 1 : 0;
  const unsigned qblocks = unsigned((std::max<int64_t>(n8, n_cnt) + kPrologueThreads - 1) / kPrologueThreads);
  moe_rows8::launch_ex(quantize_route_e, dim3(1 + qblocks), dim3(kPrologueThreads),
                       size_t(2 * s.E + kPrologueThreads) * sizeof(int), false, "quantize + route", a, ws, int(s.P),
                       int(s.E), int(s.rows_max), n8, sy.ready, int(s.tiles_max + 1), sy.row_w, flag, sy.unfolded, cnt,
                       n_cnt);
  constexpr int sm1 = FC::kPipeBytes > 8 * 68 * 4 ? FC::kPipeBytes : 8 * 68 * 4, sm2 = G2::kPipeBytes;
  static_assert(sm1 >= int(sizeof(int)) * (2 + moe_r8d::kMaxE + 64), "LR counts in the pipeline buffers");
  moe_wg8::allow_smem(moe_r8d::gate_up_r8d<FC, MINB, 0, true>, sm1);
  const int64_t tiles = tile_rows_bound(a.cfg, TB2);
  moe_rows8::launch_ex(moe_r8d::gate_up_r8d<FC, MINB, 0, true>, dim3(unsigned(s.I / 32), unsigned(tiles)), dim3(kThreads),
                       sm1, true, "s8 gate_up", a, ws, sy, static_cast<const int*>(flag), int(s.P), int(s.E));
  constexpr auto kDown = [] {
    if constexpr (MAXREG > 0) return down_m<G2, AHEAD, FUSED, SPLIT, REL, BULK, MAXREG, TC>;
    else return down_e<G2, AHEAD, FUSED, SPLIT, REL, BULK, TC>;
  }();
  moe_wg8::allow_smem(kDown, sm2);
  int64_t grid = down_slots<kDown>(sm2);  // blocks that fit (occupancy query)
  grid = std::min<int64_t>(grid, tiles * (s.H / G2::BM));
  moe_rows8::launch_ex(kDown, dim3(unsigned(grid)), dim3(kThreads), sm2, true, "wgmma down", a, ws, sy, cnt, int(tiles));
  if (FUSED || TC) return;
  constexpr int kCombineThreads = 256;
  const int64_t n = int64_t(a.cfg.bs) * a.cfg.d_hidden;
  moe_rows8::launch_ex(moe_rows8::combine, dim3(unsigned((n / moe_pipeline::kYVec + kCombineThreads - 1) / kCombineThreads)),
                       dim3(kCombineThreads), 0, true, "combine", static_cast<const moe_pipeline::YElem*>(ws.y),
                       int64_t(a.cfg.bs), int(a.cfg.d_hidden), int(a.cfg.total_top_k), a.out);
}

// The 8-row path of moe_r8d::Path<> (5 gate_up stages x 4 blocks/SM, LR, TB) with the fused combine (FUSED), the
// routing-structure tile bound (TB2), the down's configuration G2 and look-ahead AHEAD (moe_rows8b::down_dyn's;
// default v15's Cfg<4, 4, 3, 1, 3>, AHEAD 2) and the options SPLIT, REL, BULK (down_e).
template <bool FUSED = false, bool TB2 = true, int MAXREG = 160, class G2_ = moe_wg8::Cfg<4, 4, 3, 1, 3>, int AHEAD_ = 2,
          bool SPLIT = false, bool REL = true, bool BULK = false, int ST = 5, int MINB = 4, bool TC = false>
struct Path {
  using FC = moe_rows8x::S8Cfg<ST, true>;
  using G2 = G2_;
  static constexpr int AHEAD = AHEAD_;
  static bool applies(const MoeConfig& c) {
    return moe_r8d::Path<0, true, ST, MINB>::applies(c) && moe_rows8b::supports8b<FC, G2, AHEAD>(c) &&
           c.d_hidden % (8 * kLanes) == 0 && c.d_hidden % G2::BM == 0;
  }
  static size_t workspace_bytes(const MoeConfig& c) { return moe_rows8x::workspace8x(c) + counter_bytes(c, G2::BM); }
  static void launch(const MoeArgs& a) { launch_r8e<FC, MINB, G2, AHEAD, FUSED, TB2, SPLIT, REL, BULK, MAXREG, TC>(a); }
};
#endif  // MOE_WG8_HOST

}  // namespace
}  // namespace moe_r8e
