// moe_w36: the 32-row MoE shapes (E 257 bs 512, E 33 bs 128) as moe_w32's path (docs/perf.md, section "moe_mxfp4 v31":
// fp8 e4m3 wgmma with small N, OVL down, combine after down) with (helper moe-w32b, session 9; docs/perf-moe-w32b.md):
//  - decode8k: moe_fp8r::decode8 with the sign selector bytes from a register of 0x01 bytes (prmt of that register
//    with itself), so the raw weight word is the selector: 9 instead of 10 instructions a word, the same bytes.
//    mainloop_k / down_run_k / down_comb_k: copies of moe_fp8r::mainloop, moe_wide27::down_run and moe_w32::down_comb
//    with it (GML 0, DSW -1).
//  - route_fast (quantize_route36, FR): moe_tiled::route_block's tiles with each thread's pair loads issued before its
//    atomics and a shuffle scan (ncu: prologue 12.2 -> 10.8 us at E 257 bs 512).
//  - G27d: gate_up's copies STAGES - 2 stages ahead, so its stage barriers no longer drain the wgmma groups (v30's GND).
//  Path (v36) = all three: E 257 bs 512 361.2 us (v33 366.6), E 33 bs 128 137.9 (139.0) in the final call.
//  - measured and not used by Path (docs/perf-moe-w32b.md, calls 1-2): mainloop36 (GML 1) / down_run36 (DSW > 0), the
//    main loops on mbarriers: each warp's 32 weight rows (contiguous a 16-row group in the shuffled layout) and its
//    256-byte chunk of the shuffled scales copied by one lane with cp.async.bulk onto the warp's own slot ring, the
//    activations by per-thread cp.async two stages ahead onto one mbarrier a slot, no block barrier in the loop.
//    3-5 us slower than v33 on both shapes (the loop is issue-bound once the barriers are gone, and it has more
//    instructions a stage); with 5 weight slots a warp (L36<G27, 5, 5>, 110 KB) its output was wrong (not found).
// Same decode bytes, windows, wgmma order, epilogues and y stores (moe_tiled::store_weighted_rows) as moe_w32:
// bit-identical output. NVIDIA only (MOE_WG8_HOST) like moe_wide27.h.
#pragma once
#include <algorithm>
#include <utility>

#include "problems/common/moe_w32.h"

namespace moe_w36 {
namespace {

using moe_pipeline::Tile;
using Ws = moe_fp8r::Ws;
using moe_wide27::Split;

#if defined(MOE_WG8_HOST)
using moe_tile::cp_async;
using moe_tile::cp_commit;
using moe_tile::cp_wait;
constexpr int kLanes = moe_tile::kMmaLanes;

// Shared-memory layout of the mainloop for a moe_wide27::Cfg C (MT 2, KS 4): per warp SW slots of [MT][KS][256]
// weights + the 256-byte scale chunk, then SX activation slots ([BN rows] core-matrix layout, as moe_wide27's kX).
template <class C, int SW_, int SX_, bool WA_ = false>
struct L36 {
  static constexpr int SW = SW_, SX = SX_;
  static constexpr bool WA = WA_;  // the activation slots' arrivals: one a warp (lane 0 after __syncwarp), else a thread
  static constexpr int kGroupBytes = C::KS * 256;
  static constexpr int kWarpW = C::MT * kGroupBytes;
  static constexpr int kWarpSlot = kWarpW + 256;
  static constexpr int kX = C::WM * SW * kWarpSlot;
  static constexpr int kXStage = C::BN * C::KS * 32;
  static constexpr int kPipeBytes = kX + SX * kXStage;
  static constexpr int kBars = SX + C::WM * SW;  // mbarriers (8 bytes each)
  static_assert(C::MT == 2 && C::KS == 4, "a warp's rows are one 32-row scale chunk; a stage is half a chunk's columns");
  static_assert(SX >= 5, "activation slot reuse distance (see mainloop36)");
  static_assert(kX % 128 == 0 && kXStage % 128 == 0, "alignment");
};

#if defined(MOE_WG8_DEVICE)
__device__ inline uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
__device__ inline void mbar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ inline void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
__device__ inline void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ inline void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ inline void bulk_copy(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}
__device__ inline void mbar_wait(uint32_t bar, uint32_t parity) {
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

// moe_fp8r::decode8 with the sign bytes from a register of 0x01 bytes (prmt of that register with itself: every
// selected byte is 0x01, negative nibbles (selector bit 3) replicate its bit 7: 0x00), so the selector is the raw
// word instead of the word | 0x44444444: one LOP3 less a word, the same bytes.
#if defined(MOE_WG8_DEVICE)
__device__ __forceinline__ uint32_t ones_reg() {
  uint32_t k;
  asm volatile("mov.b32 %0, 0x01010101;\n" : "=r"(k));
  return k;
}
__device__ __forceinline__ void decode8k(uint32_t w, uint32_t t0, uint32_t t1, uint32_t ones, uint32_t& lo, uint32_t& hi) {
  const uint32_t mag = w & 0x77777777u;
  const uint32_t ql = moe_fp8r::prmt(t0, t1, mag), qh = moe_fp8r::prmt(t0, t1, mag >> 16);
  uint32_t sl, sh;
  asm("prmt.b32 %0, %1, 0x01010101, %2;" : "=r"(sl) : "r"(ones), "r"(w));
  asm("prmt.b32 %0, %1, 0x01010101, %2;" : "=r"(sh) : "r"(ones), "r"(w >> 16));
  lo = ql - (sl << 7);
  hi = qh - (sh << 7);
}
#endif

// Called by every thread before the first barrier of the block: thread 0 initialises the mbarriers.
template <class C, class L>
__device__ inline void init_bars(uint64_t* bars) {
#if defined(MOE_WG8_DEVICE)
  if (threadIdx.x == 0) {
    const uint32_t b = smem_u32(bars);
    for (int i = 0; i < L::SX; ++i) mbar_init(b + 8 * i, L::WA ? C::kThreads / kLanes : C::kThreads);
    for (int i = L::SX; i < L::kBars; ++i) mbar_init(b + 8 * i, 1);
    mbar_init_fence();
  }
#else
  (void)bars;
#endif
}

// acc (+)= A (the BM weight rows of groups rg[], decoded) x B (NCOLS activation rows at x + xoff_row[c]) over the KBp
// k-blocks [kbs, kbs + KBp) of rows with KB k-blocks (w: the expert's shuffled weights, offset to kbs; x: offset to
// kbs too; wss_w: this warp's 32-row block of the shuffled scales, chunk 0). lo / chk as moe_fp8r::mainloop.
// bars: L::kBars mbarriers, initialised (init_bars) and visible (a barrier) before the call.
template <class C, class L, int NCOLS>
__device__ inline void mainloop36(const uint8_t* w, const uint8_t* wss_w, int kbs, const uint8_t* x, int KB, int KBp,
                                  const int* rg, const uint32_t* xoff_row, uint8_t* smem, uint64_t* bars,
                                  float (&acc)[C::MT][C::NG][4], int (&lo)[C::MT][2], uint32_t (&chk)[C::MT][2]) {
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
  const uint32_t smem_s = smem_u32(smem);
  const uint32_t xbar0 = smem_u32(bars), wbar0 = xbar0 + 8u * uint32_t(L::SX + wm * L::SW);
  const uint32_t wslot0 = smem_s + uint32_t(wm * L::SW * L::kWarpSlot);

  // Activation chunk i = tid + n kThreads: row c = (i / (8 kXChunks)) 8 + i % 8, chunk ch = (i / 8) % kXChunks.
  auto xrow_of = [&](int i) { return (i / (8 * C::kXChunks)) * 8 + i % 8; };
  auto xch_of = [&](int i) { return (i / 8) % C::kXChunks; };
  uint32_t xoff[C::kXPer];
#pragma unroll
  for (int n = 0; n < C::kXPer; ++n) {
    const int i = tid + n * C::kThreads;
    xoff[n] = xoff_row[xrow_of(i)] + uint32_t(xch_of(i)) * 16u;
  }
  auto load_x = [&](int ks) {
    uint8_t* st = smem + L::kX + (ks % L::SX) * L::kXStage;
    const uint8_t* xb = x + uint32_t(ks * C::KS) * 32u;
#pragma unroll
    for (int n = 0; n < C::kXPer; ++n) {
      const int i = tid + n * C::kThreads, c = xrow_of(i);
      if (NCOLS == C::BN || c < NCOLS)
        cp_async<16>(st + (c / 8) * C::kSBO + xch_of(i) * 128 + (c % 8) * 16, xb + xoff[n]);
    }
  };
  // The warp's weights (MT groups x KS k-blocks, contiguous a group) and its scale chunk of stage ks (lane 0).
  uint32_t wgo[C::MT];  // the warp's groups' byte offsets
#pragma unroll
  for (int m = 0; m < C::MT; ++m) wgo[m] = uint32_t(rg[wm * C::MT + m]) * rg_bytes;
  auto load_w = [&](int ks) {
    if (lane == 0) {
      const int slot = ks % L::SW;
      const uint32_t dst = wslot0 + uint32_t(slot * L::kWarpSlot), bar = wbar0 + 8u * uint32_t(slot);
      mbar_expect_tx(bar, uint32_t(L::kWarpSlot));
#pragma unroll
      for (int m = 0; m < C::MT; ++m)
        bulk_copy(dst + m * L::kGroupBytes, w + wgo[m] + uint32_t(ks * C::KS) * 256u,
                  uint32_t(L::kGroupBytes), bar);
      bulk_copy(dst + L::kWarpW, wss_w + uint32_t((kbs + ks * C::KS) / 8) * 256u, 256u, bar);
    }
  };

  uint32_t a[C::NB][C::MT][4];
  uint32_t c0[C::MT][2], c1[C::MT][2];
  const uint32_t kOnes = ones_reg();

  // prologue: the weight ring full, activations of stages 0 and 1 (stage 0's arrival now, stage 1's at stage 0)
#pragma unroll
  for (int s = 0; s < L::SW; ++s)
    if (s < nk) load_w(s);
  load_x(0);
  if (nk > 1) load_x(1);
  cp_commit();
  cp_wait<0>();
  moe_wg8::proxy_fence();
  auto arrive_x = [&](uint32_t bar) {
    if constexpr (L::WA) {
      __syncwarp();
      if (lane == 0) mbar_arrive(bar);
    } else {
      mbar_arrive(bar);
    }
  };
  arrive_x(xbar0);

  for (int ks = 0; ks < nk; ++ks) {
    // this thread's activation copies of stage ks + 1 (issued a stage ago) landed -> visible to wgmma -> arrive
    cp_wait<0>();
    moe_wg8::proxy_fence();
    if (ks + 1 < nk) arrive_x(xbar0 + 8u * uint32_t((ks + 1) % L::SX));
    mbar_wait(xbar0 + 8u * uint32_t(ks % L::SX), uint32_t((ks / L::SX) & 1));
    // Every thread passed stage ks - 1's top: every warp retired its stage ks - 3 wgmmas, whose slot is (ks + 2) % SX.
    if (ks + 2 < nk) load_x(ks + 2);
    cp_commit();
    // the warp finished reading stage ks - 1's weights and scales (ld.shared, consumed): refill that slot
    if (ks >= 1 && ks - 1 + L::SW < nk) {
      __syncwarp();
      load_w(ks - 1 + L::SW);
    }
    const int wslot = ks % L::SW;
    mbar_wait(wbar0 + 8u * uint32_t(wslot), uint32_t((ks / L::SW) & 1));
    const uint8_t* st = smem + (wm * L::SW + wslot) * L::kWarpSlot;
    const uint64_t desc0 = moe_fp8r::smem_desc(smem_s + uint32_t(L::kX + (ks % L::SX) * L::kXStage), C::kSBO);
    // scale words: row i = g + 8 h of the 32-row chunk, column j: bytes (k 2 + m) = rows 16 m + i, columns 4 k + j
    uint32_t sw[2][4];
    const uint8_t* sc = st + L::kWarpW;
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int j = 0; j < 4; ++j) sw[h][j] = *reinterpret_cast<const uint32_t*>(sc + (j * 16 + g + 8 * h) * 4);
    const uint32_t khalf = uint32_t(((kbs + ks * C::KS) / 4) & 1);  // this stage's 4 columns of the 8-column chunk
    if (ks == 0) {
      // Each row's window from its first stage: the largest byte at d = 3, window d in [-5, 6].
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        uint32_t q = __vmaxu4(__vmaxu4(sw[h][0], sw[h][1]), __vmaxu4(sw[h][2], sw[h][3]));
#pragma unroll
        for (int m = 0; m < C::MT; ++m) {
          lo[m][h] = int((q >> (8u * (2u * khalf + uint32_t(m)))) & 0xFFu) - 8;
          c0[m][h] = moe_fp8r::kT0 - uint32_t(lo[m][h] + 5) * moe_fp8r::kK0;
          c1[m][h] = moe_fp8r::kT1 - uint32_t(lo[m][h] + 5) * moe_fp8r::kK1;
        }
      }
    }
    const uint32_t sel0 = 0x4440u + 2u * khalf;
    uint32_t wn[C::MT][2];
    auto read_words = [&](int u) {
#pragma unroll
      for (int m = 0; m < C::MT; ++m) {
        const uint8_t* kb = st + (m * C::KS + u) * 256;
        wn[m][0] = *reinterpret_cast<const uint32_t*>(kb + 4 * lane);
        wn[m][1] = *reinterpret_cast<const uint32_t*>(kb + 128 + 4 * lane);
      }
    };
    read_words(0);
    auto kblock = [&](auto u_tag) {
      constexpr int u = decltype(u_tag)::value;
      constexpr int b = u % C::NB;
      uint32_t wc[C::MT][2];
#pragma unroll
      for (int m = 0; m < C::MT; ++m) {
        wc[m][0] = wn[m][0];
        wc[m][1] = wn[m][1];
      }
#pragma unroll
      for (int m = 0; m < C::MT; ++m) {
        uint32_t t0[2], t1[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint32_t bb = __byte_perm(sw[h][u], 0u, sel0 + uint32_t(m));
          t0[h] = bb * moe_fp8r::kK0 + c0[m][h];
          t1[h] = bb * moe_fp8r::kK1 + c1[m][h];
          chk[m][h] = max(chk[m][h], bb - uint32_t(lo[m][h]));
        }
        decode8k(wc[m][0], t0[0], t1[0], kOnes, a[b][m][0], a[b][m][2]);
        decode8k(wc[m][1], t0[1], t1[1], kOnes, a[b][m][1], a[b][m][3]);
      }
      moe_wg8::wg_fence();
#pragma unroll
      for (int m = 0; m < C::MT; ++m)
        moe_fp8r::wgmma_e4m3<NCOLS, C::NG>(acc[m], a[b][m], desc0 + uint64_t(u * 256 / 16));
      moe_wg8::wg_commit();
      if constexpr (u + 1 < C::KS) read_words(u + 1);
      moe_wg8::wg_wait<C::NB - 1>();
    };
    [&]<int... U>(std::integer_sequence<int, U...>) {
      (kblock(std::integral_constant<int, U>{}), ...);
    }(std::make_integer_sequence<int, C::KS>{});
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
  (void)w, (void)wss_w, (void)kbs, (void)x, (void)KB, (void)KBp, (void)rg, (void)xoff_row, (void)smem, (void)bars;
#if defined(__CUDA_ARCH__)
  __trap();  // built without sm_90a features: never dispatched to (needs sm_90a)
#endif
#endif
}


// moe_fp8r::mainloop (the per-thread cp.async pipeline with stage barriers) with decode8k.
template <class C, int NCOLS>
__device__ inline void mainloop_k(const uint8_t* w, const uint8_t* wsc, const uint8_t* x, int KB, int KBp, const int* rg,
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
  using O = moe_fp8r::LoopOpts<C>;
  uint64_t pol = 0;
  if constexpr (O::EF) pol = moe_fp8r::policy_evict_first();
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
        if constexpr (O::EF) moe_fp8r::cp_async16_ef(st + C::kW + (tid + n * C::kThreads) * 16, wb + woff[n], pol);
        else cp_async<16>(st + C::kW + (tid + n * C::kThreads) * 16, wb + woff[n]);
      }
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
  const uint32_t kOnes = ones_reg();
  uint32_t a[C::NB][C::MT][4];
  uint32_t c0[C::MT][2], c1[C::MT][2];

  auto body = [&](int slot, int next_slot, int next_kb, bool has_next) {
    const uint8_t* st = smem + slot * C::kStageBytes;
    const uint64_t desc0 = moe_fp8r::smem_desc(smem_s + slot * C::kStageBytes + C::kX, C::kSBO);
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
          t0[h] = bb * moe_fp8r::kK0 + c0[m][h];
          t1[h] = bb * moe_fp8r::kK1 + c1[m][h];
          chk[m][h] = max(chk[m][h], bb - uint32_t(lo[m][h]));
        }
        decode8k(w0, t0[0], t1[0], kOnes, a[b][m][0], a[b][m][2]);
        decode8k(w1, t0[1], t1[1], kOnes, a[b][m][1], a[b][m][3]);
      }
      moe_wg8::wg_fence();
#pragma unroll
      for (int m = 0; m < C::MT; ++m) moe_fp8r::wgmma_e4m3<NCOLS, C::NG>(acc[m], a[b][m], desc0 + uint64_t(u * 256 / 16));
      moe_wg8::wg_commit();
      if constexpr (C::PF && u + 1 < C::KS) read_words(u + 1);
      if (O::kNoBranch || has_next) load_part(u_tag, next_slot, next_kb);
      moe_wg8::wg_wait<C::NB - 1>();
    };
    [&]<int... U>(std::integer_sequence<int, U...>) {
      (kblock(std::integral_constant<int, U>{}), ...);
    }(std::make_integer_sequence<int, C::KS>{});
  };

  constexpr int kDist = moe_fp8r::LoopDist<C>::value;
  static_assert(kDist >= 1 && kDist <= C::STAGES - 1 && (kDist == C::STAGES - 1 || C::NB - 1 <= C::KS),
                "copy distance; without the drain the groups in flight at a stage barrier must be the last stage's");
#pragma unroll
  for (int s = 0; s < kDist; ++s) {
    if (s < nk) load_part(std::integral_constant<int, -1>{}, s, s * C::KS);
    cp_commit();
  }
  for (int ks = 0; ks < nk; ++ks) {
    cp_wait<kDist - 1>();  // this thread's copies of stage ks landed
    if constexpr (kDist == C::STAGES - 1) moe_wg8::wg_wait<0>();  // this warp's wgmma reads of stage ks - 1 are done
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
          c0[m][h] = moe_fp8r::kT0 - uint32_t(lo[m][h] + 5) * moe_fp8r::kK0;
          c1[m][h] = moe_fp8r::kT1 - uint32_t(lo[m][h] + 5) * moe_fp8r::kK1;
        }
    }
    const int next = ks + kDist;
    body(slot, next % C::STAGES, (O::kClampNext ? (next < nk ? next : nk - 1) : next) * C::KS, next < nk);
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
  (void)w, (void)wsc, (void)x, (void)KB, (void)rg, (void)xoff_row, (void)smem;
#if defined(__CUDA_ARCH__)
  __trap();  // built without sm_90a features: never dispatched to (needs sm_90a)
#endif
#endif
}


// moe_tiled::route_block's result (tiles in expert order, an expert's pairs in its tiles' rows in atomic order, padding
// rows -1 with clear(r), n_tiles) with each thread's pair loads issued before any atomic (route_block's loops wait for
// one load an iteration) and a shuffle scan (route_block: log2(blockDim) x 2 barriers). blockDim >= E, a multiple of
// the warp size; smem: 2 E + 32 ints.
template <class Clear>
__device__ inline void route_fast(const MoeArgs& a, const moe_pipeline::Workspace& ws, int P, int E, int tile_rows,
                                  int rows_max, int tid, int* smem, Clear clear) {
  constexpr int kPer = 8;
  int* count = smem;
  int* row_off = smem + E;
  int* wsum = smem + 2 * E;
  const int nt = blockDim.x;
  int ex[kPer];
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int p = tid + i * nt;
    ex[i] = p < P ? a.topk_ids[p] : -1;
  }
  for (int e = tid; e < E; e += nt) count[e] = 0;
  for (int r = tid; r < rows_max; r += nt) {
    ws.sorted_pair[r] = -1;
    clear(r);
  }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < kPer; ++i)
    if (ex[i] >= 0 && ex[i] < E) atomicAdd(&count[ex[i]], 1);
  for (int p = tid + kPer * nt; p < P; p += nt) {
    const int e = a.topk_ids[p];
    if (e >= 0 && e < E) atomicAdd(&count[e], 1);
  }
  __syncthreads();
  const int mine = tid < E ? (count[tid] + tile_rows - 1) / tile_rows : 0;
  const int lane = tid % kLanes, warp = tid / kLanes, nw = nt / kLanes;
  int inc = mine;
#pragma unroll
  for (int o = 1; o < kLanes; o <<= 1) {
    const int v = __shfl_up_sync(0xffffffffu, inc, o);
    if (lane >= o) inc += v;
  }
  if (lane == kLanes - 1) wsum[warp] = inc;
  __syncthreads();
  if (warp == 0) {
    int v = lane < nw ? wsum[lane] : 0;
#pragma unroll
    for (int o = 1; o < kLanes; o <<= 1) {
      const int u = __shfl_up_sync(0xffffffffu, v, o);
      if (lane >= o) v += u;
    }
    if (lane < nw) wsum[lane] = v;
  }
  __syncthreads();
  const int incl = inc + (warp > 0 ? wsum[warp - 1] : 0);
  if (tid < E) {
    const int first = incl - mine;
    row_off[tid] = first * tile_rows;
    for (int i = 0; i < mine; ++i) ws.tiles[first + i] = Tile{tid, (first + i) * tile_rows};
    count[tid] = 0;  // now the fill cursor
  }
  if (tid == nt - 1) *ws.n_tiles = incl;
  __syncthreads();
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int e = ex[i];
    if (e >= 0 && e < E) ws.sorted_pair[row_off[e] + atomicAdd(&count[e], 1)] = tid + i * nt;
  }
  for (int p = tid + kPer * nt; p < P; p += nt) {
    const int e = a.topk_ids[p];
    if (e >= 0 && e < E) ws.sorted_pair[row_off[e] + atomicAdd(&count[e], 1)] = p;
  }
}

template <int FORCE, int QT>
__global__ __launch_bounds__(moe_wide27::kPrologueThreads) void quantize_route36(MoeArgs a, Ws ws, int P, int E, int T,
                                                                                 int rows_max, int32_t* cnt, int n_cnt) {
  moe_wg8::dep_release();
  extern __shared__ int smem_route[];
  const int tid = threadIdx.x;
  if (blockIdx.x == 0) {
    int32_t* af = ws.aflag;
    route_fast(a, ws.p, P, E, T, rows_max, tid, smem_route, [af](int r) { af[r] = 0; });
    for (int i = tid; i < n_cnt; i += blockDim.x) cnt[i] = 0;
    return;
  }
  constexpr int kQThreads = QT, kQTokens = moe_wide27::kPrologueThreads / QT;
  static_assert(moe_wide27::kPrologueThreads % QT == 0 && QT >= moe_wide27::kQThreadsMin, "whole tokens a block");
  constexpr int kWarps = kQThreads / kLanes, kMaxJ = 4;
  __shared__ int red[kQTokens][2][kWarps];
  const int sub = tid / kQThreads, st = tid % kQThreads;
  const int t = (int(blockIdx.x) - 1) * kQTokens + sub;
  const int M = a.cfg.bs, H = a.cfg.d_hidden, n8 = H / 8;
  const bool live = t < M;
  const uint16_t* hrow = a.hidden_states + int64_t(live ? t : 0) * H;
  uint32_t cw[kMaxJ];
  int s[kMaxJ];
  int mx, mn;
  moe_fp8r::token_codes<kQThreads>(hrow, st, n8, cw, s, mx, mn);
  for (int o = kLanes / 2; o > 0; o >>= 1) {
    mx = max(mx, __shfl_xor(mx, o));
    mn = min(mn, __shfl_xor(mn, o));
  }
  if (st % kLanes == 0) {
    red[sub][0][st / kLanes] = mx;
    red[sub][1][st / kLanes] = mn;
  }
  __syncthreads();
  if (!live) return;
  mx = red[sub][0][0];
  mn = red[sub][1][0];
  for (int w = 1; w < kWarps; ++w) {
    mx = max(mx, red[sub][0][w]);
    mn = min(mn, red[sub][1][w]);
  }
  const bool any = mx > -100000;
  const bool flag = (any && mx - mn > 14) || (FORCE && t % 37 == 5);
  const int R = any ? mx - 6 : 0;
  moe_fp8r::token_store<kQThreads>(cw, s, st, n8, flag, R, ws.p.x8, ws.p.xs, t, H);
  if (st == 0) {
    ws.xr[2 * t] = R;
    ws.xr[2 * t + 1] = flag;
  }
}

template <class C, class L>
constexpr int gate_up_smem() {
  return L::kPipeBytes > C::BN * (C::BM + 4) * 4 ? L::kPipeBytes : C::BN * (C::BM + 4) * 4;
}

// moe_wide27::gate_up_block (A16 off) on mainloop36: block (tile bt, column block by of nby, split-K part z).
template <class C, class L, int FORCE, int S, int GML>
__device__ inline bool gate_up_block(const MoeArgs& a, const Ws& ws, const Split& sp, int bt, int by, int nby, int z) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ int rg[C::BM / 16];
  __shared__ uint32_t xoff[C::BN];
  __shared__ float colmul[C::BN];
  __shared__ int tok[C::BN];
  __shared__ int xflag[C::BN];
  __shared__ int wflag[C::BM];
  __shared__ int rref[C::BM];
  __shared__ int last;
  __shared__ __align__(8) uint64_t bars[L::kBars];
  moe_wg8::dep_wait();
  moe_wg8::dep_release();
  const int n_tiles = *ws.p.n_tiles;
  if (bt >= n_tiles) return false;
  const Tile tile = ws.p.tiles[n_tiles - 1 - bt];
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, T = a.cfg.total_top_k, KB = H / 32;
  constexpr int kHalf = C::BM / 2;
  const int n0 = by * kHalf;
  for (int i = threadIdx.x; i < C::BM / 16; i += C::kThreads) rg[i] = (i < kHalf / 16 ? n0 : I + n0 - kHalf) / 16 + i;
  if constexpr (GML == 1) init_bars<C, L>(bars);
  bool real = false;
  if (int(threadIdx.x) < C::BN) {
    const int c = threadIdx.x;
    const int p = ws.p.sorted_pair[tile.row0 + c];
    const int token = (p >= 0 ? p : ws.p.sorted_pair[tile.row0]) / T;
    xoff[c] = uint32_t(token) * uint32_t(H);
    colmul[c] = numerics::exp2_f32(ws.xr[2 * token]);
    tok[c] = p >= 0 ? token : -1;
    xflag[c] = p >= 0 && ws.xr[2 * token + 1];
    real = p >= 0;
  }
  const int nreal = __syncthreads_count(real);
  float acc[C::MT][C::NG][4];
  const int KBp = KB / S;
  const uint8_t* wq = a.gate_up_weight_shuffled + int64_t(tile.expert) * 2 * I * (H / 2) + z * KBp * 256;
  // this warp's 32-row block of the shuffled scales ([pad256(rows)][pad8(KB)] in 32 x 8 chunks of 256 bytes)
  const uint8_t* wss_w = nullptr;  // GML 1 only (it reads gate_up_weight_scale_shuffled)
  if constexpr (GML == 1) {
    const int wm = int(threadIdx.x) / kLanes;
    const int64_t srow = int64_t(tile.expert) * 2 * I + int64_t(rg[wm * C::MT]) * 16;
    wss_w = a.gate_up_weight_scale_shuffled + (srow / 32) * int64_t((KB + 7) / 8) * 256;
  }
  const uint8_t* wsc = a.gate_up_weight_scale + int64_t(tile.expert) * 2 * I * KB + z * KBp;
  bool done = false;
  moe_wide27::dispatch_cols<C>(nreal, [&](auto n_tag) {
    constexpr int NC = decltype(n_tag)::value;
    {
      int lo[C::MT][2];
      uint32_t chk[C::MT][2];
      if constexpr (GML == 1)
        mainloop36<C, L, NC>(wq, wss_w, z * KBp, ws.p.x8 + z * KBp * 32, KB, KBp, rg, xoff, smem, bars, acc, lo, chk);
      else
        mainloop_k<C, NC>(wq, wsc, ws.p.x8 + z * KBp * 32, KB, KBp, rg, xoff, smem, acc, lo, chk);
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
    if constexpr (S > 1) {
      const moe_wide16::AccIndex<C> ixs;
#pragma unroll
      for (int m = 0; m < C::MT; ++m)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float rowmul = numerics::exp2_f32(rref[ixs.row(m, 2 * h)]);
#pragma unroll
          for (int j = 0; j < NC / 8; ++j) {
            acc[m][j][2 * h] *= rowmul;
            acc[m][j][2 * h + 1] *= rowmul;
          }
        }
      const size_t blk = size_t(bt) * nby + by;
      constexpr int kVec = C::MT * C::NG * C::kThreads;  // float4 a part
      float4* parts = reinterpret_cast<float4*>(sp.part) + blk * S * kVec;
      const int tid = threadIdx.x;
#pragma unroll
      for (int m = 0; m < C::MT; ++m)
#pragma unroll
        for (int j = 0; j < NC / 8; ++j)
          parts[z * kVec + (m * C::NG + j) * C::kThreads + tid] =
              make_float4(acc[m][j][0], acc[m][j][1], acc[m][j][2], acc[m][j][3]);
      int32_t* pf = sp.pflag + blk * S * C::BM;
      for (int r = tid; r < C::BM; r += C::kThreads) pf[z * C::BM + r] = wflag[r];
      __threadfence();
      __syncthreads();
      if (tid == 0) last = atomicAdd(&sp.cnt[blk], 1) == S - 1;
      __syncthreads();
      if (!last) {
        done = true;
        return;
      }
      __threadfence();
#pragma unroll
      for (int m = 0; m < C::MT; ++m)
#pragma unroll
        for (int j = 0; j < NC / 8; ++j) {
          const float4 own = make_float4(acc[m][j][0], acc[m][j][1], acc[m][j][2], acc[m][j][3]);
          float4 t = z == 0 ? own : __ldcg(parts + (m * C::NG + j) * C::kThreads + tid);
          for (int q = 1; q < S; ++q) {
            const float4 v = q == z ? own : __ldcg(parts + q * kVec + (m * C::NG + j) * C::kThreads + tid);
            t.x += v.x;
            t.y += v.y;
            t.z += v.z;
            t.w += v.w;
          }
          acc[m][j][0] = t.x;
          acc[m][j][1] = t.y;
          acc[m][j][2] = t.z;
          acc[m][j][3] = t.w;
        }
      __syncthreads();  // every thread read rref above
      for (int r = tid; r < C::BM; r += C::kThreads) {
        int f = 0;
        for (int q = 0; q < S; ++q) f |= __ldcg(pf + q * C::BM + r);
        wflag[r] = f;
        rref[r] = 0;  // the parts are scaled already
      }
      if (tid == 0) sp.cnt[blk] = 0;  // ready for the next call (the prologue zeroes it too)
      __syncthreads();
    }
  });
  if (done) return false;
  // (the barrier after the mainloop: the pipeline buffers become the fp32 tile [BN][BM + 4])

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
  if (int(threadIdx.x) < C::BN) mine |= xflag[threadIdx.x] != 0;
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
  static_assert(C::BN * (C::BM / 16) % C::kThreads == 0, "whole passes");
  moe_fp8r::swiglu_requant<C, FORCE>(tile_f, tok, tile.row0, n0, I, ws);  // moe_fp8r's epilogue
  return true;
}

// moe_w32::gate_up on gate_up_block above: tile-major grid (S x column blocks, tiles_max), per-tile counts (OVL).
template <class C, class L, int FORCE, int S, int GML>
__global__ __launch_bounds__(C::kThreads, C::kMinBlocks) void gate_up(MoeArgs a, Ws ws, Split sp, int32_t* ready) {
  const int bx = int(blockIdx.y), nby = int(gridDim.x) / S, by = int(blockIdx.x) % nby;
  if (!gate_up_block<C, L, FORCE, S, GML>(a, ws, sp, bx, by, nby, S > 1 ? int(blockIdx.x) / nby : 0)) return;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(ready + bx, 1);
}

// The down as moe_w32::down_comb (moe_wide27::down_run's work: NS slices of BM rows of one tile a block, OVL wait
// per tile) with the weight stages and their scales (down_weight_scale_shuffled) copied per warp by cp.async.bulk
// onto the warp's mbarrier ring (SW slots), the tile's activations once (cp.async, one fence + barrier), no block
// barrier per stage or slice: the out-of-window fix-up runs per warp on the warp's own rows (its flags are the
// warp's; a flagged column (aflg) is block-uniform). Same decode, window (the slice's first 4 scale bytes a row),
// wgmma order and weighted-row stores as down_run: bit-identical.
template <class C, int SW_>
struct DL36 {
  static constexpr int SW = SW_;
  static constexpr int kGroupBytes = C::KS * 256;
  static constexpr int kWarpW = C::MT * kGroupBytes;
  static constexpr int kWarpSlot = kWarpW + 256;
  static constexpr int kPipeBytes = C::WM * SW * kWarpSlot;  // then the activations [BN][I]
  static constexpr int kBars = C::WM * SW;
  static_assert(C::MT == 2 && C::KS == 4, "a warp's rows are one 32-row scale chunk; a stage is half a chunk's columns");
};
template <class C, class D>
constexpr int down_smem(int I) {
  return D::kPipeBytes + C::BN * I;
}

template <class C, class D, int NCOLS, int FORCE, class Wait>
__device__ inline void down_run36(const MoeArgs& a, const Ws& ws, const Tile& tile, int s0, int s1, const int* pair,
                                  const float* weight, int* aflg, int* rref, int* wflag, uint8_t* smem, uint64_t* bars,
                                  Wait wait) {
#if defined(MOE_WG8_DEVICE)
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, KB = I / 32;
  const int tid = threadIdx.x, lane = tid % kLanes, wm = tid / kLanes;
  const int g = lane / 4;
  const int nk = KB / C::KS;
  const int nf = (s1 - s0) * nk;
  const uint32_t rg_bytes = uint32_t(KB) * 256u;
  // this warp's rows of slice sl: sl BM + wm 32 + [0, 32) of the expert's H rows
  const uint8_t* w = a.down_weight_shuffled + int64_t(tile.expert) * H * (I / 2) + uint32_t(wm * C::MT) * rg_bytes;
  const int nbc = (KB + 7) / 8;  // 8-column chunks a 32-row block of the shuffled scales
  constexpr int kWarpRows = C::MT * 16;  // a warp's weight rows: one 32-row block of the shuffled scales
  const uint8_t* wss = a.down_weight_scale_shuffled + ((int64_t(tile.expert) * H + wm * kWarpRows) / 32) * nbc * 256;
  const uint32_t slice_w = uint32_t(C::BM / 16) * rg_bytes, slice_s = uint32_t(C::BM / 32) * uint32_t(nbc) * 256u;
  uint8_t* act = smem + D::kPipeBytes;
  const uint32_t sbo = uint32_t(I) * 8u;
  const uint32_t smem_s = smem_u32(smem);
  const uint32_t wbar0 = smem_u32(bars) + 8u * uint32_t(wm * D::SW);
  const uint32_t wslot0 = smem_s + uint32_t(wm * D::SW * D::kWarpSlot);
  auto load_w = [&](int f) {
    if (lane == 0) {
      const int sl = s0 + f / nk, q = f % nk, slot = f % D::SW;
      const uint32_t dst = wslot0 + uint32_t(slot * D::kWarpSlot), bar = wbar0 + 8u * uint32_t(slot);
      mbar_expect_tx(bar, uint32_t(D::kWarpSlot));
      const uint8_t* wb = w + uint32_t(sl) * slice_w + uint32_t(q * C::KS) * 256u;
#pragma unroll
      for (int m = 0; m < C::MT; ++m) bulk_copy(dst + m * D::kGroupBytes, wb + uint32_t(m) * rg_bytes, uint32_t(D::kGroupBytes), bar);
      bulk_copy(dst + D::kWarpW, wss + uint32_t(sl) * slice_s + uint32_t(q * C::KS / 8) * 256u, 256u, bar);
    }
  };
  auto load_act = [&]() {
    const int chunks = I / 16;
    const uint8_t* src = ws.p.a8 + int64_t(tile.row0) * I;
    for (int i = tid; i < NCOLS * chunks; i += C::kThreads) {
      const int c = (i / (8 * chunks)) * 8 + i % 8, ch = (i / 8) % chunks;
      cp_async<16>(act + (c / 8) * sbo + ch * 128 + (c % 8) * 16, src + int64_t(c) * I + ch * 16);
    }
  };

  float acc[C::MT][C::NG][4];
  int lo[C::MT][2];
  uint32_t chk[C::MT][2], c0[C::MT][2], c1[C::MT][2];
  auto zero = [&]() {
#pragma unroll
    for (int m = 0; m < C::MT; ++m)
#pragma unroll
      for (int j = 0; j < C::NG; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[m][j][i] = 0.0f;
  };
  zero();
  const uint32_t act_s = smem_u32(act);
  const uint64_t desc_act = moe_fp8r::smem_desc(act_s, sbo);
  uint32_t areg[C::NB][C::MT][4];
  const uint32_t kOnes = ones_reg();

  // weight stages first (they do not depend on gate_up), then the wait, the flags and the activations
#pragma unroll
  for (int s = 0; s < D::SW; ++s)
    if (s < nf) load_w(s);
  wait();
  int flg = 0;
  if (tid < C::BN) {
    aflg[tid] = pair[tid] >= 0 && __ldcg(ws.aflag + tile.row0 + tid);
    flg = aflg[tid];
  }
  load_act();
  cp_commit();
  cp_wait<0>();
  moe_wg8::proxy_fence();
  const bool any_aflag = __syncthreads_or(flg) != 0;  // (also: every thread's activation copies visible)

  const moe_wide16::AccIndex<C> ix;
  int f = 0;
  for (int sl = s0; sl < s1; ++sl) {
    for (int q = 0; q < nk; ++q, ++f) {
      if (f >= 1 && f - 1 + D::SW < nf) {
        __syncwarp();
        load_w(f - 1 + D::SW);
      }
      const int slot = f % D::SW;
      mbar_wait(wbar0 + 8u * uint32_t(slot), uint32_t((f / D::SW) & 1));
      const uint8_t* st = smem + (wm * D::SW + slot) * D::kWarpSlot;
      uint32_t sw[2][4];
      const uint8_t* sc = st + D::kWarpW;
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int j = 0; j < 4; ++j) sw[h][j] = *reinterpret_cast<const uint32_t*>(sc + (j * 16 + g + 8 * h) * 4);
      const uint32_t khalf = uint32_t((q * C::KS / 4) & 1);
      if (q == 0) {  // the slice's window from its first stage (largest byte at d = 3)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint32_t v = __vmaxu4(__vmaxu4(sw[h][0], sw[h][1]), __vmaxu4(sw[h][2], sw[h][3]));
#pragma unroll
          for (int m = 0; m < C::MT; ++m) {
            lo[m][h] = int((v >> (8u * (2u * khalf + uint32_t(m)))) & 0xFFu) - 8;
            c0[m][h] = moe_fp8r::kT0 - uint32_t(lo[m][h] + 5) * moe_fp8r::kK0;
            c1[m][h] = moe_fp8r::kT1 - uint32_t(lo[m][h] + 5) * moe_fp8r::kK1;
            chk[m][h] = 0u;
          }
        }
      }
      const uint32_t sel0 = 0x4440u + 2u * khalf;
      uint32_t wn[C::MT][2];
      auto read_words = [&](int u) {
#pragma unroll
        for (int m = 0; m < C::MT; ++m) {
          const uint8_t* kb = st + (m * C::KS + u) * 256;
          wn[m][0] = *reinterpret_cast<const uint32_t*>(kb + 4 * lane);
          wn[m][1] = *reinterpret_cast<const uint32_t*>(kb + 128 + 4 * lane);
        }
      };
      read_words(0);
      const uint64_t desc0 = desc_act + uint64_t(q * C::KS * 256 / 16);
      auto kblock = [&](auto u_tag) {
        constexpr int u = decltype(u_tag)::value;
        constexpr int b = u % C::NB;
        uint32_t wc[C::MT][2];
#pragma unroll
        for (int m = 0; m < C::MT; ++m) {
          wc[m][0] = wn[m][0];
          wc[m][1] = wn[m][1];
        }
#pragma unroll
        for (int m = 0; m < C::MT; ++m) {
          uint32_t t0[2], t1[2];
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const uint32_t bb = __byte_perm(sw[h][u], 0u, sel0 + uint32_t(m));
            t0[h] = bb * moe_fp8r::kK0 + c0[m][h];
            t1[h] = bb * moe_fp8r::kK1 + c1[m][h];
            chk[m][h] = max(chk[m][h], bb - uint32_t(lo[m][h]));
          }
          decode8k(wc[m][0], t0[0], t1[0], kOnes, areg[b][m][0], areg[b][m][2]);
          decode8k(wc[m][1], t0[1], t1[1], kOnes, areg[b][m][1], areg[b][m][3]);
        }
        moe_wg8::wg_fence();
#pragma unroll
        for (int m = 0; m < C::MT; ++m)
          moe_fp8r::wgmma_e4m3<NCOLS, C::NG>(acc[m], areg[b][m], desc0 + uint64_t(u * 256 / 16));
        moe_wg8::wg_commit();
        if constexpr (u + 1 < C::KS) read_words(u + 1);
        moe_wg8::wg_wait<C::NB - 1>();
      };
      [&]<int... U>(std::integer_sequence<int, U...>) {
        (kblock(std::integral_constant<int, U>{}), ...);
      }(std::make_integer_sequence<int, C::KS>{});
    }
    // The slice's last stage is in: weighted rows out, then its fix-up (this warp's rows).
    moe_wg8::wg_wait<0>();
#pragma unroll
    for (int m = 0; m < C::MT; ++m)
#pragma unroll
      for (int j = 0; j < C::NG; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) moe_wg8::reg_fence(acc[m][j][i]);
    bool bad = false;
#pragma unroll
    for (int m = 0; m < C::MT; ++m)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float rowmul = numerics::exp2_f32(lo[m][h] + 5 - 127);
        bad |= chk[m][h] > 11u || (FORCE && ix.row(m, 2 * h) % 97 == 11);
#pragma unroll
        for (int j = 0; j < C::NG; ++j) {
          acc[m][j][2 * h] *= rowmul;
          acc[m][j][2 * h + 1] *= rowmul;
        }
      }
    const int n0 = sl * C::BM;
    moe_tiled::store_weighted_rows<C>(ix, acc, pair, weight, ws.p.y, H, n0);
    if (__any_sync(0xffffffffu, bad) || any_aflag) {
#pragma unroll
      for (int m = 0; m < C::MT; ++m)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = ix.row(m, 2 * h);
          if (tid % 4 == 0) {
            rref[r] = lo[m][h] + 5 - 127;
            wflag[r] = chk[m][h] > 11u || (FORCE && r % 97 == 11);
          }
        }
      __syncwarp();
      for (int idx = 0; idx < C::BN * kWarpRows; ++idx) {  // (column, this warp's row)
        const int c = idx / kWarpRows, r = wm * kWarpRows + idx % kWarpRows;
        if (pair[c] < 0 || !(wflag[r] || aflg[c])) continue;
        const int64_t n = int64_t(tile.expert) * H + n0 + r;
        const int64_t row = tile.row0 + c;
        const uint8_t *wrow = a.down_weight + n * (I / 2), *srow = a.down_weight_scale + n * KB;
        const float v = moe_fp8r::exact_dot_cg(wrow, srow, ws.p.a8 + row * I, ws.p.as + row * KB, aflg[c] != 0, 0, KB);
        if (lane == 0) ws.p.y[int64_t(pair[c]) * H + n0 + r] = weight[c] * v;
      }
      __syncwarp();
    }
    zero();
  }
#else
  (void)a, (void)ws, (void)tile, (void)s0, (void)s1, (void)pair, (void)weight, (void)aflg;
  (void)rref, (void)wflag, (void)smem, (void)bars, (void)wait;
#if defined(__CUDA_ARCH__)
  __trap();  // built without sm_90a features: never dispatched to (needs sm_90a)
#endif
#endif
}

// moe_w32::down_comb (FC 0) on down_run36.
template <class C, class D, int FORCE>
__global__ __launch_bounds__(C::kThreads, C::kMinBlocks) void down_comb(MoeArgs a, Ws ws, moe_w32::Sync sy, int NS) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ int pair[C::BN];
  __shared__ float weight[C::BN];
  __shared__ int aflg[C::BN];
  __shared__ int wflag[C::BM];
  __shared__ int rref[C::BM];
  __shared__ __align__(8) uint64_t bars[D::kBars];
  moe_wg8::dep_release();  // the combine kernel may be scheduled once every block of this grid started
  const int x = int(blockIdx.x) % sy.tiles_max, g = int(blockIdx.x) / sy.tiles_max;  // group-major
  const int n_tiles = *ws.p.n_tiles;
  const int H = a.cfg.d_hidden;
  if (x >= n_tiles) return;
  const Tile tile = ws.p.tiles[n_tiles - 1 - x];
  const int n_slices = H / C::BM;
  const int s0 = g * NS, s1 = min(n_slices, s0 + NS);
#if defined(MOE_WG8_DEVICE)
  if (threadIdx.x == 0) {
    const uint32_t b = smem_u32(bars);
    for (int i = 0; i < D::kBars; ++i) mbar_init(b + 8 * i, 1);
    mbar_init_fence();
  }
#endif
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
    if (threadIdx.x == 0) moe_w32::spin_until(sy.ready + x, sy.need);
    __syncthreads();
  };
  moe_wide27::dispatch_cols<C>(nreal, [&](auto n_tag) {
    down_run36<C, D, decltype(n_tag)::value, FORCE>(a, ws, tile, s0, s1, pair, weight, aflg, rref, wflag, smem, bars, wait);
  });
}

// moe_w32::Plan (FC 0) with this header's gate_up (layout L).
// moe_wide27::down_run (per-thread cp.async stages + stage barriers) with decode8k.
template <class C, int NCOLS, int FORCE, class Wait, bool CG = false>
__device__ inline void down_run_k(const MoeArgs& a, const Ws& ws, const Tile& tile, int s0, int s1, const int* pair,
                                const float* weight, int* aflg, int* rref, int* wflag, uint8_t* smem, Wait wait) {
#if defined(MOE_WG8_DEVICE)
  using L = moe_wide27::DLayout<C>;
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, KB = I / 32;
  const int tid = threadIdx.x, lane = tid % kLanes, wm = tid / kLanes;
  const int g = lane / 4;
  const int nk = KB / C::KS;
  const int nf = (s1 - s0) * nk;
  const uint32_t rg_bytes = uint32_t(KB) * 256u;
  const uint8_t* w = a.down_weight_shuffled + int64_t(tile.expert) * H * (I / 2);
  const uint8_t* wsc = a.down_weight_scale + int64_t(tile.expert) * H * KB;
  const uint32_t slice_w = uint32_t(C::BM / 16) * rg_bytes, slice_s = uint32_t(C::BM) * uint32_t(KB);
  uint8_t* act = smem + L::kPipeBytes;
  const uint32_t sbo = uint32_t(I) * 8u;  // bytes between 8-row core-matrix groups of act
  uint64_t pol = 0;
  if constexpr (C::EF) pol = moe_fp8r::policy_evict_first();

  uint32_t woff[C::kWPer];
#pragma unroll
  for (int n = 0; n < C::kWPer; ++n) {
    const int i = tid + n * C::kThreads, r = i / (C::KS * 16), ch = i % (C::KS * 16);
    woff[n] = uint32_t(r) * rg_bytes + uint32_t(ch) * 16u;
  }
  const int srow = tid % C::BM;
  const uint32_t soff = uint32_t(srow) * uint32_t(KB);
  auto load = [&](int slot, int sl, int q) {
    uint8_t* st = smem + slot * L::kStageBytes;
    const uint8_t* wb = w + uint32_t(sl) * slice_w + uint32_t(q * C::KS) * 256u;
#pragma unroll
    for (int n = 0; n < C::kWPer; ++n) {
      if constexpr (C::EF) moe_fp8r::cp_async16_ef(st + C::kW + (tid + n * C::kThreads) * 16, wb + woff[n], pol);
      else cp_async<16>(st + C::kW + (tid + n * C::kThreads) * 16, wb + woff[n]);
    }
    if (C::BM == C::kThreads || tid < C::BM)
      cp_async<C::KS>(st + C::kWs + srow * C::KS, wsc + uint32_t(sl) * slice_s + q * C::KS + soff);
  };
  auto load_act = [&]() {
    const int chunks = I / 16;  // 16-byte chunks of a row
    const uint8_t* src = ws.p.a8 + int64_t(tile.row0) * I;
    for (int i = tid; i < NCOLS * chunks; i += C::kThreads) {
      const int c = (i / (8 * chunks)) * 8 + i % 8, ch = (i / 8) % chunks;
      cp_async<16>(act + (c / 8) * sbo + ch * 128 + (c % 8) * 16, src + int64_t(c) * I + ch * 16);
    }
  };

  float acc[C::MT][C::NG][4];
  int lo[C::MT][2];
  uint32_t chk[C::MT][2], c0[C::MT][2], c1[C::MT][2];
  auto zero = [&]() {
#pragma unroll
    for (int m = 0; m < C::MT; ++m)
#pragma unroll
      for (int j = 0; j < C::NG; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[m][j][i] = 0.0f;
  };
  zero();
  const uint32_t act_s = static_cast<uint32_t>(__cvta_generic_to_shared(act));
  const uint64_t desc_act = moe_fp8r::smem_desc(act_s, sbo);
  uint32_t areg[C::NB][C::MT][4];
  const uint32_t kOnes = ones_reg();

  auto body = [&](const uint8_t* st, int q) {
    uint32_t sw[C::MT][2][C::KS / 4];
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
    uint32_t wn[C::MT][2];
    auto read_words = [&](int u) {
#pragma unroll
      for (int m = 0; m < C::MT; ++m) {
        const uint8_t* kb = st + C::kW + ((wm * C::MT + m) * C::KS + u) * 256;
        wn[m][0] = *reinterpret_cast<const uint32_t*>(kb + 4 * lane);
        wn[m][1] = *reinterpret_cast<const uint32_t*>(kb + 128 + 4 * lane);
      }
    };
    read_words(0);
    const uint64_t desc0 = desc_act + uint64_t(q * C::KS * 256 / 16);
    auto kblock = [&](auto u_tag) {
      constexpr int u = decltype(u_tag)::value;
      constexpr int b = u % C::NB;
      uint32_t wc[C::MT][2];
#pragma unroll
      for (int m = 0; m < C::MT; ++m) {
        wc[m][0] = wn[m][0];
        wc[m][1] = wn[m][1];
      }
#pragma unroll
      for (int m = 0; m < C::MT; ++m) {
        uint32_t t0[2], t1[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint32_t bb = __byte_perm(sw[m][h][u / 4], 0u, 0x4440u + (u % 4));
          t0[h] = bb * moe_fp8r::kK0 + c0[m][h];
          t1[h] = bb * moe_fp8r::kK1 + c1[m][h];
          chk[m][h] = max(chk[m][h], bb - uint32_t(lo[m][h]));
        }
        decode8k(wc[m][0], t0[0], t1[0], kOnes, areg[b][m][0], areg[b][m][2]);
        decode8k(wc[m][1], t0[1], t1[1], kOnes, areg[b][m][1], areg[b][m][3]);
      }
      moe_wg8::wg_fence();
#pragma unroll
      for (int m = 0; m < C::MT; ++m) moe_fp8r::wgmma_e4m3<NCOLS, C::NG>(acc[m], areg[b][m], desc0 + uint64_t(u * 256 / 16));
      moe_wg8::wg_commit();
      if constexpr (u + 1 < C::KS) read_words(u + 1);
      moe_wg8::wg_wait<C::NB - 1>();
    };
    [&]<int... U>(std::integer_sequence<int, U...>) {
      (kblock(std::integral_constant<int, U>{}), ...);
    }(std::make_integer_sequence<int, C::KS>{});
  };

  int ld_sl = s0, ld_q = 0;
#pragma unroll
  for (int s = 0; s < C::STAGES - 1; ++s) {
    if (s < nf) {
      load(s, ld_sl, ld_q);
      if (++ld_q == nk) ld_q = 0, ++ld_sl;
    }
    cp_commit();
  }
  wait();
  int flg = 0;
  if (tid < C::BN) {
    aflg[tid] = pair[tid] >= 0 && (CG ? __ldcg(ws.aflag + tile.row0 + tid) : ws.aflag[tile.row0 + tid]);
    flg = aflg[tid];
  }
  const bool any_aflag = __syncthreads_or(flg) != 0;
  load_act();
  cp_commit();

  const moe_wide16::AccIndex<C> ix;
  int f = 0;
  for (int sl = s0; sl < s1; ++sl) {  // (slices outside, stages inside: no accumulator access in a branch)
    for (int q = 0; q < nk; ++q, ++f) {
      if (f == 0) cp_wait<0>();
      else cp_wait<C::STAGES - 2>();
      moe_wg8::wg_wait<0>();
      moe_wg8::proxy_fence();
      __syncthreads();  // step f landed everywhere; step f - 1 no longer read
      const uint8_t* st = smem + (f % C::STAGES) * L::kStageBytes;
      if (f + C::STAGES - 1 < nf) {
        load((f + C::STAGES - 1) % C::STAGES, ld_sl, ld_q);
        if (++ld_q == nk) ld_q = 0, ++ld_sl;
      }
      cp_commit();
      if (q == 0) {  // the slice's window from its first stage (largest byte at d = 3)
#pragma unroll
        for (int m = 0; m < C::MT; ++m)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const uint8_t* p = st + C::kWs + ((wm * C::MT + m) * 16 + g + 8 * h) * C::KS;
            uint32_t v;
            if constexpr (C::KS == 8) {
              const uint2 vv = *reinterpret_cast<const uint2*>(p);
              v = __vmaxu4(vv.x, vv.y);
            } else {
              v = *reinterpret_cast<const uint32_t*>(p);
            }
            v = __vmaxu4(v, v >> 16);
            v = __vmaxu4(v, v >> 8);
            lo[m][h] = int(v & 0xFFu) - 8;
            c0[m][h] = moe_fp8r::kT0 - uint32_t(lo[m][h] + 5) * moe_fp8r::kK0;
            c1[m][h] = moe_fp8r::kT1 - uint32_t(lo[m][h] + 5) * moe_fp8r::kK1;
            chk[m][h] = 0u;
          }
      }
      body(st, q);
    }
    // The slice's last stage is in: weighted rows out, then its fix-up.
    moe_wg8::wg_wait<0>();
#pragma unroll
    for (int m = 0; m < C::MT; ++m)
#pragma unroll
      for (int j = 0; j < C::NG; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) moe_wg8::reg_fence(acc[m][j][i]);
    bool bad = false;
#pragma unroll
    for (int m = 0; m < C::MT; ++m)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float rowmul = numerics::exp2_f32(lo[m][h] + 5 - 127);
        bad |= chk[m][h] > 11u || (FORCE && ix.row(m, 2 * h) % 97 == 11);
#pragma unroll
        for (int j = 0; j < C::NG; ++j) {
          acc[m][j][2 * h] *= rowmul;
          acc[m][j][2 * h + 1] *= rowmul;
        }
      }
    const int n0 = sl * C::BM;
    moe_tiled::store_weighted_rows<C>(ix, acc, pair, weight, ws.p.y, H, n0);
    if (__syncthreads_or(bad || any_aflag)) {
#pragma unroll
      for (int m = 0; m < C::MT; ++m)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = ix.row(m, 2 * h);
          if (tid % 4 == 0) {
            rref[r] = lo[m][h] + 5 - 127;
            wflag[r] = chk[m][h] > 11u || (FORCE && r % 97 == 11);
          }
        }
      __syncthreads();
      const int warp = tid / kLanes;
      for (int idx = warp; idx < C::BN * C::BM; idx += C::kThreads / kLanes) {
        const int c = idx / C::BM, r = idx % C::BM;
        if (pair[c] < 0 || !(wflag[r] || aflg[c])) continue;
        const int64_t n = int64_t(tile.expert) * H + n0 + r;
        const int64_t row = tile.row0 + c;
        const uint8_t *wrow = a.down_weight + n * (I / 2), *srow = a.down_weight_scale + n * KB;
        float v;
        if constexpr (CG) v = moe_fp8r::exact_dot_cg(wrow, srow, ws.p.a8 + row * I, ws.p.as + row * KB, aflg[c] != 0, 0, KB);
        else v = moe_fp8r::exact_dot(wrow, srow, ws.p.a8 + row * I, ws.p.as + row * KB, aflg[c] != 0, 0, KB);
        if (lane == 0) ws.p.y[int64_t(pair[c]) * H + n0 + r] = weight[c] * v;
      }
      __syncthreads();
    }
    zero();
  }
  cp_wait<0>();
#else
  (void)a, (void)ws, (void)tile, (void)s0, (void)s1, (void)pair, (void)weight, (void)aflg;
  (void)rref, (void)wflag, (void)smem;
#if defined(__CUDA_ARCH__)
  __trap();  // built without sm_90a features: never dispatched to (needs sm_90a)
#endif
#endif
}


// moe_w32::down_comb (FC 0) on down_run_k.
template <class C, int FORCE>
__global__ __launch_bounds__(C::kThreads, C::kMinBlocks) void down_comb_k(MoeArgs a, Ws ws, moe_w32::Sync sy, int NS) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ int pair[C::BN];
  __shared__ float weight[C::BN];
  __shared__ int aflg[C::BN];
  __shared__ int wflag[C::BM];
  __shared__ int rref[C::BM];
  moe_wg8::dep_release();
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
    if (threadIdx.x == 0) moe_w32::spin_until(sy.ready + x, sy.need);
    __syncthreads();
  };
  moe_wide27::dispatch_cols<C>(nreal, [&](auto n_tag) {
    down_run_k<C, decltype(n_tag)::value, FORCE, decltype(wait), true>(a, ws, tile, s0, s1, pair, weight, aflg, rref,
                                                                      wflag, smem, wait);
  });
}

// GML: gate_up on mainloop36 (1, layout L) or mainloop_k (0). DSW > 0: the down on down_run36 with DSW weight slots a
// warp; 0: moe_w32's down_comb; -1: down_comb_k (down_run with decode8k).
template <class G1, class L, class G2, int S, int NS, int FORCE = 0, int QT = 1024, int DSW = 0, int GML = 1,
          bool FR = false>
struct Plan {
  using Base = moe_w32::Plan<G1, G2, S, NS, 0, FORCE, QT>;
  static constexpr int T = G1::BN;
  static size_t workspace_bytes(const MoeConfig& c) { return Base::workspace_bytes(c); }
  static bool fits(const MoeConfig& c) {
    if (!Base::fits(c)) return false;
    const int KB = c.d_hidden / 32;
    // the scale chunks of a part start at a multiple of 8 columns; pad256 rows of the shuffled scales
    constexpr int kDsw = DSW > 0 ? DSW : 1;
    if (DSW > 0 && (down_smem<G2, DL36<G2, kDsw>>(c.d_expert) > 113 * 1024 || c.d_hidden % 32 != 0)) return false;
    if constexpr (GML == 0) return true;
    return (KB / S) % 8 == 0 && (2 * c.d_expert) % 32 == 0 && gate_up_smem<G1, L>() <= 113 * 1024;
  }
  static void launch(const MoeArgs& a) {
    if (a.workspace_size < workspace_bytes(a.cfg)) throw std::invalid_argument("moe_mxfp4: workspace too small");
    if (!fits(a.cfg)) throw std::invalid_argument("moe_mxfp4: shape not supported by the w36 kernels");
    const moe_pipeline::Sizes s = moe_pipeline::sizes_of(a.cfg, T);
    Ws ws;
    Split sp;
    moe_wide27::carve27(a.cfg, T, a.workspace, &ws, &sp, Base::part_floats(s), Base::n_flags(s), Base::n_cnt(s));
    int32_t* ready = sp.cnt + Base::n_split(s);
    int32_t* gcnt = ready + s.tiles_max;
    constexpr int kQTokens = moe_wide27::kPrologueThreads / QT;
    const unsigned qblocks = unsigned((s.M + kQTokens - 1) / kQTokens);
    auto* qk = FR ? quantize_route36<FORCE, QT> : moe_wide27::quantize_route<FORCE, QT>;
    moe_rows8::launch_ex(qk, dim3(1 + qblocks), dim3(moe_wide27::kPrologueThreads),
                         size_t(2 * s.E + moe_wide27::kPrologueThreads) * sizeof(int), false, "w36 quantize + route", a,
                         ws, int(s.P), int(s.E), T, int(s.rows_max), sp.cnt, int(Base::n_cnt(s)));
    constexpr int sm1 = GML == 1 ? gate_up_smem<G1, L>() : moe_wide27::gate_up_smem<G1>();
    auto* gk = gate_up<G1, L, FORCE, S, GML>;
    moe_wg8::allow_smem(gk, sm1);
    moe_rows8::launch_ex(gk, dim3(unsigned(S * Base::blocks_y(s)), unsigned(s.tiles_max)), dim3(G1::kThreads), sm1,
                         true, "w36 gate_up", a, ws, sp, ready);
    const int G = Base::n_groups(s);
    const moe_w32::Sync sy{ready, gcnt, int(Base::blocks_y(s)), int(s.tiles_max), G};
    if constexpr (DSW > 0) {
      using D = DL36<G2, DSW>;
      const int sm2 = down_smem<G2, D>(int(s.I));
      auto* dk = down_comb<G2, D, FORCE>;
      moe_wg8::allow_smem(dk, sm2);
      moe_rows8::launch_ex(dk, dim3(unsigned(int64_t(G) * s.tiles_max)), dim3(G2::kThreads), size_t(sm2), true,
                           "w36 down", a, ws, sy, NS);
    } else if constexpr (DSW < 0) {
      const int sm2 = moe_wide27::down_slices_smem<G2>(int(s.I));
      auto* dk = down_comb_k<G2, FORCE>;
      moe_wg8::allow_smem(dk, sm2);
      moe_rows8::launch_ex(dk, dim3(unsigned(int64_t(G) * s.tiles_max)), dim3(G2::kThreads), size_t(sm2), true,
                           "w36 down k", a, ws, sy, NS);
    } else {
      const int sm2 = moe_wide27::down_slices_smem<G2>(int(s.I));
      auto* dk = moe_w32::down_comb<G2, FORCE, 0>;
      moe_wg8::allow_smem(dk, sm2);
      moe_rows8::launch_ex(dk, dim3(unsigned(int64_t(G) * s.tiles_max)), dim3(G2::kThreads), size_t(sm2), true,
                           "w32 down", a, ws, sy, NS);
    }
    constexpr int kCombineThreads = 256;
    const int64_t n = int64_t(a.cfg.bs) * a.cfg.d_hidden;
    moe_rows8::launch_ex(moe_rows8::combine, dim3(unsigned((n + kCombineThreads - 1) / kCombineThreads)),
                         dim3(kCombineThreads), 0, true, "combine", static_cast<const float*>(ws.p.y),
                         int64_t(a.cfg.bs), int(a.cfg.d_hidden), int(a.cfg.total_top_k), a.out);
  }
};

using G27 = moe_wide27::G27;
using L44 = L36<G27, 4, 5>;
// A configuration whose copies run DIST stages ahead (moe_fp8r::LoopDist): DIST = STAGES - 2 writes the slot that
// stage ks - 2 read, retired by every warp before stage ks's barrier: no wgmma drain there (moe_ws30's GND, v30).
template <class C, int DIST_>
struct WithDist : C {
  static constexpr int DIST = DIST_;
};
using G27d = WithDist<G27, G27::STAGES - 2>;
// v36: moe_w32::Path's configuration (E 257 bs 512: gate_up 1 part, down NS 4, prologue 256 threads a token; E 33 bs
// 128: 2 parts, NS 2, 1024 threads) with this header's gate_up (4 weight slots a warp, 5 activation slots).
template <class L = L44, int DSW = 0, int GML = 1, bool FR = false, class G1 = G27>
using PathL =
    moe_w32::PathOf<Plan<G1, L, G27, 1, 4, 0, 256, DSW, GML, FR>, Plan<G1, L, G27, 2, 2, 0, 1024, DSW, GML, FR>>;
using Path = PathL<L44, -1, 0, true, G27d>;
// v36f (test only): the fix-up forced (FORCE 1), gate_up and down both on this header's mainloops.
using PathForced =
    moe_w32::PathOf<Plan<G27d, L44, G27, 1, 4, 1, 256, -1, 0, true>, Plan<G27d, L44, G27, 2, 2, 1, 1024, -1, 0, true>>;
#endif  // MOE_WG8_HOST

}  // namespace
}  // namespace moe_w36
