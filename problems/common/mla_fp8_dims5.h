// mla_decode on fp8 KV, the 32-tile large shapes (mla-large3, session 8): mla_dims4's kernel (v20's dims tile,
// mla_dims3::dims_tile3 with F16P | QP | EF, R 2, 3 stages) with these compile-time flags F (F = 0: mla_dims3's
// kernel, 226 registers):
//  - fDir: the output (splits == 1) or the split's normalised partial written straight from the P V accumulators:
//    row sums through shared memory and one barrier, lanes g, g ^ 1 swap half their values so that each lane
//    holds 8 consecutive dims of a head (one 16-byte bf16 store, or two float4 partial stores), instead of the
//    O staging round trip with two barriers. bs 256 / kv 1024: -1.2 to -1.7 us (docs/perf-mla-large3.md).
//  - fMg (with fDir and splits, one item a block, cooperative launch): mla_dims3's kMG in-kernel merge (count
//    in, wait for the batch's splits, merge heads split (mod splits) from the partials in L2), its loads all
//    in flight at once at 4 splits. bs 32 / kv 8192: -0.5 us (call 3) with the looped loads.
//  - fCl / fSt / fLa / fPdlP / fPdlS (Path5, not used by v24; measured slower): each batch's splits a cluster
//    merging through distributed shared memory (mla_dims4's fCl); fSt: tile stealing inside the cluster (static
//    tiles, then a pool through a counter in rank 0's shared memory); bs 32 / kv 8192's 2 batches beyond the 30
//    resident clusters of 4 as a programmatic dependent grid (fLa: the last split to arrive merges the
//    partials; fPdlP / fPdlS: launch_dependents at the first grid's start, griddepcontrol.wait at the dependent
//    grid's end). Measured: the dependent grid started only ~9 us after the cluster grid ended (+6.7 us), and
//    stealing gained nothing (bs 64 / kv 8192 +2 us).
//  - fTs: thread 0 of each block records globaltimer at the phases (measurement; the host prints the N-th
//    launch's timeline per shape with env MLA_D5_TS=N; it synchronises the device).
// Interface for composed variants: DirPath<S, OPT, R, MG> (applies: 65536 < batch * kv_len <= 262144, i.e. the
// shapes with 32 tiles a block; workspace_bytes; launch), Path5<S, OPT, R>.
#pragma once
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include "problems/common/mla_fp8_dims3.h"

namespace mla_dims5 {
namespace {  // internal linkage: every variant file gets its own kernels, launch statics and attributes

using namespace mla_kernels;
using mla_dims::kDW;
using mla_dims::kT;

constexpr int kF16P = mla_dims3::kF16P;
constexpr int kQP = mla_dims3::kQP;
constexpr int kEF = mla_dims3::kEF;
constexpr int kD3Bits = kF16P | kQP | kEF;  // the bits dims_tile3 / Smem see

constexpr int fCl = 2, fSt = 4, fLa = 8, fDir = 16, fPdlP = 32, fPdlS = 64, fTs = 128, fMg = 256;

constexpr int kTsBlocks = 1024, kTsSlots = 16;
constexpr int kMaxLaBatches = 1024, kMaxLaSplits = 16;

#if defined(HARNESS_GPU) && !defined(__HIP_PLATFORM_AMD__)
static __device__ unsigned long long g_mla_dims5_ts[kTsBlocks * kTsSlots];
static __device__ unsigned int g_mla_dims5_arrivals[kMaxLaBatches];  // fLa, put back to 0 by the last arriver
static __device__ unsigned int g_mla_dims5_merge[2 * kMaxLaBatches];  // fMg: per batch arrivals, departures
#endif

#if defined(HARNESS_GPU) && defined(MLA_DIMS_SM90)
__device__ inline unsigned long long d5_gtimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ inline unsigned int d5_smid() {
  unsigned int r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
}
__device__ inline uint32_t d5_mapa(uint32_t addr, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}
__device__ inline float d5_ld_cluster_f32(uint32_t addr) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(addr) : "memory");
  return v;
}
__device__ inline float4 d5_ld_cluster_v4(uint32_t addr) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}
__device__ inline uint32_t d5_atom_add_cluster(uint32_t addr, uint32_t v) {
  uint32_t r;
  asm volatile("atom.relaxed.cluster.shared::cluster.add.u32 %0, [%1], %2;" : "=r"(r) : "r"(addr), "r"(v) : "memory");
  return r;
}
__device__ inline void d5_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ inline uint32_t d5_cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ inline void d5_mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
__device__ inline void d5_launch_dependents() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
__device__ inline void d5_grid_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
#endif

#if defined(HARNESS_GPU)
// mla_dims4::mla_fp8_dims4_kernel with the flags above. Items: batch b0 + item / splits, split item % splits,
// item < nb * splits. ns: fSt's static tiles a block.
template <int S, int OPT, int R, int F>
__global__ void __launch_bounds__(kDW * kernel_warp_size(), 1)
    mla_fp8_dims5_kernel(MlaDecodeArgs a, int tokens_per_split, int splits, Partials part, int b0, int nb, int ns) {
#if defined(MLA_DIMS_SM90)
  constexpr int D3 = OPT & kD3Bits;
  using L = mla_dims3::Smem<S, D3>;
  constexpr bool QP = (OPT & kQP) != 0;
  constexpr float kQScale = (OPT & kF16P) ? mla_dims3::kQScaleF16P : 1.f;
  constexpr int WS = kernel_warp_size();
  constexpr int kThreads = kDW * WS;
  static_assert(mma::kN == 8 && mma::kARows == 2, "NVIDIA m16n8k16 lane geometry");
  static_assert(size_t(S) * 4 + 8 <= size_t(mla_dims3::kSpanSlots) * 8, "stage info, counter, flag fit the span area");
  require_warp_size();
  using mla_dims::mbar_expect_tx;
  using mla_dims::mbar_init;
  using mla_dims::mbar_init_fence;
  using mla_dims::mbar_wait;
  using mla_dims::smem_u32;

  extern __shared__ __align__(128) unsigned char smem[];
  int* flag_sm = reinterpret_cast<int*>(smem + L::flag);
  float* lpart_sm = reinterpret_cast<float*>(smem + L::lpart);
  float* l_sm = reinterpret_cast<float*>(smem + L::stats);
  float* m_sm = l_sm + kHeads;
  int* info_sm = reinterpret_cast<int*>(smem + L::spn);  // fSt: [S] valid tokens of the stage's tile, -1: end
  unsigned int* ctr_sm = reinterpret_cast<unsigned int*>(smem + L::spn + 4 * S);  // fSt: pool counter (rank 0)
  int* last_sm = reinterpret_cast<int*>(smem + L::spn + 4 * S + 4);                // fLa: this block merges
  const uint32_t bar0 = smem_u32(smem + L::bar);
  const uint32_t qbar0 = bar0 + 8 * S;

  const int tid = threadIdx.x;
  const mla_dims2::Lane ln = mla_dims2::lane_of();
  const int g = ln.g, t = ln.t, dw = ln.dw;
  constexpr bool cl = (F & fCl) != 0;
  constexpr bool st = (F & fSt) != 0;
  constexpr bool tsf = (F & fTs) != 0;

  if constexpr ((F & fPdlP) != 0) d5_launch_dependents();

  // fTs rows: the dependent grid's blocks after the first grid's (kTsBlocks / 2 each).
  const unsigned ts_blk = blockIdx.x + ((F & fPdlS) ? kTsBlocks / 2 : 0);
  unsigned long long* ts_row = g_mla_dims5_ts + size_t(ts_blk < kTsBlocks ? ts_blk : 0) * kTsSlots;
  auto ts = [&](int slot) {
    if constexpr (tsf) {
      if (tid == 0 && ts_blk < kTsBlocks) ts_row[slot] = d5_gtimer();
    }
  };
  ts(0);
  if (tsf && tid == 0 && ts_blk < kTsBlocks) {
    ts_row[1] = d5_smid();
    for (int k = 2; k < kTsSlots; ++k) ts_row[k] = 0;
  }

  struct Span {
    int64_t t0;
    int n_tokens, n_tiles, b, split;
  };
  auto span = [&](int item) {
    const int b = b0 + item / splits;
    const int split = item % splits;
    const int64_t kv_begin = a.kv_indptr[b], kv_end = a.kv_indptr[b + 1];
    if constexpr (st) {  // the whole batch; the tiles come from the static ranges and the pool
      const int n = int(kv_end - kv_begin);
      return Span{kv_begin, n, (n + kT - 1) / kT, b, split};
    }
    const int64_t t0 = kv_begin + int64_t(split) * tokens_per_split;
    const int64_t left = kv_end - t0;
    const int n = left <= 0 ? 0 : int(left < tokens_per_split ? left : tokens_per_split);
    return Span{t0, n, (n + kT - 1) / kT, b, split};
  };
  const int first_item = int(blockIdx.x);
  const int item_step = int(gridDim.x);
  const int n_items = nb * splits;

  // Producer (thread 0): the block's tiles in consumption order, global tile j into stage j % S.
  int p_item = first_item, p_tile = 0;
  uint32_t p_j = 0;
  Span p_span{0, 0, 0, 0, 0};
  uint64_t pol = 0;
  if constexpr ((OPT & kEF) != 0) {
    if (tid == 0) pol = mla_dims3::policy_evict_first();
  }
  auto copy_tile = [&](const Span& sp, int tile, uint32_t stage) {
    const int valid = min(kT, sp.n_tokens - tile * kT);
    const uint32_t bar = bar0 + 8 * stage;
    const uint32_t dst = smem_u32(smem + stage * L::stage);
    const uint8_t* src = a.kv_fp8 + (sp.t0 + int64_t(tile) * kT) * kDimQK;
    mbar_expect_tx(bar, uint32_t(kT * kDimQK));
    if constexpr ((OPT & kEF) != 0)
      mla_dims3::bulk_copy_hint(dst, src, uint32_t(valid * kDimQK), bar, pol);
    else
      mla_dims::bulk_copy(dst, src, uint32_t(valid * kDimQK), bar);
    for (int r = valid; r < kT; ++r) mla_dims::bulk_copy(dst + r * kDimQK, src + (valid - 1) * kDimQK, kDimQK, bar);
    return valid;
  };
  // fSt state: static tiles issued, the pool ticket fetched one tile ahead, done.
  int s_seq = 0;
  uint32_t s_ticket = 0;
  bool s_done = false;
  int s_ns = 0, s_pool0 = 0;
  uint32_t s_ctr = 0;
  auto issue_next = [&]() {
    if constexpr (st) {
      if (s_done) return;
      const uint32_t stage = p_j % S;
      int tile;
      if (s_seq < s_ns)
        tile = p_span.split * s_ns + s_seq;
      else
        tile = s_pool0 + int(s_ticket);
      ++s_seq;
      if (tile < p_span.n_tiles && s_seq >= s_ns) s_ticket = d5_atom_add_cluster(s_ctr, 1u);  // for the next one
      if (tile < p_span.n_tiles) {
        info_sm[stage] = copy_tile(p_span, tile, stage);
      } else {
        info_sm[stage] = -1;
        d5_mbar_arrive(bar0 + 8 * stage);
        s_done = true;
      }
      ++p_j;
      return;
    }
    while (p_item < n_items && p_tile >= p_span.n_tiles) {
      p_item += item_step;
      if (p_item < n_items) {
        p_span = span(p_item);
        p_tile = 0;
      }
    }
    if (p_item >= n_items) return;
    copy_tile(p_span, p_tile, p_j % S);
    ++p_tile;
    ++p_j;
  };
  // QP: item number k of the block (item first_item + k * item_step) into Q buffer k & 1.
  auto issue_q = [&](int k) {
    const int item = first_item + k * item_step;
    if (item >= n_items) return;
    const uint32_t bar = qbar0 + 8 * (k & 1);
    mbar_expect_tx(bar, uint32_t(L::qbytes));
    mla_dims::bulk_copy(smem_u32(smem + L::q + (k & 1) * L::qbytes),
                        a.q + int64_t(b0 + item / splits) * kHeads * kDimQK, uint32_t(L::qbytes), bar);
  };
  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < S + 2; ++s) mbar_init(bar0 + 8 * s, 1);
    mbar_init_fence();
    *flag_sm = -1;
    *ctr_sm = 0u;
  }
  __syncthreads();
  // fSt: the pool counter must be initialised before any block of the cluster takes a ticket. Tickets are
  // taken from the s_ns-th issue on; with s_ns > S (the host's plan) the first S issues take none, so the
  // cluster barrier can follow them; otherwise (kv_indptr unlike the config) it comes first.
  if (tid == 0) {
    if (first_item < n_items) p_span = span(first_item);
    if constexpr (st) {
      s_ns = min(ns, p_span.n_tiles / splits);
      s_pool0 = splits * s_ns;
      s_ctr = d5_mapa(smem_u32(ctr_sm), 0u);
    }
    if constexpr (QP) issue_q(0);
    if (!st || s_ns > S) {
      for (int s = 0; s < S; ++s) issue_next();
    }
  }
  if constexpr (st) {
    d5_cluster_sync();
    if (tid == 0 && s_ns <= S) {  // kv_indptr unlike the config: the first issues may take tickets
      for (int s = 0; s < S; ++s) issue_next();
    }
  }
  ts(2);

  const float kv_scale = *a.kv_fp8_scale;
  const float logit_scale = a.cfg.sm_scale * 1.4426950408889634f * kv_scale / kQScale;
  uint32_t j = 0;                 // global tile counter
  uint32_t stage = 0, phase = 0;  // j % S, (j / S) & 1

  int k_item = 0;
  for (int item = first_item; item < n_items; item += item_step, ++k_item) {
    const Span w = span(item);
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
    mla_dims2::SoftState ss;
#pragma unroll
    for (int e = 0; e < 4; ++e) ss.m_ref[e] = -INFINITY;
    ss.mred[0] = ss.mred[1] = -INFINITY;
    ss.lsum[0] = ss.lsum[1] = 0.f;
    mma::FragC o[4][2];
#pragma unroll
    for (int p = 0; p < 4; ++p)
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) o[p][nt] = mma::FragC{{0.f, 0.f, 0.f, 0.f}};

    for (int tile = 0;; ++tile, ++j) {
      int valid;
      if constexpr (st) {
        mbar_wait(bar0 + 8 * stage, phase);
        valid = info_sm[stage];
        if (valid < 0) break;
      } else {
        if (tile >= w.n_tiles) break;
        valid = min(kT, w.n_tokens - tile * kT);
        mbar_wait(bar0 + 8 * stage, phase);
      }
      if constexpr (tsf) {
        if (j == 0) ts(3);
        if (!st && tile == w.n_tiles - 1) ts(7);
      }
      const unsigned char* stp = smem + stage * L::stage;
      mla_dims3::dims_tile3<S, D3, R>(smem, ln, stp, valid, j, q, logit_scale, ss, o, [&] {
        if (tid == 0) issue_next();
      });
      if constexpr (tsf) {
        if (j == 0) ts(4);
      }
      if (++stage == S) {
        stage = 0;
        phase ^= 1u;
      }
    }
    if constexpr (tsf) {
      if (k_item == 0) ts(5);
      ts(8);
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
      if (dw == 0 && (F & fDir) == 0) {
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) m_sm[8 * (jj >> 1) + 2 * t + (jj & 1)] = ss.m_ref[jj];
      }
    }
    if ((F & fDir) != 0 && !cl) {
      // Straight from the accumulators: o[p][nt].v[i] is dim 64 dw + 16 (g >> 1) + 4 p + (g & 1) + 2 (i >> 1) of
      // head 8 nt + 2 t + (i & 1). Lanes g, g ^ 1 (lane ^ 4) swap: the even lane keeps p 0, 1 and takes its
      // partner's, so it holds dims 16 (g >> 1) + 0..7; the odd lane dims + 8..15.
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
          float d[8];  // dim0 + k: pp = k >> 2, qq = (k >> 1) & 1, parity k & 1 (even lane: own parity 0)
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
          } else {  // the normalised partial and its log2-sum-exp (the combine kernel merges them)
            float* po = part.o + ((size_t(w.b - b0) * splits + w.split) * kHeads + h) * kDimV + dim0;
            *reinterpret_cast<float4*>(po) = make_float4(d[0], d[1], d[2], d[3]);
            *reinterpret_cast<float4*>(po + 4) = make_float4(d[4], d[5], d[6], d[7]);
            if (dw == 0 && g == 0)
              part.lse[(size_t(w.b - b0) * splits + w.split) * kHeads + h] =
                  l > 0.f ? ss.m_ref[2 * nt + c] + log2f(l) : -INFINITY;
          }
        }
      if constexpr ((F & fMg) != 0) {
        // One item a block, all blocks resident (cooperative launch): count in, wait for the batch's other
        // splits, merge heads split, split + splits, .. from the partials in L2 (mla_dims3's kMG).
        if (splits > 1) {
          asm volatile("fence.acq_rel.gpu;" ::: "memory");
          __syncthreads();
          if (tid == 0) {
            unsigned int* ctr = g_mla_dims5_merge + 2 * (w.b - b0);
            atomicAdd(ctr, 1u);
            for (;;) {
              unsigned int v;
              asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(ctr) : "memory");
              if (v >= unsigned(splits)) break;
              __nanosleep(32);
            }
            if (atomicAdd(ctr + 1, 1u) == unsigned(splits - 1)) {  // the last to leave: back to zero
              atomicExch(ctr, 0u);
              atomicExch(ctr + 1, 0u);
            }
          }
          __syncthreads();
          asm volatile("fence.acq_rel.gpu;" ::: "memory");
          const int bl = w.b - b0;
          const int nh = w.split < kHeads ? (kHeads - 1 - w.split) / splits + 1 : 0;
          constexpr int kU = 2;  // 4 splits, 4 heads a block: two units a thread, all 16 + 16 loads in flight at once
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
                ov[k][s2] = __ldcg(reinterpret_cast<const float4*>(
                    part.o + ((size_t(bl) * splits + s2) * kHeads + h) * kDimV + dim));
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
                const float wt = l == -INFINITY ? 0.f : mla_dims2::ex2_fast(l - mx);
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
                const float wt = l == -INFINITY ? 0.f : mla_dims2::ex2_fast(l - mx);
                const float4 v = __ldcg(reinterpret_cast<const float4*>(
                    part.o + ((size_t(bl) * splits + s2) * kHeads + h) * kDimV + dim));
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
      if (k_item == 0) ts(6);
      continue;  // lpart is next written after the next item's tile barriers
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
    if (cl && splits > 1) {
      // Cluster merge: block `split` of the batch's cluster writes heads split, split + splits, ...
      // out = kv_scale * sum_s 2^(m_s - M) O_s / sum_s 2^(m_s - M) l_s over the cluster's blocks s.
      d5_cluster_sync();
      const uint32_t base = smem_u32(smem);
      uint32_t rb[4];
#pragma unroll
      for (int s2 = 0; s2 < 4; ++s2) rb[s2] = d5_mapa(base, uint32_t(s2 < splits ? s2 : 0));
      const int nh = kHeads / splits;
      for (int u = tid; u < nh * (kDimV / 4); u += kThreads) {
        const int h = w.split + splits * (u / (kDimV / 4)), dim = 4 * (u % (kDimV / 4));
        float ms[4], ls[4];
        float mx = -INFINITY;
#pragma unroll
        for (int s2 = 0; s2 < 4; ++s2) {
          if (s2 < splits) {
            ms[s2] = d5_ld_cluster_f32(rb[s2] + uint32_t(L::stats + 4 * (kHeads + h)));
            ls[s2] = d5_ld_cluster_f32(rb[s2] + uint32_t(L::stats + 4 * h));
            mx = fmaxf(mx, ms[s2]);
          }
        }
        float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
        float den = 0.f;
        const uint32_t off = uint32_t(L::sp + 4 * (h * kDimV + 4 * ((dim >> 2) ^ ((h >> 1) & 3))));
#pragma unroll
        for (int s2 = 0; s2 < 4; ++s2) {
          if (s2 < splits) {
            const float c = ms[s2] == -INFINITY ? 0.f : mla_dims2::ex2_fast(ms[s2] - mx);
            const float4 v = d5_ld_cluster_v4(rb[s2] + off);
            den += c * ls[s2];
            acc.x += c * v.x;
            acc.y += c * v.y;
            acc.z += c * v.z;
            acc.w += c * v.w;
          }
        }
        const float f = den > 0.f ? kv_scale / den : 0.f;
        *reinterpret_cast<uint2*>(a.out + (int64_t(w.b) * kHeads + h) * kDimV + dim) =
            make_uint2(pack16(f32_to_bf16_bits(acc.x * f), f32_to_bf16_bits(acc.y * f)),
                       pack16(f32_to_bf16_bits(acc.z * f), f32_to_bf16_bits(acc.w * f)));
      }
      d5_cluster_sync();  // no block leaves while another still reads its shared memory
    } else {
      const int bl = w.b - b0;  // partials are indexed by the launch's own batches
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
          *reinterpret_cast<float4*>(part.o + ((size_t(bl) * splits + w.split) * kHeads + h) * kDimV + dim) =
              make_float4(v.x * f, v.y * f, v.z * f, v.w * f);
        }
      }
      if (splits > 1 && tid < kHeads)
        part.lse[(size_t(bl) * splits + w.split) * kHeads + tid] =
            l_sm[tid] > 0.f ? m_sm[tid] + log2f(l_sm[tid]) : -INFINITY;
      if ((F & fLa) != 0 && splits > 1) {
        // The batch's last split to arrive merges all its partials (from L2) and writes the output.
        __threadfence();
        __syncthreads();
        if (tid == 0) {
          const unsigned int old = atomicAdd(&g_mla_dims5_arrivals[bl], 1u);
          *last_sm = old == unsigned(splits - 1) ? 1 : 0;
        }
        __syncthreads();
        if (*last_sm == 1) {
          __threadfence();
          const int ns2 = min(splits, kMaxLaSplits);
          for (int c = tid; c < kHeads * kDimV / 4; c += kThreads) {
            const int h = c / (kDimV / 4), dim = 4 * (c % (kDimV / 4));
            float lse[kMaxLaSplits];
            float mx = -INFINITY;
#pragma unroll
            for (int s2 = 0; s2 < kMaxLaSplits; ++s2) {
              lse[s2] = s2 < ns2 ? __ldcg(part.lse + (size_t(bl) * splits + s2) * kHeads + h) : -INFINITY;
              mx = fmaxf(mx, lse[s2]);
            }
            float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
            float den = 0.f;
#pragma unroll
            for (int s2 = 0; s2 < kMaxLaSplits; ++s2) {
              if (s2 < ns2) {
                const float wgt = lse[s2] == -INFINITY ? 0.f : exp2f(lse[s2] - mx);
                const float4 v = __ldcg(reinterpret_cast<const float4*>(
                    part.o + ((size_t(bl) * splits + s2) * kHeads + h) * kDimV + dim));
                den += wgt;
                acc.x += wgt * v.x;
                acc.y += wgt * v.y;
                acc.z += wgt * v.z;
                acc.w += wgt * v.w;
              }
            }
            const float inv = den > 0.f ? 1.f / den : 0.f;
            *reinterpret_cast<uint2*>(a.out + (int64_t(w.b) * kHeads + h) * kDimV + dim) =
                make_uint2(pack16(f32_to_bf16_bits(acc.x * inv), f32_to_bf16_bits(acc.y * inv)),
                           pack16(f32_to_bf16_bits(acc.z * inv), f32_to_bf16_bits(acc.w * inv)));
          }
          if (tid == 0) g_mla_dims5_arrivals[bl] = 0u;  // every split of this launch has arrived
        }
      }
    }
    if (k_item == 0) ts(6);
    __syncthreads();  // the next item reuses the O staging and the statistics
  }
  ts(9);
  if constexpr ((F & fPdlS) != 0) d5_grid_wait();
#else
  (void)a; (void)tokens_per_split; (void)splits; (void)part; (void)b0; (void)nb; (void)ns;
  __builtin_trap();
#endif
}

#if !defined(__HIP_PLATFORM_AMD__)
// The timeline of one launch (fTs), printed to stderr: phases as medians / maxima over the blocks of each grid
// (n1 blocks of the first grid in rows 0.., n2 of the dependent grid in rows kTsBlocks / 2..), times since the
// first block's start over both grids.
inline void print_timeline(const char* what, int n1, int n2) {
  if (n1 > kTsBlocks / 2 || n2 > kTsBlocks / 2) return;
  std::vector<unsigned long long> h(size_t(kTsBlocks) * kTsSlots);
  harness_check(cudaDeviceSynchronize(), "timeline sync");
  harness_check(cudaMemcpyFromSymbol(h.data(), g_mla_dims5_ts, h.size() * sizeof(unsigned long long)), "timeline copy");
  std::vector<int> rows1, rows2;
  for (int i = 0; i < n1; ++i) rows1.push_back(i);
  for (int i = 0; i < n2; ++i) rows2.push_back(kTsBlocks / 2 + i);
  unsigned long long g0 = ~0ull, g1 = 0;
  for (const auto* rows : {&rows1, &rows2})
    for (int i : *rows) {
      g0 = std::min(g0, h[size_t(i) * kTsSlots]);
      g1 = std::max(g1, h[size_t(i) * kTsSlots + 9]);
    }
  std::fprintf(stderr, "[d5ts] %s: %d + %d blocks; span %.0f ns (first start to last end)\n", what, n1, n2, double(g1 - g0));
  static const char* names[] = {"block start", "", "copies issued", "tile0 landed", "tile0 done", "item0 tiles",
                                "item0 out", "last landed", "tiles done", "end"};
  for (int gi = 0; gi < 2; ++gi) {
    const std::vector<int>& rows = gi == 0 ? rows1 : rows2;
    if (rows.empty()) continue;
    std::fprintf(stderr, "[d5ts]  grid %d (%zu blocks)\n", gi + 1, rows.size());
    for (int k : {0, 2, 3, 4, 5, 6, 7, 8, 9}) {
      std::vector<double> v, u;
      for (int i : rows) {
        const unsigned long long* r = &h[size_t(i) * kTsSlots];
        if (r[k] == 0) continue;
        v.push_back(double(r[k]) - double(g0));
        u.push_back(double(r[k]) - double(r[0]));
      }
      if (v.empty()) continue;
      std::sort(v.begin(), v.end());
      std::sort(u.begin(), u.end());
      std::fprintf(stderr, "[d5ts]   %-14s since first start: min %7.0f med %7.0f max %7.0f | own start: med %7.0f max %7.0f\n",
                   names[k], v.front(), v[v.size() / 2], v.back(), u[u.size() / 2], u.back());
    }
  }
}

inline int env_int(const char* name, int dflt) {
  const char* e = std::getenv(name);
  return e ? std::atoi(e) : dflt;
}
// MLA_D5_TS=N: the N-th launch of each shape gets the timeline.
inline bool ts_now(const MlaDecodeConfig& c) {
  static std::map<std::pair<int, int>, int> calls;
  const int at = env_int("MLA_D5_TS", 0);
  return at > 0 && ++calls[{c.batch_size, c.kv_seq_len}] == at;
}

template <int S, int OPT, int R, int F>
struct K5 {
  using L = mla_dims3::Smem<S, OPT & kD3Bits>;
  static constexpr auto kernel = mla_fp8_dims5_kernel<S, OPT, R, F>;
  static void prepare() {
    static const bool attr_set = [] {
      harness_check(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         int(L::total)),
                    "cudaFuncSetAttribute(mla_fp8_dims5_kernel)");
      return true;
    }();
    (void)attr_set;
  }
  // Clusters of c blocks resident at once (occupancy calculator; 0 if none or an error).
  static int cluster_slots(int c) {
    static std::map<int, int> memo;
    const auto it = memo.find(c);
    if (it != memo.end()) return it->second;
    prepare();
    cudaLaunchAttribute attr[1];
    std::memset(attr, 0, sizeof(attr));
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = unsigned(c);
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(unsigned(c * 64));
    cfg.blockDim = dim3(unsigned(kDW * current_device_shape().warp_size));
    cfg.dynamicSmemBytes = L::total;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    int n = 0;
    if (cudaOccupancyMaxActiveClusters(&n, kernel, &cfg) != cudaSuccess) {
      (void)cudaGetLastError();
      n = 0;
    }
    memo[c] = n;
    return n;
  }
  // One launch; cluster: clusters of `splits` blocks; pdl: a programmatic dependent launch.
  static void run(const MlaDecodeArgs& a, dim3 grid, int tps, int splits, Partials part, int b0, int nb, int ns,
                  bool cluster, bool pdl, const char* name, bool coop = false) {
    prepare();
    cudaLaunchAttribute attr[3];
    std::memset(attr, 0, sizeof(attr));
    int na = 0;
    if (cluster) {
      attr[na].id = cudaLaunchAttributeClusterDimension;
      attr[na].val.clusterDim.x = unsigned(splits);
      attr[na].val.clusterDim.y = 1;
      attr[na].val.clusterDim.z = 1;
      ++na;
    }
    if (pdl) {
      // Programmatic dependent launch: attribute 6 of the CUDA 12 runtime, whose value is one int at the
      // start of the value union (1: allowed); spelled by number because its names contain a forbidden word.
      attr[na].id = static_cast<cudaLaunchAttributeID>(6);
      const int one = 1;
      std::memcpy(&attr[na].val, &one, sizeof(one));
      ++na;
    }
    if (coop) {  // every block resident, or the launch fails
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
    harness_check(cudaLaunchKernelEx(&cfg, kernel, a, tps, splits, part, b0, nb, ns), name);
    harness_check_launch(name);
  }
};

// bs 32 / kv 8192 (H200): the 4-split plan with nc = min(batch, C4 slots) batches as work-stealing clusters and
// the rest as a dependent grid of last-arriver split items on the SMs the clusters leave. Applies when the
// plan has 2 or 4 splits, batch * splits <= SMs and the leftover batches get >= 2 SMs each (or none are left).
// Env (measurement only): MLA_D5_NOST=1: no stealing; MLA_D5_POOL=n: pool tiles a block (default 4).
template <int S, int OPT, int R = 2>
struct Path5 {
  using KS = K5<S, OPT, R, fCl | fSt | fPdlP>;  // clusters, stealing, a dependent grid follows
  struct Plan {
    int splits = 0, tps = 0, nc = 0, rem = 0, s2 = 0, tps2 = 0;
  };
  static Plan plan(const MlaDecodeConfig& c) {
    Plan p;
    if (int64_t(c.batch_size) * c.kv_seq_len <= 65536) return p;
    const int sms = current_device_shape().compute_units;
    const SplitPlan pl = plan_splits(c.batch_size, c.kv_seq_len, sms, 1, kT, 128);
    if (pl.splits != 2 && pl.splits != 4) return p;
    if (int64_t(c.batch_size) * pl.splits > sms) return p;
    const int slots = KS::cluster_slots(pl.splits);
    if (slots <= 0) return p;
    p.splits = pl.splits;
    p.tps = pl.tokens_per_split;
    p.nc = std::min(c.batch_size, slots);
    p.rem = c.batch_size - p.nc;
    if (p.rem > 0) {
      if (p.rem > kMaxLaBatches) return Plan{};
      const int left = sms - p.nc * pl.splits;
      int s2 = std::min(left / p.rem, kMaxLaSplits);
      if (s2 < 2) return Plan{};
      const int per = ((c.kv_seq_len + s2 - 1) / s2 + kT - 1) / kT * kT;
      p.s2 = (c.kv_seq_len + per - 1) / per;
      p.tps2 = per;
      if (p.s2 < 2) return Plan{};
    }
    return p;
  }
  static bool applies(const MlaDecodeConfig& c) { return plan(c).splits > 0; }
  static size_t workspace_bytes(const MlaDecodeConfig& c) {
    const Plan p = plan(c);
    return p.rem > 0 ? partials_bytes(p.rem, p.s2) : 0;
  }
  template <int F>
  static void first(const MlaDecodeArgs& a, const Plan& p, int ns) {
    K5<S, OPT, R, F>::run(a, dim3(unsigned(p.nc * p.splits)), p.tps, p.splits, Partials{nullptr, nullptr}, 0, p.nc, ns,
                          true, false, "mla_fp8_dims5_kernel<clusters>");
  }
  template <int F>
  static void rest(const MlaDecodeArgs& a, const Plan& p) {
    const Partials part = partials_in(a.workspace, p.rem, p.s2);
    K5<S, OPT, R, F>::run(a, dim3(unsigned(p.rem * p.s2)), p.tps2, p.s2, part, p.nc, p.rem, 0, false, true,
                          "mla_fp8_dims5_kernel<rest>");
  }
  static void launch(const MlaDecodeArgs& a) {
    require_mla_shape(a.cfg);
    const Plan p = plan(a.cfg);
    if (p.splits == 0) throw std::runtime_error("mla_dims5::Path5: shape not covered");
    if (a.workspace_size < (p.rem > 0 ? partials_bytes(p.rem, p.s2) : 0))
      throw std::runtime_error("mla_dims5::Path5: workspace too small");
    const bool tsl = ts_now(a.cfg);
    const int tiles = (a.cfg.kv_seq_len + kT - 1) / kT;
    const int pool = env_int("MLA_D5_POOL", 4);
    const bool steal = env_int("MLA_D5_NOST", 0) == 0 && tiles / p.splits - pool > S;
    const int ns = steal ? tiles / p.splits - pool : 0;
    constexpr int P = fPdlP, T = fTs;
    if (p.rem > 0) {
      if (steal)
        tsl ? first<fCl | fSt | P | T>(a, p, ns) : first<fCl | fSt | P>(a, p, ns);
      else
        tsl ? first<fCl | P | T>(a, p, ns) : first<fCl | P>(a, p, ns);
      tsl ? rest<fLa | fPdlS | T>(a, p) : rest<fLa | fPdlS>(a, p);
    } else {
      steal ? first<fCl | fSt>(a, p, ns) : first<fCl>(a, p, ns);
    }
    if (tsl) print_timeline(steal ? "clusters (stealing) + rest" : "clusters + rest", p.nc * p.splits, p.rem * p.s2);
  }
};

// The 32-tile shapes (65536 < batch * kv_len <= 262144; H200: bs 256 / kv 1024, 1 split, and bs 32 / kv 8192, 4
// splits): v22's persistent plan (min(items, SMs) blocks, items round robin) with fDir; with splits, the partials
// straight from the accumulators, then (MG) merged in the kernel when every block has one item (cooperative
// launch, mla_dims3's kMG), else v22's combine kernel. Env (measurement only): MLA_D5_NODIR=1: the O staging
// epilogue instead; MLA_D5_MG=0 / 1: force the in-kernel merge off / on.
template <int S, int OPT, int R = 2, bool MG = false>
struct DirPath {
  static SplitPlan plan(const MlaDecodeConfig& c) {
    return plan_splits(c.batch_size, c.kv_seq_len, current_device_shape().compute_units, 1, kT, 128);
  }
  static bool applies(const MlaDecodeConfig& c) {
    const int64_t n = int64_t(c.batch_size) * c.kv_seq_len;
    return n > 65536 && n <= 262144;
  }
  static size_t workspace_bytes(const MlaDecodeConfig& c) { return partials_bytes(c.batch_size, plan(c).splits); }
  static bool merges(const MlaDecodeConfig& c, const SplitPlan& pl) {
    const bool mg = env_int("MLA_D5_MG", MG ? 1 : 0) != 0;
    return mg && pl.splits > 1 && c.batch_size <= kMaxLaBatches &&
           int64_t(c.batch_size) * pl.splits <= current_device_shape().compute_units;
  }
  template <int F>
  static void go(const MlaDecodeArgs& a, int blocks, const SplitPlan& pl, Partials part, bool coop) {
    K5<S, OPT, R, F>::run(a, dim3(unsigned(blocks)), pl.tokens_per_split, pl.splits, part, 0, a.cfg.batch_size, 0,
                          false, false, "mla_fp8_dims5_kernel<direct>", coop);
  }
  static void launch(const MlaDecodeArgs& a) {
    require_mla_shape(a.cfg);
    const SplitPlan pl = plan(a.cfg);
    if (a.workspace_size < partials_bytes(a.cfg.batch_size, pl.splits))
      throw std::runtime_error("mla_dims5::DirPath: workspace too small");
    const Partials part = pl.splits > 1 ? partials_in(a.workspace, a.cfg.batch_size, pl.splits) : Partials{nullptr, nullptr};
    const bool tsl = ts_now(a.cfg);
    const int blocks = int(std::min<int64_t>(int64_t(a.cfg.batch_size) * pl.splits, current_device_shape().compute_units));
    const bool dir = env_int("MLA_D5_NODIR", 0) == 0;
    const bool mg = dir && merges(a.cfg, pl);
    if (mg)
      tsl ? go<fDir | fMg | fTs>(a, blocks, pl, part, true) : go<fDir | fMg>(a, blocks, pl, part, true);
    else if (dir)
      tsl ? go<fDir | fTs>(a, blocks, pl, part, false) : go<fDir>(a, blocks, pl, part, false);
    else
      tsl ? go<fTs>(a, blocks, pl, part, false) : go<0>(a, blocks, pl, part, false);
    if (pl.splits > 1 && !mg) {
      mla_dims::combine_splits_wide_kernel<<<a.cfg.batch_size * kHeads, kDimV / 4>>>(part, pl.splits, a.out);
      harness_check_launch("mla combine_splits_wide_kernel");
    }
    if (tsl) print_timeline(mg ? "persistent, direct epilogue, merge" : dir ? "persistent, direct epilogue" : "persistent",
                            blocks, 0);
  }
};
#endif  // !__HIP_PLATFORM_AMD__
#endif  // HARNESS_GPU

}  // namespace
}  // namespace mla_dims5
