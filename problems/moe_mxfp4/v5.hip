// v5: v4 with v3's table decode of e2m1 (exact e4m3 values, natural activation order), to measure
// what the shift decode saves and to keep a path that never feeds subnormal e4m3 to the MMA.
#include "problems/common/moe_tile_pipeline.h"

namespace {
size_t workspace_bytes(const MoeConfig& c) { return moe_tiled::workspace_bytes<moe_tile::ExactDecode>(c); }
void launch(const MoeArgs& a) { moe_tiled::launch<moe_tiled::Plan, moe_tile::ExactDecode>(a); }
}  // namespace

MOE_MXFP4_VARIANT("v5", gpu,
                  "v4 with the table decode of e2m1 to exact e4m3 (v3's), natural activation order",
                  "hidden_states,gate_up_weight_shuffled,down_weight_shuffled,gate_up_weight_scale,down_weight_scale,"
                  "topk_weights,topk_ids",
                  0);
