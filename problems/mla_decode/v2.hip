// v2: split-KV flash decoding on plain arithmetic units, bf16 KV.
// Block (split, batch) walks its token range in tiles of 32 rows held in shared memory: each row is
// read from memory once for all 16 heads, serves as K (576 values) and, through its first 512
// values, as V. Online softmax (base 2) per head; with more than one split the partial results
// and their log-sum-exp go to the workspace and a combine kernel merges them.
// The next tile is fetched into registers while the current one is computed.
#include "problems/common/launch_check.h"
#include "problems/common/lowp_pack.h"
#include "problems/common/mla_split_kv.h"
#include "problems/common/warp_reduce.h"
#include "problems/mla_decode/mla_api.h"

namespace {

using namespace mla_kernels;
constexpr int kThreads = 256;
constexpr int kTile = 32;
constexpr int kRowElems = kDimQK + 4;  // padded row: 8-byte aligned, spreads rows over banks
constexpr int kChunksPerRow = kDimQK / 8;
constexpr int kLoadsPerThread = kTile * kChunksPerRow / kThreads;  // 9
static_assert(kTile * kChunksPerRow % kThreads == 0, "tile copy must divide evenly");

struct Smem {
  uint16_t kv[kTile][kRowElems];
  uint16_t q[kHeads][kDimQK];
  float s[kHeads][kTile];
  float p[kTile][kHeads];
  float alpha[kHeads];
  float l[kHeads];
  float m[kHeads];
};

__device__ inline void load_tile_regs(const uint16_t* kv, int64_t row0, int rows_valid, uint4 (&r)[kLoadsPerThread]) {
  for (int i = 0; i < kLoadsPerThread; ++i) {
    const int c = threadIdx.x + i * kThreads;
    const int row = min(c / kChunksPerRow, rows_valid - 1);  // rows past the end repeat a valid one
    r[i] = reinterpret_cast<const uint4*>(kv + (row0 + row) * kDimQK)[c % kChunksPerRow];
  }
}
__device__ inline void store_tile(Smem& sm, const uint4 (&r)[kLoadsPerThread]) {
  for (int i = 0; i < kLoadsPerThread; ++i) {
    const int c = threadIdx.x + i * kThreads;
    uint2* dst = reinterpret_cast<uint2*>(&sm.kv[c / kChunksPerRow][(c % kChunksPerRow) * 8]);
    dst[0] = make_uint2(r[i].x, r[i].y);
    dst[1] = make_uint2(r[i].z, r[i].w);
  }
}

__global__ void __launch_bounds__(kThreads) mla_v2_kernel(MlaDecodeArgs a, int tokens_per_split, int splits,
                                                        Partials part) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Smem& sm = *reinterpret_cast<Smem*>(smem_raw);
  const int b = blockIdx.y, split = blockIdx.x, tid = threadIdx.x;
  const int64_t kv_begin = a.kv_indptr[b], kv_end = a.kv_indptr[b + 1];
  const int64_t t0 = kv_begin + int64_t(split) * tokens_per_split;
  const int64_t left = kv_end - t0;
  const int n_tokens = left <= 0 ? 0 : int(left < tokens_per_split ? left : tokens_per_split);
  const float scale_log2 = a.cfg.sm_scale * 1.4426950408889634f;

  for (int i = tid; i < kHeads * kDimQK / 8; i += kThreads)
    reinterpret_cast<uint4*>(&sm.q[0][0])[i] = reinterpret_cast<const uint4*>(a.q + int64_t(b) * kHeads * kDimQK)[i];

  // Roles: QK -> token qk_t, heads 2*qk_hp and 2*qk_hp+1; softmax -> head sm_h, tokens sm_sub and
  // sm_sub+16; PV -> output dims 2*tid and 2*tid+1 for all heads.
  const int qk_t = tid % kTile, qk_hp = tid / kTile;
  const int sm_h = tid / 16, sm_sub = tid % 16;
  float m_run = -INFINITY, l_run = 0.f;
  float acc[kHeads][2];
  for (int h = 0; h < kHeads; ++h) acc[h][0] = acc[h][1] = 0.f;

  const int n_tiles = (n_tokens + kTile - 1) / kTile;
  uint4 next[kLoadsPerThread];
  if (n_tiles > 0) load_tile_regs(a.kv_bf16, t0, min(kTile, n_tokens), next);

  for (int tile = 0; tile < n_tiles; ++tile) {
    const int valid = min(kTile, n_tokens - tile * kTile);
    __syncthreads();  // previous tile fully consumed
    store_tile(sm, next);
    __syncthreads();
    if (tile + 1 < n_tiles)
      load_tile_regs(a.kv_bf16, t0 + int64_t(tile + 1) * kTile, min(kTile, n_tokens - (tile + 1) * kTile), next);

    {  // S = q . k for two heads and one token
      const uint16_t* krow = sm.kv[qk_t];
      const uint16_t* q0 = sm.q[2 * qk_hp];
      const uint16_t* q1 = sm.q[2 * qk_hp + 1];
      float s0 = 0.f, s1 = 0.f;
      for (int d = 0; d < kDimQK; d += 4) {
        const uint2 k4 = *reinterpret_cast<const uint2*>(krow + d);
        const uint2 a4 = *reinterpret_cast<const uint2*>(q0 + d);
        const uint2 b4 = *reinterpret_cast<const uint2*>(q1 + d);
        const float k[4] = {__uint_as_float(k4.x << 16), __uint_as_float(k4.x & 0xffff0000u),
                            __uint_as_float(k4.y << 16), __uint_as_float(k4.y & 0xffff0000u)};
        s0 += __uint_as_float(a4.x << 16) * k[0] + __uint_as_float(a4.x & 0xffff0000u) * k[1] +
              __uint_as_float(a4.y << 16) * k[2] + __uint_as_float(a4.y & 0xffff0000u) * k[3];
        s1 += __uint_as_float(b4.x << 16) * k[0] + __uint_as_float(b4.x & 0xffff0000u) * k[1] +
              __uint_as_float(b4.y << 16) * k[2] + __uint_as_float(b4.y & 0xffff0000u) * k[3];
      }
      sm.s[2 * qk_hp][qk_t] = s0 * scale_log2;
      sm.s[2 * qk_hp + 1][qk_t] = s1 * scale_log2;
    }
    __syncthreads();
    {  // online softmax for head sm_h over this tile's tokens sm_sub, sm_sub + 16
      const float x0 = sm_sub < valid ? sm.s[sm_h][sm_sub] : -INFINITY;
      const float x1 = sm_sub + 16 < valid ? sm.s[sm_h][sm_sub + 16] : -INFINITY;
      const float m_new = fmaxf(m_run, group_max<16>(fmaxf(x0, x1)));
      const float p0 = exp2f(x0 - m_new), p1 = exp2f(x1 - m_new);
      const float alpha = exp2f(m_run - m_new);
      l_run = l_run * alpha + group_sum<16>(p0 + p1);
      m_run = m_new;
      sm.p[sm_sub][sm_h] = p0;
      sm.p[sm_sub + 16][sm_h] = p1;
      if (sm_sub == 0) sm.alpha[sm_h] = alpha;
    }
    __syncthreads();
    {  // acc = acc * alpha + p . v
      for (int h = 0; h < kHeads; ++h) {
        acc[h][0] *= sm.alpha[h];
        acc[h][1] *= sm.alpha[h];
      }
      for (int t = 0; t < kTile; ++t) {
        const uint32_t v2 = *reinterpret_cast<const uint32_t*>(&sm.kv[t][2 * tid]);
        const float v0 = __uint_as_float(v2 << 16), v1 = __uint_as_float(v2 & 0xffff0000u);
        const float4* p4 = reinterpret_cast<const float4*>(sm.p[t]);
        for (int j = 0; j < kHeads / 4; ++j) {
          const float4 p = p4[j];
          acc[4 * j][0] += p.x * v0; acc[4 * j][1] += p.x * v1;
          acc[4 * j + 1][0] += p.y * v0; acc[4 * j + 1][1] += p.y * v1;
          acc[4 * j + 2][0] += p.z * v0; acc[4 * j + 2][1] += p.z * v1;
          acc[4 * j + 3][0] += p.w * v0; acc[4 * j + 3][1] += p.w * v1;
        }
      }
    }
  }

  if (sm_sub == 0) { sm.l[sm_h] = l_run; sm.m[sm_h] = m_run; }
  __syncthreads();
  for (int h = 0; h < kHeads; ++h) {
    const float inv_l = sm.l[h] > 0.f ? 1.f / sm.l[h] : 0.f;
    const int c = 2 * tid;
    if (splits == 1) {
      uint16_t* out = a.out + (int64_t(b) * kHeads + h) * kDimV + c;
      *reinterpret_cast<uint32_t*>(out) = pack16(f32_to_bf16_bits(acc[h][0] * inv_l), f32_to_bf16_bits(acc[h][1] * inv_l));
    } else {
      const size_t row = (size_t(b) * splits + split) * kHeads + h;
      *reinterpret_cast<float2*>(part.o + row * kDimV + c) = make_float2(acc[h][0] * inv_l, acc[h][1] * inv_l);
      if (tid == 0) part.lse[row] = sm.l[h] > 0.f ? sm.m[h] + log2f(sm.l[h]) : -INFINITY;
    }
  }
}

SplitPlan plan_for(const MlaDecodeConfig& c) {
  return plan_splits(c.batch_size, c.kv_seq_len, current_device_shape().compute_units, 2, kTile, 128);
}

size_t workspace_bytes(const MlaDecodeConfig& c) { return partials_bytes(c.batch_size, plan_for(c).splits); }

void launch(const MlaDecodeArgs& a) {
  require_mla_shape(a.cfg);
  const SplitPlan plan = plan_for(a.cfg);
  if (a.workspace_size < partials_bytes(a.cfg.batch_size, plan.splits))
    throw std::runtime_error("mla v2: workspace too small");
  static const bool smem_ready = [] {
    harness_check(hipFuncSetAttribute(reinterpret_cast<const void*>(mla_v2_kernel),
                                      hipFuncAttributeMaxDynamicSharedMemorySize, int(sizeof(Smem))),
                  "hipFuncSetAttribute(mla_v2_kernel)");
    return true;
  }();
  (void)smem_ready;
  const Partials part = partials_in(a.workspace, a.cfg.batch_size, plan.splits);
  mla_v2_kernel<<<dim3(plan.splits, a.cfg.batch_size), kThreads, sizeof(Smem)>>>(a, plan.tokens_per_split, plan.splits,
                                                                                part);
  harness_check_launch("mla_v2_kernel");
  if (plan.splits > 1) launch_combine(part, a.cfg.batch_size, plan.splits, a.out);
}

}  // namespace

MLA_DECODE_VARIANT("v2", gpu, "split-KV flash decoding, bf16 KV tile shared by all 16 heads, online softmax, combine kernel",
                   "q,kv_bf16,kv_indptr", 0);
