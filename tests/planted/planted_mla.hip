// The planted variants' correct core: one block per (batch, head); each warp folds a share of the
// tokens with an online softmax over the bf16 KV, then the block merges its warps.
#include <stdexcept>
#include <string>

#include "reference/numerics.hpp"
#include "tests/planted/planted_mla.hpp"

namespace planted {
namespace {

constexpr int kThreads = 256;
constexpr int kD = 576, kDv = 512;
constexpr int kMaxPerLane = kDv / 32;  // warpSize is 32 or 64
constexpr int kMaxWarps = kThreads / 32;

__global__ void attention_kernel(MlaDecodeArgs a, AttentionOptions o) {
  __shared__ float q[kD];
  __shared__ float warp_m[kMaxWarps], warp_l[kMaxWarps];
  __shared__ float warp_acc[kMaxWarps][kDv];
  const int b = o.batch_begin + static_cast<int>(blockIdx.x) / a.cfg.num_heads;
  const int h = static_cast<int>(blockIdx.x) % a.cfg.num_heads;
  const int lane = static_cast<int>(threadIdx.x) % warpSize, warp = static_cast<int>(threadIdx.x) / warpSize;
  const int warps = static_cast<int>(blockDim.x) / warpSize;
  const int qrow = a.qo_indptr[b];
  for (int d = threadIdx.x; d < kD; d += blockDim.x)
    q[d] = numerics::bf16_to_f32(a.q[(static_cast<int64_t>(qrow) * a.cfg.num_heads + h) * kD + d]);
  __syncthreads();

  float m = -INFINITY, l = 0, acc[kMaxPerLane];
  for (int k = 0; k < kMaxPerLane; ++k) acc[k] = 0;
  for (int t = a.kv_indptr[b] + warp; t < a.kv_indptr[b + 1]; t += warps) {
    const uint16_t* row = a.kv_bf16 + static_cast<int64_t>(t) * kD;
    float dot = 0;
    for (int d = lane; d < kD; d += warpSize) dot += q[d] * numerics::bf16_to_f32(row[d]);
    for (int off = warpSize / 2; off > 0; off /= 2) dot += __shfl_xor(dot, off);
    const float s = dot * a.cfg.sm_scale;
    const float m_new = fmaxf(m, s);
    const float corr = expf(m - m_new), p = expf(s - m_new);
    l = l * corr + p;
    for (int k = 0, d = lane; d < kDv; ++k, d += warpSize)
      acc[k] = acc[k] * corr + p * numerics::bf16_to_f32(row[d]);
    m = m_new;
  }
  if (lane == 0) { warp_m[warp] = m; warp_l[warp] = l; }
  for (int k = 0, d = lane; d < kDv; ++k, d += warpSize) warp_acc[warp][d] = acc[k];
  __syncthreads();

  float m_all = -INFINITY;
  for (int w = 0; w < warps; ++w) m_all = fmaxf(m_all, warp_m[w]);
  float l_all = 0;
  for (int w = 0; w < warps; ++w) l_all += warp_l[w] * expf(warp_m[w] - m_all);
  for (int d = threadIdx.x; d < kDv; d += blockDim.x) {
    float v = 0;
    for (int w = 0; w < warps; ++w) v += warp_acc[w][d] * expf(warp_m[w] - m_all);
    a.out[(static_cast<int64_t>(qrow) * a.cfg.num_heads + h) * kDv + d] = numerics::f32_to_bf16(v / l_all * o.out_scale);
  }
}

}  // namespace

void launch_attention(const MlaDecodeArgs& a, AttentionOptions o, hipStream_t q) {
  if (o.batch_end < 0) o.batch_end = a.cfg.batch_size;
  const int blocks = (o.batch_end - o.batch_begin) * a.cfg.num_heads;
  if (blocks <= 0) return;
  attention_kernel<<<blocks, kThreads, 0, q>>>(a, o);
  const hipError_t e = hipGetLastError();
  if (e != hipSuccess) throw std::runtime_error(std::string("planted attention launch: ") + hipGetErrorString(e));
}

}  // namespace planted
