// GPU reference for mla_decode: the plainest correct computation, fp32 throughout, reading bf16 KV.
// One block per (batch, head); each warp runs an online softmax over every warps-th token, and the
// warps' (max, sum, accumulator) states are merged at the end.
#include "problems/common/launch_check.h"
#include "problems/common/lowp_pack.h"
#include "problems/common/mla_split_kv.h"
#include "problems/common/warp_reduce.h"
#include "problems/mla_decode/mla_api.h"

namespace {

constexpr int kWarps = 8;

__global__ void __launch_bounds__(512) mla_reference_kernel(MlaDecodeArgs a) {
  constexpr int W = kernel_warp_size();
  constexpr int kQPerLane = mla_kernels::kDimQK / W;  // 576 is a multiple of 32 and 64
  constexpr int kVPerLane = mla_kernels::kDimV / W;
  require_warp_size();
  __shared__ float warp_m[kWarps], warp_l[kWarps];
  __shared__ float warp_acc[kWarps][mla_kernels::kDimV];

  const int b = blockIdx.x / mla_kernels::kHeads, h = blockIdx.x % mla_kernels::kHeads;
  const int lane = threadIdx.x % W, warp = threadIdx.x / W;
  const int64_t kv_begin = a.kv_indptr[b], kv_end = a.kv_indptr[b + 1];
  const uint16_t* q = a.q + (int64_t(b) * mla_kernels::kHeads + h) * mla_kernels::kDimQK;

  float qv[kQPerLane];
  for (int k = 0; k < kQPerLane; ++k) qv[k] = bf16_bits_to_f32(q[lane + k * W]);

  float m = -INFINITY, l = 0.f, acc[kVPerLane];
  for (int k = 0; k < kVPerLane; ++k) acc[k] = 0.f;

  for (int64_t t = kv_begin + warp; t < kv_end; t += kWarps) {
    const uint16_t* row = a.kv_bf16 + t * mla_kernels::kDimQK;
    float dot = 0.f;
    for (int k = 0; k < kQPerLane; ++k) dot += qv[k] * bf16_bits_to_f32(row[lane + k * W]);
    const float s = warp_sum(dot) * a.cfg.sm_scale;
    const float m_new = fmaxf(m, s);
    const float alpha = expf(m - m_new);  // 0 on the first token (m = -inf)
    const float p = expf(s - m_new);
    l = l * alpha + p;
    for (int k = 0; k < kVPerLane; ++k) acc[k] = acc[k] * alpha + p * bf16_bits_to_f32(row[lane + k * W]);
    m = m_new;
  }

  if (lane == 0) { warp_m[warp] = m; warp_l[warp] = l; }
  for (int k = 0; k < kVPerLane; ++k) warp_acc[warp][lane + k * W] = acc[k];
  __syncthreads();

  float m_all = -INFINITY;
  for (int w = 0; w < kWarps; ++w) m_all = fmaxf(m_all, warp_m[w]);
  float l_all = 0.f;
  for (int w = 0; w < kWarps; ++w)
    if (warp_l[w] > 0.f) l_all += warp_l[w] * expf(warp_m[w] - m_all);
  uint16_t* out = a.out + (int64_t(b) * mla_kernels::kHeads + h) * mla_kernels::kDimV;
  for (int c = threadIdx.x; c < mla_kernels::kDimV; c += blockDim.x) {
    float o = 0.f;
    for (int w = 0; w < kWarps; ++w)
      if (warp_l[w] > 0.f) o += warp_acc[w][c] * expf(warp_m[w] - m_all);
    out[c] = f32_to_bf16_bits(o / l_all);
  }
}

size_t workspace_bytes(const MlaDecodeConfig&) { return 0; }

void launch(const MlaDecodeArgs& a) {
  mla_kernels::require_mla_shape(a.cfg);
  const int threads = kWarps * current_device_shape().warp_size;
  mla_reference_kernel<<<a.cfg.batch_size * mla_kernels::kHeads, threads>>>(a);
  harness_check_launch("mla_reference_kernel");
}

}  // namespace

MLA_DECODE_VARIANT("reference", gpu, "GPU reference: bf16 KV, fp32 online softmax, one block per (batch, head)",
                   "q,kv_bf16,kv_indptr", ::harness::kVariantReference);
