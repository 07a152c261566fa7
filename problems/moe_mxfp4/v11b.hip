// v11b: candidate: 64-row tiles from 9 to 24 rows per expert; 8-row tiles bf16-folded (4 stages). Kernels from moe_tile_pipeline.h; only the rows per tile and the path and block shape
// per tile size differ.
#include "problems/common/moe_tile_pipeline.h"

namespace {
using moe_tile::Bf16Folded;
using moe_tile::ScaledDecode;

// Rows per tile from the expected rows per routed expert (builds without mma.sync: v10's rule, 16 -> 32).
int rows_for(const MoeConfig& c) {
#if defined(MOE_HAVE_MMA_SYNC)
  const int pe = c.bs * c.n_experts_per_token / c.n_routed_experts;
  return pe <= 8 ? 8 : pe <= 24 ? 64 : pe <= 40 ? 32 : 64;
#else
  const int r = moe_tiled::tile_rows_for(c);
  return r == 16 ? 32 : r;
#endif
}

size_t workspace_bytes(const MoeConfig& c) {
  switch (rows_for(c)) {
    case 8: return moe_pipeline::carve(c, 8, nullptr, nullptr, Bf16Folded::kActBytes);
    case 32: return moe_pipeline::carve(c, 32, nullptr, nullptr, Bf16Folded::kActBytes);
    default: return moe_pipeline::carve(c, 64, nullptr, nullptr, Bf16Folded::kActBytes);
  }
}

void launch(const MoeArgs& a) {
  switch (rows_for(a.cfg)) {
    case 8: moe_tiled::launch_one<8, moe_tiled::Plan, Bf16Folded>(a); break;
    case 32: moe_tiled::launch_one<32, moe_tiled::Plan, Bf16Folded>(a); break;
    default: moe_tiled::launch_one<64, moe_tiled::PlanWide, Bf16Folded>(a); break;
  }
}
}  // namespace

MOE_MXFP4_VARIANT("v11b", gpu,
                  "candidate: 64-row tiles from 9 to 24 rows per expert; 8-row tiles bf16-folded (4 stages)",
                  "hidden_states,gate_up_weight_shuffled,down_weight_shuffled,gate_up_weight_scale,down_weight_scale,"
                  "topk_weights,topk_ids",
                  0);
