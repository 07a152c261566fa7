// mla_decode on fp8 KV, v20's dims tile for the large shapes (mla-large): v18's persistent dims kernel
// (problems/common/mla_fp8_dims2.h, Dims2<3, 3>: 8 dim warps, one block per SM, 64-token tiles, one bulk
// copy a tile, 3-stage ring, MOVMs half after the reduction's loads, half in P V) with less work on the
// shared-memory (MIO) pipe, which bounds v18's tile (docs/perf.md, section "mla_decode v18"). Options (OPT
// bits, all measured on the H200 in docs/perf.md, section "mla_decode v20"; v20 = F16P | QP | EF, R 2, S 3):
//  - kF16P: Q K^T accumulated in f16 (mma .f16 accumulators, Q pre-scaled by 2^-3 so that a 64-dim partial
//    of |q| <= 8, |k| <= 448 stays far below the f16 range), so the partial logits are f16x2 pairs: half
//    the shared-memory round trip (a uint2 instead of a float4 a lane, m tile and n tile), half the
//    accumulator registers; the 8 partials are summed as f16x2 and converted once. Measured -1 to -6.4%;
//  - kPM: the V^T fragments from byte pairs: for each K word pair (token g, token g + 8 of an m tile, the
//    same 4 dims) two PRMTs make 16-bit units (token g, token g + 8) of one dim, a movmatrix transposes
//    those (4 fp8 values a lane instead of 2 f16), then two e4m3x2 conversions give the A fragments of
//    O^T = V^T P^T with the token order 2t, 2t+8 | 2t+1, 2t+9 inside each k16 step (the P^T ldmatrix rows
//    follow it; the P^T chunks are swizzled for that order). Half the MOVMs (32 instead of 64 a warp and
//    tile), the raw K words kept instead of the converted fragments (32 registers instead of 64), 64 more
//    conversions a warp and tile. Measured SLOWER (+1.2 to +3.2%: the conversions cost more than the MOVMs);
//  - kQP: each item's Q bulk-copied into shared memory (two buffers, one item ahead) instead of global
//    loads at the item's start (the item switch of bs 256 / kv 1024). Measured -1 us without EF, ~0 with it;
//  - kEF: the KV tiles' bulk copies with an L2 evict_first policy: the timed call starts with L2 full of the
//    cache flush's dirty lines; KV read once does not need to displace them (each displaced line is a DRAM
//    write-back competing with the KV reads, ~50 MB against 151 MB of KV at bs 32 / kv 8192). Measured
//    -2.0 to -3.0 us on all four large shapes;
//  - kMG: when every block has exactly one item of a split plan (bs 32 / kv 8192: 32 x 4 splits, bs 64 /
//    kv 8192: 64 x 2, on 128 SMs), no combine kernel: the kernel is a cooperative launch (all blocks
//    resident, or the launch fails), each block writes its partial (O, log2-sum-exp) as before, counts
//    itself on its batch's counter (a __device__ array of this header, zero at module load, put back to
//    zero by the last block to leave), waits until all the batch's splits have written, then merges the
//    heads h = split (mod splits) of its batch from the partials in L2 and writes them. Measured -0.7 us at
//    4 splits, +1.4 us at 2 (a block waits for its batch's slowest split); off in v20;
//  - kSP: the kv_indptr pairs of the block's items loaded once at the kernel's start into shared memory
//    (v18 loads them at each item's start: a dependent DRAM round trip queued behind the KV copies).
//    Measured no change; off in v20.
// R: the m tiles whose V^T fragments are made right after the reduction's loads are issued (the rest in
// P V before their mma); v18: 2 (3 and 4 measured within 1%).
// Interface for composed variants: Dims3<S, OPT, R>::applies(cfg) (batch * kv_len > 65536), workspace_bytes(cfg),
// launch(args).
#pragma once
#include <cstring>

#include "problems/common/mla_fp8_dims2.h"

namespace mla_dims3 {
namespace {  // internal linkage: every variant file gets its own kernels, launch statics and attributes

using namespace mla_kernels;
using mla_dims::kDW;
using mla_dims::kRescaleSlack;
using mla_dims::kT;

constexpr int kF16P = 1;
constexpr int kPM = 2;
constexpr int kQP = 4;
constexpr int kEF = 8;
constexpr int kMG = 16;
constexpr int kSP = 32;
constexpr int kLean = 128;  // a short tile's row fill kept rolled (mla_dims::fill_rows_rolled; also dims4 / dims5's)
constexpr int kSpanSlots = 64;  // SP: the block's first 64 items
constexpr int kMaxMergeBatches = 1 << 14;
constexpr float kQScaleF16P = 0.125f;  // Q pre-scale with f16 partials (exact power of two)

template <int S, int OPT>
struct Smem {
  static constexpr size_t stage = size_t(kT) * kDimQK;
  static constexpr size_t sp = size_t(S) * stage;                   // partial logits; end: O [16][512] float
  static constexpr size_t p = sp + size_t(kDW) * kT * kHeads * 4;   // P^T [64 tokens][16 heads] f16
  static constexpr size_t tmax = p + size_t(kT) * kHeads * 2;      // [16 heads][4 m tiles] float
  static constexpr size_t lpart = tmax + size_t(kHeads) * 4 * 4;   // [4 m tiles][16 heads] float
  static constexpr size_t stats = lpart + size_t(4) * kHeads * 4;  // l[16], m[16]
  static constexpr size_t flag = stats + 2 * kHeads * 4;
  static constexpr size_t bar = flag + 16;  // S ring mbarriers, then 2 Q mbarriers
  static constexpr size_t spn = bar + size_t(S + 2) * 8;  // SP: [kSpanSlots][2] int (kv_indptr pairs)
  static constexpr size_t qbytes = size_t(kHeads) * kDimQK * 2;
  static constexpr size_t q = (spn + size_t(kSpanSlots) * 8 + 127) / 128 * 128;  // QP: 2 x [16][576] bf16
  static constexpr size_t total = (OPT & kQP) ? q + 2 * qbytes : q;
  static_assert(kDW * kT * kHeads * 4 >= kHeads * kDimV * 4, "O staging fits in the partial-logit area");
};

#if defined(HARNESS_GPU) && !defined(__HIP_PLATFORM_AMD__)
// MG: per batch, [0] arrivals, [1] departures.
static __device__ unsigned int g_mla_dims3_merge_counters[2 * kMaxMergeBatches];
#endif

#if defined(HARNESS_GPU) && defined(MLA_DIMS_SM90)
using mla_dims::bulk_copy;
using mla_dims::mbar_expect_tx;
using mla_dims::mbar_init;
using mla_dims::mbar_init_fence;
using mla_dims::mbar_wait;
using mla_dims::smem_u32;
using mla_dims2::e4m3_hi;
using mla_dims2::e4m3_lo;
using mla_dims2::ex2_fast;
using mla_dims2::Lane;
using mla_dims2::lane_of;
using mla_dims2::ldsm_x4_t;
using mla_dims2::movm_v;
using mla_dims2::pack_f16x2;
using mla_dims2::SoftState;

__device__ inline uint64_t policy_evict_first() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
  return p;
}
__device__ inline void bulk_copy_hint(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar, uint64_t pol) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;\n" ::"r"(dst),
      "l"(src), "r"(bytes), "r"(bar), "l"(pol)
      : "memory");
}
__device__ inline void mma_f16acc(uint32_t (&c)[2], const mma::FragA& a, uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%0,%1};\n"
      : "+r"(c[0]), "+r"(c[1])
      : "r"(a.row[0].x), "r"(a.row[1].x), "r"(a.row[0].y), "r"(a.row[1].y), "r"(b0), "r"(b1));
}
__device__ inline uint32_t hadd2(uint32_t x, uint32_t y) {
  uint32_t r;
  asm("add.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(x), "r"(y));
  return r;
}
__device__ inline float2 f16x2_to_f32(uint32_t x) {
  float lo, hi;
  asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %2;\ncvt.f32.f16 %0, l;\ncvt.f32.f16 %1, h;\n}" : "=f"(lo), "=f"(hi) : "r"(x));
  return make_float2(lo, hi);
}
// bf16x2 -> f16x2 with a power-of-two scale (1: v18's conversion)
__device__ inline uint32_t q_f16x2(uint32_t w, float scale) {
  return pack_f16x2(__uint_as_float(w << 16) * scale, __uint_as_float(w & 0xffff0000u) * scale);
}

// P^T layout, 16-byte chunks (token k, head half c), word t of the chunk. PM: chunk 16 (k >> 3) + 8 c +
// ((k & 7) ^ ((k >> 3) & 1)), conflict-free for the writes (8 consecutive tokens) and for the ldmatrix rows
// of the PM token order (tokens 2u + h + 8 v); otherwise v18's (k * 2 + (c ^ ((k >> 2) & 1))).
template <bool PM>
__device__ inline int pt_word(int k, int c, int t) {
  if constexpr (PM)
    return 4 * (16 * (k >> 3) + 8 * c + ((k & 7) ^ ((k >> 3) & 1))) + t;
  else
    return k * 8 + 4 * (c ^ ((k >> 2) & 1)) + t;
}

// One 64-token tile (stage st, valid tokens, global tile counter j; its copy has landed).
template <int S, int OPT, int R, class AfterA>
__device__ __forceinline__ void dims_tile3(unsigned char* smem, const Lane& ln, const unsigned char* st, int valid,
                                           uint32_t j, const mla_dims::QFrags& q, float logit_scale, SoftState& ss,
                                           mma::FragC (&o)[4][2], AfterA&& after_a) {
  using L = Smem<S, OPT>;
  constexpr bool F16P = (OPT & kF16P) != 0;
  constexpr bool PM = (OPT & kPM) != 0;
  constexpr int WS = kernel_warp_size();
  int* flag_sm = reinterpret_cast<int*>(smem + L::flag);
  uint32_t* pt_sm = reinterpret_cast<uint32_t*>(smem + L::p);
  float* tmax_sm = reinterpret_cast<float*>(smem + L::tmax);
  const int g = ln.g, t = ln.t, dw = ln.dw, mr = ln.mr, rnt = ln.rnt;
  const int lane = 4 * g + t;
  const auto& qb = q.qb;
  const auto& qr2 = q.qr2;

  // V^T material kept across the barriers: PM: the raw K words (token g, g + 8) of m tile i, then the
  // transposed byte pairs; else: the converted K fragments, then transposed (v18).
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
    // The four m tiles interleaved (k step outermost), all K loads first (v18's IL 4).
    uint4 kg[4], kh[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const unsigned char* rowg = st + (16 * ((i + mr) & 3) + g) * kDimQK + 64 * dw + 16 * t;
      kg[i] = *reinterpret_cast<const uint4*>(rowg);
      kh[i] = *reinterpret_cast<const uint4*>(rowg + 8 * kDimQK);
    }
    mma::FragC c[4][2];
    uint32_t c16[4][2][2];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        c[i][nt] = mma::FragC{{0.f, 0.f, 0.f, 0.f}};
        c16[i][nt][0] = c16[i][nt][1] = 0u;
      }
#pragma unroll
    for (int s = 0; s < 2; ++s) {  // the rope of m tile mr (i = 0)
      if constexpr (F16P) {
        mma_f16acc(c16[0][0], ropeA[s], qr2[0][s][0], qr2[0][s][1]);
        mma_f16acc(c16[0][1], ropeA[s], qr2[1][s][0], qr2[1][s][1]);
      } else {
        mma::mma<mma::Elem::f16>(c[0][0], ropeA[s], make_uint2(qr2[0][s][0], qr2[0][s][1]));
        mma::mma<mma::Elem::f16>(c[0][1], ropeA[s], make_uint2(qr2[1][s][0], qr2[1][s][1]));
      }
    }
#pragma unroll
    for (int p = 0; p < 4; ++p) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const uint32_t wg = p == 0 ? kg[i].x : p == 1 ? kg[i].y : p == 2 ? kg[i].z : kg[i].w;
        const uint32_t wh = p == 0 ? kh[i].x : p == 1 ? kh[i].y : p == 2 ? kh[i].z : kh[i].w;
        mma::FragA k;
        k.row[0].x = e4m3_lo(wg);
        k.row[1].x = e4m3_lo(wh);
        k.row[0].y = e4m3_hi(wg);
        k.row[1].y = e4m3_hi(wh);
        if constexpr (F16P) {
          mma_f16acc(c16[i][0], k, qb[0][p][0], qb[0][p][1]);
          mma_f16acc(c16[i][1], k, qb[1][p][0], qb[1][p][1]);
        } else {
          mma::mma<mma::Elem::f16>(c[i][0], k, make_uint2(qb[0][p][0], qb[0][p][1]));
          mma::mma<mma::Elem::f16>(c[i][1], k, make_uint2(qb[1][p][0], qb[1][p][1]));
        }
        if constexpr (PM) {
          vt[i][p][0] = wg;
          vt[i][p][1] = wh;
        } else {
          vt[i][p][0] = k.row[0].x;
          vt[i][p][1] = k.row[0].y;
          vt[i][p][2] = k.row[1].x;
          vt[i][p][3] = k.row[1].y;
        }
      }
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int mt = (i + mr) & 3;
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        if constexpr (F16P) {
          uint2* sp2 = reinterpret_cast<uint2*>(smem + L::sp);
          sp2[((dw * 4 + mt) * 2 + nt) * WS + lane] = make_uint2(c16[i][nt][0], c16[i][nt][1]);
        } else {
          float4* sp = reinterpret_cast<float4*>(smem + L::sp);
          sp[((dw * 4 + mt) * 2 + nt) * WS + lane] =
              make_float4(c[i][nt].v[0], c[i][nt].v[1], c[i][nt].v[2], c[i][nt].v[3]);
        }
      }
    }
  }
  __syncthreads();  // A: partial logits written; this tile's stage is free
  after_a();

  auto transpose = [&](int i) {
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      if constexpr (PM) {
        const uint32_t wg = vt[i][p][0], wh = vt[i][p][1];
        vt[i][p][0] = movm_v(__byte_perm(wg, wh, 0x5140));  // (g, g+8) pairs of dims 16 t + 4 p + {0, 1}
        vt[i][p][1] = movm_v(__byte_perm(wg, wh, 0x7362));  // of dims + {2, 3}
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) vt[i][p][e] = movm_v(vt[i][p][e]);
      }
    }
  };
  // Reduce: warp (mr, rnt), lane (g, t): tokens 16 mr + g (s[0], s[1]) and + 8 (s[2], s[3]), heads
  // 8 rnt + 2 t + e (s[e], s[2 + e]).
  const int tok0 = 16 * mr + g;
  float s[4];
  {
    float4 acc;
    if constexpr (F16P) {
      const uint2* sp2 = reinterpret_cast<const uint2*>(smem + L::sp);
      uint2 v[kDW];
#pragma unroll
      for (int d = 0; d < kDW; ++d) v[d] = sp2[((d * 4 + mr) * 2 + rnt) * WS + lane];
#pragma unroll
      for (int i = 0; i < R; ++i) transpose(i);
      const uint32_t x = hadd2(hadd2(hadd2(v[0].x, v[1].x), hadd2(v[2].x, v[3].x)),
                               hadd2(hadd2(v[4].x, v[5].x), hadd2(v[6].x, v[7].x)));
      const uint32_t y = hadd2(hadd2(hadd2(v[0].y, v[1].y), hadd2(v[2].y, v[3].y)),
                               hadd2(hadd2(v[4].y, v[5].y), hadd2(v[6].y, v[7].y)));
      const float2 fx = f16x2_to_f32(x), fy = f16x2_to_f32(y);
      acc = make_float4(fx.x, fx.y, fy.x, fy.y);
    } else {
      const float4* sp = reinterpret_cast<const float4*>(smem + L::sp);
      float4 v[kDW];
#pragma unroll
      for (int d = 0; d < kDW; ++d) v[d] = sp[((d * 4 + mr) * 2 + rnt) * WS + lane];
#pragma unroll
      for (int i = 0; i < R; ++i) transpose(i);
      acc = v[0];
#pragma unroll
      for (int d = 1; d < kDW; ++d) {
        acc.x += v[d].x;
        acc.y += v[d].y;
        acc.z += v[d].z;
        acc.w += v[d].w;
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
    pt_sm[pt_word<PM>(tok0, rnt, t)] = pack_f16x2(pv[0], pv[1]);
    pt_sm[pt_word<PM>(tok0 + 8, rnt, t)] = pack_f16x2(pv[2], pv[3]);
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

  // P V on the warp's dims: B = P^T fragments, one ldmatrix.x4.trans per m tile (lane l supplies row r =
  // l & 7 of matrix l >> 3: k half h = (l >> 3) & 1, head half l >> 4). Token of row r, half h: v18: 8 h + r;
  // PM: 2 (r >> 1) + h + 8 (r & 1) (the byte-pair order of the A fragments).
  const int lr = lane & 7, lh = (lane >> 3) & 1, lhalf = lane >> 4;
  const int lrow = PM ? 2 * (lr >> 1) + lh + 8 * (lr & 1) : lr + 8 * lh;
  const uint32_t pt_base = smem_u32(pt_sm);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int mt = (i + mr) & 3;
    const int row = 16 * mt + lrow;
    mma::FragB pb[2];
    ldsm_x4_t(pt_base + 4 * uint32_t(pt_word<PM>(row, lhalf, 0)), pb[0].x, pb[0].y, pb[1].x, pb[1].y);
    if (i >= R) transpose(i);
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      mma::FragA v;
      if constexpr (PM) {
        // vt[i][p][0]: dim 16 (g >> 1) + 4 p + (g & 1) (row g), vt[i][p][1]: + 2 (row g + 8); low bytes of
        // each 16-bit half: tokens 2t, 2t+1, high bytes: 2t+8, 2t+9.
        v.row[0].x = e4m3_lo(vt[i][p][0]);  // k 2t, 2t+1 = tokens 2t, 2t+8
        v.row[1].x = e4m3_lo(vt[i][p][1]);
        v.row[0].y = e4m3_hi(vt[i][p][0]);  // k 2t+8, 2t+9 = tokens 2t+1, 2t+9
        v.row[1].y = e4m3_hi(vt[i][p][1]);
      } else {
        v.row[0].x = vt[i][p][0];
        v.row[1].x = vt[i][p][1];
        v.row[0].y = vt[i][p][2];
        v.row[1].y = vt[i][p][3];
      }
      mma::mma<mma::Elem::f16>(o[p][0], v, pb[0]);
      mma::mma<mma::Elem::f16>(o[p][1], v, pb[1]);
    }
  }
}

#endif  // HARNESS_GPU && MLA_DIMS_SM90

#if defined(HARNESS_GPU)
// v18's persistent kernel (mla_dims2::mla_fp8_dims2_kernel<S, 3>) on dims_tile3; QP: Q from shared memory.
template <int S, int OPT, int R>
__global__ void __launch_bounds__(kDW * kernel_warp_size(), 1)
    mla_fp8_dims3_kernel(MlaDecodeArgs a, int tokens_per_split, int splits, Partials part) {
#if defined(MLA_DIMS_SM90)
  using L = Smem<S, OPT>;
  constexpr bool QP = (OPT & kQP) != 0;
  constexpr float kQScale = (OPT & kF16P) ? kQScaleF16P : 1.f;
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
  const uint32_t qbar0 = bar0 + 8 * S;

  const int tid = threadIdx.x;
  const Lane ln = mla_dims2::lane_of();
  const int g = ln.g, t = ln.t, dw = ln.dw;

  struct Span {
    int64_t t0;
    int n_tokens, n_tiles, b, split;
  };
  auto span_of = [&](int item, int64_t kv_begin, int64_t kv_end) {
    const int b = item / splits;
    const int split = item % splits;
    const int64_t t0 = kv_begin + int64_t(split) * tokens_per_split;
    const int64_t left = kv_end - t0;
    const int n = left <= 0 ? 0 : int(left < tokens_per_split ? left : tokens_per_split);
    return Span{t0, n, (n + kT - 1) / kT, b, split};
  };
  auto span = [&](int item) {
    const int b = item / splits;
    return span_of(item, a.kv_indptr[b], a.kv_indptr[b + 1]);
  };
  int* spn_sm = reinterpret_cast<int*>(smem + L::spn);
  const int first_item = int(blockIdx.x);
  const int item_step = int(gridDim.x);
  const int n_items = a.cfg.batch_size * splits;

  // Producer (thread 0): the block's tiles in consumption order, global tile j into stage j % S.
  int p_item = first_item, p_tile = 0;
  uint32_t p_j = 0;
  Span p_span{0, 0, 0, 0, 0};
  uint64_t pol = 0;
  if constexpr ((OPT & kEF) != 0) {
    if (tid == 0) pol = policy_evict_first();
  }
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
    if constexpr ((OPT & kEF) != 0)
      bulk_copy_hint(dst, src, uint32_t(valid * kDimQK), bar, pol);
    else
      bulk_copy(dst, src, uint32_t(valid * kDimQK), bar);
    if constexpr ((OPT & kLean) != 0)
      mla_dims::fill_rows_rolled(dst, src + (valid - 1) * kDimQK, valid, kDimQK, bar);
    else
      for (int r = valid; r < kT; ++r) bulk_copy(dst + r * kDimQK, src + (valid - 1) * kDimQK, kDimQK, bar);
    ++p_tile;
    ++p_j;
  };
  // QP: item number k of the block (item first_item + k * item_step) into Q buffer k & 1.
  auto issue_q = [&](int k) {
    const int item = first_item + k * item_step;
    if (item >= n_items) return;
    const uint32_t bar = qbar0 + 8 * (k & 1);
    mbar_expect_tx(bar, uint32_t(L::qbytes));
    bulk_copy(smem_u32(smem + L::q + (k & 1) * L::qbytes), a.q + int64_t(item / splits) * kHeads * kDimQK,
              uint32_t(L::qbytes), bar);
  };
  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < S + 2; ++s) mbar_init(bar0 + 8 * s, 1);
    mbar_init_fence();
    *flag_sm = -1;
  }
  __syncthreads();
  if (tid == 0) {
    if (first_item < n_items) p_span = span(first_item);
    if constexpr (QP) issue_q(0);
    for (int s = 0; s < S; ++s) issue_next();
  }
  if constexpr ((OPT & kSP) != 0) {  // thread k: the block's item k
    const int item = first_item + tid * item_step;
    if (tid < kSpanSlots && item < n_items) {
      const int b = item / splits;
      spn_sm[2 * tid] = a.kv_indptr[b];
      spn_sm[2 * tid + 1] = a.kv_indptr[b + 1];
    }
    __syncthreads();
  }

  const float kv_scale = *a.kv_fp8_scale;
  const float logit_scale = a.cfg.sm_scale * 1.4426950408889634f * kv_scale / kQScale;
  uint32_t j = 0;                 // global tile counter
  uint32_t stage = 0, phase = 0;  // j % S, (j / S) & 1

  int k_item = 0;
  for (int item = first_item; item < n_items; item += item_step, ++k_item) {
    const Span w = ((OPT & kSP) != 0 && k_item < kSpanSlots)
                       ? span_of(item, spn_sm[2 * k_item], spn_sm[2 * k_item + 1])
                       : span(item);
    // Q^T fragments of the warp's dims (as v15 / v18): k step p of n tile nt: b0 = dims 64 dw + 16 t + 4 p +
    // {0, 1}, b1 = + {2, 3} of head 8 nt + g; rope k step s: 512 + 32 (dw & 1) + 8 t + 4 s + {0, 1}, {2, 3}.
    mla_dims::QFrags q;
    {
      const uint16_t* qbase;
      if constexpr (QP) {
        if (tid == 0) issue_q(k_item + 1);  // buffer (k + 1) & 1 was last read at item k - 1's start
        mbar_wait(qbar0 + 8 * (k_item & 1), uint32_t((k_item >> 1) & 1));
        qbase = reinterpret_cast<const uint16_t*>(smem + L::q + (k_item & 1) * L::qbytes);
      } else {
        qbase = a.q + int64_t(w.b) * kHeads * kDimQK;
      }
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        const uint16_t* qh = qbase + (8 * nt + g) * kDimQK;
#pragma unroll
        for (int p = 0; p < 4; ++p) {
          const uint2 v = *reinterpret_cast<const uint2*>(qh + 64 * dw + 16 * t + 4 * p);
          q.qb[nt][p][0] = q_f16x2(v.x, kQScale);
          q.qb[nt][p][1] = q_f16x2(v.y, kQScale);
        }
        const uint4 v = *reinterpret_cast<const uint4*>(qh + kDimV + 32 * (dw & 1) + 8 * t);
        q.qr2[nt][0][0] = q_f16x2(v.x, kQScale);
        q.qr2[nt][0][1] = q_f16x2(v.y, kQScale);
        q.qr2[nt][1][0] = q_f16x2(v.z, kQScale);
        q.qr2[nt][1][1] = q_f16x2(v.w, kQScale);
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
      dims_tile3<S, OPT, R>(smem, ln, st, valid, j, q, logit_scale, ss, o, [&] {
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
    if constexpr ((OPT & kMG) != 0) {
      if (splits > 1) {  // the launch guarantees one item a block and all blocks resident
        asm volatile("fence.acq_rel.gpu;" ::: "memory");
        __syncthreads();
        if (tid == 0) {
          unsigned int* ctr = g_mla_dims3_merge_counters + 2 * w.b;
          atomicAdd(ctr, 1u);
          for (;;) {
            unsigned int v;
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(ctr) : "memory");
            if (v >= unsigned(splits)) break;
            __nanosleep(64);
          }
          if (atomicAdd(ctr + 1, 1u) == unsigned(splits - 1)) {  // the last to leave: back to zero
            atomicExch(ctr, 0u);
            atomicExch(ctr + 1, 0u);
          }
        }
        __syncthreads();
        asm volatile("fence.acq_rel.gpu;" ::: "memory");
        const int nh = w.split < kHeads ? (kHeads - 1 - w.split) / splits + 1 : 0;  // heads split, split + splits, ..
        for (int u = tid; u < nh * (kDimV / 4); u += kThreads) {
          const int h = w.split + splits * (u / (kDimV / 4)), dim = 4 * (u % (kDimV / 4));
          const float* lse = part.lse + size_t(w.b) * splits * kHeads + h;
          float mx = -INFINITY;
          for (int s2 = 0; s2 < splits; ++s2) mx = fmaxf(mx, __ldcg(lse + size_t(s2) * kHeads));
          float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
          float total = 0.f;
          for (int s2 = 0; s2 < splits; ++s2) {
            const float l = __ldcg(lse + size_t(s2) * kHeads);
            const float wt = l == -INFINITY ? 0.f : ex2_fast(l - mx);
            const float4 v = __ldcg(reinterpret_cast<const float4*>(
                part.o + ((size_t(w.b) * splits + s2) * kHeads + h) * kDimV + dim));
            total += wt;
            acc.x += wt * v.x;
            acc.y += wt * v.y;
            acc.z += wt * v.z;
            acc.w += wt * v.w;
          }
          const float inv = total > 0.f ? 1.f / total : 0.f;
          *reinterpret_cast<uint2*>(a.out + (int64_t(w.b) * kHeads + h) * kDimV + dim) =
              make_uint2(pack16(f32_to_bf16_bits(acc.x * inv), f32_to_bf16_bits(acc.y * inv)),
                         pack16(f32_to_bf16_bits(acc.z * inv), f32_to_bf16_bits(acc.w * inv)));
        }
      }
    }
    __syncthreads();  // the next item reuses the O staging and the statistics
  }
#else
  (void)a; (void)tokens_per_split; (void)splits; (void)part;
  __builtin_trap();
#endif
}

#if !defined(__HIP_PLATFORM_AMD__)
// v18's split plan, workspace and launch (min(items, SMs) persistent blocks, then the one-pass combine).
// applies(): the shapes v20 runs this path on (batch * kv_len above 65536 tokens).
template <int S, int OPT, int R = 2>
struct Dims3 {
  static bool applies(const MlaDecodeConfig& c) { return int64_t(c.batch_size) * c.kv_seq_len > 65536; }
  static SplitPlan plan(const MlaDecodeConfig& c) {
    return plan_splits(c.batch_size, c.kv_seq_len, current_device_shape().compute_units, 1, kT, 128);
  }
  static size_t workspace_bytes(const MlaDecodeConfig& c) { return partials_bytes(c.batch_size, plan(c).splits); }
  // MG: a split plan of one item a block (items <= SMs; one block per SM by its shared memory).
  static bool merges(const MlaDecodeConfig& c, const SplitPlan& pl) {
    return (OPT & kMG) != 0 && pl.splits > 1 && c.batch_size <= kMaxMergeBatches &&
           int64_t(c.batch_size) * pl.splits <= current_device_shape().compute_units;
  }
  static void launch(const MlaDecodeArgs& a, const char* name = "mla_fp8_dims3_kernel") {
    using L = Smem<S, OPT>;
    require_mla_shape(a.cfg);
    const SplitPlan pl = plan(a.cfg);
    if (a.workspace_size < partials_bytes(a.cfg.batch_size, pl.splits))
      throw std::runtime_error(std::string(name) + ": workspace too small");
    static const bool attr_set = [] {
      harness_check(hipFuncSetAttribute(reinterpret_cast<const void*>(mla_fp8_dims3_kernel<S, OPT, R>),
                                        hipFuncAttributeMaxDynamicSharedMemorySize, int(L::total)),
                    "hipFuncSetAttribute(mla_fp8_dims3_kernel)");
      return true;
    }();
    (void)attr_set;
    const Partials part = partials_in(a.workspace, a.cfg.batch_size, pl.splits);
    const int threads = kDW * current_device_shape().warp_size;
    const int items = a.cfg.batch_size * pl.splits;
    const dim3 grid(unsigned(std::min<int64_t>(items, current_device_shape().compute_units)));
    if (merges(a.cfg, pl)) {  // cooperative launch: every block resident, or an error
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = grid;
      cfg.blockDim = dim3(unsigned(threads));
      cfg.dynamicSmemBytes = L::total;
      cudaLaunchAttribute attr[1];
      std::memset(attr, 0, sizeof(attr));
      attr[0].id = cudaLaunchAttributeCooperative;
      attr[0].val.cooperative = 1;
      cfg.attrs = attr;
      cfg.numAttrs = 1;
      harness_check(cudaLaunchKernelEx(&cfg, mla_fp8_dims3_kernel<S, OPT, R>, a, pl.tokens_per_split, pl.splits, part),
                    name);
      harness_check_launch(name);
      return;
    }
    mla_fp8_dims3_kernel<S, OPT, R><<<grid, threads, L::total>>>(a, pl.tokens_per_split, pl.splits, part);
    harness_check_launch(name);
    if (pl.splits > 1) {
      mla_dims::combine_splits_wide_kernel<<<a.cfg.batch_size * kHeads, kDimV / 4>>>(part, pl.splits, a.out);
      harness_check_launch("mla combine_splits_wide_kernel");
    }
  }
};
#endif  // !__HIP_PLATFORM_AMD__
#endif  // HARNESS_GPU

}  // namespace
}  // namespace mla_dims3
