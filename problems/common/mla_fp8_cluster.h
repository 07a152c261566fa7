// mla_decode on fp8 KV for the latency-bound shapes (few tokens a block): one launch per call.
// The per-tile pipeline is mla_fp8_wide.h's (KS 1, Q from the block's shared f16 copy, T = 8 W tokens a
// tile); what differs is around it:
//   - the blocks of a batch form thread-block clusters of C (sm_90): each block leaves its partial
//     output (normalised, f32) and log2-sum-exp in its own shared memory, a cluster barrier, then block
//     rank r merges output dims [r 512/C, (r+1) 512/C) of all C partials through distributed shared
//     memory (no global round trip, the merge spread over the C blocks);
//   - a batch with more than one cluster: each block writes its merged slice (f32) and the cluster's
//     log2-sum-exp to the workspace, and the last of the batch's clusters to finish that slice (a
//     counter per (batch, rank) in a __device__ array, zero at module load; the last block puts it back
//     to zero, so it is zero again before every launch, whatever the workspace holds) merges the
//     clusters' slices into the output: no second kernel;
//   - the KV copies of the first stages are issued before kv_indptr arrives, at the rows the spec's
//     layout gives (batch b owns rows [b kv_len, (b+1) kv_len)); when kv_indptr says otherwise the block
//     waits for them and issues the right rows (correct for any kv_indptr with these lengths).
#pragma once
#include <algorithm>
#include <cmath>
#include <string>

#include "problems/common/mla_fp8_wide.h"

namespace mla_cluster {
namespace {  // internal linkage: every variant file gets its own kernels, launch statics and attributes

using namespace mla_kernels;
using mla_wide::kRowBytes;
using mla_wide::kRescaleSlack;

constexpr int kQRow = kDimQK + 8;     // f16 per head row of Q in shared memory (mla_fp8_wide.h's KS 1)
constexpr int kORow = kDimV + 4;      // f32 per head row of a block's partial: 16-byte skew per head
constexpr int kMaxClusters = 16;      // clusters per batch
constexpr int kMaxCounters = 1 << 16;  // batch * C

template <int W, int S>
struct Smem {
  static constexpr int T = 8 * W;
  static constexpr int kPRow = T + 16;
  static constexpr size_t stage = size_t(T) * kRowBytes;
  static constexpr size_t merge = size_t(kHeads) * kORow * 4 + kHeads * 4;  // partial o + lse
  static constexpr size_t ring = (S * stage > merge ? S * stage : merge + 15) / 16 * 16;
  static constexpr size_t q = ring;
  static constexpr size_t p = q + size_t(kHeads) * kQRow * 2;
  static constexpr size_t tmax = p + size_t(kHeads) * kPRow * 2;  // [head][warp] float
  static constexpr size_t flag = tmax + size_t(kHeads) * W * 4;   // rescale flag, last flag
  static constexpr size_t stats = flag + 16;                      // l[16], m[16]
  static constexpr size_t wts = stats + 2 * kHeads * 4;           // [16][16] merge weights, inv[16], lse[16]
  static constexpr size_t total = wts + (kMaxClusters + 2) * kHeads * 4;
};

// Cluster workspace: merged slices [batch][clusters][16][512] f32, log2-sum-exp [batch][clusters][C][16].
inline size_t cluster_ws_bytes(int batch, int nclus, int C) {
  return nclus <= 1 ? 0 : size_t(batch) * nclus * kHeads * (kDimV + C) * sizeof(float);
}

struct ClusterPlan {
  int splits = 0;  // blocks a batch (a multiple of C)
  int tokens_per_split = 0;
  int nclus = 0;
  double cost = 0;  // token-rows per block slot, comparable between configurations
  int waves = 0;
  bool ok() const { return splits > 0; }
};

// What a cross-cluster merge costs in token rows: base + per_cluster x (clusters a batch). The default
// is v12's model; v16 measured 48 + 8 k best for its dims-tile clusters.
struct MergeCost {
  double base = 48, per_cluster = 0;
};

// Splits: C k blocks a batch (k clusters, k <= 16), tokens a block a multiple of T, no empty cluster.
// Cost in token rows: waves * (tokens + block overhead) + the merge when k > 1.
inline ClusterPlan plan_cluster(int batch, int kv_len, int compute_units, int blocks_per_cu, int T, int C,
                                int max_tokens, MergeCost merge = {}) {
  constexpr double kBlockOverhead = 96;
  ClusterPlan best;
  if (kv_len <= 0 || batch <= 0 || int64_t(batch) * C > kMaxCounters) return best;
  const int slots = std::max(1, compute_units * blocks_per_cu);
  for (int k = 1; k <= kMaxClusters; ++k) {
    const int splits = C * k;
    const int per = ((kv_len + splits - 1) / splits + T - 1) / T * T;
    const int used = (kv_len + per - 1) / per;
    if (used <= C * (k - 1)) continue;  // an empty cluster: a smaller k covers it
    if (per > max_tokens) continue;
    const double blocks = double(batch) * splits;
    const double waves = std::ceil(blocks / slots);
    const double cost = waves * (per + kBlockOverhead) + (k > 1 ? merge.base + merge.per_cluster * k : 0);
    if (!best.ok() || cost < best.cost) best = {splits, per, k, cost, int(waves)};
  }
  return best;
}

#if defined(HARNESS_GPU) && !defined(__HIP_PLATFORM_AMD__)

static __device__ unsigned int g_mla_cluster_counters[kMaxCounters];

__device__ inline uint32_t dsmem_map(const void* p, uint32_t rank) {
  uint32_t r = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
#else
  (void)p; (void)rank;
#endif
  return r;
}
__device__ inline float4 dsmem_ld4(uint32_t a) {
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(a) : "memory");
#else
  (void)a;
#endif
  return v;
}
__device__ inline float dsmem_ld1(uint32_t a) {
  float v = 0.f;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(a) : "memory");
#else
  (void)a;
#endif
  return v;
}
__device__ inline void cluster_arrive() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
#endif
}
// No fence: only says "this block's earlier reads of the others' shared memory are done" (v15).
__device__ inline void cluster_arrive_relaxed() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
#endif
}
__device__ inline void cluster_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}

__device__ inline uint2 bf16x4(float4 v) {
  return make_uint2(pack16(f32_to_bf16_bits(v.x), f32_to_bf16_bits(v.y)), pack16(f32_to_bf16_bits(v.z), f32_to_bf16_bits(v.w)));
}

// OPT (v15; 0 = the kernel as v12 / v14 measured it): kOptRelaxedArrive: the second cluster arrive
// without a release fence; kOptQFirst: Q converted before kv_indptr is checked.
constexpr int kOptRelaxedArrive = 1, kOptQFirst = 2;

template <int W, int S, int C, int B, bool QR, int OPT = 0>
__global__ void __launch_bounds__(W * kernel_warp_size(), B)
    mla_fp8_cluster_kernel(MlaDecodeArgs a, int tokens_per_split, int nclus, float* ws) {
#if defined(MMA_TILE_NVIDIA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using L = Smem<W, S>;
  constexpr int T = L::T;
  constexpr int kNQ = W;
  constexpr int kPRow = L::kPRow;
  constexpr int WS = kernel_warp_size();
  constexpr int kThreads = W * WS;
  constexpr int kDimsPerWarp = kDimV / W;
  constexpr int kGroups = kDimsPerWarp / 32;
  constexpr int kSlice = kDimV / C;  // output dims a cluster rank merges
  static_assert(mma::kN == 8 && mma::kARows == 2, "NVIDIA m16n8k16 lane geometry");
  static_assert(kNQ % 4 == 0 && kThreads % T == 0, "8 QK tokens a warp, whole threads per row");
  static_assert(kGroups >= 1 && kDimsPerWarp % 32 == 0, "P V: whole 32-dim groups per warp");
  static_assert(S >= 2 && C >= 2 && C <= 16 && kSlice % 4 == 0, "ring, cluster");
  require_warp_size();

  extern __shared__ __align__(16) unsigned char smem[];
  uint16_t* q_sm = reinterpret_cast<uint16_t*>(smem + L::q);
  uint16_t* p_sm = reinterpret_cast<uint16_t*>(smem + L::p);
  float* tmax_sm = reinterpret_cast<float*>(smem + L::tmax);
  int* flag_sm = reinterpret_cast<int*>(smem + L::flag);
  float* l_sm = reinterpret_cast<float*>(smem + L::stats);
  float* m_sm = l_sm + kHeads;
  float* w_sm = reinterpret_cast<float*>(smem + L::wts);  // [src][16]
  float* inv_sm = w_sm + kMaxClusters * kHeads;
  float* lse_sm = inv_sm + kHeads;
  float* po = reinterpret_cast<float*>(smem);  // after the tile loop: [16][kORow] partial, then lse[16]
  float* plse = po + kHeads * kORow;

  const int b = blockIdx.y, split = blockIdx.x, tid = threadIdx.x;
  const int rank = split % C, cl = split / C;
  const int lane = tid % WS, warp = tid / WS;
  const int g = lane >> 2, t = lane & 3;
  const int kv_len = a.cfg.kv_seq_len;

  // Rows of the spec's layout first; kv_indptr checked below.
  int64_t t0 = int64_t(b) * kv_len + int64_t(split) * tokens_per_split;
  auto count = [&](int64_t begin, int64_t end) {
    const int64_t left = end - t0;
    return left <= 0 ? 0 : int(left < tokens_per_split ? left : tokens_per_split);
  };
  int n_tokens = count(int64_t(b) * kv_len, int64_t(b + 1) * kv_len);
  int n_tiles = (n_tokens + T - 1) / T;

  constexpr int kTPR = kThreads / T;
  static_assert((kDimQK / 16) % kTPR == 0, "copy plan");
  const int ld_row = tid / kTPR, ld_col = 16 * (tid % kTPR);
  auto issue = [&](int tile) {
    if (tile < n_tiles) {
      const int valid = min(T, n_tokens - tile * T);
      const int64_t src_row = t0 + int64_t(tile) * T + min(ld_row, valid - 1);
      const uint8_t* src = a.kv_fp8 + src_row * kDimQK + ld_col;
      unsigned char* dst = smem + (tile % S) * L::stage + ld_row * kRowBytes + ld_col;
#pragma unroll
      for (int i = 0; i < kDimQK / (16 * kTPR); ++i) async_copy_16(dst + 16 * kTPR * i, src + 16 * kTPR * i);
    }
    async_commit();
  };
#pragma unroll
  for (int s = 0; s < S - 1; ++s) issue(s);

  const float kv_scale = *a.kv_fp8_scale;
  // Q: bf16 -> f16 once per block; loads issued before kv_indptr is looked at.
  {
    const uint16_t* qb = a.q + int64_t(b) * kHeads * kDimQK;
    constexpr int kChunks = kHeads * kDimQK / 8;
    constexpr int kPer = (kChunks + kThreads - 1) / kThreads;
    uint4 v[kPer];
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int c = tid + i * kThreads;
      if (kChunks % kThreads == 0 || c < kChunks) {
        const int h = c / (kDimQK / 8), col = 8 * (c % (kDimQK / 8));
        v[i] = *reinterpret_cast<const uint4*>(qb + h * kDimQK + col);
      }
    }
    const int64_t kv_begin = a.kv_indptr[b], kv_end = a.kv_indptr[b + 1];
    auto check_indptr = [&]() {
      if (kv_begin != int64_t(b) * kv_len || kv_end != int64_t(b + 1) * kv_len) {  // block-uniform
        async_wait<0>();
        __syncthreads();
        t0 = kv_begin + int64_t(split) * tokens_per_split;
        n_tokens = count(kv_begin, kv_end);
        n_tiles = (n_tokens + T - 1) / T;
#pragma unroll
        for (int s = 0; s < S - 1; ++s) issue(s);
      }
    };
    if constexpr (!(OPT & kOptQFirst)) check_indptr();
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int c = tid + i * kThreads;
      if (kChunks % kThreads == 0 || c < kChunks) {
        const int h = c / (kDimQK / 8), col = 8 * (c % (kDimQK / 8));
        *reinterpret_cast<uint4*>(q_sm + h * kQRow + col) =
            make_uint4(mla_wide::bf16x2_to_f16x2(v[i].x), mla_wide::bf16x2_to_f16x2(v[i].y),
                       mla_wide::bf16x2_to_f16x2(v[i].z), mla_wide::bf16x2_to_f16x2(v[i].w));
      }
    }
    if constexpr ((OPT & kOptQFirst) != 0) check_indptr();  // the ring is not touched by the Q stores
    if (tid == 0) *flag_sm = -1;
  }
  mla_wide::Qk<QR, 1> qk;
  if constexpr (QR) {
    __syncthreads();
    qk.load(q_sm, g, t, 0);  // Q fragments into registers from the block's f16 copy (v8 / v11's regs8)
  } else {
    qk.load(q_sm, g, t, 0);  // only the pointer
    __syncthreads();
  }
  const float logit_scale = a.cfg.sm_scale * 1.4426950408889634f * kv_scale;

  const int c_w = 32 * (warp >> 2) + (warp & 3);
  int s_row[2], p_pos[2];
#pragma unroll
  for (int e = 0; e < 2; ++e) {
    const int row = c_w + 4 * (2 * t + e), rr = row & 15;
    s_row[e] = row;
    p_pos[e] = (row & ~15) + 4 * ((rr >> 1) & 3) + ((rr & 1) | ((rr >> 3) << 1));
  }

  mma::FragC o[kGroups][4], lacc = {{0.f, 0.f, 0.f, 0.f}};
#pragma unroll
  for (int gr = 0; gr < kGroups; ++gr)
#pragma unroll
    for (int j = 0; j < 4; ++j) o[gr][j] = mma::FragC{{0.f, 0.f, 0.f, 0.f}};
  float m_ref[2] = {-INFINITY, -INFINITY};
  const mma::FragB ones = make_uint2(0x3c003c00u, 0x3c003c00u);

  for (int tile = 0; tile < n_tiles; ++tile) {
    async_wait<S - 2>();
    __syncthreads();
    issue(tile + S - 1);
    const unsigned char* st = smem + (tile % S) * L::stage;
    const int valid = min(T, n_tokens - tile * T);

    float s[4];
    qk.dots(st + (c_w + 4 * g) * kRowBytes, g, t, s);
    auto write_p = [&]() {
#pragma unroll
      for (int i = 0; i < 4; ++i)
        p_sm[(g + 8 * (i >> 1)) * kPRow + p_pos[i & 1]] = f32_to_f16_bits(exp2f(s[i] - m_ref[i >> 1]));
    };
#pragma unroll
    for (int i = 0; i < 4; ++i) s[i] = s_row[i & 1] < valid ? s[i] * logit_scale : -INFINITY;
    float mx[2] = {fmaxf(s[0], s[1]), fmaxf(s[2], s[3])};
#pragma unroll
    for (int r = 0; r < 2; ++r) mx[r] = group_max<4>(mx[r]);
    if (mx[0] > m_ref[0] + kRescaleSlack || mx[1] > m_ref[1] + kRescaleSlack) *flag_sm = tile;
    if (t == 0) {
      tmax_sm[g * kNQ + warp] = mx[0];
      tmax_sm[(g + 8) * kNQ + warp] = mx[1];
    }
    write_p();
    __syncthreads();

    if (*flag_sm == tile) {
      float alpha[2];
      mla_softmax::raise_reference<kNQ>(tmax_sm, g, m_ref, alpha);
      mla_softmax::scale_accumulators<kGroups>(o, lacc, alpha);
      write_p();
      __syncthreads();
    }

#pragma unroll
    for (int ks = 0; ks < T / 16; ++ks) {
      mma::FragA pa;
#pragma unroll
      for (int r = 0; r < 2; ++r)
        pa.row[r] = *reinterpret_cast<const uint2*>(p_sm + (g + 8 * r) * kPRow + 16 * ks + 4 * t);
      const unsigned char* r0 = st + (16 * ks + 2 * t) * kRowBytes + kDimsPerWarp * warp + 4 * g;
#pragma unroll
      for (int gr = 0; gr < kGroups; ++gr) {
        const uint32_t w0 = *reinterpret_cast<const uint32_t*>(r0 + 32 * gr);
        const uint32_t w1 = *reinterpret_cast<const uint32_t*>(r0 + kRowBytes + 32 * gr);
        const uint32_t w2 = *reinterpret_cast<const uint32_t*>(r0 + 8 * kRowBytes + 32 * gr);
        const uint32_t w3 = *reinterpret_cast<const uint32_t*>(r0 + 9 * kRowBytes + 32 * gr);
#pragma unroll
        for (int j = 0; j < 4; ++j)
          mma::mma<mma::Elem::f16>(o[gr][j], pa, make_uint2(mla_wide::fp8_pair(w0, w1, j), mla_wide::fp8_pair(w2, w3, j)));
      }
      if (warp == 0) mma::mma<mma::Elem::f16>(lacc, pa, ones);
    }
  }
  async_wait<0>();

  if (warp == 0 && t == 0) {
    l_sm[g] = lacc.v[0];
    l_sm[g + 8] = lacc.v[2];
    m_sm[g] = m_ref[0];
    m_sm[g + 8] = m_ref[1];
  }
  __syncthreads();  // also: every warp is done with the ring, which the partial now overwrites
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int h = g + 8 * (i >> 1);
    const float l = l_sm[h];
    const float f = l > 0.f ? kv_scale / l : 0.f;
#pragma unroll
    for (int gr = 0; gr < kGroups; ++gr) {
      const int dim = kDimsPerWarp * warp + 32 * gr + 4 * (2 * t + (i & 1));
      *reinterpret_cast<float4*>(po + h * kORow + dim) =
          make_float4(o[gr][0].v[i] * f, o[gr][1].v[i] * f, o[gr][2].v[i] * f, o[gr][3].v[i] * f);
    }
  }
  if (tid < kHeads) plse[tid] = l_sm[tid] > 0.f ? m_sm[tid] + log2f(l_sm[tid]) : -INFINITY;
  cluster_arrive();
  cluster_wait();

  // Rank r: dims [r kSlice, (r+1) kSlice) of the C partials.
  for (int i = tid; i < C * kHeads; i += kThreads) {
    const int src = i / kHeads, h = i % kHeads;
    w_sm[src * kHeads + h] = dsmem_ld1(dsmem_map(plse + h, uint32_t(src)));
  }
  __syncthreads();
  if (tid < kHeads) {
    float mx = -INFINITY;
#pragma unroll
    for (int src = 0; src < C; ++src) mx = fmaxf(mx, w_sm[src * kHeads + tid]);
    float total = 0.f;
#pragma unroll
    for (int src = 0; src < C; ++src) {
      const float lse = w_sm[src * kHeads + tid];
      const float w = lse == -INFINITY ? 0.f : exp2f(lse - mx);
      w_sm[src * kHeads + tid] = w;
      total += w;
    }
    inv_sm[tid] = total > 0.f ? 1.f / total : 0.f;
    lse_sm[tid] = total > 0.f ? mx + log2f(total) : -INFINITY;
  }
  __syncthreads();
  constexpr int kUnits = kHeads * kSlice / 4;  // float4 units of the slice
  float4 res[(kUnits + kThreads - 1) / kThreads];
#pragma unroll
  for (int k = 0; k < (kUnits + kThreads - 1) / kThreads; ++k) {
    const int u = tid + k * kThreads;
    res[k] = make_float4(0.f, 0.f, 0.f, 0.f);
    if (kUnits % kThreads == 0 || u < kUnits) {
      const int h = u / (kSlice / 4), col = rank * kSlice + 4 * (u % (kSlice / 4));
      constexpr int kBatch = C < 8 ? C : 8;
#pragma unroll
      for (int s0 = 0; s0 < C; s0 += kBatch) {
        float4 v[kBatch];
#pragma unroll
        for (int j = 0; j < kBatch; ++j) v[j] = dsmem_ld4(dsmem_map(po + h * kORow + col, uint32_t(s0 + j)));
#pragma unroll
        for (int j = 0; j < kBatch; ++j) {
          const float w = w_sm[(s0 + j) * kHeads + h];
          if (w != 0.f) {
            res[k].x += w * v[j].x;
            res[k].y += w * v[j].y;
            res[k].z += w * v[j].z;
            res[k].w += w * v[j].w;
          }
        }
      }
      const float inv = inv_sm[h];
      res[k] = make_float4(res[k].x * inv, res[k].y * inv, res[k].z * inv, res[k].w * inv);
    }
  }
  // This block is done reading the others' shared memory (the merge consumed every loaded value).
  if constexpr ((OPT & kOptRelaxedArrive) != 0)
    cluster_arrive_relaxed();
  else
    cluster_arrive();

  float* ws_o = ws;
  float* ws_lse = ws + size_t(a.cfg.batch_size) * nclus * kHeads * kDimV;
#pragma unroll
  for (int k = 0; k < (kUnits + kThreads - 1) / kThreads; ++k) {
    const int u = tid + k * kThreads;
    if (kUnits % kThreads == 0 || u < kUnits) {
      const int h = u / (kSlice / 4), col = rank * kSlice + 4 * (u % (kSlice / 4));
      if (nclus == 1)
        *reinterpret_cast<uint2*>(a.out + (int64_t(b) * kHeads + h) * kDimV + col) = bf16x4(res[k]);
      else
        *reinterpret_cast<float4*>(ws_o + ((size_t(b) * nclus + cl) * kHeads + h) * kDimV + col) = res[k];
    }
  }
  if (nclus > 1) {
    if (tid < kHeads) ws_lse[((size_t(b) * nclus + cl) * C + rank) * kHeads + tid] = lse_sm[tid];
    __threadfence();
    __syncthreads();
    if (tid == 0) {
      unsigned int* ctr = g_mla_cluster_counters + (b * C + rank);
      const unsigned int prev = atomicAdd(ctr, 1u);
      const bool last = prev == unsigned(nclus - 1);
      if (last) atomicExch(ctr, 0u);
      flag_sm[1] = last ? 1 : 0;
    }
    __syncthreads();
    if (flag_sm[1]) {
      __threadfence();
      if (tid < kHeads) {
        float mx = -INFINITY;
        for (int c = 0; c < nclus; ++c) {
          const float lse = __ldcg(ws_lse + ((size_t(b) * nclus + c) * C + rank) * kHeads + tid);
          w_sm[c * kHeads + tid] = lse;
          mx = fmaxf(mx, lse);
        }
        float total = 0.f;
        for (int c = 0; c < nclus; ++c) {
          const float lse = w_sm[c * kHeads + tid];
          const float w = lse == -INFINITY ? 0.f : exp2f(lse - mx);
          w_sm[c * kHeads + tid] = w;
          total += w;
        }
        inv_sm[tid] = total > 0.f ? 1.f / total : 0.f;
      }
      __syncthreads();
#pragma unroll
      for (int k = 0; k < (kUnits + kThreads - 1) / kThreads; ++k) {
        const int u = tid + k * kThreads;
        if (kUnits % kThreads == 0 || u < kUnits) {
          const int h = u / (kSlice / 4), col = rank * kSlice + 4 * (u % (kSlice / 4));
          float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
          for (int c0 = 0; c0 < nclus; c0 += 4) {
            float4 v[4];
#pragma unroll
            for (int j = 0; j < 4; ++j)
              if (c0 + j < nclus)
                v[j] = __ldcg(reinterpret_cast<const float4*>(ws_o + ((size_t(b) * nclus + c0 + j) * kHeads + h) * kDimV + col));
#pragma unroll
            for (int j = 0; j < 4; ++j) {
              if (c0 + j < nclus) {
                const float w = w_sm[(c0 + j) * kHeads + h];
                if (w != 0.f) {
                  acc.x += w * v[j].x;
                  acc.y += w * v[j].y;
                  acc.z += w * v[j].z;
                  acc.w += w * v[j].w;
                }
              }
            }
          }
          const float inv = inv_sm[h];
          *reinterpret_cast<uint2*>(a.out + (int64_t(b) * kHeads + h) * kDimV + col) =
              bf16x4(make_float4(acc.x * inv, acc.y * inv, acc.z * inv, acc.w * inv));
        }
      }
    }
  }
  cluster_wait();  // the others are done reading this block's shared memory
#else
  (void)a; (void)tokens_per_split; (void)nclus; (void)ws;
  __builtin_trap();
#endif
}

// Host side of a one-launch cluster kernel taking (args, tokens per split, clusters a batch, workspace):
// K provides kernel, kWarps, kSmem (dynamic shared memory), kTileTokens, kC (cluster size; over 8: the
// non-portable sizes), kMaxTokens (default block length cap) and kName. Launched with the cluster size as
// a launch attribute.
template <class K>
struct ClusterLaunch {
  static constexpr int C = K::kC;
  static void prepare() {
    static const bool done = [] {
      const void* k = reinterpret_cast<const void*>(K::kernel);
      harness_check(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(K::kSmem)),
                    (std::string("cudaFuncSetAttribute(") + K::kName + ", smem)").c_str());
      if (C > 8)
        harness_check(cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1),
                      (std::string("cudaFuncSetAttribute(") + K::kName + ", non-portable cluster)").c_str());
      return true;
    }();
    (void)done;
  }
  static cudaLaunchConfig_t config(dim3 grid, cudaLaunchAttribute* attr) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = dim3(K::kWarps * current_device_shape().warp_size);
    cfg.dynamicSmemBytes = K::kSmem;
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = C;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return cfg;
  }
  // Blocks that can be resident at once (whole clusters), from the occupancy calculator.
  static int slots() {
    static const int n = [] {
      prepare();
      cudaLaunchAttribute attr[1];
      const cudaLaunchConfig_t cfg = config(dim3(C * 64, 1), attr);
      int clusters = 0;
      if (cudaOccupancyMaxActiveClusters(&clusters, K::kernel, &cfg) != cudaSuccess) {
        (void)cudaGetLastError();
        clusters = 0;
      }
      return clusters * C;
    }();
    return n;
  }
  // plan_cluster over the resident blocks; none when the occupancy calculator found no slot.
  static ClusterPlan plan(const MlaDecodeConfig& c, MergeCost merge = {}, int max_tokens = K::kMaxTokens) {
    const int n = slots();
    if (n <= 0) return {};
    return plan_cluster(c.batch_size, c.kv_seq_len, n, 1, K::kTileTokens, C, max_tokens, merge);
  }
  static size_t workspace_bytes(const ClusterPlan& p, const MlaDecodeConfig& c) {
    return cluster_ws_bytes(c.batch_size, p.nclus, C);
  }
  static void launch(const MlaDecodeArgs& a, const ClusterPlan& pl, const char* name) {
    require_mla_shape(a.cfg);
    if (a.workspace_size < workspace_bytes(pl, a.cfg)) throw std::runtime_error(std::string(name) + ": workspace too small");
    prepare();
    cudaLaunchAttribute attr[1];
    const cudaLaunchConfig_t cfg = config(dim3(pl.splits, a.cfg.batch_size), attr);
    harness_check(cudaLaunchKernelEx(&cfg, K::kernel, a, pl.tokens_per_split, pl.nclus, static_cast<float*>(a.workspace)),
                  name);
    harness_check_launch(name);
  }
};

// One configuration: W warps (T = 8 W tokens a tile), S ring stages, clusters of C, B blocks per SM,
// QR: Q fragments in registers.
template <int W, int S, int C, int B, bool QR = false, int OPT = 0>
struct FusedKernel {
  static constexpr auto kernel = mla_fp8_cluster_kernel<W, S, C, B, QR, OPT>;
  static constexpr int kWarps = W, kTileTokens = 8 * W, kC = C, kMaxTokens = 1024;
  static constexpr size_t kSmem = Smem<W, S>::total;
  static constexpr const char* kName = "mla_fp8_cluster_kernel";
};
template <int W, int S, int C, int B, bool QR = false, int OPT = 0>
using Fused = ClusterLaunch<FusedKernel<W, S, C, B, QR, OPT>>;

// The one-launch configurations v12 measured on the latency-bound shapes (docs/perf.md, mla-small):
// one cluster of 16 blocks of at most 64 tokens a batch when that is one wave (8 warps, 2 blocks per
// SM), else 4-warp blocks of 32-token tiles in clusters of 8 (3 blocks per SM), splits from the cost
// model. OPT: the kernels' kOpt* bits (0 = v12's kernels).
struct SmallChoice {
  enum Kind { none, a, b16 } kind = none;
  ClusterPlan plan;
};
template <int OPT = 0>
struct Small {
  using B16 = Fused<8, 2, 16, 2, false, OPT>;
  using A = Fused<4, 2, 8, 3, false, OPT>;
  static SmallChoice choose(const MlaDecodeConfig& c) {
    const ClusterPlan p16 = B16::plan(c);
    if (p16.ok() && p16.nclus == 1 && p16.waves == 1 && p16.tokens_per_split <= 64) return {SmallChoice::b16, p16};
    const ClusterPlan pa = A::plan(c);
    if (pa.ok()) return {SmallChoice::a, pa};
    return {};
  }
  static size_t workspace_bytes(const SmallChoice& ch, const MlaDecodeConfig& c) {
    return ch.kind == SmallChoice::b16 ? B16::workspace_bytes(ch.plan, c) : A::workspace_bytes(ch.plan, c);
  }
  static void launch(const SmallChoice& ch, const MlaDecodeArgs& a) {
    if (ch.kind == SmallChoice::b16)
      B16::launch(a, ch.plan, OPT ? "mla_fp8_cluster_kernel<8, 2, 16, 2, opt>" : "mla_fp8_cluster_kernel<8, 2, 16, 2>");
    else
      A::launch(a, ch.plan, OPT ? "mla_fp8_cluster_kernel<4, 2, 8, 3, opt>" : "mla_fp8_cluster_kernel<4, 2, 8, 3>");
  }
};
inline SmallChoice choose_small(const MlaDecodeConfig& c) { return Small<>::choose(c); }
inline size_t small_workspace_bytes(const SmallChoice& ch, const MlaDecodeConfig& c) {
  return Small<>::workspace_bytes(ch, c);
}
inline void launch_small(const SmallChoice& ch, const MlaDecodeArgs& a) { Small<>::launch(ch, a); }

#endif  // HARNESS_GPU && !AMD

}  // namespace
}  // namespace mla_cluster
