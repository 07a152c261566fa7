// v11: v10 with the 32-row tiles on PlanWide's gate_up block (128 weight rows, 8 k-blocks a stage, 3
// stages; bf16 operands carrying both scales) and 32-row tiles from 9 expected rows per routed expert
// (v10: 16-row tiles up to 16). At E 257 bs 512 (about 18 rows per expert) that is one tile per expert
// instead of ~1.65, so each expert's weights are decoded about once; the 8-row tiles (bandwidth-bound
// shapes) and the 64-row tiles stay exactly v10's. Measured on the H200 (docs/perf.md, moe-kernels3):
// every path here is the template instance that ran as v10 (8, 64 rows) or as candidate v11e (32 rows).
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
    case 32: moe_tiled::launch_one<32, moe_tiled::PlanWide, Bf16Folded>(a); break;
    default: moe_tiled::launch_one<64, moe_tiled::PlanWide, Bf16Folded>(a); break;
  }
}
}  // namespace

MOE_MXFP4_VARIANT("v11", gpu,
                  "v10 with 32-row tiles (bf16 folded, 8 k-blocks a stage) from 9 to 40 expected rows per expert: at "
                  "E 257 bs 512 about one tile per expert, each expert's weights decoded about once",
                  "hidden_states,gate_up_weight_shuffled,down_weight_shuffled,gate_up_weight_scale,down_weight_scale,"
                  "topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
