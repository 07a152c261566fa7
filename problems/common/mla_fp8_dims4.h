// mla_decode on fp8 KV, the large shapes (mla-large2, session 7): v20's dims tile
// (mla_dims3::dims_tile3, F16P | QP | EF, R 2, 3 stages; problems/common/mla_fp8_dims3.h) in a copy of
// its persistent kernel whose 2- and 4-split plans can merge in thread-block clusters. Launch-time flags F:
//  - fCl: split plans with 2 or 4 splits and one item a block (bs 64 / kv 8192: 64 x 2; bs 32 / kv 8192:
//    32 x 4) are launched as clusters of `splits` blocks (one cluster a batch); after the tiles each block
//    keeps its unnormalised O [16][512], maxima and sums in shared memory, a cluster barrier, then block r
//    merges the heads h = r (mod splits) from every block through distributed shared memory
//    (out = kv_scale * sum_s 2^(m_s - M) O_s / sum_s 2^(m_s - M) l_s) and writes them; a second cluster
//    barrier keeps the shared memory alive. No partials, no combine kernel. Used only when the occupancy
//    calculator gives every batch a cluster slot at once (H200: 66 clusters of 2, but 30 of 4, so bs 32 /
//    kv 8192 keeps the partials + combine form). Measured bs 64 / kv 8192 -1.9 to -3.2 us (docs/perf.md, section "mla_decode v23").
// Also measured there and dropped (slower or no change): config-derived first copies (no kv_indptr load
// before them), evict_first Q copies and output stores, the bf16 output through a shared-memory staging
// buffer and one bulk store (+16 KB shared memory made the tiles ~3% slower), an in-kernel last-arriver
// merge instead of the combine kernel, dynamic item tickets, a dry epilogue pass at the start (instruction
// warm-up), the combine as a programmatic dependent launch, bs 32 / kv 8192 as clusters of 2 merging pairs of
// splits before a combine of two partials.
// OPT: mla_dims3's bits (kF16P | kQP | kEF as v20) plus kTs (timeline, measurement only: thread 0 of each
// block records globaltimer at the phases; the host prints the N-th launch's summary per shape, env
// MLA_D4_TS=N; it synchronises the device).
// Interface for composed variants: Dims4<S, OPT, R, F>::applies(cfg) (batch * kv_len > 65536),
// workspace_bytes(cfg), launch(args); ClusterPath<S, OPT, R> (the same with fCl, applying only where the plan
// runs as clusters: bs 64 / kv 8192 on the H200; no workspace), which v23 uses next to v22's mla_dims3 path.
#pragma once
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include "problems/common/mla_fp8_dims3.h"

namespace mla_dims4 {
namespace {  // internal linkage: every variant file gets its own kernels, launch statics and attributes

using namespace mla_kernels;
using mla_dims::kDW;
using mla_dims::kT;

constexpr int kF16P = mla_dims3::kF16P;
constexpr int kQP = mla_dims3::kQP;
constexpr int kEF = mla_dims3::kEF;
constexpr int kLean = mla_dims3::kLean;
constexpr int kTs = 64;
constexpr int kD3Bits = kF16P | kQP | kEF;  // the bits dims_tile3 / Smem see

constexpr int fCl = 2;

constexpr int kTsBlocks = 1024, kTsSlots = 16;

#if defined(HARNESS_GPU) && !defined(__HIP_PLATFORM_AMD__)
static __device__ unsigned long long g_mla_dims4_ts[kTsBlocks * kTsSlots];
#endif

#if defined(HARNESS_GPU) && defined(MLA_DIMS_SM90)
__device__ inline unsigned long long d4_gtimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ inline unsigned int d4_smid() {
  unsigned int r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
}
__device__ inline uint32_t d4_mapa(uint32_t addr, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}
__device__ inline float d4_ld_cluster_f32(uint32_t addr) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(addr) : "memory");
  return v;
}
__device__ inline float4 d4_ld_cluster_v4(uint32_t addr) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}
__device__ inline void d4_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
#endif

#if defined(HARNESS_GPU)
// mla_dims3::mla_fp8_dims3_kernel (F16P / QP / EF; no MG / SP) with the F flags above.
template <int S, int OPT, int R>
__global__ void __launch_bounds__(kDW * kernel_warp_size(), 1)
    mla_fp8_dims4_kernel(MlaDecodeArgs a, int tokens_per_split, int splits, Partials part, int flags) {
#if defined(MLA_DIMS_SM90)
  constexpr int D3 = OPT & kD3Bits;
  using L = mla_dims3::Smem<S, D3>;
  constexpr bool QP = (OPT & kQP) != 0;
  constexpr bool TS = (OPT & kTs) != 0;
  constexpr float kQScale = (OPT & kF16P) ? mla_dims3::kQScaleF16P : 1.f;
  constexpr int WS = kernel_warp_size();
  constexpr int kThreads = kDW * WS;
  static_assert(mma::kN == 8 && mma::kARows == 2, "NVIDIA m16n8k16 lane geometry");
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
  const uint32_t bar0 = smem_u32(smem + L::bar);
  const uint32_t qbar0 = bar0 + 8 * S;

  const int tid = threadIdx.x;
  const mla_dims2::Lane ln = mla_dims2::lane_of();
  const int g = ln.g, t = ln.t, dw = ln.dw;
  const bool cl = (flags & fCl) != 0;

  unsigned long long* ts_row = g_mla_dims4_ts + size_t(blockIdx.x < kTsBlocks ? blockIdx.x : 0) * kTsSlots;
  auto ts = [&](int slot) {
    if constexpr (TS) {
      if (tid == 0 && blockIdx.x < kTsBlocks) ts_row[slot] = d4_gtimer();
    }
  };
  ts(0);
  if constexpr (TS) {
    if (tid == 0 && blockIdx.x < kTsBlocks) {
      ts_row[1] = d4_smid();
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
    const uint32_t stage = p_j % S;
    const uint32_t bar = bar0 + 8 * stage;
    const uint32_t dst = smem_u32(smem + stage * L::stage);
    const uint8_t* src = a.kv_fp8 + (p_span.t0 + int64_t(p_tile) * kT) * kDimQK;
    mbar_expect_tx(bar, uint32_t(kT * kDimQK));
    if constexpr ((OPT & kEF) != 0)
      mla_dims3::bulk_copy_hint(dst, src, uint32_t(valid * kDimQK), bar, pol);
    else
      mla_dims::bulk_copy(dst, src, uint32_t(valid * kDimQK), bar);
    if constexpr ((OPT & kLean) != 0)
      mla_dims::fill_rows_rolled(dst, src + (valid - 1) * kDimQK, valid, kDimQK, bar);
    else
      for (int r = valid; r < kT; ++r) mla_dims::bulk_copy(dst + r * kDimQK, src + (valid - 1) * kDimQK, kDimQK, bar);
    ++p_tile;
    ++p_j;
  };
  // QP: item number k of the block (item first_item + k * item_step) into Q buffer k & 1.
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
    if constexpr (QP) issue_q(0);
    for (int s = 0; s < S; ++s) issue_next();
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

    for (int tile = 0; tile < w.n_tiles; ++tile, ++j) {
      const unsigned char* st = smem + stage * L::stage;
      const int valid = min(kT, w.n_tokens - tile * kT);
      mbar_wait(bar0 + 8 * stage, phase);
      if constexpr (TS) {
        if (j == 0) ts(3);
        if (tile == w.n_tiles - 1) ts(7);
      }
      mla_dims3::dims_tile3<S, D3, R>(smem, ln, st, valid, j, q, logit_scale, ss, o, [&] {
        if (tid == 0) issue_next();
      });
      if constexpr (TS) {
        if (j == 0) ts(4);
      }
      if (++stage == S) {
        stage = 0;
        phase ^= 1u;
      }
    }
    if constexpr (TS) {
      if (k_item == 0) ts(5);
      ts(8);
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
    if (cl && splits > 1) {
      // Cluster merge: block `split` of the batch's cluster writes heads split, split + splits, ...
      // out = kv_scale * sum_s 2^(m_s - M) O_s / sum_s 2^(m_s - M) l_s over the cluster's blocks s.
      d4_cluster_sync();
      const uint32_t base = smem_u32(smem);
      uint32_t rb[4];
#pragma unroll
      for (int s2 = 0; s2 < 4; ++s2) rb[s2] = d4_mapa(base, uint32_t(s2 < splits ? s2 : 0));
      const int nh = kHeads / splits;
      for (int u = tid; u < nh * (kDimV / 4); u += kThreads) {
        const int h = w.split + splits * (u / (kDimV / 4)), dim = 4 * (u % (kDimV / 4));
        float ms[4], ls[4];
        float mx = -INFINITY;
#pragma unroll
        for (int s2 = 0; s2 < 4; ++s2) {
          if (s2 < splits) {
            ms[s2] = d4_ld_cluster_f32(rb[s2] + uint32_t(L::stats + 4 * (kHeads + h)));
            ls[s2] = d4_ld_cluster_f32(rb[s2] + uint32_t(L::stats + 4 * h));
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
            const float4 v = d4_ld_cluster_v4(rb[s2] + off);
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
      d4_cluster_sync();  // no block leaves while another still reads its shared memory
    } else {
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
    }
    if constexpr (TS) {
      if (k_item == 0) ts(6);
    }
    __syncthreads();  // the next item reuses the O staging and the statistics
  }
  ts(9);
#else
  (void)a; (void)tokens_per_split; (void)splits; (void)part; (void)flags;
  __builtin_trap();
#endif
}

#if !defined(__HIP_PLATFORM_AMD__)
// The timeline of one launch (kTs), printed to stderr: phases as medians / maxima over the blocks.
inline void print_timeline(const MlaDecodeConfig& c, int blocks, int splits, bool clustered) {
  if (blocks > kTsBlocks) return;
  std::vector<unsigned long long> h(size_t(blocks) * kTsSlots);
  harness_check(cudaDeviceSynchronize(), "timeline sync");
  harness_check(cudaMemcpyFromSymbol(h.data(), g_mla_dims4_ts, h.size() * sizeof(unsigned long long)), "timeline copy");
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
  std::fprintf(stderr, "[d4ts] bs %d kv %d: %d blocks, %d splits%s; span %.0f ns (first start to last end)\n", c.batch_size,
               c.kv_seq_len, blocks, splits, clustered ? " (clusters)" : "", double(g1 - g0));
  static const char* names[] = {"block start", "", "copies issued", "tile0 landed", "tile0 done", "item0 tiles",
                                "item0 out", "last landed", "tiles done", "end"};
  for (int k : {0, 2, 3, 4, 5, 6, 7, 8, 9}) {
    const auto a = stats(k, false);
    const auto b = stats(k, true);
    std::fprintf(stderr, "[d4ts]   %-14s since first start: med %7.0f max %7.0f ns | since own start: med %7.0f max %7.0f\n",
                 names[k], a.first, a.second, b.first, b.second);
  }
}

// v18's split plan (min(items, SMs) persistent blocks) with the F flags above; without fCl, the
// one-pass combine kernel after the main one when there are splits.
template <int S, int OPT, int R = 2, int F = fCl>
struct Dims4 {
  using L = mla_dims3::Smem<S, OPT & kD3Bits>;
  static constexpr auto kernel = mla_fp8_dims4_kernel<S, OPT, R>;
  static bool applies(const MlaDecodeConfig& c) { return int64_t(c.batch_size) * c.kv_seq_len > 65536; }
  static SplitPlan plan(const MlaDecodeConfig& c) {
    return plan_splits(c.batch_size, c.kv_seq_len, current_device_shape().compute_units, 1, kT, 128);
  }
  static size_t workspace_bytes(const MlaDecodeConfig& c) { return partials_bytes(c.batch_size, plan(c).splits); }
  static void prepare() {
    static const bool attr_set = [] {
      harness_check(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         int(L::total)),
                    "cudaFuncSetAttribute(mla_fp8_dims4_kernel)");
      return true;
    }();
    (void)attr_set;
  }
  static cudaLaunchConfig_t config(dim3 grid, int c, cudaLaunchAttribute* attr) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = dim3(unsigned(kDW * current_device_shape().warp_size));
    cfg.dynamicSmemBytes = L::total;
    std::memset(attr, 0, sizeof(cudaLaunchAttribute));
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = unsigned(c);
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return cfg;
  }
  // Clusters of c blocks resident at once (occupancy calculator; 0 if none or an error).
  static int cluster_slots(int c) {
    static std::map<int, int> memo;
    const auto it = memo.find(c);
    if (it != memo.end()) return it->second;
    prepare();
    cudaLaunchAttribute attr[1];
    const cudaLaunchConfig_t cfg = config(dim3(unsigned(c * 64)), c, attr);
    int n = 0;
    if (cudaOccupancyMaxActiveClusters(&n, kernel, &cfg) != cudaSuccess) {
      (void)cudaGetLastError();
      n = 0;
    }
    memo[c] = n;
    return n;
  }
  // fCl: 2 or 4 splits, one item a block, every batch's cluster resident at once.
  static bool clustered(const MlaDecodeConfig& c, const SplitPlan& pl) {
    if ((F & fCl) == 0 || (pl.splits != 2 && pl.splits != 4)) return false;
    if (int64_t(c.batch_size) * pl.splits > current_device_shape().compute_units) return false;
    return cluster_slots(pl.splits) >= c.batch_size;
  }
  static void launch(const MlaDecodeArgs& a, const char* name = "mla_fp8_dims4_kernel") {
    require_mla_shape(a.cfg);
    const SplitPlan pl = plan(a.cfg);
    const bool cl = clustered(a.cfg, pl);
    if (!cl && a.workspace_size < partials_bytes(a.cfg.batch_size, pl.splits))
      throw std::runtime_error(std::string(name) + ": workspace too small");
    prepare();
    const Partials part = cl ? Partials{nullptr, nullptr} : partials_in(a.workspace, a.cfg.batch_size, pl.splits);
    const int threads = kDW * current_device_shape().warp_size;
    const int items = a.cfg.batch_size * pl.splits;
    const int flags = cl ? fCl : 0;
    const dim3 grid(unsigned(cl ? items : std::min<int64_t>(items, current_device_shape().compute_units)));
    if (cl) {
      cudaLaunchAttribute attr[1];
      const cudaLaunchConfig_t cfg = config(grid, pl.splits, attr);
      harness_check(cudaLaunchKernelEx(&cfg, kernel, a, pl.tokens_per_split, pl.splits, part, flags), name);
      harness_check_launch(name);
    } else {
      kernel<<<grid, threads, L::total>>>(a, pl.tokens_per_split, pl.splits, part, flags);
      harness_check_launch(name);
      if (pl.splits > 1) {
        mla_dims::combine_splits_wide_kernel<<<a.cfg.batch_size * kHeads, kDimV / 4>>>(part, pl.splits, a.out);
        harness_check_launch("mla combine_splits_wide_kernel");
      }
    }
    if constexpr ((OPT & kTs) != 0) {
      static std::map<std::pair<int, int>, int> calls;
      const char* env = std::getenv("MLA_D4_TS");
      const int at = env ? std::atoi(env) : 0;
      if (at > 0 && ++calls[{a.cfg.batch_size, a.cfg.kv_seq_len}] == at) {
        std::fprintf(stderr, "[d4ts] flags %d (fCl 2); cluster slots: C2 %d, C4 %d\n", flags,
                     cluster_slots(2), cluster_slots(4));
        print_timeline(a.cfg, int(grid.x), pl.splits, cl);
      }
    }
  }
};

// The clustered shapes only, for composed variants (v23: bs 64 / kv 8192 on the H200), every other shape left
// to the caller's path: applies(cfg) when Dims4 applies and its plan runs as clusters; no workspace.
template <int S, int OPT, int R = 2>
struct ClusterPath {
  using D = Dims4<S, OPT, R, fCl>;
  static bool applies(const MlaDecodeConfig& c) { return D::applies(c) && D::clustered(c, D::plan(c)); }
  static size_t workspace_bytes(const MlaDecodeConfig&) { return 0; }
  static void launch(const MlaDecodeArgs& a) { D::launch(a, "mla_fp8_dims4_kernel<clusters>"); }
};
#endif  // !__HIP_PLATFORM_AMD__
#endif  // HARNESS_GPU

}  // namespace
}  // namespace mla_dims4
