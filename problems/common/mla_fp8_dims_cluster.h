// mla_decode on fp8 KV: v13's dimension-sliced tile (problems/common/mla_fp8_dims.h: 8 dim warps,
// 64-token tiles, every fp8 byte read from shared memory once and converted to f16 once, one bulk copy
// a tile) in v12's one-launch cluster form (problems/common/mla_fp8_cluster.h), for the shapes whose
// blocks have only a few tiles (mla-v16, docs/perf.md, section "mla_decode v16"):
//   - grid = (splits, batch), one block per SM (about 205 registers a thread), splits of a batch form
//     thread-block clusters of C; after its tiles a block leaves its unnormalised O (f32, [16][512], in
//     the partial-logit area), its row maxima m and sums l in its own shared memory; a cluster barrier;
//     rank r merges output dims [r 512/C, (r+1) 512/C) of the C partials through distributed shared
//     memory with weights 2^(m_src - max m) (no normalisation pass before the barrier); a relaxed
//     second arrive (only says "done reading the others' shared memory"), the wait before exit;
//   - several clusters a batch: v12's counters (a __device__ array of this header, zero at module load,
//     put back to zero by the last block), merged slices and log2-sum-exp in the workspace;
//   - SPEC: the first S tiles' bulk copies are issued at the rows of the spec's layout (batch b owns rows
//     [b kv_len, (b+1) kv_len)) before kv_indptr is read; if kv_indptr disagrees, thread 0 waits for
//     those copies (completing the stages the block did not fill with a plain arrive), the block starts
//     its tile counter one ring phase later and issues the right rows.
// Epilogue (measured against simpler forms in docs/perf.md, section "mla_decode v16"): O chunks XOR-swizzled in shared
// memory (2-way instead of 8-way store conflicts); each thread loads its units' m, l and O of all C
// sources in one round of distributed-shared-memory loads and derives the weights itself; the
// cross-cluster merge issues the loads of a batch of clusters together (online maximum); MUFU division
// and log2 (the IEEE division's slow path was ~10% of the samples at bs 4 / kv 1024); fence.acq_rel.gpu
// around the counter.
// The tile itself is mla_fp8_dims.h's with v15's options (rope in k16 steps, shared-memory rescale
// flag), written out here without the persistent item loop.
#pragma once
#include <algorithm>
#include <cmath>
#include <string>

#include "problems/common/launch_check.h"
#include "problems/common/lowp_pack.h"
#include "problems/common/mla_fp8_cluster.h"
#include "problems/common/mla_fp8_dims.h"
#include "problems/common/mla_fp8_wide.h"
#include "problems/common/mla_split_kv.h"
#include "problems/common/mma_tile.h"
#include "problems/common/warp_reduce.h"

namespace mla_dims_cluster {
namespace {  // internal linkage: every variant file gets its own kernels, launch statics and attributes

using namespace mla_kernels;
using mla_cluster::ClusterPlan;
using mla_dims::kDW;
using mla_dims::kRescaleSlack;
using mla_dims::kT;

constexpr int kMaxC = 16;
constexpr int kMaxCounters = 1 << 16;  // batch * C


#if defined(HARNESS_GPU) && !defined(__HIP_PLATFORM_AMD__)

static __device__ unsigned int g_mla_dims_cluster_counters[kMaxCounters];

#if defined(MLA_DIMS_SM90)
__device__ inline void mbar_arrive_plain(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// A block's unnormalised O [16][512] in shared memory: the float4 chunk of a head row is XOR-swizzled by
// (head >> 1) & 3 (the fragment stores are 2-way bank-conflicted instead of 8-way; the merge reads
// whole float4 chunks).
__device__ inline int o_at(int head, int dim) {
  return head * kDimV + ((((dim >> 2) ^ ((head >> 1) & 3))) << 2) + (dim & 3);
}

// The epilogue, after the first cluster barrier (every block's O, m, l are in its shared memory).
// Rank r merges dims [r 512/C, (r+1) 512/C): each thread loads, for its float4 units, the C sources'
// m, l and O chunk in one round of distributed-shared-memory loads and derives the weights itself (no
// shared weight table, no block barrier); then the relaxed arrive. Several clusters a batch: the
// merged slice (normalised) and its log2-sum-exp go to the workspace, and the batch's last cluster for
// this rank merges them with an online maximum over batches of clusters whose loads are all issued
// together (one L2 round trip a batch).
template <int C>
__device__ __forceinline__ void epilogue(const MlaDecodeArgs& a, const float* o_sm, const float* m_sm,
                                             const float* l_sm, int* flag_sm, float kv_scale, int b, int rank,
                                             int cl, int nclus, float* ws) {
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
  // Done reading the others' shared memory (the merge consumed every loaded value).
  mla_cluster::cluster_arrive_relaxed();

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
  // Release before the counter, acquire after it (fence.sc, __threadfence, is stronger than needed).
  auto fence = [] { asm volatile("fence.acq_rel.gpu;" ::: "memory"); };
  if (nclus > 1) {
    fence();
    __syncthreads();
    if (tid == 0) {
      unsigned int* ctr = g_mla_dims_cluster_counters + (b * C + rank);
      const unsigned int prev = atomicAdd(ctr, 1u);
      const bool last = prev == unsigned(nclus - 1);
      if (last) atomicExch(ctr, 0u);
      flag_sm[1] = last ? 1 : 0;
    }
    __syncthreads();
    if (flag_sm[1]) {
      fence();
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
  mla_cluster::cluster_wait();  // the others are done reading this block's shared memory
}
#endif

template <int S, int C, bool SPEC>
__global__ void __launch_bounds__(kDW * kernel_warp_size(), 1)
    mla_fp8_dims_cluster_kernel(MlaDecodeArgs a, int tokens_per_split, int nclus, float* ws) {
#if defined(MLA_DIMS_SM90)
  using namespace mla_dims;
  using D = mla_dims::Smem<S>;
  constexpr int WS = kernel_warp_size();
  constexpr int kW = kDW;
  constexpr int kSlice = kDimV / C;
  static_assert(mma::kN == 8 && mma::kARows == 2, "NVIDIA m16n8k16 lane geometry");
  static_assert(C >= 2 && C <= kMaxC && kSlice % 4 == 0, "cluster");
  require_warp_size();

  extern __shared__ __align__(128) unsigned char smem[];
  int* flag_sm = reinterpret_cast<int*>(smem + D::flag);
  float* lpart_sm = reinterpret_cast<float*>(smem + D::lpart);
  float* l_sm = reinterpret_cast<float*>(smem + D::stats);
  float* m_sm = l_sm + kHeads;
  const uint32_t bar0 = smem_u32(smem + D::bar);
  const int tid = threadIdx.x;
  const int lane = tid % WS, warp = tid / WS;
  const int g = lane >> 2, t = lane & 3;
  const int dw = warp;
  const int b = blockIdx.y, split = blockIdx.x;
  const int rank = split % C, cl = split / C;
  const int kv_len = a.cfg.kv_seq_len;

  int64_t t0 = int64_t(b) * kv_len + int64_t(split) * tokens_per_split;
  auto count = [&](int64_t end) {
    const int64_t left = end - t0;
    return left <= 0 ? 0 : int(left < tokens_per_split ? left : tokens_per_split);
  };
  int n_tokens = count(int64_t(b + 1) * kv_len);
  int n_tiles = (n_tokens + kT - 1) / kT;

  // Q (bf16) of the warp's dims, loaded first (converted to f16 fragments after the kv_indptr check):
  // k step p of n tile nt: dims 64 dw + 16 t + 4 p + {0..3} of head 8 nt + g; rope k step q:
  // 512 + 32 (dw & 1) + 8 t + 4 q + {0..3}.
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

  // Thread 0: tile `tile` of the block into stage tile % S (the tile counter starts at a multiple of S).
  // Rows past the end are copies of the last valid row (finite values; their logits are masked).
  auto issue = [&](int tile) {
    if (tile >= n_tiles) return;
    const int valid = min(kT, n_tokens - tile * kT);
    const uint32_t stage = uint32_t(tile % S);
    const uint32_t dst = smem_u32(smem + stage * D::stage);
    const uint8_t* src = a.kv_fp8 + (t0 + int64_t(tile) * kT) * kDimQK;
    const uint32_t bar = bar0 + 8 * stage;
    mbar_expect_tx(bar, uint32_t(kT * kDimQK));
    bulk_copy(dst, src, uint32_t(valid * kDimQK), bar);
    for (int r = valid; r < kT; ++r) bulk_copy(dst + r * kDimQK, src + (valid - 1) * kDimQK, kDimQK, bar);
  };
  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < S; ++s) mbar_init(bar0 + 8 * s, 1);
    mbar_init_fence();
    *flag_sm = -1;
    if constexpr (SPEC) {
      for (int s = 0; s < S; ++s) issue(s);
    }
  }
  uint32_t j = 0;  // tile counter: stage j % S, phase j / S
  {
    const int64_t kv_begin = a.kv_indptr[b], kv_end = a.kv_indptr[b + 1];
    __syncthreads();  // the barriers are initialised
    if constexpr (SPEC) {
      if (kv_begin != int64_t(b) * kv_len || kv_end != int64_t(b + 1) * kv_len) {  // block-uniform
        if (tid == 0) {
          const int issued = min(S, n_tiles);
          for (int s = 0; s < issued; ++s) mbar_wait(bar0 + 8 * s, 0u);
          for (int s = issued; s < S; ++s) mbar_arrive_plain(bar0 + 8 * s);
        }
        __syncthreads();  // every stage is past phase 0 before anyone waits on phase 1
        j = S;
        t0 = kv_begin + int64_t(split) * tokens_per_split;
        n_tokens = count(kv_end);
        n_tiles = (n_tokens + kT - 1) / kT;
        if (tid == 0)
          for (int s = 0; s < S; ++s) issue(s);
      }
    } else {
      t0 = kv_begin + int64_t(split) * tokens_per_split;
      n_tokens = count(kv_end);
      n_tiles = (n_tokens + kT - 1) / kT;
      if (tid == 0)
        for (int s = 0; s < S; ++s) issue(s);
    }
  }

  mla_dims::QFrags q;
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
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
  const float logit_scale = a.cfg.sm_scale * 1.4426950408889634f * kv_scale;
  const mla_dims::TileLane ln = mla_dims::tile_lane();
  const int ones_nt = ln.ones_nt;

  float m_ref[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
  mma::FragC o[4][2], lacc = {{0.f, 0.f, 0.f, 0.f}};
#pragma unroll
  for (int p = 0; p < 4; ++p)
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) o[p][nt] = mma::FragC{{0.f, 0.f, 0.f, 0.f}};

  // The tiles (mla_dims::dims_tile with v15's options: rope in k16 steps, shared-memory rescale flag).
  for (int tile = 0; tile < n_tiles; ++tile, ++j) {
    const unsigned char* st = smem + (j % S) * D::stage;
    const int valid = min(kT, n_tokens - tile * kT);
    mbar_wait(bar0 + 8 * (j % S), uint32_t((j / S) & 1));
    mla_dims::dims_tile<S, kOptFlag | kOptRope>(smem, ln, st, valid, j, q, logit_scale, m_ref, o, lacc, [&] {
      if (tid == 0) issue(tile + S);
    });
  }

  // This block's partial: unnormalised O [16][512] over the partial-logit area (every warp passed the
  // last tile's barrier B after its reads of it), row maxima m and sums l.
  if (g == 0) {
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      const bool mine = ones_nt == nt;
      lpart_sm[warp * kHeads + 8 * nt + 2 * t] = mine ? lacc.v[0] : 0.f;
      lpart_sm[warp * kHeads + 8 * nt + 2 * t + 1] = mine ? lacc.v[1] : 0.f;
    }
    if (warp == 0) {
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) m_sm[8 * (jj >> 1) + 2 * t + (jj & 1)] = m_ref[jj];
    }
  }
  float* o_sm = reinterpret_cast<float*>(smem + D::sp);  // [16][512]
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
  if (tid < kHeads) {
    float l = 0.f;
#pragma unroll
    for (int ww = 0; ww < kW; ++ww) l += lpart_sm[ww * kHeads + tid];
    l_sm[tid] = l;
  }
  mla_cluster::cluster_arrive();
  mla_cluster::cluster_wait();
  epilogue<C>(a, o_sm, m_sm, l_sm, flag_sm, kv_scale, b, rank, cl, nclus, ws);

#else
  (void)a; (void)tokens_per_split; (void)nclus; (void)ws;
  __builtin_trap();
#endif
}

// One configuration: S ring stages, clusters of C, SPEC: copies issued before kv_indptr is read; one
// 8-warp block per SM.
template <int S, int C, bool SPEC>
struct DimsClusterKernel {
  static constexpr auto kernel = mla_fp8_dims_cluster_kernel<S, C, SPEC>;
  static constexpr int kWarps = kDW, kTileTokens = kT, kC = C, kMaxTokens = 4096;
  static constexpr size_t kSmem = mla_dims::Smem<S>::total;
  static constexpr const char* kName = "mla_fp8_dims_cluster_kernel";
};
template <int S, int C, bool SPEC>
using DimsCluster = mla_cluster::ClusterLaunch<DimsClusterKernel<S, C, SPEC>>;

// The cluster sizes 2, 4, 8, 16 of one (S, SPEC): the plan of least cost; ties go to the larger cluster.
struct Pick {
  int c = 0;  // cluster size, 0: none
  ClusterPlan plan;
};
template <int S, bool SPEC>
struct Family {
  static Pick pick(const MlaDecodeConfig& cfg, const mla_cluster::MergeCost& merge, int max_tokens = 4096) {
    Pick best;
    auto consider = [&](int c, const ClusterPlan& p) {
      if (p.ok() && (best.c == 0 || p.cost < best.plan.cost)) best = {c, p};
    };
    consider(16, DimsCluster<S, 16, SPEC>::plan(cfg, merge, max_tokens));
    consider(8, DimsCluster<S, 8, SPEC>::plan(cfg, merge, max_tokens));
    consider(4, DimsCluster<S, 4, SPEC>::plan(cfg, merge, max_tokens));
    consider(2, DimsCluster<S, 2, SPEC>::plan(cfg, merge, max_tokens));
    return best;
  }
  static size_t workspace_bytes(const Pick& p, const MlaDecodeConfig& cfg) {
    return p.c == 0 ? 0 : mla_cluster::cluster_ws_bytes(cfg.batch_size, p.plan.nclus, p.c);
  }
  static void launch(const Pick& p, const MlaDecodeArgs& a) {
    switch (p.c) {
      case 16: DimsCluster<S, 16, SPEC>::launch(a, p.plan, "mla_fp8_dims_cluster_kernel<C 16>"); break;
      case 8: DimsCluster<S, 8, SPEC>::launch(a, p.plan, "mla_fp8_dims_cluster_kernel<C 8>"); break;
      case 4: DimsCluster<S, 4, SPEC>::launch(a, p.plan, "mla_fp8_dims_cluster_kernel<C 4>"); break;
      case 2: DimsCluster<S, 2, SPEC>::launch(a, p.plan, "mla_fp8_dims_cluster_kernel<C 2>"); break;
      default: throw std::runtime_error("mla_fp8_dims_cluster: no plan");
    }
  }
};

#endif  // HARNESS_GPU && !AMD

}  // namespace
}  // namespace mla_dims_cluster
