// mla_decode on fp8 KV with the warps sliced by dimension instead of by token (mla-large, v13):
// every fp8 byte is read from shared memory once and converted to f16 once, and serves as K and V.
//
// Block: 8 dim warps x TG token groups (TG 1: 8 warps, TG 2: 16 warps), 64-token tiles, S-stage ring
// filled by ONE bulk copy per tile (cp.async.bulk, sm_90, completion on an mbarrier per stage; one
// thread issues it), so the compute warps issue no copy instructions.
// Dim warp dw owns latent dims 64 dw .. 64 dw + 63 (for Q K^T and for P V) and rope dims 512 + 8 dw .. + 7
// (Q K^T only); token group tg owns 64 / TG tokens of every tile.
//   Q K^T, S^T = K Q^T (m16n8k16: A = K, 16 tokens x 16 dims, B = Q^T from registers, 18 per lane, loaded
//     once): lane (g, t) loads 16 bytes of token rows g, g + 8 (dims 64 dw + 16 t ..), converts each
//     pair once (cvt e4m3x2 -> f16x2); the dims order inside a k step is chosen so that one 32-bit
//     word = one k step (Q loaded in the same order). Rope: m16n8k8 on 2 bytes a row.
//   The converted A fragments are transposed in registers (movmatrix .trans, one per 8x8 block) into
//     the A fragments of O^T = V^T P^T (rows = dims, k = tokens): no second conversion, no byte permutes.
//   Partial logits (over the warp's 72 dims) go to shared memory (32 KB a tile); after a barrier,
//     warp (dw, tg) sums the 8 partials of tokens 8 dw .. + 7 (heads of n tile tg when TG 2) and does
//     the softmax: v8's lazy block-wide reference maximum (flag when a logit exceeds it by 2^8; the
//     tile maxima are only computed on flagged tiles, then two more barriers), P as f16 in shared memory.
//   P V: B = P^T from shared memory (one 64-bit load per k step and n tile: P stored in token order
//     2t, 2t+1, 2t+8, 2t+9), the denominator by an all-ones A fragment (one mma a tile in 8/TG warps).
// Two barriers per tile; the tile's stage is refilled right after the first (only Q K^T reads it).
// End: O through shared memory for coalesced stores (TG 2: the two token groups added there).
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

using namespace mla_kernels;

constexpr int kT = 64;   // tokens per tile
constexpr int kDW = 8;   // dim warps
constexpr float kRescaleSlack = 8.f;  // log2 units

template <int TG, int S>
struct Smem {
  static constexpr int kW = kDW * TG;
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

template <int TG, int S>
__global__ void __launch_bounds__(kDW * TG * kernel_warp_size(), 1)
    mla_fp8_dims_kernel(MlaDecodeArgs a, int tokens_per_split, int splits, Partials part) {
#if defined(MLA_DIMS_SM90)
  using L = Smem<TG, S>;
  constexpr int WS = kernel_warp_size();
  constexpr int kW = kDW * TG;
  constexpr int kThreads = kW * WS;
  constexpr int MT = 4 / TG;  // 16-token m tiles of a warp in each tile
  constexpr int kPRow = L::kPRow;
  static_assert(TG == 1 || TG == 2, "one or two token groups");
  static_assert(mma::kN == 8 && mma::kARows == 2, "NVIDIA m16n8k16 lane geometry");
  require_warp_size();

  extern __shared__ __align__(128) unsigned char smem[];
  float4* sp = reinterpret_cast<float4*>(smem + L::sp);
  uint16_t* p_sm = reinterpret_cast<uint16_t*>(smem + L::p);
  float* tmax_sm = reinterpret_cast<float*>(smem + L::tmax);
  float* lpart_sm = reinterpret_cast<float*>(smem + L::lpart);
  float* l_sm = reinterpret_cast<float*>(smem + L::stats);
  float* m_sm = l_sm + kHeads;
  int* flag_sm = reinterpret_cast<int*>(smem + L::flag);
  const uint32_t bar0 = smem_u32(smem + L::bar);

  const int b = blockIdx.y, split = blockIdx.x, tid = threadIdx.x;
  const int lane = tid % WS, warp = tid / WS;
  const int g = lane >> 2, t = lane & 3;
  const int dw = warp % kDW, tg = warp / kDW;
  const int64_t kv_begin = a.kv_indptr[b], kv_end = a.kv_indptr[b + 1];
  const int64_t t0 = kv_begin + int64_t(split) * tokens_per_split;
  const int64_t left = kv_end - t0;
  const int n_tokens = left <= 0 ? 0 : int(left < tokens_per_split ? left : tokens_per_split);
  const int n_tiles = (n_tokens + kT - 1) / kT;

  // One thread fills a stage: the tile's valid rows in one bulk copy (rows are contiguous), rows past
  // the end as copies of the last valid row (finite values; their logits are masked).
  auto issue = [&](int tile) {
    if (tile < n_tiles) {
      const int valid = min(kT, n_tokens - tile * kT);
      const uint32_t bar = bar0 + 8 * (tile % S);
      const uint32_t dst = smem_u32(smem + (tile % S) * L::stage);
      const uint8_t* src = a.kv_fp8 + (t0 + int64_t(tile) * kT) * kDimQK;
      mbar_expect_tx(bar, uint32_t(kT * kDimQK));
      bulk_copy(dst, src, uint32_t(valid * kDimQK), bar);
      for (int r = valid; r < kT; ++r) bulk_copy(dst + r * kDimQK, src + (valid - 1) * kDimQK, kDimQK, bar);
    }
  };
  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < S; ++s) mbar_init(bar0 + 8 * s, 1);
    mbar_init_fence();
    *flag_sm = -1;
  }
  __syncthreads();
  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < S; ++s) issue(s);
  }

  // Q^T fragments of the warp's dims, bf16 -> f16, from global memory: k step p of n tile nt:
  // b0 = dims 64 dw + 16 t + 4 p + {0, 1}, b1 = + {2, 3} of head 8 nt + g; rope: 512 + 8 dw + 2 t + {0, 1}.
  uint32_t qb[2][4][2], qr[2];
  {
    const uint16_t* qbase = a.q + int64_t(b) * kHeads * kDimQK;
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      const uint16_t* qh = qbase + (8 * nt + g) * kDimQK;
#pragma unroll
      for (int p = 0; p < 4; ++p) {
        const uint2 v = *reinterpret_cast<const uint2*>(qh + 64 * dw + 16 * t + 4 * p);
        qb[nt][p][0] = mla_wide::bf16x2_to_f16x2(v.x);
        qb[nt][p][1] = mla_wide::bf16x2_to_f16x2(v.y);
      }
      qr[nt] = mla_wide::bf16x2_to_f16x2(*reinterpret_cast<const uint32_t*>(qh + kDimV + 8 * dw + 2 * t));
    }
  }
  const float kv_scale = *a.kv_fp8_scale;
  const float logit_scale = a.cfg.sm_scale * 1.4426950408889634f * kv_scale;

  // Lane heads (softmax state and P V columns): j = 2 nt + e -> head 8 nt + 2 t + e.
  float m_ref[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
  mma::FragC o[4][2], lacc = {{0.f, 0.f, 0.f, 0.f}};
#pragma unroll
  for (int p = 0; p < 4; ++p)
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) o[p][nt] = mma::FragC{{0.f, 0.f, 0.f, 0.f}};
  const bool has_ones = dw < 2 * MT;  // the denominator: k step dw >> 1, n tile dw & 1 of the group
  const int ones_mt = dw >> 1, ones_nt = dw & 1;
  mma::FragA ones;
  ones.row[0] = make_uint2(0x3c003c00u, 0x3c003c00u);
  ones.row[1] = ones.row[0];
  const int rtok = 8 * dw + g;  // the token this lane reduces and soft-maxes

  for (int tile = 0; tile < n_tiles; ++tile) {
    const unsigned char* st = smem + (tile % S) * L::stage;
    const int valid = min(kT, n_tokens - tile * kT);
    mbar_wait(bar0 + 8 * (tile % S), uint32_t((tile / S) & 1));

    // Q K^T over the warp's dims, and the V^T fragments for P V.
    uint32_t vt[MT][4][4];
    {
      mma::FragC c[MT][2];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        const int r0 = tg * (kT / TG) + 16 * mt + g;
        const unsigned char* rowg = st + r0 * kDimQK;
        const unsigned char* rowh = rowg + 8 * kDimQK;
        const uint4 kg = *reinterpret_cast<const uint4*>(rowg + 64 * dw + 16 * t);
        const uint4 kh = *reinterpret_cast<const uint4*>(rowh + 64 * dw + 16 * t);
        const uint32_t rg = *reinterpret_cast<const uint16_t*>(rowg + kDimV + 8 * dw + 2 * t);
        const uint32_t rh = *reinterpret_cast<const uint16_t*>(rowh + kDimV + 8 * dw + 2 * t);
        const uint32_t wg[4] = {kg.x, kg.y, kg.z, kg.w}, wh[4] = {kh.x, kh.y, kh.z, kh.w};
        c[mt][0] = mma::FragC{{0.f, 0.f, 0.f, 0.f}};
        c[mt][1] = mma::FragC{{0.f, 0.f, 0.f, 0.f}};
#pragma unroll
        for (int p = 0; p < 4; ++p) {
          mma::FragA k;
          k.row[0].x = mla_wide::fp8x2_to_f16x2_hw(wg[p]);        // token g, k 2t..
          k.row[1].x = mla_wide::fp8x2_to_f16x2_hw(wh[p]);        // token g + 8
          k.row[0].y = mla_wide::fp8x2_to_f16x2_hw(wg[p] >> 16);  // token g, k 2t + 8..
          k.row[1].y = mla_wide::fp8x2_to_f16x2_hw(wh[p] >> 16);
          mma::mma<mma::Elem::f16>(c[mt][0], k, make_uint2(qb[0][p][0], qb[0][p][1]));
          mma::mma<mma::Elem::f16>(c[mt][1], k, make_uint2(qb[1][p][0], qb[1][p][1]));
          // V^T (rows = dims, k = tokens): 8x8 blocks transposed and re-placed.
          vt[mt][p][0] = movm_t(k.row[0].x);  // dims of k 0..7, tokens 0..7
          vt[mt][p][1] = movm_t(k.row[0].y);  // dims of k 8..15, tokens 0..7
          vt[mt][p][2] = movm_t(k.row[1].x);  // dims of k 0..7, tokens 8..15
          vt[mt][p][3] = movm_t(k.row[1].y);
        }
        const uint32_t ra0 = mla_wide::fp8x2_to_f16x2_hw(rg), ra1 = mla_wide::fp8x2_to_f16x2_hw(rh);
        mma_k8(c[mt][0], ra0, ra1, qr[0]);
        mma_k8(c[mt][1], ra0, ra1, qr[1]);
      }
      // Partial logits: float4 (heads 2t, 2t+1, 8+2t, 9+2t) per (dim warp, token, t).
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        const int r0 = tg * (kT / TG) + 16 * mt + g;
        sp[(dw * kT + r0) * 4 + t] = make_float4(c[mt][0].v[0], c[mt][0].v[1], c[mt][1].v[0], c[mt][1].v[1]);
        sp[(dw * kT + r0 + 8) * 4 + t] = make_float4(c[mt][0].v[2], c[mt][0].v[3], c[mt][1].v[2], c[mt][1].v[3]);
      }
    }
    __syncthreads();  // A: partial logits written; this tile's stage is free
    if (tid == 0) issue(tile + S);

    // Reduce the 8 partials of token rtok (TG 2: only n tile tg's heads), softmax against m_ref.
    constexpr int NS = 4 / TG;
    float s[NS];
    {
      const bool ok = rtok < valid;
      if constexpr (TG == 1) {
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
      } else {
        float2 acc = reinterpret_cast<const float2*>(sp + (0 * kT + rtok) * 4 + t)[tg];
#pragma unroll
        for (int d = 1; d < kDW; ++d) {
          const float2 v = reinterpret_cast<const float2*>(sp + (d * kT + rtok) * 4 + t)[tg];
          acc.x += v.x;
          acc.y += v.y;
        }
        s[0] = ok ? acc.x * logit_scale : -INFINITY;
        s[1] = ok ? acc.y * logit_scale : -INFINITY;
      }
    }
    auto mref = [&](int i) {  // m_ref of this lane's i-th softmax head
      if constexpr (TG == 1) return m_ref[i];
      else return tg == 0 ? m_ref[i] : m_ref[2 + i];
    };
    auto head_of = [&](int i) { return TG == 1 ? 8 * (i >> 1) + 2 * t + (i & 1) : 8 * tg + 2 * t + i; };
    auto write_p = [&]() {
#pragma unroll
      for (int i = 0; i < NS; ++i) p_sm[head_of(i) * kPRow + p_pos(rtok)] = f32_to_f16_bits(exp2f(s[i] - mref(i)));
    };
    {
      bool over = false;
#pragma unroll
      for (int i = 0; i < NS; ++i) over |= s[i] > mref(i) + kRescaleSlack;
      if (over) *flag_sm = tile;
      write_p();
    }
    __syncthreads();  // B: P and the flag written

    if (*flag_sm == tile) {  // new reference maxima: tile maxima, rescale, P again
      float mx[NS];
#pragma unroll
      for (int i = 0; i < NS; ++i) {
        mx[i] = s[i];
#pragma unroll
        for (int off = 4; off < WS; off <<= 1) mx[i] = fmaxf(mx[i], __shfl_xor(mx[i], off));
      }
      if (g == 0) {
#pragma unroll
        for (int i = 0; i < NS; ++i) tmax_sm[head_of(i) * 8 + dw] = mx[i];
      }
      __syncthreads();
      float alpha[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int h = 8 * (j >> 1) + 2 * t + (j & 1);
        const float4 u = *reinterpret_cast<const float4*>(tmax_sm + h * 8);
        const float4 v = *reinterpret_cast<const float4*>(tmax_sm + h * 8 + 4);
        const float m_tile = fmaxf(fmaxf(fmaxf(u.x, u.y), fmaxf(u.z, u.w)), fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
        const float m_new = fmaxf(m_ref[j], m_tile);
        alpha[j] = m_new == m_ref[j] ? 1.f : exp2f(m_ref[j] - m_new);
        m_ref[j] = m_new;
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

    // P V on the warp's dims and token group.
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      const int blk = tg * MT + mt;
      mma::FragB pb[2];
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) pb[nt] = *reinterpret_cast<const uint2*>(p_sm + (8 * nt + g) * kPRow + 16 * blk + 4 * t);
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
      if (has_ones && ones_mt == mt)
        mma::mma<mma::Elem::f16>(lacc, ones, make_uint2(ones_nt ? pb[1].x : pb[0].x, ones_nt ? pb[1].y : pb[0].y));
    }
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
      for (int j = 0; j < 4; ++j) m_sm[8 * (j >> 1) + 2 * t + (j & 1)] = m_ref[j];
    }
  }
  float* o_sm = reinterpret_cast<float*>(smem + L::sp);  // [16][512]
  auto o_index = [&](int p, int nt, int i) {
    const int dim = 64 * dw + 16 * (g >> 1) + 4 * p + (g & 1) + 2 * (i >> 1);
    const int head = 8 * nt + 2 * t + (i & 1);
    return head * kDimV + dim;
  };
  if (tg == 0) {
#pragma unroll
    for (int p = 0; p < 4; ++p)
#pragma unroll
      for (int nt = 0; nt < 2; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) o_sm[o_index(p, nt, i)] = o[p][nt].v[i];
  }
  __syncthreads();
  if (tid < kHeads) {
    float l = 0.f;
    for (int w = 0; w < kW; ++w) l += lpart_sm[w * kHeads + tid];
    l_sm[tid] = l;
  }
  if (tg == 1) {
#pragma unroll
    for (int p = 0; p < 4; ++p)
#pragma unroll
      for (int nt = 0; nt < 2; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) o_sm[o_index(p, nt, i)] += o[p][nt].v[i];
  }
  __syncthreads();
  for (int c = tid; c < kHeads * kDimV / 4; c += kThreads) {
    const int h = c / (kDimV / 4), dim = 4 * (c % (kDimV / 4));
    const float l = l_sm[h];
    const float f = l > 0.f ? kv_scale / l : 0.f;
    const float4 v = *reinterpret_cast<const float4*>(o_sm + h * kDimV + dim);
    if (splits == 1) {
      *reinterpret_cast<uint2*>(a.out + (int64_t(b) * kHeads + h) * kDimV + dim) =
          make_uint2(pack16(f32_to_bf16_bits(v.x * f), f32_to_bf16_bits(v.y * f)),
                     pack16(f32_to_bf16_bits(v.z * f), f32_to_bf16_bits(v.w * f)));
    } else {
      *reinterpret_cast<float4*>(part.o + ((size_t(b) * splits + split) * kHeads + h) * kDimV + dim) =
          make_float4(v.x * f, v.y * f, v.z * f, v.w * f);
    }
  }
  if (splits > 1 && tid < kHeads)
    part.lse[(size_t(b) * splits + split) * kHeads + tid] = l_sm[tid] > 0.f ? m_sm[tid] + log2f(l_sm[tid]) : -INFINITY;
#else
  (void)a; (void)tokens_per_split; (void)splits; (void)part;
  __builtin_trap();
#endif
}

// v13c: the same kernel with tile i-1's P V (and its movmatrix transposes) moved behind tile i's
// first barrier, where it overlaps the partial-logit reduction and softmax of tile i (TG 1 only).
// P is double-buffered by tile parity; the converted K fragments of two tiles are live (ping-pong
// arrays: the tile loop is unrolled by two).
template <int S>
struct SmemD {
  using B = Smem<1, S>;
  static constexpr int kPRow = B::kPRow;
  static constexpr size_t sp = B::sp;
  static constexpr size_t p = B::p;                                  // 2 x [16][kPRow] f16
  static constexpr size_t tmax = p + 2 * size_t(kHeads) * kPRow * 2;
  static constexpr size_t lpart = tmax + size_t(kHeads) * 8 * 4;
  static constexpr size_t stats = lpart + size_t(kDW) * kHeads * 4;
  static constexpr size_t flag = stats + 2 * kHeads * 4;
  static constexpr size_t bar = flag + 16;
  static constexpr size_t total = bar + size_t(S) * 8;
};

template <int S>
__global__ void __launch_bounds__(kDW * kernel_warp_size(), 1)
    mla_fp8_dims_defer_kernel(MlaDecodeArgs a, int tokens_per_split, int splits, Partials part) {
#if defined(MLA_DIMS_SM90)
  using L = SmemD<S>;
  constexpr int WS = kernel_warp_size();
  constexpr int kW = kDW;
  constexpr int kThreads = kW * WS;
  constexpr int kPRow = L::kPRow;
  static_assert(mma::kN == 8 && mma::kARows == 2, "NVIDIA m16n8k16 lane geometry");
  require_warp_size();

  extern __shared__ __align__(128) unsigned char smem[];
  float4* sp = reinterpret_cast<float4*>(smem + L::sp);
  uint16_t* p_sm = reinterpret_cast<uint16_t*>(smem + L::p);
  float* tmax_sm = reinterpret_cast<float*>(smem + L::tmax);
  float* lpart_sm = reinterpret_cast<float*>(smem + L::lpart);
  float* l_sm = reinterpret_cast<float*>(smem + L::stats);
  float* m_sm = l_sm + kHeads;
  int* flag_sm = reinterpret_cast<int*>(smem + L::flag);
  const uint32_t bar0 = smem_u32(smem + L::bar);

  const int b = blockIdx.y, split = blockIdx.x, tid = threadIdx.x;
  const int lane = tid % WS, warp = tid / WS;
  const int g = lane >> 2, t = lane & 3;
  const int dw = warp;
  const int64_t kv_begin = a.kv_indptr[b], kv_end = a.kv_indptr[b + 1];
  const int64_t t0 = kv_begin + int64_t(split) * tokens_per_split;
  const int64_t left = kv_end - t0;
  const int n_tokens = left <= 0 ? 0 : int(left < tokens_per_split ? left : tokens_per_split);
  const int n_tiles = (n_tokens + kT - 1) / kT;

  auto issue = [&](int tile) {
    if (tile < n_tiles) {
      const int valid = min(kT, n_tokens - tile * kT);
      const uint32_t bar = bar0 + 8 * (tile % S);
      const uint32_t dst = smem_u32(smem + (tile % S) * Smem<1, S>::stage);
      const uint8_t* src = a.kv_fp8 + (t0 + int64_t(tile) * kT) * kDimQK;
      mbar_expect_tx(bar, uint32_t(kT * kDimQK));
      bulk_copy(dst, src, uint32_t(valid * kDimQK), bar);
      for (int r = valid; r < kT; ++r) bulk_copy(dst + r * kDimQK, src + (valid - 1) * kDimQK, kDimQK, bar);
    }
  };
  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < S; ++s) mbar_init(bar0 + 8 * s, 1);
    mbar_init_fence();
    *flag_sm = -1;
  }
  __syncthreads();
  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < S; ++s) issue(s);
  }

  uint32_t qb[2][4][2], qr[2];
  {
    const uint16_t* qbase = a.q + int64_t(b) * kHeads * kDimQK;
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      const uint16_t* qh = qbase + (8 * nt + g) * kDimQK;
#pragma unroll
      for (int p = 0; p < 4; ++p) {
        const uint2 v = *reinterpret_cast<const uint2*>(qh + 64 * dw + 16 * t + 4 * p);
        qb[nt][p][0] = mla_wide::bf16x2_to_f16x2(v.x);
        qb[nt][p][1] = mla_wide::bf16x2_to_f16x2(v.y);
      }
      qr[nt] = mla_wide::bf16x2_to_f16x2(*reinterpret_cast<const uint32_t*>(qh + kDimV + 8 * dw + 2 * t));
    }
  }
  const float kv_scale = *a.kv_fp8_scale;
  const float logit_scale = a.cfg.sm_scale * 1.4426950408889634f * kv_scale;

  float m_ref[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
  mma::FragC o[4][2], lacc = {{0.f, 0.f, 0.f, 0.f}};
#pragma unroll
  for (int p = 0; p < 4; ++p)
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) o[p][nt] = mma::FragC{{0.f, 0.f, 0.f, 0.f}};
  const int ones_mt = dw >> 1, ones_nt = dw & 1;
  mma::FragA ones;
  ones.row[0] = make_uint2(0x3c003c00u, 0x3c003c00u);
  ones.row[1] = ones.row[0];
  const int rtok = 8 * dw + g;

  using Frags = uint32_t[4][4][4];  // [m tile][k step][register]: K A fragments (f16) of a tile

  auto qk = [&](int tile, Frags& kf) {
    const unsigned char* st = smem + (tile % S) * Smem<1, S>::stage;
    mbar_wait(bar0 + 8 * (tile % S), uint32_t((tile / S) & 1));
#pragma unroll
    for (int mt = 0; mt < 4; ++mt) {
      const int r0 = 16 * mt + g;
      const unsigned char* rowg = st + r0 * kDimQK;
      const unsigned char* rowh = rowg + 8 * kDimQK;
      const uint4 kg = *reinterpret_cast<const uint4*>(rowg + 64 * dw + 16 * t);
      const uint4 kh = *reinterpret_cast<const uint4*>(rowh + 64 * dw + 16 * t);
      const uint32_t rg = *reinterpret_cast<const uint16_t*>(rowg + kDimV + 8 * dw + 2 * t);
      const uint32_t rh = *reinterpret_cast<const uint16_t*>(rowh + kDimV + 8 * dw + 2 * t);
      const uint32_t wg[4] = {kg.x, kg.y, kg.z, kg.w}, wh[4] = {kh.x, kh.y, kh.z, kh.w};
      mma::FragC c0 = {{0.f, 0.f, 0.f, 0.f}}, c1 = {{0.f, 0.f, 0.f, 0.f}};
#pragma unroll
      for (int p = 0; p < 4; ++p) {
        mma::FragA k;
        k.row[0].x = mla_wide::fp8x2_to_f16x2_hw(wg[p]);
        k.row[1].x = mla_wide::fp8x2_to_f16x2_hw(wh[p]);
        k.row[0].y = mla_wide::fp8x2_to_f16x2_hw(wg[p] >> 16);
        k.row[1].y = mla_wide::fp8x2_to_f16x2_hw(wh[p] >> 16);
        mma::mma<mma::Elem::f16>(c0, k, make_uint2(qb[0][p][0], qb[0][p][1]));
        mma::mma<mma::Elem::f16>(c1, k, make_uint2(qb[1][p][0], qb[1][p][1]));
        kf[mt][p][0] = k.row[0].x;
        kf[mt][p][1] = k.row[0].y;
        kf[mt][p][2] = k.row[1].x;
        kf[mt][p][3] = k.row[1].y;
      }
      const uint32_t ra0 = mla_wide::fp8x2_to_f16x2_hw(rg), ra1 = mla_wide::fp8x2_to_f16x2_hw(rh);
      mma_k8(c0, ra0, ra1, qr[0]);
      mma_k8(c1, ra0, ra1, qr[1]);
      sp[(dw * kT + r0) * 4 + t] = make_float4(c0.v[0], c0.v[1], c1.v[0], c1.v[1]);
      sp[(dw * kT + r0 + 8) * 4 + t] = make_float4(c0.v[2], c0.v[3], c1.v[2], c1.v[3]);
    }
  };
  auto pv = [&](int tile, Frags& kf) {
    const uint16_t* pbuf = p_sm + (tile & 1) * kHeads * kPRow;
#pragma unroll
    for (int mt = 0; mt < 4; ++mt) {
      mma::FragB pb[2];
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) pb[nt] = *reinterpret_cast<const uint2*>(pbuf + (8 * nt + g) * kPRow + 16 * mt + 4 * t);
#pragma unroll
      for (int p = 0; p < 4; ++p) {
        mma::FragA v;
        v.row[0].x = movm_t(kf[mt][p][0]);  // dims of k 0..7, tokens 0..7
        v.row[1].x = movm_t(kf[mt][p][1]);  // dims of k 8..15, tokens 0..7
        v.row[0].y = movm_t(kf[mt][p][2]);  // dims of k 0..7, tokens 8..15
        v.row[1].y = movm_t(kf[mt][p][3]);
        mma::mma<mma::Elem::f16>(o[p][0], v, pb[0]);
        mma::mma<mma::Elem::f16>(o[p][1], v, pb[1]);
      }
      if (ones_mt == mt)
        mma::mma<mma::Elem::f16>(lacc, ones, make_uint2(ones_nt ? pb[1].x : pb[0].x, ones_nt ? pb[1].y : pb[0].y));
    }
  };
  auto step = [&](int tile, Frags& cur, Frags& prev) {
    const int valid = min(kT, n_tokens - tile * kT);
    qk(tile, cur);
    __syncthreads();  // A: partial logits written; the stage is free; P of tile - 1 final
    if (tid == 0) issue(tile + S);
    if (tile > 0) pv(tile - 1, prev);
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
    uint16_t* pbuf = p_sm + (tile & 1) * kHeads * kPRow;
    auto write_p = [&]() {
#pragma unroll
      for (int i = 0; i < 4; ++i)
        pbuf[(8 * (i >> 1) + 2 * t + (i & 1)) * kPRow + p_pos(rtok)] = f32_to_f16_bits(exp2f(s[i] - m_ref[i]));
    };
    {
      bool over = false;
#pragma unroll
      for (int i = 0; i < 4; ++i) over |= s[i] > m_ref[i] + kRescaleSlack;
      if (over) *flag_sm = tile;
      write_p();
    }
    __syncthreads();  // B: P and the flag written; P V of tile - 1 done
    if (*flag_sm == tile) {
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
      for (int j = 0; j < 4; ++j) {
        const int h = 8 * (j >> 1) + 2 * t + (j & 1);
        const float4 u = *reinterpret_cast<const float4*>(tmax_sm + h * 8);
        const float4 v = *reinterpret_cast<const float4*>(tmax_sm + h * 8 + 4);
        const float m_tile = fmaxf(fmaxf(fmaxf(u.x, u.y), fmaxf(u.z, u.w)), fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
        const float m_new = fmaxf(m_ref[j], m_tile);
        alpha[j] = m_new == m_ref[j] ? 1.f : exp2f(m_ref[j] - m_new);
        m_ref[j] = m_new;
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
  };

  Frags kfa, kfb;
  for (int tile = 0; tile < n_tiles; tile += 2) {
    step(tile, kfa, kfb);
    if (tile + 1 < n_tiles) step(tile + 1, kfb, kfa);
  }
  if (n_tiles > 0) {
    if ((n_tiles - 1) & 1)
      pv(n_tiles - 1, kfb);
    else
      pv(n_tiles - 1, kfa);
  }

  if (g == 0) {
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      const bool mine = ones_nt == nt;
      lpart_sm[warp * kHeads + 8 * nt + 2 * t] = mine ? lacc.v[0] : 0.f;
      lpart_sm[warp * kHeads + 8 * nt + 2 * t + 1] = mine ? lacc.v[1] : 0.f;
    }
    if (warp == 0) {
#pragma unroll
      for (int j = 0; j < 4; ++j) m_sm[8 * (j >> 1) + 2 * t + (j & 1)] = m_ref[j];
    }
  }
  // The last P V read no shared partials, but the reduction of the last tile did: a barrier first.
  __syncthreads();
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
  if (tid < kHeads) {
    float l = 0.f;
    for (int w = 0; w < kW; ++w) l += lpart_sm[w * kHeads + tid];
    l_sm[tid] = l;
  }
  __syncthreads();
  for (int c = tid; c < kHeads * kDimV / 4; c += kThreads) {
    const int h = c / (kDimV / 4), dim = 4 * (c % (kDimV / 4));
    const float l = l_sm[h];
    const float f = l > 0.f ? kv_scale / l : 0.f;
    const float4 v = *reinterpret_cast<const float4*>(o_sm + h * kDimV + dim);
    if (splits == 1) {
      *reinterpret_cast<uint2*>(a.out + (int64_t(b) * kHeads + h) * kDimV + dim) =
          make_uint2(pack16(f32_to_bf16_bits(v.x * f), f32_to_bf16_bits(v.y * f)),
                     pack16(f32_to_bf16_bits(v.z * f), f32_to_bf16_bits(v.w * f)));
    } else {
      *reinterpret_cast<float4*>(part.o + ((size_t(b) * splits + split) * kHeads + h) * kDimV + dim) =
          make_float4(v.x * f, v.y * f, v.z * f, v.w * f);
    }
  }
  if (splits > 1 && tid < kHeads)
    part.lse[(size_t(b) * splits + split) * kHeads + tid] = l_sm[tid] > 0.f ? m_sm[tid] + log2f(l_sm[tid]) : -INFINITY;
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

template <int S, bool WideCombine = false>
struct DimsDefer {
  static SplitPlan plan(const MlaDecodeConfig& c) {
    return plan_splits(c.batch_size, c.kv_seq_len, current_device_shape().compute_units, 1, kT, 128);
  }
  static size_t workspace_bytes(const MlaDecodeConfig& c) { return partials_bytes(c.batch_size, plan(c).splits); }
  static void launch(const MlaDecodeArgs& a, const char* name) {
    using L = SmemD<S>;
    require_mla_shape(a.cfg);
    const SplitPlan pl = plan(a.cfg);
    if (a.workspace_size < partials_bytes(a.cfg.batch_size, pl.splits))
      throw std::runtime_error(std::string(name) + ": workspace too small");
    static const bool attr_set = [] {
      harness_check(hipFuncSetAttribute(reinterpret_cast<const void*>(mla_fp8_dims_defer_kernel<S>),
                                        hipFuncAttributeMaxDynamicSharedMemorySize, int(L::total)),
                    "hipFuncSetAttribute(mla_fp8_dims_defer_kernel)");
      return true;
    }();
    (void)attr_set;
    const Partials part = partials_in(a.workspace, a.cfg.batch_size, pl.splits);
    const int threads = kDW * current_device_shape().warp_size;
    mla_fp8_dims_defer_kernel<S><<<dim3(pl.splits, a.cfg.batch_size), threads, L::total>>>(a, pl.tokens_per_split, pl.splits, part);
    harness_check_launch(name);
    if (pl.splits > 1) {
      if constexpr (WideCombine) {
        combine_splits_wide_kernel<<<a.cfg.batch_size * kHeads, kDimV / 4>>>(part, pl.splits, a.out);
        harness_check_launch("mla combine_splits_wide_kernel");
      } else {
        launch_combine(part, a.cfg.batch_size, pl.splits, a.out);
      }
    }
  }
};

// Split plan (v8's: one block per SM, 64-token tiles, at least 128 tokens a split), workspace, launch.
template <int TG, int S>
struct Dims {
  static SplitPlan plan(const MlaDecodeConfig& c) {
    return plan_splits(c.batch_size, c.kv_seq_len, current_device_shape().compute_units, 1, kT, 128);
  }
  static size_t workspace_bytes(const MlaDecodeConfig& c) { return partials_bytes(c.batch_size, plan(c).splits); }
  static void launch(const MlaDecodeArgs& a, const char* name) {
    using L = Smem<TG, S>;
    require_mla_shape(a.cfg);
    const SplitPlan pl = plan(a.cfg);
    if (a.workspace_size < partials_bytes(a.cfg.batch_size, pl.splits))
      throw std::runtime_error(std::string(name) + ": workspace too small");
    static const bool attr_set = [] {
      harness_check(hipFuncSetAttribute(reinterpret_cast<const void*>(mla_fp8_dims_kernel<TG, S>),
                                        hipFuncAttributeMaxDynamicSharedMemorySize, int(L::total)),
                    "hipFuncSetAttribute(mla_fp8_dims_kernel)");
      return true;
    }();
    (void)attr_set;
    const Partials part = partials_in(a.workspace, a.cfg.batch_size, pl.splits);
    const int threads = kDW * TG * current_device_shape().warp_size;
    mla_fp8_dims_kernel<TG, S><<<dim3(pl.splits, a.cfg.batch_size), threads, L::total>>>(a, pl.tokens_per_split, pl.splits, part);
    harness_check_launch(name);
    if (pl.splits > 1) launch_combine(part, a.cfg.batch_size, pl.splits, a.out);
  }
};

#endif  // HARNESS_GPU

}  // namespace mla_dims
