// moe_ws30: v29's 64-row fp8 path (moe_fp8_rows2.h: 160-row tiles, route_even, the OVL + PRO launch chain; the
// operands, weight decode, wgmma order, epilogue arithmetic and exact fix-up of moe_fp8_rows.h: the output is v29's bit
// for bit), measured in docs/perf.md, section "moe_mxfp4 v30":
//  - The copies run STAGES - 2 stages ahead instead of STAGES - 1: the slot written during stage ks is stage ks - 2's,
//    whose wgmma groups every warp has retired once it passed stage ks - 1's last wait_group(1), so the stage barrier
//    needs no wait_group(0) (moe_fp8r drains the tensor unit there). 4 stages of 4 k-blocks (148 KB; 5 stages with
//    the drain in v29).
//  - gate_up's SwiGLU / requantization epilogue and the prologue's hidden-state quantizer round to e2m1 without branches
//    (numerics::f32_to_e2m1_ties_away_branchless: the same codes as f32_to_e2m1_ties_away for every float): the rounding
//    ladder's divergent branches were the largest cost of gate_up's epilogue (19% of its stall samples). Measured here
//    as copies; moe_fp8r::swiglu_requant / token_codes now do it for every fp8 path, this one included.
// Tried and not kept (docs/perf.md, section "moe_mxfp4 v30"): 2 or 3 wgmma groups in flight (ptxas serializes the wgmmas, C7513, in
// every form tried), split copy roles (activations by one half of the threads, weights by the other), the next
// k-block's weight words or the copies before the wgmmas, 6 stages, no proxy fence (measurement only).
#pragma once
#include <utility>

#include "problems/common/moe_fp8_rows2.h"

namespace moe_ws30 {
namespace {

#if defined(MOE_WG8_HOST)
using moe_fp8r::kLanes;
using moe_fp8r2::TileE;
using moe_fp8r2::Ws2;

// moe_fp8r2::Cfg (two decoded A buffers: one wgmma group in flight while the next k-block decodes) with the copies
// STAGES - 2 stages ahead.
template <int WM_, int MT_, int KS_, int STAGES_, bool PF_, int BN_>
struct Cfg {
  static constexpr int WM = WM_, MT = MT_, BN = BN_, NG = BN_ / 8, KS = KS_, STAGES = STAGES_, NB = 2;
  static constexpr int DIST = STAGES_ - 2;
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
  static_assert(KS == 8 || KS == 4, "a scale row slice is one 8- or 4-byte copy");
  static_assert(BN % 8 == 0 && BN >= 128 && BN <= kThreads, "one setup row a thread");
  static_assert(BM * KS % kThreads == 0 && BN * kXChunks % kThreads == 0, "copy split");
  static_assert(kPipeBytes + 5 * 1024 <= 227 * 1024, "shared memory");
  static_assert(DIST >= 1 && NB - 1 <= KS, "copy distance; the groups in flight at a stage barrier are the last stage's");
};

#if defined(MOE_WG8_DEVICE)
using moe_fp8r::decode8;
using moe_fp8r::kK0;
using moe_fp8r::kK1;
using moe_fp8r::kT0;
using moe_fp8r::kT1;
using moe_fp8r::smem_desc;
using moe_fp8r::wgmma_e4m3;
using moe_tile::cp_async;
using moe_tile::cp_commit;
using moe_tile::cp_wait;
#endif

// moe_fp8r::mainloop (the same copies, decode and wgmma sequence, so the same sums) with the copies DIST = STAGES - 2
// stages ahead and no wgmma drain at the stage barriers.
template <class C, int NCOLS>
__device__ inline void mainloop(const uint8_t* w, const uint8_t* wsc, const uint8_t* x, int KB, int KBp, const int* rg,
                                const uint32_t* xoff_row, uint8_t* smem, float (&acc)[C::MT][C::NG][4],
                                int (&lo)[C::MT][2], uint32_t (&chk)[C::MT][2]) {
#pragma unroll
  for (int m = 0; m < C::MT; ++m) {
#pragma unroll
    for (int j = 0; j < C::NG; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[m][j][i] = 0.0f;
    lo[m][0] = lo[m][1] = 0;
    chk[m][0] = chk[m][1] = 0u;
  }
#if defined(MOE_WG8_DEVICE)
  const int tid = threadIdx.x, lane = tid % kLanes, wm = tid / kLanes;
  const int g = lane / 4;
  const int nk = KBp / C::KS;
  const uint32_t rg_bytes = uint32_t(KB) * 256u;

  const int srow = tid % C::BM;  // the scale row this thread copies (threads tid < BM)
  const uint32_t soff = (uint32_t(rg[srow / 16]) * 16u + uint32_t(srow % 16)) * uint32_t(KB);
  // Activation chunk i = tid + n kThreads: row c = (i / (8 kXChunks)) 8 + i % 8, chunk ch = (i / 8) % kXChunks.
  auto xrow_of = [&](int i) { return (i / (8 * C::kXChunks)) * 8 + i % 8; };
  auto xch_of = [&](int i) { return (i / 8) % C::kXChunks; };
  uint32_t woff[C::kWPer], xoff[C::kXPer];
#pragma unroll
  for (int n = 0; n < C::kWPer; ++n) {
    const int i = tid + n * C::kThreads, r = i / (C::KS * 16), ch = i % (C::KS * 16);
    woff[n] = uint32_t(rg[r]) * rg_bytes + uint32_t(ch) * 16u;
  }
#pragma unroll
  for (int n = 0; n < C::kXPer; ++n) {
    const int i = tid + n * C::kThreads;
    xoff[n] = xoff_row[xrow_of(i)] + uint32_t(xch_of(i)) * 16u;
  }

  // Copies of a stage: W (kWPer), X (kXPer, rows < NCOLS), S (1), in KS portions (P < 0: all).
  constexpr int kCopies = C::kWPer + C::kXPer + 1, kPortion = (kCopies + C::KS - 1) / C::KS;
  auto load_part = [&](auto p_tag, int slot, int kb0) {
    constexpr int P = decltype(p_tag)::value;
    uint8_t* st = smem + slot * C::kStageBytes;
    const uint8_t* wb = w + uint32_t(kb0) * 256u;
#pragma unroll
    for (int n = 0; n < C::kWPer; ++n)
      if (P < 0 || n / kPortion == P) cp_async<16>(st + C::kW + (tid + n * C::kThreads) * 16, wb + woff[n]);
    const uint8_t* xb = x + uint32_t(kb0) * 32u;
#pragma unroll
    for (int n = 0; n < C::kXPer; ++n) {
      if (P >= 0 && (C::kWPer + n) / kPortion != P) continue;
      const int i = tid + n * C::kThreads, c = xrow_of(i);
      if (NCOLS == C::BN || c < NCOLS)
        cp_async<16>(st + C::kX + (c / 8) * C::kSBO + xch_of(i) * 128 + (c % 8) * 16, xb + xoff[n]);
    }
    if ((P < 0 || (C::kWPer + C::kXPer) / kPortion == P) && (C::BM == C::kThreads || tid < C::BM))
      cp_async<C::KS>(st + C::kWs + srow * C::KS, wsc + kb0 + soff);
  };

  const uint32_t smem_s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  uint32_t a[C::NB][C::MT][4];
  uint32_t c0[C::MT][2], c1[C::MT][2];

  auto body = [&](int slot, int next_slot, int next_kb, bool has_next) {
    const uint8_t* st = smem + slot * C::kStageBytes;
    const uint64_t desc0 = smem_desc(smem_s + slot * C::kStageBytes + C::kX, C::kSBO);
    uint32_t sw[C::MT][2][C::KS / 4];  // scale words of rows g and g + 8 of each group
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
    uint32_t wn[C::MT][2];  // PF: the weight words of the next k-block
    auto read_words = [&](int u) {
#pragma unroll
      for (int m = 0; m < C::MT; ++m) {
        const uint8_t* kb = st + C::kW + ((wm * C::MT + m) * C::KS + u) * 256;
        wn[m][0] = *reinterpret_cast<const uint32_t*>(kb + 4 * lane);
        wn[m][1] = *reinterpret_cast<const uint32_t*>(kb + 128 + 4 * lane);
      }
    };
    if constexpr (C::PF) read_words(0);
    auto kblock = [&](auto u_tag) {
      constexpr int u = decltype(u_tag)::value;
      constexpr int b = u % C::NB;
      if constexpr (!C::PF) read_words(u);
      uint32_t wc[C::MT][2];
#pragma unroll
      for (int m = 0; m < C::MT; ++m) {
        wc[m][0] = wn[m][0];
        wc[m][1] = wn[m][1];
      }
#pragma unroll
      for (int m = 0; m < C::MT; ++m) {
        const uint32_t w0 = wc[m][0], w1 = wc[m][1];
        uint32_t t0[2], t1[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint32_t bb = __byte_perm(sw[m][h][u / 4], 0u, 0x4440u + (u % 4));
          t0[h] = bb * kK0 + c0[m][h];
          t1[h] = bb * kK1 + c1[m][h];
          chk[m][h] = max(chk[m][h], bb - uint32_t(lo[m][h]));
        }
        decode8(w0, t0[0], t1[0], a[b][m][0], a[b][m][2]);
        decode8(w1, t0[1], t1[1], a[b][m][1], a[b][m][3]);
      }
      moe_wg8::wg_fence();
#pragma unroll
      for (int m = 0; m < C::MT; ++m) wgmma_e4m3<NCOLS, C::NG>(acc[m], a[b][m], desc0 + uint64_t(u * 256 / 16));
      moe_wg8::wg_commit();
      if constexpr (C::PF && u + 1 < C::KS) read_words(u + 1);
      if (has_next) load_part(u_tag, next_slot, next_kb);
      moe_wg8::wg_wait<C::NB - 1>();
    };
    [&]<int... U>(std::integer_sequence<int, U...>) {
      (kblock(std::integral_constant<int, U>{}), ...);
    }(std::make_integer_sequence<int, C::KS>{});
  };

#pragma unroll
  for (int s = 0; s < C::DIST; ++s) {
    if (s < nk) load_part(std::integral_constant<int, -1>{}, s, s * C::KS);
    cp_commit();
  }
  for (int ks = 0; ks < nk; ++ks) {
    cp_wait<C::DIST - 1>();  // this thread's copies of stage ks landed
    // No wgmma drain: the copies below overwrite stage ks - 2's slot, whose groups every warp retired before it
    // arrived here (the last NB - 1 groups in flight are stage ks - 1's).
    moe_wg8::proxy_fence();  // the landed copies -> visible to wgmma's shared-memory reads
    __syncthreads();
    const int slot = ks % C::STAGES;
    if (ks == 0) {
      // Each row's window from its first stage: the largest byte at d = 3, window d in [-5, 6].
#pragma unroll
      for (int m = 0; m < C::MT; ++m)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint8_t* p = smem + C::kWs + ((wm * C::MT + m) * 16 + g + 8 * h) * C::KS;
          uint32_t q;
          if constexpr (C::KS == 8) {
            const uint2 v = *reinterpret_cast<const uint2*>(p);
            q = __vmaxu4(v.x, v.y);
          } else {
            q = *reinterpret_cast<const uint32_t*>(p);
          }
          q = __vmaxu4(q, q >> 16);
          q = __vmaxu4(q, q >> 8);
          lo[m][h] = int(q & 0xFFu) - 8;
          c0[m][h] = kT0 - uint32_t(lo[m][h] + 5) * kK0;
          c1[m][h] = kT1 - uint32_t(lo[m][h] + 5) * kK1;
        }
    }
    const int next = ks + C::DIST;
    body(slot, next % C::STAGES, next * C::KS, next < nk);
    cp_commit();
  }
  moe_wg8::wg_wait<0>();
#pragma unroll
  for (int m = 0; m < C::MT; ++m)
#pragma unroll
    for (int j = 0; j < C::NG; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) moe_wg8::reg_fence(acc[m][j][i]);
  cp_wait<0>();
#else
  (void)w, (void)wsc, (void)x, (void)KB, (void)KBp, (void)rg, (void)xoff_row, (void)smem;
#if defined(__CUDA_ARCH__)
  __trap();  // built without sm_90a features: never dispatched to (needs sm_90a)
#endif
#endif
}

// moe_fp8r::run_mainloop with this mainloop.
template <class C, int NCOLS, int FORCE>
__device__ inline void run_mainloop(const uint8_t* w, const uint8_t* wsc, const uint8_t* x, int KB, int KBp, const int* rg,
                                    const uint32_t* xoff_row, uint8_t* smem, float (&acc)[C::MT][C::NG][4], int* rref,
                                    int* wflag) {
  int lo[C::MT][2];
  uint32_t chk[C::MT][2];
  moe_ws30::mainloop<C, NCOLS>(w, wsc, x, KB, KBp, rg, xoff_row, smem, acc, lo, chk);
  const moe_wide16::AccIndex<C> ix;
#pragma unroll
  for (int m = 0; m < C::MT; ++m)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = ix.row(m, 2 * h);
      if (threadIdx.x % 4 == 0) {
        rref[r] = lo[m][h] + 5 - 127;
        wflag[r] = chk[m][h] > 11u || (FORCE && r % 97 == 11);
      }
    }
  __syncthreads();
}

// moe_fp8r::gate_up_tile with this mainloop (the rest verbatim).
template <class C, int FORCE, class TileT, class ColF>
__device__ __forceinline__ void gate_up_tile(const MoeArgs& a, const moe_fp8r::Ws& ws, const TileT& tile, ColF col,
                                             uint8_t* smem, int* rg, uint32_t* xoff, float* colmul, int* tok, int* xflag,
                                             int* wflag, int* rref) {
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, T = a.cfg.total_top_k, KB = H / 32;
  constexpr int kHalf = C::BM / 2;
  const int n0 = col() * kHalf;
  for (int i = threadIdx.x; i < C::BM / 16; i += C::kThreads) rg[i] = (i < kHalf / 16 ? n0 : I + n0 - kHalf) / 16 + i;
  bool real = false;
  if (threadIdx.x < C::BN) {
    const int c = threadIdx.x;
    const int p = c < tile.rows ? ws.p.sorted_pair[tile.row0 + c] : -1;
    const int token = p >= 0 ? p / T : 0;
    xoff[c] = uint32_t(token) * uint32_t(H);
    colmul[c] = numerics::exp2_f32(ws.xr[2 * token]);
    tok[c] = p >= 0 ? token : -1;
    xflag[c] = p >= 0 && ws.xr[2 * token + 1];
    real = p >= 0;
  }
  const int nreal = __syncthreads_count(real);
  float acc[C::MT][C::NG][4];
  const uint8_t* wq = a.gate_up_weight_shuffled + int64_t(tile.expert) * 2 * I * (H / 2);
  const uint8_t* wsc = a.gate_up_weight_scale + int64_t(tile.expert) * 2 * I * KB;
  moe_fp8r::dispatch_cols<C>(nreal, [&](auto n_tag) {
    moe_ws30::run_mainloop<C, decltype(n_tag)::value, FORCE>(wq, wsc, ws.p.x8, KB, KB, rg, xoff, smem, acc, rref, wflag);
  });

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
  if (threadIdx.x < C::BN) mine |= xflag[threadIdx.x] != 0;
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

  moe_fp8r::swiglu_requant<C, FORCE>(tile_f, tok, tile.row0, n0, I, ws);
}

// moe_fp8r::down_tile with this mainloop (CGF / CGD as moe_fp8r2's down: true, true).
template <class C, int FORCE, class TileT, class ColF>
__device__ __forceinline__ void down_tile(const MoeArgs& a, const moe_fp8r::Ws& ws, const TileT& tile, ColF col,
                                          uint8_t* smem, int* rg, uint32_t* xoff, int* pair, float* weight, int* aflg,
                                          int* wflag, int* rref) {
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, KB = I / 32;
  const int n0 = col() * C::BM;
  for (int i = threadIdx.x; i < C::BM / 16; i += C::kThreads) rg[i] = n0 / 16 + i;
  bool real = false;
  if (threadIdx.x < C::BN) {
    const int c = threadIdx.x;
    const int row = tile.row0 + (c < tile.rows ? c : 0);
    const int p = c < tile.rows ? ws.p.sorted_pair[row] : -1;
    xoff[c] = uint32_t(row) * uint32_t(I);
    pair[c] = p;
    weight[c] = p >= 0 ? a.topk_weights[p] : 0.0f;
    aflg[c] = p >= 0 && __ldcg(ws.aflag + row);
    real = p >= 0;
  }
  const int nreal = __syncthreads_count(real);
  float acc[C::MT][C::NG][4];
  const uint8_t* wq = a.down_weight_shuffled + int64_t(tile.expert) * H * (I / 2);
  const uint8_t* wsc = a.down_weight_scale + int64_t(tile.expert) * H * KB;
  moe_fp8r::dispatch_cols<C>(nreal, [&](auto n_tag) {
    moe_ws30::run_mainloop<C, decltype(n_tag)::value, FORCE>(wq, wsc, ws.p.a8, KB, KB, rg, xoff, smem, acc, rref, wflag);
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
  if (threadIdx.x < C::BN) mine |= aflg[threadIdx.x] != 0;
  if (__syncthreads_or(mine)) {
    const int warp = threadIdx.x / kLanes;
    for (int idx = warp; idx < C::BN * C::BM; idx += C::kThreads / kLanes) {
      const int c = idx / C::BM, r = idx % C::BM;
      if (pair[c] < 0 || !(wflag[r] || aflg[c])) continue;
      const int64_t n = int64_t(tile.expert) * H + n0 + r;
      const int64_t row = tile.row0 + c;
      const float v = moe_fp8r::exact_dot_cg(a.down_weight + n * (I / 2), a.down_weight_scale + n * KB,
                                             ws.p.a8 + row * I, ws.p.as + row * KB, aflg[c] != 0, 0, KB);
      if (threadIdx.x % kLanes == 0) ws.p.y[int64_t(pair[c]) * H + n0 + r] = weight[c] * v;
    }
  }
}

// moe_fp8r2::gate_up (OVL + PRO) with this tile body.
template <class C, int FORCE>
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
  const int bt = int(blockIdx.y);
  moe_wg8::dep_wait();
  moe_wg8::dep_release();
  if (bt >= *ws.p.n_tiles) return;
  const TileE tile = moe_fp8r2::tile_of(ws2, bt);
  moe_ws30::gate_up_tile<C, FORCE>(a, ws, tile, [] { return int(blockIdx.x); }, smem, rg, xoff, colmul, tok, xflag, wflag, rref);
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(ws2.ready + bt, 1);
}

// moe_fp8r2::down (OVL + PRO) with this tile body.
template <class C, int FORCE>
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
  const int bt = int(blockIdx.y);
  moe_wg8::dep_release();
  if (bt >= *ws.p.n_tiles) return;
  const TileE tile = moe_fp8r2::tile_of(ws2, bt);
  if (threadIdx.x == 0) {
    while (atomicAdd(ws2.ready + bt, 0) < ws2.need) __nanosleep(256);
    __threadfence();
  }
  __syncthreads();
  moe_ws30::down_tile<C, FORCE>(a, ws, tile, [] { return int(blockIdx.x); }, smem, rg, xoff, pair, weight, aflg, wflag, rref);
}

// moe_fp8r2::launch<G1, G2, OVL = true, PRO = true> with these kernels.
template <class G1, class G2, int FORCE = 0>
void launch(const MoeArgs& a) {
  static_assert(G1::BN == G2::BN, "one tile list");
  constexpr int T = G1::BN;
  if (a.workspace_size < moe_fp8r2::carve2(a.cfg, T, nullptr, nullptr))
    throw std::invalid_argument("moe_mxfp4: workspace too small");
  if (!moe_fp8r::supports(a.cfg)) throw std::invalid_argument("moe_mxfp4: shape not supported by the fp8 kernels");
  Ws2 ws2;
  moe_fp8r2::carve2(a.cfg, T, a.workspace, &ws2);
  const moe_fp8r::Ws& ws = ws2.w;
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(a.cfg, T);
  const unsigned cols1 = unsigned(s.I / (G1::BM / 2)), cols2 = unsigned(s.H / G2::BM), tiles = unsigned(s.tiles_max);
  ws2.need = int(cols1);
  constexpr int kRouteThreads = 1024;
  const size_t route_smem = size_t(2 * s.E + kRouteThreads) * sizeof(int);
  static_assert(moe_fp8r2::kQGroups * moe_fp8r2::kQThreads == kRouteThreads, "the route block's size");
  const unsigned nqb = unsigned((s.M + moe_fp8r2::kQGroups - 1) / moe_fp8r2::kQGroups);
  moe_fp8r2::prologue<<<nqb + 1, kRouteThreads, route_smem>>>(
      a.hidden_states, int(s.M), int(s.H), ws.p.x8, ws.p.xs, ws.xr, ws.aflag, a.topk_ids, int(s.P), int(s.E), T,
      int(s.rows_max), ws.p.sorted_pair, ws2.tiles, ws.p.n_tiles, ws2.ready, int(s.tiles_max));
  moe_pipeline::check(hipGetLastError(), "ws30 prologue");
  constexpr int sm1 = moe_fp8r::gate_up_smem<G1>(), sm2 = G2::kPipeBytes;
  moe_wg8::allow_smem(gate_up<G1, FORCE>, sm1);
  moe_wg8::allow_smem(down<G2, FORCE>, sm2);
  moe_rows8::launch_ex(gate_up<G1, FORCE>, dim3(cols1, tiles), dim3(G1::kThreads), size_t(sm1), true, "ws30 gate_up", a,
                       ws2);
  moe_rows8::launch_ex(down<G2, FORCE>, dim3(cols2, tiles), dim3(G2::kThreads), size_t(sm2), true, "ws30 down", a, ws2);
  constexpr int kThreadsC = 256;
  const int64_t n = s.M * s.H;
  moe_rows8::launch_ex(moe_fp8r2::combine_dep, dim3(unsigned((n + kThreadsC - 1) / kThreadsC)), dim3(kThreadsC), 0, true,
                       "ws30 combine", static_cast<const float*>(ws.p.y), int64_t(s.M), int(s.H), a.cfg.total_top_k,
                       a.out);
}

// The path as one unit for a composed variant (the shapes of moe_fp8r2::Path).
template <class A, class B, int FORCE = 0>
struct PathOf {
  static bool applies(const MoeConfig& c) {
    return c.bs * c.n_experts_per_token / c.n_routed_experts > 40 && moe_fp8r::supports(c);
  }
  static size_t workspace_bytes(const MoeConfig& c) { return moe_fp8r2::carve2(c, A::BN, nullptr, nullptr); }
  static void launch(const MoeArgs& a) { moe_ws30::launch<A, B, FORCE>(a); }
};
// 8 warps x two 16-row groups (256 weight rows) x tiles of up to 160 rows, 4 k-blocks a stage, 4 stages (148 KB; 5 stages
// measured the same at d_expert 2048 and 1% slower at 512), the weight words one k-block ahead (v29's G160s otherwise).
using G160w = Cfg<8, 2, 4, 4, true, 160>;
using Path = PathOf<G160w, G160w>;
#endif  // MOE_WG8_HOST

}  // namespace
}  // namespace moe_ws30
