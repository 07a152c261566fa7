// mla_decode on fp8 KV for the small shapes (batch * kv_len <= 65536; mla-small, v19): v16's dims-cluster
// kernel (problems/common/mla_fp8_dims_cluster.h: grid (splits, batch), one 8-warp block per SM, splits of a
// batch in thread-block clusters of C merged through distributed shared memory, several clusters a batch
// merged through the workspace and a counter) with v18's leaner tile (problems/common/mla_fp8_dims2.h's
// dims_tile2, copied as tile2: rotated m tiles, accumulator-layout partials, P^T through ldmatrix.trans,
// fp32 denominator, ex2.approx, Q K^T with the m tiles interleaved, MV 3 MOVM placement).
// OPT bits (measured in docs/perf.md, section "mla_decode v19"):
//   - kPush: the push epilogue (epilogue_push): partial O as bf16 stored straight into the merging rank's
//     receive area, one cluster barrier, a local merge, no second cluster barrier. Faster than the pull
//     epilogue with one cluster a batch (-0.8 us at bs 4 / kv 1024, -0.4 at bs 64 / kv 1024), slower with
//     several (its workspace slice layout is uncoalesced: see the notes), so v19 uses it for nclus 1 only;
//   - without kPush: v16's pull epilogue (O staged in the block's own shared memory, cluster barrier, each
//     rank loads its slice of all C partials through DSMEM, second cluster barrier before exit);
//   - kFence1: the cross-cluster counter with one thread's fences (measured inside kPush by v19; in the pull
//     epilogue since v22's measurement variant v22f);
//   - kFirst, kStagger, kSplit: measured, no gain (first tile's maxima directly; tile 1's copy issued
//     once tile 0 lands; a tile's copy as four bulk copies);
//   - kEF, kF16P, kCoal, kPush16, kWPar (mla-small2, v22; docs/perf.md, section "mla_decode v22"):
//     evict_first KV copies (-0.2 us on shapes 0-2, -1.7 at bs 64 / kv 1024), f16 partial logits with Q
//     pre-scaled by 2^-3 (-0.1 / -0.7 / -0.5 / -0.9 us on shapes 0 / 1 / 2 / 4), kPush's workspace slices
//     coalesced (halves the push epilogue's loss with several clusters a batch, still +0.2 / +1.0 us against
//     the pull epilogue), 16-byte remote pushes and a parallel weight table (within +-0.1 us: no gain
//     measured); kFence1 in the pull epilogue (v22f): -0.1 / -0.4 us on shapes 1 / 2 in one call, no gain
//     in the next (score 38.2 against v22's 38.1; its variant was removed);
//   - kTs (measurement only): thread 0 of each block records globaltimer / clock64 at the phases of the
//     kernel; the host prints the N-th launch's summary per shape (env MLA_V19_TS=N; it synchronises in
//     the launch, so time it in test mode: in benchmark mode the outlier keeps the stopping rule from
//     converging and the run takes 1000 calls a shape).
// Host side: mla_cluster::ClusterLaunch, v16's plan model (cluster sizes 2 / 4 / 8 / 16, least cost);
// SmallPath: applies / workspace_bytes / launch for a composed variant.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "problems/common/launch_check.h"
#include "problems/common/lowp_pack.h"
#include "problems/common/mla_fp8_cluster.h"
#include "problems/common/mla_fp8_dims.h"
#include "problems/common/mla_fp8_dims2.h"
#include "problems/common/mla_fp8_wide.h"
#include "problems/common/mma_tile.h"

namespace mla_dcl2 {
namespace {  // internal linkage: every variant file gets its own kernels, launch statics and attributes

using namespace mla_kernels;
using mla_cluster::ClusterPlan;
using mla_dims::kDW;
using mla_dims::kRescaleSlack;
using mla_dims::kT;

constexpr int kMaxC = 16;
constexpr int kMaxCounters = 1 << 16;  // batch * C
// OPT bits: kFirst (first tile's maxima directly), kTs (timeline, measurement only), kPush (push epilogue:
// bf16 partials stored into the owner rank's receive area, one cluster barrier, local merge), kStagger
// (only tile 0's copy at start, tile 1's when tile 0 has landed), kFence1 (cross-cluster merge with one
// thread's fences around the counter instead of every thread's), kSplit (a full tile's copy as four
// bulk copies of 16 rows on the same mbarrier: more requests in flight if one copy's are limited).
constexpr int kFirst = 1, kTs = 2, kPush = 4, kStagger = 8, kFence1 = 16, kSplit = 32;
// mla-small2 (v22) bits: kEF (the KV tiles' bulk copies with an L2 evict_first policy, as mla_dims3's kEF),
// kF16P (Q K^T with f16 accumulators, Q pre-scaled by 2^-3, f16x2 partial logits: as mla_dims3's kF16P),
// kCoal (kPush with several clusters a batch: workspace slices [b][cluster][t group][512 dims] float4, so a
// warp's accesses are consecutive float4), kPush16 (kPush's O pushes as 16-byte remote stores: lanes g, g ^ 1
// swap one dim each so that a lane holds two adjacent dims of its 4 heads; receive area [src][dim pair][t]
// [dim & 1][nt] words), kWPar (kPush's weight table computed by 16 C threads, one (head, source) pair each,
// maximum and total by shuffles, instead of 16 threads looping over the C sources).
constexpr int kEF = 64, kF16P = 128, kCoal = 256, kPush16 = 512, kWPar = 1024;
// kLean (session 25, v35): less code between the paths a block runs, so that its first pass over cold code (the
// harness's L2 flush evicts the code too) jumps over less: a short tile's row-fill loop not unrolled (it was 4-12 KB
// of never-run code between the prologue and the tile loop), and with kPush the several-clusters-a-batch merge
// compiled out (the push kernels run only plans of one cluster a batch: Family::launch checks).
constexpr int kLean = 2048;
constexpr float kQScaleF16P = 0.125f;  // Q pre-scale with f16 partials (exact power of two)

// Shared memory: mla_dims2's layout (ring, partial logits, P^T, statistics, flag, barriers), then kPush's
// receive area: O [C src][512 / C dims][4 t][2 nt] bf16x2 words (heads 2t, 2t+1 / 8+2t, 9+2t of a dim
// together), m [C src][16], l [C src][4 m-tile warps][16], weights [C src][16], lse [16].
template <int S, int C>
struct Smem {
  using B = mla_dims2::Smem<S>;
  static constexpr size_t ro = (B::total + 127) / 128 * 128;
  static constexpr size_t rm = ro + size_t(kHeads) * kDimV * 2;
  static constexpr size_t rl = rm + size_t(C) * kHeads * 4;
  static constexpr size_t rw = rl + size_t(C) * 4 * kHeads * 4;
  static constexpr size_t rlse = rw + size_t(C) * kHeads * 4;
  static constexpr size_t total = rlse + kHeads * 4;
};
constexpr int kTsBlocks = 256, kTsSlots = 16;

#if defined(HARNESS_GPU) && !defined(__HIP_PLATFORM_AMD__)

static __device__ unsigned int g_mla_dcl2_counters[kMaxCounters];
static __device__ unsigned long long g_mla_dcl2_ts[kTsBlocks * kTsSlots];

#if defined(MLA_DIMS_SM90)
using mla_dims::bulk_copy;
using mla_dims::mbar_expect_tx;
using mla_dims::mbar_init;
using mla_dims::mbar_init_fence;
using mla_dims::mbar_wait;
using mla_dims::smem_u32;
using mla_dims2::ex2_fast;
using mla_dims2::e4m3_hi;
using mla_dims2::e4m3_lo;
using mla_dims2::Lane;
using mla_dims2::ldsm_x4_t;
using mla_dims2::movm_v;
using mla_dims2::pack_f16x2;
using mla_dims2::pt_word;
using mla_dims2::SoftState;

__device__ inline void mbar_arrive_plain(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ inline unsigned long long gtimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ inline unsigned int smid() {
  unsigned int r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
}

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
// bf16x2 -> f16x2 with a power-of-two scale
__device__ inline uint32_t q_f16x2(uint32_t w, float scale) {
  return pack_f16x2(__uint_as_float(w << 16) * scale, __uint_as_float(w & 0xffff0000u) * scale);
}
__device__ inline void st_cluster_v4(uint32_t addr, uint32_t x, uint32_t y, uint32_t z, uint32_t w) {
  asm volatile("st.shared::cluster.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(x), "r"(y), "r"(z), "r"(w) : "memory");
}

// A block's unnormalised O [16][512] in shared memory, float4 chunks XOR-swizzled by (head >> 1) & 3
// (as v16 / v18).
__device__ inline int o_at(int head, int dim) {
  return head * kDimV + ((((dim >> 2) ^ ((head >> 1) & 3))) << 2) + (dim & 3);
}

__device__ inline void st_cluster_v2(uint32_t addr, uint32_t x, uint32_t y) {
  asm volatile("st.shared::cluster.v2.u32 [%0], {%1, %2};" ::"r"(addr), "r"(x), "r"(y) : "memory");
}
__device__ inline uint32_t pack_bf16x2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ inline void cluster_arrive_relaxed_start() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ inline void cluster_wait_plain() { asm volatile("barrier.cluster.wait.aligned;" ::: "memory"); }

// One 64-token tile: mla_dims2::dims_tile2 (v18) with `first`: the block's first tile (block-uniform),
// whose maxima are computed directly. F16P: kF16P (f16 accumulators and partial logits; Q pre-scaled).
template <int S, int MV, bool F16P, class AfterA>
__device__ __forceinline__ void tile2(unsigned char* smem, const Lane& ln, const unsigned char* st, int valid,
                                      uint32_t j, bool first, const mla_dims::QFrags& q, float logit_scale,
                                      SoftState& ss, mma::FragC (&o)[4][2], AfterA&& after_a) {
  using L = mla_dims2::Smem<S>;
  constexpr int WS = kernel_warp_size();
  float4* sp = reinterpret_cast<float4*>(smem + L::sp);
  int* flag_sm = reinterpret_cast<int*>(smem + L::flag);
  uint32_t* pt_sm = reinterpret_cast<uint32_t*>(smem + L::p);
  float* tmax_sm = reinterpret_cast<float*>(smem + L::tmax);
  const int g = ln.g, t = ln.t, dw = ln.dw, mr = ln.mr, rnt = ln.rnt;
  const int lane = 4 * g + t;
  const auto& qb = q.qb;
  const auto& qr2 = q.qr2;

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
    uint4 kg[4], kh[4];
#pragma unroll
    for (int ii = 0; ii < 4; ++ii) {
      const unsigned char* rowg = st + (16 * ((ii + mr) & 3) + g) * kDimQK + 64 * dw + 16 * t;
      kg[ii] = *reinterpret_cast<const uint4*>(rowg);
      kh[ii] = *reinterpret_cast<const uint4*>(rowg + 8 * kDimQK);
    }
    mma::FragC c[4][2];
    uint32_t c16[4][2][2];
#pragma unroll
    for (int ii = 0; ii < 4; ++ii) {
      if constexpr (F16P) {
        c16[ii][0][0] = c16[ii][0][1] = c16[ii][1][0] = c16[ii][1][1] = 0u;
      } else {
        c[ii][0] = mma::FragC{{0.f, 0.f, 0.f, 0.f}};
        c[ii][1] = mma::FragC{{0.f, 0.f, 0.f, 0.f}};
      }
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
        if constexpr (MV == 0) {
          vt[i][p][0] = movm_v(k.row[0].x);
          vt[i][p][1] = movm_v(k.row[0].y);
          vt[i][p][2] = movm_v(k.row[1].x);
          vt[i][p][3] = movm_v(k.row[1].y);
        } else {
          vt[i][p][0] = k.row[0].x;
          vt[i][p][1] = k.row[0].y;
          vt[i][p][2] = k.row[1].x;
          vt[i][p][3] = k.row[1].y;
        }
      }
    }
#pragma unroll
    for (int ii = 0; ii < 4; ++ii) {
      const int mt = (ii + mr) & 3;
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        if constexpr (F16P) {
          uint2* sp2 = reinterpret_cast<uint2*>(smem + L::sp);
          sp2[((dw * 4 + mt) * 2 + nt) * WS + lane] = make_uint2(c16[ii][nt][0], c16[ii][nt][1]);
        } else {
          sp[((dw * 4 + mt) * 2 + nt) * WS + lane] = make_float4(c[ii][nt].v[0], c[ii][nt].v[1], c[ii][nt].v[2], c[ii][nt].v[3]);
        }
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
  if constexpr (F16P) {
    const uint2* sp2 = reinterpret_cast<const uint2*>(smem + L::sp);
    uint2 v[kDW];
#pragma unroll
    for (int d = 0; d < kDW; ++d) v[d] = sp2[((d * 4 + mr) * 2 + rnt) * WS + lane];
    if constexpr (MV == 1 || MV == 3) {
#pragma unroll
      for (int i = 0; i < (MV == 1 ? 4 : 2); ++i) transpose(i);
    }
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
  } else {
    float4 v[kDW];
#pragma unroll
    for (int d = 0; d < kDW; ++d) v[d] = sp[((d * 4 + mr) * 2 + rnt) * WS + lane];
    if constexpr (MV == 1 || MV == 3) {
#pragma unroll
      for (int i = 0; i < (MV == 1 ? 4 : 2); ++i) transpose(i);
    }
    float4 acc = v[0];
#pragma unroll
    for (int d = 1; d < kDW; ++d) {
      acc.x += v[d].x;
      acc.y += v[d].y;
      acc.z += v[d].z;
      acc.w += v[d].w;
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
  bool rescale = true;
  if (!first) {
    bool over = false;
#pragma unroll
    for (int i = 0; i < 4; ++i) over |= s[i] > ss.mred[i & 1] + kRescaleSlack;
    if (over) *flag_sm = int(j);  // read after B; the next write is after the next tile's A
    write_p();
    __syncthreads();  // B: P and the flag written
    rescale = *flag_sm == int(j);
  }
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
    if (!first) {
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int p = 0; p < 4; ++p)
#pragma unroll
          for (int nt = 0; nt < 2; ++nt) o[p][nt].v[i] *= alpha[2 * nt + (i & 1)];
    }
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      ss.mred[e] = rnt ? ss.m_ref[2 + e] : ss.m_ref[e];
      if (!first) ss.lsum[e] *= rnt ? alpha[2 + e] : alpha[e];
    }
    write_p();
    __syncthreads();
  }
  ss.lsum[0] += pv[0] + pv[2];
  ss.lsum[1] += pv[1] + pv[3];

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

// v16's epilogue (mla_fp8_dims_cluster.h), after the first cluster barrier: rank r merges dims
// [r 512/C, (r+1) 512/C) of the C partials in one round of distributed-shared-memory loads; several
// clusters a batch: slices to the workspace, the batch's last cluster (a counter per batch and rank)
// merges them.
template <int C, bool FENCE1, class TsFn>
__device__ __forceinline__ void epilogue(const MlaDecodeArgs& a, const float* o_sm, const float* m_sm,
                                         const float* l_sm, int* flag_sm, float kv_scale, int b, int rank, int cl,
                                         int nclus, float* ws, TsFn&& ts) {
  constexpr int kThreads = kDW * kernel_warp_size();
  constexpr int kSlice = kDimV / C;
  constexpr int kQ = kSlice / 4;  // float4 units of a head row of the slice
  constexpr int kUnits = kHeads * kQ;
  constexpr int kPer = (kUnits + kThreads - 1) / kThreads;
  const int tid = threadIdx.x;
  float4 res[kPer];
  float lse_u[kPer];
  {
    float mv[kPer][C], lv[kPer][C];
    float4 v[kPer][C];
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int u = tid + k * kThreads;
      if (kUnits % kThreads == 0 || u < kUnits) {
        const int h = u / kQ, col = rank * kSlice + 4 * (u % kQ);
#pragma unroll
        for (int src = 0; src < C; ++src) {
          mv[k][src] = mla_cluster::dsmem_ld1(mla_cluster::dsmem_map(m_sm + h, uint32_t(src)));
          lv[k][src] = mla_cluster::dsmem_ld1(mla_cluster::dsmem_map(l_sm + h, uint32_t(src)));
          v[k][src] = mla_cluster::dsmem_ld4(mla_cluster::dsmem_map(o_sm + o_at(h, col), uint32_t(src)));
        }
      }
    }
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      float mx = -INFINITY;
#pragma unroll
      for (int src = 0; src < C; ++src) mx = fmaxf(mx, mv[k][src]);
      float total = 0.f;
      float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
      for (int src = 0; src < C; ++src) {
        const float w = mv[k][src] == -INFINITY ? 0.f : exp2f(mv[k][src] - mx);
        total += w * lv[k][src];
        acc.x += w * v[k][src].x;
        acc.y += w * v[k][src].y;
        acc.z += w * v[k][src].z;
        acc.w += w * v[k][src].w;
      }
      const float inv = total > 0.f ? __fdividef(kv_scale, total) : 0.f;
      res[k] = make_float4(acc.x * inv, acc.y * inv, acc.z * inv, acc.w * inv);
      lse_u[k] = total > 0.f ? mx + __log2f(total) : -INFINITY;
    }
  }
  ts(9);
  mla_cluster::cluster_arrive_relaxed();  // done reading the others' shared memory

  float* ws_o = ws;
  float* ws_lse = ws + size_t(a.cfg.batch_size) * nclus * kHeads * kDimV;
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int u = tid + k * kThreads;
    if (kUnits % kThreads == 0 || u < kUnits) {
      const int h = u / kQ, col = rank * kSlice + 4 * (u % kQ);
      if (nclus == 1) {
        *reinterpret_cast<uint2*>(a.out + (int64_t(b) * kHeads + h) * kDimV + col) = mla_cluster::bf16x4(res[k]);
      } else {
        *reinterpret_cast<float4*>(ws_o + ((size_t(b) * nclus + cl) * kHeads + h) * kDimV + col) = res[k];
        if (u % kQ == 0) ws_lse[((size_t(b) * nclus + cl) * C + rank) * kHeads + h] = lse_u[k];
      }
    }
  }
  auto fence = [] { asm volatile("fence.acq_rel.gpu;" ::: "memory"); };
  if (nclus == 1) ts(10);
  if (nclus > 1) {
    if constexpr (!FENCE1) fence();
    __syncthreads();
    if (tid == 0) {
      if constexpr (FENCE1) fence();  // release: the block's stores are ordered before it by the barrier
      unsigned int* ctr = g_mla_dcl2_counters + (b * C + rank);
      const unsigned int prev = atomicAdd(ctr, 1u);
      const bool last = prev == unsigned(nclus - 1);
      if (last) {
        atomicExch(ctr, 0u);
        if constexpr (FENCE1) fence();  // acquire: the block's loads follow it through the barrier
      }
      flag_sm[1] = last ? 1 : 0;
    }
    __syncthreads();
    ts(10);
    if (flag_sm[1]) {
      if constexpr (!FENCE1) fence();
      constexpr int kCB = kPer >= 16 ? 1 : 16 / kPer;  // clusters a batch of loads
      float mrun[kPer], tot[kPer];
      float4 acc[kPer];
#pragma unroll
      for (int k = 0; k < kPer; ++k) {
        mrun[k] = -INFINITY;
        tot[k] = 0.f;
        acc[k] = make_float4(0.f, 0.f, 0.f, 0.f);
      }
      for (int c0 = 0; c0 < nclus; c0 += kCB) {
        float lz[kPer][kCB];
        float4 vz[kPer][kCB];
#pragma unroll
        for (int k = 0; k < kPer; ++k) {
          const int u = tid + k * kThreads;
          const int h = (u / kQ) % kHeads, col = rank * kSlice + 4 * (u % kQ);
#pragma unroll
          for (int jj = 0; jj < kCB; ++jj) {
            lz[k][jj] = -INFINITY;
            vz[k][jj] = make_float4(0.f, 0.f, 0.f, 0.f);
            if ((kUnits % kThreads == 0 || u < kUnits) && c0 + jj < nclus) {
              lz[k][jj] = __ldcg(ws_lse + ((size_t(b) * nclus + c0 + jj) * C + rank) * kHeads + h);
              vz[k][jj] = __ldcg(reinterpret_cast<const float4*>(ws_o + ((size_t(b) * nclus + c0 + jj) * kHeads + h) * kDimV + col));
            }
          }
        }
#pragma unroll
        for (int k = 0; k < kPer; ++k) {
          float m_new = mrun[k];
#pragma unroll
          for (int jj = 0; jj < kCB; ++jj) m_new = fmaxf(m_new, lz[k][jj]);
          if (m_new != -INFINITY) {
            const float sc = mrun[k] == -INFINITY ? 0.f : exp2f(mrun[k] - m_new);
            acc[k] = make_float4(acc[k].x * sc, acc[k].y * sc, acc[k].z * sc, acc[k].w * sc);
            tot[k] *= sc;
#pragma unroll
            for (int jj = 0; jj < kCB; ++jj) {
              const float w = lz[k][jj] == -INFINITY ? 0.f : exp2f(lz[k][jj] - m_new);
              tot[k] += w;
              acc[k].x += w * vz[k][jj].x;
              acc[k].y += w * vz[k][jj].y;
              acc[k].z += w * vz[k][jj].z;
              acc[k].w += w * vz[k][jj].w;
            }
            mrun[k] = m_new;
          }
        }
      }
#pragma unroll
      for (int k = 0; k < kPer; ++k) {
        const int u = tid + k * kThreads;
        if (kUnits % kThreads == 0 || u < kUnits) {
          const int h = u / kQ, col = rank * kSlice + 4 * (u % kQ);
          const float inv = tot[k] > 0.f ? __fdividef(1.f, tot[k]) : 0.f;
          *reinterpret_cast<uint2*>(a.out + (int64_t(b) * kHeads + h) * kDimV + col) =
              mla_cluster::bf16x4(make_float4(acc[k].x * inv, acc[k].y * inv, acc[k].z * inv, acc[k].w * inv));
        }
      }
    }
  }
  ts(11);
  mla_cluster::cluster_wait();  // the others are done reading this block's shared memory
}

// The cross-cluster step shared by both epilogues' kFence1 form: every thread has stored its part of
// the cluster's merged slice to the workspace; returns (block-uniform) whether this block is the
// batch's last cluster for this rank (then the workspace holds every cluster's slice).
template <int C, bool FENCE1>
__device__ __forceinline__ bool counter_last(int* flag_sm, int b, int rank, int nclus) {
  auto fence = [] { asm volatile("fence.acq_rel.gpu;" ::: "memory"); };
  if constexpr (!FENCE1) fence();
  __syncthreads();
  if (threadIdx.x == 0) {
    if constexpr (FENCE1) fence();  // release: the block's stores are ordered before it by the barrier
    unsigned int* ctr = g_mla_dcl2_counters + (b * C + rank);
    const unsigned int prev = atomicAdd(ctr, 1u);
    const bool last = prev == unsigned(nclus - 1);
    if (last) {
      atomicExch(ctr, 0u);
      if constexpr (FENCE1) fence();  // acquire: the block's loads follow it through the barrier
    }
    flag_sm[1] = last ? 1 : 0;
  }
  __syncthreads();
  const bool last = flag_sm[1] != 0;
  if constexpr (!FENCE1) {
    if (last) fence();
  }
  return last;
}

// kPush epilogue. Each thread stores its O accumulators (bf16, unnormalised) straight into the receive
// area of the rank that merges their dims (distributed shared memory stores, 8 bytes: heads 2t, 2t+1 of
// n tiles 0 and 1 at one dim), warps push their denominator partials and warp 0 the maxima to every
// rank; one cluster barrier (release / acquire); every rank merges its slice from its own shared memory
// (weights per source and head from a small table) and leaves without a second cluster barrier (no one
// reads another block's shared memory after the barrier). The receive area is used by nothing else, so
// a block may push while another still runs its tiles; the start-of-kernel relaxed arrive, waited for
// before the first push, guarantees every block of the cluster has started.
template <int S, int C, bool FENCE1, int OPT, class TsFn>
__device__ __forceinline__ void epilogue_push(const MlaDecodeArgs& a, unsigned char* smem, const Lane& ln,
                                              const SoftState& ss, const mma::FragC (&o)[4][2], float kv_scale,
                                              int b, int rank, int cl, int nclus, float* ws, TsFn&& ts) {
  using M = Smem<S, C>;
  constexpr int kThreads = kDW * kernel_warp_size();
  constexpr int kSlice = kDimV / C;
  constexpr int kUnits = 4 * kSlice;  // (t group, dim) pairs of the slice
  constexpr int kPer = (kUnits + kThreads - 1) / kThreads;
  const int tid = threadIdx.x;
  const int g = ln.g, t = ln.t, dw = ln.dw;
  uint32_t* ro = reinterpret_cast<uint32_t*>(smem + M::ro);
  float* rm = reinterpret_cast<float*>(smem + M::rm);
  float* rl = reinterpret_cast<float*>(smem + M::rl);
  float* rw = reinterpret_cast<float*>(smem + M::rw);
  float* rlse = reinterpret_cast<float*>(smem + M::rlse);
  int* flag_sm = reinterpret_cast<int*>(smem + mla_dims2::Smem<S>::flag);

  mla_cluster::cluster_wait();  // the start-of-kernel arrive: every block of the cluster has started
  // Denominator partials: warp (mr, rnt) holds, after the reduction over g, heads 8 rnt + 2 t + e.
  float lsum[2] = {ss.lsum[0], ss.lsum[1]};
#pragma unroll
  for (int e = 0; e < 2; ++e) {
#pragma unroll
    for (int off = 4; off < kernel_warp_size(); off <<= 1) lsum[e] += __shfl_xor(lsum[e], off);
  }
#pragma unroll
  for (int r0 = 0; r0 < C; r0 += 8) {
    const int r = r0 + g;
    if (r < C) {
      const float* lp = rl + (rank * 4 + ln.mr) * kHeads + 8 * ln.rnt + 2 * t;
      st_cluster_v2(mla_cluster::dsmem_map(lp, uint32_t(r)), __float_as_uint(lsum[0]), __float_as_uint(lsum[1]));
      if (dw == 0) {
        const float* mp = rm + rank * kHeads + 2 * t;
        st_cluster_v2(mla_cluster::dsmem_map(mp, uint32_t(r)), __float_as_uint(ss.m_ref[0]), __float_as_uint(ss.m_ref[1]));
        st_cluster_v2(mla_cluster::dsmem_map(mp + 8, uint32_t(r)), __float_as_uint(ss.m_ref[2]),
                      __float_as_uint(ss.m_ref[3]));
      }
    }
  }
  // O: dim d = 64 dw + 16 (g >> 1) + 4 p + (g & 1) + 2 ii, heads 8 nt + 2 t + {0, 1} in o[p][nt].v[2 ii + {0, 1}].
  constexpr bool P16 = (OPT & kPush16) != 0;
  // kPush16 receive layout: word (((src kSlice / 2 + dl / 2) 4 + t) 2 + (dl & 1)) 2 + nt.
  auto ro_word16 = [&](int src, int dl, int tt) { return (((src * (kSlice / 2) + (dl >> 1)) * 4 + tt) * 2 + (dl & 1)) * 2; };
  if constexpr (P16) {
    // Lane g even holds dims d0, d0 + 2 (ii 0, 1), lane g ^ 1 (lane ^ 4) d0 + 1, d0 + 3: swap so that the even
    // lane holds d0, d0 + 1 and the odd lane d0 + 2, d0 + 3.
    const bool odd = (g & 1) != 0;
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      uint32_t w[2][2];  // [ii][nt]
#pragma unroll
      for (int ii = 0; ii < 2; ++ii)
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) w[ii][nt] = pack_bf16x2(o[p][nt].v[2 * ii], o[p][nt].v[2 * ii + 1]);
      const uint32_t s0 = odd ? w[0][0] : w[1][0], s1 = odd ? w[0][1] : w[1][1];
      const uint32_t r0 = __shfl_xor(s0, 4), r1 = __shfl_xor(s1, 4);
      // even: (d0: w[0]), (d0 + 1: r); odd: (d0 + 2: r), (d0 + 3: w[1])
      const uint32_t lo0 = odd ? r0 : w[0][0], lo1 = odd ? r1 : w[0][1];
      const uint32_t hi0 = odd ? w[1][0] : r0, hi1 = odd ? w[1][1] : r1;
      const int d = 64 * dw + 16 * (g >> 1) + 4 * p + 2 * (g & 1);  // even
      const int dest = d / kSlice, dl = d % kSlice;
      uint32_t* dst = ro + ro_word16(rank, dl, t);
      if (dest == rank)
        *reinterpret_cast<uint4*>(dst) = make_uint4(lo0, lo1, hi0, hi1);
      else
        st_cluster_v4(mla_cluster::dsmem_map(dst, uint32_t(dest)), lo0, lo1, hi0, hi1);
    }
  } else {
#pragma unroll
  for (int p = 0; p < 4; ++p) {
#pragma unroll
    for (int ii = 0; ii < 2; ++ii) {
      const int d = 64 * dw + 16 * (g >> 1) + 4 * p + (g & 1) + 2 * ii;
      const int dest = d / kSlice, dl = d % kSlice;
      const uint32_t w0 = pack_bf16x2(o[p][0].v[2 * ii], o[p][0].v[2 * ii + 1]);
      const uint32_t w1 = pack_bf16x2(o[p][1].v[2 * ii], o[p][1].v[2 * ii + 1]);
      uint32_t* dst = ro + ((rank * kSlice + dl) * 4 + t) * 2;
      if (dest == rank)
        *reinterpret_cast<uint2*>(dst) = make_uint2(w0, w1);
      else
        st_cluster_v2(mla_cluster::dsmem_map(dst, uint32_t(dest)), w0, w1);
    }
  }
  }
  mla_cluster::cluster_arrive();  // release: the pushes
  mla_cluster::cluster_wait();    // acquire: every source's pushes to this block
  ts(12);
  // Weights: w[src][h] = 2^(m_src - max) * kv_scale / total (nclus 1) or / total (the cluster's lse).
  if constexpr ((OPT & kWPar) != 0) {
    // Thread (h, src) = (tid / C, tid % C): the C sources of a head are C consecutive lanes of one warp.
    static_assert(kHeads * C % kernel_warp_size() == 0 && C <= kernel_warp_size(), "weight table lanes");
    if (tid < kHeads * C) {  // whole warps
      const int h = tid / C, src = tid % C;
      const float m = rm[src * kHeads + h];
      const float l = rl[(src * 4 + 0) * kHeads + h] + rl[(src * 4 + 1) * kHeads + h] + rl[(src * 4 + 2) * kHeads + h] +
                      rl[(src * 4 + 3) * kHeads + h];
      float mx = m;
#pragma unroll
      for (int off = C / 2; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor(mx, off));
      const float w = m == -INFINITY ? 0.f : exp2f(m - mx);
      float total = w * l;
#pragma unroll
      for (int off = C / 2; off > 0; off >>= 1) total += __shfl_xor(total, off);
      const float inv = total > 0.f ? __fdividef(nclus == 1 ? kv_scale : 1.f, total) : 0.f;
      rw[src * kHeads + h] = w * inv;
      if (src == 0) rlse[h] = total > 0.f ? mx + __log2f(total) : -INFINITY;
    }
  } else if (tid < kHeads) {
    const int h = tid;
    float mx = -INFINITY;
#pragma unroll
    for (int src = 0; src < C; ++src) mx = fmaxf(mx, rm[src * kHeads + h]);
    float total = 0.f;
#pragma unroll
    for (int src = 0; src < C; ++src) {
      const float m = rm[src * kHeads + h];
      const float l = rl[(src * 4 + 0) * kHeads + h] + rl[(src * 4 + 1) * kHeads + h] + rl[(src * 4 + 2) * kHeads + h] +
                      rl[(src * 4 + 3) * kHeads + h];
      const float w = m == -INFINITY ? 0.f : exp2f(m - mx);
      rw[src * kHeads + h] = w;
      total += w * l;
    }
    const float inv = total > 0.f ? __fdividef(nclus == 1 ? kv_scale : 1.f, total) : 0.f;
#pragma unroll
    for (int src = 0; src < C; ++src) rw[src * kHeads + h] *= inv;
    rlse[h] = total > 0.f ? mx + __log2f(total) : -INFINITY;
  }
  __syncthreads();
  // Units: u = tg * kSlice + dl (a warp: one t group, consecutive dims): heads 2 tg, 2 tg + 1, 8 + 2 tg, 9 + 2 tg.
  float4 res[kPer];
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int u = tid + k * kThreads;
    res[k] = make_float4(0.f, 0.f, 0.f, 0.f);
    if (kUnits % kThreads == 0 || u < kUnits) {
      const int tg = u / kSlice, dl = u % kSlice;
      uint2 v[C];
#pragma unroll
      for (int src = 0; src < C; ++src)
        v[src] = *reinterpret_cast<const uint2*>(ro + (P16 ? ro_word16(src, dl, tg) : ((src * kSlice + dl) * 4 + tg) * 2));
#pragma unroll
      for (int src = 0; src < C; ++src) {
        const float* wp = rw + src * kHeads + 2 * tg;
        res[k].x += wp[0] * __uint_as_float(v[src].x << 16);
        res[k].y += wp[1] * __uint_as_float(v[src].x & 0xffff0000u);
        res[k].z += wp[8] * __uint_as_float(v[src].y << 16);
        res[k].w += wp[9] * __uint_as_float(v[src].y & 0xffff0000u);
      }
    }
  }
  ts(9);
  auto store_out = [&](int u, float4 r) {
    const int tg = u / kSlice, dl = u % kSlice;
    const int col = rank * kSlice + dl;
    uint16_t* ob = a.out + int64_t(b) * kHeads * kDimV + col;
    ob[(2 * tg) * kDimV] = f32_to_bf16_bits(r.x);
    ob[(2 * tg + 1) * kDimV] = f32_to_bf16_bits(r.y);
    ob[(8 + 2 * tg) * kDimV] = f32_to_bf16_bits(r.z);
    ob[(9 + 2 * tg) * kDimV] = f32_to_bf16_bits(r.w);
  };
  if ((OPT & kLean) != 0 || nclus == 1) {
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int u = tid + k * kThreads;
      if (kUnits % kThreads == 0 || u < kUnits) store_out(u, res[k]);
    }
    ts(10);
    ts(11);
    return;
  }
  // Several clusters a batch: slices [b][cluster][512 dims][4 tg] float4, lse [b][cluster][C][16].
  float4* ws_o = reinterpret_cast<float4*>(ws);
  float* ws_lse = ws + size_t(a.cfg.batch_size) * nclus * kHeads * kDimV;
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int u = tid + k * kThreads;
    if (kUnits % kThreads == 0 || u < kUnits) {
      const int tg = u / kSlice, dl = u % kSlice;
      if constexpr ((OPT & kCoal) != 0)
        ws_o[((size_t(b) * nclus + cl) * 4 + tg) * kDimV + rank * kSlice + dl] = res[k];
      else
        ws_o[((size_t(b) * nclus + cl) * kDimV + rank * kSlice + dl) * 4 + tg] = res[k];
    }
  }
  if (tid < kHeads) ws_lse[((size_t(b) * nclus + cl) * C + rank) * kHeads + tid] = rlse[tid];
  const bool last = counter_last<C, FENCE1>(flag_sm, b, rank, nclus);
  ts(10);
  if (last) {
    constexpr int kCB = kPer >= 16 ? 1 : 16 / kPer;  // clusters a batch of loads
    float4 mrun[kPer], tot[kPer], acc[kPer];
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      mrun[k] = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
      tot[k] = make_float4(0.f, 0.f, 0.f, 0.f);
      acc[k] = make_float4(0.f, 0.f, 0.f, 0.f);
    }
    auto comp = [](float4 v, int i) { return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w; };
    auto set = [](float4& v, int i, float x) {
      if (i == 0) v.x = x; else if (i == 1) v.y = x; else if (i == 2) v.z = x; else v.w = x;
    };
    for (int c0 = 0; c0 < nclus; c0 += kCB) {
      float4 lz[kPer][kCB], vz[kPer][kCB];
#pragma unroll
      for (int k = 0; k < kPer; ++k) {
        const int u = tid + k * kThreads;
        const int tg = (u / kSlice) & 3, dl = u % kSlice;
#pragma unroll
        for (int jj = 0; jj < kCB; ++jj) {
          lz[k][jj] = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
          vz[k][jj] = make_float4(0.f, 0.f, 0.f, 0.f);
          if ((kUnits % kThreads == 0 || u < kUnits) && c0 + jj < nclus) {
            const float* lp = ws_lse + ((size_t(b) * nclus + c0 + jj) * C + rank) * kHeads + 2 * tg;
            const float2 l01 = __ldcg(reinterpret_cast<const float2*>(lp));
            const float2 l89 = __ldcg(reinterpret_cast<const float2*>(lp + 8));
            lz[k][jj] = make_float4(l01.x, l01.y, l89.x, l89.y);
            if constexpr ((OPT & kCoal) != 0)
              vz[k][jj] = __ldcg(ws_o + ((size_t(b) * nclus + c0 + jj) * 4 + tg) * kDimV + rank * kSlice + dl);
            else
              vz[k][jj] = __ldcg(ws_o + ((size_t(b) * nclus + c0 + jj) * kDimV + rank * kSlice + dl) * 4 + tg);
          }
        }
      }
#pragma unroll
      for (int k = 0; k < kPer; ++k) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          float m_old = comp(mrun[k], i), m_new = m_old;
#pragma unroll
          for (int jj = 0; jj < kCB; ++jj) m_new = fmaxf(m_new, comp(lz[k][jj], i));
          if (m_new != -INFINITY) {
            const float sc = m_old == -INFINITY ? 0.f : exp2f(m_old - m_new);
            float a_ = comp(acc[k], i) * sc, t_ = comp(tot[k], i) * sc;
#pragma unroll
            for (int jj = 0; jj < kCB; ++jj) {
              const float lzv = comp(lz[k][jj], i);
              const float w = lzv == -INFINITY ? 0.f : exp2f(lzv - m_new);
              t_ += w;
              a_ += w * comp(vz[k][jj], i);
            }
            set(acc[k], i, a_);
            set(tot[k], i, t_);
            set(mrun[k], i, m_new);
          }
        }
      }
    }
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int u = tid + k * kThreads;
      if (kUnits % kThreads == 0 || u < kUnits) {
        float4 r;
        r.x = tot[k].x > 0.f ? acc[k].x * __fdividef(kv_scale, tot[k].x) : 0.f;
        r.y = tot[k].y > 0.f ? acc[k].y * __fdividef(kv_scale, tot[k].y) : 0.f;
        r.z = tot[k].z > 0.f ? acc[k].z * __fdividef(kv_scale, tot[k].z) : 0.f;
        r.w = tot[k].w > 0.f ? acc[k].w * __fdividef(kv_scale, tot[k].w) : 0.f;
        store_out(u, r);
      }
    }
  }
  ts(11);
}
#endif  // MLA_DIMS_SM90

// Grid (splits, batch), clusters of C along splits; S ring stages; MV: where the MOVMs run (as
// mla_fp8_dims2.h); OPT: kFirst, kTs. The first S tiles' copies are issued at the spec layout's rows
// before kv_indptr is read (v16's SPEC; redone at kv_indptr's rows when it disagrees).
template <int S, int C, int MV, int OPT>
__global__ void __launch_bounds__(kDW * kernel_warp_size(), 1)
    mla_fp8_dcl2_kernel(MlaDecodeArgs a, int tokens_per_split, int nclus, float* ws) {
#if defined(MLA_DIMS_SM90)
  using L = mla_dims2::Smem<S>;
  constexpr int WS = kernel_warp_size();
  static_assert(mma::kN == 8 && mma::kARows == 2, "NVIDIA m16n8k16 lane geometry");
  static_assert(C >= 2 && C <= kMaxC && (kDimV / C) % 4 == 0, "cluster");
  require_warp_size();

  extern __shared__ __align__(128) unsigned char smem[];
  int* flag_sm = reinterpret_cast<int*>(smem + L::flag);
  float* lpart_sm = reinterpret_cast<float*>(smem + L::lpart);
  float* l_sm = reinterpret_cast<float*>(smem + L::stats);
  float* m_sm = l_sm + kHeads;
  const uint32_t bar0 = smem_u32(smem + L::bar);
  const int tid = threadIdx.x;
  const Lane ln = mla_dims2::lane_of();
  const int g = ln.g, t = ln.t, dw = ln.dw;
  const int b = blockIdx.y, split = blockIdx.x;
  const int rank = split % C, cl = split / C;
  const int kv_len = a.cfg.kv_seq_len;

  // Timeline (kTs): thread 0, slot 0 globaltimer at entry, 1 SM id, 2..13 clock64 - entry clock at the
  // phases, 14 globaltimer at exit, 15 the block's clock64 span.
  unsigned long long* ts_row = g_mla_dcl2_ts + size_t(blockIdx.y * gridDim.x + blockIdx.x) * kTsSlots;
  long long ts_c0 = 0;
  if constexpr ((OPT & kTs) != 0) {
    if (tid == 0) {
      ts_c0 = clock64();
      ts_row[0] = gtimer();
      ts_row[1] = smid();
    }
  }
  auto ts = [&](int k) {
    if constexpr ((OPT & kTs) != 0) {
      if (tid == 0) ts_row[k] = static_cast<unsigned long long>(clock64() - ts_c0);
    }
  };

  int64_t t0 = int64_t(b) * kv_len + int64_t(split) * tokens_per_split;
  auto count = [&](int64_t end) {
    const int64_t left = end - t0;
    return left <= 0 ? 0 : int(left < tokens_per_split ? left : tokens_per_split);
  };
  int n_tokens = count(int64_t(b + 1) * kv_len);
  int n_tiles = (n_tokens + kT - 1) / kT;

  uint64_t pol = 0;  // kEF: the KV copies' L2 policy (thread 0 issues every copy)
  if constexpr ((OPT & kEF) != 0) {
    if (tid == 0) pol = policy_evict_first();
  }
  auto issue = [&](int tile) {
    if (tile >= n_tiles) return;
    const int valid = min(kT, n_tokens - tile * kT);
    const uint32_t stage = uint32_t(tile % S);
    const uint32_t dst = smem_u32(smem + stage * L::stage);
    const uint8_t* src = a.kv_fp8 + (t0 + int64_t(tile) * kT) * kDimQK;
    const uint32_t bar = bar0 + 8 * stage;
    mbar_expect_tx(bar, uint32_t(kT * kDimQK));
    if ((OPT & kSplit) != 0 && valid == kT) {
#pragma unroll
      for (int q4 = 0; q4 < 4; ++q4)
        bulk_copy(dst + q4 * (kT / 4) * kDimQK, src + q4 * (kT / 4) * kDimQK, uint32_t(kT / 4 * kDimQK), bar);
      return;
    }
    if constexpr ((OPT & kEF) != 0)
      bulk_copy_hint(dst, src, uint32_t(valid * kDimQK), bar, pol);
    else
      bulk_copy(dst, src, uint32_t(valid * kDimQK), bar);
    if constexpr ((OPT & kLean) != 0)
      mla_dims::fill_rows_rolled(dst, src + (valid - 1) * kDimQK, valid, kDimQK, bar);
    else
      for (int r = valid; r < kT; ++r) bulk_copy(dst + r * kDimQK, src + (valid - 1) * kDimQK, kDimQK, bar);
  };
  constexpr bool kStag = (OPT & kStagger) != 0;
  constexpr int kFirstIssue = kStag ? 1 : S;  // copies issued at the start
  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < S; ++s) mbar_init(bar0 + 8 * s, 1);
    mbar_init_fence();
    *flag_sm = -1;
    for (int s = 0; s < kFirstIssue; ++s) issue(s);
  }
  if constexpr ((OPT & kPush) != 0) cluster_arrive_relaxed_start();  // waited for before the first push
  ts(2);

  // Q (bf16) of the warp's dims: k step p of n tile nt: dims 64 dw + 16 t + 4 p + {0..3} of head 8 nt + g;
  // rope k step s: 512 + 32 (dw & 1) + 8 t + 4 s + {0..3}.
  uint2 qraw[2][4];
  uint4 qrope[2];
  {
    const uint16_t* qbase = a.q + int64_t(b) * kHeads * kDimQK;
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      const uint16_t* qh = qbase + (8 * nt + g) * kDimQK;
#pragma unroll
      for (int p = 0; p < 4; ++p) qraw[nt][p] = *reinterpret_cast<const uint2*>(qh + 64 * dw + 16 * t + 4 * p);
      qrope[nt] = *reinterpret_cast<const uint4*>(qh + kDimV + 32 * (dw & 1) + 8 * t);
    }
  }
  const float kv_scale = *a.kv_fp8_scale;

  uint32_t j = 0;  // tile counter: stage j % S, phase j / S
  {
    const int64_t kv_begin = a.kv_indptr[b], kv_end = a.kv_indptr[b + 1];
    __syncthreads();  // the barriers are initialised
    if (kv_begin != int64_t(b) * kv_len || kv_end != int64_t(b + 1) * kv_len) {  // block-uniform
      if (tid == 0) {
        const int issued = min(kFirstIssue, n_tiles);
        for (int s = 0; s < issued; ++s) mbar_wait(bar0 + 8 * s, 0u);
        for (int s = issued; s < S; ++s) mbar_arrive_plain(bar0 + 8 * s);
      }
      __syncthreads();  // every stage is past phase 0 before anyone waits on phase 1
      j = S;
      t0 = kv_begin + int64_t(split) * tokens_per_split;
      n_tokens = count(kv_end);
      n_tiles = (n_tokens + kT - 1) / kT;
      if (tid == 0)
        for (int s = 0; s < kFirstIssue; ++s) issue(s);
    }
  }
  ts(3);

  mla_dims::QFrags q;
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
    if constexpr ((OPT & kF16P) != 0) {
#pragma unroll
      for (int p = 0; p < 4; ++p) {
        q.qb[nt][p][0] = q_f16x2(qraw[nt][p].x, kQScaleF16P);
        q.qb[nt][p][1] = q_f16x2(qraw[nt][p].y, kQScaleF16P);
      }
      q.qr2[nt][0][0] = q_f16x2(qrope[nt].x, kQScaleF16P);
      q.qr2[nt][0][1] = q_f16x2(qrope[nt].y, kQScaleF16P);
      q.qr2[nt][1][0] = q_f16x2(qrope[nt].z, kQScaleF16P);
      q.qr2[nt][1][1] = q_f16x2(qrope[nt].w, kQScaleF16P);
    } else {
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      q.qb[nt][p][0] = mla_wide::bf16x2_to_f16x2(qraw[nt][p].x);
      q.qb[nt][p][1] = mla_wide::bf16x2_to_f16x2(qraw[nt][p].y);
    }
    q.qr2[nt][0][0] = mla_wide::bf16x2_to_f16x2(qrope[nt].x);
    q.qr2[nt][0][1] = mla_wide::bf16x2_to_f16x2(qrope[nt].y);
    q.qr2[nt][1][0] = mla_wide::bf16x2_to_f16x2(qrope[nt].z);
    q.qr2[nt][1][1] = mla_wide::bf16x2_to_f16x2(qrope[nt].w);
    }
  }
  q.qr[0] = q.qr[1] = 0u;
  if constexpr ((OPT & kTs) != 0) {
    if (tid == 0) {  // Q has landed (its conversion needs the loads)
      uint32_t x = q.qb[0][0][0] ^ q.qr2[1][1][1];
      asm volatile("" ::"r"(x));
    }
  }
  ts(4);
  const float logit_scale = (OPT & kF16P) != 0 ? a.cfg.sm_scale * 1.4426950408889634f * kv_scale / kQScaleF16P
                                                : a.cfg.sm_scale * 1.4426950408889634f * kv_scale;

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

  for (int tile = 0; tile < n_tiles; ++tile, ++j) {
    const unsigned char* st = smem + (j % S) * L::stage;
    const int valid = min(kT, n_tokens - tile * kT);
    mbar_wait(bar0 + 8 * (j % S), uint32_t((j / S) & 1));
    if constexpr (kStag) {
      if (tile == 0 && tid == 0)  // tiles 1 .. S - 1 once tile 0 has landed
        for (int s = 1; s < S; ++s) issue(s);
    }
    if (tile == 0) ts(5);
    if (tile == n_tiles - 1) ts(7);
    tile2<S, MV, (OPT & kF16P) != 0>(smem, ln, st, valid, j, (OPT & kFirst) != 0 && tile == 0, q, logit_scale, ss, o, [&] {
      if (tid == 0) issue(tile + S);
    });
    if (tile == 0) ts(6);
  }
  ts(8);
  if constexpr ((OPT & kPush) != 0) {
    epilogue_push<S, C, (OPT & kFence1) != 0, OPT>(a, smem, ln, ss, o, kv_scale, b, rank, cl, nclus, ws, ts);
  } else {
  // This block's partial: unnormalised O [16][512] over the partial-logit area (every warp passed the
  // last tile's barrier B after its reads of it), row maxima m and sums l.
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
        o_sm[o_at(head, dim)] = o[p][nt].v[i];
      }
  __syncthreads();
  if (tid < kHeads)
    l_sm[tid] = lpart_sm[tid] + lpart_sm[kHeads + tid] + lpart_sm[2 * kHeads + tid] + lpart_sm[3 * kHeads + tid];
  mla_cluster::cluster_arrive();
  mla_cluster::cluster_wait();
  ts(12);
  epilogue<C, (OPT & kFence1) != 0>(a, o_sm, m_sm, l_sm, flag_sm, kv_scale, b, rank, cl, nclus, ws, ts);
  }
  if constexpr ((OPT & kTs) != 0) {
    if (tid == 0) {
      ts_row[15] = static_cast<unsigned long long>(clock64() - ts_c0);
      ts_row[14] = gtimer();
    }
  }
#else
  (void)a; (void)tokens_per_split; (void)nclus; (void)ws;
  __builtin_trap();
#endif
}

template <int S, int C, int MV, int OPT>
struct Dcl2Kernel {
  static constexpr auto kernel = mla_fp8_dcl2_kernel<S, C, MV, OPT>;
  static constexpr int kWarps = kDW, kTileTokens = kT, kC = C, kMaxTokens = 4096;
  static constexpr size_t kSmem = (OPT & kPush) != 0 ? Smem<S, C>::total : mla_dims2::Smem<S>::total;
  static constexpr const char* kName = "mla_fp8_dcl2_kernel";
};
template <int S, int C, int MV, int OPT>
using Dcl2 = mla_cluster::ClusterLaunch<Dcl2Kernel<S, C, MV, OPT>>;

// The timeline of one launch (kTs), printed to stderr: phases as medians / maxima over the blocks.
inline void print_timeline(const MlaDecodeArgs& a, const ClusterPlan& pl, int C) {
  const int blocks = pl.splits * a.cfg.batch_size;
  if (blocks > kTsBlocks) return;
  std::vector<unsigned long long> h(size_t(blocks) * kTsSlots);
  harness_check(cudaDeviceSynchronize(), "timeline sync");
  harness_check(cudaMemcpyFromSymbol(h.data(), g_mla_dcl2_ts, h.size() * sizeof(unsigned long long)), "timeline copy");
  unsigned long long g0 = ~0ull, g1 = 0;
  for (int i = 0; i < blocks; ++i) {
    g0 = std::min(g0, h[size_t(i) * kTsSlots]);
    g1 = std::max(g1, h[size_t(i) * kTsSlots + 14]);
  }
  auto stats = [&](auto f) {
    std::vector<double> v;
    for (int i = 0; i < blocks; ++i) v.push_back(f(&h[size_t(i) * kTsSlots]));
    std::sort(v.begin(), v.end());
    return std::make_pair(v[v.size() / 2], v.back());
  };
  // ns per clock from each block's two globaltimer readings over its clock span.
  double ns_per_clk = 0;
  for (int i = 0; i < blocks; ++i) {
    const unsigned long long* r = &h[size_t(i) * kTsSlots];
    ns_per_clk += double(r[14] - r[0]) / std::max(1.0, double(r[15]));
  }
  ns_per_clk /= blocks;
  std::fprintf(stderr, "[v19ts] bs %d kv %d: C %d x %d clusters, %d tokens a block, %d blocks; span %.0f ns, ns/clk %.3f\n",
               a.cfg.batch_size, a.cfg.kv_seq_len, C, pl.nclus, pl.tokens_per_split, blocks, double(g1 - g0), ns_per_clk);
  const auto st = stats([&](const unsigned long long* r) { return double(r[0] - g0); });
  const auto en = stats([&](const unsigned long long* r) { return double(r[14] - g0); });
  std::fprintf(stderr, "[v19ts]   block start (ns after first): med %.0f max %.0f; block end: med %.0f max %.0f\n", st.first,
               st.second, en.first, en.second);
  static const char* names[] = {"", "", "copies issued", "indptr+sync", "Q converted", "tile0 landed", "tile0 done",
                                "last landed", "tiles done", "merge loaded", "ctr/slices", "epi done", "cluster wait1", "", "", "end"};
  for (int k : {2, 3, 4, 5, 6, 7, 8, 12, 9, 10, 11, 15}) {
    const auto s = stats([&](const unsigned long long* r) { return double(r[k]) * ns_per_clk; });
    std::fprintf(stderr, "[v19ts]   %-14s med %7.0f ns  max %7.0f ns (since the block's start)\n", names[k], s.first, s.second);
  }
}

// The cluster sizes 2, 4, 8, 16 of one (S, MV, OPT): the plan of least cost (v16's model); ties go to the
// larger cluster.
struct Pick {
  int c = 0;  // cluster size, 0: none
  ClusterPlan plan;
};
template <int S, int MV, int OPT>
struct Family {
  static Pick pick(const MlaDecodeConfig& cfg, const mla_cluster::MergeCost& merge, int max_tokens = 4096) {
    Pick best;
    auto consider = [&](int c, const ClusterPlan& p) {
      if (p.ok() && (best.c == 0 || p.cost < best.plan.cost)) best = {c, p};
    };
    consider(16, Dcl2<S, 16, MV, OPT>::plan(cfg, merge, max_tokens));
    consider(8, Dcl2<S, 8, MV, OPT>::plan(cfg, merge, max_tokens));
    consider(4, Dcl2<S, 4, MV, OPT>::plan(cfg, merge, max_tokens));
    consider(2, Dcl2<S, 2, MV, OPT>::plan(cfg, merge, max_tokens));
    return best;
  }
  static size_t workspace_bytes(const Pick& p, const MlaDecodeConfig& cfg) {
    return p.c == 0 ? 0 : mla_cluster::cluster_ws_bytes(cfg.batch_size, p.plan.nclus, p.c);
  }
  static void launch(const Pick& p, const MlaDecodeArgs& a) {
    if constexpr ((OPT & kLean) != 0 && (OPT & kPush) != 0) {
      if (p.plan.nclus != 1) throw std::runtime_error("mla_fp8_dcl2: kLean push kernels merge one cluster a batch only");
    }
    switch (p.c) {
      case 16: Dcl2<S, 16, MV, OPT>::launch(a, p.plan, "mla_fp8_dcl2_kernel<C 16>"); break;
      case 8: Dcl2<S, 8, MV, OPT>::launch(a, p.plan, "mla_fp8_dcl2_kernel<C 8>"); break;
      case 4: Dcl2<S, 4, MV, OPT>::launch(a, p.plan, "mla_fp8_dcl2_kernel<C 4>"); break;
      case 2: Dcl2<S, 2, MV, OPT>::launch(a, p.plan, "mla_fp8_dcl2_kernel<C 2>"); break;
      default: throw std::runtime_error("mla_fp8_dcl2: no plan");
    }
    if constexpr ((OPT & kTs) != 0) {
      // One launch per shape: the 8th call (a timed one, after the warm-up's checks).
      static std::map<std::pair<int, int>, int> calls;
      const char* env = std::getenv("MLA_V19_TS");
      const int at = env ? std::atoi(env) : 0;
      if (at > 0 && ++calls[{a.cfg.batch_size, a.cfg.kv_seq_len}] == at) print_timeline(a, p.plan, p.c);
    }
  }
};

// The small-shape path as one unit for composed variants: applies(cfg), workspace_bytes(cfg), launch(args).
// The plan comes from the OPTN family (v16's plan model: cluster sizes 2 / 4 / 8 / 16, merge cost 48 + 8 k);
// a plan with one cluster a batch runs the OPT1 kernels (v19: the push epilogue), one with several
// clusters a batch the OPTN kernels (v19: the pull epilogue with the counter merge), on the same plan
// (both kernels hold one block an SM, so the occupancy calculator gives them the same cluster slots).
template <int S, int MV, int OPT1, int OPTN, int64_t kSmall = 65536>
struct SmallPath {
  static constexpr mla_cluster::MergeCost kMerge{48, 8};  // v16's measured merge cost
  using F1 = Family<S, MV, OPT1>;
  using FN = Family<S, MV, OPTN>;
  static Pick pick(const MlaDecodeConfig& c) {
    if (int64_t(c.batch_size) * c.kv_seq_len > kSmall) return {};
    return FN::pick(c, kMerge);
  }
  static bool applies(const MlaDecodeConfig& c) { return pick(c).c != 0; }
  static size_t workspace_bytes(const MlaDecodeConfig& c) { return FN::workspace_bytes(pick(c), c); }
  static void launch(const MlaDecodeArgs& a) {
    const Pick p = pick(a.cfg);
    if (p.plan.nclus == 1)
      F1::launch(p, a);
    else
      FN::launch(p, a);
  }
};

#endif  // HARNESS_GPU && !AMD

}  // namespace
}  // namespace mla_dcl2
