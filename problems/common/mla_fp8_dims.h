// mla_decode on fp8 KV with the warps sliced by dimension instead of by token (mla-large, v13):
// every fp8 byte is read from shared memory once and converted to f16 once, and serves as K and V.
//
// Block: 8 dim warps, one block per SM, 64-token tiles, S-stage ring filled by ONE bulk copy per tile
// (cp.async.bulk, sm_90, completion on an mbarrier per stage; one thread issues it), so the compute
// warps issue no copy instructions. PERSIST: min(items, SMs) blocks walk the (batch, split) items and
// the ring runs across items (see the kernel).
// Warp dw owns latent dims 64 dw .. 64 dw + 63 (for Q K^T and for P V) and rope dims 512 + 8 dw .. + 7
// (Q K^T only).
//   Q K^T, S^T = K Q^T (m16n8k16: A = K, 16 tokens x 16 dims, B = Q^T from registers, 18 per lane, loaded
//     once per item): lane (g, t) loads 16 bytes of token rows g, g + 8 (dims 64 dw + 16 t ..), converts
//     each pair once (cvt e4m3x2 -> f16x2); the dims order inside a k step is chosen so that one 32-bit
//     word = one k step (Q loaded in the same order). Rope: m16n8k8 on 2 bytes a row.
//   The converted A fragments are transposed in registers (movmatrix .trans, one per 8x8 block) into
//     the A fragments of O^T = V^T P^T (rows = dims, k = tokens): no second conversion, no byte permutes.
//   Partial logits (over the warp's 72 dims) go to shared memory (32 KB a tile); after a barrier,
//     warp dw sums the 8 partials of tokens 8 dw .. + 7 and does the softmax: v8's lazy block-wide
//     reference maximum (rescale when a logit exceeds it by 2^8, reported by the second barrier itself,
//     __syncthreads_or; the tile maxima are only computed on such tiles, then two more barriers), P as
//     f16 in shared memory.
//   P V: B = P^T from shared memory (one 64-bit load per k step and n tile: P stored in token order
//     2t, 2t+1, 2t+8, 2t+9), the denominator by an all-ones A fragment (one mma a tile and warp).
// Two barriers per tile; the tile's stage is refilled right after the first (only Q K^T reads it).
// End of an item: O through shared memory for coalesced stores; splits merged by a one-pass combine.
// Numerics as v8/v11: f16 Q (from bf16), exact f16 K/V from e4m3, fp32 logits / softmax / O, f16 P,
// per-tensor scale folded into the logit scale and the final normalisation.
#pragma once
#include "problems/common/launch_check.h"
#include "problems/common/lowp_pack.h"
#include "problems/common/mla_fp8_wide.h"
#include "problems/common/mla_split_kv.h"
#include "problems/common/mma_tile.h"
#include "problems/common/warp_reduce.h"

namespace mla_dims {
namespace {  // internal linkage: every variant file gets its own kernels, launch statics and attributes

using namespace mla_kernels;

constexpr int kT = 64;   // tokens per tile
constexpr int kDW = 8;   // dim warps
constexpr float kRescaleSlack = 8.f;  // log2 units

template <int S>
struct Smem {
  static constexpr int kW = kDW;
  static constexpr int kPRow = kT + 16;  // f16; conflict-free 64-bit B loads
  static constexpr size_t stage = size_t(kT) * kDimQK;
  static constexpr size_t sp = size_t(S) * stage;                   // [8][64 tokens][4 t] float4; end: O [16][512] float
  static constexpr size_t p = sp + size_t(kDW) * kT * kHeads * 4;   // [16][kPRow] f16
  static constexpr size_t tmax = p + size_t(kHeads) * kPRow * 2;   // [16 heads][8 token groups] float
  static constexpr size_t lpart = tmax + size_t(kHeads) * 8 * 4;   // [kW][16] float
  static constexpr size_t stats = lpart + size_t(kW) * kHeads * 4;  // l[16], m[16]
  static constexpr size_t flag = stats + 2 * kHeads * 4;
  static constexpr size_t bar = flag + 16;                          // S mbarriers
  static constexpr size_t total = bar + size_t(S) * 8;
  static_assert(kDW * kT * kHeads * 4 >= kHeads * kDimV * 4, "O staging fits in the partial-logit area");
};

#if defined(HARNESS_GPU)

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(MMA_TILE_NVIDIA)
#define MLA_DIMS_SM90 1
__device__ inline uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
__device__ inline void mbar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ inline void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
__device__ inline void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ inline void bulk_copy(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}
// A short tile's rows [from, kT) copied from one source row (the tile's last valid one), as a loop kept rolled: the
// fill never runs on full tiles, and unrolled it put 4-12 KB of code between the paths a block runs, where the
// first pass over cold code (L2 flushed before every timed call) jumps over it (kLean: docs/perf.md, session 25).
__device__ inline void fill_rows_rolled(uint32_t dst, const void* row, int from, int row_bytes, uint32_t bar) {
#pragma unroll 1
  for (int r = from; r < kT; ++r) bulk_copy(dst + uint32_t(r * row_bytes), row, uint32_t(row_bytes), bar);
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
__device__ inline uint32_t movm_t(uint32_t x) {
  uint32_t r;
  asm("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(r) : "r"(x));
  return r;
}
__device__ inline void mma_k8(mma::FragC& c, uint32_t a0, uint32_t a1, uint32_t b0) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
      : "+f"(c.v[0]), "+f"(c.v[1]), "+f"(c.v[2]), "+f"(c.v[3])
      : "r"(a0), "r"(a1), "r"(b0));
}
#endif

// Position of tile token k (0..63) in a P row: tokens 2t, 2t+1, 2t+8, 2t+9 of each 16 are adjacent.
__device__ inline int p_pos(int k) { return (k & ~15) + 4 * ((k & 7) >> 1) + 2 * ((k >> 3) & 1) + (k & 1); }

// OPT (v15; 0 = the kernel as v13 / v14 measured it):
//   kOptFlag: the rescale decision through a flag in shared memory (written before barrier B, read
//     after it) instead of __syncthreads_or (the first v13's form);
//   kOptRope: rope in k16 steps: warp dw does the 32 rope dims 512 + 32 (dw & 1) .. of the 16 tokens of
//     m tile dw >> 1 for both head tiles (LDS.64 a row: 2-way instead of 4-way bank conflicts, 4 k16
//     mma instead of 8 k8), accumulated into that m tile's partial logits.
constexpr int kOptFlag = 1, kOptRope = 2;

// One 64-token tile of the block (stage st, valid tokens, global tile counter j; its copy has landed):
// Q K^T on the warp's dims with the V^T fragments kept for P V, partial logits through shared memory
// (barrier A, then after_a(): the producer refills the freed stage), the reduction and softmax of token
// rtok against the lazy reference maxima (barrier B; a rescale pass when a logit passed its reference
// + 2^8), P V on the warp's dims. Shared by the persistent kernel and mla_fp8_dims_cluster.h's.
struct QFrags {  // Q^T of the warp's dims as mma B fragments (f16), see the kernel
  uint32_t qb[2][4][2], qr[2], qr2[2][2][2];
};
struct TileLane {  // the lane's place in the tile
  int tid, g, t, dw;
  int rtok;              // the token this lane reduces and soft-maxes
  int ones_mt, ones_nt;  // the m and n tile of the warp's denominator mma
  mma::FragA ones;
};
__device__ inline TileLane tile_lane() {
  TileLane ln;
  ln.tid = threadIdx.x;
  const int lane = ln.tid % kernel_warp_size();
  ln.dw = ln.tid / kernel_warp_size();
  ln.g = lane >> 2;
  ln.t = lane & 3;
  ln.ones_mt = ln.dw >> 1;  // 8 warps = 4 k steps x 2 n tiles: the denominator, one mma a tile each
  ln.ones_nt = ln.dw & 1;
  ln.ones.row[0] = make_uint2(0x3c003c00u, 0x3c003c00u);
  ln.ones.row[1] = ln.ones.row[0];
  ln.rtok = 8 * ln.dw + ln.g;
  return ln;
}
#if defined(MLA_DIMS_SM90)
template <int S, int OPT, class AfterA>
__device__ __forceinline__ void dims_tile(unsigned char* smem, const TileLane& ln, const unsigned char* st, int valid,
                                          uint32_t j, const QFrags& q, float logit_scale, float (&m_ref)[4],
                                          mma::FragC (&o)[4][2], mma::FragC& lacc, AfterA&& after_a) {
  using L = Smem<S>;
  constexpr int WS = kernel_warp_size();
  constexpr int kPRow = L::kPRow;
  float4* sp = reinterpret_cast<float4*>(smem + L::sp);
  int* flag_sm = reinterpret_cast<int*>(smem + L::flag);
  uint16_t* p_sm = reinterpret_cast<uint16_t*>(smem + L::p);
  float* tmax_sm = reinterpret_cast<float*>(smem + L::tmax);
  const int g = ln.g, t = ln.t, dw = ln.dw, rtok = ln.rtok, ones_mt = ln.ones_mt, ones_nt = ln.ones_nt;
  const mma::FragA& ones = ln.ones;
  const auto& qb = q.qb;
  const auto& qr = q.qr;
  const auto& qr2 = q.qr2;

  // Q K^T over the warp's dims, and the V^T fragments for P V.
  uint32_t vt[4][4][4];
  {
    mma::FragC c[4][2];
    mma::FragA ropeA[2];  // kOptRope: the warp's rope A fragments (m tile dw >> 1), k steps 0, 1
    if constexpr ((OPT & kOptRope) != 0) {
      const unsigned char* rowg = st + (16 * (dw >> 1) + g) * kDimQK + kDimV + 32 * (dw & 1) + 8 * t;
      const uint2 rg = *reinterpret_cast<const uint2*>(rowg);
      const uint2 rh = *reinterpret_cast<const uint2*>(rowg + 8 * kDimQK);
      const uint32_t wg[2] = {rg.x, rg.y}, wh[2] = {rh.x, rh.y};
#pragma unroll
      for (int q = 0; q < 2; ++q) {
        ropeA[q].row[0].x = fp8x2_to_f16x2_hw(wg[q]);
        ropeA[q].row[1].x = fp8x2_to_f16x2_hw(wh[q]);
        ropeA[q].row[0].y = fp8x2_to_f16x2_hw(wg[q] >> 16);
        ropeA[q].row[1].y = fp8x2_to_f16x2_hw(wh[q] >> 16);
      }
    }
#pragma unroll
    for (int mt = 0; mt < 4; ++mt) {
      const int r0 = 16 * mt + g;
      const unsigned char* rowg = st + r0 * kDimQK;
      const unsigned char* rowh = rowg + 8 * kDimQK;
      const uint4 kg = *reinterpret_cast<const uint4*>(rowg + 64 * dw + 16 * t);
      const uint4 kh = *reinterpret_cast<const uint4*>(rowh + 64 * dw + 16 * t);
      uint32_t rg = 0, rh = 0;
      if constexpr (!(OPT & kOptRope)) {
        rg = *reinterpret_cast<const uint16_t*>(rowg + kDimV + 8 * dw + 2 * t);
        rh = *reinterpret_cast<const uint16_t*>(rowh + kDimV + 8 * dw + 2 * t);
      }
      const uint32_t wg[4] = {kg.x, kg.y, kg.z, kg.w}, wh[4] = {kh.x, kh.y, kh.z, kh.w};
      c[mt][0] = mma::FragC{{0.f, 0.f, 0.f, 0.f}};
      c[mt][1] = mma::FragC{{0.f, 0.f, 0.f, 0.f}};
#pragma unroll
      for (int p = 0; p < 4; ++p) {
        mma::FragA k;
        k.row[0].x = fp8x2_to_f16x2_hw(wg[p]);        // token g, k 2t..
        k.row[1].x = fp8x2_to_f16x2_hw(wh[p]);        // token g + 8
        k.row[0].y = fp8x2_to_f16x2_hw(wg[p] >> 16);  // token g, k 2t + 8..
        k.row[1].y = fp8x2_to_f16x2_hw(wh[p] >> 16);
        mma::mma<mma::Elem::f16>(c[mt][0], k, make_uint2(qb[0][p][0], qb[0][p][1]));
        mma::mma<mma::Elem::f16>(c[mt][1], k, make_uint2(qb[1][p][0], qb[1][p][1]));
        // V^T (rows = dims, k = tokens): 8x8 blocks transposed and re-placed.
        vt[mt][p][0] = movm_t(k.row[0].x);  // dims of k 0..7, tokens 0..7
        vt[mt][p][1] = movm_t(k.row[0].y);  // dims of k 8..15, tokens 0..7
        vt[mt][p][2] = movm_t(k.row[1].x);  // dims of k 0..7, tokens 8..15
        vt[mt][p][3] = movm_t(k.row[1].y);
      }
      if constexpr ((OPT & kOptRope) != 0) {
        if (mt == (dw >> 1)) {  // warp-uniform
#pragma unroll
          for (int q = 0; q < 2; ++q) {
            mma::mma<mma::Elem::f16>(c[mt][0], ropeA[q], make_uint2(qr2[0][q][0], qr2[0][q][1]));
            mma::mma<mma::Elem::f16>(c[mt][1], ropeA[q], make_uint2(qr2[1][q][0], qr2[1][q][1]));
          }
        }
      } else {
        const uint32_t ra0 = fp8x2_to_f16x2_hw(rg), ra1 = fp8x2_to_f16x2_hw(rh);
        mma_k8(c[mt][0], ra0, ra1, qr[0]);
        mma_k8(c[mt][1], ra0, ra1, qr[1]);
      }
    }
    // Partial logits: float4 (heads 2t, 2t+1, 8+2t, 9+2t) per (dim warp, token, t).
#pragma unroll
    for (int mt = 0; mt < 4; ++mt) {
      const int r0 = 16 * mt + g;
      sp[(dw * kT + r0) * 4 + t] = make_float4(c[mt][0].v[0], c[mt][0].v[1], c[mt][1].v[0], c[mt][1].v[1]);
      sp[(dw * kT + r0 + 8) * 4 + t] = make_float4(c[mt][0].v[2], c[mt][0].v[3], c[mt][1].v[2], c[mt][1].v[3]);
    }
  }
  __syncthreads();  // A: partial logits written; this tile's stage is free
  after_a();

  // Reduce the 8 partials of token rtok, softmax against m_ref.
  float s[4];
  {
    const bool ok = rtok < valid;
    float4 acc = sp[(0 * kT + rtok) * 4 + t];
#pragma unroll
    for (int d = 1; d < kDW; ++d) {
      const float4 v = sp[(d * kT + rtok) * 4 + t];
      acc.x += v.x;
      acc.y += v.y;
      acc.z += v.z;
      acc.w += v.w;
    }
    s[0] = ok ? acc.x * logit_scale : -INFINITY;
    s[1] = ok ? acc.y * logit_scale : -INFINITY;
    s[2] = ok ? acc.z * logit_scale : -INFINITY;
    s[3] = ok ? acc.w * logit_scale : -INFINITY;
  }
  auto write_p = [&]() {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      p_sm[(8 * (i >> 1) + 2 * t + (i & 1)) * kPRow + p_pos(rtok)] = f32_to_f16_bits(exp2f(s[i] - m_ref[i]));
  };
  bool over = false;
#pragma unroll
  for (int i = 0; i < 4; ++i) over |= s[i] > m_ref[i] + kRescaleSlack;
  bool rescale;
  if constexpr ((OPT & kOptFlag) != 0) {
    if (over) *flag_sm = int(j);  // read after B; the next write is after the next tile's A
    write_p();
    __syncthreads();  // B: P and the flag written
    rescale = *flag_sm == int(j);
  } else {
    write_p();
    // B: P written; the block learns in the barrier whether any logit passed its reference + 2^8.
    rescale = __syncthreads_or(over);
  }
  if (rescale) {  // new reference maxima: tile maxima, rescale, P again
    float mx[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      mx[i] = s[i];
#pragma unroll
      for (int off = 4; off < WS; off <<= 1) mx[i] = fmaxf(mx[i], __shfl_xor(mx[i], off));
    }
    if (g == 0) {
#pragma unroll
      for (int i = 0; i < 4; ++i) tmax_sm[(8 * (i >> 1) + 2 * t + (i & 1)) * 8 + dw] = mx[i];
    }
    __syncthreads();
    float alpha[4];
#pragma unroll
    for (int jj = 0; jj < 4; ++jj) {
      const int h = 8 * (jj >> 1) + 2 * t + (jj & 1);
      const float4 u = *reinterpret_cast<const float4*>(tmax_sm + h * 8);
      const float4 v = *reinterpret_cast<const float4*>(tmax_sm + h * 8 + 4);
      const float m_tile = fmaxf(fmaxf(fmaxf(u.x, u.y), fmaxf(u.z, u.w)), fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
      const float m_new = fmaxf(m_ref[jj], m_tile);
      alpha[jj] = m_new == m_ref[jj] ? 1.f : exp2f(m_ref[jj] - m_new);
      m_ref[jj] = m_new;
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
      for (int p = 0; p < 4; ++p)
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) o[p][nt].v[i] *= alpha[2 * nt + (i & 1)];
      lacc.v[i] *= ones_nt ? alpha[2 + (i & 1)] : alpha[i & 1];
    }
    write_p();
    __syncthreads();
  }

  // P V on the warp's dims.
#pragma unroll
  for (int mt = 0; mt < 4; ++mt) {
    mma::FragB pb[2];
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) pb[nt] = *reinterpret_cast<const uint2*>(p_sm + (8 * nt + g) * kPRow + 16 * mt + 4 * t);
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      mma::FragA v;
      v.row[0].x = vt[mt][p][0];
      v.row[1].x = vt[mt][p][1];
      v.row[0].y = vt[mt][p][2];
      v.row[1].y = vt[mt][p][3];
      mma::mma<mma::Elem::f16>(o[p][0], v, pb[0]);
      mma::mma<mma::Elem::f16>(o[p][1], v, pb[1]);
    }
    if (ones_mt == mt)
      mma::mma<mma::Elem::f16>(lacc, ones, make_uint2(ones_nt ? pb[1].x : pb[0].x, ones_nt ? pb[1].y : pb[0].y));
  }
}
#endif  // MLA_DIMS_SM90

// PERSIST: one block per SM walks the work items (batch, split) blockIdx.x, + gridDim.x, ...; the
// ring runs on across items (the next item's first tiles load during this item's last ones), so
// a block's fill and launch are paid once per SM instead of once per item.
template <int S, bool PERSIST, int OPT = 0>
__global__ void __launch_bounds__(kDW * kernel_warp_size(), 1)
    mla_fp8_dims_kernel(MlaDecodeArgs a, int tokens_per_split, int splits, Partials part) {
#if defined(MLA_DIMS_SM90)
  using L = Smem<S>;
  constexpr int WS = kernel_warp_size();
  constexpr int kW = kDW;
  constexpr int kThreads = kW * WS;
  static_assert(mma::kN == 8 && mma::kARows == 2, "NVIDIA m16n8k16 lane geometry");
  require_warp_size();

  extern __shared__ __align__(128) unsigned char smem[];
  int* flag_sm = reinterpret_cast<int*>(smem + L::flag);
  float* lpart_sm = reinterpret_cast<float*>(smem + L::lpart);
  float* l_sm = reinterpret_cast<float*>(smem + L::stats);
  float* m_sm = l_sm + kHeads;
  const uint32_t bar0 = smem_u32(smem + L::bar);

  const int tid = threadIdx.x;
  const int lane = tid % WS, warp = tid / WS;
  const int g = lane >> 2, t = lane & 3;
  const int dw = warp;

  // Work items: PERSIST: item = b * splits + split; otherwise the block's own (blockIdx.y, blockIdx.x).
  struct Span {
    int64_t t0;
    int n_tokens, n_tiles, b, split;
  };
  auto span = [&](int item) {
    const int b = PERSIST ? item / splits : int(blockIdx.y);
    const int split = PERSIST ? item % splits : int(blockIdx.x);
    const int64_t kv_begin = a.kv_indptr[b], kv_end = a.kv_indptr[b + 1];
    const int64_t t0 = kv_begin + int64_t(split) * tokens_per_split;
    const int64_t left = kv_end - t0;
    const int n = left <= 0 ? 0 : int(left < tokens_per_split ? left : tokens_per_split);
    return Span{t0, n, (n + kT - 1) / kT, b, split};
  };
  const int first_item = PERSIST ? int(blockIdx.x) : 0;
  const int item_step = PERSIST ? int(gridDim.x) : 1;
  const int n_items = PERSIST ? a.cfg.batch_size * splits : 1;

  // Producer (thread 0): the block's tiles in consumption order, global tile j into stage j % S.
  // A stage gets the tile's valid rows in one bulk copy (rows are contiguous), rows past the end as
  // copies of the last valid row (finite values; their logits are masked).
  int p_item = first_item, p_tile = 0;
  uint32_t p_j = 0;
  Span p_span{0, 0, 0, 0, 0};
  auto issue_next = [&]() {
    while (p_item < n_items && p_tile >= p_span.n_tiles) {  // next item with tiles
      p_item += item_step;
      if (p_item < n_items) {
        p_span = span(p_item);
        p_tile = 0;
      }
    }
    if (p_item >= n_items) return;
    const int valid = min(kT, p_span.n_tokens - p_tile * kT);
    const uint32_t stage = p_j % S;
    const uint32_t bar = bar0 + 8 * stage;
    const uint32_t dst = smem_u32(smem + stage * L::stage);
    const uint8_t* src = a.kv_fp8 + (p_span.t0 + int64_t(p_tile) * kT) * kDimQK;
    mbar_expect_tx(bar, uint32_t(kT * kDimQK));
    bulk_copy(dst, src, uint32_t(valid * kDimQK), bar);
    for (int r = valid; r < kT; ++r) bulk_copy(dst + r * kDimQK, src + (valid - 1) * kDimQK, kDimQK, bar);
    ++p_tile;
    ++p_j;
  };
  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < S; ++s) mbar_init(bar0 + 8 * s, 1);
    mbar_init_fence();
    if constexpr ((OPT & kOptFlag) != 0) *flag_sm = -1;
  }
  __syncthreads();
  if (tid == 0) {
    if (first_item < n_items) p_span = span(first_item);
    for (int s = 0; s < S; ++s) issue_next();
  }

  const float kv_scale = *a.kv_fp8_scale;
  const float logit_scale = a.cfg.sm_scale * 1.4426950408889634f * kv_scale;
  const TileLane ln = tile_lane();
  const bool has_ones = true;  // every warp holds one head tile's denominator (TileLane)
  const int ones_nt = ln.ones_nt;
  uint32_t j = 0;  // global tile counter (stage j % S, phase j / S)

  for (int item = first_item; item < n_items; item += item_step) {
    const Span w = span(item);
    // Q^T fragments of the warp's dims, bf16 -> f16, from global memory: k step p of n tile nt:
    // b0 = dims 64 dw + 16 t + 4 p + {0, 1}, b1 = + {2, 3} of head 8 nt + g; rope: 512 + 8 dw + 2 t + {0, 1}.
    QFrags q;
    {
      const uint16_t* qbase = a.q + int64_t(w.b) * kHeads * kDimQK;
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        const uint16_t* qh = qbase + (8 * nt + g) * kDimQK;
#pragma unroll
        for (int p = 0; p < 4; ++p) {
          const uint2 v = *reinterpret_cast<const uint2*>(qh + 64 * dw + 16 * t + 4 * p);
          q.qb[nt][p][0] = mla_wide::bf16x2_to_f16x2(v.x);
          q.qb[nt][p][1] = mla_wide::bf16x2_to_f16x2(v.y);
        }
        if constexpr ((OPT & kOptRope) != 0) {
          // k step q: b0 = rope dims 32 (dw & 1) + 8 t + 4 q + {0, 1}, b1 = + {2, 3}.
          const uint4 v = *reinterpret_cast<const uint4*>(qh + kDimV + 32 * (dw & 1) + 8 * t);
          q.qr2[nt][0][0] = mla_wide::bf16x2_to_f16x2(v.x);
          q.qr2[nt][0][1] = mla_wide::bf16x2_to_f16x2(v.y);
          q.qr2[nt][1][0] = mla_wide::bf16x2_to_f16x2(v.z);
          q.qr2[nt][1][1] = mla_wide::bf16x2_to_f16x2(v.w);
        } else {
          q.qr[nt] = mla_wide::bf16x2_to_f16x2(*reinterpret_cast<const uint32_t*>(qh + kDimV + 8 * dw + 2 * t));
        }
      }
    }
    // Lane heads (softmax state and P V columns): j = 2 nt + e -> head 8 nt + 2 t + e.
    float m_ref[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    mma::FragC o[4][2], lacc = {{0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int p = 0; p < 4; ++p)
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) o[p][nt] = mma::FragC{{0.f, 0.f, 0.f, 0.f}};

    for (int tile = 0; tile < w.n_tiles; ++tile, ++j) {
      const unsigned char* st = smem + (j % S) * L::stage;
      const int valid = min(kT, w.n_tokens - tile * kT);
      mbar_wait(bar0 + 8 * (j % S), uint32_t((j / S) & 1));

      dims_tile<S, OPT>(smem, ln, st, valid, j, q, logit_scale, m_ref, o, lacc, [&] {
        if (tid == 0) issue_next();
      });
    }

    // Denominators (sum of the warps' ones products), reference maxima, O through shared memory.
    if (g == 0) {
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        const bool mine = has_ones && ones_nt == nt;
        lpart_sm[warp * kHeads + 8 * nt + 2 * t] = mine ? lacc.v[0] : 0.f;
        lpart_sm[warp * kHeads + 8 * nt + 2 * t + 1] = mine ? lacc.v[1] : 0.f;
      }
      if (warp == 0) {
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) m_sm[8 * (jj >> 1) + 2 * t + (jj & 1)] = m_ref[jj];
      }
    }
    float* o_sm = reinterpret_cast<float*>(smem + L::sp);  // [16][512]
#pragma unroll
    for (int p = 0; p < 4; ++p)
#pragma unroll
      for (int nt = 0; nt < 2; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int dim = 64 * dw + 16 * (g >> 1) + 4 * p + (g & 1) + 2 * (i >> 1);
          const int head = 8 * nt + 2 * t + (i & 1);
          o_sm[head * kDimV + dim] = o[p][nt].v[i];
        }
    __syncthreads();
    if (tid < kHeads) {
      float l = 0.f;
      for (int ww = 0; ww < kW; ++ww) l += lpart_sm[ww * kHeads + tid];
      l_sm[tid] = l;
    }
    __syncthreads();
    for (int c = tid; c < kHeads * kDimV / 4; c += kThreads) {
      const int h = c / (kDimV / 4), dim = 4 * (c % (kDimV / 4));
      const float l = l_sm[h];
      const float f = l > 0.f ? kv_scale / l : 0.f;
      const float4 v = *reinterpret_cast<const float4*>(o_sm + h * kDimV + dim);
      if (splits == 1) {
        *reinterpret_cast<uint2*>(a.out + (int64_t(w.b) * kHeads + h) * kDimV + dim) =
            make_uint2(pack16(f32_to_bf16_bits(v.x * f), f32_to_bf16_bits(v.y * f)),
                       pack16(f32_to_bf16_bits(v.z * f), f32_to_bf16_bits(v.w * f)));
      } else {
        *reinterpret_cast<float4*>(part.o + ((size_t(w.b) * splits + w.split) * kHeads + h) * kDimV + dim) =
            make_float4(v.x * f, v.y * f, v.z * f, v.w * f);
      }
    }
    if (splits > 1 && tid < kHeads)
      part.lse[(size_t(w.b) * splits + w.split) * kHeads + tid] =
          l_sm[tid] > 0.f ? m_sm[tid] + log2f(l_sm[tid]) : -INFINITY;
    if constexpr (PERSIST) __syncthreads();  // the next item reuses the O staging and the statistics
  }
#else
  (void)a; (void)tokens_per_split; (void)splits; (void)part;
  __builtin_trap();
#endif
}

// Combine of the split partials, one block of 128 threads per (batch, head), 4 dims a thread: every
// thread derives the split weights itself and issues all splits' loads at once (the shared combine
// walks the splits one dependent load at a time).
static __global__ void combine_splits_wide_kernel(Partials p, int splits, uint16_t* out) {
  const int bh = blockIdx.x, b = bh / kHeads, h = bh % kHeads;
  const int c = 4 * int(threadIdx.x);
  const float* lse = p.lse + size_t(b) * splits * kHeads + h;
  float mx = -INFINITY;
  for (int s = 0; s < splits; ++s) mx = fmaxf(mx, lse[size_t(s) * kHeads]);
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  float total = 0.f;
#pragma unroll 4
  for (int s = 0; s < splits; ++s) {
    const float l = lse[size_t(s) * kHeads];
    const float w = l == -INFINITY ? 0.f : exp2f(l - mx);
    const float4 v = *reinterpret_cast<const float4*>(p.o + ((size_t(b) * splits + s) * kHeads + h) * kDimV + c);
    total += w;
    acc.x += w * v.x;
    acc.y += w * v.y;
    acc.z += w * v.z;
    acc.w += w * v.w;
  }
  const float inv = 1.f / total;
  *reinterpret_cast<uint2*>(out + size_t(bh) * kDimV + c) =
      make_uint2(pack16(f32_to_bf16_bits(acc.x * inv), f32_to_bf16_bits(acc.y * inv)),
                 pack16(f32_to_bf16_bits(acc.z * inv), f32_to_bf16_bits(acc.w * inv)));
}

// Split plan (v8's: one block per SM, 64-token tiles, at least 128 tokens a split), workspace, launch
// (PERSIST: min(items, SMs) blocks), then the one-pass combine when there is more than one split.
template <int S, bool PERSIST, int OPT = 0>
struct Dims {
  static SplitPlan plan(const MlaDecodeConfig& c) {
    return plan_splits(c.batch_size, c.kv_seq_len, current_device_shape().compute_units, 1, kT, 128);
  }
  static size_t workspace_bytes(const MlaDecodeConfig& c) { return partials_bytes(c.batch_size, plan(c).splits); }
  static void launch(const MlaDecodeArgs& a, const char* name) {
    using L = Smem<S>;
    require_mla_shape(a.cfg);
    const SplitPlan pl = plan(a.cfg);
    if (a.workspace_size < partials_bytes(a.cfg.batch_size, pl.splits))
      throw std::runtime_error(std::string(name) + ": workspace too small");
    static const bool attr_set = [] {
      harness_check(hipFuncSetAttribute(reinterpret_cast<const void*>(mla_fp8_dims_kernel<S, PERSIST, OPT>),
                                        hipFuncAttributeMaxDynamicSharedMemorySize, int(L::total)),
                    "hipFuncSetAttribute(mla_fp8_dims_kernel)");
      return true;
    }();
    (void)attr_set;
    const Partials part = partials_in(a.workspace, a.cfg.batch_size, pl.splits);
    const int threads = kDW * current_device_shape().warp_size;
    const int items = a.cfg.batch_size * pl.splits;
    const dim3 grid = PERSIST ? dim3(unsigned(std::min<int64_t>(items, current_device_shape().compute_units)))
                              : dim3(pl.splits, a.cfg.batch_size);
    mla_fp8_dims_kernel<S, PERSIST, OPT><<<grid, threads, L::total>>>(a, pl.tokens_per_split, pl.splits, part);
    harness_check_launch(name);
    if (pl.splits > 1) {
      combine_splits_wide_kernel<<<a.cfg.batch_size * kHeads, kDimV / 4>>>(part, pl.splits, a.out);
      harness_check_launch("mla combine_splits_wide_kernel");
    }
  }
};

#endif  // HARNESS_GPU

}  // namespace
}  // namespace mla_dims
