// v8 (tuning): v7 with v6's tile plan (one 8-warp block per SM, unrolled K, for 32- and 64-row tiles).
#include "problems/common/moe_tile_pipeline.h"

namespace {
size_t workspace_bytes(const MoeConfig& c) { return moe_tiled::workspace_bytes<moe_tile::F16Decode>(c); }
void launch(const MoeArgs& a) { moe_tiled::launch<moe_tiled::PlanWide, moe_tile::F16Decode>(a); }
}  // namespace

MOE_MXFP4_VARIANT("v8", gpu, "v7 with one 8-warp block per SM and unrolled K for the 32- and 64-row tiles (tuning)",
                  "hidden_states,gate_up_weight_shuffled,down_weight_shuffled,gate_up_weight_scale,down_weight_scale,"
                  "topk_weights,topk_ids",
                  0);
