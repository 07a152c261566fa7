// moe_ws9 (helper moe-ws9, session 9): moe_ws30's 64-row fp8 path (moe_fp8r2's kernels and launch chain on moe_fp8r's
// mainloop, copied here with mainloop options) and what was measured about its wgmma pipeline (docs/perf-moe-ws9.md):
//  - ptxas serializes the wgmmas (C7513) when 2+ groups are in flight and a BRANCH sits between a wgmma and the wait
//    that retires it: the mainloop's `if (has_next)` around the next stage's copies and the activation copy's
//    `if (c < NCOLS)` (tiles with fewer columns than BN). Options 2 (copies always issued, the next stage clamped to
//    the last) and 4 (rows past NCOLS copied with a 0-byte source size, zero-filled) remove both: no C7513 at NB 4.
//  - That did not pay: NB 4 (three k-blocks in flight) and HG (option 256: one group per 16-row group, three in
//    flight, v33's registers) measured 4-8% slower than v33; v33's mainloop with no wgmma at all runs only 6.5% faster
//    than with them: the loop is bound by the decode's instruction path (2 warps a scheduler), not by the tensor unit.
//  - Option 512 (Path, v35): the stage loop unrolled by STAGES so that each stage's slot is a constant (shared-memory
//    offsets and the B descriptor fold into immediates; no spills, v33 had 8 B): measured equal to v33 within noise.
// Options 8 / 16 (copy offsets from the block's shared tables) were compile-time register experiments. Every option
// keeps the decode and k order: the output is v33's bit for bit.
#pragma once
#include <type_traits>
#include <utility>

#include "problems/common/moe_fp8_rows2.h"

namespace moe_ws9 {
namespace {

#if defined(MOE_WG8_HOST)
using moe_fp8r::kLanes;
using moe_fp8r::LoopDist;
using moe_fp8r::LoopOpts;
#if defined(MOE_WG8_DEVICE)
using moe_fp8r::smem_desc;
using moe_fp8r::decode8;
using moe_fp8r::wgmma_e4m3;
using moe_fp8r::kT0;
using moe_fp8r::kT1;
using moe_fp8r::kK0;
using moe_fp8r::kK1;
#endif
using moe_tile::cp_async;
using moe_tile::cp_commit;
using moe_tile::cp_wait;
using moe_fp8r::cp_async16_ef;
using moe_fp8r::policy_evict_first;
using moe_fp8r::dispatch_cols;
using moe_fp8r::exact_dot;
using moe_fp8r::exact_dot_cg;
using moe_fp8r::swiglu_requant;
using moe_fp8r2::Ws2;
using moe_fp8r2::TileE;
using moe_fp8r2::carve2;
using moe_fp8r2::tile_of;
using moe_fp8r2::tile_index;
using moe_fp8r2::col_index;
using moe_fp8r2::prologue;
using moe_fp8r2::combine_dep;
using moe_fp8r2::route_even;
using moe_fp8r2::kQGroups;
using moe_fp8r2::kQThreads;
using moe_fp8r::Ws;

// moe_fp8r2::Cfg with the copies DIST = STAGES - 2 stages ahead (moe_ws30's) and NB decoded A buffers (NB - 1 wgmma
// groups in flight while the next k-block decodes). BIS: the mainloop options above (bits 2, 4, 8, 16, 256, 512).
template <int WM, int MT, int KS, int STAGES, int NB, bool PF, int BN, int BIS_ = 0>
struct Cfg : moe_fp8r2::Cfg<WM, MT, KS, STAGES, NB, PF, BN> {
  static constexpr int DIST = STAGES - 2;
  static constexpr int BIS = BIS_;
};
template <class C, class = void>
struct Bis {
  static constexpr int value = 0;
};
template <class C>
struct Bis<C, std::void_t<decltype(C::BIS)>> {
  static constexpr int value = C::BIS;
};

// acc (+)= A (the BM weight rows of the 16-row groups rg[], decoded) x B (NCOLS activation rows at
// x + xoff_row[c]) over K = 32 KBp (KB: the row's k-blocks, KBp: this split-K part's). lo[m][h]: the window's
// first scale byte of row g + 8 h of group m (from the first stage); chk[m][h]: the largest b - lo seen (the row is
// exact while <= 11).
#if defined(MOE_WG8_DEVICE)
// cp.async of 16 bytes of which the first `bytes` are read (the rest zero-filled): a copy without a branch.
__device__ __forceinline__ void cp_async_zfill(void* smem_dst, const void* gmem_src, uint32_t bytes) {
  const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(gmem_src), "r"(bytes) : "memory");
}
#endif

template <class C, int NCOLS, int BIS = Bis<C>::value>
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
  using O = LoopOpts<C>;
  uint64_t pol = 0;
  if constexpr (O::EF) pol = policy_evict_first();
  const uint32_t rg_bytes = uint32_t(KB) * 256u;

  uint32_t woff[C::kWPer], xoff[C::kXPer];
#pragma unroll
  for (int n = 0; n < C::kWPer; ++n) {
    const int i = tid + n * C::kThreads, r = i / (C::KS * 16), ch = i % (C::KS * 16);
    woff[n] = uint32_t(rg[r]) * rg_bytes + uint32_t(ch) * 16u;
  }
  const int srow = tid % C::BM;  // the scale row this thread copies (threads tid < BM)
  const uint32_t soff = (uint32_t(rg[srow / 16]) * 16u + uint32_t(srow % 16)) * uint32_t(KB);
  // Activation chunk i = tid + n kThreads: row c = (i / (8 kXChunks)) 8 + i % 8, chunk ch = (i / 8) % kXChunks.
  auto xrow_of = [&](int i) { return (i / (8 * C::kXChunks)) * 8 + i % 8; };
  auto xch_of = [&](int i) { return (i / 8) % C::kXChunks; };
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
      if (P < 0 || n / kPortion == P) {
        uint32_t wo = woff[n];
        if constexpr (BIS & 16) {  // the offset from the block's group table (fewer live registers)
          const int i = tid + n * C::kThreads;
          wo = uint32_t(rg[i / (C::KS * 16)]) * rg_bytes + uint32_t(i % (C::KS * 16)) * 16u;
        }
        if constexpr (O::EF) cp_async16_ef(st + C::kW + (tid + n * C::kThreads) * 16, wb + wo, pol);
        else cp_async<16>(st + C::kW + (tid + n * C::kThreads) * 16, wb + wo);
      }
    const uint8_t* xb = x + uint32_t(kb0) * 32u;
#pragma unroll
    for (int n = 0; n < C::kXPer; ++n) {
      if (P >= 0 && (C::kWPer + n) / kPortion != P) continue;
      const int i = tid + n * C::kThreads, c = xrow_of(i);
      uint32_t xo = xoff[n];
      if constexpr (BIS & 8) xo = xoff_row[c] + uint32_t(xch_of(i)) * 16u;  // from the block's row table
      if constexpr (BIS & 4) {
        // No branch: rows past NCOLS copy 0 bytes (zero-filled, never read by the wgmmas).
        cp_async_zfill(st + C::kX + (c / 8) * C::kSBO + xch_of(i) * 128 + (c % 8) * 16, xb + xo,
                       NCOLS == C::BN || c < NCOLS ? 16u : 0u);
      } else if (NCOLS == C::BN || c < NCOLS) {
        cp_async<16>(st + C::kX + (c / 8) * C::kSBO + xch_of(i) * 128 + (c % 8) * 16, xb + xo);
      }
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
        // HG (BIS 256): one wgmma group per 16-row group m, NB buffers of one group each (NB - 1 groups in flight).
        uint32_t(&ad)[4] = (BIS & 256) ? a[(u * C::MT + m) % C::NB][0] : a[b][m];
        decode8(w0, t0[0], t1[0], ad[0], ad[2]);
        decode8(w1, t0[1], t1[1], ad[1], ad[3]);
        if constexpr (BIS & 256) {
          moe_wg8::wg_fence();
          wgmma_e4m3<NCOLS, C::NG>(acc[m], ad, desc0 + uint64_t(u * 256 / 16));
          moe_wg8::wg_commit();
          if (m + 1 < C::MT) moe_wg8::wg_wait<C::NB - 1>();
        }
      }
      if constexpr (!(BIS & 256)) {
        moe_wg8::wg_fence();
#pragma unroll
        for (int m = 0; m < C::MT; ++m) wgmma_e4m3<NCOLS, C::NG>(acc[m], a[b][m], desc0 + uint64_t(u * 256 / 16));
        moe_wg8::wg_commit();
      }
      if constexpr (C::PF && u + 1 < C::KS) read_words(u + 1);
      if constexpr (!(BIS & 1)) { if (O::kNoBranch || (BIS & 2) || has_next) load_part(u_tag, next_slot, next_kb); }
      moe_wg8::wg_wait<C::NB - 1>();
    };
    [&]<int... U>(std::integer_sequence<int, U...>) {
      (kblock(std::integral_constant<int, U>{}), ...);
    }(std::make_integer_sequence<int, C::KS>{});
  };

  constexpr int kDist = LoopDist<C>::value;
  static_assert(kDist >= 1 && kDist <= C::STAGES - 1 && (kDist == C::STAGES - 1 || C::NB - 1 <= C::KS),
                "copy distance; without the drain the groups in flight at a stage barrier must be the last stage's");
#pragma unroll
  for (int s = 0; s < kDist; ++s) {
    if (s < nk) load_part(std::integral_constant<int, -1>{}, s, s * C::KS);
    cp_commit();
  }
  // One stage: ks the stage, slot its buffer (a compile-time constant in the slot-unrolled form, BIS 512).
  auto stage = [&](int ks, int slot, bool first) {
    cp_wait<kDist - 1>();  // this thread's copies of stage ks landed
    if constexpr (kDist == C::STAGES - 1) moe_wg8::wg_wait<0>();  // this warp's wgmma reads of stage ks - 1 are done
    moe_wg8::proxy_fence();  // the landed copies -> visible to wgmma's shared-memory reads
    __syncthreads();
    if (first) {
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
    const int next = ks + kDist;
    body(slot, (slot + kDist) % C::STAGES, (O::kClampNext || (BIS & 2) ? (next < nk ? next : nk - 1) : next) * C::KS,
         next < nk);
    cp_commit();
  };
  if constexpr (BIS & 512) {
    // nk % STAGES == 0 (PathOf::applies): every stage's slot a constant (its buffer and descriptor offsets too).
    for (int ks0 = 0; ks0 < nk; ks0 += C::STAGES) {
      [&]<int... J>(std::integer_sequence<int, J...>) {
        (stage(ks0 + J, J, J == 0 && ks0 == 0), ...);
      }(std::make_integer_sequence<int, C::STAGES>{});
    }
  } else {
    for (int ks = 0; ks < nk; ++ks) stage(ks, ks % C::STAGES, ks == 0);
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
  (void)w, (void)wsc, (void)x, (void)KB, (void)rg, (void)xoff_row, (void)smem;
#if defined(__CUDA_ARCH__)
  __trap();  // built without sm_90a features: never dispatched to (needs sm_90a)
#endif
#endif
}

// The mainloop, then rref[r] / wflag[r] (block row r's reference exponent and out-of-window flag) in
// shared memory for every row, after a barrier.
template <class C, int NCOLS, int FORCE, int BIS = Bis<C>::value>
__device__ inline void run_mainloop(const uint8_t* w, const uint8_t* wsc, const uint8_t* x, int KB, int KBp, const int* rg,
                                    const uint32_t* xoff_row, uint8_t* smem, float (&acc)[C::MT][C::NG][4], int* rref,
                                    int* wflag) {
  int lo[C::MT][2];
  uint32_t chk[C::MT][2];
  mainloop<C, NCOLS, BIS>(w, wsc, x, KB, KBp, rg, xoff_row, smem, acc, lo, chk);
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


// The gate_up kernel's work once its tile is known (shared with moe_fp8r2::gate_up): the tile's rows and weight
// row groups, the mainloop into fp32, the exact fix-up of flagged (row, column) pairs, then SwiGLU, bf16 rounding
// and requantization into e4m3 values + e8m0 scales. col() gives the block's column block; the shared arrays are
// the kernel's own.
template <class C, int FORCE, class TileT, class ColF>
__device__ __forceinline__ void gate_up_tile(const MoeArgs& a, const Ws& ws, const TileT& tile, ColF col, uint8_t* smem,
                                             int* rg, uint32_t* xoff, float* colmul, int* tok, int* xflag, int* wflag,
                                             int* rref) {
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, T = a.cfg.total_top_k, KB = H / 32;
  constexpr int kHalf = C::BM / 2;
  const int n0 = col() * kHalf;
  for (int i = threadIdx.x; i < C::BM / 16; i += C::kThreads) rg[i] = (i < kHalf / 16 ? n0 : I + n0 - kHalf) / 16 + i;
  bool real = false;
  if (threadIdx.x < C::BN) {
    const int c = threadIdx.x;
    const int p = c < tile.rows ? ws.p.sorted_pair[tile.row0 + c] : -1;
    const int token = p >= 0 ? p / T : 0;  // padding rows borrow token 0; never written back
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
  dispatch_cols<C>(nreal, [&](auto n_tag) {
    moe_ws9::run_mainloop<C, decltype(n_tag)::value, FORCE>(wq, wsc, ws.p.x8, KB, KB, rg, xoff, smem, acc, rref, wflag);
  });
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
  if (threadIdx.x < C::BN) mine |= xflag[threadIdx.x] != 0;
  if (__syncthreads_or(mine)) {
    const int warp = threadIdx.x / kLanes;
    for (int idx = warp; idx < C::BN * C::BM; idx += C::kThreads / kLanes) {
      const int c = idx / C::BM, r = idx % C::BM;
      if (tok[c] < 0 || !(wflag[r] || xflag[c])) continue;
      const int64_t n = int64_t(tile.expert) * 2 * I + rg[r / 16] * 16 + r % 16;
      const int t = tok[c];
      const float v = exact_dot(a.gate_up_weight + n * (H / 2), a.gate_up_weight_scale + n * KB, ws.p.x8 + int64_t(t) * H,
                                ws.p.xs + int64_t(t) * KB, ws.xr[2 * t + 1] != 0, ws.xr[2 * t], KB);
      if (threadIdx.x % kLanes == 0) tile_f[c * kStride + r] = v;
    }
    __syncthreads();
  }

  swiglu_requant<C, FORCE>(tile_f, tok, tile.row0, n0, I, ws);
}

// The down kernel's work once its tile is known (shared with moe_fp8r2::down): the tile's pairs and weights, the
// mainloop into fp32, the weighted rows into y, the exact fix-up of flagged (row, column) pairs. col() gives the
// block's column block; CGF / CGD: the row flags / the fix-up's activation rows read through L2.
template <class C, int FORCE, bool CGF, bool CGD, class TileT, class ColF>
__device__ __forceinline__ void down_tile(const MoeArgs& a, const Ws& ws, const TileT& tile, ColF col, uint8_t* smem,
                                          int* rg, uint32_t* xoff, int* pair, float* weight, int* aflg, int* wflag,
                                          int* rref) {
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, KB = I / 32;
  const int n0 = col() * C::BM;
  for (int i = threadIdx.x; i < C::BM / 16; i += C::kThreads) rg[i] = n0 / 16 + i;
  bool real = false;
  if (threadIdx.x < C::BN) {
    const int c = threadIdx.x;
    const int row = tile.row0 + (c < tile.rows ? c : 0);  // rows past the tile's: its first row (not stored)
    const int p = c < tile.rows ? ws.p.sorted_pair[row] : -1;
    xoff[c] = uint32_t(row) * uint32_t(I);
    pair[c] = p;
    weight[c] = p >= 0 ? a.topk_weights[p] : 0.0f;
    aflg[c] = p >= 0 && (CGF ? __ldcg(ws.aflag + row) : ws.aflag[row]);
    real = p >= 0;
  }
  const int nreal = __syncthreads_count(real);
  float acc[C::MT][C::NG][4];
  const uint8_t* wq = a.down_weight_shuffled + int64_t(tile.expert) * H * (I / 2);
  const uint8_t* wsc = a.down_weight_scale + int64_t(tile.expert) * H * KB;
  dispatch_cols<C>(nreal, [&](auto n_tag) {
    moe_ws9::run_mainloop<C, decltype(n_tag)::value, FORCE>(wq, wsc, ws.p.a8, KB, KB, rg, xoff, smem, acc, rref, wflag);
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
      const uint8_t* wrow = a.down_weight + n * (I / 2);
      const uint8_t* srow = a.down_weight_scale + n * KB;
      const float v = CGD ? exact_dot_cg(wrow, srow, ws.p.a8 + row * I, ws.p.as + row * KB, aflg[c] != 0, 0, KB)
                          : exact_dot(wrow, srow, ws.p.a8 + row * I, ws.p.as + row * KB, aflg[c] != 0, 0, KB);
      if (threadIdx.x % kLanes == 0) ws.p.y[int64_t(pair[c]) * H + n0 + r] = weight[c] * v;
    }
  }
}

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
  moe_ws9::gate_up_tile<C, FORCE>(a, ws, tile, [] { return col_index<OVL>(); }, smem, rg, xoff, colmul, tok, xflag, wflag,
                                  rref);
  if constexpr (OVL) {
    __threadfence();  // this thread's a8 / as / aflag stores before the tile's count
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(ws2.ready + bt, 1);
  }
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
  const int bt = tile_index<OVL>();
  if constexpr (PRO) moe_wg8::dep_release();  // the combine may be scheduled once every down block started
  if (bt >= *ws.p.n_tiles) return;
  const TileE tile = tile_of(ws2, bt);
  if constexpr (OVL) {
    // The tile's gate_up blocks (I / (G1::BM / 2) of them) have stored its a8 rows.
    if (threadIdx.x == 0) {
      while (atomicAdd(ws2.ready + bt, 0) < ws2.need) __nanosleep(256);
      __threadfence();
    }
    __syncthreads();
  }
  moe_ws9::down_tile<C, FORCE, OVL, true>(a, ws, tile, [] { return col_index<OVL>(); }, smem, rg, xoff, pair, weight,
                                          aflg, wflag, rref);
}


// The whole layer: moe_fp8r's quantizer, route_even (tiles of up to BN rows), gate_up, down, moe_pipeline's combine.
template <class G1, class G2, bool OVL, bool PRO = false, int FORCE = 0>
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
  constexpr int sm1 = moe_fp8r::gate_up_smem<G1>(), sm2 = G2::kPipeBytes;
  moe_wg8::allow_smem(gate_up<G1, FORCE, OVL, PRO>, sm1);
  moe_wg8::allow_smem(down<G2, FORCE, OVL, PRO>, sm2);
  if constexpr (OVL) {
    moe_rows8::launch_ex(gate_up<G1, FORCE, OVL, PRO>, dim3(cols1, tiles), dim3(G1::kThreads), size_t(sm1), PRO,
                         "fp8 gate_up", a, ws2);
    moe_rows8::launch_ex(down<G2, FORCE, OVL, PRO>, dim3(cols2, tiles), dim3(G2::kThreads), size_t(sm2), true,
                         "fp8 down", a, ws2);
  } else {
    gate_up<G1, FORCE, OVL, PRO><<<dim3(tiles, cols1), G1::kThreads, sm1>>>(a, ws2);
    moe_pipeline::check(hipGetLastError(), "fp8 gate_up");
    down<G2, FORCE, OVL, PRO><<<dim3(tiles, cols2), G2::kThreads, sm2>>>(a, ws2);
    moe_pipeline::check(hipGetLastError(), "fp8 down");
  }
  if constexpr (PRO) {
    constexpr int kThreadsC = 256;
    const int64_t n = s.M * s.H;
    using YE = std::remove_pointer_t<decltype(ws.p.y)>;
    constexpr int kYV = sizeof(YE) == 4 ? 1 : 8;  // outputs a combine thread sums (moe_pipeline's combine_rows)
    moe_rows8::launch_ex(combine_dep, dim3(unsigned((n / kYV + kThreadsC - 1) / kThreadsC)), dim3(kThreadsC), 0, true,
                         "fp8 combine", static_cast<const YE*>(ws.p.y), int64_t(s.M), int(s.H), a.cfg.total_top_k, a.out);
  } else {
    moe_pipeline::launch_combine(a, ws.p);
  }
}

// The path as one unit for a composed variant: the shapes of moe_fp8r2::Path (the 64-row shapes), moe_fp8r2's OVL + PRO
// launch chain; a forced fix-up (FORCE, test only) runs without the prologue launch (its quantizer does not force).
template <class A, class B, int FORCE = 0>
struct PathOf {
  static bool applies(const MoeConfig& c) {
    // The slot-unrolled mainloop (BIS 512) runs whole rounds of STAGES stages.
    const bool rounds = (c.d_hidden / 32 / A::KS) % A::STAGES == 0 && (c.d_expert / 32 / B::KS) % B::STAGES == 0;
    return c.bs * c.n_experts_per_token / c.n_routed_experts > 40 && moe_fp8r::supports(c) && rounds;
  }
  static size_t workspace_bytes(const MoeConfig& c) { return carve2(c, A::BN, nullptr, nullptr); }
  static void launch(const MoeArgs& a) { moe_ws9::launch<A, B, true, FORCE == 0, FORCE>(a); }
};
using G9 = Cfg<8, 2, 4, 4, 2, true, 160, 512>;
using Path = PathOf<G9, G9>;
#endif  // MOE_WG8_HOST

}  // namespace
}  // namespace moe_ws9
