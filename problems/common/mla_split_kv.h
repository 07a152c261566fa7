// Split-KV plumbing shared by the mla_decode flash-decoding variants: how many KV splits a shape
// gets, where the partial results live in the workspace, and the combine kernel that merges them.
#pragma once
#include <algorithm>
#include <cmath>

#include "problems/common/launch_check.h"
#include "problems/common/lowp_pack.h"
#include "problems/mla_decode/mla_api.h"

namespace mla_kernels {

constexpr int kHeads = 16;
constexpr int kDimQK = 576;
constexpr int kDimV = 512;
constexpr int kMaxSplits = 128;

// Splits for a shape, from a cost model in token-rows per block slot: a block costs its tokens plus
// a fixed overhead (Q load, pipeline fill); with more than one split it also writes a 32 KB partial
// (about 64 fp8 rows), and the combine reads them all back and costs a launch. Waves are counted
// whole, so splitting pays off only while it fills the machine. Each split is a multiple of tile
// tokens and at least min_tokens long, and none is empty.
struct SplitPlan {
  int splits = 1;
  int tokens_per_split = 0;
};
inline SplitPlan plan_splits(int batch, int kv_len, int compute_units, int blocks_per_cu, int tile, int min_tokens) {
  constexpr double kBlockOverhead = 32, kPartialRows = 64, kLaunchRows = 64;
  if (kv_len <= 0) return {1, tile};
  const int slots = std::max(1, compute_units * blocks_per_cu);
  const int max_splits = std::clamp(kv_len / std::max(1, min_tokens), 1, kMaxSplits);
  SplitPlan best{1, (kv_len + tile - 1) / tile * tile};
  double best_cost = 0;
  for (int s = 1; s <= max_splits; ++s) {
    const int per = ((kv_len + s - 1) / s + tile - 1) / tile * tile;
    const int used = (kv_len + per - 1) / per;
    if (used != s) continue;  // a smaller count gives the same partition
    const double blocks = double(batch) * used;
    const double waves = std::ceil(blocks / slots);
    double cost = waves * (per + kBlockOverhead);
    if (used > 1) cost += waves * kPartialRows + blocks * kPartialRows / slots + kLaunchRows;
    if (s == 1 || cost < best_cost) {
      best_cost = cost;
      best = {used, per};
    }
  }
  return best;
}

// Workspace: partial outputs (normalised by their own softmax sum) and their log2-sum-exp.
struct Partials {
  float* o;    // [batch][splits][16][512]
  float* lse;  // [batch][splits][16], log2 units; -inf for an empty split
};
inline size_t partials_bytes(int batch, int splits) {
  return splits <= 1 ? 0 : size_t(batch) * splits * kHeads * (kDimV + 1) * sizeof(float);
}
inline Partials partials_in(void* workspace, int batch, int splits) {
  float* base = static_cast<float*>(workspace);
  return {base, base + size_t(batch) * splits * kHeads * kDimV};
}

#if defined(HARNESS_GPU)
// One block per (batch, head): out = sum_s 2^(lse_s - max) o_s / sum_s 2^(lse_s - max).
static __global__ void combine_splits_kernel(Partials p, int splits, uint16_t* out) {
  __shared__ float weight[kMaxSplits];
  __shared__ float inv_total;
  const int bh = blockIdx.x;  // batch * 16 + head
  const int b = bh / kHeads, h = bh % kHeads;
  if (threadIdx.x == 0) {
    float mx = -INFINITY;
    for (int s = 0; s < splits; ++s) mx = fmaxf(mx, p.lse[(size_t(b) * splits + s) * kHeads + h]);
    float total = 0;
    for (int s = 0; s < splits; ++s) {
      const float lse = p.lse[(size_t(b) * splits + s) * kHeads + h];
      weight[s] = lse == -INFINITY ? 0.f : exp2f(lse - mx);
      total += weight[s];
    }
    inv_total = 1.f / total;
  }
  __syncthreads();
  for (int c = threadIdx.x; c < kDimV; c += blockDim.x) {
    float acc = 0;
    for (int s = 0; s < splits; ++s) {
      if (weight[s] != 0.f) acc += weight[s] * p.o[((size_t(b) * splits + s) * kHeads + h) * kDimV + c];
    }
    out[size_t(bh) * kDimV + c] = f32_to_bf16_bits(acc * inv_total);
  }
}

static inline void launch_combine(const Partials& p, int batch, int splits, uint16_t* out) {
  combine_splits_kernel<<<batch * kHeads, 128>>>(p, splits, out);
  harness_check_launch("mla combine_splits_kernel");
}
#endif

// Shapes this family of kernels supports (the spec's constants); throws otherwise.
inline void require_mla_shape(const MlaDecodeConfig& c) {
  if (c.num_heads != kHeads || c.num_kv_heads != 1 || c.qk_head_dim != kDimQK || c.v_head_dim != kDimV ||
      c.kv_lora_rank != kDimV || c.q_seq_len != 1)
    throw std::runtime_error("mla_decode kernel: unsupported configuration (needs 16 heads, 576/512 dims, q_seq_len 1)");
}

}  // namespace mla_kernels
