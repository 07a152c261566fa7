// Steps of the lazy block-wide softmax shared by the fp8 split-KV kernels built on v8's pipeline
// (mla_fp8_pipe.h, mla_fp8_wide.h, mla_fp8_cluster.h). Forced inline: the kernels compile to the same
// PTX as when the steps were written out in each (checked with scripts/ptx_snapshot.sh).
#pragma once
#include "problems/common/mma_tile.h"

namespace mla_softmax {

#if defined(HARNESS_GPU) && defined(MMA_TILE_NVIDIA)

// Raises m_ref to the block-wide tile maximum (the kNQ maxima each warp published per head row) and
// gives the factors by which the accumulators of the lane's two head rows are scaled.
template <int kNQ>
__device__ __forceinline__ void raise_reference(const float* tmax_sm, int g, float (&m_ref)[2], float (&alpha)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float m_tile = -INFINITY;
#pragma unroll
    for (int k = 0; k < kNQ / 4; ++k) {
      const float4 v = *reinterpret_cast<const float4*>(tmax_sm + (g + 8 * r) * kNQ + 4 * k);
      m_tile = fmaxf(m_tile, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
    }
    const float m_new = fmaxf(m_ref[r], m_tile);
    alpha[r] = m_new == m_ref[r] ? 1.f : exp2f(m_ref[r] - m_new);
    m_ref[r] = m_new;
  }
}

// The output accumulators (kGroups x 4 n-tiles) and the row sums, scaled by alpha per head row.
template <int kGroups>
__device__ __forceinline__ void scale_accumulators(mma::FragC (&o)[kGroups][4], mma::FragC& lacc, const float (&alpha)[2]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int gr = 0; gr < kGroups; ++gr)
#pragma unroll
      for (int j = 0; j < 4; ++j) o[gr][j].v[i] *= alpha[i >> 1];
    lacc.v[i] *= alpha[i >> 1];
  }
}

#endif

}  // namespace mla_softmax
