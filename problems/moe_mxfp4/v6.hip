// v6 (tuning): v4 with one 8-warp block per SM and the K loop unrolled for the matrix-bound tile
// shapes (32 and 64 rows per tile); the bandwidth-bound shapes run exactly v4.
#include "problems/common/moe_tile_pipeline.h"

namespace {
size_t workspace_bytes(const MoeConfig& c) { return moe_tiled::workspace_bytes<moe_tile::ScaledDecode>(c); }
void launch(const MoeArgs& a) { moe_tiled::launch<moe_tiled::PlanWide, moe_tile::ScaledDecode>(a); }
}  // namespace

MOE_MXFP4_VARIANT("v6", gpu, "v4 with one 8-warp block per SM and unrolled K for the 32- and 64-row tiles (tuning)",
                  "hidden_states,gate_up_weight_shuffled,down_weight_shuffled,gate_up_weight_scale,down_weight_scale,"
                  "topk_weights,topk_ids",
                  0);
