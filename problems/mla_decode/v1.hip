// v1: straightforward bf16 kernel. One block per (batch, head); each warp takes every warps-th
// token, its lanes read the 576-value row in 16-byte pieces (8 bf16 each), and an fp32 online
// softmax (base 2) runs per warp; the warps' states are merged at the end.
#include "problems/common/launch_check.h"
#include "problems/common/lowp_pack.h"
#include "problems/common/mla_split_kv.h"
#include "problems/common/warp_reduce.h"
#include "problems/mla_decode/mla_api.h"

namespace {

using namespace mla_kernels;
constexpr int kWarps = 8;
constexpr int kChunks = kDimQK / 8;  // 16-byte pieces per row
constexpr int kVChunks = kDimV / 8;

__device__ inline void unpack8(const uint4& v, float f[8]) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(w[i] << 16);
    f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
}

__global__ void __launch_bounds__(512) mla_v1_kernel(MlaDecodeArgs a) {
  constexpr int W = kernel_warp_size();
  constexpr int kPerLane = (kChunks + W - 1) / W;
  require_warp_size();
  __shared__ float warp_m[kWarps], warp_l[kWarps];
  __shared__ float warp_acc[kWarps][kDimV];

  const int b = blockIdx.x / kHeads, h = blockIdx.x % kHeads;
  const int lane = threadIdx.x % W, warp = threadIdx.x / W;
  const int64_t kv_begin = a.kv_indptr[b], kv_end = a.kv_indptr[b + 1];
  const uint4* q = reinterpret_cast<const uint4*>(a.q + (int64_t(b) * kHeads + h) * kDimQK);
  const float scale_log2 = a.cfg.sm_scale * 1.4426950408889634f;

  float qv[kPerLane][8], acc[kPerLane][8];
  for (int k = 0; k < kPerLane; ++k) {
    const int c = lane + k * W;
    if (c < kChunks) unpack8(q[c], qv[k]);
    for (int i = 0; i < 8; ++i) acc[k][i] = 0.f;
  }

  float m = -INFINITY, l = 0.f;
  for (int64_t t = kv_begin + warp; t < kv_end; t += kWarps) {
    const uint4* row = reinterpret_cast<const uint4*>(a.kv_bf16 + t * kDimQK);
    float kv[kPerLane][8];
    float dot = 0.f;
    for (int k = 0; k < kPerLane; ++k) {
      const int c = lane + k * W;
      if (c < kChunks) {
        unpack8(row[c], kv[k]);
        for (int i = 0; i < 8; ++i) dot += qv[k][i] * kv[k][i];
      }
    }
    const float s = warp_sum(dot) * scale_log2;
    const float m_new = fmaxf(m, s);
    const float alpha = exp2f(m - m_new);
    const float p = exp2f(s - m_new);
    l = l * alpha + p;
    m = m_new;
    for (int k = 0; k < kPerLane; ++k) {
      if (lane + k * W < kVChunks)
        for (int i = 0; i < 8; ++i) acc[k][i] = acc[k][i] * alpha + p * kv[k][i];
    }
  }

  if (lane == 0) { warp_m[warp] = m; warp_l[warp] = l; }
  for (int k = 0; k < kPerLane; ++k) {
    const int c = lane + k * W;
    if (c < kVChunks)
      for (int i = 0; i < 8; ++i) warp_acc[warp][c * 8 + i] = acc[k][i];
  }
  __syncthreads();

  float m_all = -INFINITY;
  for (int w = 0; w < kWarps; ++w) m_all = fmaxf(m_all, warp_m[w]);
  float weight[kWarps], l_all = 0.f;
  for (int w = 0; w < kWarps; ++w) {
    weight[w] = warp_l[w] > 0.f ? exp2f(warp_m[w] - m_all) : 0.f;
    l_all += weight[w] * warp_l[w];
  }
  uint16_t* out = a.out + (int64_t(b) * kHeads + h) * kDimV;
  for (int c = threadIdx.x; c < kDimV; c += blockDim.x) {
    float o = 0.f;
    for (int w = 0; w < kWarps; ++w) o += weight[w] == 0.f ? 0.f : weight[w] * warp_acc[w][c];
    out[c] = f32_to_bf16_bits(o / l_all);
  }
}

size_t workspace_bytes(const MlaDecodeConfig&) { return 0; }

void launch(const MlaDecodeArgs& a) {
  require_mla_shape(a.cfg);
  const int threads = kWarps * current_device_shape().warp_size;
  mla_v1_kernel<<<a.cfg.batch_size * kHeads, threads>>>(a);
  harness_check_launch("mla_v1_kernel");
}

}  // namespace

MLA_DECODE_VARIANT("v1", gpu, "bf16 baseline: one block per (batch, head), 16-byte loads, fp32 online softmax per warp",
                   "q,kv_bf16,kv_indptr", 0);
