// v7: v4's pipeline on native f16 mma.sync (m16n8k16, two chained per k-block): sm_90 has no
// mma.sync for fp8 (ptxas converts e4m3 operands to f16 in software), so the e2m1 weights are
// decoded straight to f16 (value * 2^-14, 12 integer ops for 8 values) and the activations are
// kept as f16 of their e2m1 values; scales stay on the fp32 product of each k-block.
#include "problems/common/moe_tile_pipeline.h"

namespace {
size_t workspace_bytes(const MoeConfig& c) { return moe_tiled::workspace_bytes<moe_tile::F16Decode>(c); }
void launch(const MoeArgs& a) { moe_tiled::launch<moe_tiled::Plan, moe_tile::F16Decode>(a); }
}  // namespace

MOE_MXFP4_VARIANT("v7", gpu,
                  "v4 on native f16 mma.sync: e2m1 decoded to f16 in registers, f16 activations, k-block scales on "
                  "the fp32 products",
                  "hidden_states,gate_up_weight_shuffled,down_weight_shuffled,gate_up_weight_scale,down_weight_scale,"
                  "topk_weights,topk_ids",
                  0);
