// mla_decode on fp8 KV, v18's dims tile (mla-tile): v15's persistent dimension-sliced kernel
// (problems/common/mla_fp8_dims.h: 8 dim warps, one block per SM, 64-token tiles, one bulk copy a tile,
// rope in k16 steps, shared-memory rescale flag, one-pass combine) with a tile of fewer instructions:
//  - m tiles in a rotated order: warp dw runs m tiles (i + dw / 2) & 3, i = 0..3, so its rope mma
//    (m tile dw / 2) always falls in step i = 0: no predicated HMMA / NOP / WARPSYNC sequences for the
//    rope of the other three m tiles;
//  - partial logits stored as the mma accumulators themselves (one float4 a lane, m tile and n tile:
//    no packing moves), reduced by warp (mt, nt) = (w / 2, w % 2): lane (g, t) sums the 8 dim warps'
//    float4 of tokens 16 mt + g, + 8 and heads 8 nt + 2 t, + 1 (conflict-free 512-byte rows both ways);
//  - P stored transposed ([token][head] f16, one 32-bit store per token and head pair, 16-byte halves
//    XOR-swizzled) and loaded as the P V B fragments with one ldmatrix.x4.trans per m tile;
//  - the softmax denominator summed in fp32 by the reducing lanes (no all-ones mma in P V), reduced
//    over the block once per item;
//  - exp2 as ex2.approx.ftz (no denormal range fix-up), e4m3 pairs converted from the 16-bit halves of
//    a word (mov.b32 unpack: no shifts);
//  - Q K^T over the four m tiles interleaved (k step outermost: 8 independent accumulator chains a warp);
//  - the 64 MOVM a warp and tile (the V^T fragments) taken out of the Q K^T phase, which they bound
//    through the MIO pipe: with MV 3 half run after the reduction's shared loads, half in P V (kernel);
//  - the O staging XOR-swizzled; S ring stages (v18: 3; v15's kernel: 5).
// Numerics as v15 except the denominator: the sum of the fp32 P values instead of their f16 roundings.
// Measured and dropped (docs/perf.md, section "mla_decode v18"; code in commit be5586a): an in-kernel merge of the
// splits,
// a Q prefetch for the next item, a pairwise reduction, the combine as a dependent launch, pairs of m tiles.
#pragma once
#include "problems/common/mla_fp8_dims.h"

namespace mla_dims2 {
namespace {  // internal linkage: every variant file gets its own kernels, launch statics and attributes

using namespace mla_kernels;
using mla_dims::kDW;
using mla_dims::kRescaleSlack;
using mla_dims::kT;

template <int S>
struct Smem {
  static constexpr size_t stage = size_t(kT) * kDimQK;
  static constexpr size_t sp = size_t(S) * stage;                   // [8 dw][4 mt][2 nt][lanes] float4; end: O [16][512] float
  static constexpr size_t p = sp + size_t(kDW) * kT * kHeads * 4;   // P^T [64 tokens][16 heads] f16
  static constexpr size_t tmax = p + size_t(kT) * kHeads * 2;      // [16 heads][4 m tiles] float
  static constexpr size_t lpart = tmax + size_t(kHeads) * 4 * 4;   // [4 m tiles][16 heads] float
  static constexpr size_t stats = lpart + size_t(4) * kHeads * 4;  // l[16], m[16]
  static constexpr size_t flag = stats + 2 * kHeads * 4;
  static constexpr size_t bar = flag + 16;  // S mbarriers
  static constexpr size_t total = bar + size_t(S) * 8;
  static_assert(kDW * kT * kHeads * 4 >= kHeads * kDimV * 4, "O staging fits in the partial-logit area");
};

#if defined(HARNESS_GPU) && defined(MLA_DIMS_SM90)
using mla_dims::bulk_copy;
using mla_dims::mbar_expect_tx;
using mla_dims::mbar_init;
using mla_dims::mbar_init_fence;
using mla_dims::mbar_wait;
using mla_dims::movm_t;
using mla_dims::smem_u32;

__device__ inline uint32_t e4m3_lo(uint32_t w) {  // bytes 0, 1 -> f16x2
  uint32_t r;
  asm("{\n.reg .b16 lo, hi;\nmov.b32 {lo, hi}, %1;\ncvt.rn.f16x2.e4m3x2 %0, lo;\n}" : "=r"(r) : "r"(w));
  return r;
}
__device__ inline uint32_t e4m3_hi(uint32_t w) {  // bytes 2, 3 -> f16x2
  uint32_t r;
  asm("{\n.reg .b16 lo, hi;\nmov.b32 {lo, hi}, %1;\ncvt.rn.f16x2.e4m3x2 %0, hi;\n}" : "=r"(r) : "r"(w));
  return r;
}
__device__ inline uint32_t movm_v(uint32_t x) {  // movmatrix .trans, kept where it is written (MV)
  uint32_t r;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(r) : "r"(x));
  return r;
}
__device__ inline float ex2_fast(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
__device__ inline uint32_t pack_f16x2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ inline void ldsm_x4_t(uint32_t addr, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

// P^T layout: token row k (32 bytes), 16-byte half c (heads 8 c ..) at half c ^ ((k >> 2) & 1).
__device__ inline int pt_word(int k, int c, int t) { return k * 8 + 4 * (c ^ ((k >> 2) & 1)) + t; }

struct Lane {
  int g, t, dw, mr;  // mr: the warp's first m tile (its rope m tile, and the m tile it reduces)
  int rnt;           // the n tile (head half) the warp reduces
};
__device__ inline Lane lane_of() {
  Lane ln;
  const int lane = int(threadIdx.x) % kernel_warp_size();
  ln.dw = int(threadIdx.x) / kernel_warp_size();
  ln.g = lane >> 2;
  ln.t = lane & 3;
  ln.mr = ln.dw >> 1;
  ln.rnt = ln.dw & 1;
  return ln;
}

// Softmax state of a lane: m_ref[4] for heads 2t, 2t+1, 8+2t, 9+2t (the P V columns), mred[2] =
// m_ref of the two heads 8 rnt + 2 t + e it reduces, lsum[2] their denominators (its two tokens).
struct SoftState {
  float m_ref[4];
  float mred[2];
  float lsum[2];
};

// One 64-token tile (stage st, valid tokens, global tile counter j; its copy has landed).
template <int S, int MV, class AfterA>
__device__ __forceinline__ void dims_tile2(unsigned char* smem, const Lane& ln, const unsigned char* st, int valid,
                                           uint32_t j, const mla_dims::QFrags& q, float logit_scale, SoftState& ss,
                                           mma::FragC (&o)[4][2], AfterA&& after_a) {
  using L = Smem<S>;
  constexpr int WS = kernel_warp_size();
  float4* sp = reinterpret_cast<float4*>(smem + L::sp);
  int* flag_sm = reinterpret_cast<int*>(smem + L::flag);
  uint32_t* pt_sm = reinterpret_cast<uint32_t*>(smem + L::p);
  float* tmax_sm = reinterpret_cast<float*>(smem + L::tmax);
  const int g = ln.g, t = ln.t, dw = ln.dw, mr = ln.mr, rnt = ln.rnt;
  const int lane = 4 * g + t;
  const auto& qb = q.qb;
  const auto& qr2 = q.qr2;

  constexpr int IL = 4;
  uint32_t vt[4][4][4];
  {
    mma::FragA ropeA[2];  // the warp's rope A fragments (m tile mr), k steps 0, 1
    {
      const unsigned char* rowg = st + (16 * mr + g) * kDimQK + kDimV + 32 * (dw & 1) + 8 * t;
      const uint2 rg = *reinterpret_cast<const uint2*>(rowg);
      const uint2 rh = *reinterpret_cast<const uint2*>(rowg + 8 * kDimQK);
      const uint32_t wg[2] = {rg.x, rg.y}, wh[2] = {rh.x, rh.y};
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        ropeA[s].row[0].x = e4m3_lo(wg[s]);
        ropeA[s].row[1].x = e4m3_lo(wh[s]);
        ropeA[s].row[0].y = e4m3_hi(wg[s]);
        ropeA[s].row[1].y = e4m3_hi(wh[s]);
      }
    }
    // The four m tiles interleaved (k step outermost): 8 independent accumulator chains instead of 2,
    // all K loads issued first.
#pragma unroll
    for (int i0 = 0; i0 < 4; i0 += IL) {
      uint4 kg[IL], kh[IL];
#pragma unroll
      for (int ii = 0; ii < IL; ++ii) {
        const unsigned char* rowg = st + (16 * ((i0 + ii + mr) & 3) + g) * kDimQK + 64 * dw + 16 * t;
        kg[ii] = *reinterpret_cast<const uint4*>(rowg);
        kh[ii] = *reinterpret_cast<const uint4*>(rowg + 8 * kDimQK);
      }
      mma::FragC c[IL][2];
#pragma unroll
      for (int ii = 0; ii < IL; ++ii) {
        c[ii][0] = mma::FragC{{0.f, 0.f, 0.f, 0.f}};
        c[ii][1] = mma::FragC{{0.f, 0.f, 0.f, 0.f}};
      }
      if (i0 == 0) {  // the rope of m tile mr (i = 0)
#pragma unroll
        for (int s = 0; s < 2; ++s) {
          mma::mma<mma::Elem::f16>(c[0][0], ropeA[s], make_uint2(qr2[0][s][0], qr2[0][s][1]));
          mma::mma<mma::Elem::f16>(c[0][1], ropeA[s], make_uint2(qr2[1][s][0], qr2[1][s][1]));
        }
      }
#pragma unroll
      for (int p = 0; p < 4; ++p) {
#pragma unroll
        for (int ii = 0; ii < IL; ++ii) {
          const int i = i0 + ii;
          const uint32_t wg = p == 0 ? kg[ii].x : p == 1 ? kg[ii].y : p == 2 ? kg[ii].z : kg[ii].w;
          const uint32_t wh = p == 0 ? kh[ii].x : p == 1 ? kh[ii].y : p == 2 ? kh[ii].z : kh[ii].w;
          mma::FragA k;
          k.row[0].x = e4m3_lo(wg);
          k.row[1].x = e4m3_lo(wh);
          k.row[0].y = e4m3_hi(wg);
          k.row[1].y = e4m3_hi(wh);
          mma::mma<mma::Elem::f16>(c[ii][0], k, make_uint2(qb[0][p][0], qb[0][p][1]));
          mma::mma<mma::Elem::f16>(c[ii][1], k, make_uint2(qb[1][p][0], qb[1][p][1]));
          if constexpr (MV == 0) {
            vt[i][p][0] = movm_t(k.row[0].x);
            vt[i][p][1] = movm_t(k.row[0].y);
            vt[i][p][2] = movm_t(k.row[1].x);
            vt[i][p][3] = movm_t(k.row[1].y);
          } else {  // transposed later (see MV in the kernel's comment)
            vt[i][p][0] = k.row[0].x;
            vt[i][p][1] = k.row[0].y;
            vt[i][p][2] = k.row[1].x;
            vt[i][p][3] = k.row[1].y;
          }
        }
      }
#pragma unroll
      for (int ii = 0; ii < IL; ++ii) {
        const int mt = (i0 + ii + mr) & 3;
#pragma unroll
        for (int nt = 0; nt < 2; ++nt)
          sp[((dw * 4 + mt) * 2 + nt) * WS + lane] =
              make_float4(c[ii][nt].v[0], c[ii][nt].v[1], c[ii][nt].v[2], c[ii][nt].v[3]);
      }
    }
  }
  __syncthreads();  // A: partial logits written; this tile's stage is free
  after_a();

  auto transpose = [&](int i) {
#pragma unroll
    for (int p = 0; p < 4; ++p)
#pragma unroll
      for (int e = 0; e < 4; ++e) vt[i][p][e] = movm_v(vt[i][p][e]);
  };
  // Reduce: warp (mr, rnt), lane (g, t): tokens 16 mr + g (s[0], s[1]) and + 8 (s[2], s[3]), heads
  // 8 rnt + 2 t + e (s[e], s[2 + e]).
  const int tok0 = 16 * mr + g;
  float s[4];
  {
    float4 acc;
    if constexpr (MV == 1 || MV == 3) {  // the partials' loads first, then MOVMs while they land
      float4 v[kDW];
#pragma unroll
      for (int d = 0; d < kDW; ++d) v[d] = sp[((d * 4 + mr) * 2 + rnt) * WS + lane];
#pragma unroll
      for (int i = 0; i < (MV == 1 ? 4 : 2); ++i) transpose(i);
      acc = v[0];
#pragma unroll
      for (int d = 1; d < kDW; ++d) {
        acc.x += v[d].x;
        acc.y += v[d].y;
        acc.z += v[d].z;
        acc.w += v[d].w;
      }
    } else {
      acc = sp[((0 * 4 + mr) * 2 + rnt) * WS + lane];
#pragma unroll
      for (int d = 1; d < kDW; ++d) {
        const float4 v = sp[((d * 4 + mr) * 2 + rnt) * WS + lane];
        acc.x += v.x;
        acc.y += v.y;
        acc.z += v.z;
        acc.w += v.w;
      }
    }
    const bool ok0 = tok0 < valid, ok1 = tok0 + 8 < valid;
    s[0] = ok0 ? acc.x * logit_scale : -INFINITY;
    s[1] = ok0 ? acc.y * logit_scale : -INFINITY;
    s[2] = ok1 ? acc.z * logit_scale : -INFINITY;
    s[3] = ok1 ? acc.w * logit_scale : -INFINITY;
  }
  float pv[4];
  auto write_p = [&]() {
#pragma unroll
    for (int i = 0; i < 4; ++i) pv[i] = ex2_fast(s[i] - ss.mred[i & 1]);
    pt_sm[pt_word(tok0, rnt, t)] = pack_f16x2(pv[0], pv[1]);
    pt_sm[pt_word(tok0 + 8, rnt, t)] = pack_f16x2(pv[2], pv[3]);
  };
  bool over = false;
#pragma unroll
  for (int i = 0; i < 4; ++i) over |= s[i] > ss.mred[i & 1] + kRescaleSlack;
  if (over) *flag_sm = int(j);  // read after B; the next write is after the next tile's A
  write_p();
  __syncthreads();  // B: P and the flag written
  const bool rescale = *flag_sm == int(j);
  if (rescale) {  // new reference maxima: tile maxima, rescale, P again
    float mx[2];
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      mx[e] = fmaxf(s[e], s[2 + e]);
#pragma unroll
      for (int off = 4; off < WS; off <<= 1) mx[e] = fmaxf(mx[e], __shfl_xor(mx[e], off));
    }
    if (g == 0) {
#pragma unroll
      for (int e = 0; e < 2; ++e) tmax_sm[(8 * rnt + 2 * t + e) * 4 + mr] = mx[e];
    }
    __syncthreads();
    float alpha[4];
#pragma unroll
    for (int jj = 0; jj < 4; ++jj) {
      const int h = 8 * (jj >> 1) + 2 * t + (jj & 1);
      const float4 u = *reinterpret_cast<const float4*>(tmax_sm + h * 4);
      const float m_tile = fmaxf(fmaxf(u.x, u.y), fmaxf(u.z, u.w));
      const float m_new = fmaxf(ss.m_ref[jj], m_tile);
      alpha[jj] = m_new == ss.m_ref[jj] ? 1.f : exp2f(ss.m_ref[jj] - m_new);
      ss.m_ref[jj] = m_new;
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int p = 0; p < 4; ++p)
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) o[p][nt].v[i] *= alpha[2 * nt + (i & 1)];
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      ss.mred[e] = rnt ? ss.m_ref[2 + e] : ss.m_ref[e];
      ss.lsum[e] *= rnt ? alpha[2 + e] : alpha[e];
    }
    write_p();
    __syncthreads();
  }
  ss.lsum[0] += pv[0] + pv[2];
  ss.lsum[1] += pv[1] + pv[3];

  // P V on the warp's dims: B = P^T fragments, one ldmatrix.x4.trans per m tile (lane l: row
  // 16 mt + (l & 7) + 8 ((l >> 3) & 1), head half l >> 4 -> b0 / b1 of n tile 0, then of n tile 1).
  const int lrow = (lane & 7) + 8 * ((lane >> 3) & 1), lhalf = lane >> 4;
  const uint32_t pt_base = smem_u32(pt_sm);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int mt = (i + mr) & 3;
    const int row = 16 * mt + lrow;
    mma::FragB pb[2];
    ldsm_x4_t(pt_base + 4 * uint32_t(pt_word(row, lhalf, 0)), pb[0].x, pb[0].y, pb[1].x, pb[1].y);
    if constexpr (MV == 2) transpose(i);
    if constexpr (MV == 3) {
      if (i >= 2) transpose(i);
    }
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      mma::FragA v;
      v.row[0].x = vt[i][p][0];
      v.row[1].x = vt[i][p][1];
      v.row[0].y = vt[i][p][2];
      v.row[1].y = vt[i][p][3];
      mma::mma<mma::Elem::f16>(o[p][0], v, pb[0]);
      mma::mma<mma::Elem::f16>(o[p][1], v, pb[1]);
    }
  }
}

#endif  // HARNESS_GPU && MLA_DIMS_SM90

#if defined(HARNESS_GPU)
// v15's persistent kernel (mla_dims::mla_fp8_dims_kernel<S, true, kOptFlag | kOptRope>) on dims_tile2, with
// the O staging's 16-byte chunks XOR-swizzled by (head / 2) % 4 (2-way instead of 8-way bank conflicts on
// the stores). MV: where the 64 MOVM a warp and tile run (the Q K^T phase saturates the MIO pipe with them,
// the K loads and the partial-logit stores): 0 in Q K^T, 1 after the reduction's loads (overlapping the
// reduction / softmax chain), 2 in P V before each m tile's mma, 3 half each in the reduction (m tiles
// i = 0, 1) and in P V (i = 2, 3).
template <int S, int MV>
__global__ void __launch_bounds__(kDW * kernel_warp_size(), 1)
    mla_fp8_dims2_kernel(MlaDecodeArgs a, int tokens_per_split, int splits, Partials part) {
#if defined(MLA_DIMS_SM90)
  using L = Smem<S>;
  constexpr int WS = kernel_warp_size();
  constexpr int kThreads = kDW * WS;
  static_assert(mma::kN == 8 && mma::kARows == 2, "NVIDIA m16n8k16 lane geometry");
  require_warp_size();

  extern __shared__ __align__(128) unsigned char smem[];
  int* flag_sm = reinterpret_cast<int*>(smem + L::flag);
  float* lpart_sm = reinterpret_cast<float*>(smem + L::lpart);
  float* l_sm = reinterpret_cast<float*>(smem + L::stats);
  float* m_sm = l_sm + kHeads;
  const uint32_t bar0 = smem_u32(smem + L::bar);

  const int tid = threadIdx.x;
  const Lane ln = lane_of();
  const int g = ln.g, t = ln.t, dw = ln.dw;

  struct Span {
    int64_t t0;
    int n_tokens, n_tiles, b, split;
  };
  auto span = [&](int item) {
    const int b = item / splits;
    const int split = item % splits;
    const int64_t kv_begin = a.kv_indptr[b], kv_end = a.kv_indptr[b + 1];
    const int64_t t0 = kv_begin + int64_t(split) * tokens_per_split;
    const int64_t left = kv_end - t0;
    const int n = left <= 0 ? 0 : int(left < tokens_per_split ? left : tokens_per_split);
    return Span{t0, n, (n + kT - 1) / kT, b, split};
  };
  const int first_item = int(blockIdx.x);
  const int item_step = int(gridDim.x);
  const int n_items = a.cfg.batch_size * splits;

  // Producer (thread 0): the block's tiles in consumption order, global tile j into stage j % S.
  int p_item = first_item, p_tile = 0;
  uint32_t p_j = 0;
  Span p_span{0, 0, 0, 0, 0};
  auto issue_next = [&]() {
    while (p_item < n_items && p_tile >= p_span.n_tiles) {
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
    *flag_sm = -1;
  }
  __syncthreads();
  if (tid == 0) {
    if (first_item < n_items) p_span = span(first_item);
    for (int s = 0; s < S; ++s) issue_next();
  }

  const float kv_scale = *a.kv_fp8_scale;
  const float logit_scale = a.cfg.sm_scale * 1.4426950408889634f * kv_scale;
  uint32_t j = 0;           // global tile counter
  uint32_t stage = 0, phase = 0;  // j % S, (j / S) & 1

  for (int item = first_item; item < n_items; item += item_step) {
    const Span w = span(item);
    // Q^T fragments of the warp's dims (as v15): k step p of n tile nt: b0 = dims 64 dw + 16 t + 4 p +
    // {0, 1}, b1 = + {2, 3} of head 8 nt + g; rope k step s: 512 + 32 (dw & 1) + 8 t + 4 s + {0, 1}, {2, 3}.
    mla_dims::QFrags q;
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
        const uint4 v = *reinterpret_cast<const uint4*>(qh + kDimV + 32 * (dw & 1) + 8 * t);
        q.qr2[nt][0][0] = mla_wide::bf16x2_to_f16x2(v.x);
        q.qr2[nt][0][1] = mla_wide::bf16x2_to_f16x2(v.y);
        q.qr2[nt][1][0] = mla_wide::bf16x2_to_f16x2(v.z);
        q.qr2[nt][1][1] = mla_wide::bf16x2_to_f16x2(v.w);
      }
      q.qr[0] = q.qr[1] = 0u;
    }
    SoftState ss;
#pragma unroll
    for (int e = 0; e < 4; ++e) ss.m_ref[e] = -INFINITY;
    ss.mred[0] = ss.mred[1] = -INFINITY;
    ss.lsum[0] = ss.lsum[1] = 0.f;
    mma::FragC o[4][2];
#pragma unroll
    for (int p = 0; p < 4; ++p)
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) o[p][nt] = mma::FragC{{0.f, 0.f, 0.f, 0.f}};

    for (int tile = 0; tile < w.n_tiles; ++tile, ++j) {
      const unsigned char* st = smem + stage * L::stage;
      const int valid = min(kT, w.n_tokens - tile * kT);
      mbar_wait(bar0 + 8 * stage, phase);
      dims_tile2<S, MV>(smem, ln, st, valid, j, q, logit_scale, ss, o, [&] {
        if (tid == 0) issue_next();
      });
      if (++stage == S) {
        stage = 0;
        phase ^= 1u;
      }
    }

    // Denominators: lane sums over g, then over the 4 m-tile warps; reference maxima; O through shared memory.
#pragma unroll
    for (int e = 0; e < 2; ++e) {
#pragma unroll
      for (int off = 4; off < WS; off <<= 1) ss.lsum[e] += __shfl_xor(ss.lsum[e], off);
    }
    if (g == 0) {
#pragma unroll
      for (int e = 0; e < 2; ++e) lpart_sm[ln.mr * kHeads + 8 * ln.rnt + 2 * t + e] = ss.lsum[e];
      if (dw == 0) {
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) m_sm[8 * (jj >> 1) + 2 * t + (jj & 1)] = ss.m_ref[jj];
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
          o_sm[head * kDimV + 4 * ((dim >> 2) ^ t) + (dim & 3)] = o[p][nt].v[i];  // (head / 2) % 4 = t
        }
    __syncthreads();
    if (tid < kHeads) l_sm[tid] = lpart_sm[tid] + lpart_sm[kHeads + tid] + lpart_sm[2 * kHeads + tid] + lpart_sm[3 * kHeads + tid];
    __syncthreads();
    for (int c = tid; c < kHeads * kDimV / 4; c += kThreads) {
      const int h = c / (kDimV / 4), dim = 4 * (c % (kDimV / 4));
      const float l = l_sm[h];
      const float f = l > 0.f ? kv_scale / l : 0.f;
      const float4 v = *reinterpret_cast<const float4*>(o_sm + h * kDimV + 4 * ((dim >> 2) ^ ((h >> 1) & 3)));
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
    __syncthreads();  // the next item reuses the O staging and the statistics
  }
#else
  (void)a; (void)tokens_per_split; (void)splits; (void)part;
  __builtin_trap();
#endif
}

#if !defined(__HIP_PLATFORM_AMD__)
// v15's split plan, workspace and launch (min(items, SMs) persistent blocks, then the one-pass combine).
template <int S, int MV>
struct Dims2 {
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
      harness_check(hipFuncSetAttribute(reinterpret_cast<const void*>(mla_fp8_dims2_kernel<S, MV>),
                                        hipFuncAttributeMaxDynamicSharedMemorySize, int(L::total)),
                    "hipFuncSetAttribute(mla_fp8_dims2_kernel)");
      return true;
    }();
    (void)attr_set;
    const Partials part = partials_in(a.workspace, a.cfg.batch_size, pl.splits);
    const int threads = kDW * current_device_shape().warp_size;
    const int items = a.cfg.batch_size * pl.splits;
    const dim3 grid(unsigned(std::min<int64_t>(items, current_device_shape().compute_units)));
    mla_fp8_dims2_kernel<S, MV><<<grid, threads, L::total>>>(a, pl.tokens_per_split, pl.splits, part);
    harness_check_launch(name);
    if (pl.splits > 1) {
      mla_dims::combine_splits_wide_kernel<<<a.cfg.batch_size * kHeads, kDimV / 4>>>(part, pl.splits, a.out);
      harness_check_launch("mla combine_splits_wide_kernel");
    }
  }
};
#endif  // !__HIP_PLATFORM_AMD__
#endif

}  // namespace
}  // namespace mla_dims2
