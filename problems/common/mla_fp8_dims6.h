// mla_decode on fp8 KV, the 32-tile large shapes (mla-large4, session 9): mla_dims5's DirPath kernel (v22's
// persistent plan, v20's dims tile with F16P | QP | EF, R 2, 3 stages, the output or the split partials written
// straight from the P V accumulators, bs 32 / kv 8192's splits merged in the kernel; dims_tile3 copied as tile6 with
// the K words passed in) with these compile-time flags F (docs/perf-mla-large4.md, to be merged into docs/perf.md):
//  - fMg: mla_dims5's in-kernel merge of the splits (cooperative launch, one item a block).
//  - fHp (with fMg): the split partials stored as f16 ([batch][splits][16][512] f16 in the f32 area's first
//    half, one 16-byte store a head and lane instead of two float4) and merged from f16 quads. bs 32 / kv 8192:
//    -0.7 us against v24 (v25).
//  - fQn: the next item's Q fragments built right after an item's last tile, before its epilogue. bs 256 /
//    kv 1024: no gain (measured +0.1..+0.4 us against the same kernel without it).
//  - fPf: the next tile's K words loaded from shared memory after this tile's last barrier, before its P V
//    (its mbarrier waited for there). Measured SLOWER: +0.7 / +1.1 us (bs 32 / kv 8192, bs 256 / kv 1024).
//  - (removed) fPt, with fPf: the prefetch only when the next tile's copy had already landed (mbarrier.test_wait
//    and a warp vote), else at the top of the next tile. Measured SLOWER: +2.1 / +1.0 us against no fPf.
//  - fTs (measurement only): thread 0 of each block records globaltimer at the phases; the host prints the N-th
//    launch's summary per shape (env MLA_D6_TS=N; it synchronises the device). v25t.hip.
// Template INIT (1..S): copies issued at the block's start (the other S - INIT right after tile 0 lands); S =
// mla_dims5's behaviour. 1 / 2 measured slower (+0.2..+1.1 us).
// Interface for composed variants: SplitPath6<S, OPT, R, F> (the split shapes merged in the kernel; v25) and
// DirPath6<S, OPT, R, F, INIT> (applies: 65536 < batch * kv_len <= 262144), each with applies / workspace_bytes /
// launch.
#pragma once
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include "problems/common/mla_fp8_dims3.h"

namespace mla_dims6 {
namespace {  // internal linkage: every variant file gets its own kernels, launch statics and attributes

using namespace mla_kernels;
using mla_dims::kDW;
using mla_dims::kRescaleSlack;
using mla_dims::kT;

constexpr int kF16P = mla_dims3::kF16P;
constexpr int kQP = mla_dims3::kQP;
constexpr int kEF = mla_dims3::kEF;
constexpr int kD3Bits = kF16P | kQP | kEF;  // the bits Smem sees

constexpr int fPf = 1, fMg = 2, fTs = 4, fHp = 16, fQn = 32;  // (8: fPt, measured and removed)

constexpr int kMaxMgBatches = 1024;  // fMg's counters
constexpr int kTsBlocks = 1024, kTsSlots = 16;

#if defined(HARNESS_GPU) && !defined(__HIP_PLATFORM_AMD__)
static __device__ unsigned int g_mla_dims6_merge[2 * kMaxMgBatches];  // fMg: per batch arrivals, departures
static __device__ unsigned long long g_mla_dims6_ts[kTsBlocks * kTsSlots];
#endif

#if defined(HARNESS_GPU) && defined(MLA_DIMS_SM90)
using mla_dims2::e4m3_hi;
using mla_dims2::e4m3_lo;
using mla_dims2::ex2_fast;
using mla_dims2::Lane;
using mla_dims2::ldsm_x4_t;
using mla_dims2::movm_v;
using mla_dims2::pack_f16x2;
using mla_dims2::SoftState;
using mla_dims3::f16x2_to_f32;
using mla_dims3::hadd2;
using mla_dims3::mma_f16acc;

__device__ inline unsigned long long d6_gtimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ inline unsigned int d6_smid() {
  unsigned int r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
}

// A lane's K words of one tile: the rope words (m tile mr, tokens g and g + 8) and the 4 m tiles' 16-byte
// words (tokens g and g + 8 of m tile (i + mr) & 3, dims 64 dw + 16 t + 0..15).
struct KRegs {
  uint2 rg, rh;
  uint4 kg[4], kh[4];
};
__device__ __forceinline__ void load_k(KRegs& k, const unsigned char* st, const Lane& ln) {
  const unsigned char* rowr = st + (16 * ln.mr + ln.g) * kDimQK + kDimV + 32 * (ln.dw & 1) + 8 * ln.t;
  k.rg = *reinterpret_cast<const uint2*>(rowr);
  k.rh = *reinterpret_cast<const uint2*>(rowr + 8 * kDimQK);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const unsigned char* rowg = st + (16 * ((i + ln.mr) & 3) + ln.g) * kDimQK + 64 * ln.dw + 16 * ln.t;
    k.kg[i] = *reinterpret_cast<const uint4*>(rowg);
    k.kh[i] = *reinterpret_cast<const uint4*>(rowg + 8 * kDimQK);
  }
}

// mla_dims3::dims_tile3<S, F16P | (QP | EF), R> with its K words given (kr; PF: the caller loaded them) and
// before_pv() called after the last barrier of the tile (the next tile's K loads go there).
template <int S, int OPT, int R, class AfterA, class BeforePV>
__device__ __forceinline__ void tile6(unsigned char* smem, const Lane& ln, KRegs& kr, int valid, uint32_t j,
                                      const mla_dims::QFrags& q, float logit_scale, SoftState& ss, mma::FragC (&o)[4][2],
                                      AfterA&& after_a, BeforePV&& before_pv) {
  using L = mla_dims3::Smem<S, OPT>;
  static_assert((OPT & kF16P) != 0, "F16P only");
  constexpr int WS = kernel_warp_size();
  int* flag_sm = reinterpret_cast<int*>(smem + L::flag);
  uint32_t* pt_sm = reinterpret_cast<uint32_t*>(smem + L::p);
  float* tmax_sm = reinterpret_cast<float*>(smem + L::tmax);
  const int g = ln.g, t = ln.t, dw = ln.dw, mr = ln.mr, rnt = ln.rnt;
  const int lane = 4 * g + t;
  const auto& qb = q.qb;
  const auto& qr2 = q.qr2;

  uint32_t vt[4][4][4];
  {
    mma::FragA ropeA[2];
    {
      const uint32_t wg[2] = {kr.rg.x, kr.rg.y}, wh[2] = {kr.rh.x, kr.rh.y};
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        ropeA[s].row[0].x = e4m3_lo(wg[s]);
        ropeA[s].row[1].x = e4m3_lo(wh[s]);
        ropeA[s].row[0].y = e4m3_hi(wg[s]);
        ropeA[s].row[1].y = e4m3_hi(wh[s]);
      }
    }
    uint32_t c16[4][2][2];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) c16[i][nt][0] = c16[i][nt][1] = 0u;
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      mma_f16acc(c16[0][0], ropeA[s], qr2[0][s][0], qr2[0][s][1]);
      mma_f16acc(c16[0][1], ropeA[s], qr2[1][s][0], qr2[1][s][1]);
    }
#pragma unroll
    for (int p = 0; p < 4; ++p) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const uint4& kg = kr.kg[i];
        const uint4& kh = kr.kh[i];
        const uint32_t wg = p == 0 ? kg.x : p == 1 ? kg.y : p == 2 ? kg.z : kg.w;
        const uint32_t wh = p == 0 ? kh.x : p == 1 ? kh.y : p == 2 ? kh.z : kh.w;
        mma::FragA k;
        k.row[0].x = e4m3_lo(wg);
        k.row[1].x = e4m3_lo(wh);
        k.row[0].y = e4m3_hi(wg);
        k.row[1].y = e4m3_hi(wh);
        mma_f16acc(c16[i][0], k, qb[0][p][0], qb[0][p][1]);
        mma_f16acc(c16[i][1], k, qb[1][p][0], qb[1][p][1]);
        vt[i][p][0] = k.row[0].x;
        vt[i][p][1] = k.row[0].y;
        vt[i][p][2] = k.row[1].x;
        vt[i][p][3] = k.row[1].y;
      }
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int mt = (i + mr) & 3;
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        uint2* sp2 = reinterpret_cast<uint2*>(smem + L::sp);
        sp2[((dw * 4 + mt) * 2 + nt) * WS + lane] = make_uint2(c16[i][nt][0], c16[i][nt][1]);
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
  const int tok0 = 16 * mr + g;
  float s[4];
  {
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
    const bool ok0 = tok0 < valid, ok1 = tok0 + 8 < valid;
    s[0] = ok0 ? fx.x * logit_scale : -INFINITY;
    s[1] = ok0 ? fx.y * logit_scale : -INFINITY;
    s[2] = ok1 ? fy.x * logit_scale : -INFINITY;
    s[3] = ok1 ? fy.y * logit_scale : -INFINITY;
  }
  float pv[4];
  auto write_p = [&]() {
#pragma unroll
    for (int i = 0; i < 4; ++i) pv[i] = ex2_fast(s[i] - ss.mred[i & 1]);
    pt_sm[mla_dims3::pt_word<false>(tok0, rnt, t)] = pack_f16x2(pv[0], pv[1]);
    pt_sm[mla_dims3::pt_word<false>(tok0 + 8, rnt, t)] = pack_f16x2(pv[2], pv[3]);
  };
  bool over = false;
#pragma unroll
  for (int i = 0; i < 4; ++i) over |= s[i] > ss.mred[i & 1] + kRescaleSlack;
  if (over) *flag_sm = int(j);
  write_p();
  __syncthreads();  // B: P and the flag written
  const bool rescale = *flag_sm == int(j);
  if (rescale) {
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
  before_pv();

  const int lr = lane & 7, lh = (lane >> 3) & 1, lhalf = lane >> 4;
  const int lrow = lr + 8 * lh;
  const uint32_t pt_base = mla_dims::smem_u32(pt_sm);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int mt = (i + mr) & 3;
    const int row = 16 * mt + lrow;
    mma::FragB pb[2];
    ldsm_x4_t(pt_base + 4 * uint32_t(mla_dims3::pt_word<false>(row, lhalf, 0)), pb[0].x, pb[0].y, pb[1].x, pb[1].y);
    if (i >= R) transpose(i);
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
// mla_dims5::mla_fp8_dims5_kernel<S, OPT, R, fDir [| fMg]> with tile6 and the flags above. Items: batch
// item / splits, split item % splits.
template <int S, int OPT, int R, int F>
__global__ void __launch_bounds__(kDW * kernel_warp_size(), 1)
    mla_fp8_dims6_kernel(MlaDecodeArgs a, int tokens_per_split, int splits, Partials part, int init_n) {
#if defined(MLA_DIMS_SM90)
  constexpr int D3 = OPT & kD3Bits;
  using L = mla_dims3::Smem<S, D3>;
  constexpr bool QP = (OPT & kQP) != 0;
  constexpr bool PF = (F & fPf) != 0;
  constexpr bool HP = (F & fHp) != 0;  // f16 partials (fMg only)
  constexpr bool QN = (F & fQn) != 0;  // the next item's Q fragments built before this item's epilogue
  static_assert(!HP || (F & fMg) != 0, "fHp needs fMg");
  constexpr bool TS = (F & fTs) != 0;
  constexpr float kQScale = mla_dims3::kQScaleF16P;
  constexpr int WS = kernel_warp_size();
  constexpr int kThreads = kDW * WS;
  static_assert(mma::kN == 8 && mma::kARows == 2, "NVIDIA m16n8k16 lane geometry");
  static_assert(QP && (OPT & kF16P) != 0, "F16P | QP");
  require_warp_size();
  using mla_dims::mbar_expect_tx;
  using mla_dims::mbar_init;
  using mla_dims::mbar_init_fence;
  using mla_dims::mbar_wait;
  using mla_dims::smem_u32;

  extern __shared__ __align__(128) unsigned char smem[];
  int* flag_sm = reinterpret_cast<int*>(smem + L::flag);
  float* lpart_sm = reinterpret_cast<float*>(smem + L::lpart);
  const uint32_t bar0 = smem_u32(smem + L::bar);
  const uint32_t qbar0 = bar0 + 8 * S;

  const int tid = threadIdx.x;
  const Lane ln = mla_dims2::lane_of();
  const int g = ln.g, t = ln.t, dw = ln.dw;

  unsigned long long* ts_row = g_mla_dims6_ts + size_t(blockIdx.x < kTsBlocks ? blockIdx.x : 0) * kTsSlots;
  auto ts = [&](int slot) {
    if constexpr (TS) {
      if (tid == 0 && blockIdx.x < kTsBlocks) ts_row[slot] = d6_gtimer();
    }
  };
  ts(0);
  if constexpr (TS) {
    if (tid == 0 && blockIdx.x < kTsBlocks) {
      ts_row[1] = d6_smid();
      for (int k = 2; k < kTsSlots; ++k) ts_row[k] = 0;
    }
  }

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
  uint64_t pol = 0;
  if constexpr ((OPT & kEF) != 0) {
    if (tid == 0) pol = mla_dims3::policy_evict_first();
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
    const uint32_t stg = p_j % S;
    const uint32_t bar = bar0 + 8 * stg;
    const uint32_t dst = smem_u32(smem + stg * L::stage);
    const uint8_t* src = a.kv_fp8 + (p_span.t0 + int64_t(p_tile) * kT) * kDimQK;
    mbar_expect_tx(bar, uint32_t(kT * kDimQK));
    if constexpr ((OPT & kEF) != 0)
      mla_dims3::bulk_copy_hint(dst, src, uint32_t(valid * kDimQK), bar, pol);
    else
      mla_dims::bulk_copy(dst, src, uint32_t(valid * kDimQK), bar);
    for (int r = valid; r < kT; ++r) mla_dims::bulk_copy(dst + r * kDimQK, src + (valid - 1) * kDimQK, kDimQK, bar);
    ++p_tile;
    ++p_j;
  };
  auto issue_q = [&](int k) {
    const int item = first_item + k * item_step;
    if (item >= n_items) return;
    const uint32_t bar = qbar0 + 8 * (k & 1);
    mbar_expect_tx(bar, uint32_t(L::qbytes));
    mla_dims::bulk_copy(smem_u32(smem + L::q + (k & 1) * L::qbytes), a.q + int64_t(item / splits) * kHeads * kDimQK,
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
    issue_q(0);
    for (int s = 0; s < init_n; ++s) issue_next();
  }
  ts(2);

  const float kv_scale = *a.kv_fp8_scale;
  const float logit_scale = a.cfg.sm_scale * 1.4426950408889634f * kv_scale / kQScale;
  uint32_t j = 0;                 // global tile counter
  uint32_t stage = 0, phase = 0;  // j % S, (j / S) & 1
  KRegs kr;
  bool k_ready = false;  // PF: kr holds tile j's words (loaded during tile j - 1)
  // The first wait of the block: thread 0 then issues the copies init_n..S-1.
  auto first_wait = [&]() {
    mbar_wait(bar0 + 8 * stage, phase);
    if (j == 0) {
      ts(3);
      if (tid == 0)
        for (int s = init_n; s < S; ++s) issue_next();
    }
  };

  mla_dims::QFrags q;
  // Q^T fragments of the block's item number k from Q buffer k & 1 (its copy: issue_q(k)).
  auto build_q = [&](int k) {
    {
      mbar_wait(qbar0 + 8 * (k & 1), uint32_t((k >> 1) & 1));
      const uint16_t* qbase = reinterpret_cast<const uint16_t*>(smem + L::q + (k & 1) * L::qbytes);
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        const uint16_t* qh = qbase + (8 * nt + g) * kDimQK;
#pragma unroll
        for (int p = 0; p < 4; ++p) {
          const uint2 v = *reinterpret_cast<const uint2*>(qh + 64 * dw + 16 * t + 4 * p);
          q.qb[nt][p][0] = mla_dims3::q_f16x2(v.x, kQScale);
          q.qb[nt][p][1] = mla_dims3::q_f16x2(v.y, kQScale);
        }
        const uint4 v = *reinterpret_cast<const uint4*>(qh + kDimV + 32 * (dw & 1) + 8 * t);
        q.qr2[nt][0][0] = mla_dims3::q_f16x2(v.x, kQScale);
        q.qr2[nt][0][1] = mla_dims3::q_f16x2(v.y, kQScale);
        q.qr2[nt][1][0] = mla_dims3::q_f16x2(v.z, kQScale);
        q.qr2[nt][1][1] = mla_dims3::q_f16x2(v.w, kQScale);
      }
      q.qr[0] = q.qr[1] = 0u;
    }
  };
  if (QN && first_item < n_items) build_q(0);

  int k_item = 0;
  for (int item = first_item; item < n_items; item += item_step, ++k_item) {
    const Span w = span(item);
    const bool has_next_item = item + item_step < n_items;
    const bool next_item_tiles = PF && has_next_item && span(item + item_step).n_tiles > 0;
    // QP: buffer (k + 1) & 1 was last read when item k - 1's fragments were built
    if (tid == 0) issue_q(k_item + 1);
    if constexpr (!QN) build_q(k_item);
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
      const int valid = min(kT, w.n_tokens - tile * kT);
      if constexpr (PF) {
        if (!k_ready) {
          first_wait();
          load_k(kr, smem + stage * L::stage, ln);
        }
      } else {
        first_wait();
        load_k(kr, smem + stage * L::stage, ln);
      }
      if constexpr (TS) {
        if (tile == w.n_tiles - 1) ts(7);
      }
      const uint32_t nstage = stage + 1 == S ? 0u : stage + 1;
      const uint32_t nphase = stage + 1 == S ? phase ^ 1u : phase;
      const bool has_next = PF && (tile + 1 < w.n_tiles || next_item_tiles);
      tile6<S, D3, R>(
          smem, ln, kr, valid, j, q, logit_scale, ss, o,
          [&] {
            if (tid == 0) issue_next();
          },
          [&] {
            if constexpr (PF) {
              if (has_next) {
                mbar_wait(bar0 + 8 * nstage, nphase);
                load_k(kr, smem + nstage * L::stage, ln);
              }
            }
          });
      if constexpr (PF) k_ready = has_next;
      if constexpr (TS) {
        if (j == 0) ts(4);
      }
      stage = nstage;
      phase = nphase;
    }
    if constexpr (TS) {
      if (k_item == 0) ts(5);
      ts(8);
    }
    if constexpr (QN) {
      if (has_next_item) build_q(k_item + 1);  // q is dead after the item's last tile
    }

    // Denominators: lane sums over g, then over the 4 m-tile warps.
#pragma unroll
    for (int e = 0; e < 2; ++e) {
#pragma unroll
      for (int off = 4; off < WS; off <<= 1) ss.lsum[e] += __shfl_xor(ss.lsum[e], off);
    }
    if (g == 0) {
#pragma unroll
      for (int e = 0; e < 2; ++e) lpart_sm[ln.mr * kHeads + 8 * ln.rnt + 2 * t + e] = ss.lsum[e];
    }
    __syncthreads();
    const bool odd = (g & 1) != 0;
    const int dim0 = 64 * dw + 16 * (g >> 1) + 8 * (g & 1);
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int h = 8 * nt + 2 * t + c;
        const float l = lpart_sm[h] + lpart_sm[kHeads + h] + lpart_sm[2 * kHeads + h] + lpart_sm[3 * kHeads + h];
        const float f = l > 0.f ? kv_scale / l : 0.f;
        float keep[2][2], recv[2][2];
#pragma unroll
        for (int pp = 0; pp < 2; ++pp)
#pragma unroll
          for (int qq = 0; qq < 2; ++qq) {
            const float lo = o[pp][nt].v[c + 2 * qq], hi = o[2 + pp][nt].v[c + 2 * qq];
            keep[pp][qq] = odd ? hi : lo;
            recv[pp][qq] = __shfl_xor(odd ? lo : hi, 4);
          }
        float d[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) {
          const int pp = k >> 2, qq = (k >> 1) & 1;
          const bool own = ((k & 1) != 0) == odd;
          d[k] = (own ? keep[pp][qq] : recv[pp][qq]) * f;
        }
        if (splits == 1) {
          *reinterpret_cast<uint4*>(a.out + (int64_t(w.b) * kHeads + h) * kDimV + dim0) =
              make_uint4(pack16(f32_to_bf16_bits(d[0]), f32_to_bf16_bits(d[1])),
                         pack16(f32_to_bf16_bits(d[2]), f32_to_bf16_bits(d[3])),
                         pack16(f32_to_bf16_bits(d[4]), f32_to_bf16_bits(d[5])),
                         pack16(f32_to_bf16_bits(d[6]), f32_to_bf16_bits(d[7])));
        } else {
          const size_t ro = ((size_t(w.b) * splits + w.split) * kHeads + h) * kDimV + dim0;
          if constexpr (HP) {  // f16 partials: [batch][splits][16][512] f16 in the f32 area's first half
            *reinterpret_cast<uint4*>(reinterpret_cast<uint16_t*>(part.o) + ro) =
                make_uint4(pack_f16x2(d[0], d[1]), pack_f16x2(d[2], d[3]), pack_f16x2(d[4], d[5]), pack_f16x2(d[6], d[7]));
          } else {
            float* po = part.o + ro;
            *reinterpret_cast<float4*>(po) = make_float4(d[0], d[1], d[2], d[3]);
            *reinterpret_cast<float4*>(po + 4) = make_float4(d[4], d[5], d[6], d[7]);
          }
          if (dw == 0 && g == 0)
            part.lse[(size_t(w.b) * splits + w.split) * kHeads + h] =
                l > 0.f ? ss.m_ref[2 * nt + c] + log2f(l) : -INFINITY;
        }
      }
    if constexpr (TS) {
      if (k_item == 0) ts(6);
    }
    if constexpr ((F & fMg) != 0) {
      if (splits > 1) {  // one item a block, all blocks resident (cooperative launch): mla_dims5's merge
        asm volatile("fence.acq_rel.gpu;" ::: "memory");
        __syncthreads();
        if (tid == 0) {
          unsigned int* ctr = g_mla_dims6_merge + 2 * w.b;
          atomicAdd(ctr, 1u);
          for (;;) {
            unsigned int v;
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(ctr) : "memory");
            if (v >= unsigned(splits)) break;
            __nanosleep(32);
          }
          if (atomicAdd(ctr + 1, 1u) == unsigned(splits - 1)) {
            atomicExch(ctr, 0u);
            atomicExch(ctr + 1, 0u);
          }
        }
        __syncthreads();
        ts(10);
        asm volatile("fence.acq_rel.gpu;" ::: "memory");
        const int bl = w.b;
        auto load_part = [&](size_t off) {
          if constexpr (HP) {
            const uint2 u = __ldcg(reinterpret_cast<const uint2*>(reinterpret_cast<const uint16_t*>(part.o) + off));
            const float2 lo = f16x2_to_f32(u.x), hi = f16x2_to_f32(u.y);
            return make_float4(lo.x, lo.y, hi.x, hi.y);
          } else {
            return __ldcg(reinterpret_cast<const float4*>(part.o + off));
          }
        };
        const int nh = w.split < kHeads ? (kHeads - 1 - w.split) / splits + 1 : 0;
        constexpr int kU = 2;
        if (splits == 4 && nh * (kDimV / 4) == kU * kThreads) {
          float lv[kU][4];
          float4 ov[kU][4];
#pragma unroll
          for (int k = 0; k < kU; ++k) {
            const int u = tid + k * kThreads;
            const int h = w.split + splits * (u / (kDimV / 4)), dim = 4 * (u % (kDimV / 4));
#pragma unroll
            for (int s2 = 0; s2 < 4; ++s2) {
              lv[k][s2] = __ldcg(part.lse + (size_t(bl) * splits + s2) * kHeads + h);
              ov[k][s2] = load_part(((size_t(bl) * splits + s2) * kHeads + h) * kDimV + dim);
            }
          }
#pragma unroll
          for (int k = 0; k < kU; ++k) {
            const int u = tid + k * kThreads;
            const int h = w.split + splits * (u / (kDimV / 4)), dim = 4 * (u % (kDimV / 4));
            float mx = -INFINITY;
#pragma unroll
            for (int s2 = 0; s2 < 4; ++s2) mx = fmaxf(mx, lv[k][s2]);
            float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
            float total = 0.f;
#pragma unroll
            for (int s2 = 0; s2 < 4; ++s2) {
              const float l = lv[k][s2];
              const float wt = l == -INFINITY ? 0.f : ex2_fast(l - mx);
              total += wt;
              acc.x += wt * ov[k][s2].x;
              acc.y += wt * ov[k][s2].y;
              acc.z += wt * ov[k][s2].z;
              acc.w += wt * ov[k][s2].w;
            }
            const float inv = total > 0.f ? 1.f / total : 0.f;
            *reinterpret_cast<uint2*>(a.out + (int64_t(w.b) * kHeads + h) * kDimV + dim) =
                make_uint2(pack16(f32_to_bf16_bits(acc.x * inv), f32_to_bf16_bits(acc.y * inv)),
                           pack16(f32_to_bf16_bits(acc.z * inv), f32_to_bf16_bits(acc.w * inv)));
          }
        } else {
          for (int u = tid; u < nh * (kDimV / 4); u += kThreads) {
            const int h = w.split + splits * (u / (kDimV / 4)), dim = 4 * (u % (kDimV / 4));
            const float* lse = part.lse + size_t(bl) * splits * kHeads + h;
            float mx = -INFINITY;
            for (int s2 = 0; s2 < splits; ++s2) mx = fmaxf(mx, __ldcg(lse + size_t(s2) * kHeads));
            float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
            float total = 0.f;
            for (int s2 = 0; s2 < splits; ++s2) {
              const float l = __ldcg(lse + size_t(s2) * kHeads);
              const float wt = l == -INFINITY ? 0.f : ex2_fast(l - mx);
              const float4 v = load_part(((size_t(bl) * splits + s2) * kHeads + h) * kDimV + dim);
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
    }
    // lpart is next written after the next item's tile barriers: no barrier here
  }
  ts(9);
#else
  (void)a; (void)tokens_per_split; (void)splits; (void)part; (void)init_n;
  __builtin_trap();
#endif
}

#if !defined(__HIP_PLATFORM_AMD__)
// The timeline of one launch (fTs), printed to stderr: phases as medians / maxima over the blocks.
inline void print_timeline6(const MlaDecodeConfig& c, int blocks, int splits, int init_n) {
  if (blocks > kTsBlocks) return;
  std::vector<unsigned long long> h(size_t(blocks) * kTsSlots);
  harness_check(cudaDeviceSynchronize(), "timeline sync");
  harness_check(cudaMemcpyFromSymbol(h.data(), g_mla_dims6_ts, h.size() * sizeof(unsigned long long)), "timeline copy");
  unsigned long long g0 = ~0ull, g1 = 0;
  for (int i = 0; i < blocks; ++i) {
    g0 = std::min(g0, h[size_t(i) * kTsSlots]);
    g1 = std::max(g1, h[size_t(i) * kTsSlots + 9]);
  }
  auto stats = [&](int k, bool rel_block) {
    std::vector<double> v;
    for (int i = 0; i < blocks; ++i) {
      const unsigned long long* r = &h[size_t(i) * kTsSlots];
      if (r[k] == 0) continue;
      v.push_back(double(r[k]) - double(rel_block ? r[0] : g0));
    }
    if (v.empty()) return std::make_pair(-1.0, -1.0);
    std::sort(v.begin(), v.end());
    return std::make_pair(v[v.size() / 2], v.back());
  };
  std::fprintf(stderr, "[d6ts] bs %d kv %d: %d blocks, %d splits, init %d; span %.0f ns (first start to last end)\n",
               c.batch_size, c.kv_seq_len, blocks, splits, init_n, double(g1 - g0));
  static const char* names[] = {"block start", "", "copies issued", "tile0 landed", "tile0 done", "item0 tiles",
                                "item0 out", "last landed", "tiles done", "end", "merge go"};
  for (int k : {0, 2, 3, 4, 5, 6, 7, 8, 10, 9}) {
    const auto a = stats(k, false);
    const auto b = stats(k, true);
    std::fprintf(stderr, "[d6ts]   %-14s since first start: med %7.0f max %7.0f ns | since own start: med %7.0f max %7.0f\n",
                 names[k], a.first, a.second, b.first, b.second);
  }
}

template <int S, int OPT, int R, int F>
struct K6 {
  using L = mla_dims3::Smem<S, OPT & kD3Bits>;
  static constexpr auto kernel = mla_fp8_dims6_kernel<S, OPT, R, F>;
  static void prepare() {
    static const bool attr_set = [] {
      harness_check(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         int(L::total)),
                    "cudaFuncSetAttribute(mla_fp8_dims6_kernel)");
      return true;
    }();
    (void)attr_set;
  }
  static void run(const MlaDecodeArgs& a, dim3 grid, int tps, int splits, Partials part, int init_n, const char* name,
                  bool coop) {
    prepare();
    cudaLaunchAttribute attr[1];
    std::memset(attr, 0, sizeof(attr));
    int na = 0;
    if (coop) {
      attr[na].id = cudaLaunchAttributeCooperative;
      attr[na].val.cooperative = 1;
      ++na;
    }
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = dim3(unsigned(kDW * current_device_shape().warp_size));
    cfg.dynamicSmemBytes = L::total;
    cfg.attrs = na ? attr : nullptr;
    cfg.numAttrs = unsigned(na);
    harness_check(cudaLaunchKernelEx(&cfg, kernel, a, tps, splits, part, init_n), name);
    harness_check_launch(name);
    if constexpr ((F & fTs) != 0) {
      static std::map<std::pair<int, int>, int> calls;
      const char* env = std::getenv("MLA_D6_TS");
      const int at = env ? std::atoi(env) : 0;
      if (at > 0 && ++calls[{a.cfg.batch_size, a.cfg.kv_seq_len}] == at)
        print_timeline6(a.cfg, int(grid.x), splits, init_n);
    }
  }
};

// The 32-tile shapes (65536 < batch * kv_len <= 262144; H200: bs 256 / kv 1024, 1 split, and bs 32 / kv 8192, 4
// splits): mla_dims5::DirPath's plan and epilogues with the F flags (fMg applies where every block has one
// item of a split plan; else the combine kernel); INIT: copies issued at the block's start (1..S).
template <int S, int OPT, int R = 2, int F = fMg | fHp | fQn, int INIT = S>
struct DirPath6 {
  static SplitPlan plan(const MlaDecodeConfig& c) {
    return plan_splits(c.batch_size, c.kv_seq_len, current_device_shape().compute_units, 1, kT, 128);
  }
  static bool applies(const MlaDecodeConfig& c) {
    const int64_t n = int64_t(c.batch_size) * c.kv_seq_len;
    return n > 65536 && n <= 262144;
  }
  static size_t workspace_bytes(const MlaDecodeConfig& c) { return partials_bytes(c.batch_size, plan(c).splits); }
  static bool merges(const MlaDecodeConfig& c, const SplitPlan& pl) {
    return (F & fMg) != 0 && pl.splits > 1 && c.batch_size <= kMaxMgBatches &&
           int64_t(c.batch_size) * pl.splits <= current_device_shape().compute_units;
  }
  static int init_copies() { return std::clamp(INIT, 1, S); }  // call 1 also measured 1 and 2 (env knob, dropped)
  static void launch(const MlaDecodeArgs& a) {
    require_mla_shape(a.cfg);
    const SplitPlan pl = plan(a.cfg);
    if (a.workspace_size < partials_bytes(a.cfg.batch_size, pl.splits))
      throw std::runtime_error("mla_dims6::DirPath6: workspace too small");
    const Partials part = pl.splits > 1 ? partials_in(a.workspace, a.cfg.batch_size, pl.splits) : Partials{nullptr, nullptr};
    const dim3 grid(unsigned(std::min<int64_t>(int64_t(a.cfg.batch_size) * pl.splits, current_device_shape().compute_units)));
    const bool mg = merges(a.cfg, pl);
    const int init_n = init_copies();
    bool done = false;
    if constexpr ((F & fMg) != 0) {
      if (mg) {
        K6<S, OPT, R, F>::run(a, grid, pl.tokens_per_split, pl.splits, part, init_n, "mla_fp8_dims6_kernel<merge>", true);
        done = true;
      }
    }
    if (!done)
      K6<S, OPT, R, F & ~(fMg | fHp)>::run(a, grid, pl.tokens_per_split, pl.splits, part, init_n, "mla_fp8_dims6_kernel", false);
    if (pl.splits > 1 && !mg) {
      mla_dims::combine_splits_wide_kernel<<<a.cfg.batch_size * kHeads, kDimV / 4>>>(part, pl.splits, a.out);
      harness_check_launch("mla combine_splits_wide_kernel");
    }
  }
};

// The split shapes of DirPath6 only, for composed variants (v25: bs 32 / kv 8192 on the H200: 32 batches x 4 splits,
// one item a block, merged in the kernel): applies(cfg) when DirPath6 applies and its plan merges in the kernel;
// every other shape is left to the caller's path.
template <int S, int OPT, int R = 2, int F = fMg | fHp | fQn>
struct SplitPath6 {
  using D = DirPath6<S, OPT, R, F>;
  static_assert((F & fMg) != 0, "SplitPath6: fMg");
  static bool applies(const MlaDecodeConfig& c) { return D::applies(c) && D::merges(c, D::plan(c)); }
  static size_t workspace_bytes(const MlaDecodeConfig& c) { return D::workspace_bytes(c); }
  static void launch(const MlaDecodeArgs& a) { D::launch(a); }
};
#endif  // !__HIP_PLATFORM_AMD__
#endif  // HARNESS_GPU

}  // namespace
}  // namespace mla_dims6
