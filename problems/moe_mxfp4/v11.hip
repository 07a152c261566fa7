// v11: v10 with 32-row bf16-folded tiles from 9 to 40 expected rows per expert (E 257 bs 512: about one tile per expert, each expert's weights decoded once). Kernels from moe_tile_pipeline.h; only the rows per tile and the path and block shape
// per tile size differ.
#include "problems/common/moe_tile_pipeline.h"

namespace {
using moe_tile::Bf16Folded;
using moe_tile::ScaledDecode;

// Rows per tile from the expected rows per routed expert (builds without mma.sync: v10's rule, 16 -> 32).
int rows_for(const MoeConfig& c) {
#if defined(MOE_HAVE_MMA_SYNC)
  const int pe = c.bs * c.n_experts_per_token / c.n_routed_experts;
  return pe <= 8 ? 8 : pe <= 40 ? 32 : 64;
#else
  const int r = moe_tiled::tile_rows_for(c);
  return r == 16 ? 32 : r;
#endif
}

size_t workspace_bytes(const MoeConfig& c) {
  switch (rows_for(c)) {
    case 8: return moe_pipeline::carve(c, 8, nullptr, nullptr, ScaledDecode::kActBytes);
    case 32: return moe_pipeline::carve(c, 32, nullptr, nullptr, Bf16Folded::kActBytes);
    default: return moe_pipeline::carve(c, 64, nullptr, nullptr, Bf16Folded::kActBytes);
  }
}

void launch(const MoeArgs& a) {
  switch (rows_for(a.cfg)) {
    case 8: moe_tiled::launch_one<8, moe_tiled::Plan, ScaledDecode>(a); break;
    case 32: moe_tiled::launch_one<32, moe_tiled::Plan, Bf16Folded>(a); break;
    default: moe_tiled::launch_one<64, moe_tiled::PlanWide, Bf16Folded>(a); break;
  }
}
}  // namespace

MOE_MXFP4_VARIANT("v11", gpu,
                  "v10 with 32-row bf16-folded tiles from 9 to 40 expected rows per expert (E 257 bs 512: about one tile per expert, each expert's weights decoded once)",
                  "hidden_states,gate_up_weight_shuffled,down_weight_shuffled,gate_up_weight_scale,down_weight_scale,"
                  "topk_weights,topk_ids",
                  0);
